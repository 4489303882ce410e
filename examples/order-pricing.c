/*
 * order-pricing: a consume-transform-produce service with a dead-letter queue
 * (DLQ), built on libkdc. It reads orders ("sku:quantity") from "orders",
 * prices them, produces "sku:quantity:total" to "orders.priced", and parks
 * orders it can never price in "orders.dlq".
 *
 *   - outputs go through a DeliveryTracker; a batch counts as done only when
 *     kdc_tracker_wait() confirmed every output (PERSISTED), never on
 *     rd_kafka_flush() == 0;
 *   - a poison order is routed with kdc_dlq_route(), which returns only when
 *     the DLQ copy (with its kdc.* headers and identity) is confirmed;
 *   - failures are classified (kdc_classify_app / kdc_classify): poison is
 *     dead-lettered, anything else halts the service with nothing committed;
 *   - every polled order is tracked in a confirmed watermark and committed
 *     only once it and all orders polled before it in its partition are done;
 *   - a rebalance callback (kdc_assignment_rebalance_cb) stamps an epoch on
 *     each order; work of a revoked or lost partition is never committed.
 *
 * With KAFKA_BOOTSTRAP_SERVERS set it serves that cluster until SIGINT or
 * SIGTERM. Without it, it starts librdkafka's embedded mock cluster, seeds
 * 40 orders (some malformed), processes them, checks what the broker stored
 * and committed, prints a summary and exits (0 when everything adds up).
 * kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <kdc/kdc.h>

#define IN_TOPIC "orders"
#define OUT_TOPIC "orders.priced"
#define DLQ_TOPIC "orders.dlq"
#define GROUP "order-pricing"
#define PARTITIONS 2
#define DEMO_ORDERS 40
#define BATCH 64
#define WAIT_MS 30000

/* The service's own error codes, classified with kdc_classifier_set_app(). */
enum { PRICE_OK = 0, PRICE_MALFORMED = 1, PRICE_UNKNOWN_SKU = 2 };

struct service {
        rd_kafka_t *consumer, *producer;
        kdc_assignment_t *assignment;
        kdc_watermark_t *watermark;
        kdc_tracker_t *outputs;
        kdc_dlq_t *dlq;
        kdc_classifier_t *classifier;
        long priced, dead_lettered, handled;
};

static volatile sig_atomic_t running = 1;

static void stop(int sig) {
        (void)sig;
        running = 0;
}

static void conf_set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char err[256];

        if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "order-pricing: %s\n", err);
                exit(2);
        }
}

/* "sku:quantity" -> "sku:quantity:total". */
static int price(const rd_kafka_message_t *m, char *out, size_t size) {
        static const struct {
                const char *sku;
                int cents;
        } prices[] = {{"apple", 50}, {"pear", 75}, {"plum", 120}};
        char sku[32];
        int qty, n;

        if (!m->payload || m->len == 0 || m->len >= 64)
                return PRICE_MALFORMED;
        char text[64];
        memcpy(text, m->payload, m->len);
        text[m->len] = '\0';
        if (sscanf(text, "%31[a-z]:%d%n", sku, &qty, &n) != 2 || text[n] != '\0' || qty <= 0)
                return PRICE_MALFORMED;
        for (size_t i = 0; i < sizeof prices / sizeof prices[0]; i++)
                if (strcmp(prices[i].sku, sku) == 0) {
                        long total = (long)prices[i].cents * qty;
                        snprintf(out, size, "%s:%d:%ld.%02ld", sku, qty, total / 100, total % 100);
                        return PRICE_OK;
                }
        return PRICE_UNKNOWN_SKU;
}

/* Before partitions go (not lost): commit what is already done. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions, int lost, void *opaque) {
        struct service *s = opaque;

        (void)partitions;
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && !lost)
                kdc_watermark_commit(s->watermark, rk, 1, NULL, NULL);
}

static rd_kafka_t *new_producer(const char *brokers) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];

        conf_set(conf, "bootstrap.servers", brokers);
        conf_set(conf, "enable.idempotence", "true");
        rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
        return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

static rd_kafka_t *new_consumer(const char *brokers, kdc_assignment_t *assignment) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];

        conf_set(conf, "bootstrap.servers", brokers);
        conf_set(conf, "group.id", GROUP);
        conf_set(conf, "enable.auto.commit", "false");
        conf_set(conf, "enable.auto.offset.store", "false");
        conf_set(conf, "auto.offset.reset", "earliest");
        rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(conf, assignment);
        return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
}

/* Handle one polled batch. Returns 0, or -1 when the service must halt
 * (a transient or fatal failure: nothing more is committed). */
