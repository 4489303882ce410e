/* DeliveryTracker: counts per-message delivery reports of a producer and
 * lists the messages it could not confirm. */
#include <pthread.h>
#include <stdarg.h>
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

/* Handles come from chunks owned by the tracker and are recycled through
 * free lists, so a tracked message costs no malloc() and 24 bytes, and the
 * tracker's memory follows the peak number of messages in flight. A handle
 * goes back to the list it came from (its pool):
 *   POOL_OWNER   taken by the thread that owns the sent count (see struct
 *                count), without a lock: from own_handles, which only that
 *                thread touches; a report served on another thread gives it
 *                back through `returned`, which the owner empties at once
 *                when own_handles runs dry;
 *   POOL_SHARED  taken by any other thread, under the lock (free_handles).
 * So a service that tracks on one thread and serves reports on one thread
 * (the same or another) takes no lock per message, and no list grows with
 * messages another thread keeps taking. */
#define HANDLES_PER_CHUNK 1024
enum { POOL_SHARED = 0, POOL_OWNER = 1 };

struct handle_chunk {
        struct handle_chunk *next;
        struct kdc__track handles[HANDLES_PER_CHUNK];
};

/* The tracker's counts only ever grow, and each is 64 bits (no wrap): a
 * message is pending from the time it is counted as sent until it is
 * counted as delivered or settled (failed, or withdrawn because it was never
 * enqueued), so pending = sent - (delivered + settled).
 *
 * A count is kept in two parts so that the common case costs no atomic
 * read-modify-write (each is ~6 ns here, more than everything else the
 * tracker adds to a produce): the first thread to add to a count becomes its
 * owner and adds with a plain load and store; every other thread adds to the
 * shared part with an atomic increment. A service that produces on one
 * thread and serves reports on one thread (the same or another) pays no
 * atomic operation per message.
 *
 * Readers (the pending count) load delivered and settled before sent, each
 * with acquire: a report is counted only after its message was (the report
 * comes after rd_kafka_produceva() returned), so whatever report a reader
 * sees, it also sees its message; pending is never under-estimated. */
struct count {
        _Atomic uint64_t owner; /* the owning thread's id; 0: none yet */
        _Atomic uint64_t own;   /* added to by the owner only */
        _Atomic uint64_t shared;
} __attribute__((aligned(64))); /* producer and report threads: own lines */

/* Each thread's id for count ownership, 1, 2, ...; 0 until first used.
 * Never reused, so a count owned by a thread that exited stays its. */
static __thread uint64_t thread_id __attribute__((tls_model("initial-exec")));
static _Atomic uint64_t thread_ids;

static inline uint64_t self_id(void) {
        uint64_t id = thread_id;

        if (__builtin_expect(id == 0, 0))
                id = thread_id = atomic_fetch_add_explicit(
                                     &thread_ids, 1, memory_order_relaxed) +
                                 1;
        return id;
}

/* Whether the calling thread (id me) owns c; an unowned count becomes its. */
static inline int count_owned(struct count *c, uint64_t me) {
        uint64_t owner = atomic_load_explicit(&c->owner, memory_order_relaxed);

        if (__builtin_expect(owner == 0, 0) &&
            atomic_compare_exchange_strong_explicit(&c->owner, &owner, me,
                                                    memory_order_relaxed,
                                                    memory_order_relaxed))
                return 1;
        return owner == me;
}

/* Add one; owned: the calling thread owns c (count_owned()). */
static inline void count_add_as(struct count *c, int owned) {
        if (owned)
                atomic_store_explicit(
                    &c->own,
                    atomic_load_explicit(&c->own, memory_order_relaxed) + 1,
                    memory_order_release);
        else
                atomic_fetch_add_explicit(&c->shared, 1, memory_order_release);
}

static inline void count_add(struct count *c) {
        count_add_as(c, count_owned(c, self_id()));
}

static inline uint64_t count_read(const struct count *c) {
        return atomic_load_explicit(&c->own, memory_order_acquire) +
               atomic_load_explicit(&c->shared, memory_order_acquire);
}

