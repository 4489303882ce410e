/* Models librdkafka 2.0.2 tests/0004-conf.c:812 (acks=0 set on a second configuration object held by the variable that held the producer's): producer-acks-weakened, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

static void dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        *(int *)m->_private = m->err ? 2 : 1;
}

void relay_one(rd_kafka_t *consumer);
void relay_one(rd_kafka_t *consumer) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_message_t *m;
        rd_kafka_t *p;
        char val[16];
        size_t valsz = sizeof(val);

        rd_kafka_conf_set_dr_msg_cb(conf, dr_msg_cb);
        p = rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0);
        if (!p)
                abort();
        if ((m = rd_kafka_consumer_poll(consumer, 1000)) && !m->err) {
                int status = 0; /* 1 delivered, 2 failed */
                if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC("out"),
                                      RD_KAFKA_V_VALUE(m->payload, m->len),
                                      RD_KAFKA_V_OPAQUE(&status), RD_KAFKA_V_END))
                        abort();
                while (!status)
                        rd_kafka_poll(p, 100);
                if (status == 1)
                        rd_kafka_commit_message(consumer, m, 0);
        }
        if (m)
                rd_kafka_message_destroy(m);
        rd_kafka_flush(p, -1);
        rd_kafka_destroy(p);

        /* a second, unrelated configuration object in the same variable:
         * only read back, never given to a client */
        conf = rd_kafka_conf_new();
        if (rd_kafka_conf_set(conf, "acks", "0", NULL, 0) != RD_KAFKA_CONF_OK ||
            rd_kafka_conf_get(conf, "acks", val, &valsz) != RD_KAFKA_CONF_OK)
                abort();
        rd_kafka_conf_destroy(conf);
}
