/**
 * @file kdc/txn.h
 * @brief Transactional consume-process-produce with recovery: a batch's
 *        outputs and its input offsets are committed together, and any
 *        failure aborts the transaction and rewinds the consumer to the
 *        group's committed offsets, so that the batch is consumed again.
 *
 * The recovery follows the consumer-recovery notes of the durability
 * contract (seeds/000): membership errors on send_offsets_to_transaction()
 * (UNKNOWN_MEMBER_ID, ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS, ...) and
 * transport failures abort the transaction; its outputs are discarded
 * (their delivery reports may say __PURGE_QUEUE: a consequence of the abort,
 * not a loss); the consumer resumes from the last committed offsets; every
 * transactional call has an explicit timeout.
 *
 * @code
 *   // producer: transactional.id set (unique per instance), kdc_dr_msg_cb
 *   // consumer: enable.auto.commit=false, isolation.level=read_committed
 *   kdc_txn_t *txn;
 *   if (kdc_txn_new(&txn, producer, consumer, 10000, &err) != 0) ...;
 *   for (;;) {
 *           batch = poll up to N messages;
 *           kdc_txn_begin(txn, &res);
 *           for (each message m) {
 *                   produce m's outputs (rd_kafka_producev(), a tracker, ...);
 *                   kdc_txn_track(txn, m);          // m->offset + 1 for its partition
 *           }
 *           switch (kdc_txn_commit(txn, &res)) {
 *           case 0: break;                          // outputs and offsets committed
 *           case KDC_ERR_COMMIT:                    // aborted, consumer rewound: the
 *           case KDC_ERR_STALE: break;              // next polls redeliver the batch
 *           case KDC_ERR_TIMEOUT:                   // neither committed nor aborted:
 *                   kdc_txn_abort(txn, &res); break; // abort (again) before going on
 *           default: ...                            // res.cls == KDC_CLASS_FATAL:
 *           }                                       // recreate the producer
 *   }
 * @endcode
 *
 * @par What the mock cluster can and cannot prove (librdkafka 2.0.2)
 * The tests (tests/harness/kdc-harness/test_txn.c) run against rd_kafka_mock_cluster:
 * that a failed send_offsets_to_transaction() or commit_transaction()
 * aborts the transaction and rewinds the consumer to its committed offsets
 * (the next message polled is the first uncommitted one), that a retriable
 * error is retried within the API timeout, that an unreachable coordinator
 * makes the calls return within their timeouts, and that a fatal producer
 * error is reported as fatal. The 2.0.2 mock does NOT store offsets sent
 * with send_offsets_to_transaction() (the group's committed offsets do not
 * move: a test asserts that), writes no transaction markers (control
 * records) and does NOT filter aborted records for read_committed
 * consumers; so the atomicity of outputs and offsets, and
 * exactly-once delivery, cannot be proven on it (nor by kdc-harness, which
 * counts every stored record). The mock also never fences a producer (a
 * second InitProducerId gets a new producer id), so fencing is tested by
 * injecting PRODUCER_FENCED.
 *
 * Errors follow kdc/error.h; the librdkafka error and its class
 * (kdc_classify_error()) come back in kdc_txn_result_t. Not thread-safe:
 * use one kdc_txn_t from one thread at a time (librdkafka's transactional
 * API is not meant for concurrent calls either).
 */
#ifndef KDC_TXN_H
#define KDC_TXN_H

#include <kdc/classify.h>
#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque transactional batch helper bound to one producer and one consumer. */
typedef struct kdc_txn_s kdc_txn_t;

/**
 * @brief What a transactional call ended with. Plain data, filled by every
 *        kdc_txn_* call that takes one (zeroed first). New fields are only
 *        ever appended.
 */
typedef struct kdc_txn_result_s {
        /** The librdkafka error that decided the outcome; NO_ERROR on success. */
        rd_kafka_resp_err_t err;
        /** Its class: kdc_classify_error() of the rd_kafka_error_t (fatal
         *  first, then membership, then abortable/retriable as transient). */
        kdc_class_t cls;
        /** 1 when the transaction was aborted (its outputs discarded). */
        int aborted;
        /** 1 when every assigned partition was rewound to its committed
         *  offset (0 also when there was nothing to rewind). */
        int rewound;
        /** How many times a retriable error was retried. */
        int retries;
} kdc_txn_result_t;

/**
 * @brief Create the helper and initialise the producer's transactions
 *        (rd_kafka_init_transactions(producer, api_timeout_ms)).
 *
 * @param txnp       receives the helper (NULL on failure); release with
 *                   kdc_txn_destroy().
 * @param producer   a producer with transactional.id set (read back with
 *                   rd_kafka_conf_get()); borrowed, must outlive the helper.
 * @param consumer   the group consumer whose offsets go into the
 *                   transactions (rd_kafka_consumer_group_metadata()) and
 *                   which is rewound on failure; borrowed.
 * @param api_timeout_ms bound of each transactional API call, and of the
 *                   retries of one kdc_txn_commit(), in milliseconds (> 0).
 *                   Choose it above the producer's message.timeout.ms
 *                   (commit_transaction() flushes the outputs).
 * @param errp       if not NULL, receives init_transactions()'s error.
 * @returns 0; KDC_ERR_INVALID (NULL arguments, not a producer / consumer,
 *          api_timeout_ms <= 0); KDC_ERR_CONF (no transactional.id);
 *          KDC_ERR_TIMEOUT (the transaction coordinator did not answer in
 *          time: call again, librdkafka allows it); KDC_ERR_COMMIT (another
 *          init_transactions() error, e.g. fatal); KDC_ERR_NOMEM.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_txn_new(kdc_txn_t **txnp, rd_kafka_t *producer, rd_kafka_t *consumer,
                           int api_timeout_ms, rd_kafka_resp_err_t *errp);

/** @brief Free the helper; NULL is ignored. Does not touch the clients: an
 *         open transaction stays open (abort it first). */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_txn_destroy(kdc_txn_t *txn);

