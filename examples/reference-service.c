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
 *     commits nothing: in each partition of the failed batch, its first
 *     unconfirmed event goes to libkdc's retry policy (kdc/retry.h), which
 *     pauses the partition and hands the event back after an exponential
 *     back-off while the service keeps polling (so max.poll.interval.ms is
 *     never exceeded by a retry); the rest of the batch is dropped
 *     uncommitted and consumed again once the retried event succeeded;
 *     after RETRY_ATTEMPTS attempts the service halts (exit status 3);
 *   - a fatal one (TOPIC_AUTHORIZATION_FAILED) halts the service with exit
 *     status 3, committing only what was confirmed; its orchestrator (here:
 *     kdc-harness) restarts it;
 *   - with KDC_HARNESS_SINK=sqlite:PATH or postgresql:CONNINFO (kdc-harness's
 *     sink scenarios) an event's effect is a row of the table effects in that
 *     database instead of an output record, written idempotently (only when
 *     no row names the event: a redelivered event is not written twice); the
 *     row counts as confirmed when the statement committed (SQLite:
 *     sqlite3_step() returned SQLITE_DONE; PostgreSQL: PGRES_COMMAND_OK in
 *     autocommit). A busy, full, refused or unreachable database is transient
 *     (retried as above, reconnecting to PostgreSQL; never committed); a row
 *     the database rejects by a constraint (SQLITE_CONSTRAINT, SQLSTATE class
 *     23) is a poison message, routed to the DLQ.
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
#include <libpq-fe.h>
#include <sqlite3.h>

#define BATCH 256
#define WAIT_MS 60000         /* longer than any message.timeout.ms a scenario asks for */
#define COMMIT_INTERVAL_MS 200
#define BACKOFF_MIN_MS 100
#define BACKOFF_MAX_MS 2000
#define RETRY_ATTEMPTS 60     /* about two minutes of back-off before halting */
#define EXIT_FATAL 3
#define SINK_BUSY_MS 100      /* a locked database: wait this long, then retry by policy */

/* The service's own error code, classified poison with kdc_classifier_set_app(). */
enum { EVENT_OK = 0, EVENT_MALFORMED = 1 };

/* What became of an event's row. */
enum effect { EFFECT_WRITTEN, EFFECT_TRANSIENT, EFFECT_REJECTED };

/* What became of a batch. */
enum outcome { DONE, RETRY, HALT };

struct config {
        const char *brokers, *input, *output, *dlq, *group;
        const char *session_timeout, *heartbeat, *max_poll, *message_timeout;
        const char *sink; /* "sqlite:PATH", or NULL: effects are output records */
};

struct service {
        struct config cfg;
        rd_kafka_t *consumer, *producer;
        kdc_assignment_t *assignment;
        kdc_watermark_t *watermark;
        kdc_tracker_t *outputs;
        kdc_dlq_t *dlq;
        kdc_classifier_t *classifier;
        kdc_retry_t *retry;
        sqlite3 *sink;          /* with cfg.sink sqlite:PATH: the effects' database */
        sqlite3_stmt *insert;   /* its idempotent insert */
        PGconn *pg;             /* with cfg.sink postgresql:CONNINFO */
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

/* The event's id: its "event-id" header, else its key. */
static int event_id(const rd_kafka_message_t *m, const void **id, size_t *len) {
        rd_kafka_headers_t *h = NULL;

        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_header_get_last(h, "event-id", id, len) == RD_KAFKA_RESP_ERR_NO_ERROR && *id)
                return 0;
        *id = m->key;
        *len = m->key_len;
        return m->key ? 0 : -1;
}

/* The sink of KDC_HARNESS_SINK ("sqlite:PATH" or "postgresql:CONNINFO"): its
 * connection and (SQLite) its insert, which writes a row only when none names
 * the event (one statement: SQLite serialises writers, so a second instance
 * cannot slip in between; kdc-harness's PostgreSQL scenarios run one
 * instance). */
