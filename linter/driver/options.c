/* kdc-lint's command line (see options.h). */
#define _GNU_SOURCE
#include "options.h"
#include "output.h"
#include "rule.h"
#include "ruledocs.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { OPT_EXTRA_ARG = 256, OPT_FORMAT, OPT_LIST_RULES, OPT_ENABLE, OPT_DISABLE, OPT_PROFILE,
       OPT_VERSION, OPT_DUMP_MODEL, OPT_FAIL_INCOMPLETE, OPT_COLOR, OPT_CHANGED_SINCE };

enum { OPT_EXPLAIN_CONFIG = 400, OPT_EXPLAIN };

/* Configuration, suppressions, baseline. */
enum { OPT_CONFIG = 500, OPT_DUMP_CONFIG, OPT_REPORT_UNUSED, OPT_BASELINE, OPT_WRITE_BASELINE };

/* Scale: parallel units, prefilter, cache, shards. */
enum {
    OPT_JOBS = 600,
    OPT_NO_CACHE,
    OPT_CACHE_DIR,
    OPT_NO_PREFILTER,
    OPT_NO_PREAMBLES,
    OPT_SHARD,
    OPT_PROGRESS,
    OPT_STATS,
    OPT_UNIT_TIME_LIMIT,
    OPT_UNIT_MEMORY_LIMIT
};

