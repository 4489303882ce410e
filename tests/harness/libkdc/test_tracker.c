/* DeliveryTracker (harness/libkdc/tracker.c) against the librdkafka mock cluster.
 * Every test proves its claim by counting delivery reports and, where it
 * matters, the messages the broker actually stored. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <pthread.h>
#include <stdatomic.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS 10000 /* generous: a healthy mock answers in milliseconds */

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

/* Produce messages "key-i"/"value-i" for i in [from, to) through the
 * tracker to partition 0; each must be enqueued. */
static void produce_range(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                          int from, int to) {
        rd_kafka_resp_err_t err;
        char key[32], value[32];

        for (int i = from; i < to; i++) {
                int klen = snprintf(key, sizeof(key), "key-%d", i);
                int vlen = snprintf(value, sizeof(value), "value-%d", i);

                assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, key,
                                                     (size_t)klen, value,
                                                     (size_t)vlen, NULL,
                                                     WAIT_MS, &err),
                                 0);
                assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        }
}

static void produce_n(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                      int n) {
        produce_range(t, rk, topic, 0, n);
}

/* Failure i of the tracker is message "key-<key>" of topic/partition 0. */
static void assert_failure(const kdc_tracker_t *t, size_t i,
                           const char *topic, int key,
                           rd_kafka_resp_err_t err,
                           rd_kafka_msg_status_t status) {
        const kdc_failure_t *f = kdc_tracker_failure(t, i);
        char want[32];
        int len = snprintf(want, sizeof(want), "key-%d", key);

        assert_non_null(f);
        assert_non_null(f->topic);
        assert_string_equal(f->topic, topic);
        assert_int_equal(f->partition, 0);
        assert_int_equal(f->key_len, (size_t)len);
        assert_memory_equal(f->key, want, (size_t)len);
        assert_int_equal(f->err, err);
        assert_int_equal(f->status, status);
        assert_null(f->opaque);
}

static void assert_counts(const kdc_tracker_t *t, int64_t pending,
                          int64_t delivered, int64_t failed) {
        assert_int_equal(kdc_tracker_pending(t), pending);
        assert_int_equal(kdc_tracker_delivered(t), delivered);
        assert_int_equal(kdc_tracker_failed(t), failed);
}

