/* Models librdkafka 2.0.2 tests/0130-store_offsets.c:69 (test_conf_init() applies test.conf, then enable.auto.offset.store=false): bare-commit, false. */
#include <stdio.h>
#include <stdlib.h>
#include <librdkafka/rdkafka.h>

/* test_conf_init(): a new configuration with the operator's optional
 * name=value file applied */
static rd_kafka_conf_t *conf_init(void) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char name[128], val[128];
        FILE *fp = fopen("test.conf", "r");
        while (fp && fscanf(fp, "%127[^=]=%127s\n", name, val) == 2)
                if (rd_kafka_conf_set(conf, name, val, NULL, 0) != RD_KAFKA_CONF_OK)
                        abort();
        if (fp)
                fclose(fp);
        return conf;
}

int main(void) {
        rd_kafka_conf_t *conf = conf_init();
        rd_kafka_message_t *m;
        rd_kafka_t *c;

        /* set after the file: whatever the file said, the store is explicit */
        rd_kafka_conf_set(conf, "group.id", "g", NULL, 0);
        rd_kafka_conf_set(conf, "enable.auto.offset.store", "false", NULL, 0);
        if (!(c = rd_kafka_new(RD_KAFKA_CONSUMER, conf, NULL, 0)))
                abort();
        {
                rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(1);
                rd_kafka_topic_partition_list_add(parts, "t", 0);
                rd_kafka_assign(c, parts);
                rd_kafka_topic_partition_list_destroy(parts);
        }
        if ((m = rd_kafka_consumer_poll(c, 1000))) {
                if (!m->err && rd_kafka_offset_store(m->rkt, m->partition, m->offset))
                        abort();
                rd_kafka_message_destroy(m);
        }
        /* commits what was stored after processing: kdc-lint says
         * "enable.auto.offset.store cannot be determined" */
        if (rd_kafka_commit(c, NULL, 0))
                abort();
        rd_kafka_consumer_close(c);
        rd_kafka_destroy(c);
        return 0;
}
