#define _POSIX_C_SOURCE 200809L
/* Statistics (harness/libkdc/stats.c) against the librdkafka mock cluster:
 * each count is driven by a real event (an injected produce or commit
 * error, a retry, a DLQ routing, a second consumer joining) and asserted
 * exactly; the lag of a partition with N unconsumed messages is N; the JSON
 * document parses back (jansson) with the snapshot's values. The
 * OpenMetrics text is checked with a real parser by stats_openmetrics.py. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS MOCK_WAIT_MS

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

static kdc_stats_snapshot_t snapshot(kdc_stats_t *s) {
        kdc_stats_snapshot_t snap;

        assert_int_equal(kdc_stats_read(s, &snap), 0);
        return snap;
}

/* One message through the tracker, waited for; the wait's result. */
static int produce_one(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic) {
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1, "v", 1,
                                             NULL, WAIT_MS, NULL),
                         0);
        return kdc_tracker_wait(t, rk, WAIT_MS);
}

static void deliveries_are_counted_exactly_and_failures_by_error(void **state) {
        struct mock_env *env = *state;
        kdc_stats_snapshot_t snap;
        kdc_tracker_t *t;
        kdc_stats_t *s;
        rd_kafka_t *rk;
        char topic[64];

        rk = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "stats-produce", 1, topic);
        mock_env_warm(rk, topic);
        assert_int_equal(kdc_stats_new(&s, "stats-test"), 0);
        assert_int_equal(kdc_tracker_new(&t), 0);
        assert_int_equal(kdc_stats_attach_tracker(s, t), 0);
        assert_int_equal(kdc_stats_attach_tracker(s, t), 0); /* no-op */

        for (int i = 0; i < 5; i++)
                assert_int_equal(produce_one(t, rk, topic), 0);
        /* Two Produce requests refused (not retriable): two reports fail. */
        rd_kafka_mock_push_request_errors(env->mcluster, MOCK_APIKEY_PRODUCE, 2,
                                          RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE,
                                          RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_int_equal(produce_one(t, rk, topic), KDC_ERR_DELIVERY);
        assert_int_equal(produce_one(t, rk, topic), KDC_ERR_DELIVERY);
        (void)produce_one(t, rk, topic); /* delivered (the wait still
                                            reports the earlier failures) */
        assert_int_equal(kdc_tracker_pending(t), 0);
        assert_int_equal(mock_env_stored(rk, topic), 6);

        snap = snapshot(s);
        assert_int_equal(snap.produced, 8);
        assert_int_equal(snap.delivered, 6);
        assert_int_equal(snap.delivery_failed, 2);
        assert_int_equal(
            kdc_stats_delivery_failed(s, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE),
            2);
        assert_int_equal(
            kdc_stats_delivery_failed(s, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT), 0);
        assert_true(snap.ts_ms > 0);

        /* A destroyed tracker's counts stay. */
        kdc_tracker_destroy(t);
        snap = snapshot(s);
        assert_int_equal(snap.produced, 8);
        assert_int_equal(snap.delivered, 6);
        assert_int_equal(snap.delivery_failed, 2);

        /* Other statistics cannot take a tracker that counts into these. */
        {
                kdc_stats_t *other;

                assert_int_equal(kdc_tracker_new(&t), 0);
                assert_int_equal(kdc_stats_new(&other, NULL), 0);
                assert_int_equal(kdc_stats_attach_tracker(s, t), 0);
                assert_int_equal(kdc_stats_attach_tracker(other, t),
                                 KDC_ERR_INVALID);
                kdc_tracker_destroy(t);
                kdc_stats_destroy(other);
        }
        kdc_stats_destroy(s);
        rd_kafka_destroy(rk);
}

/* Assign partition 0 of topic through the assignment record, as a
 * rebalance callback would (a new epoch; rd_kafka_assign()). */
static void assign_through(kdc_assignment_t *a, rd_kafka_t *c,
                           const char *topic, rd_kafka_resp_err_t event) {
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(1);

        rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
        assert_int_equal(kdc_assignment_rebalance(a, c, event, parts), 0);
        rd_kafka_topic_partition_list_destroy(parts);
}

