/* kdc_testkit_run_loop(): a service loop run in threads of the test process
 * against a scenario. A loop that halts on a failed output loses nothing; the
 * same loop committing on failure loses the events whose output was refused,
 * and the verdict names them; a redeployed loop is stopped and started
 * again; on an existing cluster a loop gets topics and a group of its own. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>
#include <kdc/kdc.h>
#include <kdc/testkit.h>
#include <librdkafka/rdkafka_mock.h>

#define WAIT_MS 30000

static void quiet(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        (void)level;
        (void)fac;
        (void)buf;
}

static rd_kafka_conf_t *conf_for(const kdc_testkit_env_t *env) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256], num[16];

        rd_kafka_conf_set_log_cb(conf, quiet);
        rd_kafka_conf_set(conf, "bootstrap.servers", env->bootstrap_servers, err, sizeof err);
        if (env->message_timeout_ms) {
                snprintf(num, sizeof num, "%d", env->message_timeout_ms);
                rd_kafka_conf_set(conf, "message.timeout.ms", num, err, sizeof err);
        }
        return conf;
}

/* One event at a time: output (or DLQ) confirmed, then commit the message;
 * `commit_on_failure` makes it commit when the output failed too. */
static int loop(const kdc_testkit_env_t *env, int commit_on_failure) {
        rd_kafka_conf_t *pconf = conf_for(env), *cconf = conf_for(env);
        char err[256], num[16];
        kdc_assignment_t *assignment = NULL;
        kdc_dlq_t *dlq = NULL;
        int status = 0;

        rd_kafka_conf_set(pconf, "linger.ms", "0", err, sizeof err);
        rd_kafka_conf_set_dr_msg_cb(pconf, kdc_dr_msg_cb);
        rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof err);
        kdc_assignment_new(&assignment, NULL, NULL);
        rd_kafka_conf_set(cconf, "group.id", env->group, err, sizeof err);
        rd_kafka_conf_set(cconf, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set(cconf, "auto.offset.reset", "earliest", err, sizeof err);
        snprintf(num, sizeof num, "%d", env->session_timeout_ms);
        rd_kafka_conf_set(cconf, "session.timeout.ms", num, err, sizeof err);
        snprintf(num, sizeof num, "%d", env->heartbeat_interval_ms);
        rd_kafka_conf_set(cconf, "heartbeat.interval.ms", num, err, sizeof err);
        rd_kafka_conf_set_rebalance_cb(cconf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(cconf, assignment);
        rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, err, sizeof err);
        assert_non_null(producer);
        assert_non_null(consumer);
        assert_int_equal(kdc_dlq_new(&dlq, producer, env->group), 0);
        assert_int_equal(kdc_dlq_set_topic(dlq, env->dlq_topic), 0);

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, env->input_topic, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        while (!kdc_testkit_stopping(env) && !status) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
                int rc;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                uint64_t epoch = kdc_assignment_stamp(assignment, m);
                if (m->len > 7 && memcmp(m->payload, "amount=", 7) == 0 &&
                    strspn((const char *)m->payload + 7, "0123456789") == m->len - 7 &&
                    ((const char *)m->payload)[7] != '0') {
                        rd_kafka_headers_t *in = NULL, *out = NULL;
                        const void *id;
                        size_t idlen;
                        if (rd_kafka_message_headers(m, &in) == 0 &&
                            rd_kafka_header_get_last(in, KDC_TESTKIT_EVENT_ID_HEADER, &id,
                                                     &idlen) == 0) {
                                out = rd_kafka_headers_new(1);
                                rd_kafka_header_add(out, KDC_TESTKIT_EVENT_ID_HEADER, -1, id,
                                                    (ssize_t)idlen);
                        }
                        kdc_tracker_t *t;
                        kdc_tracker_new(&t);
                        rc = kdc_tracker_produce(t, producer, env->output_topic,
                                                 RD_KAFKA_PARTITION_UA, m->key, m->key_len,
                                                 m->payload, m->len, out, WAIT_MS, NULL);
                        if (rc != 0)
                                rd_kafka_headers_destroy(out);
                        else
                                rc = kdc_tracker_wait(t, producer, WAIT_MS);
                        kdc_tracker_destroy(t);
                } else {
                        rc = kdc_dlq_route(dlq, m, KDC_CLASS_POISON, "malformed", WAIT_MS, NULL);
                }
                if (rc == 0 || commit_on_failure)
                        kdc_commit_message(consumer, m, assignment, epoch, NULL);
                else
                        status = 1; /* halt: the offset stays; the testkit restarts us */
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_flush(producer, WAIT_MS);
        kdc_dlq_destroy(dlq);
        rd_kafka_destroy(producer);
        kdc_assignment_destroy(assignment);
        return status;
}

