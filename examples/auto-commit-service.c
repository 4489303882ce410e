/*
 * auto-commit-service: the reference service's job with periodic offset
 * commits, the way many services are written (and the restart report of
 * seeds/001: "offsets are committed back to Kafka periodically").
 *
 * It loses nothing: each output and DLQ record is confirmed by its own
 * delivery report before the input's offset is stored
 * (enable.auto.offset.store=false, rd_kafka_offsets_store()), and a failed
 * produce halts the service (exit 3) without storing. But the stored offsets
 * reach the broker only every auto.commit.interval.ms (5 s), and the service
 * has no SIGTERM handler: the signal's default action ends the process
 * without rd_kafka_consumer_close() (which would commit what was stored).
 * So when an orchestrator redeploys it (SIGTERM, then a new start), the new
 * instance resumes from the last periodic commit and processes again what
 * the old one processed since: duplicates, never losses.
 *
 * kdc-lint: no finding. kdc-harness: nothing lost in any scenario; in
 * sigterm-redeploy, events duplicated (a failure with --exactly-once),
 * where reference-service.c, which commits its final offsets on SIGTERM,
 * duplicates none (tests/harness/kdc-harness: testkit.redeploy.*).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define WAIT_MS 60000
#define EXIT_HALT 3

static const char *env(const char *name, const char *fallback) {
        const char *v = getenv(name);
        return v && *v ? v : fallback;
}

static void conf_set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char err[256];
        if (value && rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK)
                fprintf(stderr, "auto-commit-service: %s\n", err);
}

/* "amount=N" with N in 1..1000000 */
static int well_formed(const rd_kafka_message_t *m) {
        char text[32], *end;
        long amount;

        if (!m->payload || m->len < 8 || m->len >= sizeof text)
                return 0;
        memcpy(text, m->payload, m->len);
        text[m->len] = '\0';
        if (strncmp(text, "amount=", 7) != 0 || text[7] < '1' || text[7] > '9')
                return 0;
        amount = strtol(text + 7, &end, 10);
        return *end == '\0' && amount >= 1 && amount <= 1000000;
}

/* Store the offset after m: the next periodic commit takes it. */
static void store(rd_kafka_t *consumer, const rd_kafka_message_t *m) {
        rd_kafka_topic_partition_list_t *at = rd_kafka_topic_partition_list_new(1);

        rd_kafka_topic_partition_list_add(at, rd_kafka_topic_name(m->rkt), m->partition)->offset =
            m->offset + 1;
        rd_kafka_offsets_store(consumer, at); /* a revoked partition is refused: its new owner redoes it */
        rd_kafka_topic_partition_list_destroy(at);
}

int main(void) {
        const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", NULL);
        const char *input = env("KAFKA_INPUT_TOPIC", "kdc.input");
        const char *output = env("KAFKA_OUTPUT_TOPIC", "kdc.output");
        const char *group = env("KAFKA_GROUP_ID", "kdc-service");
        kdc_assignment_t *assignment = NULL;
        kdc_dlq_t *dlq = NULL;
        char err[256];

        if (!brokers || kdc_assignment_new(&assignment, NULL, NULL) != 0)
                return 2;
        rd_kafka_conf_t *pconf = rd_kafka_conf_new();
        conf_set(pconf, "bootstrap.servers", brokers);
        conf_set(pconf, "enable.idempotence", "true");
        conf_set(pconf, "linger.ms", "0");
        conf_set(pconf, "message.timeout.ms", env("KAFKA_MESSAGE_TIMEOUT_MS", NULL));
        rd_kafka_conf_set_dr_msg_cb(pconf, kdc_dr_msg_cb);
        rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pconf, err, sizeof err);

        rd_kafka_conf_t *cconf = rd_kafka_conf_new();
        conf_set(cconf, "bootstrap.servers", brokers);
        conf_set(cconf, "group.id", group);
        conf_set(cconf, "enable.auto.commit", "true");
        conf_set(cconf, "auto.commit.interval.ms", "5000"); /* librdkafka's default */
        conf_set(cconf, "enable.auto.offset.store", "false");
        conf_set(cconf, "auto.offset.reset", "earliest");
        conf_set(cconf, "session.timeout.ms", env("KAFKA_SESSION_TIMEOUT_MS", NULL));
        conf_set(cconf, "heartbeat.interval.ms", env("KAFKA_HEARTBEAT_INTERVAL_MS", NULL));
        conf_set(cconf, "max.poll.interval.ms", env("KAFKA_MAX_POLL_INTERVAL_MS", NULL));
        rd_kafka_conf_set_rebalance_cb(cconf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(cconf, assignment);
        rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cconf, err, sizeof err);
        if (!producer || !consumer || kdc_dlq_new(&dlq, producer, group) != 0 ||
            kdc_dlq_set_topic(dlq, env("KAFKA_DLQ_TOPIC", "kdc.dlq")) != 0)
                return 2;

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, input, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        /* No SIGTERM handler: the default action ends the process here. */
        for (;;) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
                rd_kafka_resp_err_t perr;
                int rc;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                if (!well_formed(m))
                        rc = kdc_dlq_route(dlq, m, KDC_CLASS_POISON, "malformed event", WAIT_MS,
                                           &perr);
                else
                        rc = kdc_produce_confirmed(producer, output, RD_KAFKA_PARTITION_UA, m->key,
                                                   m->key_len, m->payload, m->len, WAIT_MS, &perr);
                if (rc != 0) {
                        /* Halt: nothing stored for it; the orchestrator restarts us. */
                        fprintf(stderr, "auto-commit-service: %.*s not confirmed (%s): halting\n",
                                (int)m->key_len, (const char *)m->key, rd_kafka_err2name(perr));
                        return EXIT_HALT;
                }
                store(consumer, m);
                rd_kafka_message_destroy(m);
        }
}
