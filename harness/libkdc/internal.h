/* libkdc internals: never installed, never included by applications.
 * Internal names use the kdc__ prefix (libuv style). */
#ifndef KDC_HARNESS_INTERNAL_H
#define KDC_HARNESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

#include <kdc/dlq.h>
#include <kdc/stats.h>
#include <kdc/tracker.h>

/* Longest single rd_kafka_poll() inside a libkdc wait, so that reports
 * served by another thread are noticed promptly. */
#define KDC__POLL_SLICE_MS 100

/* Longest single rd_kafka_flush() inside kdc__serve(). A flush only ends
 * early when the whole producer is drained or when a report served on the
 * waiting thread yields; a report another thread serves (an application
 * poll thread, or another libkdc wait on the same producer) is only noticed
 * between flushes. Each flush wakes every broker thread once: 100 a second
 * per waiting thread is negligible. */
#define KDC__FLUSH_SLICE_MS 10

/* Every per-message opaque libkdc hands to rd_kafka_produceva() points to an
 * object that starts with this header; kdc_dr_msg_record() dispatches on
 * its kind. */
#define KDC__DR_TARGET_MAGIC 0x6b646364u /* "kdcd" */

enum kdc__dr_kind {
        KDC__DR_TRACKER = 1, /* a kdc_tracker_t (kdc_tracker_produce) */
        KDC__DR_TRACK = 2,   /* a per-message handle (kdc_tracker_track) */
        KDC__DR_CONFIRM = 3  /* a synchronous confirmed produce */
};

struct kdc__dr_target {
        uint32_t magic;
        uint16_t kind;  /* enum kdc__dr_kind */
        uint16_t flags; /* kind-specific: a handle's pool (tracker.c) */
};

/* One delivery report, reduced to what libkdc keeps. The pointers are only
 * valid during the call that receives it. */
struct kdc__report {
        rd_kafka_resp_err_t err;
        rd_kafka_msg_status_t status;
        const char *topic; /* may be NULL */
        int32_t partition;
        const void *key;
        size_t key_len;
        void *opaque; /* the application's per-message opaque (track) */
};

/* Confirmed means exactly this: no error AND written to the log. */
static inline int kdc__report_confirmed(const struct kdc__report *r) {
        return r->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
               r->status == RD_KAFKA_MSG_STATUS_PERSISTED;
}

/* ---- tracker core (tracker.c): no librdkafka call, usable in tests that
 * must not start librdkafka threads (ThreadSanitizer) ---------------------- */

/* Count one more pending message; allocates a per-message handle when
 * handlep is not NULL (kdc_tracker_track). 0 or KDC_ERR_NOMEM. */
int kdc__tracker_add(kdc_tracker_t *t, void *app_opaque, void **handlep);

/* Undo kdc__tracker_add() for a message that was never enqueued. handle may
 * be NULL (kdc_tracker_produce). */
void kdc__tracker_sub(kdc_tracker_t *t, void *handle);

/* Record the report of a message counted by kdc__tracker_add(). target is
 * the tracker itself or a per-message handle; a handle is recycled, and a
 * released tracker may be freed by this call. Returns the application's
 * per-message opaque (NULL for kdc_tracker_produce messages). */
void *kdc__tracker_record(struct kdc__dr_target *target,
                          const struct kdc__report *r);

/* kdc__tracker_record() for a confirmed report of a message counted
 * without a handle: one count added, nothing else (no atomic
 * read-modify-write on the thread that owns the delivered count). */
void kdc__tracker_confirmed(kdc_tracker_t *t);

/* Tests only: how many trackers were destroyed with messages pending and
 * are not freed yet (each is freed by the first kdc_tracker_new() or
 * kdc_tracker_destroy() after its last report). */
size_t kdc__tracker_released_pending(void);

/* Tests only: how many chunks of HANDLES_PER_CHUNK (1024) handles t has
 * allocated for kdc_tracker_track(). */
size_t kdc__tracker_handle_chunks(kdc_tracker_t *t);

