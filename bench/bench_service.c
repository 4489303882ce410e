/*
 * kdc-bench-service: the price of not losing data, for a whole
 * consume-process-produce service.
 *
 * One service (poll an event from "in", copy it to "out" on the same
 * partition) in four variants built from the same code:
 *
 *   unsafe   enable.auto.commit and auto offset store on (librdkafka's
 *            defaults), produce without a delivery report; the final
 *            rd_kafka_commit(NULL, sync) of the stored offsets is what
 *            rd_kafka_consumer_close() would send.
 *   hand     hand-written correct (examples/orders-worker-fixed.c): per
 *            window, produce with a dr_msg_cb that counts into the batch,
 *            rd_kafka_poll() until every report of the batch arrived, then
 *            rd_kafka_commit_message(sync) of each partition's last
 *            message of the batch.
 *   kdc-msg  libkdc as examples/orders-worker-libkdc.c: tracker
 *            (kdc_tracker_produce, kdc_tracker_wait per window), then
 *            kdc_commit_message() of each partition's last message.
 *   kdc-batch tracker per window, every message tracked in a watermark
 *            (kdc_assignment epochs) and marked done once its window is
 *            confirmed; the watermark is committed by kdc_watermark_commit()
 *            at most once per partition per
 *            KDC_WATERMARK_RECOMMENDED_INTERVAL_MS, forced at the end.
 *   kdc      libkdc's recommended form: the window slides instead of
 *            stopping. Every message is tracked in the watermark and
 *            produced through the tracker with its coordinates as opaque;
 *            the service's dr_msg_cb (kdc_dr_msg_record()) marks a message
 *            done when its output is confirmed. The service keeps polling
 *            while fewer than W outputs are unconfirmed (at W it serves
 *            reports with rd_kafka_flush(producer, 1) until one is); the
 *            watermark is committed as kdc-batch does, after
 *            kdc_tracker_wait() at the end.
 *
 * The input topic (4 partitions) is preloaded with N events of 100 bytes
 * (the first 8 bytes are the event's id) on librdkafka's mock cluster, in
 * the child process that then runs the service (one fresh process per
 * variant per window per round; variants interleaved in rotating order).
 * The clock runs from the first event returned by rd_kafka_consumer_poll()
 * (after the group join, ~3 s on the mock, untimed) to the return of the
 * commit that covers the last event. Measured: events/s, CPU (user +
 * system of the whole process, so librdkafka's and the mock broker's
 * threads too) per event, peak RSS (VmHWM, the mock's log of in and out
 * included), OffsetCommit requests sent (the consumer's statistics: the
 * "req" counters of every broker, read from a statistics event emitted
 * after the clock stopped) and partition offsets committed (counted by the
 * service: each entry of each commit).
 *
 * Every run is checked before it counts: the committed offset of each
 * input partition equals its end offset, and the output topic, read back,
 * holds every id exactly once. A failed check fails the benchmark.
 *
 * At a window of W events a run processes min(N, max(5000, 1000 * W))
 * events: the hand-written variant waits out linger.ms (5 ms) for each
 * window, so small windows would take hours at N = 1,000,000.
 *
 * Experiments (environment): BENCH_DEBUG=1 prints each run's time with the
 * window full; BENCH_PRODUCER_CONF=k=v,.. adds producer properties;
 * BENCH_SLIDE_LOW=P (the sliding form waits until P % of the window is
 * unconfirmed, not one slot), BENCH_SLIDE_POLL=1 (it serves reports with
 * rd_kafka_poll(producer, 1) instead of rd_kafka_flush(producer, 1)).
 * Ratios are to the first variant given (unsafe by default).
 *
 * Usage: kdc-bench-service [events (1000000)] [rounds (3)]
 *                          [windows (1,100,10000)] [variants (all)]
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <kdc/kdc.h>
#include <librdkafka/rdkafka_mock.h> /* after rdkafka.h (via kdc.h) */

#define EVENT_SIZE 100
#define PARTITIONS 4
#define MAX_ROUNDS 32
#define MAX_WINDOWS 8

