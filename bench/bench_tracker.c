/*
 * kdc-bench-tracker: what the DeliveryTracker costs over a raw producer.
 *
 * Each round produces N messages of 100 bytes to librdkafka's mock cluster
 * (in-process, loopback) and waits until every delivery report is served:
 *   raw     rd_kafka_producev() with a dr_msg_cb that counts successes, then
 *           rd_kafka_flush() (the baseline a service without libkdc has);
 *   tracker kdc_tracker_produce(), then kdc_tracker_wait() (reports to
 *           kdc_dr_msg_cb);
 *   track   kdc_tracker_track() + the service's own rd_kafka_producev(), and
 *           its own dr_msg_cb calling kdc_dr_msg_record(), then
 *           kdc_tracker_wait();
 *   stats   as tracker, with statistics attached to the tracker
 *           (kdc_stats_attach_tracker()); the delivered count is read from
 *           the statistics (kdc_stats_read()).
 * Every round runs in a child process of its own (fresh heap, fresh mock
 * cluster), and the modes alternate round by round, so the ratios are
 * measured side by side in one run.
 *
 * Throughput rounds: the broker is up; messages are produced as fast as the
 * producer takes them (rd_kafka_poll(rk, 0) every 1000), then every report
 * is awaited ("wait ms": from the last produce to the last report). Median messages per second per mode; the ratio to raw is the
 * median of the per-round ratios (the modes of a round run back to back,
 * under the same machine load), for wall-clock throughput and for CPU time
 * per message (user + system of every thread of the process).
 *
 * Memory rounds: the mock broker is set down first, so all N messages are in
 * flight at once (rd_kafka_outq_len() >= N is checked) when the resident set
 * (/proc/self/statm) is read; then the broker comes back and every report is
 * awaited. (RSS(mode) - RSS(raw)) / N is the memory libkdc adds per message
 * in flight (medians).
 *
 * Usage: kdc-bench-tracker [messages (1000000)] [rounds per mode (9)]
 */
#include <errno.h>
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

#define MSG_SIZE 100

enum mode { RAW, TRACKER, TRACK, STATS, NMODES };
static const char *const mode_names[NMODES] = {"raw", "tracker", "track", "stats"};

struct result {
        double seconds;
        double cpu_seconds; /* user + system, every thread of the process */
        double tail_seconds; /* from the last produce to the last report */
        long delivered;
        long inflight;  /* memory rounds: rd_kafka_outq_len() at the sample */
        double rss;     /* memory rounds: resident bytes at the sample */
        int ok;
};

static double cpu_now(void) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        return (double)ru.ru_utime.tv_sec + (double)ru.ru_utime.tv_usec / 1e6 +
               (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec / 1e6;
}

static double resident_bytes(void) {
        long pages_total = 0, pages_resident = 0;
        FILE *f = fopen("/proc/self/statm", "r");

        if (!f)
                return -1;
        if (fscanf(f, "%ld %ld", &pages_total, &pages_resident) != 2)
                pages_resident = -1;
        fclose(f);
        return (double)pages_resident * (double)sysconf(_SC_PAGESIZE);
}

static long raw_delivered;

static void counting_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                               void *opaque) {
        (void)rk;
        (void)opaque;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED)
                raw_delivered++;
}

/* A service's own callback that hands libkdc its reports. */
static void service_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
                              void *opaque) {
        (void)opaque;
        (void)kdc_dr_msg_record(rk, m, NULL); /* NOENT: not libkdc's */
}

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac,
                      const char *buf) {
        (void)rk, (void)level, (void)fac, (void)buf;
}

static void quiet_error(rd_kafka_t *rk, int err, const char *reason,
                        void *opaque) {
        (void)rk, (void)err, (void)reason, (void)opaque;
}

static rd_kafka_t *producer(enum mode mode) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];

#define SET(k, v)                                                              \
        if (rd_kafka_conf_set(conf, k, v, err, sizeof err) != RD_KAFKA_CONF_OK) \
                return fprintf(stderr, "%s\n", err), NULL
        SET("test.mock.num.brokers", "1");
        /* Room for every message: the peak in flight is what the broker
         * has not acknowledged yet, not a queue limit. */
        SET("queue.buffering.max.messages", "2000000");
        SET("queue.buffering.max.kbytes", "2097151");
        /* Without it a round's last Produce request could sit ~40 ms in
         * loopback TCP (Nagle's algorithm against a delayed ACK: the mock
         * broker does not set TCP_NODELAY either), in a random third of the
         * rounds of every mode: 15 % of a round, more than the difference
         * measured here. */
        SET("socket.nagle.disable", "true");
