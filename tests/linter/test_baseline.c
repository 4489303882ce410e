/*
 * Baselines (lint.baseline): --write-baseline records the current findings by
 * fingerprint, --baseline reports only the others. Known findings stay known
 * when lines are inserted above them; a new finding (also an identical line
 * added to the same function) still fails the run; a malformed baseline is
 * exit 2 with a precise message and nothing analysed. Every test asserts the
 * exit code and the finding or message that matters.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lintcase.h"

#define BARE "bare-commit"
#define INC "#include <librdkafka/rdkafka.h>\n"
#define COMMIT "rd_kafka_commit(rk, NULL, 0);"

/* Two known findings: lines 3 and 4 (the same statement twice in one function), 6. */
static const char known_c[] = INC "void poll_loop(rd_kafka_t *rk) {\n"
                                  "    " COMMIT "\n"
                                  "    " COMMIT "\n"
                                  "}\n"
                                  "void drain(rd_kafka_t *rk) { " COMMIT " }\n";

/* A directory with known_c as svc/w.c and its baseline written to kb.json. */
static char *with_baseline(const char *name) {
    char *d = lc_dir(name);
    lc_write(d, "svc/w.c", known_c);
    lc_res_t r;
    LC(&r, d, "--write-baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    return d;
}

static void write_baseline_records_every_finding_and_reports_none(void **s) {
    (void)s;
    char *d = lc_dir("write");
    lc_write(d, "svc/w.c", known_c);
    lc_res_t r;
    LC(&r, d, "--format=json", "--write-baseline", "kb.json", "svc");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_expect_err(&r, "kdc-lint: wrote 3 findings to the baseline kb.json");
    lc_free(&r);
    char *text = lc_read(d, "kb.json");
    json_error_t e;
    json_t *j = json_loads(text, 0, &e);
    assert_non_null(j);
    assert_int_equal(json_integer_value(json_object_get(j, "version")), 1);
    json_t *fs = json_object_get(j, "findings");
    assert_int_equal(json_array_size(fs), 3);
    for (size_t i = 0; i < 3; i++) {
        json_t *f = json_array_get(fs, i);
        const char *fp = json_string_value(json_object_get(f, "fingerprint"));
        assert_non_null(fp);
        assert_int_equal(strlen(fp), 32);
        for (size_t k = 0; k < 32; k++)
            assert_true(isxdigit((unsigned char)fp[k]));
        assert_string_equal(json_string_value(json_object_get(f, "rule")), BARE);
        assert_string_equal(json_string_value(json_object_get(f, "file")), "svc/w.c");
    }
    /* the two identical statements of poll_loop get different fingerprints */
    assert_string_not_equal(json_string_value(json_object_get(json_array_get(fs, 0), "fingerprint")),
                            json_string_value(json_object_get(json_array_get(fs, 1), "fingerprint")));
    json_decref(j);
    free(text);
    free(d);
}

static void with_the_baseline_known_findings_are_not_reported(void **s) {
    (void)s;
    char *d = with_baseline("known");
    lc_res_t r;
    LC(&r, d, "--format=json", "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_expect_err(&r, "kdc-lint: not shown: 3 in the baseline\n");
    lc_free(&r);
    /* without it they are all there */
    LC(&r, d, "--format=json", "svc");
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, BARE), 3);
    lc_free(&r);
    free(d);
}

static void known_findings_stay_known_when_lines_are_inserted_above(void **s) {
    (void)s;
    char *d = with_baseline("shifted");
    char *shifted = NULL;
    if (asprintf(&shifted,
                 "/* a new header comment\n * of three lines */\n%s"
                 "static int unrelated(int x) {\n    return x + 1;\n}\n%s",
                 INC, known_c + strlen(INC)) < 0)
        abort();
    lc_write(d, "svc/w.c", shifted);
    lc_res_t r;
    LC(&r, d, "--format=json", "svc");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "svc/w.c", 9); /* was line 6 */
    lc_free(&r);
    LC(&r, d, "--format=json", "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
    free(shifted);
    free(d);
}