struct kdc_tracker_s {
        struct kdc__dr_target target; /* first: the per-message opaque */
        struct count sent;            /* counted by produce/track */
        struct count delivered;       /* confirmed reports */
        _Atomic uint64_t settled;     /* failed reports + withdrawn messages */
        _Atomic uint64_t withdrawn;   /* never enqueued (kdc__tracker_sub) */
        kdc_stats_t *stats;           /* failures counted into; under lock */
        _Atomic uint64_t delivered_base; /* delivered at the last reset */
        atomic_int_fast64_t failed;   /* since the last reset; under lock */
        _Atomic(rd_kafka_t *) rk;     /* bound producer, NULL if none */
        pthread_mutex_t lock; /* binding, handles, failures, first_error */
        struct handle_chunk *chunks;      /* under lock */
        struct kdc__track *free_handles;  /* POOL_SHARED, under lock */
        struct kdc__track *own_handles;   /* POOL_OWNER: the owner only */
        _Atomic(struct kdc__track *) returned; /* POOL_OWNER, given back */
        rd_kafka_resp_err_t first_error;
        /* Failure records: an array of pointers, so a record never moves
         * when the array grows. */
        kdc_failure_t **failures;
        size_t nfailures, cfailures;
        kdc_tracker_t *next_released; /* on the released list */
};

/* Messages in flight; *deliveredp (if not NULL) receives the delivered
 * count this answer was computed from. */
static int64_t pending_read(const kdc_tracker_t *t, uint64_t *deliveredp) {
        uint64_t delivered = count_read(&t->delivered);
        uint64_t done = delivered + atomic_load_explicit(&t->settled,
                                                         memory_order_acquire);

        if (deliveredp)
                *deliveredp = delivered;
        return (int64_t)(count_read(&t->sent) - done);
}

static int64_t pending_of(const kdc_tracker_t *t) {
        return pending_read(t, NULL);
}

/* Trackers the application destroyed while messages were still pending.
 * Their reports keep arriving and are counted as usual (the report path
 * does not know, and must not pay for knowing); each is freed once nothing
 * is pending, by the next kdc_tracker_new() or kdc_tracker_destroy(), which
 * look here first. Adding to a count is the last thing a report does with
 * a tracker, so a tracker with nothing pending is no longer touched by any
 * thread. */
static pthread_mutex_t released_lock = PTHREAD_MUTEX_INITIALIZER;
static kdc_tracker_t *released;
static size_t nreleased;

/* released_lock is process-wide and kdc_tracker_new() takes it: a child
 * forked while another thread held it (sweeping) would hang in its first
 * kdc_tracker_new(). fork() takes it first, so the child gets it unlocked
 * and the list whole. Registered before the lock is first taken. */
static pthread_once_t released_atfork_once = PTHREAD_ONCE_INIT;

static void released_lock_for_fork(void) {
        pthread_mutex_lock(&released_lock);
}

static void released_unlock_after_fork(void) {
        pthread_mutex_unlock(&released_lock);
}

static void released_atfork(void) {
        (void)pthread_atfork(released_lock_for_fork,
                             released_unlock_after_fork,
                             released_unlock_after_fork);
}

static void released_lock_take(void) {
        pthread_once(&released_atfork_once, released_atfork);
        pthread_mutex_lock(&released_lock);
}

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

/* A new chunk's handles pushed onto *list; t->lock held. 0 or
 * KDC_ERR_NOMEM. */
static int chunk_new(kdc_tracker_t *t, struct kdc__track **list) {
        struct handle_chunk *c = malloc(sizeof(*c));

        if (!c)
                return KDC_ERR_NOMEM;
        c->next = t->chunks;
        t->chunks = c;
        for (size_t i = HANDLES_PER_CHUNK; i-- > 0;) {
                c->handles[i].target.magic = 0;
                c->handles[i].u.next = *list;
                *list = &c->handles[i];
        }
        return 0;
}

/* A free handle for the thread that owns the sent count, from its own list,
 * then from those given back by other threads, then from a new chunk. */
static struct kdc__track *handle_take_owned(kdc_tracker_t *t) {
        struct kdc__track *h = t->own_handles;

        if (!h) {
                h = atomic_exchange_explicit(&t->returned, NULL,
                                             memory_order_acquire);
                if (!h) {
                        pthread_mutex_lock(&t->lock);
                        (void)chunk_new(t, &h);
                        pthread_mutex_unlock(&t->lock);
                        if (!h)
                                return NULL;
                }
        }
        t->own_handles = h->u.next;
        h->target.flags = POOL_OWNER;
        return h;
}

