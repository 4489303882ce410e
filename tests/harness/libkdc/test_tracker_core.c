/* The DeliveryTracker's bookkeeping under concurrency, without librdkafka
 * clients: reports are synthesized and recorded through the same internal
 * entry point kdc_dr_msg_record() uses (kdc__tracker_record), so this test
 * starts no librdkafka thread and runs under ThreadSanitizer (the tsan
 * preset) with every thread known to it. Linked against the static
 * library, whose internal symbols are linkable. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <sched.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "internal.h"

/* A bounded queue of handles from the tracking threads to the "polling"
 * thread, standing in for librdkafka's delivery report queue. */
#define QCAP 1024

struct queue {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        void *items[QCAP];
        size_t head, len;
        int producers_left;
};

static void queue_push(struct queue *q, void *h) {
        pthread_mutex_lock(&q->lock);
        while (q->len == QCAP)
                pthread_cond_wait(&q->cond, &q->lock);
        q->items[(q->head + q->len++) % QCAP] = h;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
}

/* NULL when every producer finished and the queue is empty. */
static void *queue_pop(struct queue *q) {
        void *h = NULL;

        pthread_mutex_lock(&q->lock);
        while (q->len == 0 && q->producers_left > 0)
                pthread_cond_wait(&q->cond, &q->lock);
        if (q->len) {
                h = q->items[q->head];
                q->head = (q->head + 1) % QCAP;
                q->len--;
                pthread_cond_broadcast(&q->cond);
        }
        pthread_mutex_unlock(&q->lock);
        return h;
}

static void queue_producer_done(struct queue *q) {
        pthread_mutex_lock(&q->lock);
        q->producers_left--;
        pthread_cond_broadcast(&q->cond);
        pthread_mutex_unlock(&q->lock);
}

enum { THREADS = 4, PER_THREAD = 5000 };

/* Per-message context owned by the "service". */
struct msg {
        int index;
        atomic_int reports;
};

static struct msg msgs[THREADS * PER_THREAD];

struct tracking {
        kdc_tracker_t *t;
        struct queue *q;
        int first;
};

static void *track_thread(void *arg) {
        struct tracking *w = arg;

        for (int i = w->first; i < w->first + PER_THREAD; i++) {
                void *h;

                assert_int_equal(kdc__tracker_add(w->t, &msgs[i], &h), 0);
                queue_push(w->q, h);
        }
        queue_producer_done(w->q);
        return NULL;
}

struct polling {
        struct queue *q;
        int recorded;
};

static void *record_thread(void *arg) {
        struct polling *p = arg;
        void *h;

        while ((h = queue_pop(p->q))) {
                struct kdc__report r = {0};
                struct msg *m;

                r.topic = "t";
                r.err = RD_KAFKA_RESP_ERR_NO_ERROR;
                r.status = RD_KAFKA_MSG_STATUS_PERSISTED;
                /* Recording frees the handle and hands back the service's
                 * opaque, as kdc_dr_msg_record() does. */
                m = kdc__tracker_record(h, &r);
                assert_non_null(m);
                atomic_fetch_add(&m->reports, 1);
                p->recorded++;
        }
        return NULL;
}