static int process_batch(struct service *s, rd_kafka_message_t **batch, uint64_t *epochs,
                         int n) {
        int produced[BATCH] = {0};
        rd_kafka_resp_err_t err;
        int rc, halt = 0;

        for (int i = 0; i < n && !halt; i++) {
                const rd_kafka_message_t *m = batch[i];
                char out[96];
                int failure = price(m, out, sizeof out);

                if (failure == PRICE_OK) {
                        rc = kdc_tracker_produce(s->outputs, s->producer, OUT_TOPIC,
                                                 RD_KAFKA_PARTITION_UA, m->key, m->key_len, out,
                                                 strlen(out), NULL, WAIT_MS, &err);
                        if (rc == 0) {
                                produced[i] = 1;
                        } else {
                                fprintf(stderr, "order-pricing: produce: %s (%s, %s)\n",
                                        kdc_strerror(rc), rd_kafka_err2name(err),
                                        kdc_class_name(kdc_classify(s->classifier, err)));
                                halt = 1;
                        }
                } else if (kdc_classify_app(s->classifier, failure) != KDC_CLASS_POISON) {
                        halt = 1; /* transient: halt; the offset stays */
                } else if ((rc = kdc_dlq_route(s->dlq, m, KDC_CLASS_POISON,
                                               failure == PRICE_MALFORMED ? "malformed order"
                                                                          : "unknown sku",
                                               WAIT_MS, &err)) != 0) {
                        fprintf(stderr, "order-pricing: DLQ routing not confirmed: %s (%s)\n",
                                kdc_strerror(rc), rd_kafka_err2name(err));
                        halt = 1;
                } else {
                        s->dead_lettered++;
                        kdc_watermark_done(s->watermark, rd_kafka_topic_name(m->rkt),
                                           m->partition, m->offset, epochs[i]);
                }
        }

        /* The batch's outputs are confirmed from their own delivery reports
         * (also when halting: none is left unobserved). */
        rc = kdc_tracker_wait(s->outputs, s->producer, WAIT_MS);
        if (rc != 0) {
                const kdc_failure_t *f = kdc_tracker_failure(s->outputs, 0);

                fprintf(stderr, "order-pricing: outputs not confirmed: %s", kdc_strerror(rc));
                if (f)
                        fprintf(stderr, " (first: %s [%d] %s)", f->topic ? f->topic : "?",
                                (int)f->partition, rd_kafka_err2name(f->err));
                fprintf(stderr, "\n");
                return -1;
        }
        for (int i = 0; i < n; i++)
                if (produced[i]) {
                        s->priced++;
                        kdc_watermark_done(s->watermark, rd_kafka_topic_name(batch[i]->rkt),
                                           batch[i]->partition, batch[i]->offset, epochs[i]);
                }
        kdc_tracker_reset(s->outputs);
        return halt ? -1 : 0;
}

/* Poll, process and commit until stopped (or, in the demo, until `until`
 * orders are committed). Returns 0, or 1 if the service halted. */
static int serve(struct service *s, long until) {
        rd_kafka_message_t *batch[BATCH];
        uint64_t epochs[BATCH];
        int halted = 0;

        while (running && !halted && (until < 0 || s->handled < until)) {
                int n = 0;
                rd_kafka_message_t *m;

                while (n < BATCH && (m = rd_kafka_consumer_poll(s->consumer, n ? 0 : 100))) {
                        if (m->err) {
                                rd_kafka_message_destroy(m);
                                continue;
                        }
                        /* Poll order, stamped with the partition's epoch. */
                        epochs[n] = kdc_assignment_stamp(s->assignment, m);
                        if (kdc_watermark_track(s->watermark, rd_kafka_topic_name(m->rkt),
                                                m->partition, m->offset, epochs[n]) != 0) {
                                rd_kafka_message_destroy(m); /* revoked meanwhile */
                                continue;
                        }
                        batch[n++] = m;
                }
                if (n && process_batch(s, batch, epochs, n) != 0)
                        halted = 1;
                kdc_watermark_commit(s->watermark, s->consumer, 0, NULL, NULL);
                s->handled = 0;
                for (int p = 0; p < PARTITIONS; p++) {
                        int64_t pos = kdc_watermark_position(s->watermark, IN_TOPIC, p);
                        if (pos > 0)
                                s->handled += (long)pos;
                }
                while (n)
                        rd_kafka_message_destroy(batch[--n]);
        }
        /* Commit what is done (the watermark never passes anything else). */
        kdc_watermark_commit(s->watermark, s->consumer, 1, NULL, NULL);
        return halted;
}

/* Demo: seed orders, every fifth of them one the service cannot price. */
static int seed(rd_kafka_t *producer) {
        static const char *const good[] = {"apple:3", "pear:2", "plum:1", "apple:10"};
        static const char *const bad[] = {"apple:many", "kiwi:2"};
        kdc_tracker_t *t;
        int rc = 0;

        if (kdc_tracker_new(&t) != 0)
                return -1;
        for (int i = 0; i < DEMO_ORDERS && rc == 0; i++) {
                char key[16];
                const char *v = i % 5 == 4 ? bad[(i / 5) % 2] : good[i % 4];

                snprintf(key, sizeof key, "order-%d", i);
                rc = kdc_tracker_produce(t, producer, IN_TOPIC, i % PARTITIONS, key, strlen(key), v,
                                         strlen(v), NULL, WAIT_MS, NULL);
        }
        if (rc == 0)
                rc = kdc_tracker_wait(t, producer, WAIT_MS);
        kdc_tracker_destroy(t);
        return rc;
}

