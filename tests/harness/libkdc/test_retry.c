#define _POSIX_C_SOURCE 200809L
/* Bounded retries (harness/libkdc/retry.c) against the librdkafka mock
 * cluster: a downstream failure is injected by the test (the "process" step
 * fails), and what matters is read back from the broker: the committed
 * offset (rd_kafka_committed()), the DLQ record, the group membership. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS MOCK_WAIT_MS

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* A transient policy with fixed numbers (no jitter: waits are exact). */
static void set_transient(kdc_retry_t *r, int attempts, int initial_ms,
                          int cap_ms, kdc_retry_exhausted_t exhausted) {
        kdc_retry_policy_t p;

        assert_int_equal(kdc_retry_get_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
        p.max_attempts = attempts;
        p.initial_ms = initial_ms;
        p.multiplier = 2.0;
        p.max_interval_ms = cap_ms;
        p.jitter = 0.0;
        p.on_exhausted = exhausted;
        p.dlq_timeout_ms = WAIT_MS;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
}

/* Poll `c` (serving its events) until a retry is due; fail the test if a
 * message of the paused partition `paused` arrives meanwhile. Returns the
 * message handed back and how long it took. */
static rd_kafka_message_t *wait_due(kdc_retry_t *r, rd_kafka_t *c,
                                    int32_t paused, uint64_t *epochp,
                                    int *max_poll_exceeded,
                                    int64_t *waited_ms) {
        int64_t start = now_ms();
        rd_kafka_message_t *m = NULL;

        while (kdc_retry_next(r, &m, epochp) == 0) {
                rd_kafka_message_t *polled =
                    rd_kafka_consumer_poll(c, kdc_retry_timeout(r, 100));

                assert_true(now_ms() - start < 3 * WAIT_MS);
                if (!polled)
                        continue;
                if (polled->err == RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED &&
                    max_poll_exceeded)
                        (*max_poll_exceeded)++;
                if (!polled->err)
                        assert_int_not_equal(polled->partition, paused);
                rd_kafka_message_destroy(polled);
        }
        if (waited_ms)
                *waited_ms = now_ms() - start;
        return m;
}

static const char *header(const rd_kafka_message_t *m, const char *name) {
        rd_kafka_headers_t *h = NULL;
        const void *v = NULL;
        size_t size;

        if (rd_kafka_message_headers(m, &h) ||
            rd_kafka_header_get_last(h, name, &v, &size))
                return NULL;
        return v;
}

/* deadline_ms: the second failure comes 300 ms after the first, and the next
 * wait (600 ms) would start the third attempt 900 ms after it, past the 700 ms
 * deadline: exhausted with 2 of the 10 attempts, nothing committed. */
static void no_attempt_starts_after_the_deadline(void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *m, *again;
        rd_kafka_t *producer, *c;
        kdc_retry_policy_t p;
        int64_t waited;
        kdc_retry_t *r;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-deadline", 1, topic);
        mock_env_fill(producer, topic, 1, 1);
        c = mock_env_consumer(env, "retry-deadline", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        set_transient(r, 10, 300, 1000, KDC_RETRY_EXHAUSTED_HALT);
        assert_int_equal(kdc_retry_get_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
        p.deadline_ms = 700;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_TRANSIENT, &p), 0);

        m = mock_env_next(c, 0);
        assert_int_equal(kdc_retry_failed(r, c, m, NULL, 0, KDC_CLASS_TRANSIENT,
                                          "downstream 503", NULL),
                         KDC_RETRY_WAIT);
        again = wait_due(r, c, 0, NULL, NULL, &waited);
        assert_ptr_equal(again, m);
        assert_true(waited >= 250);
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          NULL),
                         KDC_RETRY_HALT);
        assert_int_equal(kdc_retry_pending(r), 0);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(again);
        kdc_retry_destroy(r);
        mock_env_close(c);
        rd_kafka_destroy(producer);
}

