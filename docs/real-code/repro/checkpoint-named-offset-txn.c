/* Models librdkafka 2.0.2 tests/0105-transactions_mock.c:237 (flush, then ->offset = 12 for send_offsets_to_transaction): flush-as-confirmation, false. */
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

void txn_step(rd_kafka_t *rk, rd_kafka_consumer_group_metadata_t *cgmd);
void txn_step(rd_kafka_t *rk, rd_kafka_consumer_group_metadata_t *cgmd) {
        rd_kafka_topic_partition_list_t *offsets;

        if (rd_kafka_begin_transaction(rk))
                abort();
        if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("out"),
                              RD_KAFKA_V_VALUE("hi", 2), RD_KAFKA_V_END))
                abort();
        rd_kafka_flush(rk, -1);

        /* offsets that go into the transaction: commit_transaction() below
         * succeeds only when every message of the transaction was delivered */
        offsets = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(offsets, "in", 3)->offset = 12;
        if (rd_kafka_send_offsets_to_transaction(rk, offsets, cgmd, -1))
                abort();
        rd_kafka_topic_partition_list_destroy(offsets);
        if (rd_kafka_commit_transaction(rk, -1))
                abort();
}