static void reports_recorded_on_one_thread_while_four_threads_track_are_each_counted_once(
    void **state) {
        pthread_t trackers[THREADS], poller;
        struct tracking w[THREADS];
        struct polling p;
        struct queue q;
        kdc_tracker_t *t;

        (void)state;
        memset(&q, 0, sizeof(q));
        pthread_mutex_init(&q.lock, NULL);
        pthread_cond_init(&q.cond, NULL);
        q.producers_left = THREADS;
        p.q = &q;
        p.recorded = 0;
        for (int i = 0; i < THREADS * PER_THREAD; i++) {
                msgs[i].index = i;
                atomic_init(&msgs[i].reports, 0);
        }
        assert_int_equal(kdc_tracker_new(&t), 0);

        assert_int_equal(pthread_create(&poller, NULL, record_thread, &p), 0);
        for (int i = 0; i < THREADS; i++) {
                w[i] = (struct tracking){t, &q, i * PER_THREAD};
                assert_int_equal(
                    pthread_create(&trackers[i], NULL, track_thread, &w[i]),
                    0);
        }
        for (int i = 0; i < THREADS; i++)
                pthread_join(trackers[i], NULL);
        pthread_join(poller, NULL);

        assert_int_equal(p.recorded, THREADS * PER_THREAD);
        assert_int_equal(kdc_tracker_pending(t), 0);
        assert_int_equal(kdc_tracker_delivered(t), THREADS * PER_THREAD);
        assert_int_equal(kdc_tracker_failed(t), 0);
        for (int i = 0; i < THREADS * PER_THREAD; i++)
                assert_int_equal(atomic_load(&msgs[i].reports), 1);
        /* Handles went back to the pool they came from: at most QCAP in
         * flight at a time, so a couple of 1024-handle chunks per pool
         * (the owner's, the shared one), not one per 1024 messages. */
        assert_true(kdc__tracker_handle_chunks(t) <= 5);

        kdc_tracker_destroy(t);
        pthread_mutex_destroy(&q.lock);
        pthread_cond_destroy(&q.cond);
}

/* A reader of counts and failure records racing with the recording
 * thread; it stops once it has seen every failure. */
struct reader {
        kdc_tracker_t *t;
        int64_t until;
        long reads;
};

static void *read_thread(void *arg) {
        struct reader *r = arg;
        int64_t failed;

        do {
                failed = kdc_tracker_failed(r->t);
                for (int64_t i = 0; i < failed; i++) {
                        const kdc_failure_t *f =
                            kdc_tracker_failure(r->t, (size_t)i);

                        assert_non_null(f);
                        assert_string_equal(f->topic, "orders");
                        assert_int_equal(f->key_len, 3);
                        assert_memory_equal(f->key, "key", 3);
                }
                r->reads++;
        } while (failed < r->until);
        return NULL;
}

static void failure_records_read_while_reports_arrive_are_complete(
    void **state) {
        enum { N = 3000 };
        struct reader rd;
        pthread_t reader;
        kdc_tracker_t *t;
        void *h;

        (void)state;
        assert_int_equal(kdc_tracker_new(&t), 0);
        rd = (struct reader){t, N / 2, 0};
        assert_int_equal(pthread_create(&reader, NULL, read_thread, &rd), 0);
        for (int i = 0; i < N; i++) {
                struct kdc__report r = {0};

                assert_int_equal(kdc__tracker_add(t, NULL, &h), 0);
                r.topic = "orders";
                r.partition = i % 3;
                r.key = "key";
                r.key_len = 3;
                r.err = i % 2 ? RD_KAFKA_RESP_ERR__MSG_TIMED_OUT
                              : RD_KAFKA_RESP_ERR_NO_ERROR;
                r.status = i % 2 ? RD_KAFKA_MSG_STATUS_NOT_PERSISTED
                                 : RD_KAFKA_MSG_STATUS_PERSISTED;
                kdc__tracker_record(h, &r);
        }
        pthread_join(reader, NULL);

        assert_int_equal(kdc_tracker_delivered(t), N / 2);
        assert_int_equal(kdc_tracker_failed(t), N / 2);
        assert_non_null(kdc_tracker_failure(t, N / 2 - 1));
        assert_null(kdc_tracker_failure(t, N / 2));
        assert_true(rd.reads > 0);
        kdc_tracker_destroy(t);
}

