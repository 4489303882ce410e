/*
 * The fixture runner's own parts: marker parsing, report validation and
 * scoring. These prove the runner can fail: a missing, extra or misplaced
 * finding and a malformed report are each detected.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lintrun.h"
#include "markers.h"
#include "score.h"

static const char *SRC =
    "/*\n"
    " * Header prose: expect: nothing here, the Rules: line names bare-commit.\n"
    " */\n"
    "#include <stdio.h>\n"
    "static const char *s = \"/* expect: bare-commit */\";\n"           /* 5: inside a string */
    "void f(void) {\n"
    "    commit(); /* expect: bare-commit */\n"                          /* 7 */
    "    produce(); /* expect: bare-commit, unconfirmed-dlq-routing; ok: produce-without-delivery-callback */\n" /* 8 */
    "    other(); /* retry later */\n"                                    /* 9 */
    "    again(); // ok: bare-commit\n"                                   /* 10 */
    "}\n";

static void markers_parse_expect_and_ok_lists_per_line(void **state) {
    (void)state;
    kdc_markers_t ms = {0};
    char err[256] = "";
    assert_int_equal(kdc_markers_parse_text(&ms, "/f.c", SRC, err, sizeof err), 0);
    assert_int_equal(ms.n, 5);
    assert_true(kdc_markers_has(&ms, KDC_MARK_EXPECT, "/f.c", 7, "bare-commit"));
    assert_true(kdc_markers_has(&ms, KDC_MARK_EXPECT, "/f.c", 8, "bare-commit"));
    assert_true(kdc_markers_has(&ms, KDC_MARK_EXPECT, "/f.c", 8, "unconfirmed-dlq-routing"));
    assert_true(kdc_markers_has(&ms, KDC_MARK_OK, "/f.c", 8, "produce-without-delivery-callback"));
    assert_true(kdc_markers_has(&ms, KDC_MARK_OK, "/f.c", 10, "bare-commit"));
    assert_false(kdc_markers_has(&ms, KDC_MARK_EXPECT, "/f.c", 5, "bare-commit"));
    assert_false(kdc_markers_has(&ms, KDC_MARK_OK, "/f.c", 7, "bare-commit"));
    assert_int_equal(kdc_markers_count(&ms, KDC_MARK_EXPECT, NULL), 3);
    assert_int_equal(kdc_markers_count(&ms, KDC_MARK_OK, "bare-commit"), 1);
    assert_int_equal(ms.has_args, 0);
    kdc_markers_free(&ms);
}

