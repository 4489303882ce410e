/**
 * @file kdc/commit.h
 * @brief Commit by message, never by position.
 */
#ifndef KDC_COMMIT_H
#define KDC_COMMIT_H

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Commit the offset that follows @p msg, for @p msg's partition only.
 *
 * Calls rd_kafka_commit_message(consumer, msg, async), which commits
 * msg->offset + 1 (the offset consumption resumes from) for msg's topic and
 * partition. The +1 is added by librdkafka: do NOT add it yourself. Other
 * partitions and any stored offsets are left alone (unlike
 * rd_kafka_commit(rk, NULL, ..), which commits every assigned partition's
 * stored offset). Call it only after the message's effect is confirmed.
 *
 * @param consumer a consumer (RD_KAFKA_CONSUMER) with a group.id.
 * @param msg      a message returned by rd_kafka_consumer_poll() (or
 *                 rd_kafka_consume*()) with msg->err == NO_ERROR; the caller
 *                 keeps ownership and destroys it as usual.
 * @param async    0: block until the broker answered the OffsetCommit.
 *                 non-zero: only schedule the commit; its result arrives
 *                 later through the offset_commit_cb registered with
 *                 rd_kafka_conf_set_offset_commit_cb() (served by
 *                 rd_kafka_consumer_poll() on the polling thread), or is
 *                 dropped if none is registered.
 *
 * @returns 0: committed (sync) or scheduled (async).
 *          KDC_ERR_INVALID: NULL @p consumer or @p msg, @p consumer not a
 *          consumer, msg without a topic, or msg->err != NO_ERROR (an error
 *          event such as __PARTITION_EOF is not a processed message, and
 *          committing its offset + 1 would skip a message). Nothing is
 *          committed.
 *          KDC_ERR_COMMIT: rd_kafka_commit_message() returned an error
 *          (sync: e.g. ILLEGAL_GENERATION, REBALANCE_IN_PROGRESS,
 *          GROUP_AUTHORIZATION_FAILED; async: could not be scheduled). The
 *          offset was not committed; the message will be redelivered.
 *
 * Thread: runs on the caller's thread; librdkafka allows commits from any
 * thread.
 */
KDC_EXPORT int kdc_commit_message(rd_kafka_t *consumer,
                                  const rd_kafka_message_t *msg,
                                  int async);

#ifdef __cplusplus
}
#endif

#endif /* KDC_COMMIT_H */
