/*
 * orders-worker on libkdc (compare examples/orders-worker-fixed.c, which does
 * the same by hand):
 *   - producers register kdc_dr_msg_cb, so every produce has a delivery report;
 *   - a poison record goes to "orders.dlq" with kdc_produce_confirmed(), which
 *     returns only when that message's own report arrived;
 *   - audit events of a batch are produced through a DeliveryTracker and the
 *     batch is confirmed by kdc_tracker_wait(), not by rd_kafka_flush() == 0;
 *   - inputs are committed by message (kdc_commit_message), after the effect,
 *     and only while the partition is still ours: libkdc's rebalance callback
 *     keeps epochs, each message is stamped when polled, and a batch from a
 *     revoked or lost partition is not committed (KDC_ERR_STALE).
 * kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define BATCH 64

static volatile sig_atomic_t running = 1;

static void stop(int sig) { (void)sig; running = 0; }

static int parse_order(const rd_kafka_message_t *m) { return m->len > 2 ? 0 : -1; }

static rd_kafka_t *new_client(rd_kafka_type_t type, const char *brokers,
                              kdc_assignment_t *assignment) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    if (type == RD_KAFKA_PRODUCER) {
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
        rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
    } else {
        rd_kafka_conf_set(conf, "group.id", "orders-worker", err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(conf, assignment);
    }
    return rd_kafka_new(type, conf, err, sizeof err);
}

/* Handles one batch; returns the number of leading messages whose effect is confirmed. */
static int process_batch(rd_kafka_t *producer, kdc_tracker_t *audit, rd_kafka_message_t **ms,
                         int n) {
    rd_kafka_resp_err_t err;
    for (int i = 0; i < n; i++) {
        const rd_kafka_message_t *m = ms[i];
        if (parse_order(m) != 0) {
            /* poison: park it, confirmed, before anything commits past it */
            if (kdc_produce_confirmed(producer, "orders.dlq", RD_KAFKA_PARTITION_UA, m->key, /* ok: unconfirmed-dlq-routing */
                                      m->key_len, m->payload, m->len, 30000, &err) != 0)
                return i;
            continue;
        }
        if (kdc_tracker_produce(audit, producer, "orders.audit", RD_KAFKA_PARTITION_UA, m->key,
                                m->key_len, m->payload, m->len, NULL, 5000, &err) != 0)
            return 0;
    }
    int rc = kdc_tracker_wait(audit, producer, 30000);
    if (rc != 0) {
        fprintf(stderr, "audit batch not confirmed: %s (%s)\n", kdc_strerror(rc),
                rd_kafka_err2str(kdc_tracker_first_error(audit)));
        return 0;
    }
    kdc_tracker_reset(audit);
    return n;
}

int main(int argc, char **argv) {
    const char *brokers = argc > 1 ? argv[1] : "localhost:9092";
    kdc_assignment_t *assignment = NULL;
    if (kdc_assignment_new(&assignment, NULL, NULL) != 0)
        return 1;
    rd_kafka_t *consumer = new_client(RD_KAFKA_CONSUMER, brokers, assignment);
    rd_kafka_t *producer = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
    kdc_tracker_t *audit = NULL;
    if (!consumer || !producer || kdc_tracker_new(&audit) != 0)
        return 1;
    signal(SIGINT, stop);
    rd_kafka_poll_set_consumer(consumer);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "orders", RD_KAFKA_PARTITION_UA);
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
        int done = process_batch(producer, audit, batch, n);
        /* commit exactly the confirmed prefix, message by message */
        for (int i = 0; i < done; i++) {
            int rc = kdc_commit_message(consumer, batch[i], assignment, epochs[i], NULL); /* ok: unconfirmed-dlq-routing, bare-commit */
            if (rc == KDC_ERR_STALE)
                break; /* the partition was revoked: its new owner redoes the rest */
            if (rc != 0)
                failed = 1;
        }
        failed |= done < n; /* transient failure: stop, the rest is redelivered */
        while (n)
            rd_kafka_message_destroy(batch[--n]);
    }
    rd_kafka_consumer_close(consumer);
    rd_kafka_destroy(consumer);
    kdc_assignment_destroy(assignment);
    if (rd_kafka_flush(producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "messages still queued at exit\n");
    kdc_tracker_destroy(audit);
    rd_kafka_destroy(producer);
    return failed;
}
