/* Bounded retries of consumed messages (kdc/retry.h): per-partition retry
 * records, backoff with jitter, pause/resume, drop on revocation, and
 * exhaustion to the confirmed DLQ route. */
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>
#include <kdc/retry.h>

#include "internal.h"

/* Bound of the local seek before a resume (a librdkafka op answered by its
 * own threads, not by the broker). */
#define KDC__SEEK_TIMEOUT_MS 5000

/* One failed message of a partition (the partition is paused, so there is
 * at most one). */
struct record {
        int64_t offset;
        rd_kafka_message_t *msg; /* held while waiting; NULL when handed back */
        uint64_t epoch;
        int attempts;     /* failed attempts so far */
        int64_t first_ms; /* monotonic time of the first failure */
        int64_t due_ms;   /* when the held message is handed back */
        kdc_class_t cls;  /* class of the last failure */
};

struct kdc_retry_s {
        kdc_dlq_t *dlq;
        kdc_retry_policy_t poison, transient;
        struct kdc__partmap records; /* (topic, partition) -> struct record */
        int64_t count;
        uint64_t rng; /* xorshift64 state for the jitter */
        kdc_stats_t *stats; /* kdc_stats_attach_retry(); NULL: none */
};

static const kdc_retry_policy_t default_poison = {.max_attempts = 1,
                                                  .initial_ms = 0,
                                                  .multiplier = 1.0,
                                                  .max_interval_ms = 0,
                                                  .jitter = 0.0,
                                                  .deadline_ms = -1,
                                                  .on_exhausted =
                                                      KDC_RETRY_EXHAUSTED_DLQ,
                                                  .dlq_timeout_ms = 30000};

static const kdc_retry_policy_t default_transient = {
    .max_attempts = 10,
    .initial_ms = 1000,
    .multiplier = 2.0,
    .max_interval_ms = 30000,
    .jitter = 0.2,
    .deadline_ms = -1,
    .on_exhausted = KDC_RETRY_EXHAUSTED_HALT,
    .dlq_timeout_ms = 30000};

int kdc_retry_new(kdc_retry_t **rp, kdc_dlq_t *dlq) {
        kdc_retry_t *r;

        if (!rp)
                return KDC_ERR_INVALID;
        *rp = NULL;
        r = calloc(1, sizeof(*r));
        if (!r)
                return KDC_ERR_NOMEM;
        r->dlq = dlq;
        r->poison = default_poison;
        if (!dlq)
                r->poison.on_exhausted = KDC_RETRY_EXHAUSTED_HALT;
        r->transient = default_transient;
        r->rng = (uint64_t)kdc__now_ms() ^ (uint64_t)(uintptr_t)r ^
                 0x9e3779b97f4a7c15ull;
        if (!r->rng)
                r->rng = 1;
        *rp = r;
        return 0;
}

static void record_free(struct record *rec) {
        if (rec->msg)
                rd_kafka_message_destroy(rec->msg);
        free(rec);
}

void kdc_retry_destroy(kdc_retry_t *r) {
        if (!r)
                return;
        for (size_t i = 0; i < r->records.cap; i++)
                if (r->records.slots[i].topic)
                        record_free(r->records.slots[i].value);
        kdc__partmap_free(&r->records);
        free(r);
}

static kdc_retry_policy_t *policy_of(kdc_retry_t *r, kdc_class_t cls) {
        if (cls == KDC_CLASS_POISON)
                return &r->poison;
        if (cls == KDC_CLASS_TRANSIENT)
                return &r->transient;
        return NULL;
}

int kdc_retry_set_policy(kdc_retry_t *r, kdc_class_t cls,
                         const kdc_retry_policy_t *p) {
        kdc_retry_policy_t *dst;

        if (!r || !p || !(dst = policy_of(r, cls)))
                return KDC_ERR_INVALID;
        if (p->max_attempts < 1 || p->initial_ms < 0 ||
            !(p->multiplier >= 1.0) || p->max_interval_ms < p->initial_ms ||
            !(p->jitter >= 0.0 && p->jitter <= 1.0) || p->deadline_ms < -1 ||
            p->dlq_timeout_ms < -1 ||
            (p->on_exhausted != KDC_RETRY_EXHAUSTED_DLQ &&
             p->on_exhausted != KDC_RETRY_EXHAUSTED_HALT) ||
            (p->on_exhausted == KDC_RETRY_EXHAUSTED_DLQ && !r->dlq))
                return KDC_ERR_INVALID;
        *dst = *p;
        return 0;
}

