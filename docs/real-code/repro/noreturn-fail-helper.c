/* Models librdkafka 2.0.2 tests/0055-producer_latency.c:225 (TEST_CALL_ERROR__ -> TEST_FAIL -> test_fail0(.., fail_now=1)): txn-error-not-aborted, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

/* test_fail0(): returns only when fail_now is 0 (TEST_FAIL_LATER);
 * TEST_FAIL passes 1, and the test ends (assert(0) or thrd_exit()) */
void fail0(int fail_now, const char *what);
void fail0(int fail_now, const char *what) {
        (void)what;
        if (!fail_now)
                return;
        abort();
}
#define FAIL(what) fail0(1, what)
#define CALL_ERROR(call)                                                       \
        do {                                                                   \
                rd_kafka_error_t *_e = (call);                                 \
                if (_e)                                                        \
                        FAIL(rd_kafka_error_string(_e));                       \
        } while (0)

void transactions(rd_kafka_t *rk);
void transactions(rd_kafka_t *rk) {
        int i;
        for (i = 0; i < 10; i++) {
                CALL_ERROR(rd_kafka_begin_transaction(rk));
                if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("t"),
                                      RD_KAFKA_V_VALUE("hi", 2), RD_KAFKA_V_END))
                        FAIL("produce");
                /* kdc-lint: "an error of rd_kafka_commit_transaction can reach
                 * the next transactional step" (the begin above): it cannot */
                CALL_ERROR(rd_kafka_commit_transaction(rk, -1));
        }
}