static void expect_parse_error(const char *text, const char *needle) {
    kdc_markers_t ms = {0};
    char err[256] = "";
    assert_int_equal(kdc_markers_parse_text(&ms, "/g.c", text, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
    kdc_markers_free(&ms);
}

static void markers_reject_malformed_markers(void **state) {
    (void)state;
    expect_parse_error("x(); /* expect bare-commit */\n", "without ':'");
    expect_parse_error("x(); /* expect: Bare_Commit */\n", "not a rule name");
    expect_parse_error("x(); /* expect: */\n", "names no rule");
    expect_parse_error("x(); /* expect: bare-commit; maybe: y */\n", "neither");
    expect_parse_error("x(); /* expect: bare-commit\n   more */\n", "one line");
    expect_parse_error("x(); /* expect: bare-commit; ok: bare-commit */\n", "both expect and ok");
    expect_parse_error("\n/* kdc-fixture: --profile=strict */\n", "line 1");
    expect_parse_error("x(); /* expect: bare-commit\n", "unterminated");
}

static void markers_read_fixture_arguments_from_line_one(void **state) {
    (void)state;
    kdc_markers_t ms = {0};
    char err[256] = "";
    assert_int_equal(kdc_markers_parse_text(&ms, "/s.c",
                                            "/* kdc-fixture: --profile=strict  --disable=x */\n"
                                            "/* what it covers */\n",
                                            err, sizeof err), 0);
    assert_int_equal(ms.has_args, 1);
    assert_int_equal(ms.nargs, 2);
    assert_string_equal(ms.args[0], "--profile=strict");
    assert_string_equal(ms.args[1], "--disable=x");
    kdc_markers_free(&ms);
}

static kdc_finding_t F(const char *file, unsigned line, const char *rule) {
    kdc_finding_t f = {(char *)file, line, (char *)rule};
    return f;
}

static void fixture_score_passes_only_an_exact_match(void **state) {
    (void)state;
    kdc_markers_t ms = {0};
    assert_int_equal(kdc_markers_parse_text(&ms, "/f.c", SRC, NULL, 0), 0);
    kdc_problems_t p = {0};

    /* exact (duplicates of one triple count once) */
    kdc_finding_t exact[] = {F("/f.c", 7, "bare-commit"), F("/f.c", 8, "bare-commit"),
                             F("/f.c", 8, "unconfirmed-dlq-routing"), F("/f.c", 7, "bare-commit")};
    assert_int_equal(kdc_score_fixture(&ms, exact, 4, NULL, &p), 0);

    /* nothing reported: three missing */
    assert_int_equal(kdc_score_fixture(&ms, NULL, 0, NULL, &p), 3);
    assert_non_null(strstr(p.v[0], "missing: /f.c:7: bare-commit"));
    kdc_problems_free(&p);

    /* an ok line, an unmarked line, a wrong line and another file */
    kdc_finding_t wrong[] = {F("/f.c", 7, "bare-commit"), F("/f.c", 8, "bare-commit"),
                             F("/f.c", 8, "unconfirmed-dlq-routing"),
                             F("/f.c", 8, "produce-without-delivery-callback"),
                             F("/f.c", 9, "bare-commit"), F("/other.c", 7, "bare-commit")};
    assert_int_equal(kdc_score_fixture(&ms, wrong, 6, NULL, &p), 3);
    assert_non_null(strstr(p.v[0], "/f.c:8: produce-without-delivery-callback reported on a line marked ok"));
    assert_non_null(strstr(p.v[1], "/f.c:9: bare-commit reported without an expect marker"));
    assert_non_null(strstr(p.v[2], "/other.c:7: bare-commit"));
    kdc_problems_free(&p);

    /* right rule, off by one line: one missing and one extra */
    kdc_finding_t shifted[] = {F("/f.c", 6, "bare-commit"), F("/f.c", 8, "bare-commit"),
                               F("/f.c", 8, "unconfirmed-dlq-routing")};
    assert_int_equal(kdc_score_fixture(&ms, shifted, 3, NULL, &p), 2);
    kdc_problems_free(&p);
    kdc_markers_free(&ms);
}

static void acceptance_score_counts_only_listed_rules(void **state) {
    (void)state;
    kdc_markers_t ms = {0};
    assert_int_equal(kdc_markers_parse_text(&ms, "/c.c", SRC, NULL, 0), 0);
    const char *rules[] = {"bare-commit"};
    kdc_problems_t p = {0};
    kdc_score_t s = {0, 0, 0};
    /* line 9 is unmarked (not counted); line 10 is ok (counted); unlisted rules ignored */
    kdc_finding_t f[] = {F("/c.c", 7, "bare-commit"), F("/c.c", 9, "bare-commit"),
                         F("/c.c", 10, "bare-commit")};
    kdc_score_acceptance(&ms, f, 3, rules, 1, 0, NULL, &s, &p);
    assert_int_equal(s.expected_total, 2);
    assert_int_equal(s.expected_found, 1);
    assert_int_equal(s.false_positives, 1);
    assert_int_equal(p.n, 2);
    kdc_problems_free(&p);

    /* in an NN-ok-*.c case every distinct finding is a false positive */
    kdc_score_t s2 = {0, 0, 0};
    kdc_score_acceptance(&ms, f, 3, rules, 1, 1, NULL, &s2, &p);
    assert_int_equal(s2.false_positives, 3);
    kdc_problems_free(&p);
    kdc_markers_free(&ms);

    assert_true(kdc_case_is_ok_file("/x/19-ok-commit-after-confirmed-write.c"));
    assert_false(kdc_case_is_ok_file("06-dlq-poll-then-commit.c"));
    assert_false(kdc_case_is_ok_file("ok-19.c"));
}

static const char *GOOD =
    "{\"tool\":{\"name\":\"kdc-lint\",\"version\":\"0.1.0\"},"
    "\"findings\":[{\"rule\":\"bare-commit\",\"severity\":\"warning\",\"message\":\"m\","
    "\"file\":\"sub/x.c\",\"line\":3,\"column\":5,\"end_line\":3,\"end_column\":30,"
    "\"function\":\"f\",\"related\":[{\"file\":\"sub/x.c\",\"line\":1,\"column\":1,\"message\":\"r\"}]}],"
    "\"errors\":[],\"stats\":{\"translation_units\":1,\"incomplete\":0,\"seconds\":0.25}}";

static void report_parse_accepts_the_contract_and_resolves_paths(void **state) {
    (void)state;
    kdc_report_t rep;
    char err[256] = "";
    assert_int_equal(kdc_report_parse(GOOD, "/nonexistent-dir", &rep, err, sizeof err), 0);
    assert_int_equal(rep.nfindings, 1);
    assert_string_equal(rep.findings[0].file, "/nonexistent-dir/sub/x.c");
    assert_string_equal(rep.findings[0].rule, "bare-commit");
    assert_int_equal(rep.findings[0].line, 3);
    assert_int_equal(rep.translation_units, 1);
    kdc_report_free(&rep);

    /* a path that exists resolves through realpath */
    char *p = kdc_resolve_path("/usr/include", "../include/./stdio.h");
    assert_string_equal(p, "/usr/include/stdio.h");
    free(p);
}

static void expect_report_error(const char *doc, const char *needle) {
    kdc_report_t rep;
    char err[256] = "";
    assert_int_equal(kdc_report_parse(doc, "/", &rep, err, sizeof err), -1);
    if (!strstr(err, needle))
        fail_msg("error \"%s\" does not mention \"%s\"", err, needle);
}

static char *replace(const char *s, const char *from, const char *to) {
    const char *at = strstr(s, from);
    assert_non_null(at);
    char *out = NULL;
    if (asprintf(&out, "%.*s%s%s", (int)(at - s), s, to, at + strlen(from)) < 0)
        abort();
    return out;
}

static void report_parse_rejects_contract_violations(void **state) {
    (void)state;
    char *d;
    expect_report_error("", "not one JSON document");
    d = replace(GOOD, "0.25}}", "0.25}} {}"); /* trailing second document */
    expect_report_error(d, "not one JSON document");
    free(d);
    d = replace(GOOD, "\"kdc-lint\"", "\"other\"");
    expect_report_error(d, "tool.name");
    free(d);
    d = replace(GOOD, "\"line\":3,", "\"line\":\"3\",");
    expect_report_error(d, "\"line\"");
    free(d);
    d = replace(GOOD, "\"severity\":\"warning\",", "");
    expect_report_error(d, "severity");
    free(d);
    d = replace(GOOD, "\"end_line\":3", "\"end_line\":2");
    expect_report_error(d, "end_line");
    free(d);
    d = replace(GOOD, "\"errors\":[],", "");
    expect_report_error(d, "errors");
    free(d);
    d = replace(GOOD, "\"incomplete\":0,", "");
    expect_report_error(d, "incomplete");
    free(d);
    d = replace(GOOD, ",\"related\":[{\"file\":\"sub/x.c\",\"line\":1,\"column\":1,\"message\":\"r\"}]", "");
    expect_report_error(d, "related");
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(markers_parse_expect_and_ok_lists_per_line),
        cmocka_unit_test(markers_reject_malformed_markers),
        cmocka_unit_test(markers_read_fixture_arguments_from_line_one),
        cmocka_unit_test(fixture_score_passes_only_an_exact_match),
        cmocka_unit_test(acceptance_score_counts_only_listed_rules),
        cmocka_unit_test(report_parse_accepts_the_contract_and_resolves_paths),
        cmocka_unit_test(report_parse_rejects_contract_violations),
    };
    return cmocka_run_group_tests_name("fixture runner: markers, reports and scoring", tests,
                                       NULL, NULL);
}
