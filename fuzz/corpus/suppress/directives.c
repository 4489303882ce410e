#include <librdkafka/rdkafka.h>
void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); } // kdc-lint: ignore[bare-commit] auto store is off
void g(rd_kafka_t *rk) {
    /* kdc-lint: ignore[bare-commit, unconfirmed-dlq-routing] offsets are stored after the effect */
    rd_kafka_commit(rk, NULL, 0);
}
// kdc-lint: ignore-begin[bare-commit] legacy consumers, migrating (TICKET-12)
void h(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }
/* kdc-lint: ignore-begin[unconfirmed-dlq-routing] nested */
/* kdc-lint: ignore-end[unconfirmed-dlq-routing] */
// kdc-lint: ignore-end
