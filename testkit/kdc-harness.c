/* kdc-harness: run a service under fault injection on librdkafka's mock
 * cluster and report lost, duplicated and unprocessed events
 * (docs/harness.md). The work is done by the testkit (kdc/testkit.h). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jansson.h>
#include <kdc/testkit.h>

#ifndef KDC_VERSION
#define KDC_VERSION "0.0.0"
#endif

static const char usage[] =
    "usage: kdc-harness list [--format text|json] [--verbose]\n"
    "       kdc-harness run (--scenario NAME[,NAME...] | --all) [options] -- COMMAND [ARGS...]\n"
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
    "\n"
    "exit status: 0 no event lost, 1 events lost (or duplicated / unprocessed when asked),\n"
    "2 usage or harness error\n";

static int list(int argc, char **argv) {
        int json = 0, verbose = 0;

        for (int i = 1; i < argc; i++) {
                if (!strcmp(argv[i], "--format") && i + 1 < argc)
                        json = !strcmp(argv[++i], "json");
                else if (!strcmp(argv[i], "--format=json"))
                        json = 1;
                else if (!strcmp(argv[i], "--format=text"))
                        json = 0;
                else if (!strcmp(argv[i], "--verbose") || !strcmp(argv[i], "-v"))
                        verbose = 1;
                else {
                        fputs(usage, stderr);
                        return 2;
                }
        }
        if (json) {
                json_t *a = json_array();
                for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                        const kdc_testkit_scenario_t *s = kdc_testkit_scenario(i);
                        json_array_append_new(
                            a, json_pack("{s:s, s:s, s:s, s:s, s:s, s:b}", "name", s->name,
                                         "summary", s->summary, "faults", s->faults, "expect",
                                         s->expect, "mock_limits", s->mock_limits,
                                         "needs_process", s->needs_process));
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
                }
        }
        return 0;
}

static int number(const char *s, int64_t lo, int64_t hi, int64_t *out) {
        char *end;
        long long v;

        errno = 0;
        v = strtoll(s, &end, 10);
        if (errno || end == s || *end || v < lo || v > hi)
                return -1;
        *out = v;
        return 0;
}

/* Scenario names: "a,b,c" or every one. */
static int pick(const char *spec, int all, const char ***names, size_t *n) {
        size_t count = kdc_testkit_scenario_count(), k = 0;

        *names = calloc(count * 4 + 1, sizeof **names);
        if (!*names)
                return -1;
        if (all) {
                for (size_t i = 0; i < count; i++)
                        (*names)[k++] = kdc_testkit_scenario(i)->name;
        } else {
                char *copy = strdup(spec), *save = NULL;
                for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                        const kdc_testkit_scenario_t *s = kdc_testkit_scenario_find(t);
                        if (!s || k >= count * 4) {
                                fprintf(stderr, "kdc-harness: unknown scenario '%s' (kdc-harness "
                                                "list names them)\n",
                                        t);
                                free(copy);
                                return -1;
                        }
                        (*names)[k++] = s->name;
                }
                free(copy);
        }
        *n = k;
        return k ? 0 : -1;
}

static int run(int argc, char **argv) {
        enum { O_EVENTS = 256, O_SEED, O_FORMAT, O_PARTITIONS, O_RATE, O_INPUT, O_OUTPUT, O_DLQ,
               O_GROUP, O_TIMEOUT, O_IDLE, O_EXACT, O_COMPLETE, O_LOG, O_QUIET, O_SCENARIO,
               O_ALL };
        static const struct option opts[] = {
            {"scenario", required_argument, 0, O_SCENARIO},
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
            {0, 0, 0, 0}};
        kdc_testkit_options_t o;
        const char *scenario = NULL, *service_log = NULL;
        int all = 0, json = 0, quiet = 0, complete = 0, c, status = 0;
        int64_t v;

        kdc_testkit_options_init(&o);
        optind = 1;
        while ((c = getopt_long(argc, argv, "+", opts, NULL)) != -1) {
                switch (c) {
                case O_SCENARIO:
                        scenario = optarg;
                        break;
                case O_ALL:
                        all = 1;
                        break;
                case O_EVENTS:
                        if (number(optarg, 1, 10000000, &o.events))
                                goto bad;
                        break;
                case O_SEED:
                        if (number(optarg, 0, INT64_MAX, &v))
                                goto bad;
                        o.seed = (uint64_t)v;
                        break;
                case O_FORMAT:
                        if (!strcmp(optarg, "json"))
                                json = 1;
                        else if (strcmp(optarg, "text"))
                                goto bad;
                        break;
                case O_PARTITIONS:
                        if (number(optarg, 1, 64, &v))
                                goto bad;
                        o.partitions = (int)v;
                        break;
                case O_RATE:
                        if (number(optarg, 1, 10000000, &v))
                                goto bad;
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
                        if (number(optarg, 1, 86400, &v))
                                goto bad;
                        o.timeout_ms = (int)v * 1000;
                        break;
                case O_IDLE:
                        if (number(optarg, 1, 86400, &v))
                                goto bad;
                        o.idle_ms = (int)v * 1000;
                        break;
                case O_EXACT:
                        o.exactly_once = 1;
                        break;
                case O_COMPLETE:
                        complete = 1;
                        break;
                case O_LOG:
                        service_log = optarg;
                        break;
                case O_QUIET:
                        quiet = 1;
                        break;
                default:
                        goto bad;
                }
        }
        if (optind >= argc || (!scenario && !all) || (scenario && all)) {
                fputs(optind >= argc ? "kdc-harness: no service command after --\n"
                                     : "kdc-harness: give --scenario NAME or --all\n",
                      stderr);
                goto bad;
        }
        const char **names;
        size_t n;
        if (pick(scenario, all, &names, &n)) {
                free(names);
                return 2;
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
        const kdc_testkit_result_t **results = calloc(n, sizeof *results);
        size_t done = 0;
        for (size_t i = 0; results && i < n; i++) {
                kdc_testkit_result_t *r;
                int rc = kdc_testkit_run_command(&o, names[i], argv + optind, &r);
                if (rc != 0) {
                        fprintf(stderr, "kdc-harness: scenario %s: %s\n", names[i],
                                rc == KDC_ERR_NOENT ? "the service command could not be started"
                                                    : kdc_strerror(rc));
                        status = 2;
                        break;
                }
                results[done++] = r;
                if (!r->valid || (complete && r->unprocessed > 0))
                        status = status ? status : 1;
        }
        if (done && kdc_testkit_results_print(results, done, stdout,
                                              json ? KDC_TESTKIT_JSON : KDC_TESTKIT_TEXT) != 0)
                status = 2;
        fflush(stdout);
        for (size_t i = 0; i < done; i++)
                kdc_testkit_result_destroy((kdc_testkit_result_t *)results[i]);
        free(results);
        free(names);
        if (o.service_fd >= 0)
                close(o.service_fd);
        return status;
bad:
        fputs(usage, stderr);
        return 2;
}

int main(int argc, char **argv) {
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
        fputs(usage, stderr);
        return 2;
}
