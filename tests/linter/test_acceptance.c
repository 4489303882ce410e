/*
 * kdc-lint against the shared acceptance cases (../shared/cases), one cmocka
 * test per NN-*.c case.
 *
 *   test_acceptance [--kdc-lint PATH] [--cases DIR] [--filter GLOB]
 *
 * Scoring follows the cases' README, restricted to the rules that
 * `kdc-lint --list-rules` names: every `expect` of such a rule is reported,
 * no `ok` line of such a rule is, and in NN-ok-*.c nothing at all is
 * reported. Findings on unmarked lines of other cases do not count. A
 * missing cases folder is a failure, never a skip. The group teardown prints
 * "expected found / expected total, false positives".
 *
 * Defaults come from the environment: KDC_LINT, KDC_SHARED_CASES.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lintrun.h"
#include "markers.h"
#include "score.h"

typedef struct acase {
    char *name;    /* file name, e.g. "06-dlq-poll-then-commit.c" */
    char *path;    /* absolute path */
} acase_t;

static struct {
    const char *lint;
    char cases_dir[PATH_MAX];
    char **rules;
    long nrules;
    acase_t *cases;
    size_t ncases;
    kdc_score_t score;
    size_t cases_failed;
    char setup_error[4096];
} g;

static void test_case(void **state) {
    const acase_t *c = *state;
    kdc_markers_t ms = {0};
    kdc_problems_t problems = {0};
    char err[1024];
    if (kdc_markers_parse_file(&ms, c->path, err, sizeof err))
        fail_msg("%s: markers do not parse: %s", c->name, err);

    /* no cache: the analysis is under test, and ../shared/cases is not ours to write to */
    char *argv[] = {(char *)g.lint, "--format=json", "--no-cache", c->name, NULL};
    char cmdline[4096];
    kdc_argv_str(argv, cmdline, sizeof cmdline);
    kdc_run_t run;
    if (kdc_run(g.cases_dir, argv, &run))
        fail_msg("%s: could not start %s", c->name, g.lint);

    kdc_score_t s = {0, 0, 0};
    if (run.signaled || (run.exit_code != 0 && run.exit_code != 1)) {
        kdc_problems_add(&problems, "kdc-lint exited with %d (0 or 1 expected); stderr:\n%s",
                         run.exit_code, run.err);
    } else {
        kdc_report_t rep;
        if (kdc_report_parse(run.out, g.cases_dir, &rep, err, sizeof err)) {
            kdc_problems_add(&problems, "JSON report violates the contract: %s; stdout starts: %.300s",
                             err, run.out);
        } else {
            kdc_score_acceptance(&ms, rep.findings, rep.nfindings, (const char *const *)g.rules,
                                 (size_t)g.nrules, kdc_case_is_ok_file(c->name), g.cases_dir, &s,
                                 &problems);
            if (rep.nerrors)
                kdc_problems_add(&problems, "kdc-lint reported %zu error(s) for a case that "
                                 "compiles:\n%s", rep.nerrors, rep.errors_text);
            if (rep.translation_units != 1)
                kdc_problems_add(&problems, "stats.translation_units is %lld, expected 1",
                                 rep.translation_units);
            if (run.exit_code != (rep.nfindings > 0 ? 1 : 0))
                kdc_problems_add(&problems, "exit code %d does not match %zu finding(s) in the report",
                                 run.exit_code, rep.nfindings);
            kdc_report_free(&rep);
        }
    }
    kdc_run_free(&run);
    kdc_markers_free(&ms);
    g.score.expected_total += s.expected_total;
    g.score.expected_found += s.expected_found;
    g.score.false_positives += s.false_positives;
    print_message("%s: %zu/%zu expected found, %zu false positive(s)\n", c->name,
                  s.expected_found, s.expected_total, s.false_positives);
    if (problems.n) {
        g.cases_failed++;
        print_error("%s: %zu problem(s)\n  command (in %s): %s\n", c->name, problems.n,
                    g.cases_dir, cmdline);
        for (size_t i = 0; i < problems.n; i++)
            print_error("  %s\n", problems.v[i]);
        size_t n = problems.n;
        kdc_problems_free(&problems);
        fail_msg("%s: %zu problem(s), listed above", c->name, n);
    }
}

static int print_summary(void **state) {
    (void)state;
    print_message("acceptance summary (rules:");
    for (long i = 0; i < g.nrules; i++)
        print_message(" %s", g.rules[i]);
    print_message("): expected found %zu / expected total %zu, false positives %zu, "
                  "cases failed %zu of %zu\n",
                  g.score.expected_found, g.score.expected_total, g.score.false_positives,
                  g.cases_failed, g.ncases);
    return 0;
}

