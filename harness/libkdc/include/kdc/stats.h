/**
 * @file kdc/stats.h
 * @brief Statistics of a libkdc service: the counters libkdc already sees
 *        (produced, delivered, failed deliveries by error, DLQ routings,
 *        retries, commits, rebalances, transaction aborts) and per-partition
 *        consumer lag, read as a struct, as JSON in the shape of
 *        librdkafka's stats_cb document, or as OpenMetrics text.
 *
 * @par How the counters are fed
 * The service creates one kdc_stats_t and attaches it to the libkdc objects
 * it uses (kdc_stats_attach_tracker(), _assignment(), _retry(), _dlq(),
 * _txn()); each object then counts what it does into it:
 * | object      | counts                                                   |
 * |-------------|----------------------------------------------------------|
 * | tracker     | produced, delivered (read from the tracker's own counts |
 * |             | when the statistics are read: nothing is added to the   |
 * |             | produce or delivery path), failed deliveries by error   |
 * |             | (counted under the lock the tracker already takes for a |
 * |             | failure)                                                |
 * | assignment  | rebalances, revocations, lost assignments; commits and  |
 * |             | failed commits by error, and stale-epoch drops, of      |
 * |             | kdc_commit_message(), kdc_commit_message_async() and     |
 * |             | kdc_watermark_*() given this assignment                  |
 * | retry       | retries, exhausted retries, stale-epoch drops            |
 * | dlq         | confirmed DLQ routings and failed ones (kdc_dlq_route(), |
 * |             | and the retry's exhaustion); kdc_dlq_produce() messages  |
 * |             | are counted by the tracker they go through               |
 * | txn         | transaction aborts and rewinds                          |
 * What libkdc does not see, the service hands over: the error events its
 * consumer polls (kdc_stats_consumer_error(): _MAX_POLL_EXCEEDED among
 * them), and the lag, refreshed on a slow interval (kdc_stats_update_lag()).
 * Every count is a C11 atomic added to with relaxed order: a count is
 * exact once the calls that made it returned, and a read taken meanwhile
 * may be one behind on some counts.
 *
 * @par Consumer lag
 * kdc_stats_update_lag() computes, for each partition currently assigned to
 * the consumer (rd_kafka_assignment()), the high watermark minus the
 * consumer's position (rd_kafka_position(): the offset after the last
 * message the application polled), or minus the committed offset when no
 * message was polled yet. The high watermark comes from
 * rd_kafka_get_watermark_offsets() (librdkafka's cached value, updated by
 * every fetch response: no broker round trip) or, with a timeout, from
 * rd_kafka_query_watermark_offsets() (one ListOffsets request per
 * partition). This needs no statistics.interval.ms. The JSON names the
 * fields as librdkafka's stats document does (hi_offset, committed_offset,
 * app_offset, consumer_lag; -1: unknown).
 *
 * @par Threads and lifetime
 * Reading and counting are thread-safe. Attaching is not: attach before the
 * objects are used. Destroy the statistics after every object attached to
 * them (as a consumer is destroyed after its kdc_retry_t).
 */
#ifndef KDC_STATS_H
#define KDC_STATS_H

#include <stdint.h>
#include <stdio.h>

#include <kdc/assignment.h>
#include <kdc/dlq.h>
#include <kdc/export.h>
#include <kdc/retry.h>
#include <kdc/tracker.h>
#include <kdc/txn.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque statistics of one service (or of any set of libkdc objects). */
typedef struct kdc_stats_s kdc_stats_t;

/**
 * @brief A copy of every count at one time. Plain data, every field public;
 *        fields are only ever appended. Counts are totals since
 *        kdc_stats_new(), never negative.
 */
