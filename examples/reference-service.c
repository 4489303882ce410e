/*
 * reference-service: a consume-process-produce service on libkdc that loses
 * no event under any kdc-harness scenario (docs/kdc-harness.md; README table).
 *
 * It reads events ("amount=N") from $KAFKA_INPUT_TOPIC as a member of
 * $KAFKA_GROUP_ID, writes "amount=N total=T" with the event's key and
 * "event-id" header to $KAFKA_OUTPUT_TOPIC, and routes malformed events to
 * $KAFKA_DLQ_TOPIC. How it keeps the durability contract:
 *
 *   - outputs go through a DeliveryTracker; a batch counts only when
 *     kdc_tracker_wait() confirmed every output (PERSISTED), never on
 *     rd_kafka_flush() == 0;
 *   - a poison event is routed with kdc_dlq_route(), which returns only when
 *     the DLQ copy (identity and coordinates in kdc.* headers) is confirmed;
 *   - each polled event is tracked in a confirmed watermark, in poll order;
 *     only the prefix of confirmed events is committed (at most every
 *     200 ms per partition), so a commit never passes unconfirmed work;
 *   - a rebalance callback keeps assignment epochs: work of a revoked or
 *     lost partition is never committed (the new owner redoes it);
 *   - a transient failure (broker down, _MSG_TIMED_OUT, NOT_ENOUGH_REPLICAS)
 *     commits nothing: the failed batch's partitions are rewound to its
 *     first unconfirmed event and processed again after a back-off;
 *   - a fatal one (TOPIC_AUTHORIZATION_FAILED) halts the service with exit
 *     status 3, committing only what was confirmed; its orchestrator (here:
 *     kdc-harness) restarts it.
 *
 * Run it under the harness: kdc-harness run --all -- reference-service
 * It honours KAFKA_SESSION_TIMEOUT_MS, KAFKA_HEARTBEAT_INTERVAL_MS,
 * KAFKA_MAX_POLL_INTERVAL_MS and KAFKA_MESSAGE_TIMEOUT_MS when set, and stops
 * cleanly on SIGTERM or SIGINT. kdc-lint reports nothing here.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>

#define BATCH 256
#define WAIT_MS 60000         /* longer than any message.timeout.ms a scenario asks for */
#define COMMIT_INTERVAL_MS 200
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define EXIT_FATAL 3

/* The service's own error code, classified poison with kdc_classifier_set_app(). */
enum { EVENT_OK = 0, EVENT_MALFORMED = 1 };

/* What became of a batch. */
enum outcome { DONE, RETRY, HALT };

struct config {
        const char *brokers, *input, *output, *dlq, *group;
        const char *session_timeout, *heartbeat, *max_poll, *message_timeout;
};

struct service {
        struct config cfg;
        rd_kafka_t *consumer, *producer;
        kdc_assignment_t *assignment;
        kdc_watermark_t *watermark;
        kdc_tracker_t *outputs;
        kdc_dlq_t *dlq;
        kdc_classifier_t *classifier;
};

static volatile sig_atomic_t running = 1;

static void stop(int sig) {
        (void)sig;
        running = 0;
}

static const char *env(const char *name, const char *fallback) {
        const char *v = getenv(name);

        return v && *v ? v : fallback;
}

static int conf_set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char err[256];

        if (!value)
                return 0;
        if (rd_kafka_conf_set(conf, name, value, err, sizeof err) != RD_KAFKA_CONF_OK) {
                fprintf(stderr, "reference-service: %s\n", err);
                return -1;
        }
        return 0;
}

/* "amount=N", N in 1..1000000, nothing else. */
static int parse(const rd_kafka_message_t *m, long *amount) {
        char text[32], *end;

        if (!m->payload || m->len < 8 || m->len >= sizeof text)
                return EVENT_MALFORMED;
        memcpy(text, m->payload, m->len);
        text[m->len] = '\0';
        if (strncmp(text, "amount=", 7) != 0 || text[7] < '1' || text[7] > '9')
                return EVENT_MALFORMED;
        *amount = strtol(text + 7, &end, 10);
        if (*end != '\0' || *amount < 1 || *amount > 1000000)
                return EVENT_MALFORMED;
        return EVENT_OK;
}