enum variant { UNSAFE, HAND, KDC_MSG, KDC_BATCH, KDC, NVARIANTS };
static const char *const variant_names[NVARIANTS] = {"unsafe", "hand", "kdc-msg", "kdc-batch",
                                                     "kdc"};

struct result {
        int ok;
        char why[120];
        long events;
        double seconds, cpu_seconds;
        long rss_kb;
        long commit_requests; /* OffsetCommit requests (statistics) */
        long commit_entries;  /* partition offsets committed (service) */
};

/* The child runs one service: these are its counters (one per process). */
static long stats_offset_commits = -1;
static int stats_seen;
static long auto_commit_entries;

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static double cpu_now(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static long peak_rss_kb(void) {
        FILE *f = fopen("/proc/self/status", "r");
        char line[256];
        long kb = -1;

        while (f && fgets(line, sizeof line, f))
                if (sscanf(line, "VmHWM: %ld", &kb) == 1)
                        break;
        if (f)
                fclose(f);
        return kb;
}

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk, (void)level, (void)fac, (void)buf;
}

/* Sum of every broker's "OffsetCommit" request counter. */
static int stats_cb(rd_kafka_t *rk, char *json, size_t len, void *opaque) {
        const char *key = "\"OffsetCommit\":";
        long sum = 0;

        (void)rk, (void)len, (void)opaque;
        for (const char *p = strstr(json, key); p; p = strstr(p + 1, key))
                sum += strtol(p + strlen(key), NULL, 10);
        stats_offset_commits = sum;
        stats_seen++;
        return 0;
}

/* Auto commits of the unsafe variant (conf offset_commit_cb). */
static void auto_commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                           rd_kafka_topic_partition_list_t *offsets, void *opaque) {
        (void)rk, (void)opaque;
        for (int i = 0; !err && offsets && i < offsets->cnt; i++)
                auto_commit_entries += !offsets->elems[i].err;
}

/* The hand-written variant's delivery reports: counted into the batch
 * the message's opaque points at. */
struct batch_reports {
        long done, failed;
};

static void hand_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        struct batch_reports *b = m->_private;

        (void)rk, (void)opaque;
        if (!b)
                return;
        b->done++;
        if (m->err || rd_kafka_message_status(m) != RD_KAFKA_MSG_STATUS_PERSISTED)
                b->failed++;
}

/* The sliding form: each output's opaque names its input message; its
 * report marks that message done in the watermark once confirmed. */
struct input_ref {
        int32_t partition;
        int64_t offset;
        uint64_t epoch;
};

static kdc_watermark_t *sliding_watermark;
static long sliding_mark_errors;

static void sliding_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        struct input_ref *in = NULL;

        (void)opaque;
        if (kdc_dr_msg_record(rk, m, (void **)&in) != 0 || !in)
                return;
        if (!m->err && rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED &&
            kdc_watermark_done(sliding_watermark, "in", in->partition, in->offset, in->epoch) != 0)
                sliding_mark_errors++;
        free(in);
}

#define SET(conf, k, v)                                                                            \
        do {                                                                                       \
                char e_[256];                                                                      \
                if (rd_kafka_conf_set(conf, k, v, e_, sizeof e_) != RD_KAFKA_CONF_OK) {            \
                        fprintf(stderr, "%s\n", e_);                                               \
                        exit(1);                                                                   \
                }                                                                                  \
        } while (0)

static rd_kafka_conf_t *base_conf(const char *bootstraps) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        SET(conf, "bootstrap.servers", bootstraps);
        /* Loopback TCP: see kdc-bench-tracker (delayed ACK against Nagle). */
        SET(conf, "socket.nagle.disable", "true");
        rd_kafka_conf_set_log_cb(conf, quiet_log);
        return conf;
}

