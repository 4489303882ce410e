/*
 * kdc-lint: the driver. Parses options, collects translation units, runs the
 * front end, builds facts, runs the enabled rules, writes one output format
 * and sets the exit code (0 no findings, 1 findings, 2 usage/input error).
 */
#define _GNU_SOURCE
#include "cache.h"
#include "changed.h"
#include "dump.h"
#include "facts.h"
#include "filesig.h"
#include "filter.h"
#include "inputs.h"
#include "jobs.h"
#include "libclang_lazy.h"
#include "merge.h"
#include "output.h"
#include "parse.h"
#include "prefilter.h"
#include "rule.h"
#include "shard.h"
#include "util.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { OPT_EXTRA_ARG = 256, OPT_FORMAT, OPT_LIST_RULES, OPT_ENABLE, OPT_DISABLE, OPT_PROFILE,
       OPT_VERSION, OPT_DUMP_MODEL, OPT_FAIL_INCOMPLETE, OPT_COLOR, OPT_CHANGED_SINCE };

enum { OPT_EXPLAIN_CONFIG = 400 };

/* Configuration, suppressions, baseline. */
enum { OPT_CONFIG = 500, OPT_DUMP_CONFIG, OPT_REPORT_UNUSED, OPT_BASELINE, OPT_WRITE_BASELINE };

/* Scale: parallel units, prefilter, cache, shards. */
enum { OPT_JOBS = 600, OPT_NO_CACHE, OPT_CACHE_DIR, OPT_NO_PREFILTER, OPT_SHARD, OPT_PROGRESS,
       OPT_STATS };

static const struct option long_opts[] = {
    {"explain-config", required_argument, NULL, OPT_EXPLAIN_CONFIG},
    {"jobs", required_argument, NULL, 'j'},
    {"no-cache", no_argument, NULL, OPT_NO_CACHE},
    {"cache-dir", required_argument, NULL, OPT_CACHE_DIR},
    {"no-prefilter", no_argument, NULL, OPT_NO_PREFILTER},
    {"shard", required_argument, NULL, OPT_SHARD},
    {"progress", required_argument, NULL, OPT_PROGRESS},
    {"stats", no_argument, NULL, OPT_STATS},
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
    fputs("usage: kdc-lint [options] PATH... [-- COMPILER-ARGS]\n"
          "       kdc-lint merge [-o FILE] REPORT...   (joins --shard reports)\n"
          "\n"
          "Checks C and C++ code that uses librdkafka against kdc's durability contract.\n"
          "PATHs are files or directories (searched recursively for .c, .cc, .cpp, .cxx).\n"
          "\n"
          "  -p DIR               use DIR/compile_commands.json for translation units and\n"
          "                       their flags; PATHs then select units below them\n"
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
          "  --enable=a,b         enable these rules (in addition to the profile's)\n"
          "  --disable=a,b        disable these rules\n"
          "  --profile=NAME       default (precise) or strict (the decision record, literally)\n"
          "  --fail-on-incomplete exit 2 when a translation unit has compile errors\n"
          "  --explain-config=FILE:LINE\n"
          "                       print the configuration kdc-lint believes the client created\n"
          "                       at FILE:LINE has, and where each value comes from\n"
          "  --version            print the version\n"
          "\n"
          "Scale (see README.md):\n"
          "  -j, --jobs=N         parse N translation units at a time (default: the CPUs)\n"
          "  --no-prefilter       also parse units that cannot involve Kafka\n"
          "  --cache-dir=DIR      keep parsed units and analysis results in DIR\n"
          "                       (default .kdc-cache)\n"
          "  --no-cache           neither read nor write the cache\n"
          "  --shard=K/N          report only the findings in shard K of N of the files\n"
          "  --progress=WHEN      [i/n] lines on stderr: auto (a terminal, after 1 s),\n"
          "                       always or never\n"
          "  --stats              print what was parsed, cached and skipped, and memory\n"
          "\n"
          "Configuration, suppressions, baseline (see README.md):\n"
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

typedef struct strvec {
    const char **v;
    size_t n, cap;
} strvec_t;

static void sv_push(strvec_t *s, const char *x) {
    if (s->n == s->cap) {
        s->cap = s->cap ? s->cap * 2 : 8;
        s->v = kdc_xrealloc(s->v, s->cap * sizeof *s->v);
    }
    s->v[s->n++] = x;
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

typedef int (*output_fn)(FILE *, const kdc_run_t *);

/* The writer of --format=name, or NULL. */
static output_fn output_format(const char *name) {
    static const struct {
        const char *name;
        output_fn fn;
    } formats[] = {{"text", kdc_output_text},
                   {"json", kdc_output_json},
                   {"sarif", kdc_output_sarif},
                   {"github", kdc_output_github}};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i].name, name))
            return formats[i].fn;
    return NULL;
}