#undef SET
        /* Memory rounds take the broker down on purpose: keep quiet. */
        rd_kafka_conf_set_log_cb(conf, quiet_log);
        rd_kafka_conf_set_error_cb(conf, quiet_error);
        rd_kafka_conf_set_dr_msg_cb(conf, mode == RAW                        ? counting_dr_msg_cb
                                          : mode == TRACKER || mode == STATS ? kdc_dr_msg_cb
                                                                             : service_dr_msg_cb);
        return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
}

/* One round, in the child. memory: broker down while producing. */
static struct result round_of(enum mode mode, long n, int memory) {
        static char payload[MSG_SIZE];
        struct result r = {0};
        kdc_tracker_t *t = NULL;
        kdc_stats_t *stats = NULL;
        rd_kafka_t *rk = producer(mode);
        rd_kafka_mock_cluster_t *mcluster;
        double start, cpu_start;

        memset(payload, 'x', sizeof payload);
        if (!rk || kdc_tracker_new(&t) != 0)
                return r;
        if (mode == STATS &&
            (kdc_stats_new(&stats, "bench") != 0 || kdc_stats_attach_tracker(stats, t) != 0))
                return r;
        /* Connect and learn the topic before the clock starts. */
        rd_kafka_producev(rk, RD_KAFKA_V_TOPIC("bench"), RD_KAFKA_V_PARTITION(0),
                          RD_KAFKA_V_VALUE("warm", 4), RD_KAFKA_V_END);
        rd_kafka_flush(rk, 10000);
        raw_delivered = 0;
        mcluster = rd_kafka_handle_mock_cluster(rk);
        if (memory)
                rd_kafka_mock_broker_set_down(mcluster, 1);

        start = now();
        cpu_start = cpu_now();
        for (long i = 0; i < n; i++) {
                rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
                void *h;

                switch (mode) {
                case RAW:
                        err = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC("bench"),
                            RD_KAFKA_V_PARTITION(0),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_VALUE(payload, MSG_SIZE),
                            RD_KAFKA_V_END);
                        break;
                case TRACKER:
                case STATS:
                        if (kdc_tracker_produce(t, rk, "bench", 0, NULL, 0,
                                                payload, MSG_SIZE, NULL, -1,
                                                &err) != 0)
                                return r;
                        break;
                case TRACK:
                        if (kdc_tracker_track(t, rk, NULL, &h) != 0)
                                return r;
                        err = rd_kafka_producev(
                            rk, RD_KAFKA_V_TOPIC("bench"),
                            RD_KAFKA_V_PARTITION(0),
                            RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                            RD_KAFKA_V_VALUE(payload, MSG_SIZE),
                            RD_KAFKA_V_OPAQUE(h), RD_KAFKA_V_END);
                        if (err)
                                kdc_tracker_untrack(t, h);
                        break;
                default:
                        return r;
                }
                if (err)
                        return r; /* the queue never fills: see producer() */
                if (i % 1000 == 0)
                        rd_kafka_poll(rk, 0); /* serve reports as a service does */
        }
        r.tail_seconds = now();
        if (memory) {
                r.inflight = rd_kafka_outq_len(rk);
                r.rss = resident_bytes();
                rd_kafka_mock_broker_set_up(mcluster, 1);
        }
        if (mode == RAW) {
                if (rd_kafka_flush(rk, 120000) != RD_KAFKA_RESP_ERR_NO_ERROR)
                        return r;
                r.delivered = raw_delivered;
        } else {
                if (kdc_tracker_wait(t, rk, 120000) != 0)
                        return r;
                r.delivered = (long)kdc_tracker_delivered(t);
        }
        if (mode == STATS) {
                kdc_stats_snapshot_t snap;

                if (kdc_stats_read(stats, &snap) != 0)
                        return r;
                r.delivered = (long)snap.delivered;
        }
        r.seconds = now() - start;
        r.tail_seconds = now() - r.tail_seconds;
        r.cpu_seconds = cpu_now() - cpu_start;
        /* outq_len also counts events waiting to be served, such as the
         * error event of the broker going down: >= n, not == n. */
        r.ok = r.delivered == n && (!memory || r.inflight >= n);
        kdc_tracker_destroy(t);
        kdc_stats_destroy(stats);
        rd_kafka_destroy(rk);
        return r;
}

static struct result run_child(enum mode mode, long n, int memory) {
        struct result r = {0};
        int fds[2], status;
        pid_t pid;