static void retries_dlq_routings_and_commits_are_counted_exactly(void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err;
        rd_kafka_message_t *m0, *m1, *again = NULL;
        kdc_stats_snapshot_t snap;
        kdc_assignment_t *a;
        kdc_retry_policy_t p;
        rd_kafka_t *producer, *c;
        kdc_retry_t *r;
        kdc_dlq_t *d;
        kdc_stats_t *s;
        uint64_t e0, e1;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "stats-retry", 1, topic);
        mock_env_fill(producer, topic, 1, 3);
        c = mock_env_consumer(env, "stats-retry", NULL);
        mock_env_warm(c, topic);
        assert_int_equal(kdc_stats_new(&s, "stats-retry"), 0);
        assert_int_equal(kdc_dlq_new(&d, producer, "stats-retry"), 0);
        assert_int_equal(kdc_retry_new(&r, d), 0);
        assert_int_equal(kdc_assignment_new(&a, kdc_retry_rebalance_hook, r),
                         0);
        assert_int_equal(kdc_retry_get_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
        p.max_attempts = 2;
        p.initial_ms = 50;
        p.max_interval_ms = 50;
        p.jitter = 0.0;
        p.on_exhausted = KDC_RETRY_EXHAUSTED_DLQ;
        p.dlq_timeout_ms = WAIT_MS;
        assert_int_equal(kdc_retry_set_policy(r, KDC_CLASS_TRANSIENT, &p), 0);
        assert_int_equal(kdc_stats_attach_dlq(s, d), 0);
        assert_int_equal(kdc_stats_attach_retry(s, r), 0);
        assert_int_equal(kdc_stats_attach_assignment(s, a), 0);
        assign_through(a, c, topic, RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS);

        /* Offset 0 fails, waits once, fails again: exhausted to the DLQ,
         * confirmed, then committed. */
        m0 = mock_env_next(c, 0);
        e0 = kdc_assignment_stamp(a, m0);
        assert_int_equal(kdc_retry_failed(r, c, m0, a, e0, KDC_CLASS_TRANSIENT,
                                          "downstream 503", NULL),
                         KDC_RETRY_WAIT);
        for (int i = 0; i < 200 && kdc_retry_next(r, &again, NULL) == 0; i++) {
                rd_kafka_message_t *other = rd_kafka_consumer_poll(c, 10);

                if (other)
                        rd_kafka_message_destroy(other);
        }
        assert_ptr_equal(again, m0);
        assert_int_equal(kdc_retry_failed(r, c, m0, a, e0, KDC_CLASS_TRANSIENT,
                                          "downstream 503", &err),
                         KDC_RETRY_COMMIT);
        assert_int_equal(kdc_commit_message(c, m0, a, e0, NULL), 0);
        assert_int_equal(mock_env_committed(c, topic, 0), 1);

        /* Offset 1: a DLQ routing refused by the broker, then confirmed. */
        m1 = mock_env_next(c, 0);
        e1 = kdc_assignment_stamp(a, m1);
        rd_kafka_mock_push_request_errors(env->mcluster, MOCK_APIKEY_PRODUCE, 1,
                                          RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        assert_int_equal(
            kdc_dlq_route(d, m1, KDC_CLASS_POISON, "bad", WAIT_MS, &err),
            KDC_ERR_DELIVERY);
        assert_int_equal(
            kdc_dlq_route(d, m1, KDC_CLASS_POISON, "bad", WAIT_MS, &err), 0);

        /* A commit the broker refuses, one of an ended epoch, one that
         * succeeds. */
        rd_kafka_mock_push_request_errors(env->mcluster,
                                          MOCK_APIKEY_OFFSET_COMMIT, 1,
                                          RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(kdc_commit_message(c, m1, a, e1, &err),
                         KDC_ERR_COMMIT);
        assert_int_equal(kdc_commit_message(c, m1, a, e1 + 1000, NULL),
                         KDC_ERR_STALE);
        assert_int_equal(kdc_commit_message(c, m1, a, e1, NULL), 0);
        assert_int_equal(mock_env_committed(c, topic, 0), 2);

        /* What the service hands over: a consumer error event. */
        assert_int_equal(
            kdc_stats_consumer_error(s, RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED),
            0);
        assert_int_equal(
            kdc_stats_consumer_error(s, RD_KAFKA_RESP_ERR_NO_ERROR), 0);
        assign_through(a, c, topic, RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS);

        snap = snapshot(s);
        assert_int_equal(snap.retries, 1);
        assert_int_equal(snap.retries_exhausted, 1);
        assert_int_equal(snap.dlq_routed, 2);
        assert_int_equal(snap.dlq_failed, 1);
        assert_int_equal(snap.commits, 2);
        assert_int_equal(snap.commits_failed, 1);
        assert_int_equal(
            kdc_stats_commit_failed(s, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION),
            1);
        assert_int_equal(snap.stale_drops, 1);
        assert_int_equal(snap.rebalances, 1);
        assert_int_equal(snap.revocations, 1);
        assert_int_equal(snap.lost, 0);
        assert_int_equal(snap.consumer_errors, 1);
        assert_int_equal(snap.max_poll_exceeded, 1);
        /* No tracker attached: the DLQ's produces are not "produced". */
        assert_int_equal(snap.produced, 0);
        assert_int_equal(snap.delivered, 0);
        assert_int_equal(snap.txn_aborts, 0);
        assert_int_equal(snap.lag, -1);

        rd_kafka_message_destroy(m0);
        rd_kafka_message_destroy(m1);
        kdc_retry_destroy(r);
        mock_env_close(c);
        kdc_assignment_destroy(a);
        kdc_dlq_destroy(d);
        kdc_stats_destroy(s);
        rd_kafka_destroy(producer);
}

static json_int_t json_int_at(json_t *o, const char *key) {
        json_t *v = json_object_get(o, key);

        assert_non_null(v);
        assert_true(json_is_integer(v));
        return json_integer_value(v);
}

/* Every snapshot field, by its name in the JSON document. */
static void assert_json_matches(json_t *doc, const kdc_stats_snapshot_t *s) {
#define M(field) assert_int_equal(json_int_at(doc, #field), s->field)
        M(produced);
        M(delivered);
        M(delivery_failed);
        M(dlq_routed);
        M(dlq_failed);
        M(retries);
        M(retries_exhausted);
        M(commits);
        M(commits_failed);
        M(rebalances);
        M(revocations);
        M(lost);
        M(stale_drops);
        M(txn_aborts);
        M(txn_rewinds);
        M(consumer_errors);
        M(max_poll_exceeded);
        M(lag);
        M(lag_peak);
        M(lag_partitions);
#undef M
}

static void the_lag_of_n_unconsumed_messages_is_n_and_the_json_says_so(
    void **state) {
        struct mock_env *env = *state;
        kdc_stats_snapshot_t snap;
        json_t *doc, *part;
        json_error_t jerr;
        rd_kafka_t *producer, *c;
        kdc_stats_t *s;
        char topic[64], *text;

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "stats-lag", 1, topic);
        mock_env_fill(producer, topic, 1, 10);
        c = mock_env_consumer(env, "stats-lag", NULL);
        mock_env_assign(c, topic, 1);
        assert_int_equal(kdc_stats_new(&s, "lag-service"), 0);

        /* 3 of 10 consumed: 7 unconsumed, from the brokers' answer. */
        for (int i = 0; i < 3; i++)
                rd_kafka_message_destroy(mock_env_next(c, 0));
        assert_int_equal(kdc_stats_update_lag(s, c, WAIT_MS), 1);
        assert_int_equal(kdc_stats_lag(s, topic, 0), 7);
        assert_int_equal(kdc_stats_lag(s, topic, 1), KDC_ERR_NOENT);
        snap = snapshot(s);
        assert_int_equal(snap.lag, 7);
        assert_int_equal(snap.lag_peak, 7);
        assert_int_equal(snap.lag_partitions, 1);

        /* 2 more: 5 left, from librdkafka's cached watermark (no broker
         * call); the peak stays. */
        for (int i = 0; i < 2; i++)
                rd_kafka_message_destroy(mock_env_next(c, 0));
        assert_int_equal(kdc_stats_update_lag(s, c, 0), 1);
        assert_int_equal(kdc_stats_lag(s, topic, 0), 5);
        snap = snapshot(s);
        assert_int_equal(snap.lag, 5);
        assert_int_equal(snap.lag_peak, 7);

        /* The JSON document, parsed back. */
        assert_int_equal(kdc_stats_json(s, &text), 0);
        doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        assert_string_equal(json_string_value(json_object_get(doc, "name")),
                            "lag-service");
        assert_string_equal(json_string_value(json_object_get(doc, "type")),
                            "kdc");
        assert_true(json_int_at(doc, "ts") > 0);
        assert_true(json_int_at(doc, "time") >= snap.ts_ms / 1000);
        assert_json_matches(doc, &snap);
        part = json_object_get(
            json_object_get(
                json_object_get(json_object_get(doc, "topics"), topic),
                "partitions"),
            "0");
        assert_non_null(part);
        assert_int_equal(json_int_at(part, "partition"), 0);
        assert_int_equal(json_int_at(part, "hi_offset"), 10);
        assert_int_equal(json_int_at(part, "app_offset"), 5);
        assert_int_equal(json_int_at(part, "consumer_lag"), 5);
        json_decref(doc);
        free(text);

        /* Before anything is polled the lag counts from the committed
         * offset: offset 5 committed (next 6), a second consumer of the
         * group assigned the partition (from the committed offset), asked
         * at once: no position, committed 6, lag 4. */
        {
                rd_kafka_message_t *m = mock_env_next(c, 0);
                rd_kafka_topic_partition_list_t *parts =
                    rd_kafka_topic_partition_list_new(1);
                kdc_stats_t *s2;
                rd_kafka_t *c2;

                assert_int_equal(m->offset, 5);
                assert_int_equal(kdc_commit_message(c, m, NULL, 0, NULL), 0);
                rd_kafka_message_destroy(m);
                c2 = mock_env_consumer(env, "stats-lag", NULL);
                mock_env_warm(c2, topic);
                rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
                    RD_KAFKA_OFFSET_INVALID; /* the committed offset */
                assert_int_equal(rd_kafka_assign(c2, parts),
                                 RD_KAFKA_RESP_ERR_NO_ERROR);
                rd_kafka_topic_partition_list_destroy(parts);
                assert_int_equal(kdc_stats_new(&s2, NULL), 0);
                assert_int_equal(kdc_stats_update_lag(s2, c2, WAIT_MS), 1);
                assert_int_equal(kdc_stats_lag(s2, topic, 0), 4);
                assert_int_equal(kdc_stats_json(s2, &text), 0);
                doc = json_loads(text, 0, &jerr);
                assert_non_null(doc);
                part = json_object_get(
                    json_object_get(
                        json_object_get(json_object_get(doc, "topics"), topic),
                        "partitions"),
                    "0");
                assert_int_equal(json_int_at(part, "app_offset"), -1);
                assert_int_equal(json_int_at(part, "committed_offset"), 6);
                assert_int_equal(json_int_at(part, "hi_offset"), 10);
                json_decref(doc);
                free(text);
                kdc_stats_destroy(s2);
                mock_env_close(c2);
        }

        /* Unassigned: forgotten. */
        assert_int_equal(rd_kafka_assign(c, NULL), RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(kdc_stats_update_lag(s, c, 0), 0);
        assert_int_equal(kdc_stats_lag(s, topic, 0), KDC_ERR_NOENT);
        assert_int_equal(kdc_stats_update_lag(s, producer, 0), KDC_ERR_INVALID);

        mock_env_close(c);
        kdc_stats_destroy(s);
        rd_kafka_destroy(producer);
}

/* Group timings for the 2.0.2 mock (as test_assignment.c). */
static const char *const eager_conf[] = {"session.timeout.ms",
                                         "3300",
                                         "heartbeat.interval.ms",
                                         "100",
                                         "partition.assignment.strategy",
                                         "range",
                                         NULL};

/* What the rebalance hook saw: the count the statistics must equal. */
struct events {
        int assigns, revokes, lost;
};

static void hook(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                 rd_kafka_topic_partition_list_t *parts, int lost,
                 void *opaque) {
        struct events *ev = opaque;

        (void)rk;
        (void)parts;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS)
                ev->assigns++;
        else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS)
                ev->revokes++;
        if (lost)
                ev->lost++;
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

static int assigned(kdc_assignment_t *a, const char *topic) {
        return (kdc_assignment_epoch(a, topic, 0) != 0) +
               (kdc_assignment_epoch(a, topic, 1) != 0);
}

static void poll_drop(rd_kafka_t *c, int ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, ms);

        if (m)
                rd_kafka_message_destroy(m);
}

