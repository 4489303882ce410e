/* Confirmed DLQ routing (harness/libkdc/dlq.c) against the librdkafka mock
 * cluster: what the DLQ topic stores is consumed back and decoded, and the
 * input's committed offset is read back with rd_kafka_committed(). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS MOCK_WAIT_MS
#define GROUP "orders-worker"

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

struct fixture {
        struct mock_env *env;
        char topic[64];      /* input */
        char dlq_topic[80];  /* input + ".dlq" */
        rd_kafka_t *producer;
        rd_kafka_t *consumer; /* of the input */
        rd_kafka_t *reader;   /* of the DLQ topic */
        kdc_dlq_t *dlq;
};

/* One input message "order-<i>" / "not json <i>" with a trace-id header,
 * produced and confirmed through a tracker. */
static void produce_inputs(struct fixture *f, int n) {
        kdc_tracker_t *t;

        assert_int_equal(kdc_tracker_new(&t), 0);
        for (int i = 0; i < n; i++) {
                rd_kafka_headers_t *h = rd_kafka_headers_new(1);
                char key[32], value[32];
                int klen = snprintf(key, sizeof(key), "order-%d", i);
                int vlen = snprintf(value, sizeof(value), "not json %d", i);

                rd_kafka_header_add(h, "trace-id", -1, "t-42", -1);
                assert_int_equal(kdc_tracker_produce(t, f->producer, f->topic,
                                                     0, key, (size_t)klen,
                                                     value, (size_t)vlen, h,
                                                     WAIT_MS, NULL),
                                 0);
        }
        assert_int_equal(kdc_tracker_wait(t, f->producer, WAIT_MS), 0);
        kdc_tracker_destroy(t);
}

