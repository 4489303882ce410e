/* DeliveryTracker: counts per-message delivery reports of a producer and
 * lists the messages it could not confirm. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>
#include <kdc/tracker.h>

#include "internal.h"

/* The per-message handle of kdc_tracker_track(): 24 bytes. */
struct kdc__track {
        struct kdc__dr_target target; /* first: the per-message opaque */
        kdc_tracker_t *t;
        union {
                void *opaque;             /* in flight: the application's */
                struct kdc__track *next;  /* on the free list */
        } u;
};

/* Handles come from chunks owned by the tracker and are recycled through a
 * free list, so a tracked message costs no malloc() and 24 bytes, and the
 * tracker's memory follows the peak number of messages in flight. */
#define HANDLES_PER_CHUNK 1024

struct handle_chunk {
        struct handle_chunk *next;
        struct kdc__track handles[HANDLES_PER_CHUNK];
};

/* The tracker's hot counts share one 64-bit word, so that a confirmed
 * report costs a single atomic operation (each is ~5 ns here, a quarter of
 * what the tracker adds to a produce):
 *   bits  0-31  references: messages in flight, + 1 until destroy (a
 *               folding report keeps its message's until the fold is
 *               done);
 *   bits 32-63  messages delivered since the last fold.
 * A report that would carry the delivered part to FOLD_AT folds it into
 * delivered_base under the lock instead (once per 2^31 reports), so it never
 * wraps; readers take the lock and see base + part consistently. */
#define REF_ONE ((uint64_t)1)
#define DELIVERED_ONE ((uint64_t)1 << 32)
#define REFS_OF(w) ((uint32_t)(w))
#define DELIVERED_OF(w) ((uint32_t)((w) >> 32))
#define FOLD_AT ((uint32_t)1 << 31)
/* kdc__tracker_add() refuses beyond this many references (never reached
 * through librdkafka, whose queue holds at most INT32_MAX messages). */
#define REFS_MAX ((uint32_t)0xF0000000u)

struct kdc_tracker_s {
        struct kdc__dr_target target; /* first: the per-message opaque */
        _Atomic uint64_t state;       /* references | delivered (above) */
        uint32_t fold_at;             /* FOLD_AT; lower in tests */
        atomic_int_fast64_t failed;   /* changed under lock, with failures */
        _Atomic(rd_kafka_t *) rk;     /* bound producer, NULL if none */
        pthread_mutex_t lock; /* binding, handles, failures, first_error,
                                 delivered_base, folds */
        uint64_t delivered_base;
        struct handle_chunk *chunks;
        struct kdc__track *free_handles;
        rd_kafka_resp_err_t first_error;
        /* Failure records: an array of pointers, so a record never moves
         * when the array grows. */
        kdc_failure_t **failures;
        size_t nfailures, cfailures;
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
        while (t->chunks) {
                struct handle_chunk *c = t->chunks;

                t->chunks = c->next;
                free(c);
        }
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

/* A handle from the free list (a new chunk when empty); t->lock held. */
static struct kdc__track *handle_get(kdc_tracker_t *t, void *app_opaque) {
        struct kdc__track *h;

        if (!t->free_handles) {
                struct handle_chunk *c = malloc(sizeof(*c));

                if (!c)
                        return NULL;
                c->next = t->chunks;
                t->chunks = c;
                for (size_t i = HANDLES_PER_CHUNK; i-- > 0;) {
                        c->handles[i].target.magic = 0;
                        c->handles[i].u.next = t->free_handles;
                        t->free_handles = &c->handles[i];
                }
        }
        h = t->free_handles;
        t->free_handles = h->u.next;
        h->target.magic = KDC__DR_TARGET_MAGIC;
        h->target.kind = KDC__DR_TRACK;
        h->t = t;
        h->u.opaque = app_opaque;
        return h;
}

/* Back to the free list: no longer a libkdc record; t->lock held. */
static void handle_put(kdc_tracker_t *t, struct kdc__track *h) {
        h->target.magic = 0;
        h->u.next = t->free_handles;
        t->free_handles = h;
}

/* Drop one reference (a message's, or the application's); the last one
 * frees the tracker. */
static void unref(kdc_tracker_t *t) {
        uint64_t w = atomic_fetch_sub_explicit(&t->state, REF_ONE,
                                               memory_order_acq_rel);

        if (REFS_OF(w) == 1)
                kdc__tracker_free(t);
}

/* Messages in flight. Only meaningful while the application holds its
 * reference, i.e. from the application's own calls. */
static int64_t pending_of(const kdc_tracker_t *ct) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;

        return (int64_t)REFS_OF(
                   atomic_load_explicit(&t->state, memory_order_acquire)) -
               1;
}

/* A confirmed report: delivered + 1 and one reference less, in one atomic
 * operation; the last reference frees the tracker. */
