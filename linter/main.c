/*
 * kdc-lint: the driver. Parses options, collects translation units, runs the
 * front end, builds facts, runs the enabled rules, writes one output format
 * and sets the exit code (0 no findings, 1 findings, 2 usage/input error).
 */
#define _GNU_SOURCE
#include "changed.h"
#include "dump.h"
#include "facts.h"
#include "filter.h"
#include "inputs.h"
#include "output/output.h"
#include "parse.h"
#include "rule.h"
#include "util.h"

#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { OPT_EXTRA_ARG = 256, OPT_FORMAT, OPT_LIST_RULES, OPT_ENABLE, OPT_DISABLE, OPT_PROFILE,
       OPT_VERSION, OPT_DUMP_MODEL, OPT_FAIL_INCOMPLETE, OPT_COLOR, OPT_CHANGED_SINCE };

enum { OPT_EXPLAIN_CONFIG = 400 };

/* Configuration, suppressions, baseline. */
enum { OPT_CONFIG = 500, OPT_DUMP_CONFIG, OPT_REPORT_UNUSED, OPT_BASELINE, OPT_WRITE_BASELINE };

static const struct option long_opts[] = {
    {"explain-config", required_argument, NULL, OPT_EXPLAIN_CONFIG},
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
          "  -o, --output=FILE    write the report to FILE instead of standard output\n"
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

static int run(int argc, char **argv) {
    const char *db_dir = NULL, *format = "text", *out_path = NULL, *profile = NULL;
    const char *color_when = "auto", *changed_since = NULL;
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
    kdc_findings_t findings = {0};
    char *cwd = NULL;
    double t0 = now_seconds();

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
    while ((c = getopt_long(nopt, argv, ":p:o:h", long_opts, NULL)) != -1) {
        switch (c) {
        case 'p': db_dir = optarg; break;
        case 'o': out_path = optarg; break;
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
    kdc_input_opts_t io = {db_dir, extra.v, extra.n};
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

    prog = kdc_program_new();
    kdc_parser_t *parser = kdc_parser_new();
    for (size_t i = 0; i < inputs.njobs; i++) {
        char *err = NULL;
        const kdc_tu_job_t *j = &inputs.jobs[i];
        if (kdc_filter_skips(filter, j->file))
            continue; /* its configuration is broken: named with the errors */
        if (kdc_parse_tu(parser, prog, j->file, (const char *const *)j->argv, j->argc, &err)) {
            kdc_inputs_add_error(&inputs, j->file, "%s", err);
            free(err);
        }
    }
    kdc_parser_free(parser);

    if (dump_model) {
        kdc_dump_program(out, prog);
        rc = 0;
        goto out;
    }

    kdc_options_t opts = {0};
    kdc_filter_options(filter, prog, &opts);
    facts = kdc_facts_build(prog, &opts);
    if (explain_config) {
        rc = explain(facts, explain_config, out);
        goto out;
    }
    /* the rules, then configuration, suppressions and baseline */
    kdc_filter_run(filter, facts, prog, &inputs, &findings);

    /* every unit was analysed; only findings in changed files are reported */
    if (changed_since)
        unchanged_findings = kdc_changed_select(&changed, &findings);

    cwd = getcwd(NULL, 0);
    kdc_run_t run = {&findings, &inputs, prog, now_seconds() - t0, cwd, 0};
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
    kdc_findings_free(&findings);
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