static void fixture_init(struct fixture *f, struct mock_env *env,
                         const char *name, int inputs) {
        f->env = env;
        f->producer = mock_env_producer(env, 1, NULL);
        f->consumer = mock_env_consumer(env, GROUP, NULL);
        f->reader = mock_env_consumer(env, "dlq-reader", NULL);
        mock_env_topic(env, name, 1, f->topic);
        snprintf(f->dlq_topic, sizeof(f->dlq_topic), "%s.dlq", f->topic);
        assert_int_equal(rd_kafka_mock_topic_create(env->mcluster,
                                                    f->dlq_topic, 1, 1),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        produce_inputs(f, inputs);
        mock_env_assign(f->consumer, f->topic, 1);
        mock_env_assign(f->reader, f->dlq_topic, 1);
        assert_int_equal(kdc_dlq_new(&f->dlq, f->producer, GROUP), 0);
}

static void fixture_fini(struct fixture *f) {
        kdc_dlq_destroy(f->dlq);
        mock_env_close(f->reader);
        mock_env_close(f->consumer);
        rd_kafka_destroy(f->producer);
}

/* Route, then commit only if the routing was confirmed: the contract. */
static int route_then_commit(struct fixture *f, const rd_kafka_message_t *m,
                             rd_kafka_resp_err_t *errp) {
        int r = kdc_dlq_route(f->dlq, m, KDC_CLASS_POISON, "not json",
                              WAIT_MS, errp);

        if (r == 0)
                assert_int_equal(
                    kdc_commit_message(f->consumer, m, NULL, 0, NULL), 0);
        return r;
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

static void a_confirmed_routing_carries_every_header_then_the_input_commits(
    void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        unsigned char id[KDC_IDENTITY_LEN];
        rd_kafka_message_t *in, *out;
        rd_kafka_headers_t *h = NULL;
        kdc_dlq_info_t info;
        struct fixture f;

        fixture_init(&f, *state, "dlq-ok", 1);
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(route_then_commit(&f, in, &err), 0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        out = mock_env_next(f.reader, 0);
        assert_int_equal(out->key_len, in->key_len);
        assert_memory_equal(out->key, in->key, in->key_len);
        assert_int_equal(out->len, in->len);
        assert_memory_equal(out->payload, in->payload, in->len);
        assert_string_equal(header(out, "trace-id"), "t-42");

        assert_int_equal(rd_kafka_message_headers(out, &h), 0);
        assert_int_equal(kdc_dlq_decode(h, &info), 0);
        assert_int_equal(info.fields, 0x1ff);
        assert_string_equal(info.topic, f.topic);
        assert_int_equal(info.partition, 0);
        assert_int_equal(info.offset, in->offset);
        assert_int_equal(info.timestamp, rd_kafka_message_timestamp(in, NULL));
        assert_true(info.timestamp > 0);
        assert_string_equal(info.group, GROUP);
        assert_int_equal(info.failure_class, KDC_CLASS_POISON);
        assert_string_equal(info.error, "not json");
        assert_int_equal(info.retry_count, 0);
        assert_int_equal(kdc_identity(f.topic, in->key, in->key_len,
                                      in->payload, in->len, id),
                         0);
        assert_memory_equal(info.identity, id, KDC_IDENTITY_LEN);
        assert_int_equal(kdc_dlq_retry_count(f.dlq, id), 1);

        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

static void a_failed_dlq_produce_is_not_confirmed_and_the_input_stays_uncommitted(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        unsigned char id[KDC_IDENTITY_LEN];
        rd_kafka_message_t *in;
        struct fixture f;

        fixture_init(&f, env, "dlq-fail", 1);
        in = mock_env_next(f.consumer, 0);
        /* The DLQ produce is the only Produce request now. */
        rd_kafka_mock_push_request_errors(
            env->mcluster, MOCK_APIKEY_PRODUCE, 1,
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(route_then_commit(&f, in, &err), KDC_ERR_DELIVERY);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 0);
        /* A routing that was not confirmed does not count as one. */
        assert_int_equal(kdc_identity(f.topic, in->key, in->key_len,
                                      in->payload, in->len, id),
                         0);
        assert_int_equal(kdc_dlq_retry_count(f.dlq, id), 0);

        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

static void decode_dlq_message(const rd_kafka_message_t *m,
                               kdc_dlq_info_t *info) {
        rd_kafka_headers_t *h = NULL;

        assert_int_equal(rd_kafka_message_headers(m, &h), 0);
        assert_int_equal(kdc_dlq_decode(h, info), 0);
}

static void the_identity_stays_and_the_retry_count_grows_across_reroutings(
    void **state) {
        kdc_dlq_info_t a, b, c, d;
        rd_kafka_message_t *in, *dlq_a, *dlq_b, *dlq_c, *dlq_d;
        kdc_dlq_t *fresh;
        struct fixture f;

        fixture_init(&f, *state, "dlq-retry", 1);
        in = mock_env_next(f.consumer, 0);

        /* Routed, then (commit lost, redelivered) routed again. */
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, "1st",
                                       WAIT_MS, NULL),
                         0);
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, "2nd",
                                       WAIT_MS, NULL),
                         0);
        dlq_a = mock_env_next(f.reader, 0);
        dlq_b = mock_env_next(f.reader, 0);
        decode_dlq_message(dlq_a, &a);
        decode_dlq_message(dlq_b, &b);
        assert_int_equal(a.retry_count, 0);
        assert_int_equal(b.retry_count, 1);

        /* A retry consumer fails the DLQ message again and re-routes it:
         * same event, same identity, original coordinates, back to the
         * input's DLQ (not "<dlq>.dlq"), count + 1. */
        assert_int_equal(kdc_dlq_route(f.dlq, dlq_b, KDC_CLASS_POISON, "3rd",
                                       WAIT_MS, NULL),
                         0);
        dlq_c = mock_env_next(f.reader, 0);
        decode_dlq_message(dlq_c, &c);
        assert_int_equal(c.retry_count, 2);
        assert_string_equal(c.topic, f.topic);
        assert_int_equal(c.offset, in->offset);
        assert_int_equal(c.timestamp, a.timestamp);
        assert_string_equal(c.error, "3rd");
        assert_memory_equal(a.identity, b.identity, KDC_IDENTITY_LEN);
        assert_memory_equal(a.identity, c.identity, KDC_IDENTITY_LEN);

        /* Another process (a fresh router, no memory) re-routing the
         * first DLQ message continues from its header's count. */
        assert_int_equal(kdc_dlq_new(&fresh, f.producer, "retry-worker"), 0);
        assert_int_equal(kdc_dlq_route(fresh, dlq_a, KDC_CLASS_TRANSIENT,
                                       "downstream 503", WAIT_MS, NULL),
                         0);
        dlq_d = mock_env_next(f.reader, 0);
        decode_dlq_message(dlq_d, &d);
        assert_int_equal(d.retry_count, 1);
        assert_memory_equal(a.identity, d.identity, KDC_IDENTITY_LEN);
        assert_string_equal(d.group, "retry-worker");
        assert_int_equal(d.failure_class, KDC_CLASS_TRANSIENT);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 4);

        kdc_dlq_destroy(fresh);
        rd_kafka_message_destroy(dlq_a);
        rd_kafka_message_destroy(dlq_b);
        rd_kafka_message_destroy(dlq_c);
        rd_kafka_message_destroy(dlq_d);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

static void a_configured_dlq_topic_replaces_the_default_name(void **state) {
        struct mock_env *env = *state;
        char parking[64];
        rd_kafka_message_t *in;
        struct fixture f;

        fixture_init(&f, env, "dlq-topic", 1);
        mock_env_topic(env, "parking-lot", 1, parking);
        assert_int_equal(kdc_dlq_set_topic(f.dlq, parking), 0);
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, NULL,
                                       WAIT_MS, NULL),
                         0);
        assert_int_equal(mock_env_stored(f.producer, parking), 1);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 0);
        /* NULL restores "<topic>.dlq". */
        assert_int_equal(kdc_dlq_set_topic(f.dlq, NULL), 0);
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, NULL,
                                       WAIT_MS, NULL),
                         0);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 1);
        assert_int_equal(kdc_dlq_set_topic(f.dlq, "bad/name"),
                         KDC_ERR_INVALID);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

