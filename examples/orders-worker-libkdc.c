/*
 * orders-worker on libkdc (compare examples/orders-worker-fixed.c, done by hand): each batch's
 * audit events (kdc_tracker_producev) and poison records (kdc_dlq_produce: "orders.dlq" with the
 * kdc.* headers) go through one DeliveryTracker, confirmed by one kdc_tracker_wait(), never by
 * rd_kafka_flush() == 0; a confirmed batch is committed by message while its partitions are still
 * ours (epochs from libkdc's rebalance callback); a failed one is not committed: the first message
 * of each of its partitions goes to libkdc's retry policy (kdc_retry_failed: the partition paused,
 * exponential back-off while the worker keeps polling, at most RETRY_ATTEMPTS attempts, then the
 * worker stops), the rest is dropped and consumed again once the retry succeeded (kdc_retry_done).
 * Its libkdc statistics (kdc/stats.h) go to $KDC_HARNESS_STATS when set, every second and at exit.
 * kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define BATCH 64
#define RETRY_ATTEMPTS 10

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

/* KDC_CLASS_NONE once every audit event and DLQ record of the batch is confirmed, else the
 * failure's class. */
static kdc_class_t process_batch(rd_kafka_t *producer, kdc_dlq_t *dlq, kdc_tracker_t *t,
                         rd_kafka_message_t **ms, int n) {
    rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
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
    if (rc == 0 && i == n)
        return KDC_CLASS_NONE;
    fprintf(stderr, "batch not confirmed: %s\n", kdc_strerror(rc));
    if (rc == KDC_ERR_DELIVERY)
        err = kdc_tracker_first_error(t);
    kdc_class_t cls = kdc_classify(NULL, err);
    return cls == KDC_CLASS_NONE ? KDC_CLASS_TRANSIENT : cls; /* a timeout: outcome unknown */
}

/* A failed batch: the first message of each of its partitions goes to the retry policy (which
 * then owns it: its slot is cleared); the rest is dropped, uncommitted. 1: stop the worker. */
static int retry_batch(kdc_retry_t *retry, rd_kafka_t *consumer, kdc_assignment_t *a,
                       rd_kafka_message_t **ms, const uint64_t *epochs, int n, kdc_class_t cls) {
    for (int i = 0; i < n; i++) {
        int first = 1;
        for (int j = 0; j < i && first; j++)
            first = !ms[j] || ms[j]->rkt != ms[i]->rkt || ms[j]->partition != ms[i]->partition;
        if (!first)
            continue;
        int r = kdc_retry_failed(retry, consumer, ms[i], a, epochs[i], cls, "batch not confirmed", NULL);
        if (r == KDC_RETRY_WAIT)
            ms[i] = NULL;
        else if (r != KDC_RETRY_DROP)
            return 1; /* exhausted (halt), fatal, or not recorded: nothing committed */
    }
    return 0;
}

int main(int argc, char **argv) {
    const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", argc > 1 ? argv[1] : "localhost:9092");
    kdc_assignment_t *assignment = NULL;
    kdc_tracker_t *batch_tracker = NULL;
    kdc_dlq_t *dlq = NULL;
    kdc_retry_t *retry = NULL;
    kdc_retry_policy_t policy;
    kdc_stats_t *stats = NULL;
    const char *stats_path = getenv("KDC_HARNESS_STATS");
    time_t stats_at = 0;
    /* Transient failures: 1 s doubling to 30 s, RETRY_ATTEMPTS attempts, then stop. A revoked
     * partition's pending retry is dropped by the assignment's hook. */
    if (kdc_retry_new(&retry, NULL) != 0 || kdc_retry_get_policy(retry, KDC_CLASS_TRANSIENT, &policy) != 0)
        return 1;
    policy.max_attempts = RETRY_ATTEMPTS;
    if (kdc_retry_set_policy(retry, KDC_CLASS_TRANSIENT, &policy) != 0 ||
        kdc_assignment_new(&assignment, kdc_retry_rebalance_hook, retry) != 0)
        return 1;
    rd_kafka_t *consumer = new_client(RD_KAFKA_CONSUMER, brokers, assignment);
    rd_kafka_t *producer = new_client(RD_KAFKA_PRODUCER, brokers, NULL);
    if (!consumer || !producer || kdc_tracker_new(&batch_tracker) != 0 ||
        kdc_dlq_new(&dlq, producer, "orders-worker") != 0 || kdc_dlq_set_topic(dlq, env("KAFKA_DLQ_TOPIC", "orders.dlq")))
        return 1;
    /* Statistics, counted by the objects that see them (destroyed after them all). */
    if (kdc_stats_new(&stats, "orders-worker") != 0 || kdc_stats_attach_tracker(stats, batch_tracker) != 0 ||
        kdc_stats_attach_assignment(stats, assignment) != 0 || kdc_stats_attach_retry(stats, retry) != 0 ||
        kdc_stats_attach_dlq(stats, dlq) != 0)
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
        if (stats_path && time(NULL) != stats_at) { /* each second: lag (cached watermarks), then the file */
            stats_at = time(NULL);
            kdc_stats_update_lag(stats, consumer, 0);
            kdc_stats_write_json_file(stats, stats_path);
        }
        if (!n && kdc_retry_next(retry, &batch[0], &epochs[0]) == 1) {
            n = 1; /* a retried message whose back-off is over: a batch of its own */
        } else {
            /* keep polling while messages wait: max.poll.interval.ms is never exceeded */
            rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, kdc_retry_timeout(retry, 200));
            if (m && !m->err && n < BATCH) {
                epochs[n] = kdc_assignment_stamp(assignment, m);
                batch[n++] = m;
                if (n < BATCH)
                    continue;
            } else if (m) {
                if (m->err)
                    kdc_stats_consumer_error(stats, m->err); /* e.g. _MAX_POLL_EXCEEDED */
                rd_kafka_message_destroy(m);
            }
        }
        if (!n)
            continue;
        kdc_class_t cls = process_batch(producer, dlq, batch_tracker, batch, n);
        if (cls == KDC_CLASS_NONE) {
            for (int i = 0; i < n; i++) {
                int rc = kdc_commit_message(consumer, batch[i], assignment, epochs[i], NULL); /* ok: unconfirmed-dlq-routing, bare-commit */
                if (rc == KDC_ERR_STALE)
                    break; /* the partition was revoked: its new owner redoes the rest */
                failed |= rc != 0;
                kdc_retry_done(retry, consumer, batch[i]); /* a retried one: resume its partition */
            }
        } else {
            failed = retry_batch(retry, consumer, assignment, batch, epochs, n, cls);
        }
        failed |= kdc_tracker_reset(batch_tracker) != 0; /* reports still pending: stop */
        while (n)
            if (batch[--n])
                rd_kafka_message_destroy(batch[n]);
    }
    kdc_stats_update_lag(stats, consumer, 0);
    rd_kafka_consumer_close(consumer);
    kdc_retry_destroy(retry); /* holds messages of the consumer */
    rd_kafka_destroy(consumer);
    kdc_assignment_destroy(assignment);
    if (rd_kafka_flush(producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR)
        fprintf(stderr, "messages still queued at exit\n");
    if (stats_path && kdc_stats_write_json_file(stats, stats_path) != 0)
        fprintf(stderr, "statistics not written to %s\n", stats_path);
    kdc_tracker_destroy(batch_tracker);
    kdc_dlq_destroy(dlq);
    rd_kafka_destroy(producer);
    kdc_stats_destroy(stats);
    return failed;
}