static void a_retried_message_commits_only_after_its_retry_succeeds(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *m, *again, *next;
        rd_kafka_t *producer, *c;
        int64_t waited;
        kdc_retry_t *r;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-ok", 1, topic);
        mock_env_fill(producer, topic, 1, 3);
        c = mock_env_consumer(env, "retry-ok", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        set_transient(r, 5, 300, 1000, KDC_RETRY_EXHAUSTED_HALT);

        /* Offsets 0..2 are fetched; the first fails downstream. */
        m = mock_env_next(c, 0);
        assert_int_equal(m->offset, 0);
        assert_int_equal(kdc_retry_failed(r, c, m, NULL, 0, KDC_CLASS_TRANSIENT,
                                          "downstream 503", NULL),
                         KDC_RETRY_WAIT);
        assert_int_equal(kdc_retry_pending(r), 1);
        assert_int_equal(kdc_retry_attempts(r, m), 1);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        /* Paused: offsets 1 and 2 (already fetched) are not handed out while
         * offset 0 waits 300 ms; then the same message comes back. */
        again = wait_due(r, c, 0, NULL, NULL, &waited);
        assert_ptr_equal(again, m);
        assert_true(waited >= 250);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        /* The second attempt fails too: the wait doubles. */
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          NULL),
                         KDC_RETRY_WAIT);
        assert_int_equal(kdc_retry_attempts(r, again), 2);
        again = wait_due(r, c, 0, NULL, NULL, &waited);
        assert_ptr_equal(again, m);
        assert_int_equal(again->offset, 0);
        assert_true(waited >= 550);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        /* The third attempt succeeds: commit, then the partition resumes
         * with offset 1, in order. */
        assert_int_equal(kdc_commit_message(c, again, NULL, 0, NULL), 0);
        assert_int_equal(mock_env_committed(c, topic, 0), 1);
        assert_int_equal(kdc_retry_done(r, c, again), 0);
        assert_int_equal(kdc_retry_pending(r), 0);
        assert_int_equal(kdc_retry_done(r, c, again), KDC_ERR_NOENT);
        next = mock_env_next(c, 0);
        assert_int_equal(next->offset, 1);

        rd_kafka_message_destroy(next);
        rd_kafka_message_destroy(again);
        kdc_retry_destroy(r);
        mock_env_close(c);
        rd_kafka_destroy(producer);
}

