/*
 * broken/indexer-commits-on-write-failure: an indexer that copies each
 * event into a database (kdc-harness's sink, KDC_HARNESS_SINK=sqlite:PATH),
 * with the bug of the decision record's postgres indexer (seeds/002): it
 * committed even when its write returned success=False. Here the insert's
 * result is checked, logged, and the offset committed all the same, so every
 * row the database refused (locked, full, a constraint) is an event gone.
 *
 * kdc-lint: commit-on-failure (sqlite3_step() of a statement bound to the
 * message's fields is the message's processing). kdc-harness: loses events
 * in sink-outage, sink-full and sink-rejects. Compare reference-service.c.
 * Without KDC_HARNESS_SINK it has nothing to index into and exits with
 * status 2.
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
                fprintf(stderr, "indexer-commits-on-write-failure: %s\n", err);
}

/* "amount=N" with N in 1..1000000 */
static int is_well_formed(const rd_kafka_message_t *m, long *amount) {
        char text[32], *end;

        if (!m->payload || m->len < 8 || m->len >= sizeof text)
                return 0;
        memcpy(text, m->payload, m->len);
        text[m->len] = '\0';
        if (strncmp(text, "amount=", 7) != 0 || text[7] < '1' || text[7] > '9')
                return 0;
        *amount = strtol(text + 7, &end, 10);
        return *end == '\0' && *amount <= 1000000;
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
                rd_kafka_headers_t *h = NULL;
                const void *id;
                size_t id_len;
                long amount;

                if (!m)
                        continue;
                if (m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                uint64_t epoch = kdc_assignment_stamp(assignment, m);
                if (!is_well_formed(m, &amount)) {
                        rd_kafka_resp_err_t derr;
                        if (kdc_dlq_route(dlq, m, KDC_CLASS_POISON, "malformed event", WAIT_MS,
                                          &derr) != 0) {
                                rd_kafka_message_destroy(m); /* not committed: comes again */
                                continue;
                        }
                        kdc_commit_message(consumer, m, assignment, epoch, NULL);
                        rd_kafka_message_destroy(m);
                        continue;
                }
                id = m->key;
                id_len = m->key_len;
                if (rd_kafka_message_headers(m, &h) == RD_KAFKA_RESP_ERR_NO_ERROR)
                        rd_kafka_header_get_last(h, "event-id", &id, &id_len);
                sqlite3_bind_text(insert, 1, id, (int)id_len, SQLITE_TRANSIENT);
                sqlite3_bind_int64(insert, 2, amount);
                if (sqlite3_step(insert) != SQLITE_DONE)
                        fprintf(stderr, "indexer-commits-on-write-failure: index %.*s: %s\n",
                                (int)id_len, (const char *)id, sqlite3_errmsg(db));
                sqlite3_reset(insert);
                /* BUG: committed whether the row was written or not */
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
