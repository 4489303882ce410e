/**
 * @file kdc/produce.h
 * @brief Synchronous confirmed produce of ONE message.
 *
 * This is the "synchronous confirmed-produce helper" of the durability
 * contract: use it where one message must be broker-acked before the program
 * moves on, e.g. routing a poison message to a dead-letter queue (DLQ) before
 * committing the input offset. For many messages use a tracker
 * (kdc/tracker.h): it confirms a whole batch with one wait.
 */
#ifndef KDC_PRODUCE_H
#define KDC_PRODUCE_H

#include <stddef.h>
#include <stdint.h>

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Produce one message and wait for that message's own delivery
 *        report.
 *
 * Enqueues the message with rd_kafka_produceva() (RD_KAFKA_MSG_F_COPY: key and
 * value are copied, the caller's buffers may be reused on return) with a
 * per-message opaque (RD_KAFKA_VTYPE_OPAQUE) pointing to a small libkdc status
 * record, then calls rd_kafka_flush(rk, ..) in slices of at most 10 ms until
 * kdc_dr_msg_cb() has stored this message's report in that record (the slice
 * then ends at once, by rd_kafka_yield(), when the report was served on this
 * thread; one served by another thread polling @p rk is seen when the slice
 * ends), or @p timeout_ms has passed.
 * flush() rather than poll(): librdkafka sends the message at once instead
 * of waiting out linger.ms (on the mock cluster: 0.07 ms a call instead of
 * 5.2 ms with the default linger.ms=5); other queued messages of @p rk are
 * sent without linger during the call too. A __QUEUE_FULL answer is handled by polling and
 * retrying within the same deadline. Other messages' reports served
 * meanwhile go to their own owners (trackers), never to this call.
 *
 * Requires a producer whose conf registered kdc_dr_msg_cb (or its own
 * dr_msg_cb calling kdc_dr_msg_record()) with rd_kafka_conf_set_dr_msg_cb()
 * and kept delivery.report.only.error=false; this is checked with
 * rd_kafka_conf() + rd_kafka_conf_get() before anything is produced (see
 * kdc/delivery.h for the full contract).
 *
 * Confirmed means: the report's error is RD_KAFKA_RESP_ERR_NO_ERROR AND
 * rd_kafka_message_status() is RD_KAFKA_MSG_STATUS_PERSISTED. A report
 * without error but POSSIBLY_PERSISTED (acks=0) is NOT a confirmation.
 *
 * Blocks the calling thread. Reports (this one and others) are served on the
 * calling thread, or on any other thread polling the same producer.
 *
 * @param rk          a producer created with kdc_dr_msg_cb.
 * @param topic       topic name.
 * @param partition   partition, or RD_KAFKA_PARTITION_UA for the partitioner.
 * @param key         key bytes, or NULL (then @p key_len must be 0).
 * @param key_len     key length in bytes.
 * @param value       value bytes, or NULL for a tombstone (@p value_len 0).
 * @param value_len   value length in bytes.
 * @param timeout_ms  total time for enqueueing and delivery, in milliseconds;
 *                    -1 waits for the report however long it takes (librdkafka
 *                    bounds it by message.timeout.ms). To always get a report,
 *                    use a timeout above the producer's message.timeout.ms.
 * @param delivery_err if not NULL, receives the librdkafka error that decided
 *                    the outcome:
 *                    RD_KAFKA_RESP_ERR_NO_ERROR when 0 is returned, and with
 *                    KDC_ERR_DELIVERY for a report without error whose
 *                    status was not PERSISTED;
 *                    the report's error (e.g. the broker's
 *                    TOPIC_AUTHORIZATION_FAILED, or local __MSG_TIMED_OUT)
 *                    with KDC_ERR_DELIVERY;
 *                    the rd_kafka_produceva() error with KDC_ERR_PRODUCE or
 *                    KDC_ERR_QUEUE_FULL;
 *                    RD_KAFKA_RESP_ERR__TIMED_OUT with KDC_ERR_TIMEOUT;
 *                    RD_KAFKA_RESP_ERR__INVALID_ARG with KDC_ERR_INVALID;
 *                    RD_KAFKA_RESP_ERR__NOT_CONFIGURED with KDC_ERR_CONF;
 *                    RD_KAFKA_RESP_ERR__FAIL with KDC_ERR_NOMEM.
 *
 * @returns 0: the broker acked the message (report with NO_ERROR and
 *          status PERSISTED).
 *          KDC_ERR_DELIVERY: the report carried an error, or its status was
 *          not PERSISTED: not confirmed.
 *          KDC_ERR_TIMEOUT: no report before the deadline. The message is
 *          still in flight and MAY be delivered later; its eventual report is
 *          absorbed by libkdc (the status record is freed then). Treat as
 *          transient: do not commit; a retry may produce a duplicate.
 *          KDC_ERR_QUEUE_FULL / KDC_ERR_PRODUCE: not enqueued.
 *          KDC_ERR_CONF: producer without dr_msg_cb, or with
 *          delivery.report.only.error=true; nothing produced.
 *          KDC_ERR_INVALID: NULL @p rk or @p topic, a length without a buffer,
 *          @p rk not a producer, or @p timeout_ms < -1; nothing produced.
 *          KDC_ERR_NOMEM: nothing produced.
 */
KDC_CONTRACT("produce-confirmed handle=0 topic=1")
KDC_EXPORT int kdc_produce_confirmed(rd_kafka_t *rk,
                                     const char *topic,
                                     int32_t partition,
                                     const void *key,
                                     size_t key_len,
                                     const void *value,
                                     size_t value_len,
                                     int timeout_ms,
                                     rd_kafka_resp_err_t *delivery_err);

#ifdef __cplusplus
}
#endif

#endif /* KDC_PRODUCE_H */