static void settle_delivered(kdc_tracker_t *t) {
        uint64_t w = atomic_load_explicit(&t->state, memory_order_relaxed);
        uint64_t nw;

        do {
                if (DELIVERED_OF(w) >= t->fold_at - 1) {
                        /* Fold, holding this message's reference so the
                         * tracker outlives the lock. */
                        pthread_mutex_lock(&t->lock);
                        w = atomic_fetch_add_explicit(&t->state, DELIVERED_ONE,
                                                      memory_order_acq_rel);
                        t->delivered_base += (uint64_t)DELIVERED_OF(w) + 1;
                        atomic_fetch_sub_explicit(
                            &t->state,
                            ((uint64_t)DELIVERED_OF(w) + 1) << 32,
                            memory_order_acq_rel);
                        pthread_mutex_unlock(&t->lock);
                        unref(t);
                        return;
                }
                nw = w + DELIVERED_ONE - REF_ONE;
        } while (!atomic_compare_exchange_weak_explicit(
            &t->state, &w, nw, memory_order_acq_rel, memory_order_relaxed));
        if (REFS_OF(nw) == 0)
                kdc__tracker_free(t);
}

/* One more reference for a message about to be enqueued; 0, or
 * KDC_ERR_NOMEM when the count would approach its 32 bits. */
static int ref_message(kdc_tracker_t *t) {
        uint64_t w = atomic_fetch_add_explicit(&t->state, REF_ONE,
                                               memory_order_relaxed);

        if (REFS_OF(w) >= REFS_MAX) {
                unref(t);
                return KDC_ERR_NOMEM;
        }
        return 0;
}

void *kdc__tracker_record(struct kdc__dr_target *target,
                          const struct kdc__report *report) {
        struct kdc__report r = *report;
        struct kdc__track *h = NULL;
        kdc_failure_t *f = NULL;
        kdc_tracker_t *t;
        int confirmed;

        if (target->kind == KDC__DR_TRACK) {
                h = (struct kdc__track *)target;
                t = h->t;
                r.opaque = h->u.opaque;
        } else {
                t = (kdc_tracker_t *)target;
                r.opaque = NULL;
        }

        confirmed = kdc__report_confirmed(&r);
        if (!confirmed)
                f = failure_new(&r); /* outside the lock; NULL: count only */

        if (h || !confirmed) {
                pthread_mutex_lock(&t->lock);
                if (h)
                        handle_put(t, h);
                if (!confirmed) {
                        if (atomic_load_explicit(&t->failed,
                                                 memory_order_relaxed) == 0)
                                t->first_error = r.err;
                        atomic_fetch_add_explicit(&t->failed, 1,
                                                  memory_order_relaxed);
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
                pthread_mutex_unlock(&t->lock);
        }
        free(f); /* only if it could not be listed (out of memory) */
        /* Last: a waiter that sees this message gone sees its outcome. */
        if (confirmed)
                settle_delivered(t);
        else
                unref(t);
        return r.opaque;
}

kdc_tracker_t *kdc__tracker_of(struct kdc__dr_target *target) {
        return target->kind == KDC__DR_TRACK ? ((struct kdc__track *)target)->t
                                              : (kdc_tracker_t *)target;
}

void kdc__tracker_confirmed(kdc_tracker_t *t) {
        settle_delivered(t);
}

int kdc__tracker_add(kdc_tracker_t *t, void *app_opaque, void **handlep) {
        if (ref_message(t))
                return KDC_ERR_NOMEM;
        if (handlep) {
                pthread_mutex_lock(&t->lock);
                *handlep = handle_get(t, app_opaque);
                pthread_mutex_unlock(&t->lock);
                if (!*handlep) {
                        unref(t); /* never the last: the application's */
                        return KDC_ERR_NOMEM;
                }
        }
        return 0;
}

void kdc__tracker_sub(kdc_tracker_t *t, void *handle) {
        if (handle) {
                pthread_mutex_lock(&t->lock);
                handle_put(t, handle);
                pthread_mutex_unlock(&t->lock);
        }
        unref(t);
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
        atomic_init(&t->state, REF_ONE); /* the application's */
        t->fold_at = FOLD_AT;
        atomic_init(&t->failed, 0);
        atomic_init(&t->rk, NULL);
        t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
        *trackerp = t;
        return 0;
}

void kdc_tracker_destroy(kdc_tracker_t *t) {
        if (t)
                unref(t); /* else the last pending report frees it */
}

/* Bind t to rk on first use, checking rk's configuration once. */
static int bind_producer(kdc_tracker_t *t, rd_kafka_t *rk) {
        rd_kafka_t *bound =
            atomic_load_explicit(&t->rk, memory_order_acquire);
        int r = 0;

        if (bound)
                return bound == rk ? 0 : KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        bound = atomic_load_explicit(&t->rk, memory_order_relaxed);
        if (bound)
                r = bound == rk ? 0 : KDC_ERR_INVALID;
        else if ((r = kdc__producer_check(rk)) == 0)
                atomic_store_explicit(&t->rk, rk, memory_order_release);
        pthread_mutex_unlock(&t->lock);
        return r;
}

int kdc_tracker_produce(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                        int32_t partition, const void *key, size_t key_len,
                        const void *value, size_t value_len,
                        rd_kafka_headers_t *headers, int timeout_ms,
                        rd_kafka_resp_err_t *produce_err) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        int r;

        if (produce_err)
                *produce_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (!t || !rk ||
            !kdc__message_args_valid(topic, key, key_len, value, value_len,
                                     timeout_ms))
                return KDC_ERR_INVALID;
        if ((r = bind_producer(t, rk))) {
                if (produce_err && r == KDC_ERR_CONF)
                        *produce_err = RD_KAFKA_RESP_ERR__NOT_CONFIGURED;
                return r;
        }

        /* Count the message before it can possibly be reported: another
         * thread may serve its report as soon as producev() returns. */
        if ((r = ref_message(t)))
                return r;
        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         headers, &t->target, 0, timeout_ms, &err);
        if (produce_err)
                *produce_err = err;
        if (r)
                unref(t); /* not enqueued: no report */
        return r;
}