static void invalid_arguments_route_nothing(void **state) {
        static char long_group[KDC_DLQ_GROUP_MAX + 2];
        rd_kafka_message_t *in;
        struct fixture f;
        kdc_dlq_t *d;

        fixture_init(&f, *state, "dlq-invalid", 1);
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(kdc_dlq_route(NULL, in, KDC_CLASS_POISON, NULL, 0,
                                       NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_dlq_route(f.dlq, NULL, KDC_CLASS_POISON, NULL, 0,
                                       NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_NONE, NULL, 0,
                                       NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, NULL, -2,
                                       NULL),
                         KDC_ERR_INVALID);
        memset(long_group, 'g', sizeof(long_group) - 1);
        assert_int_equal(kdc_dlq_new(&d, f.producer, long_group),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_dlq_new(&d, NULL, NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_dlq_new(NULL, f.producer, NULL), KDC_ERR_INVALID);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 0);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

/* A record produced to the input with kdc.* headers of someone's choosing:
 * the envelope of a DLQ message naming `victim` and a retry count. */
static void produce_forged(struct fixture *f, const char *victim,
                           const char *retry_count) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(8);
        kdc_tracker_t *t;

        rd_kafka_header_add(h, KDC_DLQ_HDR_TOPIC, -1, victim, -1);
        rd_kafka_header_add(h, KDC_DLQ_HDR_PARTITION, -1, "0", -1);
        rd_kafka_header_add(h, KDC_DLQ_HDR_OFFSET, -1, "7", -1);
        rd_kafka_header_add(h, KDC_DLQ_HDR_RETRY, -1, retry_count, -1);
        rd_kafka_header_add(h, KDC_DLQ_HDR_IDENTITY, -1,
                            "00000000000000000000000000000000"
                            "00000000000000000000000000000000",
                            -1);
        assert_int_equal(kdc_tracker_new(&t), 0);
        assert_int_equal(kdc_tracker_produce(t, f->producer, f->topic, 0, "k",
                                             1, "v", 1, h, WAIT_MS, NULL),
                         0);
        assert_int_equal(kdc_tracker_wait(t, f->producer, WAIT_MS), 0);
        kdc_tracker_destroy(t);
}

static void a_record_cannot_choose_its_dlq_topic(void **state) {
        char victim[80];
        struct fixture f;
        rd_kafka_message_t *in, *out;
        kdc_dlq_info_t info;

        fixture_init(&f, *state, "dlq-forged", 0);
        mock_env_topic(f.env, "victim", 1, victim);
        produce_forged(&f, victim, "0");
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(
            kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, "forged", WAIT_MS, NULL),
            0);
        /* The DLQ of the topic it was consumed from, not "<victim>.dlq". */
        out = mock_env_next(f.reader, 0);
        decode_dlq_message(out, &info);
        assert_string_equal(info.topic, victim);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 1);
        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

