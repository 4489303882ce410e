/* kdc_produce_confirmed() (harness/libkdc/produce.c) against the librdkafka mock
 * cluster: the return code and delivery_err must match what the broker
 * did, checked against the messages the broker actually stored. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS 10000

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

static void returns_0_with_no_error_once_the_broker_acked_the_message(
    void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "confirmed-healthy", 1, topic);
        for (int i = 0; i < 3; i++) {
                assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1,
                                                       "v", 1, WAIT_MS, &err),
                                 0);
                assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
                /* Acked means stored: no flush needed to see it. */
                assert_int_equal(mock_env_stored(rk, topic), i + 1);
        }
        /* A tombstone (NULL value) and the partitioner are fine too. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, RD_KAFKA_PARTITION_UA,
                                               "k", 1, NULL, 0, WAIT_MS, NULL),
                         0);
        assert_int_equal(mock_env_stored(rk, topic), 4);
        rd_kafka_destroy(rk);
}

static void returns_kdc_err_delivery_with_the_brokers_error_code_when_produce_fails(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(env, 1, NULL);

        mock_env_topic(env, "confirmed-authz", 1, topic);
        /* One message, one Produce request, one injected error. */
        rd_kafka_mock_push_request_errors(
            env->mcluster, MOCK_APIKEY_PRODUCE, 1,
            RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         KDC_ERR_DELIVERY);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        /* flush() has nothing to say about it. */
        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(mock_env_stored(rk, topic), 0);

        rd_kafka_destroy(rk);
}

static void returns_kdc_err_produce_with_producev_error_when_librdkafka_refuses_the_message(
    void **state) {
        static const char *const small_max[] = {"message.max.bytes", "1000",
                                                NULL};
        static char big[2000];
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(*state, 1, small_max);

        mock_env_topic(*state, "confirmed-too-large", 1, topic);
        memset(big, 'x', sizeof(big));
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, big,
                                               sizeof(big), WAIT_MS, &err),
                         KDC_ERR_PRODUCE);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), 0);
        rd_kafka_destroy(rk);
}

static void reports_a_local_message_timeout_as_a_delivery_failure(
    void **state) {
        static const char *const short_timeout[] = {"message.timeout.ms",
                                                    "200", NULL};
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk;

        mock_env_topic(env, "confirmed-msg-timeout", 1, topic);
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
        rk = mock_env_producer(env, 1, short_timeout);
        /* librdkafka gives up after message.timeout.ms and reports it:
         * that is a delivery report, so not KDC_ERR_TIMEOUT. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         KDC_ERR_DELIVERY);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT);
        mock_env_heal(env);
        assert_int_equal(mock_env_stored(rk, topic), 0);
        rd_kafka_destroy(rk);
}

static void returns_kdc_err_timeout_when_no_report_arrives_in_time_and_absorbs_the_late_report(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk;

        mock_env_topic(env, "confirmed-timeout", 1, topic);
        rd_kafka_mock_broker_set_down(env->mcluster, MOCK_BROKER_ID);
        rk = mock_env_producer(env, 1, NULL);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               200, &err),
                         KDC_ERR_TIMEOUT);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__TIMED_OUT);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1, 0,
                                               &err),
                         KDC_ERR_TIMEOUT);

        /* Outcome unknown, not failed: once the broker is back both
         * messages ARE delivered (a retry would have duplicated them).
         * Their late reports land in freed-by-report records (ASan). */
        mock_env_heal(env);
        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(mock_env_stored(rk, topic), 2);
        rd_kafka_destroy(rk);
}

