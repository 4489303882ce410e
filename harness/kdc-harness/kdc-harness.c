/* kdc-harness: run a service under fault injection on librdkafka's mock
 * cluster and report lost, duplicated and unprocessed events
 * (docs/kdc-harness.md). The work is done by the testkit (kdc/testkit.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <sys/stat.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

#include <jansson.h>
#include <kdc/testkit.h>
#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>

#ifndef KDC_VERSION
#define KDC_VERSION "0.0.0"
#endif

static const char usage[] =
    "Usage: kdc-harness list [--format text|json] [--verbose]\n"
    "  or:  kdc-harness run (--scenario NAME[,NAME...] | --all) [options] -- COMMAND [ARGS...]\n"
    "  or:  kdc-harness mock-cluster [--brokers N]\n"
    "\n"
    "Runs a Kafka service (any language) against a mock cluster while it injects faults,\n"
    "and proves by counting that no event was lost.\n"
    "\n"
    "mock-cluster: runs a standalone librdkafka mock cluster of N brokers (default 3, at\n"
    "most 32) on loopback, prints its bootstrap servers on stdout (one line) and serves\n"
    "until SIGINT or SIGTERM, then exits 0.\n"
    "\n"
    "run options:\n"
    "  --events N           input events (default 1000)\n"
    "  --seed S             seed of the fault schedule and poison events (default 1)\n"
    "  --format text|json   report format on stdout (default text)\n"
    "  --partitions P       input and output partitions (default 4)\n"
    "  --rate R             events per second after the warm-up (default 1000)\n"
    "  --input-topic T, --output-topic T, --dlq-topic T, --group G\n"
    "                       names given to the service (defaults kdc.input, kdc.output,\n"
    "                       kdc.dlq, kdc-service)\n"
    "  --timeout SECONDS    deadline of each scenario (default 300)\n"
    "  --idle SECONDS       end a scenario when nothing moved this long (default 20)\n"
    "  --exactly-once       duplicated events fail the run too\n"
    "  --require-complete   events left unprocessed fail the run too\n"
    "  --service-log FILE   the service's stdout and stderr (default: this stderr)\n"
    "  --quiet              no progress lines on stderr\n"
    "  --report-html FILE   also write the runs as one self-contained HTML page: each\n"
    "                       scenario's timeline (events stored, committed, written), its\n"
    "                       fault windows and its lost and duplicated events\n"
    "  --bootstrap-servers HOST:PORT,...\n"
    "                       run on this existing cluster instead of an embedded mock:\n"
    "                       each scenario creates topics and a group of unique names\n"
    "                       there (the names above, suffixed -PID-TIME-RANDOM) and\n"
    "                       deletes them at the end; scenarios that need control of the\n"
    "                       brokers (list --verbose says which) are refused, one line each\n"
    "\n"
    "Exit status: 0 every run valid (no event lost, and the service processed something),\n"
    "1 a run failed (events lost, nothing processed, or duplicated / unprocessed when\n"
    "asked), 2 usage or harness error\n";

/* A usage error: one precise line on stderr, exit status 2. */
static int usage_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int usage_error(const char *fmt, ...) {
        va_list ap;

        fputs("kdc-harness: ", stderr);
        va_start(ap, fmt);
        vfprintf(stderr, fmt, ap);
        va_end(ap);
        fputs(" (kdc-harness --help gives the usage)\n", stderr);
        return 2;
}