static void a_batch_resumes_right_after_its_retried_message(void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *batch[3], *again, *next;
        rd_kafka_t *producer, *c;
        kdc_retry_t *r;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-batch", 1, topic);
        mock_env_fill(producer, topic, 1, 4);
        c = mock_env_consumer(env, "retry-batch", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        set_transient(r, 3, 100, 100, KDC_RETRY_EXHAUSTED_HALT);

        /* A batch of offsets 0..2 is polled; 0 fails, so the service drops
         * 1 and 2 (uncommitted) and retries 0. */
        for (int i = 0; i < 3; i++) {
                batch[i] = mock_env_next(c, 0);
                assert_int_equal(batch[i]->offset, i);
        }
        assert_int_equal(kdc_retry_failed(r, c, batch[0], NULL, 0,
                                          KDC_CLASS_TRANSIENT, "down", NULL),
                         KDC_RETRY_WAIT);
        rd_kafka_message_destroy(batch[1]);
        rd_kafka_message_destroy(batch[2]);
        again = wait_due(r, c, 0, NULL, NULL, NULL);
        assert_int_equal(again->offset, 0);
        assert_int_equal(kdc_commit_message(c, again, NULL, 0, NULL), 0);
        assert_int_equal(kdc_retry_done(r, c, again), 0);

        /* Consumption goes on at offset 1, not after the batch (3). */
        next = mock_env_next(c, 0);
        assert_int_equal(next->offset, 1);
        assert_int_equal(mock_env_committed(c, topic, 0), 1);

        rd_kafka_message_destroy(next);
        rd_kafka_message_destroy(again);
        kdc_retry_destroy(r);
        mock_env_close(c);
        rd_kafka_destroy(producer);
}

/* Group timings for the 2.0.2 mock (see test_assignment.c), with
 * max.poll.interval.ms as small as librdkafka allows: not below
 * session.timeout.ms. */
static const char *const short_poll_conf[] = {"session.timeout.ms",
                                              "3300",
                                              "heartbeat.interval.ms",
                                              "100",
                                              "max.poll.interval.ms",
                                              "3500",
                                              "partition.assignment.strategy",
                                              "range",
                                              NULL};

struct events {
        kdc_retry_t *retry;
        int assigns, revokes;
};

/* The assignment's hook: count, then let the retry drop what is revoked. */
static void hook(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                 rd_kafka_topic_partition_list_t *parts, int lost,
                 void *opaque) {
        struct events *ev = opaque;

        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
                ev->assigns++;
        else
                ev->revokes++;
        kdc_retry_rebalance_hook(rk, err, parts, lost, ev->retry);
}

static void subscribe(rd_kafka_t *consumer, const char *topic) {
        rd_kafka_topic_partition_list_t *t =
            rd_kafka_topic_partition_list_new(1);

        mock_env_warm(consumer, topic);
        rd_kafka_topic_partition_list_add(t, topic, RD_KAFKA_PARTITION_UA);
        assert_int_equal(rd_kafka_subscribe(consumer, t),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(t);
}

static void a_retry_longer_than_max_poll_interval_keeps_the_membership(
    void **state) {
        struct mock_env *env = *state;
        struct events ev = {0};
        rd_kafka_message_t *m, *again, *next;
        rd_kafka_t *producer, *c;
        kdc_assignment_t *a;
        int exceeded = 0;
        uint64_t epoch, epoch_back = 0;
        int64_t waited;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-long", 1, topic);
        mock_env_fill(producer, topic, 1, 2);
        assert_int_equal(kdc_retry_new(&ev.retry, NULL), 0);
        /* One wait of 5 s: longer than max.poll.interval.ms (3.5 s). */
        set_transient(ev.retry, 2, 5000, 5000, KDC_RETRY_EXHAUSTED_HALT);
        assert_int_equal(kdc_assignment_new(&a, hook, &ev), 0);
        c = mock_env_consumer_with(
            env, "retry-long", kdc_assignment_rebalance_cb, a, short_poll_conf);
        subscribe(c, topic);

        m = mock_env_next_joined(c, 0);
        assert_int_equal(m->offset, 0);
        epoch = kdc_assignment_stamp(a, m);
        assert_true(epoch > 0);
        assert_int_equal(ev.assigns, 1);
        assert_int_equal(kdc_retry_failed(ev.retry, c, m, a, epoch,
                                          KDC_CLASS_TRANSIENT, "timeout", NULL),
                         KDC_RETRY_WAIT);

        again = wait_due(ev.retry, c, 0, &epoch_back, &exceeded, &waited);
        assert_ptr_equal(again, m);
        assert_true(waited >= 4900);
        assert_int_equal(epoch_back, epoch);
        /* The membership held: no max.poll.interval.ms error, no revoke,
         * the same epoch, and the group's coordinator takes the commit. */
        assert_int_equal(exceeded, 0);
        assert_int_equal(ev.revokes, 0);
        assert_int_equal(kdc_assignment_check(a, topic, 0, epoch), 0);
        assert_int_equal(kdc_commit_message(c, again, a, epoch_back, NULL), 0);
        assert_int_equal(mock_env_committed(c, topic, 0), 1);
        assert_int_equal(kdc_retry_done(ev.retry, c, again), 0);
        next = mock_env_next(c, 0);
        assert_int_equal(next->offset, 1);
        rd_kafka_message_destroy(next);
        rd_kafka_message_destroy(again);

        /* The control: the same 5 s without polling does exceed
         * max.poll.interval.ms (so the setting was in force above). */
        {
                int64_t start = now_ms();

                while (now_ms() - start < 5000) {
                        struct timespec ts = {0, 100 * 1000000L};

                        nanosleep(&ts, NULL);
                }
        }
        for (int i = 0; i < 40 && !exceeded; i++) {
                rd_kafka_message_t *e = rd_kafka_consumer_poll(c, 50);

                if (e && e->err == RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED)
                        exceeded++;
                if (e)
                        rd_kafka_message_destroy(e);
        }
        assert_int_equal(exceeded, 1);

        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
        kdc_retry_destroy(ev.retry);
        kdc_assignment_destroy(a);
        rd_kafka_destroy(producer);
}

struct dlq_fixture {
        rd_kafka_t *producer, *consumer, *reader;
        kdc_dlq_t *dlq;
        char topic[64], dlq_topic[80];
};

static void dlq_fixture_init(struct dlq_fixture *f, struct mock_env *env,
                             const char *name) {
        f->producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, name, 1, f->topic);
        snprintf(f->dlq_topic, sizeof(f->dlq_topic), "%s.dlq", f->topic);
        assert_int_equal(
            rd_kafka_mock_topic_create(env->mcluster, f->dlq_topic, 1, 1),
            RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(kdc_produce_confirmed(f->producer, f->topic, 0,
                                               "order-7", 7, "{bad", 4, WAIT_MS,
                                               NULL),
                         0);
        f->consumer = mock_env_consumer(env, name, NULL);
        f->reader = mock_env_consumer(env, "retry-dlq-reader", NULL);
        mock_env_assign(f->consumer, f->topic, 1);
        mock_env_assign(f->reader, f->dlq_topic, 1);
        assert_int_equal(kdc_dlq_new(&f->dlq, f->producer, name), 0);
}

static void dlq_fixture_fini(struct dlq_fixture *f) {
        kdc_dlq_destroy(f->dlq);
        mock_env_close(f->reader);
        mock_env_close(f->consumer);
        rd_kafka_destroy(f->producer);
}

static void exhausted_retries_go_to_the_dlq_with_identity_and_attempts(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        unsigned char id[KDC_IDENTITY_LEN];
        char hex[2 * KDC_IDENTITY_LEN + 1];
        rd_kafka_message_t *m, *again, *out;
        struct dlq_fixture f;
        kdc_retry_t *r;

        dlq_fixture_init(&f, env, "retry-dlq");
        assert_int_equal(kdc_produce_confirmed(f.producer, f.topic, 0,
                                               "order-8", 7, "amount=8", 8,
                                               WAIT_MS, NULL),
                         0);
        assert_int_equal(kdc_retry_new(&r, f.dlq), 0);
        set_transient(r, 3, 100, 200, KDC_RETRY_EXHAUSTED_DLQ);

        m = mock_env_next(f.consumer, 0);
        assert_int_equal(kdc_retry_failed(r, f.consumer, m, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          NULL),
                         KDC_RETRY_WAIT);
        again = wait_due(r, f.consumer, 0, NULL, NULL, NULL);
        assert_int_equal(kdc_retry_failed(r, f.consumer, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          NULL),
                         KDC_RETRY_WAIT);
        again = wait_due(r, f.consumer, 0, NULL, NULL, NULL);

        /* The third attempt exhausts the policy; the DLQ produce fails
         * first: not confirmed, nothing committed, the message is kept
         * (KDC_RETRY_WAIT) and the routing's error reported. */
        rd_kafka_mock_push_request_errors(
            env->mcluster, MOCK_APIKEY_PRODUCE, 1,
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(kdc_retry_failed(r, f.consumer, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          &err),
                         KDC_RETRY_WAIT);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(kdc_retry_pending(r), 1);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        /* After TOPIC_AUTHORIZATION_FAILED librdkafka marks the DLQ topic
         * errored and refuses every produce to it until its next metadata
         * (100 ms here, slower under ASan on a loaded machine than the 200 ms
         * cap): fetch it now, so that the next routing reaches the broker. */
        mock_env_warm(f.producer, f.dlq_topic);

        /* Handed back after the cap; it fails again and the routing is
         * confirmed now: KDC_RETRY_COMMIT, the record stored before the
         * input is committed. */
        again = wait_due(r, f.consumer, 0, NULL, NULL, NULL);
        assert_ptr_equal(again, m);
        assert_int_equal(kdc_retry_failed(r, f.consumer, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "downstream 503",
                                          &err),
                         KDC_RETRY_COMMIT);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(kdc_retry_pending(r), 0);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        assert_int_equal(kdc_commit_message(f.consumer, again, NULL, 0, NULL),
                         0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        /* The DLQ record: the input's identity and coordinates, and the
         * attempts made (3 failed, then the 4th). */
        out = mock_env_next(f.reader, 0);
        assert_memory_equal(out->key, "order-7", 7);
        assert_int_equal(kdc_identity(f.topic, "order-7", 7, "{bad", 4, id), 0);
        for (int i = 0; i < KDC_IDENTITY_LEN; i++)
                snprintf(hex + 2 * i, 3, "%02x", id[i]);
        assert_memory_equal(header(out, KDC_DLQ_HDR_IDENTITY), hex, 64);
        assert_memory_equal(header(out, KDC_DLQ_HDR_TOPIC), f.topic,
                            strlen(f.topic));
        assert_memory_equal(header(out, KDC_DLQ_HDR_OFFSET), "0", 1);
        assert_memory_equal(header(out, KDC_DLQ_HDR_CLASS), "transient", 9);
        assert_memory_equal(header(out, KDC_DLQ_HDR_ATTEMPTS), "4", 1);

        /* The partition was resumed right after the dead-lettered one. */
        rd_kafka_message_destroy(out);
        out = mock_env_next(f.consumer, 0);
        assert_int_equal(out->offset, 1);

        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(again);
        kdc_retry_destroy(r);
        dlq_fixture_fini(&f);
}

static void a_poison_message_goes_to_the_dlq_at_once_with_one_attempt(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *m, *out;
        struct dlq_fixture f;
        kdc_retry_t *r;

        dlq_fixture_init(&f, env, "retry-poison");
        assert_int_equal(kdc_retry_new(&r, f.dlq), 0);
        m = mock_env_next(f.consumer, 0);
        /* The default poison policy: one attempt, then the DLQ. */
        assert_int_equal(kdc_retry_failed(r, f.consumer, m, NULL, 0,
                                          KDC_CLASS_POISON, "not json", NULL),
                         KDC_RETRY_COMMIT);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 1);
        assert_int_equal(kdc_commit_message(f.consumer, m, NULL, 0, NULL), 0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);
        out = mock_env_next(f.reader, 0);
        assert_memory_equal(header(out, KDC_DLQ_HDR_ATTEMPTS), "1", 1);
        assert_memory_equal(header(out, KDC_DLQ_HDR_CLASS), "poison", 6);

        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(m);
        kdc_retry_destroy(r);
        dlq_fixture_fini(&f);
}

static void the_halt_policy_halts_and_commits_nothing(void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *m, *again;
        rd_kafka_t *producer, *c;
        kdc_retry_policy_t p;
        kdc_retry_t *r;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-halt", 1, topic);
        mock_env_fill(producer, topic, 1, 2);
        c = mock_env_consumer(env, "retry-halt", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        /* Without a DLQ router no policy may dead-letter. */
        assert_int_equal(kdc_retry_get_policy(r, KDC_CLASS_POISON, &p), 0);
        assert_int_equal(p.on_exhausted, KDC_RETRY_EXHAUSTED_HALT);
        p.on_exhausted = KDC_RETRY_EXHAUSTED_DLQ;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_POISON, &p),
                         KDC_ERR_INVALID);
        set_transient(r, 2, 100, 100, KDC_RETRY_EXHAUSTED_HALT);

        m = mock_env_next(c, 0);
        assert_int_equal(kdc_retry_failed(r, c, m, NULL, 0, KDC_CLASS_TRANSIENT,
                                          "down", NULL),
                         KDC_RETRY_WAIT);
        again = wait_due(r, c, 0, NULL, NULL, NULL);
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0,
                                          KDC_CLASS_TRANSIENT, "down", NULL),
                         KDC_RETRY_HALT);
        assert_int_equal(kdc_retry_pending(r), 0);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        /* Fatal halts at once; membership drops; neither waits. */
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0, KDC_CLASS_FATAL,
                                          "auth", NULL),
                         KDC_RETRY_HALT);
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0,
                                          KDC_CLASS_MEMBERSHIP, "fenced", NULL),
                         KDC_RETRY_DROP);
        assert_int_equal(kdc_retry_pending(r), 0);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(again);
        kdc_retry_destroy(r);
        mock_env_close(c);
        rd_kafka_destroy(producer);
}

