/*
 * orders-worker on libkdc (compare examples/orders-worker-fixed.c, done by hand): each batch's
 * audit events (kdc_tracker_producev) and poison records (kdc_dlq_produce: "orders.dlq" with the
 * kdc.* headers) go through one DeliveryTracker, confirmed by one kdc_tracker_wait(), never by
 * rd_kafka_flush() == 0; a confirmed batch is committed by message while its partitions are still
 * ours (epochs from libkdc's rebalance callback); a failed one is not committed but rewound to
 * the committed offsets (kdc_rewind_messages) and consumed again. kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define BATCH 64

static volatile sig_atomic_t running = 1;

static void stop(int sig) { (void)sig; running = 0; }

static int parse_order(const rd_kafka_message_t *m) { return m->len > 2 ? 0 : -1; }
static const char *env(const char *k, const char *v) { return getenv(k) ? getenv(k) : v; }

static rd_kafka_t *new_client(rd_kafka_type_t type, const char *brokers, kdc_assignment_t *a) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
        rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
    } else {
        rd_kafka_conf_set(conf, "group.id", env("KAFKA_GROUP_ID", "orders-worker"), err, sizeof err);
        rd_kafka_conf_set(conf, "session.timeout.ms", env("KAFKA_SESSION_TIMEOUT_MS", "45000"), err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set(conf, "auto.offset.reset", "earliest", err, sizeof err); /* first start */
        rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(conf, a);
    }
    return rd_kafka_new(type, conf, err, sizeof err);
}

/* 0 once every audit event and DLQ record of the batch is confirmed. */
static int process_batch(rd_kafka_t *producer, kdc_dlq_t *dlq, kdc_tracker_t *t,
                         rd_kafka_message_t **ms, int n) {
    rd_kafka_resp_err_t err;
    int i = 0;
    for (; i < n; i++) {
        const rd_kafka_message_t *m = ms[i];
        if (parse_order(m) != 0 ? kdc_dlq_produce(dlq, t, m, KDC_CLASS_POISON, "malformed order", /* ok: unconfirmed-dlq-routing */
                                                  5000, &err)
                                : kdc_tracker_producev(t, producer, 5000, &err,
                                                       RD_KAFKA_V_TOPIC(env("KAFKA_OUTPUT_TOPIC", "orders.audit")),
                                                       RD_KAFKA_V_KEY(m->key, m->key_len),
                                                       RD_KAFKA_V_VALUE(m->payload, m->len),
                                                       RD_KAFKA_V_END))
            break; /* not enqueued: the batch fails */
    }
    int rc = kdc_tracker_wait(t, producer, 30000); /* outputs and DLQ records alike */
    if (rc != 0)
        fprintf(stderr, "batch not confirmed: %s\n", kdc_strerror(rc));
    return rc == 0 && i == n ? 0 : -1;
}

int main(int argc, char **argv) {
    const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", argc > 1 ? argv[1] : "localhost:9092");
    kdc_assignment_t *assignment = NULL;
    kdc_tracker_t *batch_tracker = NULL;
    kdc_dlq_t *dlq = NULL;
    if (kdc_assignment_new(&assignment, NULL, NULL) != 0)
        return 1;
    rd_kafka_t *consumer = new_client(RD_KAFKA_CONSUMER, brokers, assignment);
    rd_kafka_t *producer = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
    if (!consumer || !producer || kdc_tracker_new(&batch_tracker) != 0 ||
        kdc_dlq_new(&dlq, producer, "orders-worker") != 0 || kdc_dlq_set_topic(dlq, env("KAFKA_DLQ_TOPIC", "orders.dlq")))
        return 1;
    signal(SIGINT, stop);
    signal(SIGTERM, stop);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, env("KAFKA_INPUT_TOPIC", "orders"), RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);

    rd_kafka_message_t *batch[BATCH];
    uint64_t epochs[BATCH];
    int n = 0, failed = 0;
    while (running && !failed) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 200);
        if (m && !m->err && n < BATCH) {
            epochs[n] = kdc_assignment_stamp(assignment, m);
            batch[n++] = m;
            if (n < BATCH)
                continue;
        } else if (m) {
            rd_kafka_message_destroy(m);
        }
        if (!n)
            continue;
        if (process_batch(producer, dlq, batch_tracker, batch, n) == 0) {
            for (int i = 0; i < n; i++) {
                int rc = kdc_commit_message(consumer, batch[i], assignment, epochs[i], NULL); /* ok: unconfirmed-dlq-routing, bare-commit */
                if (rc == KDC_ERR_STALE)
                    break; /* the partition was revoked: its new owner redoes the rest */
                failed |= rc != 0;
            }
        } else if (kdc_rewind_messages(consumer, batch, (size_t)n, 10000, NULL) != 0) {
            failed = 1; /* the batch is neither committed nor replayed: stop */
        }
        failed |= kdc_tracker_reset(batch_tracker) != 0; /* reports still pending: stop */
        while (n)
            rd_kafka_message_destroy(batch[--n]);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    kdc_assignment_destroy(assignment);
    if (rd_kafka_flush(producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "messages still queued at exit\n");
    kdc_tracker_destroy(batch_tracker);
    kdc_dlq_destroy(dlq);
    rd_kafka_destroy(producer);
    return failed;
}
