/*
 * broken/no-delivery-callback: the reference service's job with one bug:
 * its producer has no delivery-report callback. It produces a batch of
 * outputs, waits for rd_kafka_flush() to return 0 and commits the batch.
 * flush() returns 0 as soon as the local queue is empty, and a message whose
 * delivery FAILED also leaves the queue: the batch is committed without its
 * outputs.
 *
 * kdc-lint: produce-without-delivery-callback, flush-as-confirmation.
 * kdc-harness: loses events in produce-topic-authorization-failed and
 * produce-msg-timed-out (README table). Compare reference-service.c.
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
        if (value && rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK)
                fprintf(stderr, "no-delivery-callback: %s\n", err);
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

#define BATCH 100

/* The event's output (or DLQ copy), enqueued. */
static rd_kafka_resp_err_t publish(rd_kafka_t *producer, const char *topic,
                                   const rd_kafka_message_t *m) {
        return rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(topic), /* expect: produce-without-delivery-callback */
                                 RD_KAFKA_V_KEY(m->key, m->key_len),
                                 RD_KAFKA_V_VALUE(m->payload, m->len),
                                 RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END);
}

int main(void) {
        const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", NULL);
        const char *input = env("KAFKA_INPUT_TOPIC", "kdc.input");
        const char *output = env("KAFKA_OUTPUT_TOPIC", "kdc.output");
        const char *group = env("KAFKA_GROUP_ID", "kdc-service");
        kdc_assignment_t *assignment = NULL;
        const char *dlq_topic = env("KAFKA_DLQ_TOPIC", "kdc.dlq");
        rd_kafka_message_t *batch[BATCH];
        uint64_t epochs[BATCH];
        char err[256];

        if (!brokers || kdc_assignment_new(&assignment, NULL, NULL) != 0)
                return 2;
        rd_kafka_conf_t *pconf = rd_kafka_conf_new();
        conf_set(pconf, "bootstrap.servers", brokers);
        conf_set(pconf, "enable.idempotence", "true");
        conf_set(pconf, "message.timeout.ms", env("KAFKA_MESSAGE_TIMEOUT_MS", NULL));
        /* BUG: no rd_kafka_conf_set_dr_msg_cb(): failed deliveries go unseen */
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
        if (!producer || !consumer)
                return 2;
        signal(SIGINT, stop);
        signal(SIGTERM, stop);

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, input, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        while (running) {
                rd_kafka_message_t *m;
                int n = 0;

                while (n < BATCH && (m = rd_kafka_consumer_poll(consumer, n ? 0 : 100))) {
                        if (m->err) {
                                rd_kafka_message_destroy(m);
                                continue;
                        }
                        epochs[n] = kdc_assignment_stamp(assignment, m);
                        batch[n++] = m;
                }
                int i = 0;
                while (i < n && publish(producer, well_formed(batch[i]) ? output : dlq_topic,
                                        batch[i]) == RD_KAFKA_RESP_ERR_NO_ERROR)
                        i++;
                if (i < n) {
                        fprintf(stderr, "no-delivery-callback: produce refused: halting\n");
                        running = 0; /* the offsets stay */
                } else if (rd_kafka_flush(producer, WAIT_MS) == RD_KAFKA_RESP_ERR_NO_ERROR) { /* expect: flush-as-confirmation */
                        /* BUG: flush() == 0 only says the queue is empty, not delivered */
                        for (i = 0; i < n; i++)
                                kdc_commit_message(consumer, batch[i], assignment, epochs[i], /* expect: unconfirmed-dlq-routing */
                                                   NULL);
                }
                while (n)
                        rd_kafka_message_destroy(batch[--n]);
        }

        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_flush(producer, WAIT_MS);
        rd_kafka_destroy(producer);
        kdc_assignment_destroy(assignment);
        return 0;
}