static void a_new_finding_is_reported_and_fails_the_run(void **s) {
    (void)s;
    char *d = with_baseline("new");
    char *more = NULL;
    if (asprintf(&more, "%svoid rebalance(rd_kafka_t *rk) { %s }\n", known_c, COMMIT) < 0)
        abort();
    lc_write(d, "svc/w.c", more);
    lc_res_t r;
    LC(&r, d, "--format=json", "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, NULL), 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "svc/w.c", 7), "function"), "rebalance");
    lc_free(&r);
    free(more);
    free(d);
}

static void the_same_statement_once_more_in_the_same_function_is_new(void **s) {
    (void)s;
    char *d = with_baseline("occurrence");
    lc_write(d, "svc/w.c",
             INC "void poll_loop(rd_kafka_t *rk) {\n"
                 "    " COMMIT "\n"
                 "    " COMMIT "\n"
                 "    " COMMIT "\n"
                 "}\n"
                 "void drain(rd_kafka_t *rk) { " COMMIT " }\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, NULL), 1);
    lc_need_finding(&r, BARE, "svc/w.c", 5);
    lc_free(&r);
    free(d);
}

static void fixed_findings_are_named_as_stale_baseline_entries(void **s) {
    (void)s;
    char *d = with_baseline("stale");
    lc_write(d, "svc/w.c", INC "void drain(rd_kafka_t *rk) { " COMMIT " }\n");
    lc_res_t r;
    LC(&r, d, "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    lc_expect_err(&r, "2 baseline entries are no longer found (refresh it with --write-baseline)");
    lc_free(&r);
    free(d);
}

/* A pre-commit hook analyses the staged files only: the baseline's entries of
 * other files are no concern of that run, and rewriting the baseline from it
 * would drop them. */
static void a_run_over_some_files_never_advises_rewriting_the_baseline(void **s) {
    (void)s;
    char *d = lc_dir("partial");
    lc_write(d, "svc/w.c", known_c);
    lc_write(d, "svc/v.c", INC "void v(rd_kafka_t *rk) { " COMMIT " }\n");
    lc_res_t r;
    LC(&r, d, "--write-baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    lc_expect_err(&r, "kdc-lint: wrote 4 findings to the baseline kb.json");
    lc_free(&r);
    /* one file, unchanged: nothing is stale */
    LC(&r, d, "--baseline=kb.json", "svc/w.c");
    lc_expect_exit(&r, 0);
    lc_expect_no_err(&r, "no longer found");
    lc_expect_no_err(&r, "--write-baseline");
    lc_free(&r);
    /* one file, one of its findings fixed: stale in the files analysed, and the advice
     * is to refresh from a run over the whole project */
    lc_write(d, "svc/w.c", INC "void drain(rd_kafka_t *rk) { " COMMIT " }\n");
    LC(&r, d, "--baseline=kb.json", "svc/w.c");
    lc_expect_exit(&r, 0);
    lc_expect_err(&r, "kdc-lint: 2 baseline entries are no longer found in the files analysed "
                      "(refresh it with --write-baseline on a run over the whole project, not "
                      "this one: it analysed only some of the baseline's files)");
    lc_free(&r);
    /* the whole project: the usual advice */
    LC(&r, d, "--baseline=kb.json", "svc");
    lc_expect_exit(&r, 0);
    lc_expect_err(&r, "2 baseline entries are no longer found (refresh it with --write-baseline)");
    lc_free(&r);
    free(d);
}

static void suppressed_findings_are_not_written_to_the_baseline(void **s) {
    (void)s;
    char *d = lc_dir("suppressed");
    lc_write(d, "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-commit] ok\n"
                 "void g(rd_kafka_t *rk) { " COMMIT " }\n");
    lc_res_t r;
    LC(&r, d, "--write-baseline=kb.json", "a.c");
    lc_expect_exit(&r, 0);
    lc_expect_err(&r, "wrote 1 finding to the baseline kb.json");
    lc_free(&r);
    free(d);
}

/* ---------- malformed baselines ---------- */

static void expect_bad_baseline(const char *name, const char *content, const char *message) {
    char *d = lc_dir(name);
    lc_write(d, "w.c", known_c);
    if (content)
        lc_write(d, "kb.json", content);
    lc_res_t r;
    LC(&r, d, "--baseline=kb.json", "w.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, message);
    lc_expect_no_out(&r, "[bare-commit]"); /* nothing analysed */
    lc_free(&r);
    free(d);
}

static void a_malformed_baseline_is_exit_2_with_a_precise_message(void **s) {
    (void)s;
    expect_bad_baseline("bad-json", "{\"version\": 1,\n \"findings\": [}\n",
                        "kdc-lint: error: kb.json:2:15: invalid baseline: ");
    expect_bad_baseline("bad-empty", "", "kdc-lint: error: kb.json:");
    expect_bad_baseline("bad-array", "[]\n",
                        "kdc-lint: error: kb.json: invalid baseline: expected a JSON object with "
                        "\"version\" and \"findings\"");
    expect_bad_baseline("bad-no-version", "{\"findings\": []}\n",
                        "kdc-lint: error: kb.json: invalid baseline: no \"version\" (not a "
                        "kdc-lint baseline?)");
    expect_bad_baseline("bad-version", "{\"version\": 2, \"findings\": []}\n",
                        "kdc-lint: error: kb.json: baseline version 2 is not supported (this "
                        "kdc-lint reads version 1)");
    expect_bad_baseline("bad-version-type", "{\"version\": \"1\", \"findings\": []}\n",
                        "kdc-lint: error: kb.json: baseline version \"1\" is not supported");
    expect_bad_baseline("bad-findings", "{\"version\": 1, \"findings\": {}}\n",
                        "kdc-lint: error: kb.json: invalid baseline: \"findings\" must be an array");
    expect_bad_baseline("bad-entry", "{\"version\": 1, \"findings\": [\"abc\"]}\n",
                        "kdc-lint: error: kb.json: invalid baseline: findings[0] must be an object");
    expect_bad_baseline("bad-fingerprint",
                        "{\"version\": 1, \"findings\": [{\"fingerprint\": "
                        "\"0123456789abcdef0123456789abcdef\"}, {\"fingerprint\": \"xyz\"}]}\n",
                        "kdc-lint: error: kb.json: invalid baseline: findings[1].fingerprint must "
                        "be a string of 32 hex digits");
    expect_bad_baseline("bad-duplicate-key", "{\"version\": 1, \"version\": 1, \"findings\": []}\n",
                        "kdc-lint: error: kb.json:1:");
    expect_bad_baseline("bad-missing", NULL,
                        "kdc-lint: error: kb.json: cannot read the baseline: No such file or "
                        "directory");
}

static void a_baseline_that_is_a_directory_is_an_error(void **s) {
    (void)s;
    char *d = lc_dir("bad-dir");
    lc_write(d, "w.c", known_c);
    lc_write(d, "kb.json/x", "");
    lc_res_t r;
    LC(&r, d, "--baseline=kb.json", "w.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, "kdc-lint: error: kb.json: the baseline is not a regular file");
    lc_free(&r);
    free(d);
}

static void write_baseline_never_overwrites_a_source_and_reports_write_errors(void **s) {
    (void)s;
    char *d = lc_dir("write-errors");
    lc_write(d, "w.c", known_c);
    lc_res_t r;
    LC(&r, d, "--write-baseline=w.c", "w.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, "--write-baseline w.c: is a source file to analyse; not overwriting it");
    lc_free(&r);
    char *text = lc_read(d, "w.c");
    assert_string_equal(text, known_c);
    free(text);
    LC(&r, d, "--format=json", "--write-baseline=missing/dir/kb.json", "w.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, "kdc-lint: error: missing/dir/kb.json: cannot write the baseline: No such "
                      "file or directory");
    /* not written: the findings are still reported */
    assert_int_equal(lc_nfindings(&r, BARE), 3);
    lc_free(&r);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(write_baseline_records_every_finding_and_reports_none),
        cmocka_unit_test(with_the_baseline_known_findings_are_not_reported),
        cmocka_unit_test(known_findings_stay_known_when_lines_are_inserted_above),
        cmocka_unit_test(a_new_finding_is_reported_and_fails_the_run),
        cmocka_unit_test(the_same_statement_once_more_in_the_same_function_is_new),
        cmocka_unit_test(fixed_findings_are_named_as_stale_baseline_entries),
        cmocka_unit_test(a_run_over_some_files_never_advises_rewriting_the_baseline),
        cmocka_unit_test(suppressed_findings_are_not_written_to_the_baseline),
        cmocka_unit_test(a_malformed_baseline_is_exit_2_with_a_precise_message),
        cmocka_unit_test(a_baseline_that_is_a_directory_is_an_error),
        cmocka_unit_test(write_baseline_never_overwrites_a_source_and_reports_write_errors),
    };
    return cmocka_run_group_tests_name("kdc-lint baselines", tests, lc_setup, lc_teardown);
}