static int list(int argc, char **argv) {
        int json = 0, verbose = 0;

        for (int i = 1; i < argc; i++) {
                const char *format = NULL;
                if (!strcmp(argv[i], "--format")) {
                        if (i + 1 >= argc)
                                return usage_error("option '--format' needs text or json");
                        format = argv[++i];
                } else if (!strncmp(argv[i], "--format=", 9)) {
                        format = argv[i] + 9;
                } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        fputs(usage, stdout);
                        return 0;
                } else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v")) {
                        verbose = 1;
                        continue;
                } else {
                        return usage_error("list: unknown argument '%s'", argv[i]);
                }
                if (!strcmp(format, "json"))
                        json = 1;
                else if (!strcmp(format, "text"))
                        json = 0;
                else
                        return usage_error("--format: '%s' is not text or json", format);
        }
        if (json) {
                json_t *a = json_array();
                for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                        const kdc_testkit_scenario_t *s = kdc_testkit_scenario(i);
                        json_array_append_new(
                            a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:b, s:o, s:b}", "name",
                                         s->name, "summary", s->summary, "faults", s->faults,
                                         "expect", s->expect, "mock_limits", s->mock_limits,
                                         "needs_process", s->needs_process, "sink",
                                         s->sink ? json_string(s->sink) : json_null(),
                                         "needs_broker_control", s->needs_broker_control));
                }
                json_dumpf(a, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER);
                fputc('\n', stdout);
                json_decref(a);
                return 0;
        }
        for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                const kdc_testkit_scenario_t *s = kdc_testkit_scenario(i);
                printf("%-36s %s\n", s->name, s->summary);
                if (verbose) {
                        printf("    faults: %s\n    expect: %s\n", s->faults, s->expect);
                        if (*s->mock_limits)
                                printf("    mock:   %s\n", s->mock_limits);
                        if (s->sink)
                                printf("    sink:   %s (KDC_HARNESS_SINK)\n", s->sink);
                        if (s->needs_broker_control)
                                printf("    needs control of the brokers: embedded mock cluster "
                                       "only, not --bootstrap-servers\n");
                }
        }
        return 0;
}

/* An integer option in lo..hi: 0, or a usage error naming the option. */
static int number(const char *option, const char *s, int64_t lo, int64_t hi, int64_t *out) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || isspace((unsigned char)*s) || v < lo || v > hi) {
                usage_error("--%s: '%s' is not an integer in %" PRId64 "..%" PRId64, option, s, lo,
                            hi);
                return -1;
        }
        *out = v;
        return 0;
}

/* Scenario names: "a,b,c" (each one known, none empty) or every one. */
static int pick(const char *spec, int all, const char ***names, size_t *n) {
        size_t count = kdc_testkit_scenario_count(), k = 0, cap = count + 1;

        for (const char *c = spec ? spec : ""; *c; c++)
                cap += *c == ',';
        if (!(*names = calloc(cap, sizeof **names))) {
                fputs("kdc-harness: out of memory\n", stderr);
                return -1;
        }
        if (all) {
                for (size_t i = 0; i < count; i++)
                        (*names)[k++] = kdc_testkit_scenario(i)->name;
        } else {
                const char *t = spec;
                for (;;) {
                        size_t len = strcspn(t, ",");
                        const kdc_testkit_scenario_t *s = NULL;
                        char name[128];
                        if (len == 0) {
                                usage_error("--scenario: an empty name in '%s'", spec);
                                return -1;
                        }
                        if (len < sizeof name) {
                                memcpy(name, t, len);
                                name[len] = '\0';
                                s = kdc_testkit_scenario_find(name);
                        }
                        if (!s) {
                                usage_error("--scenario: unknown scenario '%.*s'; kdc-harness list "
                                            "names them",
                                            (int)(len < 200 ? len : 200), t);
                                return -1;
                        }
                        (*names)[k++] = s->name;
                        if (!t[len])
                                break;
                        t += len + 1;
                }
        }
        *n = k;
        return 0;
}

/* What posix_spawnp() would run for `command`: 0, or a usage error saying
 * why it cannot be started (checked before any mock cluster starts). */
static int command_startable(const char *command) {
        struct stat st;

        if (!*command)
                return usage_error("the service command is an empty string"), -1;
        if (strchr(command, '/')) {
                if (stat(command, &st) != 0)
                        return usage_error("service command %s: %s", command, strerror(errno)), -1;
                if (S_ISDIR(st.st_mode))
                        return usage_error("service command %s: is a directory", command), -1;
                if (access(command, X_OK) != 0)
                        return usage_error("service command %s: not executable (%s)", command,
                                           strerror(errno)),
                               -1;
                return 0;
        }
        const char *path = getenv("PATH");
        if (!path)
                path = "/bin:/usr/bin";
        for (const char *dir = path;; dir += strcspn(dir, ":") + 1) {
                size_t len = strcspn(dir, ":");
                char full[4096];
                if (snprintf(full, sizeof full, "%.*s%s%s", (int)len, len ? dir : ".", "/",
                             command) < (int)sizeof full &&
                    stat(full, &st) == 0 && !S_ISDIR(st.st_mode) && access(full, X_OK) == 0)
                        return 0;
                if (!dir[len])
                        break;
        }
        if (stat(command, &st) == 0)
                return usage_error("service command %s: not found in PATH (./%s names the one "
                                   "here)",
                                   command, command),
                       -1;
        return usage_error("service command %s: not found in PATH", command), -1;
}

