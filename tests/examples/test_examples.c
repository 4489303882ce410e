/*
 * The example services say in their markers which findings kdc-lint must
 * report on them (README: orders-worker.c and enricher.cpp carry the bugs,
 * orders-worker-fixed.c and orders-worker-libkdc.c none). This test runs
 * kdc-lint with this build's compile_commands.json, as the quick start does,
 * and compares its findings with the markers in both directions; and runs
 * it on the harness's own sources (harness/: libkdc and kdc-harness), which must give no
 * finding.
 */
#include <dirent.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "lintrun.h"
#include "markers.h"
#include "score.h"

static const char *env(const char *name) {
    const char *v = getenv(name);
    if (!v || !*v)
        fail_msg("%s is not set (ctest sets it)", name);
    return v;
}

/* The markers of every C and C++ source below dir (examples/broken/ too:
 * kdc-lint analyses a directory recursively). Hidden directories are
 * skipped, as kdc-lint skips them. */
static void collect_sources(const char *dir, kdc_markers_t *ms, size_t *nsources) {
    DIR *d = opendir(dir);
    struct dirent *de;
    char err[1024];

    assert_non_null(d);
    while ((de = readdir(d))) {
        size_t n = strlen(de->d_name);
        char path[PATH_MAX];
        struct stat st;

        if (de->d_name[0] == '.')
            continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) {
            collect_sources(path, ms, nsources);
            continue;
        }
        int c = n > 2 && !strcmp(de->d_name + n - 2, ".c");
        int cxx = n > 4 && !strcmp(de->d_name + n - 4, ".cpp");
        if (!c && !cxx)
            continue;
        if (kdc_markers_parse_file(ms, path, err, sizeof err))
            fail_msg("%s", err);
        (*nsources)++;
    }
    closedir(d);
}

static void examples_report_exactly_their_marked_findings(void **state) {
    (void)state;
    const char *lint = env("KDC_LINT"), *examples = env("KDC_EXAMPLES_DIR");
    const char *build = env("KDC_BUILD_DIR");

    kdc_markers_t ms = {0};
    size_t nsources = 0;
    char err[1024];
    collect_sources(examples, &ms, &nsources);
    assert_true(nsources >= 4);
    assert_true(kdc_markers_count(&ms, KDC_MARK_EXPECT, NULL) >= 4);

    char *argv[] = {(char *)lint, "--format=json", "--no-cache", "-p", (char *)build,
                    (char *)examples, NULL};
    kdc_run_t run;
    assert_int_equal(kdc_run(examples, argv, &run), 0);
    assert_false(run.signaled);
    assert_int_equal(run.exit_code, 1); /* the bad examples have findings */

    kdc_report_t rep;
    if (kdc_report_parse(run.out, examples, &rep, err, sizeof err))
        fail_msg("JSON report: %s", err);
    assert_int_equal(rep.nerrors, 0);
    assert_int_equal(rep.incomplete, 0);
    assert_int_equal(rep.translation_units, (long long)nsources);

    kdc_problems_t problems = {0};
    kdc_score_fixture(&ms, rep.findings, rep.nfindings, examples, &problems);
    for (size_t i = 0; i < problems.n; i++)
        print_error("%s\n", problems.v[i]);
    assert_int_equal(problems.n, 0);

    kdc_problems_free(&problems);
    kdc_report_free(&rep);
    kdc_run_free(&run);
    kdc_markers_free(&ms);
}

/* libkdc and kdc-harness are real librdkafka client code too (flush-based
 * waits, an exported delivery callback, atomics; a workload producer and a
 * checking consumer): kdc-lint must find nothing in them. */
static void harness_sources_report_no_finding(void **state) {
    (void)state;
    const char *lint = env("KDC_LINT"), *harness = env("KDC_HARNESS_DIR");
    const char *build = env("KDC_BUILD_DIR");
    char err[1024];

    char *argv[] = {(char *)lint, "--format=json", "--no-cache", "-p", (char *)build,
                    (char *)harness, NULL};
    kdc_run_t run;
    assert_int_equal(kdc_run(harness, argv, &run), 0);
    assert_false(run.signaled);
    kdc_report_t rep;
    if (kdc_report_parse(run.out, harness, &rep, err, sizeof err))
        fail_msg("JSON report: %s", err);
    for (size_t i = 0; i < rep.nfindings; i++)
        print_error("%s:%u: [%s]\n", rep.findings[i].file, rep.findings[i].line,
                    rep.findings[i].rule);
    assert_int_equal(rep.nfindings, 0);
    assert_int_equal(run.exit_code, 0);
    assert_int_equal(rep.nerrors, 0);
    assert_int_equal(rep.incomplete, 0);
    assert_true(rep.translation_units >= 10);

    kdc_report_free(&rep);
    kdc_run_free(&run);
}

/* README.md shows what kdc-lint prints on examples/orders-worker.c: every line of that sample
 * (the block after "$ kdc-lint -p build/release examples/orders-worker.c") is a line of what
 * kdc-lint prints there, run from the source tree with this build's flags. */
static void the_readme_sample_is_what_kdc_lint_prints(void **state) {
    (void)state;
    const char *lint = env("KDC_LINT"), *build = env("KDC_BUILD_DIR");
    const char *readme_path = env("KDC_README"), *src = env("KDC_SOURCE_DIR");
    static const char prompt[] = "$ kdc-lint -p build/release examples/orders-worker.c\n";
    FILE *f = fopen(readme_path, "r");
    assert_non_null(f);
    char *readme = NULL;
    size_t cap = 0;
    ssize_t len = getdelim(&readme, &cap, '\0', f);
    fclose(f);
    assert_true(len > 0);
    const char *sample = strstr(readme, prompt);
    if (!sample)
        fail_msg("README.md has no sample starting with %s", prompt);
    sample += strlen(prompt);
    const char *end = strstr(sample, "```");
    assert_non_null(end);

    char *argv[] = {(char *)lint, "--no-cache", "--color=never", "-p", (char *)build,
                    "examples/orders-worker.c", NULL};
    kdc_run_t run;
    assert_int_equal(kdc_run(src, argv, &run), 0);
    assert_int_equal(run.exit_code, 1);
    size_t nlines = 0;
    for (const char *line = sample; line < end; nlines++) {
        const char *nl = memchr(line, '\n', (size_t)(end - line));
        size_t n = nl ? (size_t)(nl - line) : (size_t)(end - line);
        int found = 0;
        for (const char *p = run.out; p && *p && !found; ) {
            const char *q = strchr(p, '\n');
            size_t m = q ? (size_t)(q - p) : strlen(p);
            found = m == n && !memcmp(p, line, n);
            p = q ? q + 1 : NULL;
        }
        if (!found)
            fail_msg("README.md's sample line is not in kdc-lint's output:\n%.*s\noutput:\n%s",
                     (int)n, line, run.out);
        line = nl ? nl + 1 : end;
    }
    assert_true(nlines >= 4); /* a warning, its source line and caret, a note */
    kdc_run_free(&run);
    free(readme);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(examples_report_exactly_their_marked_findings),
        cmocka_unit_test(harness_sources_report_no_finding),
        cmocka_unit_test(the_readme_sample_is_what_kdc_lint_prints),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