static rd_kafka_t *new_producer(const char *bootstraps, enum variant v) {
        rd_kafka_conf_t *conf = base_conf(bootstraps);
        char err[256];

        SET(conf, "queue.buffering.max.messages", "2000000");
        SET(conf, "queue.buffering.max.kbytes", "2097151");
        /* The 2.0.2 mock cluster keeps at most 5 MB per partition (older
         * message sets are deleted on append): compressed, 250,000 events
         * of 100 bytes per partition fit. Every variant, and the preload. */
        SET(conf, "compression.type", "lz4");
        if (v != UNSAFE)
                SET(conf, "enable.idempotence", "true");
        if (getenv("BENCH_PRODUCER_CONF")) { /* k=v,k=v: experiments */
                char kv[512], *save = NULL;

                snprintf(kv, sizeof kv, "%s", getenv("BENCH_PRODUCER_CONF"));
                for (char *t = strtok_r(kv, ",", &save); t; t = strtok_r(NULL, ",", &save))
                        if (strchr(t, '=')) {
                                *strchr(t, '=') = '\0';
                                SET(conf, t, t + strlen(t) + 1);
                        }
        }
        if (v == HAND)
                rd_kafka_conf_set_dr_msg_cb(conf, hand_dr_msg_cb);
        else if (v == KDC_BATCH || v == KDC_MSG)
                rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
        else if (v == KDC)
                rd_kafka_conf_set_dr_msg_cb(conf, sliding_dr_msg_cb);
        return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

static rd_kafka_t *new_consumer(const char *bootstraps, enum variant v, kdc_assignment_t *a) {
        rd_kafka_conf_t *conf = base_conf(bootstraps);
        char err[256];

        SET(conf, "group.id", "service");
        SET(conf, "auto.offset.reset", "earliest");
        SET(conf, "statistics.interval.ms", "100");
        rd_kafka_conf_set_stats_cb(conf, stats_cb);
        if (v == UNSAFE) {
                SET(conf, "enable.auto.commit", "true");
                SET(conf, "enable.auto.offset.store", "true");
                rd_kafka_conf_set_offset_commit_cb(conf, auto_commit_cb);
        } else {
                SET(conf, "enable.auto.commit", "false");
                SET(conf, "enable.auto.offset.store", "false");
        }
        if (v == KDC || v == KDC_BATCH) {
                rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
                rd_kafka_conf_set_opaque(conf, a);
        }
        return rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
}

/* Preload N events over the partitions, id i on partition i % PARTITIONS. */
static int preload(const char *bootstraps, long n) {
        rd_kafka_t *rk = new_producer(bootstraps, UNSAFE);
        char payload[EVENT_SIZE];

        if (!rk)
                return -1;
        memset(payload, 'e', sizeof payload);
        for (long i = 0; i < n; i++) {
                uint64_t id = (uint64_t)i;

                memcpy(payload, &id, sizeof id);
                while (rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("in"),
                                         RD_KAFKA_V_PARTITION((int32_t)(i % PARTITIONS)),
                                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                         RD_KAFKA_V_VALUE(payload, sizeof payload),
                                         RD_KAFKA_V_END) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        rd_kafka_poll(rk, 10);
        }
        if (rd_kafka_flush(rk, 60000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                rd_kafka_destroy(rk);
                return -1;
        }
        rd_kafka_destroy(rk);
        return 0;
}

/* Each partition's last message in the batch, or NULL. */
static void last_per_partition(rd_kafka_message_t **batch, long n,
                               rd_kafka_message_t *last[PARTITIONS]) {
        for (int p = 0; p < PARTITIONS; p++)
                last[p] = NULL;
        for (long i = 0; i < n; i++)
                last[batch[i]->partition] = batch[i];
}

struct service {
        enum variant v;
        long window;
        rd_kafka_t *consumer, *producer;
        kdc_assignment_t *assignment;
        kdc_tracker_t *tracker;
        kdc_watermark_t *watermark;
        long commit_entries;
        long produced;
        long full;
        double full_s;
        char *why;
};

#define FAIL(s, ...) (snprintf((s)->why, 120, __VA_ARGS__), -1)

static int produce_plain(struct service *s, const rd_kafka_message_t *m, void *opaque) {
        rd_kafka_resp_err_t err;

        while ((err = rd_kafka_producev(
                        s->producer, RD_KAFKA_V_TOPIC("out"), RD_KAFKA_V_PARTITION(m->partition),
                        RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                        RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_OPAQUE(opaque),
                        RD_KAFKA_V_END)) == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                rd_kafka_poll(s->producer, 10);
        return err ? FAIL(s, "produce: %s", rd_kafka_err2str(err)) : 0;
}

/* The sliding form: track, produce with the input's coordinates, keep
 * fewer than a window of outputs unconfirmed, commit the watermark at its
 * interval. */
static int produce_sliding(struct service *s, const rd_kafka_message_t *m, uint64_t epoch) {
        struct input_ref *in = malloc(sizeof(*in));
        rd_kafka_resp_err_t err;
        int rc, committed = 0;

        if (!in)
                return FAIL(s, "out of memory");
        *in = (struct input_ref){m->partition, m->offset, epoch};
        if ((rc = kdc_watermark_track_message(s->watermark, m, epoch)))
                return free(in), FAIL(s, "track: %s", kdc_strerror(rc));
        if ((rc = kdc_tracker_producev(s->tracker, s->producer, -1, &err, RD_KAFKA_V_TOPIC("out"),
                                       RD_KAFKA_V_PARTITION(m->partition),
                                       RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_OPAQUE(in),
                                       RD_KAFKA_V_END)))
                return free(in), FAIL(s, "produce: %s", kdc_strerror(rc));
        s->produced++;
        if (kdc_tracker_pending(s->tracker) >= s->window) {
                double t = now();

                long low = getenv("BENCH_SLIDE_LOW")
                                   ? s->window * atol(getenv("BENCH_SLIDE_LOW")) / 100
                                   : s->window - 1;
                int use_poll = getenv("BENCH_SLIDE_POLL") != NULL;

                s->full++;
                while (kdc_tracker_pending(s->tracker) > low) {
                        if (use_poll)
                                rd_kafka_poll(s->producer, 1);
                        else
                                rd_kafka_flush(s->producer, 1);
                }
                s->full_s += now() - t;
        } else if (s->produced % 1000 == 0) {
                rd_kafka_poll(s->producer, 0);
        } else {
                return 0;
        }
        if (kdc_tracker_failed(s->tracker) || sliding_mark_errors)
                return FAIL(s, "%ld deliveries failed, %ld marks refused",
                            (long)kdc_tracker_failed(s->tracker), sliding_mark_errors);
        if ((rc = kdc_watermark_commit(s->watermark, s->consumer, 0, &committed, NULL)))
                return FAIL(s, "watermark commit: %s", kdc_strerror(rc));
        s->commit_entries += committed;
        return 0;
}

/* Process and commit one window of n messages (the unsafe variant gets
 * one message at a time). 0, or -1 with s->why set. */
static int process(struct service *s, rd_kafka_message_t **batch, long n, uint64_t *epochs) {
        rd_kafka_message_t *last[PARTITIONS];
        struct batch_reports reports = {0, 0};
        rd_kafka_resp_err_t err;
        int rc;

        switch (s->v) {
        case UNSAFE:
                return produce_plain(s, batch[0], NULL);
        case HAND:
                for (long i = 0; i < n; i++)
                        if (produce_plain(s, batch[i], &reports))
                                return -1;
                while (reports.done < n)
                        rd_kafka_poll(s->producer, 100);
                if (reports.failed)
                        return FAIL(s, "%ld deliveries failed", reports.failed);
                last_per_partition(batch, n, last);
                for (int p = 0; p < PARTITIONS; p++) {
                        if (!last[p])
                                continue;
                        if ((err = rd_kafka_commit_message(s->consumer, last[p], 0)))
                                return FAIL(s, "commit: %s", rd_kafka_err2str(err));
                        s->commit_entries++;
                }
                return 0;
        case KDC:
                return produce_sliding(s, batch[0], epochs[0]);
        case KDC_MSG:
        case KDC_BATCH:
                for (long i = 0; i < n; i++) {
                        if (s->v == KDC_BATCH &&
                            (rc = kdc_watermark_track_message(s->watermark, batch[i], epochs[i])))
                                return FAIL(s, "track: %s", kdc_strerror(rc));
                        if ((rc = kdc_tracker_produce(
                                     s->tracker, s->producer, "out", batch[i]->partition, NULL, 0,
                                     batch[i]->payload, batch[i]->len, NULL, -1, &err)))
                                return FAIL(s, "produce: %s", kdc_strerror(rc));
                }
                if ((rc = kdc_tracker_wait(s->tracker, s->producer, 30000)))
                        return FAIL(s, "wait: %s", kdc_strerror(rc));
                if ((rc = kdc_tracker_reset(s->tracker)))
                        return FAIL(s, "reset: %s", kdc_strerror(rc));
                if (s->v == KDC_BATCH) {
                        int committed = 0;

                        for (long i = 0; i < n; i++)
                                if ((rc = kdc_watermark_done_message(s->watermark, batch[i],
                                                                     epochs[i])))
                                        return FAIL(s, "done: %s", kdc_strerror(rc));
                        if ((rc = kdc_watermark_commit(s->watermark, s->consumer, 0, &committed,
                                                       NULL)))
                                return FAIL(s, "watermark commit: %s", kdc_strerror(rc));
                        s->commit_entries += committed;
                        return 0;
                }
                last_per_partition(batch, n, last);
                for (int p = 0; p < PARTITIONS; p++) {
                        if (!last[p])
                                continue;
                        if ((rc = kdc_commit_message(s->consumer, last[p], NULL, 0, NULL)))
                                return FAIL(s, "commit: %s", kdc_strerror(rc));
                        s->commit_entries++;
                }
                return 0;
        default:
                return -1;
        }
}

/* The commit that covers the last event. */
static int final_commit(struct service *s) {
        rd_kafka_resp_err_t err;
        int rc, committed = 0;

        if (s->v == UNSAFE) {
                /* What rd_kafka_consumer_close() sends with auto commit. */
                err = rd_kafka_commit(s->consumer, NULL, 0);
                if (err && err != RD_KAFKA_RESP_ERR__NO_OFFSET)
                        return FAIL(s, "final commit: %s", rd_kafka_err2str(err));
                s->commit_entries += PARTITIONS;
        } else if (s->v == KDC || s->v == KDC_BATCH) {
                if (s->v == KDC && ((rc = kdc_tracker_wait(s->tracker, s->producer, 30000)) ||
                                    sliding_mark_errors))
                        return FAIL(s, "last outputs: %s, %ld marks refused", kdc_strerror(rc),
                                    sliding_mark_errors);
                if ((rc = kdc_watermark_commit(s->watermark, s->consumer, 1, &committed, NULL)))
                        return FAIL(s, "final watermark commit: %s", kdc_strerror(rc));
                s->commit_entries += committed;
        }
        return 0;
}

/* The service, timed: returns 0 once n events are processed and the
 * commit covering the last one returned. */
static int serve(struct service *s, long n, struct result *r) {
        rd_kafka_message_t **batch = calloc((size_t)s->window, sizeof(*batch));
        uint64_t *epochs = calloc((size_t)s->window, sizeof(*epochs));
        long consumed = 0, held = 0;
        long window = s->v == UNSAFE || s->v == KDC ? 1 : s->window;
        double t0 = 0, c0 = 0, deadline = now() + 600;
        int rc = 0;

        if (!batch || !epochs)
                return FAIL(s, "out of memory");
        while (consumed < n && rc == 0) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(s->consumer, 100);

                if (now() > deadline) {
                        rc = FAIL(s, "timed out at %ld of %ld", consumed, n);
                        break;
                }
                if (m && m->err) {
                        rd_kafka_message_destroy(m);
                        continue;
                }
                if (m) {
                        if (!t0) {
                                t0 = now();
                                c0 = cpu_now();
                        }
                        if (s->v == KDC || s->v == KDC_BATCH)
                                epochs[held] = kdc_assignment_stamp(s->assignment, m);
                        batch[held++] = m;
                        consumed++;
                }
                if (!held || (held < window && consumed < n && m))
                        continue;
                rc = process(s, batch, held, epochs);
                while (held)
                        rd_kafka_message_destroy(batch[--held]);
                if (s->v == UNSAFE && consumed % 1000 == 0)
                        rd_kafka_poll(s->producer, 0);
        }
        {
                double t = now();

                if (rc == 0)
                        rc = final_commit(s);
                if (getenv("BENCH_DEBUG"))
                        fprintf(stderr,
                                "%s: %.3f s, window full %ld times (%.3f s), final %.3f s\n",
                                variant_names[s->v], now() - t0, s->full, s->full_s, now() - t);
        }
        r->seconds = now() - t0;
        r->cpu_seconds = cpu_now() - c0;
        r->rss_kb = peak_rss_kb();
        free(batch);
        free(epochs);
        return rc;
}

/* Every input partition's committed offset is its end offset, and "out"
 * holds every id once. */
static int check(struct service *s, const char *bootstraps, long n) {
        rd_kafka_topic_partition_list_t *parts = rd_kafka_topic_partition_list_new(PARTITIONS);
        rd_kafka_conf_t *conf = base_conf(bootstraps);
        unsigned char *seen = calloc((size_t)n, 1);
        long got = 0, dups = 0, eofs = 0;
        int eof[PARTITIONS] = {0};
        double deadline = now() + 120;
        rd_kafka_resp_err_t err;
        char errstr[256];
        rd_kafka_t *reader;

        if (!parts || !seen)
                return FAIL(s, "out of memory");
        if (rd_kafka_flush(s->producer, 30000) != RD_KAFKA_RESP_ERR_NO_ERROR)
                return FAIL(s, "outputs still queued after 30 s");
        for (int p = 0; p < PARTITIONS; p++)
                rd_kafka_topic_partition_list_add(parts, "in", p);
        if ((err = rd_kafka_committed(s->consumer, parts, 10000)))
                return FAIL(s, "committed(): %s", rd_kafka_err2str(err));
        for (int p = 0; p < PARTITIONS; p++) {
                long end = n / PARTITIONS + (p < n % PARTITIONS);

                if (parts->elems[p].offset != end)
                        return FAIL(s, "partition %d committed at %ld, end %ld", p,
                                    (long)parts->elems[p].offset, end);
        }

        SET(conf, "enable.partition.eof", "true");
        SET(conf, "group.id", "check");
        SET(conf, "enable.auto.commit", "false");
        reader = rd_kafka_new(RD_KAFKA_CONSUMER, conf, errstr, sizeof errstr);
        if (!reader)
                return FAIL(s, "reader: %.100s", errstr);
        rd_kafka_poll_set_consumer(reader);
        rd_kafka_topic_partition_list_destroy(parts);
        parts = rd_kafka_topic_partition_list_new(PARTITIONS);
        for (int p = 0; p < PARTITIONS; p++)
                rd_kafka_topic_partition_list_add(parts, "out", p)->offset =
                        RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_assign(reader, parts);
        rd_kafka_topic_partition_list_destroy(parts);
        while (eofs < PARTITIONS && now() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(reader, 100);
                uint64_t id;

                if (!m)
                        continue;
                /* Every output was flushed before: an end is final. */
                if (m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF && m->partition >= 0 &&
                    m->partition < PARTITIONS && !eof[m->partition]++) {
                        eofs++;
                } else if (!m->err && m->len == EVENT_SIZE) {
                        memcpy(&id, m->payload, sizeof id);
                        if (id < (uint64_t)n && !seen[id]++)
                                got++;
                        else
                                dups++;
                }
                rd_kafka_message_destroy(m);
        }
        free(seen);
        rd_kafka_destroy(reader);
        if (got != n || dups)
                return FAIL(s, "output: %ld of %ld ids, %ld duplicates", got, n, dups);
        return 0;
}

static struct result child(enum variant v, long window, long n) {
        struct result r = {0};
        struct service s = {.v = v, .window = window, .why = r.why};
        char errstr[256];
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        rd_kafka_mock_cluster_t *mc;
        rd_kafka_t *owner;
        const char *bootstraps;
        double until;

        rd_kafka_conf_set_log_cb(conf, quiet_log);
        owner = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof errstr);
        if (!owner || !(mc = rd_kafka_mock_cluster_new(owner, 1))) {
                snprintf(r.why, sizeof r.why, "no mock cluster");
                return r;
        }
        bootstraps = rd_kafka_mock_cluster_bootstraps(mc);
        rd_kafka_mock_topic_create(mc, "in", PARTITIONS, 1);
        rd_kafka_mock_topic_create(mc, "out", PARTITIONS, 1);
        if (preload(bootstraps, n)) {
                snprintf(r.why, sizeof r.why, "preload failed");
                return r;
        }
        if (((v == KDC || v == KDC_BATCH) && kdc_assignment_new(&s.assignment, NULL, NULL)) ||
            kdc_tracker_new(&s.tracker) ||
            ((v == KDC || v == KDC_BATCH) &&
             kdc_watermark_new(&s.watermark, s.assignment,
                               KDC_WATERMARK_RECOMMENDED_INTERVAL_MS))) {
                snprintf(r.why, sizeof r.why, "libkdc objects");
                return r;
        }
        sliding_watermark = s.watermark;
        s.consumer = new_consumer(bootstraps, v, s.assignment);
        s.producer = new_producer(bootstraps, v);
        if (!s.consumer || !s.producer) {
                snprintf(r.why, sizeof r.why, "clients");
                return r;
        }
        /* Connect, learn "out" and (idempotence) get a producer id before
         * the clock starts; the check ignores this 4-byte message. */
        rd_kafka_producev(s.producer, RD_KAFKA_V_TOPIC("out"), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_VALUE("warm", 4), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                          RD_KAFKA_V_END);
        if (rd_kafka_flush(s.producer, 10000) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                snprintf(r.why, sizeof r.why, "producer warm-up");
                return r;
        }
        rd_kafka_poll_set_consumer(s.consumer);
        {
                rd_kafka_topic_partition_list_t *t = rd_kafka_topic_partition_list_new(1);

                rd_kafka_topic_partition_list_add(t, "in", RD_KAFKA_PARTITION_UA);
                rd_kafka_subscribe(s.consumer, t);
                rd_kafka_topic_partition_list_destroy(t);
        }
        if (serve(&s, n, &r))
                return r;
        r.events = n;
        /* Two statistics events emitted after the clock stopped. */
        stats_seen = 0;
        until = now() + 2;
        while (stats_seen < 2 && now() < until) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(s.consumer, 50);

                if (m)
                        rd_kafka_message_destroy(m);
        }
        r.commit_requests = stats_offset_commits;
        r.commit_entries = s.commit_entries + auto_commit_entries;
        if (check(&s, bootstraps, n))
                return r;
        r.ok = 1;
        return r;
}