/* The synchronous confirm record's report (produce.c). */
void kdc__confirm_record(struct kdc__dr_target *target,
                         const struct kdc__report *r);

/* The tracker a per-message opaque belongs to (the tracker itself, or a
 * handle's). */
kdc_tracker_t *kdc__tracker_of(struct kdc__dr_target *target);

/* ---- waiting ------------------------------------------------------------- */

/* Serve rk's delivery reports for up to slice_ms on the calling thread,
 * waiting for awaited (a tracker or a confirm record): rd_kafka_flush(rk,
 * slice_ms capped at KDC__FLUSH_SLICE_MS), so linger.ms is ignored
 * meanwhile, cut short by rd_kafka_yield() as soon as a report served here
 * leaves awaited with nothing pending. Callers loop until done. */
void kdc__serve(rd_kafka_t *rk, const void *awaited, int slice_ms);

/* ---- time ---------------------------------------------------------------- */

/* Monotonic clock in milliseconds. */
int64_t kdc__now_ms(void);

/* Absolute deadline for a relative timeout: -1 -> INT64_MAX. */
int64_t kdc__deadline(int timeout_ms);

/* Milliseconds left until deadline (>= 0), capped at KDC__POLL_SLICE_MS. */
int kdc__poll_slice(int64_t deadline);

/* ---- producing ----------------------------------------------------------- */

/* 0 if rk is a producer with a dr_msg_cb registered and
 * delivery.report.only.error false; KDC_ERR_INVALID if rk is not a
 * producer; KDC_ERR_CONF otherwise. */
int kdc__producer_check(rd_kafka_t *rk);

/* Validate the message arguments shared by the produce functions. */
int kdc__message_args_valid(const char *topic, const void *key, size_t key_len,
                            const void *value, size_t value_len,
                            int timeout_ms);

/* rd_kafka_produceva() with F_COPY and target as per-message opaque; on
 * __QUEUE_FULL serve reports with rd_kafka_poll() and retry until deadline
 * (kdc__deadline()), or, when deadline is 0, until timeout_ms after the
 * first __QUEUE_FULL: the common path then reads no clock (clock_gettime is
 * ~20 ns here, several % of a produce).
 * Returns 0, KDC_ERR_QUEUE_FULL or KDC_ERR_PRODUCE; *errp gets the last
 * produceva error. On failure headers are still owned by the caller. */
int kdc__produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                 const void *key, size_t key_len, const void *value,
                 size_t value_len, rd_kafka_headers_t *headers,
                 struct kdc__dr_target *target, int64_t deadline,
                 int timeout_ms, rd_kafka_resp_err_t *errp);

/* kdc__produce()'s call and __QUEUE_FULL retries, for a message the caller
 * described as rd_kafka_produceva() entries (its opaque included). */
int kdc__produceva(rd_kafka_t *rk, const rd_kafka_vu_t *vus, size_t n,
                   int64_t deadline, int timeout_ms, rd_kafka_resp_err_t *errp);

/* kdc_produce_confirmed() with headers (owned by librdkafka once enqueued,
 * destroyed here when not). Same returns and *delivery_err. */
int kdc__produce_confirmed(rd_kafka_t *rk, const char *topic,
                           int32_t partition, const void *key, size_t key_len,
                           const void *value, size_t value_len,
                           rd_kafka_headers_t *headers, int timeout_ms,
                           rd_kafka_resp_err_t *delivery_err);

/* ---- DLQ (identity.c, dlq_decode.c) -------------------------------------- */

/* 64 lower-case hex digits and a NUL. */
void kdc__identity_hex(const unsigned char identity[32], char hex[65]);

/* kdc_dlq_route() that also writes kdc.failure.attempts when attempts > 0
 * (the retry policy's exhaustion, retry.c). Same returns. */
int kdc__dlq_route(kdc_dlq_t *d, const rd_kafka_message_t *msg, kdc_class_t cls,
                   const char *error_text, int attempts, int timeout_ms,
                   rd_kafka_resp_err_t *delivery_err);

