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
#define MOCK_APIKEY_HEARTBEAT 12

/* Generous: a healthy mock answers in milliseconds. */
#define MOCK_WAIT_MS 10000

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

typedef void(mock_env_dr_msg_cb_t)(rd_kafka_t *rk,
                                   const rd_kafka_message_t *rkmessage,
                                   void *opaque);

/* A producer on the mock cluster with the given dr_msg_cb (may be NULL) and
 * conf opaque. */
rd_kafka_t *mock_env_producer_with(struct mock_env *env,
                                   mock_env_dr_msg_cb_t *dr_msg_cb,
                                   void *conf_opaque,
                                   const char *const *extra);

/* A consumer in group `group` on the mock cluster (auto commit off). */
rd_kafka_t *mock_env_consumer(struct mock_env *env, const char *group,
                              const char *const *extra);

typedef void(mock_env_rebalance_cb_t)(
    rd_kafka_t *rk, rd_kafka_resp_err_t err,
    rd_kafka_topic_partition_list_t *partitions, void *opaque);

/* A consumer with the given rebalance callback (may be NULL) and conf
 * opaque; extra property pairs are applied last. */
rd_kafka_t *mock_env_consumer_with(struct mock_env *env, const char *group,
                                   mock_env_rebalance_cb_t *rebalance_cb,
                                   void *conf_opaque,
                                   const char *const *extra);

/* Messages stored by the broker in partition 0 of topic: high - low
 * watermark, queried from the broker (not from local state). -1 on error. */
int64_t mock_env_stored(rd_kafka_t *rk, const char *topic);

/* Messages stored by the broker in topic/partition (high - low). */
int64_t mock_env_stored_in(rd_kafka_t *rk, const char *topic,
                           int32_t partition);

/* Produce n confirmed messages ("k", "v") to each of partitions 0..parts-1
 * with kdc_produce_confirmed(). */
void mock_env_fill(rd_kafka_t *producer, const char *topic, int partitions,
                   int n);

/* Make rk learn topic's partition leaders now (rd_kafka_metadata()):
 * librdkafka 2.0.2 otherwise retries a leaderless offset query after a
 * fixed 500 ms. */
void mock_env_warm(rd_kafka_t *rk, const char *topic);

/* Manually assign partitions 0..partitions-1 of topic from the beginning
 * (after mock_env_warm()). */
void mock_env_assign(rd_kafka_t *consumer, const char *topic, int partitions);

/* Next message of `partition` without error (any partition if < 0),
 * skipping others; fails the test after MOCK_WAIT_MS. */
rd_kafka_message_t *mock_env_next(rd_kafka_t *consumer, int32_t partition);

/* The same for the first message after rd_kafka_subscribe(): the group join
 * comes first (the mock coordinator holds a first join for 3 s), so it
 * fails the test only after MOCK_JOIN_WAIT_MS. Under ASan on a loaded
 * machine a join and the first fetch took longer than MOCK_WAIT_MS. */
#define MOCK_JOIN_WAIT_MS 30000
rd_kafka_message_t *mock_env_next_joined(rd_kafka_t *consumer,
                                         int32_t partition);

/* The offset committed for topic/partition, read from the broker with
 * rd_kafka_committed() (RD_KAFKA_OFFSET_INVALID when none). */
int64_t mock_env_committed(rd_kafka_t *consumer, const char *topic,
                           int32_t partition);

/* Close and destroy a consumer, asserting the close succeeded. */
void mock_env_close(rd_kafka_t *consumer);

#endif