int kdc_tracker_track(kdc_tracker_t *t, rd_kafka_t *rk, void *opaque,
                      void **handlep) {
        int r;

        if (handlep)
                *handlep = NULL;
        if (!t || !rk || !handlep)
                return KDC_ERR_INVALID;
        if ((r = bind_producer(t, rk)))
                return r;
        return kdc__tracker_add(t, opaque, handlep);
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
        rd_kafka_t *bound;
        int64_t deadline;

        if (!t || !rk || timeout_ms < -1)
                return KDC_ERR_INVALID;
        bound = atomic_load_explicit(&t->rk, memory_order_acquire);
        if (bound && bound != rk)
                return KDC_ERR_INVALID;

        deadline = kdc__deadline(timeout_ms);
        for (;;) {
                if (pending_of(t) == 0)
                        break;
                if (kdc__now_ms() >= deadline) {
                        /* One last non-blocking serve before giving up. */
                        rd_kafka_poll(rk, 0);
                        if (pending_of(t) == 0)
                                break;
                        return KDC_ERR_TIMEOUT;
                }
                kdc__serve(rk, t, kdc__poll_slice(deadline));
        }
        return atomic_load_explicit(&t->failed, memory_order_relaxed)
                   ? KDC_ERR_DELIVERY
                   : 0;
}

int kdc_tracker_reset(kdc_tracker_t *t) {
        int r = 0;

        if (!t)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        if (pending_of(t)) {
                r = KDC_ERR_BUSY;
        } else {
                /* Zero the delivered part only: the references are not
                 * ours to set, a message produced on another thread since
                 * the check above holds one (its report will release it). */
                atomic_fetch_and_explicit(&t->state, (uint64_t)UINT32_MAX,
                                          memory_order_relaxed);
                t->delivered_base = 0;
                atomic_store_explicit(&t->failed, 0, memory_order_relaxed);
                atomic_store_explicit(&t->rk, NULL, memory_order_relaxed);
                t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
                free_failures(t);
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

int64_t kdc_tracker_pending(const kdc_tracker_t *t) {
        return t ? pending_of(t) : KDC_ERR_INVALID;
}

int64_t kdc_tracker_delivered(const kdc_tracker_t *ct) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct; /* the mutex and atomics */
        uint64_t d;

        if (!t)
                return KDC_ERR_INVALID;
        /* Under the lock: a fold moves counts from the word to the base. */
        pthread_mutex_lock(&t->lock);
        d = t->delivered_base +
            DELIVERED_OF(atomic_load_explicit(&t->state, memory_order_acquire));
        pthread_mutex_unlock(&t->lock);
        return (int64_t)d;
}

void kdc__tracker_set_fold_at(kdc_tracker_t *t, uint32_t fold_at) {
        t->fold_at = fold_at < 2 ? 2 : fold_at > FOLD_AT ? FOLD_AT : fold_at;
}

int64_t kdc_tracker_failed(const kdc_tracker_t *ct) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct; /* atomics only */

        return t ? (int64_t)atomic_load_explicit(&t->failed,
                                                 memory_order_acquire)
                 : KDC_ERR_INVALID;
}

const kdc_failure_t *kdc_tracker_failure(const kdc_tracker_t *ct, size_t i) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct; /* the mutex only */
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
        kdc_tracker_t *t = (kdc_tracker_t *)ct; /* the mutex only */
        rd_kafka_resp_err_t err;

        if (!t)
                return RD_KAFKA_RESP_ERR__INVALID_ARG;
        pthread_mutex_lock(&t->lock);
        err = t->first_error;
        pthread_mutex_unlock(&t->lock);
        return err;
}