static void only_no_error_with_status_persisted_is_a_confirmation(
    void **state) {
        static const struct {
                rd_kafka_resp_err_t err;
                rd_kafka_msg_status_t status;
                int confirmed;
        } cases[] = {
            {RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_MSG_STATUS_PERSISTED, 1},
            {RD_KAFKA_RESP_ERR_NO_ERROR,
             RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED, 0},
            {RD_KAFKA_RESP_ERR_NO_ERROR, RD_KAFKA_MSG_STATUS_NOT_PERSISTED, 0},
            {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
             RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED, 0},
            /* an error wins even over a PERSISTED status */
            {RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_MSG_STATUS_PERSISTED,
             0},
        };
        kdc_tracker_t *t;

        (void)state;
        for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
                struct kdc__report r = {0};
                void *h;

                assert_int_equal(kdc_tracker_new(&t), 0);
                assert_int_equal(kdc__tracker_add(t, NULL, &h), 0);
                r.err = cases[i].err;
                r.status = cases[i].status;
                kdc__tracker_record(h, &r);
                assert_int_equal(kdc_tracker_delivered(t), cases[i].confirmed);
                assert_int_equal(kdc_tracker_failed(t), !cases[i].confirmed);
                if (!cases[i].confirmed) {
                        assert_int_equal(kdc_tracker_failure(t, 0)->status,
                                         cases[i].status);
                        assert_null(kdc_tracker_failure(t, 0)->topic);
                }
                kdc_tracker_destroy(t);
        }
}

/* The thread that owns the tracker's sent count (the first to track) also
 * records reports, its own and those of handles another thread tracked:
 * each handle goes back to its own pool, so neither pool grows with the
 * number of messages. */
static void *track_into_queue(void *arg) {
        struct tracking *w = arg;

        for (int i = 0; i < PER_THREAD * THREADS; i++) {
                void *h;

                assert_int_equal(kdc__tracker_add(w->t, NULL, &h), 0);
                queue_push(w->q, h);
        }
        queue_producer_done(w->q);
        return NULL;
}

static void handles_go_back_to_their_own_pool_whoever_records_them(
    void **state) {
        struct kdc__report r = {0};
        struct tracking w;
        struct queue q;
        pthread_t other;
        kdc_tracker_t *t;
        void *h;
        int recorded = 0;

        (void)state;
        r.status = RD_KAFKA_MSG_STATUS_PERSISTED;
        memset(&q, 0, sizeof(q));
        pthread_mutex_init(&q.lock, NULL);
        pthread_cond_init(&q.cond, NULL);
        q.producers_left = 1;
        assert_int_equal(kdc_tracker_new(&t), 0);
        /* this thread tracks first: it owns the sent count */
        assert_int_equal(kdc__tracker_add(t, NULL, &h), 0);
        kdc__tracker_record(h, &r);
        w = (struct tracking){t, &q, 0};
        assert_int_equal(pthread_create(&other, NULL, track_into_queue, &w),
                         0);
        while ((h = queue_pop(&q))) {
                void *mine;

                kdc__tracker_record(h, &r); /* the other thread's handle */
                assert_int_equal(kdc__tracker_add(t, NULL, &mine), 0);
                kdc__tracker_record(mine, &r);
                recorded++;
        }
        pthread_join(other, NULL);

        assert_int_equal(recorded, PER_THREAD * THREADS);
        assert_int_equal(kdc_tracker_pending(t), 0);
        assert_int_equal(kdc_tracker_delivered(t), 2 * recorded + 1);
        /* QCAP (1024) in flight at most: one or two chunks for the other
         * thread's pool, one for this thread's; ~20 if the other thread's
         * handles went to this thread's pool. */
        assert_true(kdc__tracker_handle_chunks(t) <= 3);
        kdc_tracker_destroy(t);
        pthread_mutex_destroy(&q.lock);
        pthread_cond_destroy(&q.cond);
}

/* Reports of kdc_tracker_produce() messages (no handle) counted on two
 * threads while a third reads the counts: one thread owns each count (plain
 * adds), the other adds to its shared part. The delivered count must never
 * go back, the pending count never drop below what is really pending (a
 * report is read before the produce it follows), and both end exact. */
enum { COUNT_REPORTS = 20000 };

struct counting {
        kdc_tracker_t *t;
        atomic_int *done;
};

