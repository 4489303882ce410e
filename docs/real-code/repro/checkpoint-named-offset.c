/* Models librdkafka 2.0.2 tests/0026-consume_pause.c:264 (test_produce_msgs_easy, then ->offset = RD_KAFKA_OFFSET_BEGINNING for assign): flush-as-confirmation, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

/* test_dr_msg_cb(): a failed delivery ends the test; the message's counter
 * (its opaque) counts the deliveries */
static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        int *remainsp = m->_private;
        (void)rk;
        (void)opaque;
        if (m->err)
                abort();
        if (remainsp)
                (*remainsp)--;
}

/* test_wait_delivery() */
static void wait_delivery(rd_kafka_t *rk, int *msgcounterp) {
        while (*msgcounterp > 0 && rd_kafka_outq_len(rk) > 0)
                rd_kafka_poll(rk, 10);
        if (*msgcounterp != 0)
                abort();
}

static void produce_and_wait(rd_kafka_t *rk, const char *topic) {
        int remains = 0;
        if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE("hi", 2),
                              RD_KAFKA_V_OPAQUE(&remains), RD_KAFKA_V_END))
                abort();
        remains++;
        wait_delivery(rk, &remains);
}

void seed_then_read(rd_kafka_conf_t *pconf, rd_kafka_t *consumer, const char *topic);
void seed_then_read(rd_kafka_conf_t *pconf, rd_kafka_t *consumer, const char *topic) {
        rd_kafka_topic_partition_list_t *parts;
        rd_kafka_t *producer;

        rd_kafka_conf_set_dr_msg_cb(pconf, dr_msg_cb);
        if (!(producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, NULL, 0)))
                abort();
        produce_and_wait(producer, topic);
        rd_kafka_destroy(producer);

        /* read it back from the beginning: a start position, not a checkpoint
         * (kdc-lint: "checkpoint advanced here without a delivery outcome") */
        parts = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(parts, topic, 0)->offset =
            RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(consumer, parts);
        rd_kafka_topic_partition_list_destroy(parts);
}