/* The output's headers: the input's "event-id", if it has one. */
static rd_kafka_headers_t *output_headers(const rd_kafka_message_t *m) {
        rd_kafka_headers_t *in = NULL, *out = rd_kafka_headers_new(1);
        const void *id;
        size_t len;

        if (rd_kafka_message_headers(m, &in) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_header_get_last(in, "event-id", &id, &len) == RD_KAFKA_RESP_ERR_NO_ERROR)
                rd_kafka_header_add(out, "event-id", -1, id, (ssize_t)len);
        return out;
}

/* Before partitions go (not lost): commit what is already confirmed. */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions, int lost, void *opaque) {
        struct service *s = opaque;

        (void)partitions;
        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && !lost)
                kdc_watermark_commit(s->watermark, rk, 1, NULL, NULL);
}

static rd_kafka_t *new_producer(const struct config *cfg) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];

        if (conf_set(conf, "bootstrap.servers", cfg->brokers) ||
            conf_set(conf, "enable.idempotence", "true") ||
            conf_set(conf, "message.timeout.ms", cfg->message_timeout)) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
        return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

static rd_kafka_t *new_consumer(const struct config *cfg, kdc_assignment_t *assignment) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];

        if (conf_set(conf, "bootstrap.servers", cfg->brokers) ||
            conf_set(conf, "group.id", cfg->group) ||
            conf_set(conf, "enable.auto.commit", "false") ||
            conf_set(conf, "enable.auto.offset.store", "false") ||
            conf_set(conf, "auto.offset.reset", "earliest") ||
            conf_set(conf, "session.timeout.ms", cfg->session_timeout) ||
            conf_set(conf, "heartbeat.interval.ms", cfg->heartbeat) ||
            conf_set(conf, "max.poll.interval.ms", cfg->max_poll)) {
                rd_kafka_conf_destroy(conf);
                return NULL;
        }
        rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
        rd_kafka_conf_set_opaque(conf, assignment);
        return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
}

/* A transient failure: go back, in every partition of the batch, to its
 * first event not confirmed, so that the next polls deliver it again. */
static void rewind_batch(struct service *s, rd_kafka_message_t **batch, const int *done, int n) {
        rd_kafka_topic_partition_list_t *to = rd_kafka_topic_partition_list_new(n);

        for (int i = 0; i < n; i++) {
                const char *topic = rd_kafka_topic_name(batch[i]->rkt);
                rd_kafka_topic_partition_t *p =
                    rd_kafka_topic_partition_list_find(to, topic, batch[i]->partition);
                if (done[i])
                        continue;
                if (!p)
                        rd_kafka_topic_partition_list_add(to, topic, batch[i]->partition)->offset =
                            batch[i]->offset;
                else if (batch[i]->offset < p->offset)
                        p->offset = batch[i]->offset;
        }
        if (to->cnt > 0) {
                rd_kafka_error_t *error = rd_kafka_seek_partitions(s->consumer, to, 10000);
                if (error) {
                        /* e.g. a partition revoked meanwhile: its new owner redoes it */
                        fprintf(stderr, "reference-service: rewind: %s\n",
                                rd_kafka_error_string(error));
                        rd_kafka_error_destroy(error);
                }
        }
        rd_kafka_topic_partition_list_destroy(to);
}

/* The class of a failed libkdc call: from the librdkafka error when there
 * is one, transient otherwise (a timeout: the outcome is unknown). */
static kdc_class_t failure_class(const struct service *s, rd_kafka_resp_err_t err) {
        kdc_class_t cls = err ? kdc_classify(s->classifier, err) : KDC_CLASS_TRANSIENT;

        return cls == KDC_CLASS_NONE ? KDC_CLASS_TRANSIENT : cls;
}