static void *confirm_thread(void *arg) {
        struct counting *f = arg;

        for (int i = 0; i < COUNT_REPORTS; i++) {
                assert_int_equal(kdc__tracker_add(f->t, NULL, NULL), 0);
                kdc__tracker_confirmed(f->t);
        }
        atomic_fetch_add(f->done, 1);
        return NULL;
}

static void *monotonic_reader(void *arg) {
        struct counting *f = arg;
        int64_t last = 0, now, pending;

        while (atomic_load(f->done) < 2) {
                pending = kdc_tracker_pending(f->t);
                /* never negative: a report is read before its produce
                 * (sends between the two reads can only add to it) */
                assert_true(pending >= 0);
                now = kdc_tracker_delivered(f->t);
                assert_true(now >= last);
                assert_true(now <= 2 * COUNT_REPORTS);
                last = now;
        }
        return NULL;
}

static void counts_added_on_two_threads_never_go_back_and_end_exact(
    void **state) {
        pthread_t a, b, reader;
        atomic_int done;
        struct counting f;
        kdc_tracker_t *t;

        (void)state;
        atomic_init(&done, 0);
        assert_int_equal(kdc_tracker_new(&t), 0);
        f = (struct counting){t, &done};
        assert_int_equal(pthread_create(&reader, NULL, monotonic_reader, &f),
                         0);
        assert_int_equal(pthread_create(&a, NULL, confirm_thread, &f), 0);
        assert_int_equal(pthread_create(&b, NULL, confirm_thread, &f), 0);
        pthread_join(a, NULL);
        pthread_join(b, NULL);
        pthread_join(reader, NULL);

        assert_int_equal(kdc_tracker_delivered(t), 2 * COUNT_REPORTS);
        assert_int_equal(kdc_tracker_pending(t), 0);
        assert_int_equal(kdc_tracker_failed(t), 0);
        /* reset starts the delivered count again from 0 */
        assert_int_equal(kdc_tracker_reset(t), 0);
        assert_int_equal(kdc_tracker_delivered(t), 0);
        assert_int_equal(kdc__tracker_add(t, NULL, NULL), 0);
        kdc__tracker_confirmed(t);
        assert_int_equal(kdc_tracker_delivered(t), 1);
        kdc_tracker_destroy(t);
}

struct late {
        kdc_tracker_t *t;
        void *handles[100];
};

static void *late_reports(void *arg) {
        struct late *l = arg;

        for (int i = 0; i < 100; i++) {
                struct kdc__report r = {0};

                r.status = RD_KAFKA_MSG_STATUS_PERSISTED;
                kdc__tracker_record(l->handles[i], &r);
        }
        return NULL;
}

static void a_tracker_released_with_reports_pending_is_freed_after_the_last_one(
    void **state) {
        kdc_tracker_t *other;
        pthread_t thread;
        struct late l;
        size_t before = kdc__tracker_released_pending();

        (void)state;
        assert_int_equal(kdc_tracker_new(&l.t), 0);
        for (int i = 0; i < 100; i++)
                assert_int_equal(kdc__tracker_add(l.t, NULL, &l.handles[i]),
                                 0);
        assert_int_equal(pthread_create(&thread, NULL, late_reports, &l), 0);
        /* Released while reports arrive on another thread: it is freed now
         * if they are all in, else kept for a later sweep (ThreadSanitizer
         * checks the reports and the free do not race). */
        kdc_tracker_destroy(l.t);
        pthread_join(thread, NULL);
        assert_true(kdc__tracker_released_pending() <= before + 1);
        /* Every report is in: the next new() frees it (ASan: exactly once). */
        assert_int_equal(kdc_tracker_new(&other), 0);
        assert_int_equal(kdc__tracker_released_pending(), before);
        kdc_tracker_destroy(other);
}

/* A tracker released with a report that never comes (its producer was
 * destroyed unflushed) is kept, not freed under a report, and does not keep
 * others from being freed. */