static void a_membership_failure_during_a_retry_goes_back_to_the_message(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_message_t *m, *again;
        rd_kafka_t *producer, *c;
        kdc_retry_t *r;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-drop", 1, topic);
        mock_env_fill(producer, topic, 1, 2);
        c = mock_env_consumer(env, "retry-drop", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        set_transient(r, 5, 100, 100, KDC_RETRY_EXHAUSTED_HALT);

        m = mock_env_next(c, 0);
        assert_int_equal(kdc_retry_failed(r, c, m, NULL, 0, KDC_CLASS_TRANSIENT,
                                          "down", NULL),
                         KDC_RETRY_WAIT);
        again = wait_due(r, c, 0, NULL, NULL, NULL);
        /* The retry hits a membership error: dropped, nothing committed,
         * and the still-assigned partition is neither left paused nor
         * moved past the message: offset 0 comes again. */
        assert_int_equal(kdc_retry_failed(r, c, again, NULL, 0,
                                          KDC_CLASS_MEMBERSHIP, "fenced", NULL),
                         KDC_RETRY_DROP);
        assert_int_equal(kdc_retry_pending(r), 0);
        rd_kafka_message_destroy(again);
        m = mock_env_next(c, 0);
        assert_int_equal(m->offset, 0);
        assert_int_equal(mock_env_committed(c, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(m);
        kdc_retry_destroy(r);
        mock_env_close(c);
        rd_kafka_destroy(producer);
}

static const char *const eager_conf[] = {"session.timeout.ms",
                                         "3300",
                                         "heartbeat.interval.ms",
                                         "100",
                                         "partition.assignment.strategy",
                                         "range",
                                         NULL};

static void a_rebalance_during_a_retry_drops_it(void **state) {
        struct mock_env *env = *state;
        struct events ev1 = {0}, ev2 = {0};
        rd_kafka_message_t *m, *redelivered = NULL, *ignore;
        rd_kafka_t *producer, *c1, *c2;
        kdc_assignment_t *a1, *a2;
        int32_t p;
        uint64_t epoch;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "retry-rebalance", 2, topic);
        mock_env_fill(producer, topic, 2, 2);
        assert_int_equal(kdc_retry_new(&ev1.retry, NULL), 0);
        assert_int_equal(kdc_retry_new(&ev2.retry, NULL), 0);
        /* A long wait: only the rebalance can end it within the test. */
        set_transient(ev1.retry, 5, 60000, 60000, KDC_RETRY_EXHAUSTED_HALT);
        assert_int_equal(kdc_assignment_new(&a1, hook, &ev1), 0);
        assert_int_equal(kdc_assignment_new(&a2, hook, &ev2), 0);
        c1 =
            mock_env_consumer_with(env, "retry-rebalance",
                                   kdc_assignment_rebalance_cb, a1, eager_conf);
        c2 =
            mock_env_consumer_with(env, "retry-rebalance",
                                   kdc_assignment_rebalance_cb, a2, eager_conf);
        subscribe(c1, topic);

        m = mock_env_next_joined(c1, -1);
        p = m->partition;
        assert_int_equal(m->offset, 0);
        epoch = kdc_assignment_stamp(a1, m);
        assert_int_equal(kdc_retry_failed(ev1.retry, c1, m, a1, epoch,
                                          KDC_CLASS_TRANSIENT, "down", NULL),
                         KDC_RETRY_WAIT);
        assert_int_equal(kdc_retry_pending(ev1.retry), 1);

        /* A second consumer joins: the eager protocol revokes everything
         * from c1, whose hook drops the pending retry. */
        subscribe(c2, topic);
        for (int i = 0; i < 400 && ev1.revokes == 0; i++)
                if ((ignore = rd_kafka_consumer_poll(c1, 25)))
                        rd_kafka_message_destroy(ignore);
        assert_true(ev1.revokes >= 1);
        assert_int_equal(kdc_retry_pending(ev1.retry), 0);
        assert_int_equal(kdc_retry_next(ev1.retry, &ignore, NULL), 0);
        assert_int_equal(mock_env_committed(c1, topic, p),
                         RD_KAFKA_OFFSET_INVALID);

        /* The partition's new owner (either consumer: a partition c1 gets
         * back is not left paused) starts from the committed offset: the
         * dropped message, offset 0, comes again. */
        for (int i = 0; i < 800 && !redelivered; i++) {
                rd_kafka_t *cs[2] = {c1, c2};

                ignore = rd_kafka_consumer_poll(cs[i % 2], 25);
                if (ignore && !ignore->err && ignore->partition == p)
                        redelivered = ignore;
                else if (ignore)
                        rd_kafka_message_destroy(ignore);
        }
        assert_non_null(redelivered);
        assert_int_equal(redelivered->offset, 0);
        rd_kafka_message_destroy(redelivered);
        redelivered = NULL;

        /* c2 leaves: c1 owns p again, whoever had it, and p was not left
         * paused by the dropped retry: offset 0 comes to c1. */
        mock_env_close(c2);
        for (int i = 0; i < 800 && !redelivered; i++) {
                ignore = rd_kafka_consumer_poll(c1, 25);
                if (ignore && !ignore->err && ignore->partition == p &&
                    ignore->offset == 0)
                        redelivered = ignore;
                else if (ignore)
                        rd_kafka_message_destroy(ignore);
        }
        assert_non_null(redelivered);
        assert_int_equal(
            kdc_assignment_check(a1, topic, p,
                                 kdc_assignment_stamp(a1, redelivered)),
            0);
        assert_int_equal(mock_env_committed(c1, topic, p),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(redelivered);
        mock_env_close(c1);
        kdc_retry_destroy(ev1.retry);
        kdc_retry_destroy(ev2.retry);
        kdc_assignment_destroy(a1);
        kdc_assignment_destroy(a2);
        rd_kafka_destroy(producer);
}

static void the_backoff_grows_to_its_cap_with_jitter_below_it(void **state) {
        kdc_retry_policy_t p;
        kdc_retry_t *r;

        (void)state;
        assert_int_equal(kdc_retry_new(&r, NULL), 0);
        assert_int_equal(kdc_retry_get_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
        assert_int_equal(p.max_attempts, 10);
        assert_int_equal(p.initial_ms, 1000);
        assert_int_equal(p.max_interval_ms, 30000);
        assert_int_equal(p.on_exhausted, KDC_RETRY_EXHAUSTED_HALT);
        p.max_interval_ms = 10;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_TRANSIENT, &p),
                         KDC_ERR_INVALID); /* cap below the first wait */
        p.max_interval_ms = 30000;
        p.jitter = 1.5;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_TRANSIENT, &p),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_FATAL, &p),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_retry_timeout(r, 250), 250); /* none waiting */
        assert_int_equal(kdc_retry_pending(r), 0);
        kdc_retry_destroy(r);
}

