/* Models librdkafka 2.0.2 tests/0105-transactions_mock.c:3890 (commit_transaction's fatal error asserted, producer destroyed; the caller's next test makes a new producer): txn-error-not-aborted, false. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <librdkafka/rdkafka.h>

static rd_kafka_t *create_txn_producer(void) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_t *rk;
        char id[64];
        snprintf(id, sizeof(id), "relay-%d", (int)getpid());
        rd_kafka_conf_set(conf, "transactional.id", id, NULL, 0);
        if (!(rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0)))
                abort();
        return rk;
}

/* the commit must fail fatally; the producer is then destroyed */
static void fatal_commit(void) {
        rd_kafka_t *rk = create_txn_producer();
        rd_kafka_error_t *error = rd_kafka_commit_transaction(rk, -1);
        if (!error || !rd_kafka_error_is_fatal(error))
                abort();
        rd_kafka_error_destroy(error);
        rd_kafka_destroy(rk);
}

/* a new producer, a new transaction */
static void fresh_producer(void) {
        rd_kafka_t *rk = create_txn_producer();
        if (rd_kafka_init_transactions(rk, 5000) || rd_kafka_begin_transaction(rk))
                abort();
        rd_kafka_destroy(rk);
}

int main(void) {
        fatal_commit();
        fresh_producer();
        return 0;
}