int kdc_retry_get_policy(const kdc_retry_t *cr, kdc_class_t cls,
                         kdc_retry_policy_t *p) {
        const kdc_retry_policy_t *src;

        if (!cr || !p || !(src = policy_of((kdc_retry_t *)cr, cls)))
                return KDC_ERR_INVALID;
        *p = *src;
        return 0;
}

/* The wait before the next attempt after `attempts` failures (>= 1). */
static int64_t backoff_ms(kdc_retry_t *r, const kdc_retry_policy_t *p,
                          int attempts) {
        double d = p->initial_ms;
        uint64_t x;

        for (int i = 1;
             i < attempts && d < p->max_interval_ms && p->multiplier > 1.0; i++)
                d *= p->multiplier;
        if (d > p->max_interval_ms)
                d = p->max_interval_ms;
        if (p->jitter > 0.0) {
                x = r->rng;
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                r->rng = x;
                d -= d * p->jitter * ((double)(x >> 11) / 9007199254740992.0);
        }
        return (int64_t)(d + 0.5);
}

static int pause_resume(rd_kafka_t *consumer, const char *topic,
                        int32_t partition, int pause) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_resp_err_t err;

        if (!l)
                return KDC_ERR_NOMEM;
        rd_kafka_topic_partition_list_add(l, topic, partition);
        err = pause ? rd_kafka_pause_partitions(consumer, l)
                    : rd_kafka_resume_partitions(consumer, l);
        if (!err)
                err = l->elems[0].err;
        rd_kafka_topic_partition_list_destroy(l);
        return err ? KDC_ERR_ASSIGN : 0;
}

/* Resume a partition at `offset` (the one after the retried message):
 * seek there while it is still paused, then resume. Messages polled after
 * the failed one and dropped by the application (a batch) are fetched
 * again; without the seek, librdkafka would resume after the last message
 * polled before the pause. */
static int resume_after(rd_kafka_t *consumer, const char *topic,
                        int32_t partition, int64_t offset) {
        rd_kafka_topic_partition_list_t *l =
            rd_kafka_topic_partition_list_new(1);
        rd_kafka_error_t *error;
        int rc = 0;

        if (!l)
                return KDC_ERR_NOMEM;
        rd_kafka_topic_partition_list_add(l, topic, partition)->offset = offset;
        error = rd_kafka_seek_partitions(consumer, l, KDC__SEEK_TIMEOUT_MS);
        if (error) {
                rd_kafka_error_destroy(error);
                rc = KDC_ERR_ASSIGN;
        } else if (l->elems[0].err) {
                rc = KDC_ERR_ASSIGN;
        }
        rd_kafka_topic_partition_list_destroy(l);
        if (rc)
                return rc;
        return pause_resume(consumer, topic, partition, 0);
}

static int message_ok(const rd_kafka_message_t *msg) {
        return msg && msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && msg->rkt &&
               rd_kafka_topic_name(msg->rkt);
}

/* Forget the record of (topic, partition); the held message is destroyed. */
static void forget(kdc_retry_t *r, const char *topic, int32_t partition) {
        struct record *rec = kdc__partmap_del(
            &r->records, topic, partition, kdc__partmap_hash(topic, partition));

        if (rec) {
                record_free(rec);
                r->count--;
        }
}

