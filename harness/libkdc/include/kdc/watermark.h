/**
 * @file kdc/watermark.h
 * @brief Confirmed watermark: commit, per partition, only the offset below
 *        which every polled message is done, whatever order workers finish
 *        in.
 *
 * The polling thread tracks each message in poll order
 * (kdc_watermark_track_message(), or kdc_watermark_track() with the
 * message's coordinates); workers mark messages done in any order, from any
 * thread, once their effect is confirmed (kdc_watermark_done_message(),
 * kdc_watermark_done()); the polling
 * thread periodically commits (kdc_watermark_commit()). For each partition
 * the committed offset is the offset right after the longest prefix of
 * polled messages that are all done: with messages 5, 6, 7 polled and 5 and
 * 7 done, 6 is committed (resume at 6); once 6 is done, 8.
 *
 * Order is poll order, not arithmetic: offsets never polled (removed by
 * compaction, transaction markers, aborted records) are simply not waited
 * for, so a gap never wedges the watermark. A partition whose epoch ended
 * (kdc/assignment.h: revoked or lost) is dropped at the next commit and
 * never committed again until it is tracked under a new epoch; marks of the
 * old epoch are refused (KDC_ERR_STALE).
 *
 * Commits are batched: at most one per partition per interval (unless
 * forced), each a one-partition entry of an explicit list given to
 * rd_kafka_commit_queue(), never a NULL list.
 *
 * @par Memory and threads
 * Memory is proportional to the messages polled but not yet passed by the
 * watermark (9 bytes each, plus a small per-partition record), never to the
 * messages processed. All functions may be called from any thread (one
 * internal mutex), but kdc_watermark_commit() belongs on the thread that
 * polls the consumer (or in a rebalance hook): rebalances happen there, so
 * an epoch checked by the commit cannot end before the commit is sent.
 */
#ifndef KDC_WATERMARK_H
#define KDC_WATERMARK_H

#include <stdint.h>