/* --color: always, never, or auto: on a terminal unless NO_COLOR is set (no-color.org). */
static int use_color(const char *when, FILE *out) {
    if (!strcmp(when, "always"))
        return 1;
    if (!strcmp(when, "never"))
        return 0;
    const char *no_color = getenv("NO_COLOR");
    return !(no_color && *no_color) && isatty(fileno(out));
}

static double now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* The input a report would overwrite: -o naming one of the files to analyse. */
static const char *output_is_input(const char *out_path, const kdc_inputs_t *in) {
    char *real = realpath(out_path, NULL);
    const char *hit = NULL;
    for (size_t i = 0; real && i < in->njobs && !hit; i++)
        if (!strcmp(in->jobs[i].file, real))
            hit = in->jobs[i].file;
    free(real);
    return hit;
}

/* --explain-config=FILE:LINE: 0 when a client is created there, 2 otherwise. */
static int explain(const kdc_facts_t *facts, const char *where, FILE *out) {
    char *file = kdc_xstrdup(where), *colon = strrchr(file, ':'), *end = NULL;
    unsigned long line = colon ? strtoul(colon + 1, &end, 10) : 0;
    int rc = 2;
    if (!colon || !line || !end || *end) {
        fprintf(stderr, "kdc-lint: error: --explain-config: '%s' is not FILE:LINE\n", where);
    } else {
        *colon = 0;
        char *cwd = getcwd(NULL, 0);
        if (kdc_facts_explain(facts, file, (unsigned)line, out, cwd))
            rc = 0;
        else
            fprintf(stderr,
                    "kdc-lint: error: --explain-config: no client (rd_kafka_new, "
                    "Producer::create, KafkaConsumer::create) is created at %s:%lu in the "
                    "analysed files\n",
                    file, line);
        free(cwd);
    }
    free(file);
    return rc;
}

/* -j N: 1 to 4096; 0 when the value is not that. */
static unsigned parse_jobs(const char *v) {
    char *end = NULL;
    unsigned long n = v[0] >= '0' && v[0] <= '9' ? strtoul(v, &end, 10) : 0;
    return end && !*end && n >= 1 && n <= 4096 ? (unsigned)n : 0;
}

/* The configured function-role patterns of every unit's configuration (the
 * prefilter keeps units naming them), NULL-terminated; strings borrowed. */
static const char **role_patterns(kdc_filter_t *filter, const kdc_inputs_t *in) {
    KDC_VEC(const char *) v = {0};
    KDC_VEC(const kdc_config_t *) seen = {0};
    for (size_t i = 0; i < in->njobs; i++) {
        const kdc_config_t *c = kdc_configs_for(kdc_filter_configs(filter), in->jobs[i].file);
        size_t k = 0;
        while (c && k < seen.n && seen.v[k] != c)
            k++;
        if (!c || k < seen.n)
            continue;
        KDC_VEC_PUSH(seen, c);
        for (int r = 0; r < KDC_NROLES; r++)
            for (char **pat = c->functions[r]; pat && *pat; pat++)
                KDC_VEC_PUSH(v, *pat);
    }
    KDC_VEC_PUSH(v, NULL);
    free(seen.v);
    return v.v;
}

/* What identifies this run for kdc-lint merge: the version, the options that
 * decide findings, and each unit (path shown, arguments, main file contents). */