static enum outcome process_batch(struct service *s, rd_kafka_message_t **batch,
                                  const uint64_t *epochs, int n) {
        int produced[BATCH] = {0}, done[BATCH] = {0};
        kdc_class_t failed = KDC_CLASS_NONE;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        int rc;

        for (int i = 0; i < n && failed == KDC_CLASS_NONE; i++) {
                const rd_kafka_message_t *m = batch[i];
                long amount = 0;

                if (parse(m, &amount) == EVENT_OK) {
                        char out[64];
                        int len = snprintf(out, sizeof out, "amount=%ld total=%ld.%02ld", amount,
                                           amount * 125 / 100, amount * 125 % 100);
                        rd_kafka_headers_t *h = output_headers(m);

                        rc = kdc_tracker_produce(s->outputs, s->producer, s->cfg.output,
                                                 RD_KAFKA_PARTITION_UA, m->key, m->key_len, out,
                                                 (size_t)len, h, WAIT_MS, &err);
                        if (rc == 0) {
                                produced[i] = 1;
                        } else {
                                rd_kafka_headers_destroy(h); /* still ours on failure */
                                failed = failure_class(s, err);
                                fprintf(stderr, "reference-service: produce: %s (%s)\n",
                                        kdc_strerror(rc), rd_kafka_err2name(err));
                        }
                } else if (kdc_classify_app(s->classifier, EVENT_MALFORMED) != KDC_CLASS_POISON) {
                        failed = KDC_CLASS_TRANSIENT;
                } else if ((rc = kdc_dlq_route(s->dlq, m, KDC_CLASS_POISON, "malformed event",
                                               WAIT_MS, &err)) == 0) {
                        done[i] = 1;
                        kdc_watermark_done_message(s->watermark, m, epochs[i]);
                } else {
                        failed = failure_class(s, err);
                        fprintf(stderr, "reference-service: DLQ routing not confirmed: %s (%s)\n",
                                kdc_strerror(rc), rd_kafka_err2name(err));
                }
        }

        /* The outputs are confirmed from their own delivery reports, also
         * when the batch failed (none is left unobserved). */
        rc = kdc_tracker_wait(s->outputs, s->producer, WAIT_MS);
        if (rc == 0) {
                for (int i = 0; i < n; i++)
                        if (produced[i]) {
                                done[i] = 1;
                                kdc_watermark_done_message(s->watermark, batch[i], epochs[i]);
                        }
        } else {
                rd_kafka_resp_err_t first = kdc_tracker_first_error(s->outputs);
                kdc_class_t cls = failure_class(s, first);

                fprintf(stderr, "reference-service: outputs not confirmed: %s (%s)\n",
                        kdc_strerror(rc), rd_kafka_err2name(first));
                if (failed == KDC_CLASS_NONE || cls == KDC_CLASS_FATAL)
                        failed = cls;
        }
        if (kdc_tracker_reset(s->outputs) != 0) {
                /* reports still pending (a wait timed out): a fresh tracker;
                 * the old one is freed once its last report is in */
                kdc_tracker_destroy(s->outputs);
                if (kdc_tracker_new(&s->outputs) != 0)
                        return HALT;
        }
        if (failed == KDC_CLASS_NONE)
                return DONE;
        if (failed == KDC_CLASS_FATAL)
                return HALT;
        rewind_batch(s, batch, done, n);
        return RETRY;
}

/* Up to BATCH events in poll order, each stamped with its partition's
 * epoch and tracked in the watermark; returns how many. */
static int poll_batch(struct service *s, rd_kafka_message_t **batch, uint64_t *epochs) {
        rd_kafka_message_t *m;
        int n = 0;

        while (n < BATCH && (m = rd_kafka_consumer_poll(s->consumer, n ? 0 : 100))) {
                if (m->err) {
                        if (m->err != RD_KAFKA_RESP_ERR__PARTITION_EOF)
                                fprintf(stderr, "reference-service: consumer: %s\n",
                                        rd_kafka_message_errstr(m));
                        rd_kafka_message_destroy(m);
                        continue;
                }
                epochs[n] = kdc_assignment_stamp(s->assignment, m);
                if (kdc_watermark_track_message(s->watermark, m, epochs[n]) != 0) {
                        rd_kafka_message_destroy(m); /* revoked meanwhile */
                        continue;
                }
                batch[n++] = m;
        }
        return n;
}