static int halting_loop(const kdc_testkit_env_t *env, void *opaque) {
        (void)opaque;
        return loop(env, 0);
}

/* A service that keeps its settings by value: kdc_testkit_stopping() answers
 * for the copy as for the env it was given. */
static int committing_loop(const kdc_testkit_env_t *env, void *opaque) {
        kdc_testkit_env_t copy = *env;

        (void)opaque;
        return loop(&copy, 1);
}

static void options(kdc_testkit_options_t *o) {
        kdc_testkit_options_init(o);
        o->events = 300;
        o->rate = 150;
        o->seed = 3;
        o->idle_ms = 10000;
        o->timeout_ms = 120000;
}

static void a_loop_that_halts_on_failure_loses_nothing(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = NULL;

        options(&o);
        assert_int_equal(kdc_testkit_run_loop(&o, "produce-topic-authorization-failed",
                                              halting_loop, NULL, &r),
                         0);
        assert_non_null(r);
        assert_string_equal(r->scenario, "produce-topic-authorization-failed");
        assert_int_equal(r->events, 300);
        assert_int_equal(r->lost, 0);
        assert_int_equal(r->unprocessed, 0);
        assert_int_equal(r->committed, 300);
        assert_int_equal(r->processed, 300);
        assert_true(r->valid);
        assert_null(r->failure);
        assert_int_equal(r->stuck, 0);
        assert_true(r->exits >= 1); /* it halted on the refused output, and was restarted */
        assert_int_equal(r->faults, 1);
        assert_non_null(kdc_testkit_result_fault(r, 0));
        assert_null(kdc_testkit_result_event(r, KDC_TESTKIT_LOST, 0));
        for (int p = 0; p < 4; p++)
                assert_int_equal(kdc_testkit_result_committed(r, p), 75);
        /* kdc/error.h's rule: a bad argument is a negative KDC_ERR_* code */
        assert_int_equal(kdc_testkit_result_committed(r, 4), KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_result_committed(r, -1), KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_result_committed(NULL, 0), KDC_ERR_INVALID);
        kdc_testkit_result_destroy(r);
}

static void a_loop_that_commits_on_failure_loses_the_refused_events(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = NULL;
        char *text = NULL;
        size_t len = 0;

        options(&o);
        assert_int_equal(kdc_testkit_run_loop(&o, "produce-topic-authorization-failed",
                                              committing_loop, NULL, &r),
                         0);
        assert_non_null(r);
        assert_false(r->valid);
        assert_string_equal(r->failure, "events lost");
        assert_int_equal(r->stuck, 0); /* it saw the stop through its copy of env */
        assert_true(r->lost > 0);
        assert_int_equal(r->committed, 300);
        assert_int_equal(r->lost, r->events - r->processed);
        for (int64_t i = 0; i < r->lost; i++)
                assert_non_null(kdc_testkit_result_event(r, KDC_TESTKIT_LOST, (size_t)i));
        assert_null(kdc_testkit_result_event(r, KDC_TESTKIT_LOST, (size_t)r->lost));

        /* The JSON report says the same. */
        FILE *f = open_memstream(&text, &len);
        const kdc_testkit_result_t *rs[] = {r};
        assert_int_equal(kdc_testkit_results_print(rs, 1, f, KDC_TESTKIT_JSON), 0);
        fclose(f);
        json_error_t jerr;
        json_t *doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        assert_true(json_is_false(json_object_get(doc, "valid")));
        json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
        assert_int_equal(json_integer_value(json_object_get(run, "lost")), r->lost);
        assert_int_equal(json_array_size(json_object_get(run, "lost_events")), (size_t)r->lost);
        assert_string_equal(json_string_value(json_array_get(json_object_get(run, "lost_events"), 0)),
                            kdc_testkit_result_event(r, KDC_TESTKIT_LOST, 0));
        json_decref(doc);
        free(text);
        kdc_testkit_result_destroy(r);
}

/* sigterm-redeploy with a loop: told to stop, it returns, and a new thread
 * starts it again; committing each message before the next, it redoes
 * nothing. */
static void a_redeployed_loop_is_stopped_started_again_and_redoes_nothing(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = NULL;

        options(&o);
        assert_int_equal(kdc_testkit_run_loop(&o, "sigterm-redeploy", halting_loop, NULL, &r), 0);
        assert_non_null(r);
        assert_int_equal(r->faults, 1);
        assert_int_equal(r->starts, 2);
        assert_int_equal(r->exits, 0); /* a stop asked for is no exit */
        assert_int_equal(r->stuck, 0);
        assert_int_equal(r->lost, 0);
        assert_int_equal(r->duplicated, 0);
        assert_int_equal(r->unprocessed, 0);
        assert_true(r->valid);
        kdc_testkit_result_destroy(r);
}

