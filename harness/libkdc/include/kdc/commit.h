/**
 * @file kdc/commit.h
 * @brief Commit by message, never by position.
 *
 * Both functions commit exactly msg->offset + 1 (the offset consumption
 * resumes from) for msg's topic and partition, through a one-partition list
 * given to rd_kafka_commit_queue(): never a NULL list (which commits every
 * assigned partition's stored offset, including messages not processed),
 * never another partition. Call them only after the message's effect is
 * confirmed (kdc_tracker_wait(), kdc_produce_confirmed(), kdc_dlq_route(),
 * a downstream write that succeeded).
 *
 * With an assignment record (kdc/assignment.h) they first check that the
 * message's epoch is still current and refuse work from a revoked or lost
 * epoch (KDC_ERR_STALE): the partition's new owner resumes from the last
 * committed offset and will process the message again.
 *
 * A batch whose effect failed is not committed: kdc_rewind_messages() seeks
 * its partitions back to the committed offsets, so it is consumed again.
 *
 * The consumer should run with enable.auto.commit=false (otherwise
 * librdkafka also commits stored positions on its own schedule) and, unless
 * the application stores offsets itself after the effect,
 * enable.auto.offset.store=false.
 */
#ifndef KDC_COMMIT_H
#define KDC_COMMIT_H

#include <stdint.h>

#include <kdc/assignment.h>
#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Result of an asynchronous commit (kdc_commit_message_async()).
 *
 * @param consumer  the consumer.
 * @param topic     the message's topic (valid during the call only).
 * @param partition the message's partition.
 * @param offset    the offset that was to be committed (msg->offset + 1).
 * @param err       RD_KAFKA_RESP_ERR_NO_ERROR: committed; otherwise the
 *                  partition's error from the broker (e.g.
 *                  ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID: classify with
 *                  kdc_classify()) or a local one (__DESTROY when the
 *                  consumer closed first). Not committed then.
 * @param opaque    the opaque given to kdc_commit_message_async().
 *
 * Runs exactly once per call that returned 0, on the thread serving the
 * consumer queue: rd_kafka_consumer_poll() (or rd_kafka_poll() after
 * rd_kafka_poll_set_consumer()), or rd_kafka_consumer_close(). It must not
 * destroy the consumer.
 */
typedef void(kdc_commit_cb_t)(rd_kafka_t *consumer, const char *topic,
                              int32_t partition, int64_t offset,
                              rd_kafka_resp_err_t err, void *opaque);

/**
 * @brief Commit msg->offset + 1 for msg's partition only, and wait for the
 *        broker's answer for that partition.
 *
 * Calls rd_kafka_commit_queue(consumer, {topic, partition, msg->offset + 1},
 * NULL, cb, ..): with a NULL queue librdkafka serves the result on a
 * temporary queue inside the call, so this blocks until the OffsetCommit
 * response (bounded by librdkafka's request timeouts) and reads the
 * per-partition error from the returned list.
 *
 * @param consumer   a consumer (RD_KAFKA_CONSUMER) with a group.id.
 * @param msg        a message returned by rd_kafka_consumer_poll() with
 *                   msg->err == NO_ERROR; the caller keeps ownership.
 * @param assignment the consumer's assignment record, or NULL to skip the
 *                   epoch check (manual rd_kafka_assign() without rebalances).
 * @param epoch      the stamp kdc_assignment_stamp() gave @p msg when it was
 *                   polled (ignored when @p assignment is NULL).
 * @param partition_err if not NULL, receives the partition's commit result:
 *                   RD_KAFKA_RESP_ERR_NO_ERROR when 0 is returned, the
 *                   broker's or librdkafka's error with KDC_ERR_COMMIT,
 *                   RD_KAFKA_RESP_ERR__INVALID_ARG with KDC_ERR_INVALID,
 *                   RD_KAFKA_RESP_ERR__STATE with KDC_ERR_STALE.
 *
 * @returns 0: the broker committed msg->offset + 1 for the partition.
 *          KDC_ERR_STALE: @p epoch is not the partition's current epoch;
 *          nothing was sent.
 *          KDC_ERR_COMMIT: not committed (e.g. ILLEGAL_GENERATION,
 *          UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS — membership errors, see
 *          kdc_classify() — or GROUP_AUTHORIZATION_FAILED); the message will
 *          be redelivered.
 *          KDC_ERR_INVALID: NULL @p consumer or @p msg, not a consumer, msg
 *          without a topic or with msg->err set (an error event such as
 *          __PARTITION_EOF is not a processed message: committing its
 *          offset + 1 could skip one); nothing was sent.
 *          KDC_ERR_NOMEM: nothing was sent.
 *
 * Thread: blocks the calling thread; librdkafka allows commits from any
 * thread. Relies on: rd_kafka_commit_queue() with rkqu == NULL.
 */