typedef struct kdc_stats_snapshot_s {
        /** Wall-clock time of the snapshot, milliseconds since the epoch. */
        int64_t ts_ms;
        /** Messages enqueued through the attached trackers (withdrawn ones,
         *  whose rd_kafka_produceva() failed, not counted). */
        int64_t produced;
        /** Their confirmed delivery reports (no error, PERSISTED). */
        int64_t delivered;
        /** Their failed delivery reports, all errors
         *  (kdc_stats_delivery_failed() by error; a report without error
         *  but not PERSISTED, as with acks=0, counts under
         *  RD_KAFKA_RESP_ERR_NO_ERROR). */
        int64_t delivery_failed;
        /** Messages whose DLQ routing was confirmed. */
        int64_t dlq_routed;
        /** DLQ routings that failed or were not confirmed in time. */
        int64_t dlq_failed;
        /** Failed attempts that were scheduled for another attempt
         *  (kdc_retry_failed() returning KDC_RETRY_WAIT for a new wait). */
        int64_t retries;
        /** Messages whose retry policy was exhausted (to the DLQ or halt). */
        int64_t retries_exhausted;
        /** Offsets committed (one per partition of a commit). */
        int64_t commits;
        /** Offsets whose commit failed, all errors
         *  (kdc_stats_commit_failed() by error). */
        int64_t commits_failed;
        /** Assignments served (__ASSIGN_PARTITIONS rebalance events). */
        int64_t rebalances;
        /** Revocations served (__REVOKE_PARTITIONS), lost ones included. */
        int64_t revocations;
        /** Revocations whose assignment was lost (rd_kafka_assignment_lost()). */
        int64_t lost;
        /** Work refused because its assignment epoch had ended (a commit,
         *  a watermark mark or a retry of a revoked partition: KDC_ERR_STALE
         *  or KDC_RETRY_DROP). */
        int64_t stale_drops;
        /** Transactions aborted by kdc_txn_commit() or kdc_txn_abort(). */
        int64_t txn_aborts;
        /** Consumers rewound to their committed offsets after an abort. */
        int64_t txn_rewinds;
        /** Consumer error events handed to kdc_stats_consumer_error(). */
        int64_t consumer_errors;
        /** Of them, RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED. */
        int64_t max_poll_exceeded;
        /** Sum of the known partition lags at the last
         *  kdc_stats_update_lag(); -1 before any lag is known. */
        int64_t lag;
        /** Largest lag sum seen by kdc_stats_update_lag(); -1: none yet. */
        int64_t lag_peak;
        /** Partitions in the last lag update (assigned at that time). */
        int32_t lag_partitions;
} kdc_stats_snapshot_t;

/**
 * @brief Create statistics, every count 0.
 *
 * @param statsp receives them (NULL on failure); release with
 *               kdc_stats_destroy() after every object attached to them.
 * @param name   the service's name, copied: the JSON document's "name"
 *               (may be NULL: "kdc").
 * @returns 0; KDC_ERR_INVALID (NULL @p statsp); KDC_ERR_NOMEM.
 * No librdkafka call.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_stats_new(kdc_stats_t **statsp, const char *name);

/**
 * @brief Free the statistics; NULL is ignored. Every object attached to
 *        them must have been destroyed first (they keep a pointer).
 */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_stats_destroy(kdc_stats_t *stats);

