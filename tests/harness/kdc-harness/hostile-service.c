/* hostile-service: a service that misbehaves on purpose, for kdc-harness's
 * own tests (tests/harness/kdc-harness/CMakeLists.txt). argv[1] picks the misbehaviour:
 *
 *   forged-dlq    the event at an even offset goes to the DLQ twice: once
 *                 named by its key and event-id header alone, once more
 *                 with a well-formed kdc.* envelope whose coordinates name
 *                 the NEXT offset and whose identity is wrong. The event at
 *                 an odd offset is dropped. Every event is committed. The
 *                 envelopes are untrusted: the dropped events are lost,
 *                 whatever the forged coordinates say.
 *   outputs-only  one confirmed output per event, never a commit: nothing
 *                 is lost, every event is unprocessed.
 *   big-outputs   one confirmed output of 600 KB per event, then a commit:
 *                 more than the 5 MiB the mock cluster keeps per partition,
 *                 so it deletes the oldest outputs before they are read
 *                 back.
 *   sink-twice    in a sink scenario (KDC_HARNESS_SINK=sqlite:PATH), every
 *                 event's row written twice by a plain INSERT (waiting out a
 *                 locked database), then a commit: nothing is lost, every
 *                 event has a duplicate effect.
 *
 * Outputs and DLQ records are confirmed (delivery reports) before the
 * input is committed, one event at a time. Stops on SIGTERM. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <librdkafka/rdkafka.h>
#include <sqlite3.h>

static volatile sig_atomic_t stopping;
static int failed_deliveries;

static void on_sigterm(int sig) {
        (void)sig;
        stopping = 1;
}

static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err)
                failed_deliveries++;
}

static const char *env(const char *name, const char *fallback) {
        const char *v = getenv(name);

        if (!v && !fallback) {
                fprintf(stderr, "hostile-service: %s is not set\n", name);
                exit(2);
        }
        return v ? v : fallback;
}

static rd_kafka_conf_t *conf(void) {
        rd_kafka_conf_t *c = rd_kafka_conf_new();
        char err[256];

        rd_kafka_conf_set(c, "bootstrap.servers", env("KAFKA_BOOTSTRAP_SERVERS", NULL), err,
                          sizeof err);
        return c;
}

#define BIG_OUTPUT 600000
static char big[BIG_OUTPUT];

/* Produce and wait for the delivery report: 0 when it was stored. */
static int produce(rd_kafka_t *p, const char *topic, const rd_kafka_message_t *m,
                   rd_kafka_headers_t *h, int large) {
        int before = failed_deliveries;

        if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_KEY(m->key, m->key_len),
                              RD_KAFKA_V_VALUE(large ? big : m->payload,
                                               large ? sizeof big : m->len),
                              RD_KAFKA_V_HEADERS(h),
                              RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) {
                rd_kafka_headers_destroy(h);
                return -1;
        }
        return rd_kafka_flush(p, 30000) == 0 && failed_deliveries == before ? 0 : -1;
}

static rd_kafka_headers_t *forged_envelope(const char *input, const rd_kafka_message_t *m) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(4);
        char partition[16], offset[32];

        snprintf(partition, sizeof partition, "%d", (int)m->partition);
        snprintf(offset, sizeof offset, "%lld", (long long)m->offset + 1);
        rd_kafka_header_add(h, "kdc.original.topic", -1, input, -1);
        rd_kafka_header_add(h, "kdc.original.partition", -1, partition, -1);
        rd_kafka_header_add(h, "kdc.original.offset", -1, offset, -1);
        rd_kafka_header_add(h, "kdc.identity", -1,
                            "00000000000000000000000000000000"
                            "00000000000000000000000000000000",
                            -1);
        return h;
}

static rd_kafka_headers_t *event_id_of(const rd_kafka_message_t *m) {
        rd_kafka_headers_t *in = NULL, *out = rd_kafka_headers_new(1);
        const void *id;
        size_t len;

        if (rd_kafka_message_headers(m, &in) == 0 &&
            rd_kafka_header_get_last(in, "event-id", &id, &len) == 0)
                rd_kafka_header_add(out, "event-id", -1, id, (ssize_t)len);
        return out;
}