        if (pipe(fds) != 0)
                return r;
        pid = fork();
        if (pid == 0) {
                struct result c = round_of(mode, n, memory);

                close(fds[0]);
                if (write(fds[1], &c, sizeof c) != sizeof c)
                        _exit(1);
                _exit(0);
        }
        close(fds[1]);
        if (pid < 0 || read(fds[0], &r, sizeof r) != sizeof r)
                r.ok = 0;
        close(fds[0]);
        if (pid > 0)
                waitpid(pid, &status, 0);
        return r;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *)a, y = *(const double *)b;

        return (x > y) - (x < y);
}

static double median(double *v, int n) {
        qsort(v, (size_t)n, sizeof(*v), cmp_double);
        return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int main(int argc, char **argv) {
        long n = argc > 1 ? atol(argv[1]) : 1000000;
        int rounds = argc > 2 ? atoi(argv[2]) : 9;
        double rate[NMODES][64], cpu[NMODES][64], rss[NMODES][64];
        double tail[NMODES][64];
        double mrate[NMODES], mcpu[NMODES], mrss[NMODES], mtail[NMODES];
        double ratio[NMODES], cpu_ratio[NMODES];

        if (n <= 0 || rounds <= 0 || rounds > 64) {
                fprintf(stderr, "usage: %s [messages] [rounds per mode <= 64]\n",
                        argv[0]);
                return 2;
        }
        printf("kdc-bench-tracker: %ld x %d-byte messages to the mock cluster, "
               "%d rounds per mode, alternating, one process per round "
               "(librdkafka %s)\n",
               n, MSG_SIZE, rounds, rd_kafka_version_str());
        /* One unmeasured round per mode first (page cache, CPU clocks). */
        for (int m = 0; m < NMODES; m++)
                run_child((enum mode)m, n / 10, 0);
        for (int memory = 0; memory < 2; memory++)
                for (int i = 0; i < rounds; i++)
                        for (int m = 0; m < NMODES; m++) {
                                /* Rotate so no mode always runs first. */
                                enum mode mode = (enum mode)((m + i) % NMODES);
                                struct result r = run_child(mode, n, memory);

                                if (!r.ok) {
                                        fprintf(stderr,
                                                "%s round %d %s: not every message "
                                                "was confirmed (%ld/%ld, %ld in "
                                                "flight)\n",
                                                memory ? "memory" : "throughput", i,
                                                mode_names[mode], r.delivered, n,
                                                r.inflight);
                                        return 1;
                                }
                                if (memory) {
                                        rss[mode][i] = r.rss;
                                        printf("  memory     round %d %-7s RSS with "
                                               "%ld in flight: %7.1f MiB\n",
                                               i, mode_names[mode], r.inflight,
                                               r.rss / 1048576.0);
                                } else {
                                        rate[mode][i] = (double)n / r.seconds;
                                        cpu[mode][i] = r.cpu_seconds * 1e9 / (double)n;
                                        tail[mode][i] = r.tail_seconds * 1e3;
                                        printf("  throughput round %d %-7s %9.0f "
                                               "msg/s  %6.0f ns CPU/msg  "
                                               "%5.1f ms wait\n",
                                               i, mode_names[mode], rate[mode][i],
                                               cpu[mode][i], r.tail_seconds * 1e3);
                                }
                        }
        /* Ratios per round (the three modes of a round ran back to back,
         * under the same machine load), then their median. */
        for (int m = 0; m < NMODES; m++) {
                double r[64], c[64];

                for (int i = 0; i < rounds; i++) {
                        r[i] = rate[m][i] / rate[RAW][i];
                        c[i] = cpu[m][i] / cpu[RAW][i];
                }
                ratio[m] = median(r, rounds);
                cpu_ratio[m] = median(c, rounds);
        }
        for (int m = 0; m < NMODES; m++) {
                mrate[m] = median(rate[m], rounds);
                mcpu[m] = median(cpu[m], rounds);
                mrss[m] = median(rss[m], rounds);
                mtail[m] = median(tail[m], rounds);
        }
        printf("\n%-8s %14s %7s %13s %7s %9s %14s %12s\n", "mode",
               "msg/s (median)", "vs raw", "CPU ns/msg", "vs raw", "wait ms",
               "RSS MiB (all", "added B/msg");
        printf("%-8s %14s %7s %13s %7s %9s %14s %12s\n", "", "", "", "(median)",
               "", "(median)", "in flight)", "in flight");
        for (int m = 0; m < NMODES; m++)
                printf("%-8s %14.0f %7.3f %13.0f %7.3f %9.1f %14.1f %12.1f\n",
                       mode_names[m], mrate[m], ratio[m], mcpu[m],
                       cpu_ratio[m], mtail[m], mrss[m] / 1048576.0,
                       (mrss[m] - mrss[RAW]) / (double)n);
        printf("\ntargets: throughput ratio >= 0.95; < 64 bytes added per "
               "message in flight\n");
        return 0;
}