/* The report of the runs done. When the harness failed before every run was
 * done, the JSON document says so: "valid": false and "error", so that a
 * tool reading only the document does not take the runs done for all. */
static int print_report(const kdc_testkit_result_t **results, size_t done, int json,
                        const char *error) {
        if (!json || !error)
                return done || json ? kdc_testkit_results_print(results, done, stdout,
                                                                json ? KDC_TESTKIT_JSON
                                                                     : KDC_TESTKIT_TEXT)
                                    : 0;
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);
        json_t *doc = NULL;
        int rc = -1;
        if (f && kdc_testkit_results_print(results, done, f, KDC_TESTKIT_JSON) == 0) {
                fclose(f);
                f = NULL;
                doc = json_loadb(text, len, 0, NULL);
        }
        if (doc && !json_object_set_new(doc, "valid", json_false()) &&
            !json_object_set_new(doc, "error", json_string(error)) &&
            !json_dumpf(doc, stdout, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) {
                fputc('\n', stdout);
                rc = 0;
        }
        if (f)
                fclose(f);
        json_decref(doc);
        free(text);
        return rc;
}

/* The signal that interrupted a run on an existing cluster, re-raised once
 * the run has cleaned up. */
static volatile sig_atomic_t interrupted_by;
static int on_existing_cluster;

/* Interrupted mid-run (Ctrl-C, a CI timeout): no service may outlive us. On
 * an existing cluster, the run also deletes its topics and group first (a
 * second signal ends kdc-harness at once). */
static void on_interrupt(int sig) {
        kdc_testkit_services_kill();
        signal(sig, SIG_DFL);
        if (on_existing_cluster && !interrupted_by) {
                interrupted_by = sig;
                kdc_testkit_interrupt();
                return;
        }
        raise(sig);
}