/* The names a loop was given (copied by the loop's thread, read after the run). */
struct given {
        char input[512], output[512], dlq[512], group[512], bootstrap[512];
};

static int recording_loop(const kdc_testkit_env_t *env, void *opaque) {
        struct given *g = opaque;

        snprintf(g->input, sizeof g->input, "%s", env->input_topic);
        snprintf(g->output, sizeof g->output, "%s", env->output_topic);
        snprintf(g->dlq, sizeof g->dlq, "%s", env->dlq_topic);
        snprintf(g->group, sizeof g->group, "%s", env->group);
        snprintf(g->bootstrap, sizeof g->bootstrap, "%s", env->bootstrap_servers);
        return loop(env, 0);
}

/* options.bootstrap_servers: a mock cluster the test owns stands for an
 * existing one; the run gives the loop topics and a group of its own there
 * (the defaults, suffixed), and counts as on its own mock. */
static void a_loop_on_an_existing_cluster_gets_topics_and_a_group_of_its_own(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = NULL;
        struct given g = {0};
        char err[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        rd_kafka_conf_set_log_cb(conf, quiet);
        rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        assert_non_null(host);
        rd_kafka_mock_cluster_t *mcluster = rd_kafka_mock_cluster_new(host, 3);
        assert_non_null(mcluster);

        options(&o);
        o.bootstrap_servers = rd_kafka_mock_cluster_bootstraps(mcluster);
        assert_int_equal(kdc_testkit_run_loop(&o, "baseline", recording_loop, &g, &r), 0);
        assert_non_null(r);
        assert_string_equal(g.bootstrap, o.bootstrap_servers);
        assert_true(!strncmp(g.input, "kdc.input-", 10) && strlen(g.input) > 20);
        assert_true(!strncmp(g.output, "kdc.output-", 11) && !strcmp(g.output + 11, g.input + 10));
        assert_true(!strncmp(g.dlq, "kdc.dlq-", 8) && !strcmp(g.dlq + 8, g.input + 10));
        assert_true(!strncmp(g.group, "kdc-service-", 12) && !strcmp(g.group + 12, g.input + 10));
        assert_int_equal(r->events, 300);
        assert_int_equal(r->committed, 300);
        assert_int_equal(r->processed + r->dead_lettered, 300);
        assert_int_equal(r->lost, 0);
        assert_true(r->valid);
        kdc_testkit_result_destroy(r);
        rd_kafka_mock_cluster_destroy(mcluster);
        rd_kafka_destroy(host);
}

static void loops_cannot_run_scenarios_that_signal_processes(void **state) {
        (void)state;
        kdc_testkit_result_t *r = (kdc_testkit_result_t *)1;

        assert_int_equal(kdc_testkit_run_loop(NULL, "sigkill-restart", halting_loop, NULL, &r),
                         KDC_ERR_INVALID);
        assert_null(r);
        assert_int_equal(kdc_testkit_run_loop(NULL, "slow-processing", halting_loop, NULL, &r),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_run_loop(NULL, "no-such-scenario", halting_loop, NULL, &r),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_run_loop(NULL, "baseline", NULL, NULL, &r), KDC_ERR_INVALID);
        kdc_testkit_options_t o;
        kdc_testkit_options_init(&o);
        o.output_topic = o.input_topic; /* the service would read its own outputs */
        assert_int_equal(kdc_testkit_run_loop(&o, "baseline", halting_loop, NULL, &r),
                         KDC_ERR_INVALID);
        kdc_testkit_options_init(&o);
        o.events = 0;
        assert_int_equal(kdc_testkit_run_loop(&o, "baseline", halting_loop, NULL, &r),
                         KDC_ERR_INVALID);
}

static void an_env_no_loop_was_given_is_told_to_stop(void **state) {
        (void)state;
        kdc_testkit_env_t env;

        memset(&env, 0, sizeof env);
        env.bootstrap_servers = "127.0.0.1:9092";
        env.instance = 1;
        assert_int_equal(kdc_testkit_stopping(&env), 1);
        assert_int_equal(kdc_testkit_stopping(NULL), 1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(loops_cannot_run_scenarios_that_signal_processes),
            cmocka_unit_test(an_env_no_loop_was_given_is_told_to_stop),
            cmocka_unit_test(a_loop_that_halts_on_failure_loses_nothing),
            cmocka_unit_test(a_loop_that_commits_on_failure_loses_the_refused_events),
            cmocka_unit_test(a_redeployed_loop_is_stopped_started_again_and_redoes_nothing),
            cmocka_unit_test(a_loop_on_an_existing_cluster_gets_topics_and_a_group_of_its_own),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
