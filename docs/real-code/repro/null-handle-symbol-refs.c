/* Models librdkafka 2.0.2 tests/0006-symbols.c:91, :107, :142 (symbol references on NULL handles in a block that never runs): flush-as-confirmation, produce-result-ignored, bare-commit, commit-before-delivery-report, all false. */
#include <librdkafka/rdkafka.h>

/* Refers to API symbols so that a missing export fails the link; the block
 * never runs (argc is never negative) and every handle is NULL. */
int main(int argc, char **argv) {
        (void)argv;
        if (argc < 0 /* always false */) {
                rd_kafka_last_error();
                rd_kafka_flush(NULL, 0);
                rd_kafka_offset_store(NULL, 0, 0);
                rd_kafka_produce(NULL, 0, 0, NULL, 0, NULL, 0, NULL);
                rd_kafka_produce_batch(NULL, 0, 0, NULL, 0);
                rd_kafka_consumer_poll(NULL, 0);
                rd_kafka_commit(NULL, NULL, 0);
        }
        return 0;
}