static void test_setup_failed(void **state) {
    (void)state;
    fail_msg("%s", g.setup_error);
}

/* NN-<name>.c */
static int is_case_name(const char *n) {
    const char *p = n;
    if (!isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    size_t len = strlen(n);
    return *p == '-' && len > 2 && !strcmp(n + len - 2, ".c");
}

static void load_cases(const char *dir) {
    struct stat st;
    if (!dir) {
        snprintf(g.setup_error, sizeof g.setup_error,
                 "shared cases folder not given (pass --cases DIR or set KDC_SHARED_CASES; CMake "
                 "cache variable KDC_SHARED_CASES)");
        return;
    }
    if (stat(dir, &st) != 0 || !S_ISDIR(st.st_mode) || !realpath(dir, g.cases_dir)) {
        snprintf(g.setup_error, sizeof g.setup_error,
                 "shared acceptance cases folder %s does not exist: the acceptance test needs it "
                 "(CI places it next to the checkout as ../shared/cases; configure with "
                 "-DKDC_SHARED_CASES=DIR)", dir);
        return;
    }
    struct dirent **ents = NULL;
    int n = scandir(g.cases_dir, &ents, NULL, alphasort);
    for (int i = 0; i < n; i++) {
        if (is_case_name(ents[i]->d_name)) {
            g.cases = realloc(g.cases, (g.ncases + 1) * sizeof *g.cases);
            acase_t *c = &g.cases[g.ncases++];
            c->name = strdup(ents[i]->d_name);
            if (asprintf(&c->path, "%s/%s", g.cases_dir, ents[i]->d_name) < 0)
                abort();
        }
        free(ents[i]);
    }
    free(ents);
    if (!g.ncases)
        snprintf(g.setup_error, sizeof g.setup_error,
                 "no NN-<name>.c cases in %.3000s: nothing was checked, which is not a pass",
                 g.cases_dir);
}

static void usage(void) {
    fprintf(stderr, "usage: test_acceptance [--kdc-lint PATH] [--cases DIR] [--filter GLOB]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *cases = getenv("KDC_SHARED_CASES"), *filter = NULL;
    g.lint = getenv("KDC_LINT");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kdc-lint") && i + 1 < argc)
            g.lint = argv[++i];
        else if (!strcmp(argv[i], "--cases") && i + 1 < argc)
            cases = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else
            usage();
    }
    char err[1024];
    static char lint_path[PATH_MAX];
    if (g.lint && realpath(g.lint, lint_path))
        g.lint = lint_path; /* kdc-lint runs in the cases folder */
    if (!g.lint || access(g.lint, X_OK) != 0) {
        snprintf(g.setup_error, sizeof g.setup_error,
                 "kdc-lint binary not executable: %s (pass --kdc-lint PATH or set KDC_LINT)",
                 g.lint ? g.lint : "(not set)");
    } else {
        load_cases(cases);
        if (!g.setup_error[0]) {
            g.nrules = kdc_list_rules(g.lint, &g.rules, err, sizeof err);
            if (g.nrules < 0)
                snprintf(g.setup_error, sizeof g.setup_error, "%s", err);
            else if (g.nrules == 0)
                snprintf(g.setup_error, sizeof g.setup_error,
                         "kdc-lint --list-rules lists no rules: nothing would be scored");
        }
    }

    struct CMUnitTest *tests;
    size_t ntests;
    int failed;
    if (g.setup_error[0]) {
        tests = calloc(1, sizeof *tests);
        tests[0].name = "shared acceptance cases can be scored";
        tests[0].test_func = test_setup_failed;
        ntests = 1;
        failed = _cmocka_run_group_tests("kdc-lint on the shared acceptance cases", tests, ntests,
                                         NULL, NULL);
    } else {
        tests = calloc(g.ncases, sizeof *tests);
        for (size_t i = 0; i < g.ncases; i++) {
            tests[i].name = g.cases[i].name;
            tests[i].test_func = test_case;
            tests[i].initial_state = &g.cases[i];
        }
        ntests = g.ncases;
        if (filter)
            cmocka_set_test_filter(filter);
        failed = _cmocka_run_group_tests("kdc-lint on the shared acceptance cases", tests, ntests,
                                         NULL, print_summary);
    }
    free(tests);
    for (size_t i = 0; i < g.ncases; i++) {
        free(g.cases[i].name);
        free(g.cases[i].path);
    }
    free(g.cases);
    for (long i = 0; i < g.nrules; i++)
        free(g.rules[i]);
    free(g.rules);
    return failed;
}