static int64_t stored(rd_kafka_t *rk, const char *topic, int partitions) {
        int64_t sum = 0;

        for (int p = 0; p < partitions; p++) {
                int64_t lo = 0, hi = 0;
                if (rd_kafka_query_watermark_offsets(rk, topic, p, &lo, &hi, 5000))
                        return -1;
                sum += hi - lo;
        }
        return sum;
}

static int64_t committed(rd_kafka_t *consumer) {
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(PARTITIONS);
        int64_t sum = 0;

        for (int p = 0; p < PARTITIONS; p++)
                rd_kafka_topic_partition_list_add(parts, IN_TOPIC, p);
        if (rd_kafka_committed(consumer, parts, 5000))
                sum = -1;
        for (int p = 0; sum >= 0 && p < parts->cnt; p++)
                sum += parts->elems[p].offset > 0 ? parts->elems[p].offset : 0;
        rd_kafka_topic_partition_list_destroy(parts);
        return sum;
}

int main(void) {
        const char *brokers = getenv("KAFKA_BOOTSTRAP_SERVERS");
        struct service s = {0};
        rd_kafka_t *mock_host = NULL;
        int demo = !brokers || !*brokers, status;

        if (demo) {
                /* librdkafka's embedded mock cluster (real protocol, loopback). */
                rd_kafka_conf_t *conf = rd_kafka_conf_new();
                char err[256];
                rd_kafka_mock_cluster_t *mcluster;

                conf_set(conf, "test.mock.num.brokers", "1");
                mock_host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
                if (!mock_host || !(mcluster = rd_kafka_handle_mock_cluster(mock_host))) {
                        fprintf(stderr, "order-pricing: no mock cluster: %s\n", err);
                        return 2;
                }
                brokers = rd_kafka_mock_cluster_bootstraps(mcluster);
                rd_kafka_mock_topic_create(mcluster, IN_TOPIC, PARTITIONS, 1);
                rd_kafka_mock_topic_create(mcluster, OUT_TOPIC, 1, 1);
                rd_kafka_mock_topic_create(mcluster, DLQ_TOPIC, 1, 1);
        }

        if (kdc_assignment_new(&s.assignment, on_rebalance, &s) != 0 ||
            kdc_watermark_new(&s.watermark, s.assignment, 1000) != 0 ||
            kdc_tracker_new(&s.outputs) != 0 || kdc_classifier_new(&s.classifier) != 0 ||
            kdc_classifier_set_app(s.classifier, PRICE_MALFORMED, KDC_CLASS_POISON) != 0 ||
            kdc_classifier_set_app(s.classifier, PRICE_UNKNOWN_SKU, KDC_CLASS_POISON) != 0)
                return 2;
        s.producer = new_producer(brokers);
        s.consumer = new_consumer(brokers, s.assignment);
        if (!s.producer || !s.consumer || kdc_dlq_new(&s.dlq, s.producer, GROUP) != 0)
                return 2;
        signal(SIGINT, stop);
        signal(SIGTERM, stop);

        if (demo && seed(s.producer) != 0) {
                fprintf(stderr, "order-pricing: could not seed the mock cluster\n");
                return 2;
        }

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, IN_TOPIC, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(s.consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        status = serve(&s, demo ? DEMO_ORDERS : -1);

        if (demo) {
                int64_t in = stored(s.producer, IN_TOPIC, PARTITIONS);
                int64_t out = stored(s.producer, OUT_TOPIC, 1);
                int64_t dlq = stored(s.producer, DLQ_TOPIC, 1);
                int64_t done = committed(s.consumer);

                printf("order-pricing (mock cluster): orders=%lld priced=%lld dead-lettered=%lld "
                       "committed=%lld\n",
                       (long long)in, (long long)out, (long long)dlq, (long long)done);
                if (in != DEMO_ORDERS || out != s.priced || dlq != s.dead_lettered ||
                    out + dlq != in || done != in)
                        status = 1;
        }

        rd_kafka_consumer_close(s.consumer);
        rd_kafka_destroy(s.consumer);
        /* Every output was awaited; serve what may still be outstanding. */
        kdc_tracker_wait(s.outputs, s.producer, WAIT_MS);
        kdc_dlq_destroy(s.dlq);
        kdc_tracker_destroy(s.outputs);
        rd_kafka_destroy(s.producer);
        kdc_watermark_destroy(s.watermark);
        kdc_assignment_destroy(s.assignment);
        kdc_classifier_destroy(s.classifier);
        if (mock_host)
                rd_kafka_destroy(mock_host);
        return status;
}