#define SENTENCE(text, fn)                                                     \
        { text, fn, NULL, heal, NULL }

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("a retried message is committed only after its retry "
                     "succeeded; its partition is paused while it waits "
                     "(later offsets are not handed out) and resumes in "
                     "order after",
                     a_retried_message_commits_only_after_its_retry_succeeds),
            SENTENCE("a batch whose first message is retried resumes right "
                     "after that message, so the rest of the batch, dropped "
                     "uncommitted, is consumed again",
                     a_batch_resumes_right_after_its_retried_message),
            SENTENCE(
                "a retry wait longer than max.poll.interval.ms keeps the "
                "group membership (no _MAX_POLL_EXCEEDED, no revoke, "
                "the commit accepted); not polling for as long loses it",
                a_retry_longer_than_max_poll_interval_keeps_the_membership),
            SENTENCE(
                "exhausted retries go to the DLQ with the identity and "
                "the attempt count; the input commits only after the "
                "DLQ delivery report confirmed it",
                exhausted_retries_go_to_the_dlq_with_identity_and_attempts),
            SENTENCE("a poison message goes to the DLQ at once, with one "
                     "attempt",
                     a_poison_message_goes_to_the_dlq_at_once_with_one_attempt),
            SENTENCE("the halt policy halts and commits nothing; fatal halts "
                     "and membership drops at once",
                     the_halt_policy_halts_and_commits_nothing),
            SENTENCE(
                "a membership failure during a retry drops it; the partition "
                "goes back to the message, uncommitted",
                a_membership_failure_during_a_retry_goes_back_to_the_message),
            SENTENCE("a rebalance during a pending retry drops it; the "
                     "partition's new owner gets the message again, and so "
                     "does the first consumer when it owns the partition "
                     "again (it was not left paused)",
                     a_rebalance_during_a_retry_drops_it),
            SENTENCE("policies are checked; the defaults are Spring-like",
                     the_backoff_grows_to_its_cap_with_jitter_below_it),
            SENTENCE("no attempt starts after the policy's deadline",
                     no_attempt_starts_after_the_deadline),
        };

        return cmocka_run_group_tests_name("bounded retries", tests,
                                           mock_env_setup, mock_env_teardown);
}
