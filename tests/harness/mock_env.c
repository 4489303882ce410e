#include "mock_env.h"

#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <kdc/kdc.h>

/* Broker-down tests make librdkafka report connection errors; they are
 * expected, so keep test output to what the tests assert. */
static void quiet_error_cb(rd_kafka_t *rk, int err, const char *reason,
                           void *opaque) {
        (void)rk;
        (void)err;
        (void)reason;
        (void)opaque;
}

static void quiet_log_cb(const rd_kafka_t *rk, int level, const char *fac,
                         const char *buf) {
        (void)rk;
        (void)level;
        (void)fac;
        (void)buf;
}

static void conf_set(rd_kafka_conf_t *conf, const char *name,
                     const char *value) {
        char errstr[256];

        if (rd_kafka_conf_set(conf, name, value, errstr, sizeof(errstr)) !=
            RD_KAFKA_CONF_OK)
                fail_msg("conf %s=%s: %s", name, value, errstr);
}

static rd_kafka_conf_t *base_conf(const struct mock_env *env,
                                  const char *const *extra) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        rd_kafka_conf_set_error_cb(conf, quiet_error_cb);
        rd_kafka_conf_set_log_cb(conf, quiet_log_cb);
        if (env)
                conf_set(conf, "bootstrap.servers", env->bootstraps);
        /* Reconnect fast after mock_env_heal() brings the broker back. */
        conf_set(conf, "reconnect.backoff.ms", "10");
        conf_set(conf, "reconnect.backoff.max.ms", "100");
        for (; extra && extra[0]; extra += 2)
                conf_set(conf, extra[0], extra[1]);
        return conf;
}

int mock_env_setup(void **state) {
        struct mock_env *env = calloc(1, sizeof(*env));
        rd_kafka_conf_t *conf = base_conf(NULL, NULL);
        char errstr[256];

        assert_non_null(env);
        conf_set(conf, "test.mock.num.brokers", "1");
        env->host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr,
                                 sizeof(errstr));
        if (!env->host)
                fail_msg("mock host: %s", errstr);
        env->mcluster = rd_kafka_handle_mock_cluster(env->host);
        assert_non_null(env->mcluster);
        env->bootstraps = rd_kafka_mock_cluster_bootstraps(env->mcluster);
        *state = env;
        return 0;
}

int mock_env_teardown(void **state) {
        struct mock_env *env = *state;

        rd_kafka_destroy(env->host);
        free(env);
        return 0;
}

void mock_env_heal(struct mock_env *env) {
        rd_kafka_mock_clear_request_errors(env->mcluster, MOCK_APIKEY_PRODUCE);
        rd_kafka_mock_clear_request_errors(env->mcluster,
                                           MOCK_APIKEY_OFFSET_COMMIT);
        rd_kafka_mock_broker_set_up(env->mcluster, MOCK_BROKER_ID);
}

const char *mock_env_topic(struct mock_env *env, const char *prefix,
                           int partitions, char *buf) {
        snprintf(buf, 64, "%s-%d", prefix, ++env->topic_seq);
        assert_int_equal(rd_kafka_mock_topic_create(env->mcluster, buf,
                                                    partitions, 1),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        return buf;
}

rd_kafka_t *mock_env_producer(struct mock_env *env, int with_kdc_cb,
                              const char *const *extra) {
        rd_kafka_conf_t *conf = base_conf(env, NULL);
        char errstr[256];
        rd_kafka_t *rk;

        conf_set(conf, "linger.ms", "5");
        conf_set(conf, "retry.backoff.ms", "10");
        /* A failed delivery must be reported within the tests' waits. */
        conf_set(conf, "message.timeout.ms", "10000");
        for (; extra && extra[0]; extra += 2)
                conf_set(conf, extra[0], extra[1]);
        if (with_kdc_cb)
                rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail_msg("producer: %s", errstr);
        return rk;
}

rd_kafka_t *mock_env_consumer(struct mock_env *env, const char *group,
                              const char *const *extra) {
        rd_kafka_conf_t *conf = base_conf(env, extra);
        char errstr[256];
        rd_kafka_t *rk;

        conf_set(conf, "group.id", group);
        conf_set(conf, "enable.auto.commit", "false");
        conf_set(conf, "enable.auto.offset.store", "false");
        conf_set(conf, "auto.offset.reset", "earliest");
        /* The mock holds an empty Fetch this long: keep EOF events quick. */
        conf_set(conf, "fetch.wait.max.ms", "10");
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail_msg("consumer: %s", errstr);
        return rk;
}

int64_t mock_env_stored(rd_kafka_t *rk, const char *topic) {
        int64_t low = -1, high = -1;

        if (rd_kafka_query_watermark_offsets(rk, topic, 0, &low, &high,
                                             5000) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        return high - low;
}
