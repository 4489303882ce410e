#define _POSIX_C_SOURCE 200809L
/* For stats_openmetrics.py: on the mock cluster, produce 5 delivered
 * messages and 1 refused one through a tracker, refuse a commit, count two
 * _MAX_POLL_EXCEEDED and one UNKNOWN_MEMBER_ID consumer errors, leave 4 of
 * 6 messages unconsumed; then write the statistics as OpenMetrics to argv[1]
 * and as JSON to argv[2], from the same counts.
 *
 *   stats_openmetrics_dump OUT.om OUT.json */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

static const char *om_path, *json_path;

static void produce_one(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic) {
        assert_int_equal(kdc_tracker_produce(t, rk, topic, 0, "k", 1, "v", 1,
                                             NULL, MOCK_WAIT_MS, NULL),
                         0);
        (void)kdc_tracker_wait(t, rk, MOCK_WAIT_MS);
}

static void write_both(void **state) {
        struct mock_env *env = *state;
        rd_kafka_topic_partition_list_t *parts;
        rd_kafka_message_t *m;
        kdc_assignment_t *a;
        rd_kafka_t *rk, *c;
        kdc_tracker_t *t;
        kdc_stats_t *s;
        char topic[64];
        FILE *fp;

        rk = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "stats.om-topic_1", 1, topic);
        mock_env_warm(rk, topic);
        assert_int_equal(kdc_stats_new(&s, "openmetrics-dump"), 0);
        assert_int_equal(kdc_tracker_new(&t), 0);
        assert_int_equal(kdc_stats_attach_tracker(s, t), 0);
        for (int i = 0; i < 5; i++)
                produce_one(t, rk, topic);
        rd_kafka_mock_push_request_errors(env->mcluster, MOCK_APIKEY_PRODUCE, 1,
                                          RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE);
        produce_one(t, rk, topic);
        mock_env_fill(rk, topic, 1, 1); /* not through the tracker */
        assert_int_equal(kdc_tracker_pending(t), 0);

        c = mock_env_consumer(env, "stats-om", NULL);
        mock_env_warm(c, topic);
        assert_int_equal(kdc_assignment_new(&a, NULL, NULL), 0);
        assert_int_equal(kdc_stats_attach_assignment(s, a), 0);
        parts = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
        assert_int_equal(kdc_assignment_rebalance(
                             a, c, RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS, parts),
                         0);
        rd_kafka_topic_partition_list_destroy(parts);
        m = mock_env_next(c, 0);
        rd_kafka_message_destroy(mock_env_next(c, 0));
        rd_kafka_mock_push_request_errors(env->mcluster,
                                          MOCK_APIKEY_OFFSET_COMMIT, 1,
                                          RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(
            kdc_commit_message(c, m, a, kdc_assignment_stamp(a, m), NULL),
            KDC_ERR_COMMIT);
        rd_kafka_message_destroy(m);
        kdc_stats_consumer_error(s, RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED);
        kdc_stats_consumer_error(s, RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED);
        kdc_stats_consumer_error(s, RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
        /* 6 stored, 2 consumed. */
        assert_int_equal(kdc_stats_update_lag(s, c, MOCK_WAIT_MS), 1);
        assert_int_equal(kdc_stats_lag(s, topic, 0), 4);

        fp = fopen(om_path, "w");
        assert_non_null(fp);
        assert_int_equal(kdc_stats_write_openmetrics(s, fp), 0);
        assert_int_equal(fclose(fp), 0);
        assert_int_equal(kdc_stats_write_json_file(s, json_path), 0);

        mock_env_close(c);
        kdc_assignment_destroy(a);
        kdc_tracker_destroy(t);
        kdc_stats_destroy(s);
        rd_kafka_destroy(rk);
}

int main(int argc, char **argv) {
        const struct CMUnitTest tests[] = {cmocka_unit_test(write_both)};

        if (argc != 3) {
                fprintf(stderr, "usage: %s OUT.om OUT.json\n", argv[0]);
                return 2;
        }
        om_path = argv[1];
        json_path = argv[2];
        return cmocka_run_group_tests_name("statistics dump", tests,
                                           mock_env_setup, mock_env_teardown);
}
