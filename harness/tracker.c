/* DeliveryTracker: counts per-message delivery reports of a producer and
 * lists the messages it could not confirm. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>
#include <kdc/tracker.h>

#include "internal.h"

struct kdc_tracker_s {
        struct kdc__dr_target target; /* first: the per-message opaque */
        pthread_mutex_t lock;         /* guards everything below */
        rd_kafka_t *rk;               /* bound producer, NULL if none */
        int64_t pending;
        int64_t delivered;
        int64_t failed;
        rd_kafka_resp_err_t first_error;
        int released; /* kdc_tracker_destroy() was called */
        /* Failure records: an array of pointers, so a record never moves
         * when the array grows. */
        kdc_failure_t **failures;
        size_t nfailures, cfailures;
};

/* The per-message handle of kdc_tracker_track(): 24 bytes. */
struct kdc__track {
        struct kdc__dr_target target; /* first: the per-message opaque */
        kdc_tracker_t *t;
        void *opaque; /* the application's */
};

static void free_failures(kdc_tracker_t *t) {
        for (size_t i = 0; i < t->nfailures; i++)
                free(t->failures[i]);
        free(t->failures);
        t->failures = NULL;
        t->nfailures = t->cfailures = 0;
}

static void kdc__tracker_free(kdc_tracker_t *t) {
        t->target.magic = 0;
        free_failures(t);
        pthread_mutex_destroy(&t->lock);
        free(t);
}

/* One allocation holding the record, the key copy and the topic copy. */
static kdc_failure_t *failure_new(const struct kdc__report *r) {
        size_t tlen = r->topic ? strlen(r->topic) + 1 : 0;
        kdc_failure_t *f = malloc(sizeof(*f) + r->key_len + tlen);
        char *p;

        if (!f)
                return NULL;
        p = (char *)(f + 1);
        f->key = NULL;
        f->key_len = r->key_len;
        if (r->key) {
                memcpy(p, r->key, r->key_len);
                f->key = p;
                p += r->key_len;
        }
        f->topic = NULL;
        if (r->topic) {
                memcpy(p, r->topic, tlen);
                f->topic = p;
        }
        f->partition = r->partition;
        f->err = r->err;
        f->status = r->status;
        f->opaque = r->opaque;
        return f;
}

void *kdc__tracker_record(struct kdc__dr_target *target,
                          const struct kdc__report *report) {
        struct kdc__report r = *report;
        kdc_failure_t *f = NULL;
        kdc_tracker_t *t;
        int free_now, confirmed;

        if (target->kind == KDC__DR_TRACK) {
                struct kdc__track *h = (struct kdc__track *)target;

                t = h->t;
                r.opaque = h->opaque;
                h->target.magic = 0;
                free(h);
        } else {
                t = (kdc_tracker_t *)target;
                r.opaque = NULL;
        }

        confirmed = kdc__report_confirmed(&r);
        if (!confirmed)
                f = failure_new(&r); /* outside the lock; NULL: count only */

        pthread_mutex_lock(&t->lock);
        t->pending--;
        if (confirmed) {
                t->delivered++;
        } else {
                if (t->failed == 0)
                        t->first_error = r.err;
                t->failed++;
                if (f && t->nfailures == t->cfailures) {
                        size_t c = t->cfailures ? t->cfailures * 2 : 8;
                        kdc_failure_t **v =
                            realloc(t->failures, c * sizeof(*v));

                        if (v) {
                                t->failures = v;
                                t->cfailures = c;
                        }
                }
                if (f && t->nfailures < t->cfailures) {
                        t->failures[t->nfailures++] = f;
                        f = NULL;
                }
        }
        free_now = t->released && t->pending == 0;
        pthread_mutex_unlock(&t->lock);
        free(f); /* only if it could not be listed (out of memory) */
        if (free_now)
                kdc__tracker_free(t);
        return r.opaque;
}

static struct kdc__track *handle_new(kdc_tracker_t *t, void *app_opaque) {
        struct kdc__track *h = malloc(sizeof(*h));

        if (h) {
                h->target.magic = KDC__DR_TARGET_MAGIC;
                h->target.kind = KDC__DR_TRACK;
                h->t = t;
                h->opaque = app_opaque;
        }
        return h;
}

int kdc__tracker_add(kdc_tracker_t *t, void *app_opaque, void **handlep) {
        if (handlep && !(*handlep = handle_new(t, app_opaque)))
                return KDC_ERR_NOMEM;
        pthread_mutex_lock(&t->lock);
        t->pending++;
        pthread_mutex_unlock(&t->lock);
        return 0;
}

void kdc__tracker_sub(kdc_tracker_t *t, void *handle) {
        if (handle) {
                struct kdc__track *h = handle;

                h->target.magic = 0;
                free(h);
        }
        pthread_mutex_lock(&t->lock);
        t->pending--;
        pthread_mutex_unlock(&t->lock);
}

int kdc_tracker_new(kdc_tracker_t **trackerp) {
        kdc_tracker_t *t;

        if (!trackerp)
                return KDC_ERR_INVALID;
        *trackerp = NULL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return KDC_ERR_NOMEM;
        if (pthread_mutex_init(&t->lock, NULL) != 0) {
                free(t);
                return KDC_ERR_NOMEM;
        }
        t->target.magic = KDC__DR_TARGET_MAGIC;
        t->target.kind = KDC__DR_TRACKER;
        t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
        *trackerp = t;
        return 0;
}

void kdc_tracker_destroy(kdc_tracker_t *t) {
        int free_now;

        if (!t)
                return;
        pthread_mutex_lock(&t->lock);
        t->released = 1;
        free_now = t->pending == 0;
        pthread_mutex_unlock(&t->lock);
        if (free_now)
                kdc__tracker_free(t);
        /* else: the last pending report frees it (kdc__tracker_record) */
}

