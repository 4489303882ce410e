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
        /* librdkafka 2.0.2 learns a topic first used after the client
         * connected only at its 1 s topic scan; a short periodic refresh
         * makes that 100 ms (each test uses fresh topics). */
        conf_set(conf, "topic.metadata.refresh.interval.ms", "100");
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
        rd_kafka_mock_clear_request_errors(env->mcluster,
                                           MOCK_APIKEY_HEARTBEAT);
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

rd_kafka_t *mock_env_producer_with(struct mock_env *env,
                                   mock_env_dr_msg_cb_t *dr_msg_cb,
                                   void *conf_opaque,
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
        if (dr_msg_cb)
                rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        rd_kafka_conf_set_opaque(conf, conf_opaque);
        rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail_msg("producer: %s", errstr);
        return rk;
}

rd_kafka_t *mock_env_producer(struct mock_env *env, int with_kdc_cb,
                              const char *const *extra) {
        return mock_env_producer_with(env, with_kdc_cb ? kdc_dr_msg_cb : NULL,
                                      NULL, extra);
}

rd_kafka_t *mock_env_consumer_with(struct mock_env *env, const char *group,
                                   mock_env_rebalance_cb_t *rebalance_cb,
                                   void *conf_opaque,
                                   const char *const *extra) {
        rd_kafka_conf_t *conf = base_conf(env, NULL);
        char errstr[256];
        rd_kafka_t *rk;

        conf_set(conf, "group.id", group);
        conf_set(conf, "enable.auto.commit", "false");
        conf_set(conf, "enable.auto.offset.store", "false");
        conf_set(conf, "auto.offset.reset", "earliest");
        /* The mock holds an empty Fetch this long: keep EOF events quick. */
        conf_set(conf, "fetch.wait.max.ms", "10");
        /* A first Fetch before the leader is known backs off this long. */
        conf_set(conf, "fetch.error.backoff.ms", "10");
        for (; extra && extra[0]; extra += 2)
                conf_set(conf, extra[0], extra[1]);
        if (rebalance_cb)
                rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
        rd_kafka_conf_set_opaque(conf, conf_opaque);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof(errstr));
        if (!rk)
                fail_msg("consumer: %s", errstr);
        return rk;
}

rd_kafka_t *mock_env_consumer(struct mock_env *env, const char *group,
                              const char *const *extra) {
        return mock_env_consumer_with(env, group, NULL, NULL, extra);
}

int64_t mock_env_stored(rd_kafka_t *rk, const char *topic) {
        int64_t low = -1, high = -1;

        if (rd_kafka_query_watermark_offsets(rk, topic, 0, &low, &high,
                                             5000) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        return high - low;
}

int64_t mock_env_stored_in(rd_kafka_t *rk, const char *topic,
                           int32_t partition) {
        int64_t low = -1, high = -1;

        if (rd_kafka_query_watermark_offsets(rk, topic, partition, &low,
                                             &high, MOCK_WAIT_MS) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return -1;
        return high - low;
}

void mock_env_fill(rd_kafka_t *producer, const char *topic, int partitions,
                   int n) {
        for (int p = 0; p < partitions; p++)
                for (int i = 0; i < n; i++)
                        assert_int_equal(
                            kdc_produce_confirmed(producer, topic, p, "k", 1,
                                                  "v", 1, MOCK_WAIT_MS, NULL),
                            0);
}

void mock_env_warm(rd_kafka_t *rk, const char *topic) {
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, topic, NULL);
        const rd_kafka_metadata_t *md = NULL;

        assert_non_null(rkt);
        assert_int_equal(rd_kafka_metadata(rk, 0, rkt, &md, MOCK_WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_metadata_destroy(md);
        rd_kafka_topic_destroy(rkt);
}

void mock_env_assign(rd_kafka_t *consumer, const char *topic,
                     int partitions) {
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(partitions);

        mock_env_warm(consumer, topic);

        for (int p = 0; p < partitions; p++)
                rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        assert_int_equal(rd_kafka_assign(consumer, parts),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(parts);
}

static rd_kafka_message_t *next_within(rd_kafka_t *consumer, int32_t partition,
                                       int wait_ms) {
        for (;;) {
                rd_kafka_message_t *msg =
                    rd_kafka_consumer_poll(consumer, wait_ms);

                assert_non_null(msg);
                if (msg->err == RD_KAFKA_RESP_ERR__PARTITION_EOF) {
                        rd_kafka_message_destroy(msg);
                        continue;
                }
                assert_int_equal(msg->err, RD_KAFKA_RESP_ERR_NO_ERROR);
                if (partition < 0 || msg->partition == partition)
                        return msg;
                rd_kafka_message_destroy(msg);
        }
}

rd_kafka_message_t *mock_env_next(rd_kafka_t *consumer, int32_t partition) {
        return next_within(consumer, partition, MOCK_WAIT_MS);
}

rd_kafka_message_t *mock_env_next_joined(rd_kafka_t *consumer,
                                         int32_t partition) {
        return next_within(consumer, partition, MOCK_JOIN_WAIT_MS);
}

int64_t mock_env_committed(rd_kafka_t *consumer, const char *topic,
                           int32_t partition) {
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(1);
        int64_t offset;

        rd_kafka_topic_partition_list_add(parts, topic, partition);
        assert_int_equal(rd_kafka_committed(consumer, parts, MOCK_WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        offset = parts->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(parts);
        return offset;
}

void mock_env_close(rd_kafka_t *consumer) {
        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
}