static const struct option long_opts[] = {
    {"explain-config", required_argument, NULL, OPT_EXPLAIN_CONFIG},
    {"explain", required_argument, NULL, OPT_EXPLAIN},
    {"jobs", required_argument, NULL, 'j'},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"no-prefilter", no_argument, NULL, OPT_NO_PREFILTER},
    {"no-preambles", no_argument, NULL, OPT_NO_PREAMBLES},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"progress", required_argument, NULL, OPT_PROGRESS},
    {"stats", no_argument, NULL, OPT_STATS},
    {"unit-time-limit", required_argument, NULL, OPT_UNIT_TIME_LIMIT},
    {"unit-memory-limit", required_argument, NULL, OPT_UNIT_MEMORY_LIMIT},
    {"config", required_argument, NULL, OPT_CONFIG},
    {"dump-config", required_argument, NULL, OPT_DUMP_CONFIG},
    {"report-unused-suppressions", no_argument, NULL, OPT_REPORT_UNUSED},
    {"baseline", required_argument, NULL, OPT_BASELINE},
    {"write-baseline", required_argument, NULL, OPT_WRITE_BASELINE},
    {"extra-arg", required_argument, NULL, OPT_EXTRA_ARG},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"output", required_argument, NULL, 'o'},
    {"list-rules", no_argument, NULL, OPT_LIST_RULES},
    {"enable", required_argument, NULL, OPT_ENABLE},
    {"disable", required_argument, NULL, OPT_DISABLE},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"fail-on-incomplete", no_argument, NULL, OPT_FAIL_INCOMPLETE},
    {"color", required_argument, NULL, OPT_COLOR},
    {"changed-since", required_argument, NULL, OPT_CHANGED_SINCE},
    {"version", no_argument, NULL, OPT_VERSION},
    {"dump-model", no_argument, NULL, OPT_DUMP_MODEL},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static void usage(FILE *o) {
    fputs("Usage: kdc-lint [options] PATH... [-- COMPILER-ARGS]\n"
          "  or:  kdc-lint merge [-o FILE] REPORT...\n"
          "\n"
          "Checks C and C++ code that uses librdkafka against kdc's durability contract.\n"
          "PATHs are files or directories (searched recursively for .c, .cc, .cpp, .cxx).\n"
          "kdc-lint merge joins the reports of a run's --shard=K/N runs into one.\n"
          "\n"
          "  -p DIR               use DIR/compile_commands.json for translation units and\n"
          "                       their flags; PATHs then select units below them.\n"
          "                       Without -p or --, in a git repository: the one clangd\n"
          "                       finds (PATH's directory or a parent, or its build/)\n"
          "  --extra-arg=ARG      add a compiler argument (repeatable); also -- ARGS\n"
          "  --format=FORMAT      text (default), json, sarif (SARIF 2.1.0 for code scanning)\n"
          "                       or github (GitHub Actions annotations)\n"
          "  --color=WHEN         colour text output: auto (default: on a terminal, unless\n"
          "                       NO_COLOR is set), always or never\n"
          "  --changed-since=REV  report only findings in files changed since the git\n"
          "                       revision REV (committed, staged, unstaged or untracked);\n"
          "                       every unit is still analysed\n"
          "  -o, --output=FILE    write the report to FILE instead of standard output (-)\n"
          "  --list-rules         list the rules with a one-line summary\n"
          "  --explain=RULE       print RULE's documentation: what is lost, what is\n"
          "                       reported and what is not, how to fix it\n"
          "  --enable=a,b         enable these rules (in addition to the profile's)\n"
          "  --disable=a,b        disable these rules\n"
          "  --profile=NAME       default (precise) or strict (the decision record, literally)\n"
          "  --fail-on-incomplete exit 2 when a translation unit has compile errors\n"
          "  --explain-config=FILE:LINE\n"
          "                       print the configuration kdc-lint believes the client created\n"
          "                       at FILE:LINE has, and where each value comes from\n"
          "  --version            print the version\n"
          "\n"
          "Scale (see docs/kdc-lint.md):\n"
          "  -j, --jobs=N         parse N translation units at a time (default: the CPUs)\n"
          "  --no-prefilter       also parse units that cannot involve Kafka\n"
          "  --no-preambles       parse each unit's headers itself (default: units that begin\n"
          "                       with the same includes share them, parsed once)\n"
          "  --cache-dir=DIR      keep parsed units and analysis results in DIR\n"
          "                       (default .kdc-cache)\n"
          "  --no-cache           neither read nor write the cache\n"
          "  --shard=K/N          report only the findings in shard K of N of the files\n"
          "  --progress=WHEN      [i/n] lines on stderr: auto (a terminal, after 1 s),\n"
          "                       always or never\n"
          "  --stats              print what was parsed, cached and skipped, and memory\n"
          "  --unit-time-limit=S  give up a translation unit whose parse takes more than S\n"
          "                       seconds (default 300; 0: no limit); it is an input error\n"
          "  --unit-memory-limit=MIB\n"
          "                       give up a unit whose parse needs more than MIB MiB of\n"
          "                       memory (default 8192; 0: no limit)\n"
          "\n"
          "Configuration, suppressions, baseline (see docs/configuration.md):\n"
          "  --config=FILE        use FILE for every analysed file instead of the nearest\n"
          "                       .kdc-lint.yaml found from each file's directory upward\n"
          "  --dump-config=PATH   print the effective configuration for PATH (JSON) and exit\n"
          "  --report-unused-suppressions\n"
          "                       report kdc-lint: ignore[...] comments that match no finding\n"
          "                       (on in the strict profile)\n"
          "  --baseline=FILE      report only findings that are not in FILE\n"
          "  --write-baseline=FILE\n"
          "                       write the current findings to FILE as the baseline\n"
          "Precedence: --profile, --enable, --disable over the configuration file over the\n"
          "defaults. Suppress a finding with a comment on its line (or on a line of its own\n"
          "just before it), or a block of lines; a reason is required:\n"
          "  // kdc-lint: ignore[rule-name, other-rule] reason\n"
          "  // kdc-lint: ignore-begin[rule-name] reason ... // kdc-lint: ignore-end\n"
          "\n"
          "Exit status: 0 no findings, 1 findings, 2 usage, input or configuration error.\n",
          o);
}