/* A free handle for any other thread. */
static struct kdc__track *handle_take_shared(kdc_tracker_t *t) {
        struct kdc__track *h;

        pthread_mutex_lock(&t->lock);
        if (!t->free_handles)
                (void)chunk_new(t, &t->free_handles);
        h = t->free_handles;
        if (h)
                t->free_handles = h->u.next;
        pthread_mutex_unlock(&t->lock);
        if (h)
                h->target.flags = POOL_SHARED;
        return h;
}

/* A handle back to its pool: no longer a libkdc record. */
static void handle_give_back(kdc_tracker_t *t, struct kdc__track *h) {
        h->target.magic = 0;
        if (h->target.flags == POOL_SHARED) {
                pthread_mutex_lock(&t->lock);
                h->u.next = t->free_handles;
                t->free_handles = h;
                pthread_mutex_unlock(&t->lock);
        } else if (atomic_load_explicit(&t->sent.owner, memory_order_relaxed) ==
                   self_id()) {
                h->u.next = t->own_handles;
                t->own_handles = h;
        } else {
                struct kdc__track *head = atomic_load_explicit(
                    &t->returned, memory_order_relaxed);

                do
                        h->u.next = head;
                while (!atomic_compare_exchange_weak_explicit(
                    &t->returned, &head, h, memory_order_release,
                    memory_order_relaxed));
        }
}

/* A message is no longer pending: failed, or withdrawn. The last access
 * to the tracker on this path (see `released`). */
static void settle(kdc_tracker_t *t) {
        atomic_fetch_add_explicit(&t->settled, 1, memory_order_release);
}

/* Count a failed report, with err, and list its record f (NULL: out of
 * memory, counted only). Returns f if it could not be listed. */
static kdc_failure_t *failure_note(kdc_tracker_t *t, rd_kafka_resp_err_t err,
                                   kdc_failure_t *f) {
        pthread_mutex_lock(&t->lock);
        if (atomic_load_explicit(&t->failed, memory_order_relaxed) == 0)
                t->first_error = err;
        atomic_fetch_add_explicit(&t->failed, 1, memory_order_relaxed);
        /* Under the lock a failure takes anyway: no cost on confirmed
         * reports. A report without error but not persisted counts under
         * NO_ERROR (kdc/stats.h). */
        kdc__stats_add_err(t->stats, KDC__STAT_ERR_DELIVERY, err);
        if (f && t->nfailures == t->cfailures) {
                size_t c = t->cfailures ? t->cfailures * 2 : 8;
                kdc_failure_t **v = realloc(t->failures, c * sizeof(*v));

                if (v) {
                        t->failures = v;
                        t->cfailures = c;
                }
        }
        if (f && t->nfailures < t->cfailures) {
                t->failures[t->nfailures++] = f;
                f = NULL;
        }
        pthread_mutex_unlock(&t->lock);
        return f;
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

        if (h)
                handle_give_back(t, h);
        if (!confirmed)
                f = failure_note(t, r.err, f);
        free(f); /* only if it could not be listed (out of memory) */
        /* Last: a waiter that sees this message gone sees its outcome, and
         * a released tracker may be freed as soon as it is counted. */
        if (confirmed)
                count_add(&t->delivered);
        else
                settle(t);
        return r.opaque;
}

kdc_tracker_t *kdc__tracker_of(struct kdc__dr_target *target) {
        return target->kind == KDC__DR_TRACK ? ((struct kdc__track *)target)->t
                                              : (kdc_tracker_t *)target;
}

void kdc__tracker_confirmed(kdc_tracker_t *t) {
        count_add(&t->delivered);
}

int kdc__tracker_add(kdc_tracker_t *t, void *app_opaque, void **handlep) {
        int owned = count_owned(&t->sent, self_id());

        if (handlep) {
                struct kdc__track *h = owned ? handle_take_owned(t)
                                             : handle_take_shared(t);

                *handlep = h;
                if (!h)
                        return KDC_ERR_NOMEM;
                h->target.magic = KDC__DR_TARGET_MAGIC;
                h->target.kind = KDC__DR_TRACK;
                h->t = t;
                h->u.opaque = app_opaque;
        }
        count_add_as(&t->sent, owned);
        return 0;
}

void kdc__tracker_sub(kdc_tracker_t *t, void *handle) {
        if (handle)
                handle_give_back(t, handle);
        atomic_fetch_add_explicit(&t->withdrawn, 1, memory_order_relaxed);
        settle(t);
}

