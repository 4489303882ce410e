/* Models librdkafka 2.0.2 tests/0004-conf.c:42 (empty dr_cb on a configuration whose producers are created and destroyed, never produce): delivery-callback-ignores-error, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

static void dr_cb(rd_kafka_t *rk, void *payload, size_t len,
                  rd_kafka_resp_err_t err, void *opaque, void *msg_opaque) {
}

/* checks that a configuration with callbacks gives a working client:
 * the client is created and destroyed, nothing is ever produced */
int main(void) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        rd_kafka_conf_set_dr_cb(conf, dr_cb);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0)))
                abort();
        rd_kafka_destroy(rk);
        return 0;
}