/**
 * @brief Count @p tracker's messages: produced and delivered are read from
 *        its own counts at every kdc_stats_read() (so the produce and
 *        delivery paths pay nothing), failed deliveries are counted by error
 *        as they are reported. When the tracker is destroyed its counts so
 *        far stay in the statistics (reports of its messages still pending
 *        then are not counted).
 * @returns 0; KDC_ERR_INVALID (NULL argument, or the tracker is attached to
 *          other statistics); KDC_ERR_NOMEM. Attaching twice to the same
 *          statistics does nothing. Call it before the tracker is used by
 *          other threads. No librdkafka call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_attach_tracker(kdc_stats_t *stats,
                                        kdc_tracker_t *tracker);

/**
 * @brief Count @p assignment's rebalances, and the commits and stale-epoch
 *        drops of the kdc_commit_message*() and kdc_watermark_*() calls
 *        given this assignment (a watermark created with it).
 * @returns 0; KDC_ERR_INVALID (NULL argument). Replaces an earlier
 *          attachment. Call it before the consumer is polled. No librdkafka
 *          call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_attach_assignment(kdc_stats_t *stats,
                                           kdc_assignment_t *assignment);

/**
 * @brief Count @p retry's retries, exhausted retries and stale-epoch drops
 *        (its DLQ routings are counted by its kdc_dlq_t, when attached).
 * @returns 0; KDC_ERR_INVALID (NULL argument). Replaces an earlier
 *          attachment. Thread: the polling thread. No librdkafka call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_attach_retry(kdc_stats_t *stats, kdc_retry_t *retry);

/**
 * @brief Count @p dlq's routings: confirmed (dlq_routed) and not
 *        (dlq_failed; a NULL message or an invalid argument is not counted).
 * @returns 0; KDC_ERR_INVALID (NULL argument). Replaces an earlier
 *          attachment; attach before the router is used by other threads.
 *          No librdkafka call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_attach_dlq(kdc_stats_t *stats, kdc_dlq_t *dlq);

/**
 * @brief Count @p txn's aborts and rewinds.
 * @returns 0; KDC_ERR_INVALID (NULL argument). Replaces an earlier
 *          attachment. No librdkafka call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_attach_txn(kdc_stats_t *stats, kdc_txn_t *txn);

/**
 * @brief Count one error event the consumer returned
 *        (rd_kafka_consumer_poll() giving a message with err set), by
 *        error: e.g. RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED, which librdkafka
 *        reports when the application did not poll within
 *        max.poll.interval.ms (the member has left the group).
 * @param err the event's error; RD_KAFKA_RESP_ERR_NO_ERROR is ignored.
 * @returns 0; KDC_ERR_INVALID (NULL @p stats). Thread-safe; lock-free.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_stats_consumer_error(kdc_stats_t *stats,
                                        rd_kafka_resp_err_t err);

/**
 * @brief Refresh the consumer lag of every partition assigned to
 *        @p consumer (see "Consumer lag" above); partitions no longer
 *        assigned are forgotten.
 *
 * @param timeout_ms 0: only librdkafka's cached values
 *        (rd_kafka_get_watermark_offsets(); a partition not fetched yet has
 *        no high watermark: its lag is unknown), never blocks: cheap enough for every
 *        loop of the poll thread. > 0: ask the brokers
 *        (rd_kafka_query_watermark_offsets(), and rd_kafka_committed() for
 *        partitions with no position yet), each call bounded by
 *        @p timeout_ms: call it on a slow interval (seconds).
 * @returns the number of partitions with a known lag (>= 0);
 *          KDC_ERR_INVALID (NULL arguments, not a consumer, negative
 *          timeout); KDC_ERR_NOMEM; KDC_ERR_ASSIGN (rd_kafka_assignment()
 *          failed). A partition whose watermark query fails has an
 *          unknown lag (kdc_stats_lag(): KDC_ERR_NOENT).
 * Thread: any (librdkafka's calls are thread-safe); typically the polling
 * thread. Relies on: rd_kafka_assignment(), rd_kafka_position(),
 * rd_kafka_get_watermark_offsets(), rd_kafka_query_watermark_offsets(),
 * rd_kafka_committed().
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_stats_update_lag(kdc_stats_t *stats, rd_kafka_t *consumer,
                                    int timeout_ms);

/**
 * @brief Copy every count into @p snapshot.
 * @returns 0; KDC_ERR_INVALID (NULL argument). Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_stats_read(kdc_stats_t *stats,
                              kdc_stats_snapshot_t *snapshot);

/**
 * @brief Failed delivery reports with error @p err so far.
 * @returns the count (>= 0); KDC_ERR_INVALID (NULL @p stats).
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_stats_delivery_failed(kdc_stats_t *stats,
                                             rd_kafka_resp_err_t err);

/**
 * @brief Offsets whose commit failed with error @p err so far.
 * @returns the count (>= 0); KDC_ERR_INVALID (NULL @p stats).
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_stats_commit_failed(kdc_stats_t *stats,
                                           rd_kafka_resp_err_t err);

/**
 * @brief The lag of one partition at the last kdc_stats_update_lag().
 * @returns the lag in messages (>= 0); KDC_ERR_NOENT (the partition was not
 *          assigned then, or its lag was unknown); KDC_ERR_INVALID (NULL
 *          arguments).
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_stats_lag(kdc_stats_t *stats, const char *topic,
                                 int32_t partition);

/**
 * @brief The statistics as one JSON object, in the shape of librdkafka's
 *        stats_cb document: "name", "type" ("kdc"), "ts" (monotonic
 *        microseconds), "time" (wall-clock seconds), every snapshot count
 *        by its field name, "delivery_failed_by_error",
 *        "commits_failed_by_error" and "consumer_errors_by_error" (objects:
 *        rd_kafka_err2name() -> count, nonzero ones only), and "topics" ->
 *        topic -> "partitions" -> partition number -> {"partition",
 *        "hi_offset", "app_offset", "committed_offset", "consumer_lag"}.
 * @param jsonp receives a NUL-terminated string (NULL on failure); the
 *        caller frees it with free().
 * @returns 0; KDC_ERR_INVALID (NULL argument); KDC_ERR_NOMEM.
 * Thread-safe. Written with jansson.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_stats_json(kdc_stats_t *stats, char **jsonp);

/**
 * @brief Write kdc_stats_json()'s document to the file @p path, replacing
 *        it atomically (written to "PATH.tmp", then rename()d): a reader
 *        never sees a half-written file. For kdc-harness's KDC_HARNESS_STATS.
 * @returns 0; KDC_ERR_INVALID (NULL argument); KDC_ERR_IO (the file could
 *          not be written or renamed: errno says why; PATH.tmp is removed);
 *          KDC_ERR_NOMEM.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_stats_write_json_file(kdc_stats_t *stats, const char *path);

/**
 * @brief Write the statistics as OpenMetrics text (what a Prometheus scrape
 *        of /metrics reads; serving it is the application's choice): for
 *        each count a "# TYPE" and "# HELP" line and its sample, counters
 *        named kdc_<field>_total (kdc_produced_total, ...), failures by
 *        error with an error="<rd_kafka_err2name()>" label, gauges
 *        kdc_consumer_lag{topic,partition}, kdc_consumer_lag_sum and
 *        kdc_consumer_lag_peak (partitions whose lag is unknown are
 *        left out), then "# EOF".
 * @param fp an open stream; not closed or flushed.
 * @returns 0; KDC_ERR_INVALID (NULL argument); KDC_ERR_IO (a write error
 *          on @p fp); KDC_ERR_NOMEM.
 * Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_stats_write_openmetrics(kdc_stats_t *stats, FILE *fp);

#ifdef __cplusplus
}
#endif

#endif /* KDC_STATS_H */