static void run_id(char out[33], const char *const *opts, size_t nopts, const kdc_inputs_t *in,
                   const char *cwd) {
    KDC_VEC(const char *) parts = {0};
    KDC_VEC(char *) owned = {0};
    KDC_VEC_PUSH(parts, "kdc-lint " KDC_VERSION);
    for (size_t i = 0; i < nopts; i++)
        KDC_VEC_PUSH(parts, opts[i]);
    for (size_t i = 0; i < in->njobs; i++) {
        const kdc_tu_job_t *j = &in->jobs[i];
        KDC_VEC_PUSH(parts, kdc_display_path(cwd, j->file));
        for (int k = 0; k < j->argc; k++)
            KDC_VEC_PUSH(parts, j->argv[k]);
        unsigned char d[16];
        char *hex = kdc_xstrdup("unreadable................................");
        if (kdc_file_digest(j->file, d) == 0)
            for (int k = 0; k < 16; k++)
                snprintf(hex + 2 * k, 3, "%02x", d[k]);
        KDC_VEC_PUSH(owned, hex);
        KDC_VEC_PUSH(parts, hex);
    }
    kdc_shard_run_id(parts.v, parts.n, out);
    for (size_t i = 0; i < owned.n; i++)
        free(owned.v[i]);
    free(owned.v);
    free(parts.v);
}

/* The analysis options of the analysed files and of the files of the units the prefilter
 * skipped (they count as if they were parsed, so skipping changes no option). */
static void analysis_options(kdc_filter_t *filter, kdc_program_t *prog, const kdc_files_t *files,
                             const kdc_prefilter_result_t *pre, kdc_options_t *opts) {
    const char **more = kdc_xrealloc(NULL, (pre->nfiles ? pre->nfiles : 1) * sizeof *more);
    for (size_t i = 0; i < pre->nfiles; i++)
        more[i] = kdc_intern(prog, pre->files[i]);
    kdc_filter_options_with(filter, files, more, pre->nfiles, opts);
    free(more);
}

static double mib(long kib) { return (double)kib / 1024.0; }

/* This process's resident set now (KiB), or 0. */
static long current_rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

