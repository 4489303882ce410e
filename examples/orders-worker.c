/*
 * orders-worker: consumes "orders", writes each order to the ledger, routes
 * poison records to "orders.dlq" and publishes an audit event per order.
 *
 * This version has the three bugs kdc was founded for; kdc-lint reports each:
 *   - the audit producer has no delivery-report callback
 *     (produce-without-delivery-callback),
 *   - a poison record is committed right after its DLQ produce, with one
 *     rd_kafka_poll(0) and no wait for the DLQ delivery report
 *     (unconfirmed-dlq-routing),
 *   - the loop commits with a NULL offset list while offsets are stored
 *     automatically on hand-over (bare-commit), right after producing the
 *     audit event without waiting for its delivery report
 *     (commit-before-delivery-report).
 * It also drops records whenever the local queue is full: both helpers log a
 * failed produce and return nothing, and the loop goes on to the next order
 * (queue-full-dropped).
 * examples/orders-worker-fixed.c is the same service done right.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

struct worker {
    rd_kafka_t *consumer;
    rd_kafka_t *audit;      /* audit events, fire and forget */
    rd_kafka_t *dlq;        /* dead-letter producer */
    const char *dlq_topic;
};

static volatile sig_atomic_t running = 1;

static void stop(int sig) { (void)sig; running = 0; }

static int ledger_write(const void *payload, size_t len) { return payload && len ? 0 : -1; }

static int parse_order(const rd_kafka_message_t *m) { return m->len > 2 ? 0 : -1; }

static rd_kafka_t *new_producer(const char *brokers) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    if (rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err) != RD_KAFKA_CONF_OK) {
        rd_kafka_conf_destroy(conf);
        return NULL;
    }
    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

static rd_kafka_t *new_consumer(const char *brokers) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "orders-worker", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
}

static void publish_audit(struct worker *w, const rd_kafka_message_t *m) {
    rd_kafka_resp_err_t e = rd_kafka_producev(w->audit, RD_KAFKA_V_TOPIC("orders.audit"), /* expect: produce-without-delivery-callback */
                                              RD_KAFKA_V_VALUE(m->payload, m->len),
                                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                              RD_KAFKA_V_END);
    if (e)
        fprintf(stderr, "audit enqueue failed: %s\n", rd_kafka_err2str(e));
    rd_kafka_poll(w->audit, 0);
}

static void park_in_dlq(struct worker *w, rd_kafka_message_t *m) {
    if (rd_kafka_producev(w->dlq, RD_KAFKA_V_TOPIC(w->dlq_topic), /* expect: produce-without-delivery-callback */
                          RD_KAFKA_V_VALUE(m->payload, m->len),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
        return;
    rd_kafka_poll(w->dlq, 0);
    fprintf(stderr, "parked offset %lld in %s\n", (long long)m->offset, w->dlq_topic);
    rd_kafka_commit_message(w->consumer, m, 0); /* expect: unconfirmed-dlq-routing; ok: bare-commit */
}

static void run(struct worker *w) {
    while (running) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(w->consumer, 500);
        if (!m)
            continue;
        if (m->err) {
            rd_kafka_message_destroy(m);
            continue;
        }
        if (parse_order(m) != 0) {
            park_in_dlq(w, m); /* expect: queue-full-dropped */
        } else if (ledger_write(m->payload, m->len) == 0) {
            publish_audit(w, m); /* expect: queue-full-dropped */
            rd_kafka_commit(w->consumer, NULL, 0); /* expect: bare-commit, commit-before-delivery-report */
        }
        rd_kafka_message_destroy(m);
    }
}

int main(int argc, char **argv) {
    const char *brokers = argc > 1 ? argv[1] : "localhost:9092";
    struct worker w = {new_consumer(brokers), new_producer(brokers), new_producer(brokers),
                       "orders.dlq"};
    if (!w.consumer || !w.audit || !w.dlq)
        return 1;
    signal(SIGINT, stop);
    rd_kafka_poll_set_consumer(w.consumer);
    rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
    rd_kafka_topic_partition_list_add(topics, "orders", RD_KAFKA_PARTITION_UA);
    rd_kafka_subscribe(w.consumer, topics); /* expect: missing-rebalance-callback */
    rd_kafka_topic_partition_list_destroy(topics);
    run(&w);
    rd_kafka_consumer_close(w.consumer);
    rd_kafka_destroy(w.consumer);
    rd_kafka_flush(w.audit, 10000);
    rd_kafka_flush(w.dlq, 10000);
    rd_kafka_destroy(w.audit);
    rd_kafka_destroy(w.dlq);
    return 0;
}