static int open_sink(struct service *s) {
        if (strncmp(s->cfg.sink, "postgresql:", 11) == 0) {
                /* connected now; a broken connection is reset before a write */
                s->pg = PQconnectdb(s->cfg.sink + 11);
                if (PQstatus(s->pg) != CONNECTION_OK)
                        fprintf(stderr, "reference-service: sink: %s", PQerrorMessage(s->pg));
                return 0;
        }
        if (strncmp(s->cfg.sink, "sqlite:", 7) != 0) {
                fprintf(stderr,
                        "reference-service: KDC_HARNESS_SINK=%s: not sqlite:PATH or "
                        "postgresql:CONNINFO\n",
                        s->cfg.sink);
                return -1;
        }
        if (sqlite3_open_v2(s->cfg.sink + 7, &s->sink, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
            sqlite3_busy_timeout(s->sink, SINK_BUSY_MS) != SQLITE_OK ||
            sqlite3_prepare_v2(s->sink,
                               "INSERT INTO effects(event_id, amount) SELECT ?1, ?2 "
                               "WHERE NOT EXISTS (SELECT 1 FROM effects WHERE event_id = ?1)",
                               -1, &s->insert, NULL) != SQLITE_OK) {
                fprintf(stderr, "reference-service: sink %s: %s\n", s->cfg.sink,
                        s->sink ? sqlite3_errmsg(s->sink) : "cannot open");
                return -1;
        }
        return 0;
}

/* The event's row in PostgreSQL, in autocommit. */
static enum effect write_effect_pg(struct service *s, const char *id, long amount) {
        char amount_text[24];
        const char *params[2] = {id, amount_text};
        enum effect e = EFFECT_TRANSIENT;

        if (PQstatus(s->pg) != CONNECTION_OK) {
                PQreset(s->pg); /* the server went away, or never answered */
                if (PQstatus(s->pg) != CONNECTION_OK) {
                        fprintf(stderr, "reference-service: sink: %s", PQerrorMessage(s->pg));
                        return EFFECT_TRANSIENT;
                }
        }
        snprintf(amount_text, sizeof amount_text, "%ld", amount);
        PGresult *r = PQexecParams(s->pg, "INSERT INTO effects(event_id, amount) "
                                          "SELECT $1::text, $2::bigint WHERE NOT EXISTS "
                                          "(SELECT 1 FROM effects WHERE event_id = $1::text)",
                                   2, NULL, params, NULL, NULL, 0);
        if (r && PQresultStatus(r) == PGRES_COMMAND_OK) {
                e = EFFECT_WRITTEN;
        } else {
                const char *state = r ? PQresultErrorField(r, PG_DIAG_SQLSTATE) : NULL;
                /* class 23, integrity constraint violation: this row, not the database */
                if (state && strncmp(state, "23", 2) == 0)
                        e = EFFECT_REJECTED;
                fprintf(stderr, "reference-service: sink: %s", PQerrorMessage(s->pg));
        }
        PQclear(r);
        return e;
}

/* The event's row: written (committed: autocommit), refused for this row (a
 * constraint), or not written for now (busy, full, down, refused access). */
static enum effect write_effect(struct service *s, const rd_kafka_message_t *m, long amount) {
        const void *id;
        size_t len;
        char text[64];
        int rc;

        if (event_id(m, &id, &len) != 0 || len >= sizeof text)
                return EFFECT_REJECTED;
        if (s->pg) {
                memcpy(text, id, len);
                text[len] = '\0';
                return write_effect_pg(s, text, amount);
        }
        sqlite3_bind_text(s->insert, 1, id, (int)len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(s->insert, 2, amount);
        rc = sqlite3_step(s->insert);
        sqlite3_reset(s->insert);
        sqlite3_clear_bindings(s->insert);
        if (rc == SQLITE_DONE)
                return EFFECT_WRITTEN;
        fprintf(stderr, "reference-service: sink: %s\n", sqlite3_errstr(rc));
        return (rc & 0xff) == SQLITE_CONSTRAINT ? EFFECT_REJECTED : EFFECT_TRANSIENT;
}

/* Before partitions go (not lost): commit what is already confirmed; then
 * drop their pending retries (the new owner starts from the committed
 * offset). */
static void on_rebalance(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                         rd_kafka_topic_partition_list_t *partitions, int lost, void *opaque) {
        struct service *s = opaque;

        if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS && !lost)
                kdc_watermark_commit(s->watermark, rk, 1, NULL, NULL);
        kdc_retry_rebalance_hook(rk, err, partitions, lost, s->retry);
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

/* A transient failure: in every partition of the batch, its first event
 * not confirmed goes to the retry policy (which pauses the partition and
 * owns the event from now on: its slot in the batch is cleared); the
 * partition's later events are dropped uncommitted and consumed again after
 * the retry succeeded (kdc_retry_done() resumes right after it). Returns
 * HALT when the policy is exhausted (or the retry could not be recorded). */
static enum outcome retry_batch(struct service *s, rd_kafka_message_t **batch,
                                const uint64_t *epochs, const int *done, int n) {
        rd_kafka_topic_partition_list_t *seen = rd_kafka_topic_partition_list_new(n);
        enum outcome outcome = RETRY;

        for (int i = 0; i < n && outcome == RETRY; i++) {
                const char *topic = rd_kafka_topic_name(batch[i]->rkt);
                int r;

                if (done[i] || rd_kafka_topic_partition_list_find(seen, topic, batch[i]->partition))
                        continue;
                rd_kafka_topic_partition_list_add(seen, topic, batch[i]->partition);
                r = kdc_retry_failed(s->retry, s->consumer, batch[i], s->assignment, epochs[i],
                                     KDC_CLASS_TRANSIENT, "outputs not confirmed", NULL);
                if (r == KDC_RETRY_WAIT) {
                        batch[i] = NULL; /* the retry's now */
                } else if (r != KDC_RETRY_DROP) {
                        /* exhausted (halt policy), or not recorded */
                        fprintf(stderr, "reference-service: retries exhausted: %s\n",
                                r < 0 ? kdc_strerror(r) : "halt");
                        outcome = HALT;
                }
        }
        rd_kafka_topic_partition_list_destroy(seen);
        return outcome;
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

                if (parse(m, &amount) == EVENT_OK && s->cfg.sink) {
                        enum effect e = write_effect(s, m, amount);
                        if (e == EFFECT_WRITTEN) {
                                done[i] = 1;
                                kdc_watermark_done_message(s->watermark, m, epochs[i]);
                        } else if (e == EFFECT_TRANSIENT) {
                                /* the row may be written later */
                                failed = KDC_CLASS_TRANSIENT;
                        } else if ((rc = kdc_dlq_route(s->dlq, m, KDC_CLASS_POISON,
                                                       "row rejected by the sink", WAIT_MS,
                                                       &err)) == 0) {
                                /* the database refuses this row: a poison message */
                                done[i] = 1;
                                kdc_watermark_done_message(s->watermark, m, epochs[i]);
                        } else {
                                failed = failure_class(s, err);
                                fprintf(stderr,
                                        "reference-service: DLQ routing not confirmed: %s (%s)\n",
                                        kdc_strerror(rc), rd_kafka_err2name(err));
                        }
                } else if (parse(m, &amount) == EVENT_OK) {
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
        return retry_batch(s, batch, epochs, done, n);
}

/* Transient failures: RETRY_ATTEMPTS attempts, BACKOFF_MIN_MS doubling to
 * BACKOFF_MAX_MS with 20% jitter, then halt. (Poison events are routed by
 * process_batch() itself; a failed routing is transient.) */
static int retry_new(struct service *s) {
        kdc_retry_policy_t p;

        if (kdc_retry_new(&s->retry, s->dlq) != 0 ||
            kdc_retry_get_policy(s->retry, KDC_CLASS_TRANSIENT, &p) != 0)
                return -1;
        p.max_attempts = RETRY_ATTEMPTS;
        p.initial_ms = BACKOFF_MIN_MS;
        p.max_interval_ms = BACKOFF_MAX_MS;
        p.on_exhausted = KDC_RETRY_EXHAUSTED_HALT;
        return kdc_retry_set_policy(s->retry, KDC_CLASS_TRANSIENT, &p);
}

/* Up to BATCH events in poll order, each stamped with its partition's
 * epoch and tracked in the watermark; returns how many. */
static int poll_batch(struct service *s, rd_kafka_message_t **batch, uint64_t *epochs) {
        rd_kafka_message_t *m;
        int n = 0;

        /* A retried event whose back-off is over: a batch of its own (its
         * partition is still paused, and it is still tracked). */
        if (kdc_retry_next(s->retry, &batch[0], &epochs[0]) == 1)
                return 1;
        while (n < BATCH &&
               (m = rd_kafka_consumer_poll(s->consumer, n ? 0 : kdc_retry_timeout(s->retry, 100)))) {
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
        int status = 0;

        while (running && !status) {
                int n = poll_batch(s, batch, epochs);

                if (n) {
                        switch (process_batch(s, batch, epochs, n)) {
                        case DONE:
                                /* a retried event succeeded: resume its partition */
                                for (int i = 0; i < n; i++)
                                        kdc_retry_done(s->retry, s->consumer, batch[i]);
                                break;
                        case RETRY: /* paused; the service keeps polling */
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
                        if (batch[--n])
                                rd_kafka_message_destroy(batch[n]);
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
        s.cfg.sink = env("KDC_HARNESS_SINK", NULL);
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
            kdc_dlq_set_topic(s.dlq, s.cfg.dlq) != 0 || retry_new(&s) != 0 ||
            (s.cfg.sink && open_sink(&s) != 0))
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
        kdc_retry_destroy(s.retry); /* holds messages of the consumer */
        rd_kafka_destroy(s.consumer);
        /* Every output was awaited; serve whatever report is still due. */
        kdc_tracker_wait(s.outputs, s.producer, WAIT_MS);
        kdc_dlq_destroy(s.dlq);
        kdc_tracker_destroy(s.outputs);
        rd_kafka_destroy(s.producer);
        kdc_watermark_destroy(s.watermark);
        kdc_assignment_destroy(s.assignment);
        kdc_classifier_destroy(s.classifier);
        sqlite3_finalize(s.insert);
        sqlite3_close(s.sink);
        PQfinish(s.pg);
        return status;
}
