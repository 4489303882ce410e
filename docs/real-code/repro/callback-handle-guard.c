/* Models librdkafka 2.0.2 tests/0118-commit_rebalance.c:118 (the rebalance callback commits only for c2: `if (rk == c1) return;`): teardown-without-close, false (callback-handle-guard). */
#include <librdkafka/rdkafka.h>

static rd_kafka_t *c1, *c2;

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                rd_kafka_assign(rk, parts);
                return;
        }
        rd_kafka_assign(rk, NULL);
        if (rk == c1)
                return;                               /* c1 never commits */
        rd_kafka_commit(rk, parts, 0);
}

static rd_kafka_t *create_consumer(rd_kafka_conf_t *conf) {
        char errstr[256];
        rd_kafka_conf_set(conf, "group.id", "g", errstr, sizeof errstr);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", errstr, sizeof errstr);
        rd_kafka_conf_set_rebalance_cb(conf, rebalance_cb);
        return rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
}

int main(void) {
        rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(t, "t", RD_KAFKA_PARTITION_UA);
        c1 = create_consumer(rd_kafka_conf_new());
        c2 = create_consumer(rd_kafka_conf_new());
        rd_kafka_subscribe(c1, t);
        rd_kafka_subscribe(c2, t);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c1, 1000);
        if (m) rd_kafka_message_destroy(m);
        rd_kafka_consumer_close(c2);
        rd_kafka_destroy(c2);
        rd_kafka_destroy(c1);                         /* reported: false */
        return 0;
}