/**
 * @brief Begin a transaction (rd_kafka_begin_transaction()) and forget the
 *        offsets tracked so far.
 * @returns 0; KDC_ERR_COMMIT with @p result filled when librdkafka refused
 *          (e.g. a transaction is still open: commit or abort it first; or
 *          a fatal error: result->cls == KDC_CLASS_FATAL); KDC_ERR_INVALID.
 */
KDC_CONTRACT("txn")
KDC_EXPORT int kdc_txn_begin(kdc_txn_t *txn, kdc_txn_result_t *result);

/**
 * @brief Add @p msg to the transaction's input offsets: its partition's
 *        offset becomes msg->offset + 1 (never lower than one tracked
 *        before). Call it once the message's outputs are produced.
 * @returns 0; KDC_ERR_INVALID (NULL, msg->err set, no topic); KDC_ERR_NOMEM.
 */
KDC_CONTRACT("txn")
KDC_EXPORT int kdc_txn_track(kdc_txn_t *txn, const rd_kafka_message_t *msg);

/**
 * @brief Send the tracked offsets and commit the transaction; on failure,
 *        abort it and rewind the consumer.
 *
 * 1. rd_kafka_send_offsets_to_transaction(producer, offsets,
 *    rd_kafka_consumer_group_metadata(consumer), remaining time), unless
 *    nothing was tracked;
 * 2. rd_kafka_commit_transaction(producer, remaining time), which flushes
 *    the outputs first.
 * A retriable error (rd_kafka_error_is_retriable()) repeats the failed call
 * while the api_timeout_ms given to kdc_txn_new() lasts. Any other error,
 * or a retriable one at the deadline: rd_kafka_abort_transaction(producer,
 * api_timeout_ms), then kdc_txn_rewind() of the consumer.
 *
 * @returns 0: outputs and offsets committed together (on a real broker).
 *          KDC_ERR_STALE: aborted and rewound; the error is a membership
 *          one (result->cls == KDC_CLASS_MEMBERSHIP): the group generation
 *          moved on, the batch's partitions may have a new owner.
 *          KDC_ERR_COMMIT: aborted and rewound (result->aborted == 1) for
 *          another error; or, with result->cls == KDC_CLASS_FATAL, nothing
 *          more can be done with this producer: destroy and recreate it
 *          (rd_kafka_fatal_error() tells why); its consumer is rewound.
 *          KDC_ERR_TIMEOUT: neither committed nor aborted (the abort too
 *          timed out, e.g. every broker down): do not begin another
 *          transaction; call kdc_txn_abort() until it returns 0.
 *          KDC_ERR_INVALID: NULL arguments.
 * Either way the tracked offsets are forgotten. Blocks for at most about
 * twice api_timeout_ms.
 * Relies on: rd_kafka_send_offsets_to_transaction(),
 * rd_kafka_commit_transaction(), rd_kafka_abort_transaction(),
 * rd_kafka_error_txn_requires_abort(), rd_kafka_error_is_retriable(),
 * rd_kafka_error_is_fatal().
 */
KDC_CONTRACT("txn")
KDC_EXPORT int kdc_txn_commit(kdc_txn_t *txn, kdc_txn_result_t *result);

/**
 * @brief Abort the open transaction (rd_kafka_abort_transaction(producer,
 *        api_timeout_ms)) and rewind the consumer (kdc_txn_rewind()).
 * @returns 0: aborted (or no transaction was open) and rewound;
 *          KDC_ERR_TIMEOUT: the abort timed out, call again;
 *          KDC_ERR_COMMIT: the abort failed for another reason (fatal:
 *          recreate the producer); KDC_ERR_INVALID.
 */
KDC_CONTRACT("txn")
KDC_EXPORT int kdc_txn_abort(kdc_txn_t *txn, kdc_txn_result_t *result);

/**
 * @brief Seek every partition assigned to @p consumer back to the group's
 *        committed offset, so that the next polls deliver the first
 *        uncommitted message again. Useful without transactions too: the
 *        transient-failure path of any consumer that commits after effects.
 *
 * Reads the assignment (rd_kafka_assignment()) and its committed offsets
 * (rd_kafka_committed(consumer, .., timeout_ms)), then seeks
 * (rd_kafka_seek_partitions()). A partition without a committed offset is
 * sought to where auto.offset.reset says a new consumer would start
 * (earliest: the beginning; latest: the end; read back with
 * rd_kafka_conf_get()), as a restart would.
 *
 * @param consumer   a subscribed or assigned consumer.
 * @param timeout_ms bound of the committed-offset query and of the seek, ms.
 * @param errp       if not NULL, receives the first error.
 * @returns 0: every assigned partition was rewound (also when none is
 *          assigned); KDC_ERR_TIMEOUT: the committed offsets could not be
 *          read in time (nothing was sought); KDC_ERR_COMMIT: a seek failed
 *          (e.g. the partition was revoked meanwhile: its new owner starts
 *          from the committed offset anyway); KDC_ERR_INVALID; KDC_ERR_NOMEM.
 * Call it from the thread that polls the consumer.
 */
KDC_CONTRACT("rewind")
KDC_EXPORT int kdc_txn_rewind(rd_kafka_t *consumer, int timeout_ms, rd_kafka_resp_err_t *errp);

#ifdef __cplusplus
}
#endif

#endif /* KDC_TXN_H */