static void a_second_consumer_joining_counts_a_revocation_and_assignments(
    void **state) {
        struct mock_env *env = *state;
        struct events ev = {0};
        kdc_stats_snapshot_t snap;
        kdc_assignment_t *a1, *a2;
        rd_kafka_t *producer, *c1, *c2;
        kdc_stats_t *s;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "stats-rebalance", 2, topic);
        mock_env_fill(producer, topic, 2, 1);
        assert_int_equal(kdc_stats_new(&s, NULL), 0);
        assert_int_equal(kdc_assignment_new(&a1, hook, &ev), 0);
        assert_int_equal(kdc_assignment_new(&a2, NULL, NULL), 0);
        assert_int_equal(kdc_stats_attach_assignment(s, a1), 0);
        c1 =
            mock_env_consumer_with(env, "stats-rebalance",
                                   kdc_assignment_rebalance_cb, a1, eager_conf);
        c2 =
            mock_env_consumer_with(env, "stats-rebalance",
                                   kdc_assignment_rebalance_cb, a2, eager_conf);

        subscribe(c1, topic);
        for (int i = 0; i < 600 && assigned(a1, topic) != 2; i++)
                poll_drop(c1, 25);
        assert_int_equal(assigned(a1, topic), 2);
        snap = snapshot(s);
        assert_int_equal(snap.rebalances, 1);
        assert_int_equal(snap.revocations, 0);

        subscribe(c2, topic);
        for (int i = 0;
             i < 600 && (assigned(a1, topic) != 1 || assigned(a2, topic) != 1);
             i++) {
                poll_drop(c1, 25);
                poll_drop(c2, 25);
        }
        assert_int_equal(assigned(a1, topic), 1);
        assert_int_equal(assigned(a2, topic), 1);

        /* Eager: everything revoked, then one partition assigned again. */
        snap = snapshot(s);
        assert_true(ev.revokes >= 1);
        assert_int_equal(snap.rebalances, ev.assigns);
        assert_int_equal(snap.revocations, ev.revokes);
        assert_int_equal(snap.lost, ev.lost);
        assert_int_equal(snap.lost, 0);
        assert_int_equal(snap.rebalances, snap.revocations + 1);

        mock_env_close(c2);
        mock_env_close(c1);
        kdc_assignment_destroy(a2);
        kdc_assignment_destroy(a1);
        kdc_stats_destroy(s);
        rd_kafka_destroy(producer);
}

