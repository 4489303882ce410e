/* Models librdkafka 2.0.2 tests/1000-unktopic.c:121 (a program of its own, not built by librdkafka's CMake: TEST_FAIL's test_fail0(), defined in tests/test.c, is only declared here, without a noreturn attribute): queue-full-dropped, false (noreturn-unseen; a documented limit: a call ends its path only when its declaration says so or its body is in the run). */
#include <librdkafka/rdkafka.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Defined in another program of the test suite; with fail_now = 1 it never returns. */
void test_fail0(const char *file, int line, const char *function, int do_lock, int fail_now,
                const char *fmt, ...);
#define TEST_FAIL(...) test_fail0(__FILE__, __LINE__, __FUNCTION__, 1, 1, __VA_ARGS__)

static void dr_cb(rd_kafka_t *rk, void *payload, size_t len, rd_kafka_resp_err_t err,
                  void *opaque, void *msg_opaque) {
        if (err != RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC)
                TEST_FAIL("Unexpected delivery result: %s\n", rd_kafka_err2str(err));
        free(msg_opaque);
}

int main(void) {
        char errstr[256], msg[64];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_conf_set_dr_cb(conf, dr_cb);
        rd_kafka_t *rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(rk, "unknown", NULL);
        for (int i = 0; i < 10; i++) {
                int *id = malloc(sizeof *id);
                *id = i;
                strcpy(msg, "test message");
                if (rd_kafka_produce(rkt, 0, RD_KAFKA_MSG_F_COPY, msg, strlen(msg), NULL, 0,
                                     id) == -1) { /* reported: false */
                        if (errno != ENOENT)
                                TEST_FAIL("Failed to produce message #%i\n", i); /* ends the program */
                }
        }
        rd_kafka_flush(rk, 10000);
        rd_kafka_topic_destroy(rkt);
        rd_kafka_destroy(rk);
        return 0;
}