static int run(int argc, char **argv) {
    const char *db_dir = NULL, *format = "text", *out_path = NULL, *profile = NULL;
    const char *color_when = "auto", *changed_since = NULL;
    const char *cache_dir = NULL, *shard_spec = NULL, *progress_when = "auto";
    unsigned njobs = 0;
    int no_cache = 0, no_prefilter = 0, want_stats = 0;
    kdc_shard_t shard = {0};
    kdc_cache_t *cache = NULL;
    kdc_prefilter_result_t pre = {0};
    size_t *todo = NULL;
    kdc_changed_t changed = {0};
    size_t unchanged_findings = 0;
    strvec_t extra = {0}, enables = {0}, disables = {0}, paths = {0};
    int list_rules = 0, dump_model = 0, fail_incomplete = 0, bad_usage = 0, rc = 2;
    const char *explain_config = NULL;
    kdc_filter_opts_t fo = {{NULL, -1, NULL, 0}, NULL, NULL};
    const char *dump_config = NULL;
    kdc_filter_t *filter = NULL;
    int *on = NULL;
    FILE *out = stdout;
    kdc_inputs_t inputs = {0};
    kdc_program_t *prog = NULL;
    kdc_facts_t *facts = NULL;
    kdc_findings_t findings = {0}, runs[2] = {{0}};
    kdc_rule_plan_t plan = {{NULL, NULL}};
    int analysis_cached = 0, models_skipped = 0;
    kdc_files_t files = {0};
    char *cwd = NULL;
    double t0 = now_seconds(), t_parsed = 0, t_analysed = 0;

    if (argc > 1 && !strcmp(argv[1], "merge"))
        return kdc_merge_main(argc - 1, argv + 1);

    /* Everything after the first `--` is compiler arguments, not options or paths. */
    int nopt = argc;
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--")) {
            nopt = i;
            break;
        }
    for (int i = nopt + 1; i < argc; i++)
        sv_push(&extra, argv[i]);

    int c;
    opterr = 0; /* our own messages, in our own format */
    while ((c = getopt_long(nopt, argv, ":p:o:hj:", long_opts, NULL)) != -1) {
        switch (c) {
        case 'j':
            if (!(njobs = parse_jobs(optarg))) {
                fprintf(stderr,
                        "kdc-lint: error: -j: '%s' is not a number of parallel jobs from 1 to "
                        "4096\n",
                        optarg);
                bad_usage = 1;
            }
            break;
        case OPT_NO_CACHE: no_cache = 1; break;
        case OPT_CACHE_DIR: cache_dir = optarg; break;
        case OPT_NO_PREFILTER: no_prefilter = 1; break;
        case OPT_SHARD: shard_spec = optarg; break;
        case OPT_PROGRESS: progress_when = optarg; break;
        case OPT_STATS: want_stats = 1; break;
        case 'p': db_dir = optarg; break;
        case 'o': out_path = strcmp(optarg, "-") ? optarg : NULL; break; /* -: stdout */
        case OPT_EXTRA_ARG: sv_push(&extra, optarg); break;
        case OPT_FORMAT: format = optarg; break;
        case OPT_LIST_RULES: list_rules = 1; break;
        case OPT_ENABLE: sv_push(&enables, optarg); break;
        case OPT_DISABLE: sv_push(&disables, optarg); break;
        case OPT_PROFILE: profile = optarg; break;
        case OPT_FAIL_INCOMPLETE: fail_incomplete = 1; break;
        case OPT_COLOR: color_when = optarg; break;
        case OPT_CHANGED_SINCE: changed_since = optarg; break;
        case OPT_DUMP_MODEL: dump_model = 1; break;
        case OPT_EXPLAIN_CONFIG: explain_config = optarg; break;
        case OPT_CONFIG: fo.overrides.config_path = optarg; break;
        case OPT_DUMP_CONFIG: dump_config = optarg; break;
        case OPT_REPORT_UNUSED: fo.overrides.report_unused = 1; break;
        case OPT_BASELINE: fo.baseline = optarg; break;
        case OPT_WRITE_BASELINE: fo.write_baseline = optarg; break;
        case OPT_VERSION: printf("kdc-lint %s\n", KDC_VERSION); rc = 0; goto out;
        case 'h': usage(stdout); rc = 0; goto out;
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
    if (!output_format(format)) {
        fprintf(stderr, "kdc-lint: error: --format: '%s' is not one of text, json, sarif, github\n",
                format);
        bad_usage = 1;
    }
    if (strcmp(color_when, "auto") && strcmp(color_when, "always") && strcmp(color_when, "never")) {
        fprintf(stderr, "kdc-lint: error: --color: '%s' is not one of auto, always, never\n",
                color_when);
        bad_usage = 1;
    }
    if (strcmp(progress_when, "auto") && strcmp(progress_when, "always") &&
        strcmp(progress_when, "never")) {
        fprintf(stderr, "kdc-lint: error: --progress: '%s' is not one of auto, always, never\n",
                progress_when);
        bad_usage = 1;
    }
    if (shard_spec) {
        char *serr = NULL;
        if (kdc_shard_parse(shard_spec, &shard, &serr)) {
            fprintf(stderr, "kdc-lint: error: --shard: %s\n", serr);
            free(serr);
            bad_usage = 1;
        }
    }
    if (no_cache && cache_dir) {
        fprintf(stderr, "kdc-lint: error: --no-cache and --cache-dir=%s contradict each other\n",
                cache_dir);
        bad_usage = 1;
    }
    if (profile && strcmp(profile, "default") && strcmp(profile, "strict")) {
        fprintf(stderr, "kdc-lint: error: --profile: '%s' is not one of default, strict\n",
                profile);
        bad_usage = 1;
    }
    /* per rule: -1 as the profile and configuration say, 0 --disable, 1 --enable */
    on = calloc(kdc_nrules + 1, sizeof *on);
    for (size_t i = 0; i < kdc_nrules; i++)
        on[i] = -1;
    for (size_t i = 0; i < enables.n; i++)
        if (apply_rule_list(enables.v[i], 1, on, "--enable"))
            bad_usage = 1;
    for (size_t i = 0; i < disables.n; i++)
        if (apply_rule_list(disables.v[i], 0, on, "--disable"))
            bad_usage = 1;
    if (bad_usage) {
        fputs("kdc-lint: see kdc-lint --help\n", stderr);
        goto out;
    }
    if (list_rules) {
        for (size_t i = 0; i < kdc_nrules; i++)
            printf("%-36s %s\n", kdc_rules[i]->name, kdc_rules[i]->summary);
        rc = 0;
        goto out;
    }
    fo.overrides.profile = profile ? !strcmp(profile, "strict") : -1;
    fo.overrides.rule_on = on;
    char *ferr = NULL;
    if (!(filter = kdc_filter_new(&fo, NULL, &ferr))) {
        fprintf(stderr, "kdc-lint: error: %s\n", ferr);
        free(ferr);
        goto out;
    }
    if (dump_config) {
        rc = kdc_filter_dump_config(filter, dump_config, stdout);
        goto out;
    }
    for (int i = optind; i < nopt; i++)
        sv_push(&paths, argv[i]);
    if (!paths.n && !db_dir) {
        fprintf(stderr, "kdc-lint: error: no input paths (see kdc-lint --help)\n");
        goto out;
    }

    if (changed_since) {
        char *cerr = NULL;
        if (kdc_changed_collect(changed_since, ".", &changed, &cerr)) {
            fprintf(stderr, "kdc-lint: error: --changed-since: %s\n", cerr);
            free(cerr);
            goto out;
        }
    }
    /* The cache: --cache-dir must work; the default one is used when it can be. */
    if (!no_cache) {
        char *cerr = NULL;
        struct stat st;
        /* The default one is not created in a directory nobody may write to (root may). */
        if (!cache_dir && stat(KDC_CACHE_DEFAULT_DIR, &st) != 0 &&
            (stat(".", &st) != 0 || !(st.st_mode & 0222)))
            cerr = kdc_xstrdup("not created: the working directory is read-only");
        else
            cache = kdc_cache_open(cache_dir ? cache_dir : KDC_CACHE_DEFAULT_DIR, &cerr);
        if (!cache && cache_dir) {
            fprintf(stderr, "kdc-lint: error: --cache-dir %s: %s\n", cache_dir, cerr);
            free(cerr);
            goto out;
        }
        if (!cache)
            fprintf(stderr,
                    "kdc-lint: note: %s: %s; running without a cache (--no-cache: no note)\n",
                    KDC_CACHE_DEFAULT_DIR, cerr);
        free(cerr);
    }

    kdc_input_opts_t io = {db_dir, extra.v, extra.n, cache};
    kdc_inputs_collect(paths.v, paths.n, &io, &inputs);

    /* Opened once the inputs are known, and never over one of them. */
    if (out_path) {
        const char *victim = output_is_input(out_path, &inputs);
        if (victim) {
            fprintf(stderr,
                    "kdc-lint: error: -o %s: is a source file to analyse; not overwriting it\n",
                    out_path);
            goto out;
        }
        if (!(out = fopen(out_path, "w"))) {
            fprintf(stderr, "kdc-lint: error: -o %s: %m\n", out_path);
            out = stdout;
            goto out;
        }
    }

    if (fo.write_baseline && output_is_input(fo.write_baseline, &inputs)) {
        fprintf(stderr,
                "kdc-lint: error: --write-baseline %s: is a source file to analyse; not "
                "overwriting it\n",
                fo.write_baseline);
        goto out;
    }

    /* The units to parse: not those of broken configurations (named with the
     * errors), nor those the prefilter finds cannot involve Kafka. */
    cwd = getcwd(NULL, 0);
    todo = kdc_xrealloc(NULL, (inputs.njobs ? inputs.njobs : 1) * sizeof *todo);
    size_t ntodo = 0, nunits = 0;
    for (size_t i = 0; i < inputs.njobs; i++)
        if (!kdc_filter_skips(filter, inputs.jobs[i].file))
            todo[ntodo++] = i;
    nunits = ntodo;
    double t_prefilter = now_seconds();
    if (!no_prefilter && ntodo) {
        const char **roles = role_patterns(filter, &inputs);
        kdc_prefilter(&inputs, todo, ntodo, roles, cache, &pre);
        free(roles);
        size_t kept = 0;
        for (size_t i = 0; i < ntodo; i++) {
            if (pre.keep[i])
                todo[kept++] = todo[i];
            else if (want_stats)
                fprintf(stderr, "kdc-lint: stats: skipped by the prefilter: %s\n",
                        kdc_display_path(cwd, inputs.jobs[todo[i]].file));
        }
        ntodo = kept;
    }

    t_prefilter = now_seconds() - t_prefilter;
    prog = kdc_program_new();
    kdc_jobs_stats_t js;
    memset(&js, 0, sizeof js);
    long rss_parsed_kib = 0;
    kdc_options_t opts = {0};
    unsigned char akey[16];
    /* A re-run on an unchanged tree: the stored analysis applies without loading a model
     * (the stored program's units and files stand in for it). */
    if (cache && !dump_model && !explain_config) {
        kdc_run_summary_t sum;
        if (kdc_cache_lookup_run(cache, inputs.jobs, todo, ntodo, prog, &sum, runs)) {
            files = sum.files;
            analysis_options(filter, prog, &files, &pre, &opts);
            kdc_filter_plan(filter, &files, &plan);
            kdc_cache_analysis_key(cache, sum.program, &opts,
                                   (const unsigned char *const *)plan.need, kdc_nrules, akey);
            models_skipped = !memcmp(akey, sum.key, 16);
            if (!models_skipped) { /* other options or rules: the analysis runs */
                kdc_findings_free(&runs[0]);
                kdc_findings_free(&runs[1]);
                kdc_rule_plan_free(&plan);
                free(files.v);
                files = (kdc_files_t){0};
            }
        }
        if (!models_skipped) {
            kdc_program_free(prog);
            prog = kdc_program_new();
        } else {
            analysis_cached = 1;
            js.from_cache = ntodo;
            memcpy(js.program, sum.program, sizeof js.program);
        }
    }
    if (!models_skipped) {
        kdc_jobs_opts_t jo = {njobs ? njobs : kdc_jobs_cpus(), cache, 0, cwd};
        if (!strcmp(progress_when, "always"))
            jo.progress = isatty(STDERR_FILENO) ? 3 : 2;
        else if (!strcmp(progress_when, "auto") && isatty(STDERR_FILENO))
            jo.progress = 1;
        kdc_jobs_run(&jo, &inputs, todo, ntodo, prog, &js);
    }
    t_parsed = now_seconds();
    rss_parsed_kib = current_rss_kib();

    if (dump_model) {
        kdc_dump_program(out, prog);
        rc = 0;
        goto out;
    }

    if (!models_skipped) {
        kdc_program_files(prog, &files);
        analysis_options(filter, prog, &files, &pre, &opts);
        if (explain_config) {
            facts = kdc_facts_build(prog, &opts);
            rc = explain(facts, explain_config, out);
            goto out;
        }
        /* The rules' findings: from the cache when this program was analysed with
         * these options before, else from the analysis (then stored). */
        kdc_filter_plan(filter, &files, &plan);
        if (cache) {
            char *note = NULL;
            kdc_cache_analysis_key(cache, js.program, &opts,
                                   (const unsigned char *const *)plan.need, kdc_nrules, akey);
            analysis_cached = kdc_cache_lookup_findings(cache, inputs.jobs, todo, ntodo, akey, prog,
                                                        runs, &note);
            if (note)
                fprintf(stderr, "kdc-lint: note: %s\n", note);
            free(note);
        }
        if (!analysis_cached) {
            facts = kdc_facts_build(prog, &opts);
            kdc_filter_check(&plan, facts, prog, runs);
            kdc_facts_free(facts); /* what the rules found is all that is needed of it */
            facts = NULL;
        }
        /* Stored with what the next run needs to take it without loading the models;
         * stored again when it was found by loading them (another file's signature, a
         * unit parsed again into the same model). After a failed write (noted once)
         * nothing is stored. */
        char *serr = NULL;
        if (kdc_cache_writable(cache) &&
            kdc_cache_store_findings(cache, inputs.jobs, todo, ntodo, akey, js.program, prog, runs,
                                     analysis_cached, &serr)) {
            fprintf(stderr, "kdc-lint: note: %s\n", serr);
            free(serr);
        }
    }
    t_analysed = now_seconds();
    /* configuration, suppressions and baseline, on every run */
    kdc_filter_run(filter, &plan, runs, &files, &inputs, &findings);

    /* every unit was analysed; only findings in changed files are reported */
    if (changed_since)
        unchanged_findings = kdc_changed_select(&changed, &findings);

    size_t run_findings = findings.n;
    if (shard.count) {
        const char *const id_opts[] = {
            "format", format, "profile", profile, "config", fo.overrides.config_path,
            "baseline", fo.baseline, "changed-since", changed_since, "prefilter",
            no_prefilter ? "off" : "on", "-p", db_dir, "shards", shard_spec ? strchr(shard_spec, '/') : NULL};
        KDC_VEC(const char *) idv = {0};
        for (size_t i = 0; i < sizeof id_opts / sizeof *id_opts; i++)
            KDC_VEC_PUSH(idv, id_opts[i]);
        for (size_t i = 0; i < enables.n; i++)
            KDC_VEC_PUSH(idv, enables.v[i]);
        KDC_VEC_PUSH(idv, "--disable");
        for (size_t i = 0; i < disables.n; i++)
            KDC_VEC_PUSH(idv, disables.v[i]);
        KDC_VEC_PUSH(idv, "paths");
        for (size_t i = 0; i < paths.n; i++)
            KDC_VEC_PUSH(idv, paths.v[i]);
        run_id(shard.run_id, idv.v, idv.n, &inputs, cwd);
        free(idv.v);
        char *root = kdc_source_root(cwd);
        kdc_shard_select(&shard, &findings, root);
        free(root);
    }
    kdc_run_t run = {&findings, &inputs, prog, now_seconds() - t0, cwd, 0, pre.nskipped,
                     shard.count ? &shard : NULL};
    run.color = use_color(color_when, out);
    int wrc = output_format(format)(out, &run);
    /* A full disk or a closed pipe shows at the flush, also on stdout. */
    if (out != stdout) {
        if (fclose(out) != 0)
            wrc = -1;
        out = stdout;
    } else if (fflush(out) != 0 || ferror(out)) {
        wrc = -1;
    }

    /* Diagnostics about inputs go to stderr in every format. */
    size_t nincomplete = 0, ntus = kdc_program_ntus(prog);
    for (size_t i = 0; i < inputs.nnotes; i++)
        fprintf(stderr, "%s: note: %s\n", kdc_display_path(cwd, inputs.notes[i].file),
                inputs.notes[i].message);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(prog, i);
        if (!tu->incomplete)
            continue;
        nincomplete++;
        if (tu->nerrors)
            fprintf(stderr,
                    "%s: warning: %u compile error%s; analysed partially (first: %s)\n"
                    "  hint: pass -p BUILD_DIR with the project's compile_commands.json for its "
                    "exact flags, or --extra-arg=-I...\n",
                    kdc_display_path(cwd, tu->file), tu->nerrors, tu->nerrors == 1 ? "" : "s",
                    tu->first_error ? kdc_display_path(cwd, tu->first_error) : "?");
        if (tu->too_deep)
            fprintf(stderr, "%s: warning: analysed partially: %s\n",
                    kdc_display_path(cwd, tu->file), kdc_display_path(cwd, tu->too_deep));
    }
    for (size_t i = 0; i < inputs.nerrors; i++)
        fprintf(stderr, "kdc-lint: error: %s: %s\n", kdc_display_path(cwd, inputs.errors[i].file),
                inputs.errors[i].message);
    if (!strcmp(format, "text"))
        fprintf(stderr, "kdc-lint: %zu finding%s in %zu translation unit%s (%zu incomplete, %zu input error%s)\n",
                findings.n, findings.n == 1 ? "" : "s", ntus, ntus == 1 ? "" : "s", nincomplete,
                inputs.nerrors, inputs.nerrors == 1 ? "" : "s");
    if (changed_since)
        fprintf(stderr, "kdc-lint: %zu finding%s in files unchanged since %s not shown\n",
                unchanged_findings, unchanged_findings == 1 ? "" : "s", changed_since);
    if (shard.count)
        fprintf(stderr, "kdc-lint: shard %u/%u: %zu of the run's %zu finding%s are in this "
                        "shard's files\n",
                shard.index, shard.count, findings.n, run_findings, run_findings == 1 ? "" : "s");
    if (pre.nskipped)
        fprintf(stderr,
                "kdc-lint: %zu of %zu translation unit%s skipped: they cannot involve Kafka "
                "(prefilter; --no-prefilter analyses them)\n",
                pre.nskipped, nunits, nunits == 1 ? "" : "s");
    if (want_stats) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        fprintf(stderr,
                "kdc-lint: stats: %zu translation unit%s: %zu parsed, %zu from the cache%s, %zu "
                "skipped by the prefilter, %zu not parsable; ",
                nunits, nunits == 1 ? "" : "s", js.parsed, js.from_cache,
                cache ? "" : " (no cache)", pre.nskipped, js.failed);
        fprintf(stderr, "the analysis %s; ",
                analysis_cached ? "from the cache (the same program and options)"
                : cache         ? "run (and stored in the cache)"
                                : "run");
        if (js.workers)
            fprintf(stderr, "%u worker process%s (peak RSS: this process %.1f MiB, %.1f MiB "
                            "of it once the models were merged; largest worker %.1f MiB, "
                            "workers together at most %.1f MiB); ",
                    js.workers, js.workers == 1 ? "" : "es", mib(ru.ru_maxrss),
                    mib(rss_parsed_kib), mib(js.worker_peak_rss_kib), mib(js.worker_sum_rss_kib));
        else
            fprintf(stderr, "parsed in this process (peak RSS %.1f MiB; %.1f MiB resident once "
                            "parsed); ",
                    mib(ru.ru_maxrss), mib(rss_parsed_kib));
        if (models_skipped)
            fprintf(stderr, "no model loaded (the stored analysis applies); ");
        fprintf(stderr, "libclang %s; ", kdc_libclang_mapped() ? "loaded" : "not loaded");
        fprintf(stderr, "%.2f s in all (the prefilter %.2f s%s; models merged after %.2f s; "
                        "analysis %.2f s; report %.2f s)\n",
                now_seconds() - t0, t_prefilter, pre.from_cache ? ", from the cache" : "",
                t_parsed - t0, t_analysed - t_parsed, now_seconds() - t_analysed);
    }

    kdc_filter_summary(filter, stderr);

    rc = findings.n ? 1 : 0;
    if (inputs.nerrors || wrc || (fail_incomplete && nincomplete))
        rc = 2;
    if (wrc)
        fprintf(stderr, "kdc-lint: error: cannot write the report%s%s\n", out_path ? " to " : "",
                out_path ? out_path : "");