static void every_message_is_counted_delivered_on_a_healthy_cluster(
    void **state) {
        const int n = 1000;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "tracker-healthy", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, n);

        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, n, 0);
        assert_int_equal(kdc_tracker_first_error(t),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        /* Zero lost: the broker stored exactly what the tracker confirmed. */
        assert_int_equal(mock_env_stored(rk, topic), n);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

struct poller {
        rd_kafka_t *rk;
        atomic_int stop;
};

static void *poll_until_stopped(void *arg) {
        struct poller *p = arg;

        while (!atomic_load(&p->stop))
                rd_kafka_poll(p->rk, 10);
        return NULL;
}

/* How a test makes the next `n` messages fail. */
typedef void(fault_fn)(struct mock_env *env, int n);

static void fault_broker_error(struct mock_env *env, int n,
                               rd_kafka_resp_err_t code) {
        rd_kafka_resp_err_t errs[64];

        assert_true(n <= 64);
        /* One error per message covers any batching. */
        for (int i = 0; i < n; i++)
                errs[i] = code;
        rd_kafka_mock_push_request_errors_array(
            env->mcluster, MOCK_APIKEY_PRODUCE, (size_t)n, errs);
}

static void fault_topic_authorization(struct mock_env *env, int n) {
        fault_broker_error(env, n,
                           RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
}

static void fault_msg_size_too_large(struct mock_env *env, int n) {
        fault_broker_error(env, n, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
}

static void fault_all_brokers_down(struct mock_env *env, int n) {
        (void)n;
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
}

/* A confirmed first part of a batch, then `affected` messages under a
 * fault: rd_kafka_flush() returns NO_ERROR, yet the tracker counts and lists
 * exactly the affected messages and wait() says KDC_ERR_DELIVERY. */
static void flush_returns_0_yet_the_tracker_lists_exactly_the_failed(
    struct mock_env *env, const char *name, const char *const *conf,
    fault_fn *fault, rd_kafka_resp_err_t expected) {
        const int delivered_first = 10, affected = 20;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(env, 1, conf);

        mock_env_topic(env, name, 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_range(t, rk, topic, 0, delivered_first);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);

        fault(env, affected);
        produce_range(t, rk, topic, delivered_first,
                      delivered_first + affected);

        /* The point of kdc: flush() says all is well... */
        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        /* ...while the reports flush() served say otherwise. */
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        assert_counts(t, 0, delivered_first, affected);
        assert_int_equal(kdc_tracker_first_error(t), expected);
        for (int i = 0; i < affected; i++)
                assert_failure(t, (size_t)i, topic, delivered_first + i,
                               expected, RD_KAFKA_MSG_STATUS_NOT_PERSISTED);
        assert_null(kdc_tracker_failure(t, (size_t)affected));

        mock_env_heal(env);
        assert_int_equal(mock_env_stored(rk, topic), delivered_first);
        /* A new batch starts with an empty failure list. */
        assert_int_equal(kdc_tracker_reset(t), 0);
        assert_null(kdc_tracker_failure(t, 0));
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

/* After a TOPIC_AUTHORIZATION_FAILED response librdkafka refuses further
 * producev() calls to the topic, so all messages must be enqueued before
 * the first failing Produce request goes out: linger.ms holds the batch far
 * longer than enqueueing 20 messages takes. */
static const char *const hold_batch[] = {"linger.ms", "500", NULL};

static void topic_authorization_failed_batch_is_listed_while_flush_returned_0(
    void **state) {
        flush_returns_0_yet_the_tracker_lists_exactly_the_failed(
            *state, "tracker-authz", hold_batch, fault_topic_authorization,
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
}

static void msg_size_too_large_batch_is_listed_while_flush_returned_0(
    void **state) {
        flush_returns_0_yet_the_tracker_lists_exactly_the_failed(
            *state, "tracker-too-large-broker", hold_batch,
            fault_msg_size_too_large, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
}

static void all_brokers_down_batch_times_out_and_is_listed_while_flush_returned_0(
    void **state) {
        static const char *const short_timeout[] = {"message.timeout.ms",
                                                    "300", NULL};

        flush_returns_0_yet_the_tracker_lists_exactly_the_failed(
            *state, "tracker-brokers-down", short_timeout,
            fault_all_brokers_down, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
}

static void only_persisted_confirms_acks_0_reports_without_error_are_failures(
    void **state) {
        static const char *const acks0[] = {"acks", "0", NULL};
        const int n = 5;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, acks0);

        mock_env_topic(*state, "tracker-acks0", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, n);

        /* Every report says NO_ERROR, but POSSIBLY_PERSISTED: nobody
         * acknowledged the write, so nothing is confirmed. */
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        assert_counts(t, 0, 0, n);
        for (int i = 0; i < n; i++)
                assert_failure(t, (size_t)i, topic, i,
                               RD_KAFKA_RESP_ERR_NO_ERROR,
                               RD_KAFKA_MSG_STATUS_POSSIBLY_PERSISTED);
        /* (The mock did store them: the tracker never guessed.) */
        assert_int_equal(mock_env_stored(rk, topic), n);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

/* A service with its own dr_msg_cb that hands reports to libkdc. */
struct service {
        atomic_int kdc_reports;  /* kdc_dr_msg_record() took them */
        atomic_int own_reports;  /* not libkdc's: _private is ours */
        atomic_int opaque_wrong; /* a tracked message came back with a
                                    different opaque */
};

struct message_ctx {
        int index;
        atomic_int reports;
};

static void service_dr_msg_cb(rd_kafka_t *rk,
                              const rd_kafka_message_t *rkmessage,
                              void *conf_opaque) {
        struct service *s = conf_opaque;
        void *mine = NULL;

        if (kdc_dr_msg_record(rk, rkmessage, &mine) == 0) {
                struct message_ctx *ctx = mine;
                char want[32];
                int len;

                atomic_fetch_add(&s->kdc_reports, 1);
                len = snprintf(want, sizeof(want), "key-%d", ctx->index);
                if (rkmessage->key_len != (size_t)len ||
                    memcmp(rkmessage->key, want, (size_t)len) != 0)
                        atomic_fetch_add(&s->opaque_wrong, 1);
                atomic_fetch_add(&ctx->reports, 1);
        } else {
                assert_null(mine);
                atomic_fetch_add(&s->own_reports, 1);
        }
}

/* rd_kafka_producev() of "key-i" with a tracker handle as opaque. */
static rd_kafka_resp_err_t produce_tracked(kdc_tracker_t *t, rd_kafka_t *rk,
                                           const char *topic, int i,
                                           void *app_opaque,
                                           const void *value, size_t len) {
        rd_kafka_resp_err_t err;
        char key[32];
        int klen = snprintf(key, sizeof(key), "key-%d", i);
        void *h;

        assert_int_equal(kdc_tracker_track(t, rk, app_opaque, &h), 0);
        assert_non_null(h);
        err = rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                RD_KAFKA_V_PARTITION(0),
                                RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                RD_KAFKA_V_KEY(key, (size_t)klen),
                                RD_KAFKA_V_VALUE((void *)value, len),
                                RD_KAFKA_V_OPAQUE(h), RD_KAFKA_V_END);
        if (err)
                assert_int_equal(kdc_tracker_untrack(t, h), 0);
        return err;
}

static void tracked_messages_are_confirmed_through_the_services_own_dr_msg_cb(
    void **state) {
        enum { N = 100, OWN = 10 };
        static struct message_ctx ctx[N];
        struct service s = {0};
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk =
            mock_env_producer_with(*state, service_dr_msg_cb, &s, NULL);

        mock_env_topic(*state, "tracker-own-cb", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        for (int i = 0; i < N; i++) {
                ctx[i].index = i;
                atomic_init(&ctx[i].reports, 0);
                assert_int_equal(produce_tracked(t, rk, topic, i, &ctx[i],
                                                 "v", 1),
                                 RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        /* The service's own, untracked messages (NULL opaque). */
        for (int i = 0; i < OWN; i++)
                assert_int_equal(
                    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                      RD_KAFKA_V_VALUE("own", 3),
                                      RD_KAFKA_V_END),
                    RD_KAFKA_RESP_ERR_NO_ERROR);

        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, N, 0);
        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(atomic_load(&s.kdc_reports), N);
        assert_int_equal(atomic_load(&s.own_reports), OWN);
        assert_int_equal(atomic_load(&s.opaque_wrong), 0);
        for (int i = 0; i < N; i++)
                assert_int_equal(atomic_load(&ctx[i].reports), 1);
        assert_int_equal(mock_env_stored(rk, topic), N + OWN);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void a_failed_tracked_message_is_listed_with_the_services_opaque(
    void **state) {
        struct mock_env *env = *state;
        static struct message_ctx ctx = {7, 0};
        struct service s = {0};
        const kdc_failure_t *f;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk =
            mock_env_producer_with(env, service_dr_msg_cb, &s, NULL);

        mock_env_topic(env, "tracker-own-cb-fail", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        fault_topic_authorization(env, 1);
        assert_int_equal(produce_tracked(t, rk, topic, 7, &ctx, "v", 1),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        assert_counts(t, 0, 0, 1);
        f = kdc_tracker_failure(t, 0);
        assert_non_null(f);
        assert_ptr_equal(f->opaque, &ctx);
        assert_int_equal(f->err,
                         RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(atomic_load(&ctx.reports), 1);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

/* The value of header `name` of m, NUL-terminated by the test's producer
 * (-1 length includes no NUL: compared by length). */
static int header_is(const rd_kafka_message_t *m, const char *name,
                     const char *want) {
        rd_kafka_headers_t *h = NULL;
        const void *v = NULL;
        size_t size = 0;

        return rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
               rd_kafka_header_get_last(h, name, &v, &size) ==
                   RD_KAFKA_RESP_ERR_NO_ERROR &&
               size == strlen(want) && memcmp(v, want, size) == 0;
}

/* Half the messages through kdc_tracker_producev(), half through
 * kdc_tracker_produceva() with a RD_KAFKA_V_HEADERS list: every field the
 * service gives reaches the broker, and its own opaque its dr_msg_cb. */
static void producev_passes_headers_timestamp_partition_and_the_services_opaque(
    void **state) {
        enum { N = 20 };
        static struct message_ctx ctx[N];
        const int64_t ts0 = 1700000000000;
        struct service s = {0};
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *consumer;
        rd_kafka_t *rk =
            mock_env_producer_with(*state, service_dr_msg_cb, &s, NULL);

        mock_env_topic(*state, "tracker-producev", 2, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        for (int i = 0; i < N; i++) {
                char key[32], trace[32];
                int klen = snprintf(key, sizeof(key), "key-%d", i);

                snprintf(trace, sizeof(trace), "t-%d", i);
                ctx[i].index = i;
                atomic_init(&ctx[i].reports, 0);
                if (i % 2 == 0) {
                        err = RD_KAFKA_RESP_ERR__FAIL;
                        assert_int_equal(
                            kdc_tracker_producev(
                                t, rk, WAIT_MS, &err, RD_KAFKA_V_TOPIC(topic),
                                RD_KAFKA_V_PARTITION(1),
                                RD_KAFKA_V_KEY(key, (size_t)klen),
                                RD_KAFKA_V_VALUE("v", 1),
                                RD_KAFKA_V_TIMESTAMP(ts0 + i),
                                RD_KAFKA_V_HEADER("trace-id", trace, -1),
                                RD_KAFKA_V_OPAQUE(&ctx[i]), RD_KAFKA_V_END),
                            0);
                        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
                } else {
                        rd_kafka_headers_t *h = rd_kafka_headers_new(1);
                        rd_kafka_vu_t vus[7] = {
                            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = topic},
                            {.vtype = RD_KAFKA_VTYPE_PARTITION, .u.i32 = 1},
                            {.vtype = RD_KAFKA_VTYPE_KEY,
                             .u.mem = {key, (size_t)klen}},
                            {.vtype = RD_KAFKA_VTYPE_VALUE, .u.mem = {"v", 1}},
                            {.vtype = RD_KAFKA_VTYPE_TIMESTAMP,
                             .u.i64 = ts0 + i},
                            {.vtype = RD_KAFKA_VTYPE_HEADERS, .u.headers = h},
                            {.vtype = RD_KAFKA_VTYPE_OPAQUE, .u.ptr = &ctx[i]},
                        };

                        rd_kafka_header_add(h, "trace-id", -1, trace, -1);
                        /* 0: the headers are librdkafka's now */
                        assert_int_equal(
                            kdc_tracker_produceva(t, rk, WAIT_MS, NULL, vus, 7),
                            0);
                }
        }
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, N, 0);
        assert_int_equal(atomic_load(&s.kdc_reports), N);
        assert_int_equal(atomic_load(&s.opaque_wrong), 0);
        for (int i = 0; i < N; i++)
                assert_int_equal(atomic_load(&ctx[i].reports), 1);
        assert_int_equal(mock_env_stored_in(rk, topic, 1), N);
        assert_int_equal(mock_env_stored_in(rk, topic, 0), 0);

        consumer = mock_env_consumer(*state, "tracker-producev", NULL);
        mock_env_assign(consumer, topic, 2);
        for (int i = 0; i < N; i++) {
                rd_kafka_message_t *m = mock_env_next(consumer, 1);
                rd_kafka_timestamp_type_t tstype;
                char want[32];
                int len = snprintf(want, sizeof(want), "key-%d", i);

                assert_int_equal(m->key_len, (size_t)len);
                assert_memory_equal(m->key, want, (size_t)len);
                assert_int_equal(rd_kafka_message_timestamp(m, &tstype),
                                 ts0 + i);
                assert_int_equal(tstype, RD_KAFKA_TIMESTAMP_CREATE_TIME);
                snprintf(want, sizeof(want), "t-%d", i);
                assert_true(header_is(m, "trace-id", want));
                rd_kafka_message_destroy(m);
        }
        mock_env_close(consumer);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

/* kdc_dr_msg_cb producer: the outcome of a message that failed names the
 * opaque given as RD_KAFKA_V_OPAQUE; one without an opaque has NULL. */
static void a_failed_producev_message_is_listed_with_the_services_opaque(
    void **state) {
        struct mock_env *env = *state;
        int mine = 42;
        const kdc_failure_t *f;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(env, 1, NULL);

        mock_env_topic(env, "tracker-producev-fail", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        /* One request each: a produce request per wait. Not
         * TOPIC_AUTHORIZATION_FAILED: librdkafka then refuses the next
         * produce to the topic at once. */
        fault_msg_size_too_large(env, 1);
        assert_int_equal(
            kdc_tracker_producev(t, rk, WAIT_MS, NULL, RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_KEY("key-7", 5),
                                 RD_KAFKA_V_VALUE("v", 1),
                                 RD_KAFKA_V_OPAQUE(&mine), RD_KAFKA_V_END),
            0);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        fault_msg_size_too_large(env, 1);
        assert_int_equal(
            kdc_tracker_producev(t, rk, WAIT_MS, NULL, RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_KEY("key-8", 5),
                                 RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_END),
            0);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        assert_counts(t, 0, 0, 2);
        f = kdc_tracker_failure(t, 0);
        assert_non_null(f);
        assert_ptr_equal(f->opaque, &mine);
        assert_int_equal(f->err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_memory_equal(f->key, "key-7", 5);
        f = kdc_tracker_failure(t, 1);
        assert_non_null(f);
        assert_null(f->opaque);
        assert_memory_equal(f->key, "key-8", 5);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

/* What libkdc refuses before librdkafka sees it counts nothing; what
 * librdkafka refuses is KDC_ERR_PRODUCE with its error, counts nothing. */
static void producev_refusals_count_nothing(void **state) {
        static const char *const small_max[] = {"message.max.bytes", "1000",
                                                NULL};
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        static char big[2000];
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, small_max);
        rd_kafka_vu_t bad[2] = {
            {.vtype = RD_KAFKA_VTYPE_TOPIC, .u.cstr = "x"},
            {.vtype = RD_KAFKA_VTYPE_END},
        };

        mock_env_topic(*state, "tracker-producev-refused", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        /* no topic */
        assert_int_equal(kdc_tracker_producev(t, rk, 0, &err,
                                              RD_KAFKA_V_VALUE("v", 1),
                                              RD_KAFKA_V_END),
                         KDC_ERR_INVALID);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__INVALID_ARG);
        /* an END entry inside a produceva array, a NULL array */
        assert_int_equal(kdc_tracker_produceva(t, rk, 0, NULL, bad, 2),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produceva(t, rk, 0, NULL, NULL, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_producev(NULL, rk, 0, NULL,
                                              RD_KAFKA_V_TOPIC(topic),
                                              RD_KAFKA_V_END),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_producev(t, rk, -2, NULL,
                                              RD_KAFKA_V_TOPIC(topic),
                                              RD_KAFKA_V_END),
                         KDC_ERR_INVALID);
        /* librdkafka refuses a value over message.max.bytes */
        assert_int_equal(
            kdc_tracker_producev(t, rk, 0, &err, RD_KAFKA_V_TOPIC(topic),
                                 RD_KAFKA_V_VALUE(big, sizeof big),
                                 RD_KAFKA_V_OPAQUE(&err), RD_KAFKA_V_END),
            KDC_ERR_PRODUCE);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_counts(t, 0, 0, 0);
        assert_int_equal(kdc_tracker_wait(t, rk, 0), 0);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void untrack_withdraws_a_message_librdkafka_refused(void **state) {
        static const char *const small_max[] = {"message.max.bytes", "1000",
                                                NULL};
        static char big[2000];
        struct service s = {0};
        char topic[64];
        kdc_tracker_t *t, *other;
        void *h;
        rd_kafka_t *rk =
            mock_env_producer_with(*state, service_dr_msg_cb, &s, small_max);

        mock_env_topic(*state, "tracker-untrack", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        assert_int_equal(kdc_tracker_new(&other), 0);
        /* produce_tracked() untracks on the producev error. */
        assert_int_equal(produce_tracked(t, rk, topic, 0, NULL, big,
                                         sizeof(big)),
                         RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_counts(t, 0, 0, 0);
        assert_int_equal(kdc_tracker_wait(t, rk, 0), 0);

        /* A handle belongs to its tracker only. */
        assert_int_equal(kdc_tracker_track(t, rk, NULL, &h), 0);
        assert_int_equal(kdc_tracker_untrack(other, h), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_untrack(NULL, h), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_untrack(t, h), 0);
        assert_counts(t, 0, 0, 0);
        /* Not a live handle of t: refused without being read (a handle
         * given back, any address, one inside a handle). */
        assert_int_equal(kdc_tracker_untrack(t, h), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_untrack(t, (void *)1), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_untrack(t, &s), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_untrack(t, (char *)h + 1),
                         KDC_ERR_INVALID);
        assert_counts(t, 0, 0, 0);
        assert_int_equal(kdc_tracker_track(t, NULL, NULL, &h),
                         KDC_ERR_INVALID);
        assert_null(h);
        assert_int_equal(mock_env_stored(rk, topic), 0);

        kdc_tracker_destroy(other);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

struct tracking_thread {
        kdc_tracker_t *t;
        rd_kafka_t *rk;
        const char *topic;
        int first, n;
        int failed;
};

static void *track_and_produce(void *arg) {
        struct tracking_thread *w = arg;

        for (int i = w->first; i < w->first + w->n; i++) {
                char key[32];
                int klen = snprintf(key, sizeof(key), "key-%d", i);
                void *h;

                if (kdc_tracker_track(w->t, w->rk, NULL, &h) != 0 ||
                    rd_kafka_producev(
                        w->rk, RD_KAFKA_V_TOPIC(w->topic),
                        RD_KAFKA_V_PARTITION(0),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_KEY(key, (size_t)klen),
                        RD_KAFKA_V_VALUE("v", 1), RD_KAFKA_V_OPAQUE(h),
                        RD_KAFKA_V_END) != RD_KAFKA_RESP_ERR_NO_ERROR)
                        w->failed++;
        }
        return NULL;
}

static void four_threads_tracking_at_once_are_each_counted_once(
    void **state) {
        enum { THREADS = 4, PER = 500 };
        struct tracking_thread w[THREADS];
        pthread_t threads[THREADS], polling;
        struct poller poller;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "tracker-track-threads", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        poller.rk = rk;
        atomic_init(&poller.stop, 0);
        assert_int_equal(
            pthread_create(&polling, NULL, poll_until_stopped, &poller), 0);
        for (int i = 0; i < THREADS; i++) {
                w[i] = (struct tracking_thread){t, rk, topic, i * PER, PER, 0};
                assert_int_equal(pthread_create(&threads[i], NULL,
                                                track_and_produce, &w[i]),
                                 0);
        }
        for (int i = 0; i < THREADS; i++) {
                pthread_join(threads[i], NULL);
                assert_int_equal(w[i].failed, 0);
        }
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        atomic_store(&poller.stop, 1);
        pthread_join(polling, NULL);

        assert_counts(t, 0, THREADS * PER, 0);
        assert_int_equal(mock_env_stored(rk, topic), THREADS * PER);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void wait_times_out_and_keeps_messages_pending_while_no_broker_answers(
    void **state) {
        struct mock_env *env = *state;
        const int n = 5;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk;

        mock_env_topic(env, "tracker-down", 1, topic);
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
        rk = mock_env_producer(env, 1, NULL);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, n);

        /* No broker: nothing can be delivered, whatever the timing. */
        assert_int_equal(kdc_tracker_wait(t, rk, 200), KDC_ERR_TIMEOUT);
        assert_counts(t, n, 0, 0);
        assert_int_equal(kdc_tracker_wait(t, rk, 0), KDC_ERR_TIMEOUT);

        /* The broker comes back: the same messages are confirmed. */
        mock_env_heal(env);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, n, 0);
        assert_int_equal(mock_env_stored(rk, topic), n);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void produce_polls_through_a_full_local_queue_until_every_message_is_enqueued(
    void **state) {
        static const char *const small_queue[] = {
            "queue.buffering.max.messages", "5", NULL};
        const int n = 100;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, small_queue);

        mock_env_topic(*state, "tracker-qfull", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        /* 100 messages through a queue that holds 5: only possible if
         * produce serves reports on __QUEUE_FULL and retries. */
        produce_n(t, rk, topic, n);

        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, n, 0);
        assert_int_equal(mock_env_stored(rk, topic), n);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void produce_returns_queue_full_at_its_deadline_and_does_not_count_the_refused_message(
    void **state) {
        static const char *const small_queue[] = {
            "queue.buffering.max.messages", "5", NULL};
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk;

        mock_env_topic(env, "tracker-qfull-deadline", 1, topic);
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
        rk = mock_env_producer(env, 1, small_queue);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, 5); /* the queue is now full for good */

        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1, "v", 1,
                                             NULL, 50, &err),
                         KDC_ERR_QUEUE_FULL);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__QUEUE_FULL);
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1, "v", 1,
                                             NULL, 0, &err),
                         KDC_ERR_QUEUE_FULL);
        assert_counts(t, 5, 0, 0);

        mock_env_heal(env);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, 5, 0);
        assert_int_equal(mock_env_stored(rk, topic), 5);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void produce_returns_kdc_err_produce_and_does_not_count_a_refused_message(
    void **state) {
        static const char *const small_max[] = {"message.max.bytes", "1000",
                                                NULL};
        static char big[2000];
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, small_max);

        mock_env_topic(*state, "tracker-too-large", 1, topic);
        memset(big, 'x', sizeof(big));
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, 2);
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, NULL, 0, big,
                                             sizeof(big), NULL, WAIT_MS, &err),
                         KDC_ERR_PRODUCE);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        produce_n(t, rk, topic, 1);

        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, 3, 0);
        assert_int_equal(mock_env_stored(rk, topic), 3);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void reports_served_by_another_polling_thread_are_each_counted_once(
    void **state) {
        const int n = 2000;
        struct poller poller;
        pthread_t thread;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "tracker-threads", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        poller.rk = rk;
        atomic_init(&poller.stop, 0);
        assert_int_equal(
            pthread_create(&thread, NULL, poll_until_stopped, &poller), 0);

        produce_n(t, rk, topic, n);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);

        atomic_store(&poller.stop, 1);
        pthread_join(thread, NULL);
        assert_counts(t, 0, n, 0);
        assert_int_equal(mock_env_stored(rk, topic), n);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void two_trackers_on_one_producer_count_only_their_own_messages(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
        char topic[64];
        kdc_tracker_t *batch1, *batch2;
        rd_kafka_t *rk = mock_env_producer(env, 1, NULL);

        mock_env_topic(env, "tracker-two", 1, topic);
        assert_int_equal(kdc_tracker_new(&batch1), 0);
        assert_int_equal(kdc_tracker_new(&batch2), 0);

        produce_n(batch1, rk, topic, 30);
        assert_int_equal(kdc_tracker_wait(batch1, rk, WAIT_MS), 0);
        rd_kafka_mock_push_request_errors_array(env->mcluster,
                                                MOCK_APIKEY_PRODUCE, 1, &err);
        produce_n(batch2, rk, topic, 1);

        assert_int_equal(kdc_tracker_wait(batch2, rk, WAIT_MS),
                         KDC_ERR_DELIVERY);
        assert_counts(batch1, 0, 30, 0);
        assert_counts(batch2, 0, 0, 1);

        kdc_tracker_destroy(batch1);
        kdc_tracker_destroy(batch2);
        rd_kafka_destroy(rk);
}

static void reset_starts_a_new_batch_only_once_every_report_is_in(
    void **state) {
        struct mock_env *env = *state;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk;

        mock_env_topic(env, "tracker-reset", 1, topic);
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
        rk = mock_env_producer(env, 1, NULL);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, 3);
        assert_int_equal(kdc_tracker_reset(t), KDC_ERR_BUSY);
        assert_counts(t, 3, 0, 0);

        mock_env_heal(env);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_int_equal(kdc_tracker_reset(t), 0);
        assert_counts(t, 0, 0, 0);
        produce_n(t, rk, topic, 2);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, 2, 0);
        assert_int_equal(mock_env_stored(rk, topic), 5);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void a_tracker_destroyed_with_messages_in_flight_still_lets_them_deliver(
    void **state) {
        const int n = 100;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "tracker-destroy-early", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        produce_n(t, rk, topic, n);
        /* Released now: its reports are still counted into it, and the
         * next kdc_tracker_new() or destroy after the last one frees it
         * (checked by ASan builds). */
        kdc_tracker_destroy(t);

        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), n);
        /* Every report is in: this sweep frees it. */
        assert_int_equal(kdc_tracker_new(&t), 0);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static void produce_refuses_a_producer_whose_reports_do_not_reach_kdc(
    void **state) {
        static const char *const only_errors[] = {
            "delivery.report.only.error", "true", NULL};
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *no_cb = mock_env_producer(*state, 0, NULL);
        rd_kafka_t *errors_only = mock_env_producer(*state, 1, only_errors);

        mock_env_topic(*state, "tracker-conf", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        assert_int_equal(kdc_tracker_produce(t, no_cb, topic, 0, "k", 1, "v",
                                             1, NULL, 0, &err),
                         KDC_ERR_CONF);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__NOT_CONFIGURED);
        assert_int_equal(kdc_tracker_produce(t, errors_only, topic, 0, "k", 1,
                                             "v", 1, NULL, 0, &err),
                         KDC_ERR_CONF);
        assert_counts(t, 0, 0, 0);
        assert_int_equal(mock_env_stored(no_cb, topic), 0);

        kdc_tracker_destroy(t);
        rd_kafka_destroy(no_cb);
        rd_kafka_destroy(errors_only);
}

static void null_and_mismatched_arguments_return_kdc_err_invalid(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(env, 1, NULL);
        rd_kafka_t *other = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "tracker-invalid", NULL);

        mock_env_topic(env, "tracker-invalid", 1, topic);
        assert_int_equal(kdc_tracker_new(NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_new(&t), 0);

        assert_int_equal(kdc_tracker_produce(NULL, rk, topic, 0, NULL, 0, NULL,
                                             0, NULL, 0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__INVALID_ARG);
        assert_int_equal(kdc_tracker_produce(t, NULL, topic, 0, NULL, 0, NULL,
                                             0, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produce(t, rk, NULL, 0, NULL, 0, NULL, 0,
                                             NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, NULL, 3, NULL, 0,
                                             NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, NULL, 0, NULL, 3,
                                             NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, NULL, 0, NULL, 0,
                                             NULL, -2, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_produce(t, consumer, topic, 0, NULL, 0,
                                             NULL, 0, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_counts(t, 0, 0, 0);

        /* Bound to rk by its first message: another producer is refused,
         * for producing and for waiting (it would poll the wrong queue). */
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, NULL, 0, NULL, 0,
                                             NULL, 0, NULL),
                         0);
        assert_int_equal(kdc_tracker_produce(t, other, topic, 0, NULL, 0, NULL,
                                             0, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_wait(t, other, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_wait(NULL, rk, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_wait(t, NULL, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_wait(t, rk, -2), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_counts(t, 0, 1, 0);

        assert_int_equal(kdc_tracker_reset(NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_pending(NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_delivered(NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_failed(NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_first_error(NULL),
                         RD_KAFKA_RESP_ERR__INVALID_ARG);
        kdc_tracker_destroy(NULL);

        kdc_tracker_destroy(t);
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(other);
        rd_kafka_destroy(rk);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("every message produced through the tracker is counted "
                     "delivered on a healthy cluster, and the broker stored "
                     "exactly that many",
                     every_message_is_counted_delivered_on_a_healthy_cluster),
            SENTENCE(
                "TOPIC_AUTHORIZATION_FAILED: rd_kafka_flush returns "
                "NO_ERROR, yet wait says KDC_ERR_DELIVERY and the "
                "tracker lists exactly the failed messages",
                topic_authorization_failed_batch_is_listed_while_flush_returned_0),
            SENTENCE("MSG_SIZE_TOO_LARGE from the broker: rd_kafka_flush "
                     "returns NO_ERROR, yet wait says KDC_ERR_DELIVERY and "
                     "the tracker lists exactly the failed messages",
                     msg_size_too_large_batch_is_listed_while_flush_returned_0),
            SENTENCE(
                "all brokers down with a short message.timeout.ms: "
                "rd_kafka_flush returns NO_ERROR, yet wait says "
                "KDC_ERR_DELIVERY and the tracker lists exactly the "
                "timed-out messages",
                all_brokers_down_batch_times_out_and_is_listed_while_flush_returned_0),
            SENTENCE(
                "only PERSISTED confirms: acks=0 reports without error "
                "are listed as failed with status POSSIBLY_PERSISTED",
                only_persisted_confirms_acks_0_reports_without_error_are_failures),
            SENTENCE(
                "tracked messages are confirmed through the service's "
                "own dr_msg_cb, which gets its own opaque back once per "
                "message",
                tracked_messages_are_confirmed_through_the_services_own_dr_msg_cb),
            SENTENCE(
                "a failed tracked message is listed with the service's "
                "opaque",
                a_failed_tracked_message_is_listed_with_the_services_opaque),
            SENTENCE(
                "producev and produceva pass key, partition, "
                "timestamp and headers to the broker and the service's "
                "opaque to its own dr_msg_cb",
                producev_passes_headers_timestamp_partition_and_the_services_opaque),
            SENTENCE(
                "a failed producev message is listed with the "
                "service's opaque",
                a_failed_producev_message_is_listed_with_the_services_opaque),
            SENTENCE("producev refusals, libkdc's and librdkafka's, count "
                     "nothing",
                     producev_refusals_count_nothing),
            SENTENCE("untrack withdraws a message librdkafka refused, and "
                     "only from its own tracker",
                     untrack_withdraws_a_message_librdkafka_refused),
            SENTENCE("four threads tracking at once on one producer are each "
                     "counted once",
                     four_threads_tracking_at_once_are_each_counted_once),
            SENTENCE(
                "tracker wait returns KDC_ERR_TIMEOUT and keeps the "
                "messages pending while no broker answers",
                wait_times_out_and_keeps_messages_pending_while_no_broker_answers),
            SENTENCE(
                "tracker produce polls through a full local queue until "
                "every message is enqueued",
                produce_polls_through_a_full_local_queue_until_every_message_is_enqueued),
            SENTENCE(
                "tracker produce returns KDC_ERR_QUEUE_FULL at its "
                "deadline and does not count the refused message",
                produce_returns_queue_full_at_its_deadline_and_does_not_count_the_refused_message),
            SENTENCE(
                "tracker produce returns KDC_ERR_PRODUCE and does not "
                "count a message librdkafka refused",
                produce_returns_kdc_err_produce_and_does_not_count_a_refused_message),
            SENTENCE(
                "reports served by another polling thread are each "
                "counted once",
                reports_served_by_another_polling_thread_are_each_counted_once),
            SENTENCE(
                "two trackers on one producer count only their own "
                "messages",
                two_trackers_on_one_producer_count_only_their_own_messages),
            SENTENCE("reset starts a new batch only once every report is in",
                     reset_starts_a_new_batch_only_once_every_report_is_in),
            SENTENCE(
                "a tracker destroyed with messages in flight still lets "
                "every message deliver",
                a_tracker_destroyed_with_messages_in_flight_still_lets_them_deliver),
            SENTENCE("tracker produce refuses a producer whose delivery "
                     "reports do not reach kdc_dr_msg_cb",
                     produce_refuses_a_producer_whose_reports_do_not_reach_kdc),
            SENTENCE("NULL and mismatched arguments return KDC_ERR_INVALID",
                     null_and_mismatched_arguments_return_kdc_err_invalid),
        };

        return cmocka_run_group_tests_name("DeliveryTracker", tests,
                                           mock_env_setup, mock_env_teardown);
}