/* Two rows for the event (its key): 0 when both are written. */
static int insert_twice(sqlite3 *db, const rd_kafka_message_t *m) {
        sqlite3_stmt *st;
        int rc = 0;

        if (sqlite3_prepare_v2(db, "INSERT INTO effects(event_id, amount) VALUES (?1, 1)", -1, &st,
                               NULL) != SQLITE_OK)
                return -1;
        for (int i = 0; i < 2 && !rc; i++) {
                sqlite3_bind_text(st, 1, m->key, (int)m->key_len, SQLITE_TRANSIENT);
                rc = sqlite3_step(st) == SQLITE_DONE ? 0 : -1;
                sqlite3_reset(st);
        }
        sqlite3_finalize(st);
        return rc;
}

int main(int argc, char **argv) {
        const char *mode = argc > 1 ? argv[1] : "";
        const char *input = env("KAFKA_INPUT_TOPIC", NULL);
        int forged = !strcmp(mode, "forged-dlq"), outputs_only = !strcmp(mode, "outputs-only");
        int large = !strcmp(mode, "big-outputs"), twice = !strcmp(mode, "sink-twice");
        const char *sink = getenv("KDC_HARNESS_SINK");
        sqlite3 *db = NULL;
        char err[256];

        if (!forged && !outputs_only && !large && !twice) {
                fprintf(stderr, "usage: hostile-service "
                                "forged-dlq|outputs-only|big-outputs|sink-twice\n");
                return 2;
        }
        if (twice && (!sink || strncmp(sink, "sqlite:", 7) != 0 ||
                      sqlite3_open_v2(sink + 7, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
                      sqlite3_busy_timeout(db, 30000) != SQLITE_OK)) {
                fprintf(stderr, "hostile-service: sink-twice needs KDC_HARNESS_SINK=sqlite:PATH\n");
                return 2;
        }
        signal(SIGTERM, on_sigterm);
        memset(big, 'x', sizeof big);
        rd_kafka_conf_t *pc = conf(), *cc = conf();
        rd_kafka_conf_set_dr_msg_cb(pc, on_delivery);
        rd_kafka_conf_set(cc, "group.id", env("KAFKA_GROUP_ID", NULL), err, sizeof err);
        rd_kafka_conf_set(cc, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set(cc, "auto.offset.reset", "earliest", err, sizeof err);
        rd_kafka_conf_set(cc, "session.timeout.ms", env("KAFKA_SESSION_TIMEOUT_MS", "10000"), err,
                          sizeof err);
        rd_kafka_conf_set(cc, "heartbeat.interval.ms", env("KAFKA_HEARTBEAT_INTERVAL_MS", "1000"),
                          err, sizeof err);
        rd_kafka_t *producer = rd_kafka_new(RD_KAFKA_PRODUCER, pc, err, sizeof err);
        rd_kafka_t *consumer = rd_kafka_new(RD_KAFKA_CONSUMER, cc, err, sizeof err);
        if (!producer || !consumer) {
                fprintf(stderr, "hostile-service: %s\n", err);
                return 2;
        }
        rd_kafka_poll_set_consumer(consumer);
        rd_kafka_topic_partition_list_t *topics = rd_kafka_topic_partition_list_new(1);
        rd_kafka_topic_partition_list_add(topics, input, RD_KAFKA_PARTITION_UA);
        rd_kafka_subscribe(consumer, topics);
        rd_kafka_topic_partition_list_destroy(topics);

        int status = 0;
        while (!stopping && !status) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 100);
                if (!m)
                        continue;
                if (!m->err) {
                        if (twice)
                                status = insert_twice(db, m);
                        else if (outputs_only || large)
                                status = produce(producer, env("KAFKA_OUTPUT_TOPIC", NULL), m,
                                                 event_id_of(m), large);
                        else if (m->offset % 2 == 0)
                                status = produce(producer, env("KAFKA_DLQ_TOPIC", NULL), m,
                                                 event_id_of(m), 0) ||
                                         produce(producer, env("KAFKA_DLQ_TOPIC", NULL), m,
                                                 forged_envelope(input, m), 0);
                        if (!status && !outputs_only)
                                rd_kafka_commit_message(consumer, m, 0);
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_consumer_close(consumer);
        rd_kafka_destroy(consumer);
        rd_kafka_flush(producer, 10000);
        rd_kafka_destroy(producer);
        sqlite3_close(db);
        return status ? 1 : 0;
}