static struct result run_child(enum variant v, long window, long n) {
        struct result r = {0};
        int fds[2], status;
        pid_t pid;

        if (pipe(fds) != 0)
                return r;
        fflush(stdout);
        pid = fork();
        if (pid == 0) {
                struct result c = child(v, window, n);

                close(fds[0]);
                if (write(fds[1], &c, sizeof c) != sizeof c)
                        _exit(1);
                _exit(0); /* no teardown: nothing is measured after this */
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], &r, sizeof r) != sizeof r) {
                r.ok = 0;
                snprintf(r.why, sizeof r.why, "child died");
        }
        close(fds[0]);
        if (pid > 0)
                waitpid(pid, &status, 0);
        return r;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(const double *in, int n) {
        double v[MAX_ROUNDS];

        memcpy(v, in, (size_t)n * sizeof(*v));
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double loadavg(void) {
        double l = -1;
        FILE *f = fopen("/proc/loadavg", "r");

        if (f && fscanf(f, "%lf", &l) != 1)
                l = -1;
        if (f)
                fclose(f);
        return l;
}

int main(int argc, char **argv) {
        long n = argc > 1 ? atol(argv[1]) : 1000000;
        int rounds = argc > 2 ? atoi(argv[2]) : 3;
        const char *wlist = argc > 3 ? argv[3] : "1,100,10000";
        const char *vlist = argc > 4 ? argv[4] : "unsafe,hand,kdc-msg,kdc-batch,kdc";
        long windows[MAX_WINDOWS];
        int nwin = 0, nvar = 0, failed = 0;
        enum variant vars[NVARIANTS];
        char buf[256], *tok, *save;

        if (n <= 0 || rounds <= 0 || rounds > MAX_ROUNDS) {
                fprintf(stderr,
                        "usage: %s [events] [rounds <= %d] [windows] "
                        "[variants]\n",
                        argv[0], MAX_ROUNDS);
                return 2;
        }
        snprintf(buf, sizeof buf, "%s", wlist);
        for (tok = strtok_r(buf, ",", &save); tok && nwin < MAX_WINDOWS;
             tok = strtok_r(NULL, ",", &save))
                if (atol(tok) > 0)
                        windows[nwin++] = atol(tok);
        snprintf(buf, sizeof buf, "%s", vlist);
        for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
                for (int v = 0; v < NVARIANTS; v++)
                        if (!strcmp(tok, variant_names[v]) && nvar < NVARIANTS)
                                vars[nvar++] = (enum variant)v;
        if (!nwin || !nvar) {
                fprintf(stderr, "windows and variants needed (ratios are to the first)\n");
                return 2;
        }
        printf("kdc-bench-service: up to %ld events of %d bytes over %d "
               "partitions, %d rounds, one process per run (librdkafka %s, "
               "load %.2f)\n",
               n, EVENT_SIZE, PARTITIONS, rounds, rd_kafka_version_str(), loadavg());
        for (int w = 0; w < nwin; w++) {
                long events = 1000 * windows[w] > 5000 ? 1000 * windows[w] : 5000;
                double rate[NVARIANTS][MAX_ROUNDS], cpu[NVARIANTS][MAX_ROUNDS];
                double rss[NVARIANTS][MAX_ROUNDS], req[NVARIANTS][MAX_ROUNDS];
                double ent[NVARIANTS][MAX_ROUNDS], ratio[MAX_ROUNDS];
                double cratio[MAX_ROUNDS], pps[NVARIANTS][MAX_ROUNDS];

                events = events < n ? events : n;
                printf("\nwindow %ld: %ld events per run\n", windows[w], events);
                for (int i = 0; i < rounds; i++)
                        for (int k = 0; k < nvar; k++) {
                                int vi = (k + i) % nvar;
                                enum variant v = vars[vi];
                                struct result r = run_child(v, windows[w], events);

                                if (!r.ok) {
                                        printf("  round %d %-8s FAILED: %s\n", i, variant_names[v],
                                               r.why);
                                        failed = 1;
                                        rate[vi][i] = 0;
                                        continue;
                                }
                                rate[vi][i] = (double)events / r.seconds;
                                cpu[vi][i] = r.cpu_seconds * 1e9 / (double)events;
                                rss[vi][i] = (double)r.rss_kb / 1024.0;
                                req[vi][i] = (double)r.commit_requests;
                                ent[vi][i] = (double)r.commit_entries;
                                pps[vi][i] = (double)r.commit_entries / PARTITIONS / r.seconds;
                                printf("  round %d %-8s %9.0f ev/s %7.0f ns "
                                       "CPU/ev %6.1f MiB %7ld OffsetCommit "
                                       "(%ld partition offsets, %.1f/partition/s) "
                                       "load %.2f\n",
                                       i, variant_names[v], rate[vi][i], cpu[vi][i], rss[vi][i],
                                       r.commit_requests, r.commit_entries, pps[vi][i], loadavg());
                        }
                if (failed)
                        continue;
                printf("  %-8s %12s %8s %10s %8s %9s %12s %12s %10s\n", "variant", "events/s",
                       "vs unsafe", "CPU ns/ev", "vs unsafe", "RSS MiB", "OffsetCommit",
                       "part. offs.", "/part./s");
                for (int k = 0; k < nvar; k++) {
                        for (int i = 0; i < rounds; i++) {
                                ratio[i] = rate[k][i] / rate[0][i];
                                cratio[i] = cpu[k][i] / cpu[0][i];
                        }
                        printf("  %-8s %12.0f %8.3f %10.0f %8.3f %9.1f %12.0f "
                               "%12.0f %10.2f\n",
                               variant_names[vars[k]], median(rate[k], rounds),
                               median(ratio, rounds), median(cpu[k], rounds),
                               median(cratio, rounds), median(rss[k], rounds),
                               median(req[k], rounds), median(ent[k], rounds),
                               median(pps[k], rounds));
                }
        }
        printf("\nload at the end %.2f\n", loadavg());
        return failed;
}