static void bad_arguments_are_refused(void **state) {
        kdc_stats_snapshot_t snap;
        kdc_stats_t *s = (void *)1;
        char *text = (void *)1;

        (void)state;
        assert_int_equal(kdc_stats_new(NULL, "x"), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_new(&s, NULL), 0);
        assert_int_equal(kdc_stats_read(NULL, &snap), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_read(s, NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_json(NULL, &text), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_attach_tracker(s, NULL), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_consumer_error(NULL, 1), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_lag(s, NULL, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_stats_write_json_file(s, "/nonexistent/dir/x"),
                         KDC_ERR_IO);
        assert_int_equal(kdc_stats_write_openmetrics(s, NULL), KDC_ERR_INVALID);
        kdc_stats_destroy(s);
        kdc_stats_destroy(NULL);
}

#define SENTENCE(text, fn)                                                     \
        { text, fn, NULL, heal, NULL }

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("produced, delivered and failed deliveries (by error) "
                     "are counted exactly; a destroyed tracker's counts stay",
                     deliveries_are_counted_exactly_and_failures_by_error),
            SENTENCE("a retry, its exhaustion to the DLQ, a refused and a "
                     "confirmed DLQ routing, a refused, a stale and a "
                     "successful commit, an assignment and a revocation are "
                     "counted exactly",
                     retries_dlq_routings_and_commits_are_counted_exactly),
            SENTENCE(
                "the lag of a partition with N unconsumed messages is N "
                "(queried, cached, and from the committed offset before "
                "anything is polled); the JSON document parses back "
                "with the snapshot's values and the partition tree",
                the_lag_of_n_unconsumed_messages_is_n_and_the_json_says_so),
            SENTENCE(
                "a second consumer joining counts the revocation and "
                "the assignments the rebalance callback served",
                a_second_consumer_joining_counts_a_revocation_and_assignments),
            SENTENCE("bad arguments are refused with KDC_ERR_INVALID, an "
                     "unwritable file with KDC_ERR_IO",
                     bad_arguments_are_refused),
        };

        return cmocka_run_group_tests_name("statistics", tests, mock_env_setup,
                                           mock_env_teardown);
}
