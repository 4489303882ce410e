/*
 * broken/sink-commit-on-any-exception: the reference service's job written
 * to a database (kdc-harness's sink, KDC_HARNESS_SINK=sqlite:PATH), with the
 * first root cause of the decision record (seeds/002): one consumer
 * "committed on any exception to avoid infinite retry". Whatever goes wrong
 * with an event (the database locked or full, the DLQ refusing it) is caught
 * in one handler that logs it and moves on to the commit, so a transient
 * outage of the database deletes the events it refused.
 *
 * kdc-lint: commit-on-failure. kdc-harness: loses events in sink-outage and
 * sink-full (and in sink-rejects, where the refused rows are neither written
 * nor dead-lettered). Compare reference-service.c. Without KDC_HARNESS_SINK
 * it has nowhere to write and exits with status 2.
 */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <kdc/kdc.h>
#include <sqlite3.h>

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
                fprintf(stderr, "sink-commit-on-any-exception: %s\n", err);
}

/* "amount=N" with N in 1..1000000: N, or 0 when malformed */
static long parse_amount(const rd_kafka_message_t *m) {
        char text[32], *end;
        long amount;

        if (!m->payload || m->len < 8 || m->len >= sizeof text)
                return 0;
        memcpy(text, m->payload, m->len);
        text[m->len] = '\0';
        if (strncmp(text, "amount=", 7) != 0 || text[7] < '1' || text[7] > '9')
                return 0;
        amount = strtol(text + 7, &end, 10);
        return *end == '\0' && amount <= 1000000 ? amount : 0;
}

/* The event's row (its id from the "event-id" header, else its key):
 * 0 when written, -1 on any error. */
static int store_effect(sqlite3_stmt *insert, const rd_kafka_message_t *m, long amount) {
        rd_kafka_headers_t *h = NULL;
        const void *id = m->key;
        size_t len = m->key_len;
        int rc;

        if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
                rd_kafka_header_get_last(h, "event-id", &id, &len);
        sqlite3_bind_text(insert, 1, id, (int)len, SQLITE_TRANSIENT);
        sqlite3_bind_int64(insert, 2, amount);
        rc = sqlite3_step(insert);
        sqlite3_reset(insert);
        return rc == SQLITE_DONE ? 0 : -1;
}

int main(void) {
        const char *brokers = env("KAFKA_BOOTSTRAP_SERVERS", NULL);
        const char *input = env("KAFKA_INPUT_TOPIC", "kdc.input");
        const char *group = env("KAFKA_GROUP_ID", "kdc-service");
        const char *sink = env("KDC_HARNESS_SINK", "");
        kdc_assignment_t *assignment = NULL;
        kdc_dlq_t *dlq = NULL;
        sqlite3 *db = NULL;
        sqlite3_stmt *insert = NULL;
        char err[256];

        if (!brokers || strncmp(sink, "sqlite:", 7) != 0 ||
            sqlite3_open_v2(sink + 7, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
            sqlite3_prepare_v2(db, "INSERT INTO effects(event_id, amount) VALUES (?1, ?2)", -1,
                               &insert, NULL) != SQLITE_OK ||
            kdc_assignment_new(&assignment, NULL, NULL) != 0)
                return 2;
        sqlite3_busy_timeout(db, 100);
        rd_kafka_conf_t *pconf = rd_kafka_conf_new();
        conf_set(pconf, "bootstrap.servers", brokers);
        conf_set(pconf, "enable.idempotence", "true");
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
                rd_kafka_resp_err_t derr;
                long amount;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                uint64_t epoch = kdc_assignment_stamp(assignment, m);
                /* try: */
                if ((amount = parse_amount(m)) == 0) {
                        if (kdc_dlq_route(dlq, m, KDC_CLASS_POISON, "malformed event", WAIT_MS,
                                          &derr) != 0)
                                goto except;
                } else if (store_effect(insert, m, amount) != 0) {
                        goto except;
                }
                goto commit;
        except:
                /* BUG: any failure, transient ones included, is logged and committed "to
                 * avoid an infinite retry" */
                fprintf(stderr, "sink-commit-on-any-exception: skipping %.*s: %s\n",
                        (int)m->key_len, (const char *)m->key, sqlite3_errmsg(db));
        commit:
                kdc_commit_message(consumer, m, assignment, epoch, NULL); /* expect: commit-on-failure */
                rd_kafka_message_destroy(m);
        }

        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_flush(producer, WAIT_MS);
        kdc_dlq_destroy(dlq);
        rd_kafka_destroy(producer);
        kdc_assignment_destroy(assignment);
        sqlite3_finalize(insert);
        sqlite3_close(db);
        return 0;
}
