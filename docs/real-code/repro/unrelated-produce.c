/* Models librdkafka 2.0.2 tests/0113-cooperative_rebalance.cpp:763 (seed messages, then commitSync of chosen offsets): commit-before-delivery-report, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err)
                abort();
}

/* test set-up: seed the topic; the producer is gone before any consumer exists */
static void seed(const char *topic) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *p;
        rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        if (!(p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0)))
                abort();
        if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("seed", 4),
                              RD_KAFKA_V_END))
                abort();
        if (rd_kafka_flush(p, 10000))
                abort();
        rd_kafka_destroy(p);
}

/* the test proper: commit a chosen offset, then read from it; nothing read
 * here was produced by this program's producer */
static void commit_then_read(rd_kafka_conf_t *cconf, const char *topic) {
        rd_kafka_topic_partition_list_t *offsets;
        rd_kafka_message_t *m;
        rd_kafka_t *c;
        if (!(c = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, NULL, 0)))
                abort();
        offsets = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(offsets, topic, 0)->offset = 11;
        if (rd_kafka_commit(c, offsets, 0))
                abort();
        rd_kafka_topic_partition_list_destroy(offsets);
        if ((m = rd_kafka_consumer_poll(c, 1000)))
                rd_kafka_message_destroy(m);
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
}

int main(void) {
        rd_kafka_conf_t *cconf = rd_kafka_conf_new();
        rd_kafka_conf_set(cconf, "group.id", "g", NULL, 0);
        seed("t");
        commit_then_read(cconf, "t");
        return 0;
}