static void waits_for_its_own_report_while_tracker_messages_share_the_producer(
    void **state) {
        const int n = 50;
        rd_kafka_resp_err_t err;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, NULL);

        mock_env_topic(*state, "confirmed-shared", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);
        for (int i = 0; i < n; i++)
                assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1,
                                                     "v", 1, NULL, WAIT_MS,
                                                     NULL),
                                 0);
        /* Its poll loop serves the tracker's reports too; each report goes
         * to its own owner. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         0);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_int_equal(kdc_tracker_delivered(t), n);
        assert_int_equal(mock_env_stored(rk, topic), n + 1);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

static int64_t elapsed_ms(const struct timespec *since) {
        struct timespec now;

        clock_gettime(CLOCK_MONOTONIC, &now);
        return (int64_t)(now.tv_sec - since->tv_sec) * 1000 +
               (now.tv_nsec - since->tv_nsec) / 1000000;
}

static void waiting_does_not_wait_out_linger_ms(void **state) {
        /* With poll() a lone message waits linger.ms before it is even sent
         * (5 ms by default: a confirmed produce took 5.2 ms); libkdc's waits
         * serve with flush(), which sends at once. 3 s makes the difference
         * unmistakable. */
        static const char *const lingering[] = {"linger.ms", "3000", NULL};
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        struct timespec start;
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(*state, 1, lingering);

        mock_env_topic(*state, "confirmed-linger", 1, topic);
        /* The first produce also fetches metadata: not timed. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         0);

        clock_gettime(CLOCK_MONOTONIC, &start);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_true(elapsed_ms(&start) < 1500);

        assert_int_equal(kdc_tracker_new(&t), 0);
        clock_gettime(CLOCK_MONOTONIC, &start);
        for (int i = 0; i < 10; i++)
                assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1,
                                                     "v", 1, NULL, WAIT_MS,
                                                     NULL),
                                 0);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);
        assert_true(elapsed_ms(&start) < 1500);
        assert_int_equal(kdc_tracker_delivered(t), 10);
        assert_int_equal(mock_env_stored(rk, topic), 12);
        kdc_tracker_destroy(t);
        rd_kafka_destroy(rk);
}

struct stuck_wait {
        kdc_tracker_t *t;
        rd_kafka_t *rk;
        int rc;
};

static void *wait_on_stuck_tracker(void *arg) {
        struct stuck_wait *w = arg;

        w->rc = kdc_tracker_wait(w->t, w->rk, WAIT_MS);
        return NULL;
}

static void returns_promptly_while_another_thread_waits_on_a_tracker_whose_messages_are_stuck(
    void **state) {
        enum { CALLS = 30 };
        struct mock_env *env = *state;
        char topic[64], stuck[64];
        struct stuck_wait w;
        struct timespec start;
        pthread_t waiter;
        int slow = 0;

        w.rk = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "confirmed-beside", 1, topic);
        mock_env_topic(env, "confirmed-stuck", 1, stuck);
        assert_int_equal(kdc_produce_confirmed(w.rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, NULL),
                         0);
        assert_int_equal(kdc_produce_confirmed(w.rk, stuck, 0, "k", 1, "v", 1,
                                               WAIT_MS, NULL),
                         0);
        /* No leader: the tracker's messages stay outstanding, so the other
         * thread's wait keeps serving the producer's reports meanwhile. */
        rd_kafka_mock_partition_set_leader(env->mcluster, stuck, 0, -1);
        assert_int_equal(kdc_tracker_new(&w.t), 0);
        for (int i = 0; i < 3; i++)
                assert_int_equal(kdc_tracker_produce(w.t, w.rk, stuck, 0, "k",
                                                     1, "v", 1, NULL, WAIT_MS,
                                                     NULL),
                                 0);
        assert_int_equal(
            pthread_create(&waiter, NULL, wait_on_stuck_tracker, &w), 0);

        /* Each report is served by whichever thread gets it first (about
         * half by the waiting thread); one served there must not keep this
         * call waiting for the rest of a 100 ms slice. A few slow calls are
         * tolerated for a loaded machine. */
        for (int i = 0; i < CALLS; i++) {
                clock_gettime(CLOCK_MONOTONIC, &start);
                assert_int_equal(kdc_produce_confirmed(w.rk, topic, 0, "k", 1,
                                                       "v", 1, WAIT_MS, NULL),
                                 0);
                if (elapsed_ms(&start) > 60)
                        slow++;
        }

        assert_int_equal(kdc_tracker_pending(w.t), 3); /* still waiting */
        rd_kafka_mock_partition_set_leader(env->mcluster, stuck, 0,
                                           MOCK_BROKER_ID);
        pthread_join(waiter, NULL);
        assert_int_equal(w.rc, 0);
        assert_int_equal(kdc_tracker_delivered(w.t), 3);
        assert_in_range(slow, 0, 3);
        kdc_tracker_destroy(w.t);
        rd_kafka_destroy(w.rk);
}

/* An application whose own dr_msg_cb confirms an audit record with
 * kdc_produce_confirmed() for the first of its own reports. */
struct auditing {
        const char *topic;
        int own_reports;
        int audit_rc;
};

static void audit_dr_msg_cb(rd_kafka_t *rk,
                            const rd_kafka_message_t *rkmessage,
                            void *conf_opaque) {
        struct auditing *a = conf_opaque;

        if (kdc_dr_msg_record(rk, rkmessage, NULL) == 0)
                return; /* libkdc's: the audit record itself */
        if (a->own_reports++ == 0)
                a->audit_rc = kdc_produce_confirmed(rk, a->topic, 0, "audit",
                                                    5, "v", 1, WAIT_MS, NULL);
}

static void a_confirmed_produce_inside_the_applications_callback_does_not_cut_its_flush_short(
    void **state) {
        enum { N = 5 };
        struct auditing a = {NULL, 0, -1};
        rd_kafka_resp_err_t err;
        char topic[64];
        rd_kafka_t *rk;

        a.topic = mock_env_topic(*state, "confirmed-nested", 1, topic);
        rk = mock_env_producer_with(*state, audit_dr_msg_cb, &a, NULL);
        mock_env_warm(rk, topic);
        /* The application's own messages (no libkdc opaque), reported in
         * one batch: the audit produce runs while it is being served. */
        for (int i = 0; i < N; i++)
                assert_int_equal(
                    rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic),
                                      RD_KAFKA_V_PARTITION(0),
                                      RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                      RD_KAFKA_V_VALUE("own", 3),
                                      RD_KAFKA_V_END),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
        /* The rd_kafka_yield() that ends libkdc's wait for the audit record
         * must not also end the application's flush around it. */
        err = rd_kafka_flush(rk, WAIT_MS);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(a.audit_rc, 0);
        assert_int_equal(a.own_reports, N);
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), N + 1);
        rd_kafka_destroy(rk);
}