int kdc__tracker_set_stats(kdc_tracker_t *t, kdc_stats_t *s) {
        int r = 0;

        pthread_mutex_lock(&t->lock);
        if (t->stats && t->stats != s)
                r = KDC_ERR_INVALID;
        else
                t->stats = s;
        pthread_mutex_unlock(&t->lock);
        return r;
}

void kdc__tracker_counts(const kdc_tracker_t *t, uint64_t *produced,
                         uint64_t *delivered) {
        /* withdrawn before sent: a message is counted as sent before it
         * can be withdrawn, so produced is never negative */
        uint64_t withdrawn =
            atomic_load_explicit(&t->withdrawn, memory_order_acquire);

        *delivered = count_read(&t->delivered);
        *produced = count_read(&t->sent) - withdrawn;
}

/* Free the released trackers that have nothing pending any more. */
static void sweep_released(void) {
        kdc_tracker_t **p = &released;

        released_lock_take();
        while (*p) {
                kdc_tracker_t *t = *p;

                if (pending_of(t) == 0) {
                        *p = t->next_released;
                        nreleased--;
                        kdc__tracker_free(t);
                } else {
                        p = &t->next_released;
                }
        }
        pthread_mutex_unlock(&released_lock);
}

size_t kdc__tracker_released_pending(void) {
        size_t n;

        released_lock_take();
        n = nreleased;
        pthread_mutex_unlock(&released_lock);
        return n;
}

size_t kdc__tracker_handle_chunks(kdc_tracker_t *t) {
        size_t n = 0;

        pthread_mutex_lock(&t->lock);
        for (struct handle_chunk *c = t->chunks; c; c = c->next)
                n++;
        pthread_mutex_unlock(&t->lock);
        return n;
}

int kdc_tracker_new(kdc_tracker_t **trackerp) {
        kdc_tracker_t *t;

        if (!trackerp)
                return KDC_ERR_INVALID;
        *trackerp = NULL;
        sweep_released();
        /* aligned: the counts each have their own cache line */
        t = aligned_alloc(_Alignof(kdc_tracker_t), sizeof(*t));
        if (!t)
                return KDC_ERR_NOMEM;
        memset(t, 0, sizeof(*t));
        if (pthread_mutex_init(&t->lock, NULL) != 0) {
                free(t);
                return KDC_ERR_NOMEM;
        }
        t->target.magic = KDC__DR_TARGET_MAGIC;
        t->target.kind = KDC__DR_TRACKER;
        atomic_init(&t->sent.owner, 0);
        atomic_init(&t->sent.own, 0);
        atomic_init(&t->sent.shared, 0);
        atomic_init(&t->delivered.owner, 0);
        atomic_init(&t->delivered.own, 0);
        atomic_init(&t->delivered.shared, 0);
        atomic_init(&t->settled, 0);
        atomic_init(&t->delivered_base, 0);
        atomic_init(&t->failed, 0);
        atomic_init(&t->rk, NULL);
        atomic_init(&t->returned, NULL);
        t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
        *trackerp = t;
        return 0;
}

void kdc_tracker_destroy(kdc_tracker_t *t) {
        kdc_stats_t *stats;

        if (!t)
                return;
        pthread_mutex_lock(&t->lock);
        stats = t->stats;
        t->stats = NULL; /* reports still to come are not counted */
        pthread_mutex_unlock(&t->lock);
        if (stats)
                kdc__stats_tracker_gone(stats, t);
        sweep_released();
        if (pending_of(t) == 0) {
                kdc__tracker_free(t);
                return;
        }
        /* Reports still to come: freed by a later sweep. */
        released_lock_take();
        t->next_released = released;
        released = t;
        nreleased++;
        pthread_mutex_unlock(&released_lock);
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
        count_add(&t->sent);
        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         headers, &t->target, 0, timeout_ms, &err);
        if (produce_err)
                *produce_err = err;
        if (r)
                settle(t); /* not enqueued: no report */
        return r;
}

/* rd_kafka_vu_t entries kept on the stack by kdc_tracker_produceva() and
 * _producev(); more are allocated. */
#define VU_STACK 16

