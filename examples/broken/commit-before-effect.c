/*
 * broken/commit-before-effect: the reference service's job with one bug: it
 * commits each event before producing its output ("commit early so a crash
 * cannot make us process it twice"). When the output then fails, or the
 * process dies between the commit and the confirmed output, the event is
 * gone: the group resumes after it.
 *
 * kdc-lint: commit-before-effect. kdc-harness: loses events in
 * produce-topic-authorization-failed and sigkill-restart (README table).
 * Compare reference-service.c.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define WAIT_MS 60000

static volatile sig_atomic_t running = 1;

static void stop(int sig) {
        (void)sig;
        running = 0;
}

static const char *env(const char *name, const char *fallback) {
        const char *v = getenv(name);
        return v && *v ? v : fallback;
}

static void conf_set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char err[256];
        /* the reason goes to stderr; the setting stays unset */
        if (value && rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK)
                fprintf(stderr, "commit-before-effect: %s\n", err);
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

/* The event's output, confirmed by its own delivery report. */
static int publish(rd_kafka_t *producer, const char *topic, const rd_kafka_message_t *m,
                   rd_kafka_resp_err_t *err) {
        return kdc_produce_confirmed(producer, topic, RD_KAFKA_PARTITION_UA, m->key, m->key_len,
                                     m->payload, m->len, WAIT_MS, err);
}

int main(void) {
        const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", NULL);
        const char *input = env("KAFKA_INPUT_TOPIC", "kdc.input");
        const char *output = env("KAFKA_OUTPUT_TOPIC", "kdc.output");
        const char *group = env("KAFKA_GROUP_ID", "kdc-service");
        kdc_assignment_t *assignment = NULL;
        kdc_dlq_t *dlq = NULL;
        char err[256];
        int status = 0;

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
        conf_set(cconf, "enable.auto.commit", "false");
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
        signal(SIGINT, stop);
        signal(SIGTERM, stop);

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, input, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        while (running) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
                rd_kafka_resp_err_t perr;
                int rc;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                uint64_t epoch = kdc_assignment_stamp(assignment, m);
                /* BUG: committed before its effect exists */
                kdc_commit_message(consumer, m, assignment, epoch, NULL); /* expect: commit-before-effect */
                if (!well_formed(m))
                        rc = kdc_dlq_route(dlq, m, KDC_CLASS_POISON, "malformed event", WAIT_MS,
                                           &perr);
                else
                        rc = publish(producer, output, m, &perr);
                rd_kafka_message_destroy(m);
                if (rc != 0) {
                        /* halts, as the contract says for a transient failure: too late */
                        fprintf(stderr, "commit-before-effect: output failed: %s\n",
                                rd_kafka_err2name(perr));
                        status = 1;
                        break;
                }
        }

        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_flush(producer, WAIT_MS);
        kdc_dlq_destroy(dlq);
        rd_kafka_destroy(producer);
        kdc_assignment_destroy(assignment);
        return status;
}