/* Is topic a name Kafka accepts ([A-Za-z0-9._-], 1..249, not "." "..")? */
int kdc__topic_name_valid(const char *topic, size_t len);

/* ---- (topic, partition) map (partmap.c) ---------------------------------- */

/* Open addressing, linear probing, backward-shift deletion. Keys are
 * copied; values are the caller's. Not thread-safe: callers lock. */
struct kdc__partmap_slot {
        char *topic; /* NULL: empty slot */
        uint64_t hash;
        int32_t partition;
        void *value;
};

struct kdc__partmap {
        struct kdc__partmap_slot *slots;
        size_t cap; /* power of two, or 0 */
        size_t len;
};

uint64_t kdc__partmap_hash(const char *topic, int32_t partition);
/* The value, or NULL. */
void *kdc__partmap_get(const struct kdc__partmap *m, const char *topic,
                       int32_t partition, uint64_t hash);
/* Insert or replace; 0 or KDC_ERR_NOMEM. */
int kdc__partmap_put(struct kdc__partmap *m, const char *topic,
                     int32_t partition, uint64_t hash, void *value);
/* Remove and return the value (NULL if absent). */
void *kdc__partmap_del(struct kdc__partmap *m, const char *topic,
                       int32_t partition, uint64_t hash);
/* Free the slots and key copies (not the values). */
void kdc__partmap_free(struct kdc__partmap *m);

/* ---- statistics (stats.c) ------------------------------------------------
 * Every function takes NULL statistics and then does nothing, so a caller
 * counts with one call and no test. Counts are relaxed atomics. */

enum kdc__stat {
        KDC__STAT_DLQ_ROUTED,
        KDC__STAT_DLQ_FAILED,
        KDC__STAT_RETRIES,
        KDC__STAT_RETRIES_EXHAUSTED,
        KDC__STAT_COMMITS,
        KDC__STAT_REBALANCES,
        KDC__STAT_REVOCATIONS,
        KDC__STAT_LOST,
        KDC__STAT_STALE_DROPS,
        KDC__STAT_TXN_ABORTS,
        KDC__STAT_TXN_REWINDS,
        KDC__STAT_COUNT
};

/* Counts kept by librdkafka error code. */
enum kdc__stat_err {
        KDC__STAT_ERR_DELIVERY,
        KDC__STAT_ERR_COMMIT,
        KDC__STAT_ERR_CONSUMER,
        KDC__STAT_ERR_COUNT
};

void kdc__stats_add(kdc_stats_t *s, enum kdc__stat which, uint64_t n);
void kdc__stats_add_err(kdc_stats_t *s, enum kdc__stat_err which,
                        rd_kafka_resp_err_t err);
/* A commit's outcome: r == 0 counts n commits, KDC_ERR_STALE a stale drop,
 * another error a failed commit with err (when set). */
void kdc__stats_commit(kdc_stats_t *s, int r, rd_kafka_resp_err_t err);
/* The tracker is destroyed: keep its counts, forget the tracker. */
void kdc__stats_tracker_gone(kdc_stats_t *s, kdc_tracker_t *t);

/* The statistics each object counts into (NULL: none). */
kdc_stats_t *kdc__assignment_stats(const kdc_assignment_t *a);
void kdc__assignment_set_stats(kdc_assignment_t *a, kdc_stats_t *s);
void kdc__retry_set_stats(kdc_retry_t *r, kdc_stats_t *s);
void kdc__dlq_set_stats(kdc_dlq_t *d, kdc_stats_t *s);
void kdc__txn_set_stats(kdc_txn_t *txn, kdc_stats_t *s);
/* 0; KDC_ERR_INVALID when t counts into other statistics. */
int kdc__tracker_set_stats(kdc_tracker_t *t, kdc_stats_t *s);
/* Messages enqueued (sent less withdrawn) and confirmed, since creation. */
void kdc__tracker_counts(const kdc_tracker_t *t, uint64_t *produced,
                         uint64_t *delivered);

#endif /* KDC_HARNESS_INTERNAL_H */