/* Check a produceva description: 1 if every vtype is one librdkafka 2.0.2
 * defines (END excluded) and a topic is named; *opaquep gets the last
 * RD_KAFKA_VTYPE_OPAQUE's value, *flagsp whether MSGFLAGS is given. */
static int vus_valid(const rd_kafka_vu_t *vus, size_t cnt, void **opaquep,
                     int *flagsp) {
        int dest = 0;

        *opaquep = NULL;
        *flagsp = 0;
        for (size_t i = 0; i < cnt; i++) {
                switch (vus[i].vtype) {
                case RD_KAFKA_VTYPE_TOPIC:
                case RD_KAFKA_VTYPE_RKT:
                        dest = 1;
                        break;
                case RD_KAFKA_VTYPE_OPAQUE:
                        *opaquep = vus[i].u.ptr;
                        break;
                case RD_KAFKA_VTYPE_MSGFLAGS:
                        *flagsp = 1;
                        break;
                case RD_KAFKA_VTYPE_PARTITION:
                case RD_KAFKA_VTYPE_VALUE:
                case RD_KAFKA_VTYPE_KEY:
                case RD_KAFKA_VTYPE_TIMESTAMP:
                case RD_KAFKA_VTYPE_HEADER:
                case RD_KAFKA_VTYPE_HEADERS:
                        break;
                default: /* END, or a vtype of a later librdkafka */
                        return 0;
                }
        }
        return dest;
}

