/* Test support for the libkdc tests: one librdkafka mock cluster on
 * loopback per test group, and clients configured for fast, quiet tests. */
#ifndef KDC_TESTS_HARNESS_MOCK_ENV_H
#define KDC_TESTS_HARNESS_MOCK_ENV_H

#include <stdint.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

/* Kafka protocol ApiKeys (not in a public librdkafka header). */
#define MOCK_APIKEY_PRODUCE 0
#define MOCK_APIKEY_OFFSET_COMMIT 8

/* The one broker of the mock cluster. */
#define MOCK_BROKER_ID 1

struct mock_env {
        rd_kafka_t *host;         /* owns the mock cluster */
        rd_kafka_mock_cluster_t *mcluster;
        const char *bootstraps;   /* owned by mcluster */
        int topic_seq;            /* for unique topic names */
};

/* Group setup/teardown: create and destroy the cluster. */
int mock_env_setup(void **state);
int mock_env_teardown(void **state);

/* Per-test teardown: clear injected errors, bring the broker up. */
void mock_env_heal(struct mock_env *env);

/* A fresh topic with `partitions` partitions created on the mock cluster;
 * the name (prefix-N) is written to buf (size >= 64). */
const char *mock_env_topic(struct mock_env *env, const char *prefix,
                           int partitions, char *buf);

/* A producer on the mock cluster. With_kdc_cb registers kdc_dr_msg_cb.
 * Extra is a NULL-terminated list of property/value pairs (may be NULL). */
rd_kafka_t *mock_env_producer(struct mock_env *env, int with_kdc_cb,
                              const char *const *extra);

/* A consumer in group `group` on the mock cluster (auto commit off). */
rd_kafka_t *mock_env_consumer(struct mock_env *env, const char *group,
                              const char *const *extra);

/* Messages stored by the broker in partition 0 of topic: high - low
 * watermark, queried from the broker (not from local state). -1 on error. */
int64_t mock_env_stored(rd_kafka_t *rk, const char *topic);

#endif
