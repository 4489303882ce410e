/*
 * orders-worker, done right (compare examples/orders-worker.c):
 *   - every producer registers a delivery-report callback that writes the
 *     outcome into the message's own status slot;
 *   - a poison record is committed only after its DLQ delivery report said
 *     success (opaque status + poll loop); otherwise the worker stops and the
 *     record is redelivered;
 *   - each processed record is committed by message (rd_kafka_commit_message),
 *     synchronously, before the next poll; the rebalance callback therefore
 *     has nothing in flight to finish at a revoke and only (un)assigns.
 * kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <librdkafka/rdkafka.h>

struct delivery { volatile int done; rd_kafka_resp_err_t err; };

struct worker {
    rd_kafka_t *consumer;
    rd_kafka_t *audit;
    rd_kafka_t *dlq;
    const char *dlq_topic;
};

static volatile sig_atomic_t running = 1;

static void stop(int sig) { (void)sig; running = 0; }

static int ledger_write(const void *payload, size_t len) { return payload && len ? 0 : -1; }

static int parse_order(const rd_kafka_message_t *m) { return m->len > 2 ? 0 : -1; }

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
    struct delivery *d = m->_private;
    (void)rk;
    (void)opaque;
    if (m->err)
        fprintf(stderr, "delivery to %s failed: %s\n", rd_kafka_topic_name(m->rkt),
                rd_kafka_err2str(m->err));
    if (d) {
        d->err = m->err;
        d->done = 1;
    }
}

static rd_kafka_t *new_producer(const char *brokers) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);
    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *parts, void *opaque) {
    (void)opaque;
    rd_kafka_error_t *e = NULL;
    int assign = err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS;
    if (!strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE"))
        e = assign ? rd_kafka_incremental_assign(rk, parts) : rd_kafka_incremental_unassign(rk, parts);
    else if (rd_kafka_assign(rk, assign ? parts : NULL) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "assign failed\n");
    if (e) {
        fprintf(stderr, "rebalance: %s\n", rd_kafka_error_string(e));
        rd_kafka_error_destroy(e);
    }
}

static rd_kafka_t *new_consumer(const char *brokers) {
    char err[512];
    rd_kafka_conf_t *conf = rd_kafka_conf_new();
    rd_kafka_conf_set(conf, "bootstrap.servers", brokers, err, sizeof err);
    rd_kafka_conf_set(conf, "group.id", "orders-worker", err, sizeof err);
    rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
    rd_kafka_conf_set_rebalance_cb(conf, on_rebalance);
    return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
}

/* Produces and waits for this message's own delivery report: 0 when acknowledged. */
static int produce_confirmed(rd_kafka_t *rk, const char *topic, const rd_kafka_message_t *m) {
    struct delivery d = {0, RD_KAFKA_RESP_ERR_NO_ERROR};
    if (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_OPAQUE(&d), /* ok: produce-without-delivery-callback */
                          RD_KAFKA_V_VALUE(m->payload, m->len),
                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))
        return -1;
    while (!d.done)
        rd_kafka_poll(rk, 100);
    return d.err == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : -1;
}

static void run(struct worker *w) {
    while (running) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(w->consumer, 500);
        if (!m)
            continue;
        int ok = 1;
        if (!m->err) {
            if (parse_order(m) != 0)
                ok = produce_confirmed(w->dlq, w->dlq_topic, m) == 0; /* poison: park it */
            else
                ok = ledger_write(m->payload, m->len) == 0 &&
                     produce_confirmed(w->audit, "orders.audit", m) == 0;
            if (ok)
                rd_kafka_commit_message(w->consumer, m, 0); /* ok: unconfirmed-dlq-routing, bare-commit */
        }
        rd_kafka_message_destroy(m);
        if (!ok)
            break; /* transient failure: do not commit, stop, let the group redeliver */
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
    rd_kafka_subscribe(w.consumer, topics);
    rd_kafka_topic_partition_list_destroy(topics);
    run(&w);
    rd_kafka_consumer_close(w.consumer);
    rd_kafka_destroy(w.consumer);
    if (rd_kafka_flush(w.audit, 10000) || rd_kafka_flush(w.dlq, 10000))
        fprintf(stderr, "messages still queued at exit\n");
    rd_kafka_destroy(w.audit);
    rd_kafka_destroy(w.dlq);
    return 0;
}