#include <kdc/assignment.h>
#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief The commit interval libkdc recommends for kdc_watermark_new(), in
 *        milliseconds: at most one offset commit per partition per second.
 *
 * Measured on a whole consume-process-produce service (kdc-bench-service,
 * docs/performance.md): committing every confirmed batch costs one
 * OffsetCommit round trip per batch (per partition with
 * kdc_commit_message()), which at small windows costs more than the work;
 * at this interval the commits are 1 per partition per second plus the
 * first and a forced one at the end, and a restart replays at most about
 * one second of confirmed work (never unconfirmed work: only offsets whose
 * messages are all done are in the watermark). The recommended form:
 *  - track every polled message (kdc_watermark_track_message()), confirm
 *    a window of outputs with one kdc_tracker_wait() (large windows: at
 *    10,000 events this ran at 0.84x the throughput of an auto-commit,
 *    fire-and-forget service), mark the window's messages done
 *    (kdc_watermark_done_message());
 *  - call kdc_watermark_commit(wm, consumer, 0, ..) after each window, from
 *    the polling thread: it sends nothing until a partition is due; call
 *    it with force = 1 before closing and in the rebalance hook for
 *    revoked partitions.
 * A sliding window (each output's opaque naming its input, marked done
 * from the service's dr_msg_cb through kdc_dr_msg_record()) never stops
 * for the last report of a window: fastest when every event must be
 * confirmed before the next (window 1), but more CPU per event at large
 * windows (bench/bench_service.c has both).
 */
#define KDC_WATERMARK_RECOMMENDED_INTERVAL_MS 1000

/** Opaque confirmed-watermark handle. */
typedef struct kdc_watermark_s kdc_watermark_t;

/**
 * @brief Create an empty watermark.
 * @param watermarkp  receives it (NULL on failure); release with
 *                    kdc_watermark_destroy().
 * @param assignment  the consumer's assignment record (borrowed; must
 *                    outlive the watermark), or NULL when partitions never
 *                    move (manual rd_kafka_assign()); then epochs are opaque
 *                    tags that only separate tracking generations.
 * @param interval_ms minimum time between two commits of one partition, in
 *                    milliseconds (0: every kdc_watermark_commit() call).
 * @returns 0; KDC_ERR_INVALID (NULL @p watermarkp, @p interval_ms < 0);
 *          KDC_ERR_NOMEM. No librdkafka call.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_watermark_new(kdc_watermark_t **watermarkp,
                                 const kdc_assignment_t *assignment,
                                 int interval_ms);

/** @brief Free the watermark; NULL is ignored. No call may be running. */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_watermark_destroy(kdc_watermark_t *watermark);

/**
 * @brief Record a polled message, in poll order, as not done.
 *
 * Call it for every message of a partition, in the order
 * rd_kafka_consumer_poll() returned them (typically right after polling,
 * with msg->rkt's name, msg->partition, msg->offset and the epoch from
 * kdc_assignment_stamp()). A message tracked under a new epoch discards the
 * partition's state from the previous one. An offset at or below the last
 * one tracked (the application seeked back) discards the tracked entries
 * from that offset on: they will be polled again.
 *
 * @returns 0; KDC_ERR_STALE if @p epoch is not the partition's current epoch
 *          (nothing recorded: the message is not this consumer's to
 *          commit); KDC_ERR_INVALID (NULL arguments, @p partition < 0,
 *          @p offset < 0 or INT64_MAX: the offset after it, which the
 *          watermark commits, must be an offset too); KDC_ERR_NOMEM.
 *          Thread-safe.
 */
KDC_CONTRACT("track")
KDC_EXPORT int kdc_watermark_track(kdc_watermark_t *watermark,
                                   const char *topic,
                                   int32_t partition,
                                   int64_t offset,
                                   uint64_t epoch);

/**
 * @brief Mark a tracked message done: its effect is confirmed.
 *
 * @returns 0; KDC_ERR_STALE if the partition is tracked under another epoch
 *          or @p epoch ended (the mark is dropped: the message's new owner
 *          processes it again); KDC_ERR_NOENT if the offset is not tracked
 *          (never tracked, already passed by the watermark, or marked
 *          twice); KDC_ERR_INVALID for NULL arguments, @p partition < 0 or
 *          @p offset < 0. Thread-safe; callable from worker threads.
 */
KDC_CONTRACT("mark-done list=0")
KDC_EXPORT int kdc_watermark_done(kdc_watermark_t *watermark,
                                  const char *topic,
                                  int32_t partition,
                                  int64_t offset,
                                  uint64_t epoch);

/**
 * @brief kdc_watermark_track() for a polled message: its topic
 *        (rd_kafka_topic_name(msg->rkt)), partition and offset.
 *
 * @param watermark the watermark.
 * @param msg       a message returned by rd_kafka_consumer_poll() with
 *                  msg->err == NO_ERROR; only read during the call (the
 *                  caller keeps it and may destroy it afterwards).
 * @param epoch     the stamp kdc_assignment_stamp() gave @p msg.
 * @returns as kdc_watermark_track(); KDC_ERR_INVALID also for a NULL
 *          @p msg, a message without a topic handle, or with msg->err set
 *          (an error event such as __PARTITION_EOF is not a message to
 *          commit). Thread-safe. Relies on: rd_kafka_topic_name().
 */
KDC_CONTRACT("track")
KDC_EXPORT int kdc_watermark_track_message(kdc_watermark_t *watermark,
                                           const rd_kafka_message_t *msg,
                                           uint64_t epoch);

/**
 * @brief kdc_watermark_done() for a polled message: its topic, partition
 *        and offset, read from @p msg.
 *
 * @param watermark the watermark.
 * @param msg       the message given to kdc_watermark_track_message() (or
 *                  one with the same topic, partition and offset); only
 *                  read during the call, so a worker may mark it done and
 *                  then destroy it.
 * @param epoch     the epoch it was tracked under.
 * @returns as kdc_watermark_done(); KDC_ERR_INVALID also for a NULL @p msg,
 *          a message without a topic handle, or with msg->err set.
 *          Thread-safe; callable from worker threads. Relies on:
 *          rd_kafka_topic_name().
 */
KDC_CONTRACT("mark-done list=0")
KDC_EXPORT int kdc_watermark_done_message(kdc_watermark_t *watermark,
                                          const rd_kafka_message_t *msg,
                                          uint64_t epoch);

/**
 * @brief The offset the watermark would commit for a partition: the offset
 *        after the longest done prefix (not yet necessarily committed).
 * @returns the offset (>= 0); KDC_ERR_NOENT if no message of the partition
 *          is done yet (or it is not tracked); KDC_ERR_INVALID for NULL
 *          arguments. Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_watermark_position(const kdc_watermark_t *watermark,
                                          const char *topic,
                                          int32_t partition);

/**
 * @brief Commit each partition whose watermark advanced, at most once per
 *        interval per partition (every advanced partition when @p force).
 *
 * Partitions whose epoch ended are dropped first, without a commit. The rest
 * are committed with one rd_kafka_commit_queue(consumer, list, NULL, ..)
 * call: an explicit list with one entry per partition at its watermark.
 * With a NULL queue librdkafka serves the result inside the call, so this
 * blocks until the broker answered, and reads each partition's error.
 *
 * @param watermark    the watermark.
 * @param consumer     the consumer the messages were polled from.
 * @param force        non-zero: ignore the interval (before close, or in a
 *                     rebalance hook for partitions being revoked).
 * @param committedp   if not NULL, receives how many partitions the broker
 *                     committed.
 * @param commit_err   if not NULL, receives RD_KAFKA_RESP_ERR_NO_ERROR, or
 *                     the first partition's error when one failed (classify
 *                     it with kdc_classify(): membership errors mean the
 *                     epoch is over).
 * @returns 0: every partition sent was committed (or none was due).
 *          KDC_ERR_COMMIT: at least one was not; those keep their position
 *          and are retried by the next call.
 *          KDC_ERR_INVALID: NULL @p watermark or @p consumer, or not a
 *          consumer. KDC_ERR_NOMEM.
 * Relies on: rd_kafka_commit_queue() with rkqu == NULL.
 */
KDC_CONTRACT("commit-done handle=1 list=0")
KDC_EXPORT int kdc_watermark_commit(kdc_watermark_t *watermark,
                                    rd_kafka_t *consumer,
                                    int force,
                                    int *committedp,
                                    rd_kafka_resp_err_t *commit_err);

#ifdef __cplusplus
}
#endif

#endif /* KDC_WATERMARK_H */