int kdc_tracker_produceva(kdc_tracker_t *t, rd_kafka_t *rk, int timeout_ms,
                          rd_kafka_resp_err_t *produce_err,
                          const rd_kafka_vu_t *vus, size_t cnt) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        rd_kafka_vu_t stack[VU_STACK], *mine = stack;
        void *app, *handle = NULL;
        size_t n = 0;
        int flags, r;

        if (produce_err)
                *produce_err = err;
        if (!t || !rk || (!vus && cnt) || timeout_ms < -1 ||
            !vus_valid(vus, cnt, &app, &flags))
                return KDC_ERR_INVALID;
        if ((r = bind_producer(t, rk))) {
                if (produce_err && r == KDC_ERR_CONF)
                        *produce_err = RD_KAFKA_RESP_ERR__NOT_CONFIGURED;
                return r;
        }
        /* The copy: the entries but the opaque, the default flags, ours. */
        if (cnt + 2 > VU_STACK && !(mine = malloc((cnt + 2) * sizeof(*mine)))) {
                if (produce_err)
                        *produce_err = RD_KAFKA_RESP_ERR__FAIL;
                return KDC_ERR_NOMEM;
        }
        for (size_t i = 0; i < cnt; i++)
                if (vus[i].vtype != RD_KAFKA_VTYPE_OPAQUE)
                        mine[n++] = vus[i];
        if (!flags) {
                mine[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
                mine[n++].u.i = RD_KAFKA_MSG_F_COPY;
        }
        /* Counted before it can possibly be reported (see
         * kdc_tracker_produce()); a handle only for an opaque to keep. */
        if ((r = kdc__tracker_add(t, app, app ? &handle : NULL))) {
                if (produce_err)
                        *produce_err = RD_KAFKA_RESP_ERR__FAIL;
                goto out;
        }
        mine[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
        mine[n++].u.ptr = handle ? handle : (void *)&t->target;
        r = kdc__produceva(rk, mine, n, 0, timeout_ms, &err);
        if (produce_err)
                *produce_err = err;
        if (r)
                kdc__tracker_sub(t, handle); /* not enqueued: no report */
out:
        if (mine != stack)
                free(mine);
        return r;
}

/* Read one RD_KAFKA_V_* argument group into *vu; 0 at RD_KAFKA_V_END or a
 * vtype librdkafka 2.0.2 does not define (vu->vtype tells which). The
 * types read are those the RD_KAFKA_V_* macros pass. */
static int vu_next(va_list *ap, rd_kafka_vu_t *vu) {
        vu->vtype = (rd_kafka_vtype_t)va_arg(*ap, int);
        switch (vu->vtype) {
        case RD_KAFKA_VTYPE_TOPIC:
                vu->u.cstr = va_arg(*ap, const char *);
                return 1;
        case RD_KAFKA_VTYPE_RKT:
                vu->u.rkt = va_arg(*ap, rd_kafka_topic_t *);
                return 1;
        case RD_KAFKA_VTYPE_PARTITION:
                vu->u.i32 = va_arg(*ap, int32_t);
                return 1;
        case RD_KAFKA_VTYPE_VALUE:
        case RD_KAFKA_VTYPE_KEY:
                vu->u.mem.ptr = va_arg(*ap, void *);
                vu->u.mem.size = va_arg(*ap, size_t);
                return 1;
        case RD_KAFKA_VTYPE_OPAQUE:
                vu->u.ptr = va_arg(*ap, void *);
                return 1;
        case RD_KAFKA_VTYPE_MSGFLAGS:
                vu->u.i = va_arg(*ap, int);
                return 1;
        case RD_KAFKA_VTYPE_TIMESTAMP:
                vu->u.i64 = va_arg(*ap, int64_t);
                return 1;
        case RD_KAFKA_VTYPE_HEADER:
                vu->u.header.name = va_arg(*ap, const char *);
                vu->u.header.val = va_arg(*ap, const void *);
                vu->u.header.size = va_arg(*ap, ssize_t);
                return 1;
        case RD_KAFKA_VTYPE_HEADERS:
                vu->u.headers = va_arg(*ap, rd_kafka_headers_t *);
                return 1;
        default:
                return 0;
        }
}

int kdc_tracker_producev(kdc_tracker_t *t, rd_kafka_t *rk, int timeout_ms,
                         rd_kafka_resp_err_t *produce_err, ...) {
        rd_kafka_vu_t stack[VU_STACK], *vus = stack, vu;
        size_t cnt = 0;
        va_list ap;
        int r;

        /* First pass: count, so that any number of arguments fits. */
        va_start(ap, produce_err);
        while (vu_next(&ap, &vu))
                cnt++;
        va_end(ap);
        if (vu.vtype != RD_KAFKA_VTYPE_END) {
                if (produce_err)
                        *produce_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
                return KDC_ERR_INVALID; /* cannot read past it */
        }
        if (cnt > VU_STACK && !(vus = malloc(cnt * sizeof(*vus)))) {
                if (produce_err)
                        *produce_err = RD_KAFKA_RESP_ERR__FAIL;
                return KDC_ERR_NOMEM;
        }
        va_start(ap, produce_err);
        for (size_t i = 0; i < cnt; i++)
                (void)vu_next(&ap, &vus[i]);
        va_end(ap);
        r = kdc_tracker_produceva(t, rk, timeout_ms, produce_err, vus, cnt);
        if (vus != stack)
                free(vus);
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

/* Is p the start of one of t's handles? Found by address among t's chunks:
 * nothing p points to is read before it is known to be libkdc's memory. */
static int handle_of(kdc_tracker_t *t, const void *p) {
        uintptr_t a = (uintptr_t)p;
        int found = 0;

        pthread_mutex_lock(&t->lock);
        for (struct handle_chunk *c = t->chunks; c && !found; c = c->next) {
                uintptr_t lo = (uintptr_t)c->handles;
                uintptr_t hi = (uintptr_t)(c->handles + HANDLES_PER_CHUNK);

                found =
                    a >= lo && a < hi && (a - lo) % sizeof(c->handles[0]) == 0;
        }
        pthread_mutex_unlock(&t->lock);
        return found;
}

int kdc_tracker_untrack(kdc_tracker_t *t, void *handle) {
        struct kdc__track *h = handle;

        if (!t || !h || !handle_of(t, h) ||
            h->target.magic != KDC__DR_TARGET_MAGIC ||
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
        uint64_t delivered;
        int r = 0;

        if (!t)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        if (pending_read(t, &delivered)) {
                r = KDC_ERR_BUSY;
        } else {
                /* The counts themselves go on; the delivered count reads
                 * from the value nothing was pending against. A message
                 * sent and delivered on another thread since is counted in
                 * the new batch (read afresh here, it would be in neither:
                 * not in the batch checked, and under the new base). */
                atomic_store_explicit(&t->delivered_base, delivered,
                                      memory_order_release);
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

int64_t kdc_tracker_delivered(const kdc_tracker_t *t) {
        uint64_t base;

        if (!t)
                return KDC_ERR_INVALID;
        /* The base first: the count it was read from is then visible, so
         * the difference is never negative, even across a reset. */
        base = atomic_load_explicit(&t->delivered_base, memory_order_acquire);
        return (int64_t)(count_read(&t->delivered) - base);
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