static void a_released_tracker_is_kept_while_a_report_is_missing(
    void **state) {
        kdc_tracker_t *stuck, *done, *other;
        void *h;
        size_t before = kdc__tracker_released_pending();

        (void)state;
        assert_int_equal(kdc_tracker_new(&stuck), 0);
        assert_int_equal(kdc_tracker_new(&done), 0);
        assert_int_equal(kdc__tracker_add(stuck, NULL, NULL), 0);
        assert_int_equal(kdc__tracker_add(done, NULL, &h), 0);
        kdc_tracker_destroy(stuck);
        kdc_tracker_destroy(done);
        assert_int_equal(kdc__tracker_released_pending(), before + 2);
        {
                struct kdc__report r = {0};

                r.status = RD_KAFKA_MSG_STATUS_PERSISTED;
                kdc__tracker_record(h, &r);
        }
        assert_int_equal(kdc_tracker_new(&other), 0);
        assert_int_equal(kdc__tracker_released_pending(), before + 1);
        kdc_tracker_destroy(other);
        /* the missing report, late: counted, then swept */
        kdc__tracker_confirmed(stuck);
        assert_int_equal(kdc_tracker_new(&other), 0);
        assert_int_equal(kdc__tracker_released_pending(), before);
        kdc_tracker_destroy(other);
}

/* kdc_tracker_reset() racing a thread that keeps producing through the
 * tracker: a reset may land before a message (it is then counted into the
 * new batch) or be refused while one is pending, but it must never drop a
 * message that is in flight: its report would then release a reference the
 * tracker does not have and free it under the application. */
enum { RESET_RACE_MESSAGES = 200000 };

struct resetting {
        kdc_tracker_t *t;
        atomic_int done;
        int lost; /* messages no longer pending before their report */
};

static void *produce_one_at_a_time(void *arg) {
        struct resetting *s = arg;

        for (int i = 0; i < RESET_RACE_MESSAGES; i++) {
                assert_int_equal(kdc__tracker_add(s->t, NULL, NULL), 0);
                if (kdc_tracker_pending(s->t) != 1) {
                        /* Its reference is gone: reporting it would free
                         * the tracker. */
                        s->lost++;
                        break;
                }
                kdc__tracker_confirmed(s->t);
        }
        atomic_store(&s->done, 1);
        return NULL;
}

static void a_reset_racing_a_produce_never_drops_the_message_in_flight(
    void **state) {
        struct resetting s;
        pthread_t producer;

        (void)state;
        assert_int_equal(kdc_tracker_new(&s.t), 0);
        atomic_init(&s.done, 0);
        s.lost = 0;
        assert_int_equal(
            pthread_create(&producer, NULL, produce_one_at_a_time, &s), 0);
        while (!atomic_load(&s.done)) {
                int r = kdc_tracker_reset(s.t);

                assert_true(r == 0 || r == KDC_ERR_BUSY);
        }
        pthread_join(producer, NULL);

        assert_int_equal(s.lost, 0);
        assert_int_equal(kdc_tracker_pending(s.t), 0);
        assert_true(kdc_tracker_delivered(s.t) <= RESET_RACE_MESSAGES);
        kdc_tracker_destroy(s.t);
}

/* fork() while another thread is inside kdc_tracker_new() or
 * kdc_tracker_destroy(): they take the process-wide lock of the released
 * trackers, and a child forked while it was held must still be able to
 * create a tracker (pre-fork servers create theirs in each worker). The
 * other thread releases trackers with a message pending one after the
 * other: each destroy sweeps a long list and allocates nothing, so the lock
 * is held nearly all the time, and fork() (which waits for malloc's locks)
 * cannot slip in between. */
enum { FORK_LISTED = 2000, FORK_CHURNED = 4000, FORKS = 20 };

struct churning {
        kdc_tracker_t **trackers;
        atomic_int stop;
        int destroyed;
};

/* Runs until stopped, also once it has none left to release: a thread
 * that finished unjoined before a fork is a leak to ThreadSanitizer in the
 * child. */