int kdc_retry_failed(kdc_retry_t *r, rd_kafka_t *consumer,
                     rd_kafka_message_t *msg,
                     const kdc_assignment_t *assignment, uint64_t epoch,
                     kdc_class_t cls, const char *error_text,
                     rd_kafka_resp_err_t *delivery_err) {
        const kdc_retry_policy_t *p;
        struct record *rec;
        const char *topic;
        uint64_t hash;
        int64_t now, wait;
        int fresh = 0, rc, prc;

        if (delivery_err)
                *delivery_err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!r || !consumer || !message_ok(msg))
                return KDC_ERR_INVALID;
        topic = rd_kafka_topic_name(msg->rkt);
        hash = kdc__partmap_hash(topic, msg->partition);
        rec = kdc__partmap_get(&r->records, topic, msg->partition, hash);
        if (rec && (rec->offset != msg->offset || rec->msg)) {
                /* Another offset of the partition (the application sought),
                 * or a second copy: start over for this one. */
                forget(r, topic, msg->partition);
                rec = NULL;
        }

        if (cls == KDC_CLASS_MEMBERSHIP ||
            (assignment &&
             kdc_assignment_check(assignment, topic, msg->partition, epoch))) {
                if (cls != KDC_CLASS_MEMBERSHIP)
                        kdc__stats_add(r->stats, KDC__STAT_STALE_DROPS, 1);
                if (rec) {
                        /* Paused by an earlier wait and not revoked yet:
                         * back to the message, so that it comes again if
                         * the partition stays this consumer's (a failure
                         * here: revoked, the new owner starts from the
                         * committed offset). */
                        forget(r, topic, msg->partition);
                        (void)resume_after(consumer, topic, msg->partition,
                                           msg->offset);
                }
                return KDC_RETRY_DROP;
        }
        p = policy_of(r, cls);
        if (!p) { /* fatal, or not a failure */
                if (rec)
                        forget(r, topic, msg->partition);
                return KDC_RETRY_HALT;
        }

        now = kdc__now_ms();
        if (!rec) {
                rec = calloc(1, sizeof(*rec));
                if (!rec)
                        return KDC_ERR_NOMEM;
                rec->offset = msg->offset;
                rec->first_ms = now;
                fresh = 1;
        }
        if (rec->attempts < INT32_MAX)
                rec->attempts++;
        rec->cls = cls;
        rec->epoch = epoch;

        wait = backoff_ms(r, p, rec->attempts);
        if (rec->attempts < p->max_attempts &&
            (p->deadline_ms < 0 ||
             now + wait - rec->first_ms <= p->deadline_ms)) {
                kdc__stats_add(r->stats, KDC__STAT_RETRIES, 1);
                goto keep;
        }

        /* Exhausted. */
        kdc__stats_add(r->stats, KDC__STAT_RETRIES_EXHAUSTED, 1);
        if (p->on_exhausted == KDC_RETRY_EXHAUSTED_HALT || !r->dlq) {
                if (fresh)
                        free(rec);
                else
                        forget(r, topic, msg->partition);
                return KDC_RETRY_HALT;
        }
        rc = kdc__dlq_route(r->dlq, msg, cls, error_text, rec->attempts,
                            p->dlq_timeout_ms, delivery_err);
        if (rc == 0 || rc == KDC_ERR_INVALID || rc == KDC_ERR_NOMEM) {
                if (fresh) {
                        free(rec);
                } else {
                        forget(r, topic, msg->partition);
                        /* Dead-lettered after waits: the partition goes on
                         * after it (a failure here is a revoked partition,
                         * whose new owner starts from the committed
                         * offset). */
                        if (rc == 0)
                                (void)resume_after(consumer, topic,
                                                   msg->partition,
                                                   msg->offset + 1);
                }
                return rc == 0 ? KDC_RETRY_COMMIT : rc;
        }
        /* The routing was not confirmed: keep the message and hand it back
         * after the longest wait (its next failure routes it again). */
        wait = p->max_interval_ms;

keep:
        if (fresh) {
                if (kdc__partmap_put(&r->records, topic, msg->partition, hash,
                                     rec)) {
                        free(rec);
                        return KDC_ERR_NOMEM;
                }
                r->count++;
        }
        /* Pause (again: idempotent) before keeping the message, so that no
         * later message of the partition is polled meanwhile. */
        if ((prc = pause_resume(consumer, topic, msg->partition, 1))) {
                forget(r, topic, msg->partition);
                return prc;
        }
        rec->msg = msg;
        rec->due_ms = now + wait;
        return KDC_RETRY_WAIT;
}