out:
    if (out != stdout)
        fclose(out);
    kdc_cache_close(cache);
    kdc_prefilter_result_free(&pre);
    kdc_shard_free(&shard);
    free(todo);
    kdc_findings_free(&findings);
    kdc_findings_free(&runs[0]);
    kdc_findings_free(&runs[1]);
    kdc_rule_plan_free(&plan);
    free(files.v);
    kdc_facts_free(facts);
    kdc_program_free(prog);
    kdc_inputs_free(&inputs);
    kdc_changed_free(&changed);
    free(cwd);
    free(on);
    kdc_filter_free(filter);
    free(extra.v);
    free(enables.v);
    free(disables.v);
    free(paths.v);
    return rc;
}

/* Deeply nested code (generated else-if chains, huge expressions) recurses as
 * deep in libclang's parser as in the model. libclang parses on a thread of its
 * own with 8 MiB of stack, less than gcc gets away with: analyse on a thread
 * with a large stack instead (only the pages used are ever touched), and let
 * libclang parse on it (LIBCLANG_NOTHREADS; crash recovery stays on). */
#define KDC_STACK_SIZE ((size_t)256 << 20)

typedef struct main_args {
    int argc;
    char **argv;
    int rc;
} main_args_t;

static void *run_thread(void *arg) {
    main_args_t *a = arg;
    a->rc = run(a->argc, a->argv);
    return NULL;
}

int main(int argc, char **argv) {
    main_args_t a = {argc, argv, 2};
    pthread_attr_t attr;
    pthread_t th;
    if (pthread_attr_init(&attr) == 0) {
        int started = pthread_attr_setstacksize(&attr, KDC_STACK_SIZE) == 0 &&
                      setenv("LIBCLANG_NOTHREADS", "1", 1) == 0 &&
                      pthread_create(&th, &attr, run_thread, &a) == 0;
        pthread_attr_destroy(&attr);
        if (started) {
            pthread_join(th, NULL);
            return a.rc;
        }
        unsetenv("LIBCLANG_NOTHREADS");
    }
    return run(argc, argv); /* no large stack to be had: libclang's own thread, as before */
}