/* Bind t to rk on first use, checking rk's configuration once, and count
 * one pending message. */
static int bind_and_count(kdc_tracker_t *t, rd_kafka_t *rk) {
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (t->rk)
                r = t->rk == rk ? 0 : KDC_ERR_INVALID;
        else if ((r = kdc__producer_check(rk)) == 0)
                t->rk = rk;
        if (r == 0)
                t->pending++;
        pthread_mutex_unlock(&t->lock);
        return r;
}

int kdc_tracker_produce(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                        int32_t partition, const void *key, size_t key_len,
                        const void *value, size_t value_len,
                        rd_kafka_headers_t *headers, int timeout_ms,
                        rd_kafka_resp_err_t *produce_err) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        int64_t deadline;
        int r;

        if (produce_err)
                *produce_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (!t || !rk ||
            !kdc__message_args_valid(topic, key, key_len, value, value_len,
                                     timeout_ms))
                return KDC_ERR_INVALID;
        deadline = kdc__deadline(timeout_ms);

        /* Count the message before it can possibly be reported: another
         * thread may serve its report as soon as producev() returns. */
        if ((r = bind_and_count(t, rk))) {
                if (produce_err && r == KDC_ERR_CONF)
                        *produce_err = RD_KAFKA_RESP_ERR__NOT_CONFIGURED;
                return r;
        }

        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         headers, &t->target, deadline, &err);
        if (produce_err)
                *produce_err = err;
        if (r)
                kdc__tracker_sub(t, NULL); /* not enqueued: no report */
        return r;
}

int kdc_tracker_track(kdc_tracker_t *t, rd_kafka_t *rk, void *opaque,
                      void **handlep) {
        int r;

        if (handlep)
                *handlep = NULL;
        if (!t || !rk || !handlep)
                return KDC_ERR_INVALID;
        if ((r = bind_and_count(t, rk)))
                return r;
        if (!(*handlep = handle_new(t, opaque))) {
                kdc__tracker_sub(t, NULL);
                return KDC_ERR_NOMEM;
        }
        return 0;
}

int kdc_tracker_untrack(kdc_tracker_t *t, void *handle) {
        struct kdc__track *h = handle;

        if (!t || !h || h->target.magic != KDC__DR_TARGET_MAGIC ||
            h->target.kind != KDC__DR_TRACK || h->t != t)
                return KDC_ERR_INVALID;
        kdc__tracker_sub(t, h);
        return 0;
}

int kdc_tracker_wait(kdc_tracker_t *t, rd_kafka_t *rk, int timeout_ms) {
        int64_t deadline, pending, failed;
        int bound_elsewhere;

        if (!t || !rk || timeout_ms < -1)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        bound_elsewhere = t->rk && t->rk != rk;
        pthread_mutex_unlock(&t->lock);
        if (bound_elsewhere)
                return KDC_ERR_INVALID;

        deadline = kdc__deadline(timeout_ms);
        for (;;) {
                pthread_mutex_lock(&t->lock);
                pending = t->pending;
                failed = t->failed;
                pthread_mutex_unlock(&t->lock);
                if (pending == 0)
                        return failed ? KDC_ERR_DELIVERY : 0;
                if (kdc__now_ms() >= deadline) {
                        /* One last non-blocking serve before giving up. */
                        rd_kafka_poll(rk, 0);
                        pthread_mutex_lock(&t->lock);
                        pending = t->pending;
                        failed = t->failed;
                        pthread_mutex_unlock(&t->lock);
                        if (pending == 0)
                                return failed ? KDC_ERR_DELIVERY : 0;
                        return KDC_ERR_TIMEOUT;
                }
                rd_kafka_poll(rk, kdc__poll_slice(deadline));
        }
}

int kdc_tracker_reset(kdc_tracker_t *t) {
        int r = 0;

        if (!t)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        if (t->pending) {
                r = KDC_ERR_BUSY;
        } else {
                t->delivered = 0;
                t->failed = 0;
                t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
                t->rk = NULL;
                free_failures(t);
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

/* The mutex is logically mutable: reading counts does not change the
 * tracker, so the accessors take a const handle. */
enum kdc__count { KDC__PENDING, KDC__DELIVERED, KDC__FAILED };

static int64_t kdc__tracker_read(const kdc_tracker_t *ct,
                                 enum kdc__count which) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;
        int64_t v;

        pthread_mutex_lock(&t->lock);
        switch (which) {
        case KDC__PENDING:
                v = t->pending;
                break;
        case KDC__DELIVERED:
                v = t->delivered;
                break;
        default:
                v = t->failed;
                break;
        }
        pthread_mutex_unlock(&t->lock);
        return v;
}

int64_t kdc_tracker_pending(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__PENDING) : KDC_ERR_INVALID;
}

int64_t kdc_tracker_delivered(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__DELIVERED) : KDC_ERR_INVALID;
}

int64_t kdc_tracker_failed(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__FAILED) : KDC_ERR_INVALID;
}

const kdc_failure_t *kdc_tracker_failure(const kdc_tracker_t *ct, size_t i) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;
        const kdc_failure_t *f = NULL;

        if (!t)
                return NULL;
        pthread_mutex_lock(&t->lock);
        if (i < t->nfailures)
                f = t->failures[i];
        pthread_mutex_unlock(&t->lock);
        return f;
}

rd_kafka_resp_err_t kdc_tracker_first_error(const kdc_tracker_t *ct) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;
        rd_kafka_resp_err_t err;

        if (!t)
                return RD_KAFKA_RESP_ERR__INVALID_ARG;
        pthread_mutex_lock(&t->lock);
        err = t->first_error;
        pthread_mutex_unlock(&t->lock);
        return err;
}