KDC_CONTRACT("commit-message handle=0")
KDC_EXPORT int kdc_commit_message(rd_kafka_t *consumer,
                                  const rd_kafka_message_t *msg,
                                  const kdc_assignment_t *assignment,
                                  uint64_t epoch,
                                  rd_kafka_resp_err_t *partition_err);

/**
 * @brief Commit msg->offset + 1 for msg's partition only, without waiting;
 *        the result arrives through @p cb.
 *
 * Calls rd_kafka_commit_queue(consumer, {topic, partition, msg->offset + 1},
 * rd_kafka_queue_get_consumer(consumer), ..): the result is served where the
 * application polls the consumer. Commits of one partition complete in the
 * order they were made.
 *
 * @param consumer, msg, assignment, epoch as for kdc_commit_message().
 * @param cb     called exactly once with the partition's result if this
 *               returns 0, never otherwise (may be NULL: result dropped).
 * @param opaque passed to @p cb.
 *
 * @returns 0: scheduled. KDC_ERR_STALE, KDC_ERR_INVALID, KDC_ERR_NOMEM as
 *          for kdc_commit_message(); KDC_ERR_COMMIT: librdkafka refused to
 *          schedule it (e.g. no consumer group). Nothing is sent then.
 *
 * If the consumer is destroyed without rd_kafka_consumer_close(), an
 * unserved result (and libkdc's small record for it) is dropped.
 * Relies on: rd_kafka_commit_queue(), rd_kafka_queue_get_consumer().
 */
KDC_CONTRACT("commit-message handle=0")
KDC_EXPORT int kdc_commit_message_async(rd_kafka_t *consumer,
                                        const rd_kafka_message_t *msg,
                                        const kdc_assignment_t *assignment,
                                        uint64_t epoch,
                                        kdc_commit_cb_t *cb,
                                        void *opaque);

/**
 * @brief Rewind a failed batch: seek every partition of @p msgs back to the
 *        group's committed offset, so that the next polls deliver its
 *        uncommitted messages again. What a plain (non-transactional)
 *        consumer does instead of committing a batch whose effect failed
 *        (transient failure: the offset stays, the batch is replayed).
 *
 * Collects the distinct partitions of @p msgs, reads their committed
 * offsets (rd_kafka_committed(consumer, .., timeout_ms): the broker's, not
 * the local position) and seeks each there (rd_kafka_seek_partitions()).
 * A partition with no committed offset yet is sought to the first offset
 * of it in @p msgs: the batch is replayed from its start, whatever
 * auto.offset.reset says (latest would skip it). Messages of the
 * partitions already fetched but not yet polled are discarded by the seek
 * and fetched again. Partitions not in @p msgs are left alone; for every
 * assigned partition use kdc_txn_rewind() (kdc/txn.h), which works without
 * a transaction too.
 *
 * @param consumer   a consumer (RD_KAFKA_CONSUMER) with a group.id, to which
 *                   the partitions are assigned.
 * @param msgs       the batch, as polled; only read (the caller keeps and
 *                   destroys them). Messages with msg->err set (error events
 *                   such as __PARTITION_EOF) are skipped.
 * @param count      number of messages in @p msgs (0: nothing to do).
 * @param timeout_ms bound of the committed-offset query and of the seek, in
 *                   milliseconds (> 0), or -1 for no limit.
 * @param errp       if not NULL, receives RD_KAFKA_RESP_ERR_NO_ERROR or the
 *                   first librdkafka error (the query's, a partition's, the
 *                   seek's).
 * @returns 0: every partition of the batch was sought (also for an empty
 *          batch). KDC_ERR_TIMEOUT: the committed offsets could not be read
 *          in time; nothing was sought. KDC_ERR_COMMIT: the query failed
 *          otherwise (nothing sought), or a seek failed (e.g. the partition
 *          was revoked meanwhile: its new owner starts from the committed
 *          offset anyway). KDC_ERR_INVALID: NULL @p consumer, not a
 *          consumer, NULL @p msgs with @p count > 0, a NULL message or one
 *          without a topic, @p timeout_ms 0 or < -1; nothing sought.
 *          KDC_ERR_NOMEM.
 *
 * Thread: the thread that polls the consumer (the seek must not race a
 * poll that hands out the messages it discards). Commits nothing.
 * Relies on: rd_kafka_committed(), rd_kafka_seek_partitions().
 */
KDC_CONTRACT("rewind")
KDC_EXPORT int kdc_rewind_messages(rd_kafka_t *consumer,
                                   rd_kafka_message_t *const *msgs,
                                   size_t count, int timeout_ms,
                                   rd_kafka_resp_err_t *errp);

#ifdef __cplusplus
}
#endif

#endif /* KDC_COMMIT_H */