/* Poll, process and commit until stopped or halted; 0 or EXIT_FATAL. */
static int serve(struct service *s) {
        rd_kafka_message_t *batch[BATCH];
        uint64_t epochs[BATCH];
        int backoff = 0, status = 0;

        while (running && !status) {
                int n = poll_batch(s, batch, epochs);

                if (n) {
                        switch (process_batch(s, batch, epochs, n)) {
                        case DONE:
                                backoff = 0;
                                break;
                        case RETRY:
                                backoff = backoff ? backoff * 2 : BACKOFF_MIN_MS;
                                if (backoff > BACKOFF_MAX_MS)
                                        backoff = BACKOFF_MAX_MS;
                                rd_kafka_poll(s->producer, backoff);
                                break;
                        case HALT:
                                status = EXIT_FATAL;
                                break;
                        }
                }
                /* Only the confirmed prefix; a failed commit is retried by
                 * the next call, a revoked partition is never committed. */
                kdc_watermark_commit(s->watermark, s->consumer, 0, NULL, NULL);
                while (n)
                        rd_kafka_message_destroy(batch[--n]);
        }
        kdc_watermark_commit(s->watermark, s->consumer, 1, NULL, NULL);
        return status;
}

int main(void) {
        struct service s = {0};
        int status;

        s.cfg.brokers = env("KAFKA_BOOTSTRAP_SERVERS", NULL);
        s.cfg.input = env("KAFKA_INPUT_TOPIC", "kdc.input");
        s.cfg.output = env("KAFKA_OUTPUT_TOPIC", "kdc.output");
        s.cfg.dlq = env("KAFKA_DLQ_TOPIC", "kdc.dlq");
        s.cfg.group = env("KAFKA_GROUP_ID", "kdc-service");
        s.cfg.session_timeout = env("KAFKA_SESSION_TIMEOUT_MS", NULL);
        s.cfg.heartbeat = env("KAFKA_HEARTBEAT_INTERVAL_MS", NULL);
        s.cfg.max_poll = env("KAFKA_MAX_POLL_INTERVAL_MS", NULL);
        s.cfg.message_timeout = env("KAFKA_MESSAGE_TIMEOUT_MS", NULL);
        if (!s.cfg.brokers) {
                fprintf(stderr, "reference-service: set KAFKA_BOOTSTRAP_SERVERS (or run it "
                                "under kdc-harness)\n");
                return 2;
        }

        if (kdc_assignment_new(&s.assignment, on_rebalance, &s) != 0 ||
            kdc_watermark_new(&s.watermark, s.assignment, COMMIT_INTERVAL_MS) != 0 ||
            kdc_tracker_new(&s.outputs) != 0 || kdc_classifier_new(&s.classifier) != 0 ||
            kdc_classifier_set_app(s.classifier, EVENT_MALFORMED, KDC_CLASS_POISON) != 0)
                return 2;
        s.producer = new_producer(&s.cfg);
        s.consumer = new_consumer(&s.cfg, s.assignment);
        if (!s.producer || !s.consumer || kdc_dlq_new(&s.dlq, s.producer, s.cfg.group) != 0 ||
            kdc_dlq_set_topic(s.dlq, s.cfg.dlq) != 0)
                return 2;
        signal(SIGINT, stop);
        signal(SIGTERM, stop);

        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, s.cfg.input, RD_KAFKA_PARTITION_UA);
        rd_kafka_resp_err_t err = rd_kafka_subscribe(s.consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);
        if (err) {
                fprintf(stderr, "reference-service: subscribe: %s\n", rd_kafka_err2str(err));
                return 2;
        }

        status = serve(&s);

        rd_kafka_consumer_close(s.consumer);
        rd_kafka_destroy(s.consumer);
        /* Every output was awaited; serve whatever report is still due. */
        kdc_tracker_wait(s.outputs, s.producer, WAIT_MS);
        kdc_dlq_destroy(s.dlq);
        kdc_tracker_destroy(s.outputs);
        rd_kafka_destroy(s.producer);
        kdc_watermark_destroy(s.watermark);
        kdc_assignment_destroy(s.assignment);
        kdc_classifier_destroy(s.classifier);
        return status;
}