static void *destroy_until_stopped(void *arg) {
        struct churning *c = arg;

        while (!atomic_load(&c->stop)) {
                if (c->destroyed < FORK_CHURNED)
                        kdc_tracker_destroy(c->trackers[c->destroyed++]);
                else
                        sched_yield();
        }
        return NULL;
}

static void a_child_forked_during_a_sweep_can_create_a_tracker(
    void **state) {
        static kdc_tracker_t *stuck[FORK_LISTED + FORK_CHURNED];
        size_t before = kdc__tracker_released_pending();
        struct churning c;
        pthread_t churn;
        kdc_tracker_t *t;
        int hung = 0;

        (void)state;
        for (int i = 0; i < FORK_LISTED + FORK_CHURNED; i++) {
                assert_int_equal(kdc_tracker_new(&stuck[i]), 0);
                assert_int_equal(kdc__tracker_add(stuck[i], NULL, NULL), 0);
        }
        for (int i = 0; i < FORK_LISTED; i++)
                kdc_tracker_destroy(stuck[i]); /* released: one pending */
        c.trackers = stuck + FORK_LISTED;
        atomic_init(&c.stop, 0);
        c.destroyed = 0;
        assert_int_equal(
            pthread_create(&churn, NULL, destroy_until_stopped, &c), 0);
        for (int i = 0; i < FORKS && !hung; i++) {
                pid_t pid = fork();
                int status;

                assert_true(pid >= 0);
                if (pid == 0) {
                        alarm(2); /* a hang ends here, killed by SIGALRM */
                        if (kdc_tracker_new(&t) != 0)
                                _exit(3);
                        kdc_tracker_destroy(t);
                        _exit(0);
                }
                assert_int_equal(waitpid(pid, &status, 0), pid);
                if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        hung = i + 1;
        }
        atomic_store(&c.stop, 1);
        pthread_join(churn, NULL);
        assert_int_equal(hung, 0);

        /* Their reports, late: all freed by the next sweep. */
        for (int i = FORK_LISTED + c.destroyed;
             i < FORK_LISTED + FORK_CHURNED; i++)
                kdc_tracker_destroy(stuck[i]);
        for (int i = 0; i < FORK_LISTED + FORK_CHURNED; i++)
                kdc__tracker_confirmed(stuck[i]);
        assert_int_equal(kdc_tracker_new(&t), 0);
        kdc_tracker_destroy(t);
        assert_int_equal(kdc__tracker_released_pending(), before);
}

#define SENTENCE(text, fn) {text, fn, NULL, NULL, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("reports recorded on one thread while four threads track "
                     "are each counted once, with their own opaque",
                     reports_recorded_on_one_thread_while_four_threads_track_are_each_counted_once),
            SENTENCE("failure records read while reports arrive are complete",
                     failure_records_read_while_reports_arrive_are_complete),
            SENTENCE("only NO_ERROR with status PERSISTED is a confirmation",
                     only_no_error_with_status_persisted_is_a_confirmation),
            SENTENCE("handles go back to their own pool, whoever records "
                     "them",
                     handles_go_back_to_their_own_pool_whoever_records_them),
            SENTENCE("counts added on two threads never go back and end "
                     "exact",
                     counts_added_on_two_threads_never_go_back_and_end_exact),
            SENTENCE("a tracker released with reports pending is freed after "
                     "the last one",
                     a_tracker_released_with_reports_pending_is_freed_after_the_last_one),
            SENTENCE("a released tracker is kept while a report is missing",
                     a_released_tracker_is_kept_while_a_report_is_missing),
            SENTENCE("a reset racing a produce on another thread never drops "
                     "the message in flight",
                     a_reset_racing_a_produce_never_drops_the_message_in_flight),
            SENTENCE("a child forked while another thread sweeps the released "
                     "trackers can create a tracker",
                     a_child_forked_during_a_sweep_can_create_a_tracker),
        };

        return cmocka_run_group_tests_name("DeliveryTracker core (threads)",
                                           tests, NULL, NULL);
}