/* Applies a comma-separated rule list to `on`; returns -1 on an unknown name. */
static int apply_rule_list(const char *list, int value, int *on, const char *opt) {
    char *copy = kdc_xstrdup(list), *save = NULL;
    int rc = 0;
    for (char *tok = strtok_r(copy, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        while (*tok == ' ')
            tok++;
        for (char *end = tok + strlen(tok); end > tok && end[-1] == ' ';)
            *--end = 0;
        if (!*tok)
            continue;
        const kdc_rule_t *r = kdc_rule_find(tok);
        if (!r) {
            fprintf(stderr, "kdc-lint: error: %s: unknown rule '%s' (see --list-rules)\n", opt,
                    tok);
            rc = -1;
            continue;
        }
        for (size_t i = 0; i < kdc_nrules; i++)
            if (kdc_rules[i] == r)
                on[i] = value;
    }
    free(copy);
    return rc;
}

/* --unit-time-limit, --unit-memory-limit: 0 to max into *out; -1 when the value is not that. */
static int parse_limit(const char *v, unsigned long max, unsigned long *out) {
    char *end = NULL;
    unsigned long n = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
    if (!end || *end || n > max)
        return -1;
    *out = n;
    return 0;
}

/* -j N: 1 to 4096; 0 when the value is not that. */
static unsigned parse_jobs(const char *v) {
    char *end = NULL;
    unsigned long n = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
    return end && !*end && n >= 1 && n <= 4096 ? (unsigned)n : 0;
}

int kdc_lint_opts_parse(int argc, char **argv, kdc_lint_opts_t *o) {
    memset(o, 0, sizeof *o);
    o->format = "text";
    o->color_when = "auto";
    o->progress_when = "auto";
    o->unit_time_s = KDC_UNIT_TIME_LIMIT_S;
    o->unit_memory_mib = KDC_UNIT_MEMORY_LIMIT_MIB;
    o->filter.overrides.profile = -1;
    int list_rules = 0, bad_usage = 0;
    const char *explain_rule = NULL;

    /* Everything after the first `--` is compiler arguments, not options or paths. */
    int nopt = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            nopt = i;
            o->dashdash = 1;
            break;
        }
    for (int i = nopt + 1; i < argc; i++)
        KDC_VEC_PUSH(o->extra, argv[i]);

    int c;
    opterr = 0; /* our own messages, in our own format */
    while ((c = getopt_long(nopt, argv, ":p:o:hj:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (!(o->njobs = parse_jobs(optarg))) {
                fprintf(stderr,
                        "kdc-lint: error: -j: '%s' is not a number of parallel jobs from 1 to "
                        "4096\n",
                        optarg);
                bad_usage = 1;
            }
            break;
        case OPT_NO_CACHE: o->no_cache = 1; break;
        case OPT_CACHE_DIR: o->cache_dir = optarg; break;
        case OPT_NO_PREFILTER: o->no_prefilter = 1; break;
        case OPT_NO_PREAMBLES:
            o->no_preambles = 1;
            break;
        case OPT_SHARD: o->shard_spec = optarg; break;
        case OPT_PROGRESS: o->progress_when = optarg; break;
        case OPT_STATS: o->want_stats = 1; break;
        case OPT_UNIT_TIME_LIMIT:
            if (parse_limit(optarg, 1000000, &o->unit_time_s)) {
                fprintf(stderr,
                        "kdc-lint: error: --unit-time-limit: '%s' is not a number of seconds "
                        "from 0 (no limit) to 1000000\n",
                        optarg);
                bad_usage = 1;
            }
            break;
        case OPT_UNIT_MEMORY_LIMIT:
            if (parse_limit(optarg, 1 << 24, &o->unit_memory_mib)) {
                fprintf(stderr,
                        "kdc-lint: error: --unit-memory-limit: '%s' is not a number of MiB from "
                        "0 (no limit) to 16777216\n",
                        optarg);
                bad_usage = 1;
            }
            break;
        case 'p': o->db_dir = optarg; break;
        case 'o': o->out_path = strcmp(optarg, "-") ? optarg : NULL; break; /* -: stdout */
        case OPT_EXTRA_ARG: KDC_VEC_PUSH(o->extra, optarg); break;
        case OPT_FORMAT: o->format = optarg; break;
        case OPT_LIST_RULES: list_rules = 1; break;
        case OPT_ENABLE: KDC_VEC_PUSH(o->enables, optarg); break;
        case OPT_DISABLE: KDC_VEC_PUSH(o->disables, optarg); break;
        case OPT_PROFILE: o->profile = optarg; break;
        case OPT_FAIL_INCOMPLETE: o->fail_incomplete = 1; break;
        case OPT_COLOR: o->color_when = optarg; break;
        case OPT_CHANGED_SINCE: o->changed_since = optarg; break;
        case OPT_DUMP_MODEL: o->dump_model = 1; break;
        case OPT_EXPLAIN_CONFIG: o->explain_config = optarg; break;
        case OPT_EXPLAIN:
            explain_rule = optarg;
            break;
        case OPT_CONFIG: o->filter.overrides.config_path = optarg; break;
        case OPT_DUMP_CONFIG: o->dump_config = optarg; break;
        case OPT_REPORT_UNUSED: o->filter.overrides.report_unused = 1; break;
        case OPT_BASELINE: o->filter.baseline = optarg; break;
        case OPT_WRITE_BASELINE: o->filter.write_baseline = optarg; break;
        case OPT_VERSION: printf("kdc-lint %s\n", KDC_VERSION); return 0;
        case 'h': usage(stdout); return 0;
        case ':':
            if (optopt > 0 && optopt < 256)
                fprintf(stderr, "kdc-lint: error: option '-%c' needs a value\n", optopt);
            else
                fprintf(stderr, "kdc-lint: error: option '%s' needs a value\n", argv[optind - 1]);
            bad_usage = 1;
            break;
        default:
            if (optopt > 0 && optopt < 256)
                fprintf(stderr, "kdc-lint: error: unknown option '-%c'\n", optopt);
            else
                fprintf(stderr, "kdc-lint: error: unknown or ambiguous option '%s'\n",
                        argv[optind - 1]);
            bad_usage = 1;
            break;
        }
    }
    if (!kdc_output_format(o->format)) {
        fprintf(stderr, "kdc-lint: error: --format: '%s' is not one of text, json, sarif, github\n",
                o->format);
        bad_usage = 1;
    }
    if (strcmp(o->color_when, "auto") && strcmp(o->color_when, "always") && strcmp(o->color_when, "never")) {
        fprintf(stderr, "kdc-lint: error: --color: '%s' is not one of auto, always, never\n",
                o->color_when);
        bad_usage = 1;
    }
    if (strcmp(o->progress_when, "auto") && strcmp(o->progress_when, "always") &&
        strcmp(o->progress_when, "never")) {
        fprintf(stderr, "kdc-lint: error: --progress: '%s' is not one of auto, always, never\n",
                o->progress_when);
        bad_usage = 1;
    }
    if (o->shard_spec) {
        char *serr = NULL;
        if (kdc_shard_parse(o->shard_spec, &o->shard, &serr)) {
            fprintf(stderr, "kdc-lint: error: --shard: %s\n", serr);
            free(serr);
            bad_usage = 1;
        }
    }
    if (o->no_cache && o->cache_dir) {
        fprintf(stderr, "kdc-lint: error: --no-cache and --cache-dir=%s contradict each other\n",
                o->cache_dir);
        bad_usage = 1;
    }
    if (o->profile && strcmp(o->profile, "default") && strcmp(o->profile, "strict")) {
        fprintf(stderr, "kdc-lint: error: --profile: '%s' is not one of default, strict\n",
                o->profile);
        bad_usage = 1;
    }
    /* per rule: -1 as the profile and configuration say, 0 --disable, 1 --enable */
    o->rule_on = calloc(kdc_nrules + 1, sizeof *o->rule_on);
    for (size_t i = 0; i < kdc_nrules; i++)
        o->rule_on[i] = -1;
    for (size_t i = 0; i < o->enables.n; i++)
        if (apply_rule_list(o->enables.v[i], 1, o->rule_on, "--enable"))
            bad_usage = 1;
    for (size_t i = 0; i < o->disables.n; i++)
        if (apply_rule_list(o->disables.v[i], 0, o->rule_on, "--disable"))
            bad_usage = 1;
    if (bad_usage) {
        fputs("kdc-lint: see kdc-lint --help\n", stderr);
        return 2;
    }
    if (list_rules) {
        for (size_t i = 0; i < kdc_nrules; i++)
            printf("%-36s %s\n", kdc_rules[i]->name, kdc_rules[i]->summary);
        return 0;
    }
    if (explain_rule) {
        const char *doc = kdc_rule_find(explain_rule) ? kdc_rule_doc(explain_rule) : NULL;
        if (!doc) {
            fprintf(stderr, "kdc-lint: error: --explain: unknown rule '%s' (see --list-rules)\n",
                    explain_rule);
            return 2;
        }
        fputs(doc, stdout);
        return 0;
    }
    o->filter.overrides.profile = o->profile ? !strcmp(o->profile, "strict") : -1;
    o->filter.overrides.rule_on = o->rule_on;
    o->filter.keep_suppressed = !strcmp(o->format, "sarif"); /* with "suppressions" */
    for (int i = optind; i < nopt; i++)
        KDC_VEC_PUSH(o->paths, argv[i]);
    return -1;
}

void kdc_lint_opts_free(kdc_lint_opts_t *o) {
    kdc_shard_free(&o->shard);
    free(o->rule_on);
    free(o->extra.v);
    free(o->enables.v);
    free(o->disables.v);
    free(o->paths.v);
    memset(o, 0, sizeof *o);
}