static void a_report_without_error_but_not_persisted_is_not_a_confirmation(
    void **state) {
        static const char *const acks0[] = {"acks", "0", NULL};
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(*state, 1, acks0);

        mock_env_topic(*state, "confirmed-acks0", 1, topic);
        /* acks=0: the report says NO_ERROR with POSSIBLY_PERSISTED. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         KDC_ERR_DELIVERY);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(rk);
}

static void returns_kdc_err_conf_and_produces_nothing_without_kdc_dr_msg_cb(
    void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(*state, 0, NULL);

        mock_env_topic(*state, "confirmed-conf", 1, topic);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               WAIT_MS, &err),
                         KDC_ERR_CONF);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__NOT_CONFIGURED);
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), 0);
        rd_kafka_destroy(rk);
}

static void returns_kdc_err_invalid_for_null_or_mismatched_arguments(
    void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        char topic[64];
        rd_kafka_t *rk = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "confirmed-invalid", NULL);

        mock_env_topic(env, "confirmed-invalid", 1, topic);
        assert_int_equal(kdc_produce_confirmed(NULL, topic, 0, "k", 1, "v", 1,
                                               0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__INVALID_ARG);
        assert_int_equal(kdc_produce_confirmed(rk, NULL, 0, "k", 1, "v", 1, 0,
                                               &err),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_produce_confirmed(rk, "", 0, "k", 1, "v", 1, 0,
                                               &err),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, NULL, 1, "v", 1,
                                               0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, NULL, 5,
                                               0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, "k", 1, "v", 1,
                                               -2, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_produce_confirmed(consumer, topic, 0, "k", 1, "v",
                                               1, 0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__INVALID_ARG);
        /* delivery_err is optional, also on failure. */
        assert_int_equal(kdc_produce_confirmed(rk, topic, 0, NULL, 3, "v", 1,
                                               0, NULL),
                         KDC_ERR_INVALID);
        /* Nothing was produced by any of these calls. */
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), 0);
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(rk);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("confirmed produce returns 0 with delivery_err NO_ERROR "
                     "once the broker acked the message",
                     returns_0_with_no_error_once_the_broker_acked_the_message),
            SENTENCE("confirmed produce returns KDC_ERR_DELIVERY with the "
                     "broker's error code when the Produce request fails, "
                     "while rd_kafka_flush returns NO_ERROR",
                     returns_kdc_err_delivery_with_the_brokers_error_code_when_produce_fails),
            SENTENCE("confirmed produce returns KDC_ERR_PRODUCE with "
                     "rd_kafka_producev's error when librdkafka refuses the "
                     "message",
                     returns_kdc_err_produce_with_producev_error_when_librdkafka_refuses_the_message),
            SENTENCE("confirmed produce reports librdkafka's own "
                     "message.timeout.ms expiry as KDC_ERR_DELIVERY "
                     "__MSG_TIMED_OUT",
                     reports_a_local_message_timeout_as_a_delivery_failure),
            SENTENCE("confirmed produce returns KDC_ERR_TIMEOUT when no report "
                     "arrives in time, and the message may still be delivered "
                     "later",
                     returns_kdc_err_timeout_when_no_report_arrives_in_time_and_absorbs_the_late_report),
            SENTENCE("confirmed produce waits for its own report while tracker "
                     "messages share the producer",
                     waits_for_its_own_report_while_tracker_messages_share_the_producer),
            SENTENCE("confirmed produce and a tracker's wait send at once "
                     "instead of waiting out linger.ms",
                     waiting_does_not_wait_out_linger_ms),
            SENTENCE("confirmed produce returns promptly while another "
                     "thread waits on a tracker whose messages are stuck",
                     returns_promptly_while_another_thread_waits_on_a_tracker_whose_messages_are_stuck),
            SENTENCE("a confirmed produce inside the application's own "
                     "dr_msg_cb does not cut short the application's "
                     "rd_kafka_flush around it",
                     a_confirmed_produce_inside_the_applications_callback_does_not_cut_its_flush_short),
            SENTENCE("confirmed produce does not count a report without "
                     "error but not PERSISTED (acks=0) as a confirmation",
                     a_report_without_error_but_not_persisted_is_not_a_confirmation),
            SENTENCE("confirmed produce returns KDC_ERR_CONF and produces "
                     "nothing on a producer without kdc_dr_msg_cb",
                     returns_kdc_err_conf_and_produces_nothing_without_kdc_dr_msg_cb),
            SENTENCE("confirmed produce returns KDC_ERR_INVALID for NULL or "
                     "mismatched arguments and produces nothing",
                     returns_kdc_err_invalid_for_null_or_mismatched_arguments),
        };

        return cmocka_run_group_tests_name("kdc_produce_confirmed", tests,
                                           mock_env_setup, mock_env_teardown);
}
