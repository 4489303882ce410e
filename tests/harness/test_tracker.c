/* DeliveryTracker (harness/tracker.c) against the librdkafka mock cluster.
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

/* Produce n messages "key-i"/"value-i" through the tracker, each must be
 * enqueued. */
static void produce_n(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                      int n) {
        rd_kafka_resp_err_t err;
        char key[32], value[32];

        for (int i = 0; i < n; i++) {
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

static void wait_reports_delivery_failure_while_flush_returned_no_error(
    void **state) {
        /* After a TOPIC_AUTHORIZATION_FAILED response librdkafka refuses
         * further producev() calls to the topic, so all messages must be
         * enqueued before the first Produce request goes out: linger.ms
         * holds the batch far longer than enqueueing 20 messages takes. */
        static const char *const hold_batch[] = {"linger.ms", "500", NULL};
        struct mock_env *env = *state;
        const int delivered_first = 10, affected = 20;
        rd_kafka_resp_err_t errs[20];
        char topic[64];
        kdc_tracker_t *t;
        rd_kafka_t *rk = mock_env_producer(env, 1, hold_batch);

        mock_env_topic(env, "tracker-authz", 1, topic);
        assert_int_equal(kdc_tracker_new(&t), 0);

        /* A confirmed first part of the batch. */
        produce_n(t, rk, topic, delivered_first);
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), 0);

        /* Every Produce request from now on fails with a non-retriable
         * broker error: one error per message covers any batching. */
        for (int i = 0; i < affected; i++)
                errs[i] = RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED;
        rd_kafka_mock_push_request_errors_array(
            env->mcluster, MOCK_APIKEY_PRODUCE, (size_t)affected, errs);
        produce_n(t, rk, topic, affected);

        /* The point of kdc: flush() says all is well... */
        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        /* ...while the reports flush() served say otherwise. */
        assert_int_equal(kdc_tracker_wait(t, rk, WAIT_MS), KDC_ERR_DELIVERY);
        assert_counts(t, 0, delivered_first, affected);
        assert_int_equal(kdc_tracker_first_error(t),
                         RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED);
        assert_int_equal(mock_env_stored(rk, topic), delivered_first);

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
        /* Released now; the last report frees it (checked by ASan builds). */
        kdc_tracker_destroy(t);

        assert_int_equal(rd_kafka_flush(rk, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(rd_kafka_outq_len(rk), 0);
        assert_int_equal(mock_env_stored(rk, topic), n);
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
            SENTENCE("tracker wait returns KDC_ERR_DELIVERY with every "
                     "affected message counted failed while rd_kafka_flush "
                     "returned NO_ERROR",
                     wait_reports_delivery_failure_while_flush_returned_no_error),
            SENTENCE("tracker wait returns KDC_ERR_TIMEOUT and keeps the "
                     "messages pending while no broker answers",
                     wait_times_out_and_keeps_messages_pending_while_no_broker_answers),
            SENTENCE("tracker produce polls through a full local queue until "
                     "every message is enqueued",
                     produce_polls_through_a_full_local_queue_until_every_message_is_enqueued),
            SENTENCE("tracker produce returns KDC_ERR_QUEUE_FULL at its "
                     "deadline and does not count the refused message",
                     produce_returns_queue_full_at_its_deadline_and_does_not_count_the_refused_message),
            SENTENCE("tracker produce returns KDC_ERR_PRODUCE and does not "
                     "count a message librdkafka refused",
                     produce_returns_kdc_err_produce_and_does_not_count_a_refused_message),
            SENTENCE("reports served by another polling thread are each "
                     "counted once",
                     reports_served_by_another_polling_thread_are_each_counted_once),
            SENTENCE("two trackers on one producer count only their own "
                     "messages",
                     two_trackers_on_one_producer_count_only_their_own_messages),
            SENTENCE("reset starts a new batch only once every report is in",
                     reset_starts_a_new_batch_only_once_every_report_is_in),
            SENTENCE("a tracker destroyed with messages in flight still lets "
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