static int run(int argc, char **argv) {
        enum {
                O_EVENTS = 256,
                O_SEED,
                O_FORMAT,
                O_PARTITIONS,
                O_RATE,
                O_INPUT,
                O_OUTPUT,
                O_DLQ,
                O_GROUP,
                O_TIMEOUT,
                O_IDLE,
                O_EXACT,
                O_COMPLETE,
                O_LOG,
                O_QUIET,
                O_SCENARIO,
                O_ALL,
                O_HTML,
                O_BS
        };
        static const struct option opts[] = {{"scenario", required_argument, 0, O_SCENARIO},
                                             {"all", no_argument, 0, O_ALL},
                                             {"events", required_argument, 0, O_EVENTS},
                                             {"seed", required_argument, 0, O_SEED},
                                             {"format", required_argument, 0, O_FORMAT},
                                             {"partitions", required_argument, 0, O_PARTITIONS},
                                             {"rate", required_argument, 0, O_RATE},
                                             {"input-topic", required_argument, 0, O_INPUT},
                                             {"output-topic", required_argument, 0, O_OUTPUT},
                                             {"dlq-topic", required_argument, 0, O_DLQ},
                                             {"group", required_argument, 0, O_GROUP},
                                             {"timeout", required_argument, 0, O_TIMEOUT},
                                             {"idle", required_argument, 0, O_IDLE},
                                             {"exactly-once", no_argument, 0, O_EXACT},
                                             {"require-complete", no_argument, 0, O_COMPLETE},
                                             {"service-log", required_argument, 0, O_LOG},
                                             {"quiet", no_argument, 0, O_QUIET},
                                             {"report-html", required_argument, 0, O_HTML},
                                             {"bootstrap-servers", required_argument, 0, O_BS},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
        kdc_testkit_options_t o;
        const char *scenario = NULL, *service_log = NULL, *html_path = NULL;
        int all = 0, json = 0, quiet = 0, c, status = 0, index;
        int64_t v;
        char problem[512];

        kdc_testkit_options_init(&o);
        optind = 1;
        opterr = 0; /* our own messages, below */
        while ((c = getopt_long(argc, argv, "+:", opts, &index)) != -1) {
                const char *name = c >= O_EVENTS ? opts[index].name : "";
                switch (c) {
                case O_SCENARIO:
                        scenario = optarg;
                        break;
                case O_ALL:
                        all = 1;
                        break;
                case O_EVENTS:
                        if (number(name, optarg, 1, KDC_TESTKIT_EVENTS_MAX, &o.events))
                                return 2;
                        break;
                case O_SEED:
                        if (number(name, optarg, 0, INT64_MAX, &v))
                                return 2;
                        o.seed = (uint64_t)v;
                        break;
                case O_FORMAT:
                        if (!strcmp(optarg, "json"))
                                json = 1;
                        else if (!strcmp(optarg, "text"))
                                json = 0;
                        else
                                return usage_error("--format: '%s' is not text or json", optarg);
                        break;
                case O_PARTITIONS:
                        if (number(name, optarg, 1, KDC_TESTKIT_PARTITIONS_MAX, &v))
                                return 2;
                        o.partitions = (int)v;
                        break;
                case O_RATE:
                        if (number(name, optarg, 1, 10000000, &v))
                                return 2;
                        o.rate = (int)v;
                        break;
                case O_INPUT:
                        o.input_topic = optarg;
                        break;
                case O_OUTPUT:
                        o.output_topic = optarg;
                        break;
                case O_DLQ:
                        o.dlq_topic = optarg;
                        break;
                case O_GROUP:
                        o.group = optarg;
                        break;
                case O_TIMEOUT:
                        if (number(name, optarg, 1, 86400, &v))
                                return 2;
                        o.timeout_ms = (int)v * 1000;
                        break;
                case O_IDLE:
                        if (number(name, optarg, 1, 86400, &v))
                                return 2;
                        o.idle_ms = (int)v * 1000;
                        break;
                case O_EXACT:
                        o.exactly_once = 1;
                        break;
                case O_COMPLETE:
                        o.require_complete = 1;
                        break;
                case O_LOG:
                        service_log = optarg;
                        break;
                case O_QUIET:
                        quiet = 1;
                        break;
                case O_HTML:
                        html_path = optarg;
                        break;
                case O_BS:
                        o.bootstrap_servers = optarg;
                        break;
                case 'h':
                        fputs(usage, stdout);
                        return 0;
                case ':':
                        return usage_error("option '%s' needs a value", argv[optind - 1]);
                default:
                        if (optopt >= O_EVENTS)
                                return usage_error("option '%s' takes no value",
                                                   argv[optind - 1]);
                        return usage_error("unknown option '%s'", argv[optind - 1]);
                }
        }
        if (!scenario && !all)
                return usage_error("run: give --scenario NAME[,NAME...] or --all");
        if (scenario && all)
                return usage_error("run: give --scenario or --all, not both");
        if (optind >= argc)
                return usage_error("run: no service command after --");
        if (kdc_testkit_options_validate(&o, problem, sizeof problem) != 0)
                return usage_error("%s", problem);
        if (command_startable(argv[optind]) != 0)
                return 2;
        const char **names;
        size_t n;
        if (pick(scenario, all, &names, &n)) {
                free(names);
                return 2;
        }
        /* An existing cluster: what needs the mock's brokers is refused, one
         * line each; with nothing left, that is a usage error. */
        if (o.bootstrap_servers) {
                size_t kept = 0;
                for (size_t i = 0; i < n; i++) {
                        if (kdc_testkit_scenario_find(names[i])->needs_broker_control)
                                fprintf(stderr,
                                        "kdc-harness: scenario %s needs control of the brokers "
                                        "(the embedded mock cluster): not run on "
                                        "--bootstrap-servers\n",
                                        names[i]);
                        else
                                names[kept++] = names[i];
                }
                if (!kept) {
                        free(names);
                        return 2;
                }
                n = kept;
        }
        /* What a service leaves outside its process group (a daemon started
         * with setsid, a double fork) comes to us when its parent dies, and is
         * killed at the service's next stop (tk_services_collect_strays()). */
        prctl(PR_SET_CHILD_SUBREAPER, 1);
        /* A signal we inherited ignored (a background job's SIGINT) stays
         * ignored. */
        on_existing_cluster = o.bootstrap_servers != NULL;
        static const int interrupts[] = {SIGINT, SIGTERM, SIGHUP};
        for (size_t i = 0; i < sizeof interrupts / sizeof interrupts[0]; i++) {
                struct sigaction sa, old;
                memset(&sa, 0, sizeof sa);
                sa.sa_handler = on_interrupt;
                sigemptyset(&sa.sa_mask);
                if (sigaction(interrupts[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
                        sigaction(interrupts[i], &sa, NULL);
        }
        o.log = quiet ? NULL : stderr;
        if (service_log) {
                o.service_fd = open(service_log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
                if (o.service_fd < 0) {
                        fprintf(stderr, "kdc-harness: %s: %s\n", service_log, strerror(errno));
                        free(names);
                        return 2;
                }
        }
        /* Opened before the runs: a path that cannot be written is said now, not after
         * them. */
        FILE *html = NULL;
        if (html_path && !(html = fopen(html_path, "we"))) {
                fprintf(stderr, "kdc-harness: %s: %s\n", html_path, strerror(errno));
                free(names);
                if (o.service_fd >= 0)
                        close(o.service_fd);
                return 2;
        }
        /* ... and when kdc-harness itself is killed, a cgroup holds them. */
        char why[512];
        if (kdc_testkit_services_contain(why, sizeof why) != 0 && !quiet)
                fprintf(stderr,
                        "kdc-harness: note: the services run without a cgroup of their own "
                        "(%s): a process one detaches with setsid outlives a SIGKILLed "
                        "kdc-harness\n",
                        why);
        const kdc_testkit_result_t **results = calloc(n, sizeof *results);
        size_t done = 0;
        char error[512] = "";
        if (!results)
                snprintf(error, sizeof error, "out of memory");
        for (size_t i = 0; results && i < n; i++) {
                kdc_testkit_result_t *r;
                int rc = kdc_testkit_run_command(&o, names[i], argv + optind, &r);
                if (interrupted_by) {
                        if (rc == 0)
                                kdc_testkit_result_destroy(r);
                        break;
                }
                const kdc_testkit_scenario_t *sc = kdc_testkit_scenario_find(names[i]);
                if (rc == KDC_ERR_NOENT && sc && sc->sink) {
                        snprintf(error, sizeof error,
                                 "scenario %s: the service command could not be started, or its "
                                 "%s sink could not be made%s",
                                 names[i], sc->sink,
                                 strcmp(sc->sink, "postgresql") == 0
                                     ? " (initdb and postgres: Debian's postgresql)"
                                     : "");
                        break;
                }
                if (rc != 0) {
                        snprintf(error, sizeof error, "scenario %s: %s", names[i],
                                 rc == KDC_ERR_NOENT ? "the service command could not be started"
                                 : rc == KDC_ERR_TIMEOUT && o.bootstrap_servers
                                     ? "the cluster did not answer, its topics got no leaders, "
                                       "it did not confirm the input events, or outputs could not "
                                       "be read back (the lines above say which)"
                                 : rc == KDC_ERR_TIMEOUT ? "the mock cluster did not confirm the "
                                                           "input events, or outputs could not be "
                                                           "read back"
                                 : rc == KDC_ERR_INVALID && o.bootstrap_servers
                                     ? "the cluster refused the run's topics (the lines above say "
                                       "why)"
                                     : kdc_strerror(rc));
                        break;
                }
                results[done++] = r;
                if (r->dropped_records > 0) {
                        snprintf(error, sizeof error,
                                 "scenario %s: no verdict: the mock cluster dropped %" PRId64
                                 " of the records (it keeps 5 MiB and 100,000 messages per "
                                 "partition); use fewer --events, more --partitions or smaller "
                                 "records",
                                 names[i], r->dropped_records);
                        break;
                }
                if (!r->valid)
                        status = status ? status : 1;
        }
        if (interrupted_by) { /* cleaned up: end as the signal would have */
                kdc_testkit_services_release();
                raise(interrupted_by);
        }
        if (*error) {
                fprintf(stderr, "kdc-harness: %s\n", error);
                status = 2;
        }
        if (print_report(results, done, json, *error ? error : NULL) != 0)
                status = 2;
        int html_bad = 0;
        if (html) { /* every step runs: the file is closed whatever failed */
                html_bad = kdc_testkit_report_html(html, results, done) != 0;
                html_bad |= ferror(html) != 0;
                html_bad |= fclose(html) != 0;
        }
        if (html_bad) {
                fprintf(stderr, "kdc-harness: %s: the HTML report could not be written\n",
                        html_path);
                status = 2;
        }
        fflush(stdout);
        for (size_t i = 0; i < done; i++)
                kdc_testkit_result_destroy((kdc_testkit_result_t *)results[i]);
        free(results);
        free(names);
        if (o.service_fd >= 0)
                close(o.service_fd);
        kdc_testkit_services_release();
        return status;
}

/* Rather than a dropped-connection line each time a client goes: the
 * standalone cluster says only what a script reads (its bootstrap servers). */
static void mock_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        (void)fac;
        if (level <= 3)
                fprintf(stderr, "kdc-harness: mock cluster: %s\n", buf);
}

#define MOCK_BROKERS_MAX 32

/* kdc-harness mock-cluster [--brokers N]: a mock cluster for a service's own
 * tests (or kdc-harness run --bootstrap-servers), until SIGINT or SIGTERM. */
static int mock_cluster(int argc, char **argv) {
        int64_t brokers = 3;

        for (int i = 1; i < argc; i++) {
                const char *value = NULL;
                if (!strcmp(argv[i], "--brokers")) {
                        if (i + 1 >= argc)
                                return usage_error("option '--brokers' needs a value");
                        value = argv[++i];
                } else if (!strncmp(argv[i], "--brokers=", 10)) {
                        value = argv[i] + 10;
                } else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
                        fputs(usage, stdout);
                        return 0;
                } else {
                        return usage_error("mock-cluster: unknown argument '%s'", argv[i]);
                }
                if (number("brokers", value, 1, MOCK_BROKERS_MAX, &brokers))
                        return 2;
        }
        /* Blocked before librdkafka starts its threads, which inherit the
         * mask: the signals wait for sigwait() below. */
        sigset_t stop;
        int sig;
        sigemptyset(&stop);
        sigaddset(&stop, SIGINT);
        sigaddset(&stop, SIGTERM);
        sigaddset(&stop, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &stop, NULL);

        rd_kafka_conf_t *conf = rd_kafka_conf_new();
        char err[256];
        rd_kafka_conf_set_log_cb(conf, mock_log);
        rd_kafka_t *host = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!host) {
                fprintf(stderr, "kdc-harness: mock-cluster: %s\n", err);
                return 2;
        }
        rd_kafka_mock_cluster_t *mcluster = rd_kafka_mock_cluster_new(host, (int)brokers);
        if (!mcluster) {
                fputs("kdc-harness: mock-cluster: librdkafka could not start a mock cluster\n",
                      stderr);
                rd_kafka_destroy(host);
                return 2;
        }
        printf("%s\n", rd_kafka_mock_cluster_bootstraps(mcluster));
        int status = fflush(stdout) == 0 ? 0 : 2;
        if (status)
                fprintf(stderr, "kdc-harness: mock-cluster: stdout: %s\n", strerror(errno));
        while (!status && sigwait(&stop, &sig) != 0)
                ;
        rd_kafka_mock_cluster_destroy(mcluster);
        rd_kafka_destroy(host);
        return status;
}

int main(int argc, char **argv) {
        if (argc >= 2 && !strcmp(argv[1], "mock-cluster"))
                return mock_cluster(argc - 1, argv + 1);
        if (argc >= 2 && !strcmp(argv[1], "list"))
                return list(argc - 1, argv + 1);
        if (argc >= 2 && !strcmp(argv[1], "run"))
                return run(argc - 1, argv + 1);
        if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
                fputs(usage, stdout);
                return 0;
        }
        if (argc >= 2 && !strcmp(argv[1], "--version")) {
                printf("kdc-harness %s\n", KDC_VERSION);
                return 0;
        }
        if (argc < 2) {
                fputs(usage, stderr);
                return 2;
        }
        return usage_error("unknown command '%s' (kdc-harness list, run, mock-cluster)", argv[1]);
}