static void the_largest_retry_count_stays_the_largest(void **state) {
        unsigned char id[KDC_IDENTITY_LEN] = {0};
        rd_kafka_message_t *in, *out;
        kdc_dlq_info_t info;
        struct fixture f;

        fixture_init(&f, *state, "dlq-retry-max", 0);
        produce_forged(&f, f.topic, "2147483647");
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(
            kdc_dlq_route(f.dlq, in, KDC_CLASS_POISON, "again", WAIT_MS, NULL),
            0);
        out = mock_env_next(f.reader, 0);
        decode_dlq_message(out, &info);
        /* INT32_MAX + 1 does not wrap: the count saturates, in the header
         * and in the router's memory of the identity. */
        assert_int_equal(info.retry_count, INT32_MAX);
        memcpy(id, info.identity, KDC_IDENTITY_LEN);
        assert_int_equal(kdc_dlq_retry_count(f.dlq, id), INT32_MAX);
        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(in);
        fixture_fini(&f);
}

/* A DLQ record as kdc_dlq_route() writes it for input `in`: the input's
 * key, value and own header, and every kdc header decoding back to it. */
static void assert_dlq_record(const struct fixture *f,
                              const rd_kafka_message_t *out,
                              const rd_kafka_message_t *in) {
        unsigned char id[KDC_IDENTITY_LEN];
        rd_kafka_headers_t *h = NULL;
        kdc_dlq_info_t info;

        assert_int_equal(out->key_len, in->key_len);
        assert_memory_equal(out->key, in->key, in->key_len);
        assert_int_equal(out->len, in->len);
        assert_memory_equal(out->payload, in->payload, in->len);
        assert_string_equal(header(out, "trace-id"), "t-42");
        assert_int_equal(rd_kafka_message_headers(out, &h), 0);
        assert_int_equal(kdc_dlq_decode(h, &info), 0);
        assert_int_equal(info.fields, 0x1ff);
        assert_string_equal(info.topic, f->topic);
        assert_int_equal(info.offset, in->offset);
        assert_string_equal(info.group, GROUP);
        assert_int_equal(info.failure_class, KDC_CLASS_POISON);
        assert_string_equal(info.error, "not json");
        assert_int_equal(info.retry_count, 0);
        assert_int_equal(kdc_identity(f->topic, in->key, in->key_len,
                                      in->payload, in->len, id),
                         0);
        assert_memory_equal(info.identity, id, KDC_IDENTITY_LEN);
}

/* Three poison inputs routed through one tracker: nothing is confirmed
 * until the one wait, which confirms all three; then the inputs commit. */
static void a_batch_of_routings_is_confirmed_by_one_tracker_wait(void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        rd_kafka_message_t *in[3];
        struct fixture f;
        kdc_tracker_t *t;

        fixture_init(&f, *state, "dlq-batch", 3);
        assert_int_equal(kdc_tracker_new(&t), 0);
        for (int i = 0; i < 3; i++) {
                in[i] = mock_env_next(f.consumer, 0);
                assert_int_equal(kdc_dlq_produce(f.dlq, t, in[i],
                                                 KDC_CLASS_POISON, "not json",
                                                 WAIT_MS, &err),
                                 0);
                assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        }
        assert_int_equal(kdc_tracker_pending(t), 3);
        assert_int_equal(kdc_tracker_wait(t, f.producer, WAIT_MS), 0);
        assert_int_equal(kdc_tracker_delivered(t), 3);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 3);
        assert_int_equal(kdc_commit_message(f.consumer, in[2], NULL, 0, NULL),
                         0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 3);
        for (int i = 0; i < 3; i++) {
                rd_kafka_message_t *out = mock_env_next(f.reader, 0);

                assert_dlq_record(&f, out, in[i]);
                rd_kafka_message_destroy(out);
                rd_kafka_message_destroy(in[i]);
        }
        kdc_tracker_destroy(t);
        fixture_fini(&f);
}

