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

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(examples_report_exactly_their_marked_findings),
        cmocka_unit_test(harness_sources_report_no_finding),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