int kdc_retry_next(kdc_retry_t *r, rd_kafka_message_t **msgp,
                   uint64_t *epochp) {
        struct record *best = NULL;
        int64_t now;

        if (msgp)
                *msgp = NULL;
        if (!r || !msgp)
                return KDC_ERR_INVALID;
        now = kdc__now_ms();
        for (size_t i = 0; i < r->records.cap; i++) {
                struct record *rec = r->records.slots[i].value;

                if (!r->records.slots[i].topic || !rec->msg ||
                    rec->due_ms > now)
                        continue;
                if (!best || rec->due_ms < best->due_ms)
                        best = rec;
        }
        if (!best)
                return 0;
        *msgp = best->msg;
        best->msg = NULL;
        if (epochp)
                *epochp = best->epoch;
        return 1;
}

int kdc_retry_done(kdc_retry_t *r, rd_kafka_t *consumer,
                   const rd_kafka_message_t *msg) {
        struct record *rec;
        const char *topic;

        if (!r || !consumer || !message_ok(msg))
                return KDC_ERR_INVALID;
        topic = rd_kafka_topic_name(msg->rkt);
        rec = kdc__partmap_get(&r->records, topic, msg->partition,
                               kdc__partmap_hash(topic, msg->partition));
        if (!rec || rec->offset != msg->offset)
                return KDC_ERR_NOENT;
        forget(r, topic, msg->partition);
        return resume_after(consumer, topic, msg->partition, msg->offset + 1);
}

int kdc_retry_timeout(const kdc_retry_t *r, int max_ms) {
        int64_t now, best = max_ms;

        if (!r || max_ms < 0)
                return KDC_ERR_INVALID;
        now = kdc__now_ms();
        for (size_t i = 0; i < r->records.cap; i++) {
                const struct record *rec = r->records.slots[i].value;

                if (!r->records.slots[i].topic || !rec->msg)
                        continue;
                if (rec->due_ms - now < best)
                        best = rec->due_ms - now;
        }
        return best < 0 ? 0 : (int)best;
}

int64_t kdc_retry_pending(const kdc_retry_t *r) {
        return r ? r->count : KDC_ERR_INVALID;
}

int kdc_retry_attempts(const kdc_retry_t *r, const rd_kafka_message_t *msg) {
        const struct record *rec;
        const char *topic;

        if (!r || !message_ok(msg))
                return KDC_ERR_INVALID;
        topic = rd_kafka_topic_name(msg->rkt);
        rec = kdc__partmap_get(&r->records, topic, msg->partition,
                               kdc__partmap_hash(topic, msg->partition));
        return rec && rec->offset == msg->offset ? rec->attempts : 0;
}

void kdc__retry_set_stats(kdc_retry_t *r, kdc_stats_t *s) {
        r->stats = s;
}

void kdc_retry_rebalance_hook(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                              rd_kafka_topic_partition_list_t *parts, int lost,
                              void *opaque) {
        kdc_retry_t *r = opaque;

        (void)lost;
        if (!r || !rk || err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
                return;
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && parts) {
                for (int i = 0; i < parts->cnt; i++) {
                        const rd_kafka_topic_partition_t *tp = &parts->elems[i];

                        if (!kdc__partmap_get(
                                &r->records, tp->topic, tp->partition,
                                kdc__partmap_hash(tp->topic, tp->partition)))
                                continue;
                        forget(r, tp->topic, tp->partition);
                        (void)pause_resume(rk, tp->topic, tp->partition, 0);
                }
                return;
        }
        /* Another rebalance error: every partition is unassigned. */
        while (r->records.len) {
                for (size_t i = 0; i < r->records.cap; i++) {
                        struct kdc__partmap_slot *s = &r->records.slots[i];

                        if (!s->topic)
                                continue;
                        (void)pause_resume(rk, s->topic, s->partition, 0);
                        forget(r, s->topic, s->partition);
                        break;
                }
        }
}