/* The DLQ produce fails: the tracker's wait says so and lists it. */
static void a_failed_batched_routing_is_listed_by_the_tracker(void **state) {
        struct mock_env *env = *state;
        const kdc_failure_t *fail;
        rd_kafka_message_t *in;
        struct fixture f;
        kdc_tracker_t *t;

        fixture_init(&f, env, "dlq-batch-fail", 1);
        assert_int_equal(kdc_tracker_new(&t), 0);
        in = mock_env_next(f.consumer, 0);
        rd_kafka_mock_push_request_errors(env->mcluster, MOCK_APIKEY_PRODUCE, 1,
                                          RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_int_equal(kdc_dlq_produce(f.dlq, t, in, KDC_CLASS_POISON,
                                         "not json", WAIT_MS, NULL),
                         0);
        assert_int_equal(kdc_tracker_wait(t, f.producer, WAIT_MS),
                         KDC_ERR_DELIVERY);
        fail = kdc_tracker_failure(t, 0);
        assert_non_null(fail);
        assert_string_equal(fail->topic, f.dlq_topic);
        assert_int_equal(fail->err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_int_equal(mock_env_stored(f.producer, f.dlq_topic), 0);

        /* Refused before anything is enqueued. */
        assert_int_equal(kdc_tracker_reset(t), 0);
        assert_int_equal(kdc_dlq_produce(f.dlq, NULL, in, KDC_CLASS_POISON,
                                         NULL, WAIT_MS, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(
            kdc_dlq_produce(f.dlq, t, in, KDC_CLASS_NONE, NULL, WAIT_MS, NULL),
            KDC_ERR_INVALID);
        assert_int_equal(kdc_tracker_pending(t), 0);
        rd_kafka_message_destroy(in);
        kdc_tracker_destroy(t);
        fixture_fini(&f);
}

/* The service's own produce with kdc_dlq_headers(): the record the DLQ
 * stores is the one kdc_dlq_route() would have written. */
static void the_kdc_headers_serve_a_dlq_produce_of_the_services_own(
    void **state) {
        rd_kafka_headers_t *h = NULL;
        rd_kafka_message_t *in, *out;
        struct fixture f;
        kdc_tracker_t *t;

        fixture_init(&f, *state, "dlq-headers", 1);
        assert_int_equal(kdc_tracker_new(&t), 0);
        in = mock_env_next(f.consumer, 0);
        assert_int_equal(
            kdc_dlq_headers(f.dlq, in, KDC_CLASS_POISON, "not json", &h), 0);
        assert_non_null(h);
        assert_int_equal(
            kdc_tracker_producev(t, f.producer, WAIT_MS, NULL,
                                 RD_KAFKA_V_TOPIC(f.dlq_topic),
                                 RD_KAFKA_V_KEY(in->key, in->key_len),
                                 RD_KAFKA_V_VALUE(in->payload, in->len),
                                 RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_END),
            0); /* h is librdkafka's now */
        assert_int_equal(kdc_tracker_wait(t, f.producer, WAIT_MS), 0);
        out = mock_env_next(f.reader, 0);
        assert_dlq_record(&f, out, in);

        assert_int_equal(
            kdc_dlq_headers(f.dlq, in, KDC_CLASS_POISON, NULL, NULL),
            KDC_ERR_INVALID);
        h = (rd_kafka_headers_t *)1;
        assert_int_equal(kdc_dlq_headers(NULL, in, KDC_CLASS_POISON, NULL, &h),
                         KDC_ERR_INVALID);
        assert_null(h);
        rd_kafka_message_destroy(out);
        rd_kafka_message_destroy(in);
        kdc_tracker_destroy(t);
        fixture_fini(&f);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE(
                "a confirmed routing stores the input with every kdc "
                "header and its own headers; then the input commits",
                a_confirmed_routing_carries_every_header_then_the_input_commits),
            SENTENCE(
                "an injected produce error on the DLQ topic: not "
                "confirmed, and the input stays uncommitted",
                a_failed_dlq_produce_is_not_confirmed_and_the_input_stays_uncommitted),
            SENTENCE(
                "the identity stays and the retry count grows across "
                "re-routings, also from a fresh router",
                the_identity_stays_and_the_retry_count_grows_across_reroutings),
            SENTENCE("a configured DLQ topic replaces the default name",
                     a_configured_dlq_topic_replaces_the_default_name),
            SENTENCE("invalid arguments route nothing",
                     invalid_arguments_route_nothing),
            SENTENCE("a record's own kdc headers do not choose its DLQ topic",
                     a_record_cannot_choose_its_dlq_topic),
            SENTENCE("a retry count of INT32_MAX stays INT32_MAX when routed "
                     "again",
                     the_largest_retry_count_stays_the_largest),
            SENTENCE("a batch of routings through a tracker is confirmed by "
                     "one wait, each record with every kdc header; then the "
                     "inputs commit",
                     a_batch_of_routings_is_confirmed_by_one_tracker_wait),
            SENTENCE("a failed batched routing fails the tracker's wait and "
                     "is listed with the DLQ topic",
                     a_failed_batched_routing_is_listed_by_the_tracker),
            SENTENCE("the kdc headers built for the service's own produce "
                     "make the record kdc_dlq_route would have written",
                     the_kdc_headers_serve_a_dlq_produce_of_the_services_own),
        };

        return cmocka_run_group_tests_name("confirmed DLQ routing", tests,
                                           mock_env_setup, mock_env_teardown);
}
