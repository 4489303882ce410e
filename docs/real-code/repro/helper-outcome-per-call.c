/* Models librdkafka 2.0.2 tests/0064-interceptors.c:342 (do_test_produce(.., exp_fail=1) returns only when its produce failed: nothing is queued at the destroy): destroy-without-flush, false (helper-outcome-per-call). */
#include <librdkafka/rdkafka.h>
#include <stdlib.h>

static int failed;
static void msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *o) { if (m->err) failed++; }

/* Produce; with expect_fail the produce must fail (the test aborts otherwise). */
static void try_produce(rd_kafka_t *rk, int partition, int expect_fail) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            rk, RD_KAFKA_V_TOPIC("t"), RD_KAFKA_V_PARTITION(partition),
            RD_KAFKA_V_VALUE("x", 1), RD_KAFKA_V_END);
        if (!err && expect_fail)
                abort();                 /* never returns after a queued message */
}

int main(void) {
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set_dr_msg_cb(conf, msg_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        try_produce(rk, 0, 0);
        rd_kafka_flush(rk, -1);
        try_produce(rk, 1234, 1);        /* bad partition: must fail, queues nothing */
        rd_kafka_destroy(rk);            /* reported: false */
        return 0;
}
