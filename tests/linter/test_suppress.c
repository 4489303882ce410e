/*
 * Suppression comments (lint.suppress): `kdc-lint: ignore[rule] reason` on
 * the finding's line or the line before, ignore-begin/ignore-end blocks,
 * several rules, findings in headers, and the diagnostics about suppressions
 * themselves: invalid-suppression (always; counts for the exit code) and
 * unused-suppression (with --report-unused-suppressions or the strict
 * profile). Every test asserts the exit code and the finding that matters.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "lintcase.h"

#define BARE "bare-commit"
#define DLQ "unconfirmed-dlq-routing"
#define INVALID "invalid-suppression"
#define UNUSED "unused-suppression"
#define INC "#include <librdkafka/rdkafka.h>\n"
#define COMMIT "rd_kafka_commit(rk, NULL, 0);"

/* Runs kdc-lint --format=json on `file` (written into a fresh directory) with
 * up to two extra options. */
static void lint_one(lc_res_t *r, const char *name, const char *file, const char *text,
                     const char *opt1, const char *opt2) {
    char *d = lc_dir(name);
    lc_write(d, file, text);
    if (opt2)
        LC(r, d, "--format=json", opt1, opt2, file);
    else if (opt1)
        LC(r, d, "--format=json", opt1, file);
    else
        LC(r, d, "--format=json", file);
    free(d);
}

static void a_suppression_on_the_finding_line_hides_it(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "same-line", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-commit] auto "
                 "store is off in production\n",
             NULL, NULL);
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_expect_err(&r, "not shown: 1 suppressed by comments");
    lc_free(&r);
}

static void a_block_comment_on_the_line_before_hides_it(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "line-before", "a.c",
             INC "void f(rd_kafka_t *rk) {\n"
                 "    /* kdc-lint: ignore[bare-commit] offsets are stored after the effect */\n"
                 "    " COMMIT "\n"
                 "}\n",
             NULL, NULL);
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
}

static void a_suppression_after_code_covers_only_its_own_line(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "trailing", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-commit] known\n"
                 "void g(rd_kafka_t *rk) { " COMMIT " }\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    assert_null(lc_finding(&r, BARE, "a.c", 2));
    lc_need_finding(&r, BARE, "a.c", 3);
    lc_free(&r);
}

static void a_suppression_two_lines_above_does_not_reach_the_finding(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "two-above", "a.c",
             INC "void f(rd_kafka_t *rk) {\n"
                 "    // kdc-lint: ignore[bare-commit] too far away\n"
                 "\n"
                 "    " COMMIT "\n"
                 "}\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 5);
    lc_free(&r);
}

static void a_suppression_hides_only_the_rules_it_names(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "other-rule", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[" DLQ "] wrong rule\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 2);
    lc_free(&r);
}

/* Line 6 has a bare-commit and an unconfirmed-dlq-routing finding. */
#define TWO_RULES(comment)                                                                      \
    INC "void f(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in) {\n"                      \
        "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders.dlq\"), RD_KAFKA_V_END))\n"       \
        "        return;\n"                                                                     \
        "    " comment "\n"                                                                     \
        "    rd_kafka_commit(c, NULL, 0);\n"                                                    \
        "}\n"

static void several_rules_separated_by_commas_are_all_suppressed(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "two-rules-none", "a.c", TWO_RULES("/* nothing */"), NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 6);
    lc_need_finding(&r, DLQ, "a.c", 6);
    lc_free(&r);
    lint_one(&r, "two-rules", "a.c",
             TWO_RULES("// kdc-lint: ignore[bare-commit, unconfirmed-dlq-routing] replayed from "
                       "the archive"),
             NULL, NULL);
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_expect_err(&r, "not shown: 2 suppressed by comments");
    lc_free(&r);
    lint_one(&r, "two-rules-one", "a.c",
             TWO_RULES("// kdc-lint: ignore[bare-commit] only this one"), NULL, NULL);
    lc_expect_exit(&r, 1);
    assert_null(lc_finding(&r, BARE, "a.c", 6));
    lc_need_finding(&r, DLQ, "a.c", 6);
    lc_free(&r);
}

static void a_block_suppresses_every_line_from_begin_to_end_and_no_further(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "block", "a.c",
             INC "// kdc-lint: ignore-begin[bare-commit] legacy consumers, migrating (TICKET-12)\n"
                 "void a(rd_kafka_t *rk) { " COMMIT " }\n"
                 "/* kdc-lint: ignore-begin[" DLQ "] nested */\n"
                 "void b(rd_kafka_t *rk) {\n"
                 "    " COMMIT "\n"
                 "}\n"
                 "/* kdc-lint: ignore-end[" DLQ "] */\n"
                 "void c(rd_kafka_t *rk) { " COMMIT " }\n"
                 "// kdc-lint: ignore-end\n"
                 "void d(rd_kafka_t *rk) { " COMMIT " }\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 11);
    assert_int_equal(lc_nfindings(&r, NULL), 1);
    lc_expect_err(&r, "not shown: 3 suppressed by comments");
    lc_free(&r);
}

static void a_finding_in_a_header_is_suppressed_in_the_header(void **s) {
    (void)s;
    char *d = lc_dir("header");
    lc_write(d, "a.c", INC "#include \"inc/commit.h\"\nvoid g(rd_kafka_t *rk) { h(rk); }\n");
    lc_write(d, "inc/commit.h", INC "static inline void h(rd_kafka_t *rk) {\n    " COMMIT "\n}\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "inc/commit.h", 3);
    lc_free(&r);
    lc_write(d, "inc/commit.h",
             INC "static inline void h(rd_kafka_t *rk) {\n"
                 "    " COMMIT " /* kdc-lint: ignore[bare-commit] callers store first */\n}\n");
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
    free(d);
}

static void suppression_text_inside_a_string_literal_is_not_a_comment(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "string", "a.c",
             INC "const char *doc = \"// kdc-lint: ignore[bare-commit] in a string\";\n"
                 "void f(rd_kafka_t *rk) { " COMMIT " }\n"
                 "const char *raw = \"/* kdc-lint: ignore[nope] */\"; char q = '\\'';\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 3);
    assert_int_equal(lc_nfindings(&r, INVALID), 0);
    lc_free(&r);
}

/* ---------- invalid suppressions ---------- */

static void a_suppression_without_a_reason_is_reported_and_suppresses_nothing(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "no-reason", "a.c",
             INC "void f(rd_kafka_t *rk) {\n"
                 "    // kdc-lint: ignore[bare-commit]\n"
                 "    " COMMIT "\n"
                 "}\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 4);
    json_t *f = lc_need_finding(&r, INVALID, "a.c", 3);
    assert_string_equal(lc_str(f, "message"),
                        "suppression without a reason: write why after ignore[...]; it "
                        "suppresses nothing");
    assert_int_equal(json_integer_value(json_object_get(f, "column")), 5);
    lc_free(&r);
}

static void an_invalid_suppression_alone_fails_the_run(void **s) {
    (void)s;
    lc_res_t r;
    char *d = lc_dir("invalid-alone");
    lc_write(d, "a.c", INC "/* kdc-lint: ignore[bare-commit] */\nint x;\n");
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 1);
    lc_expect_out(&r, "a.c:2:1: warning: suppression without a reason: write why after "
                      "ignore[...]; it suppresses nothing [invalid-suppression]");
    lc_free(&r);
    free(d);
}

static void a_suppression_without_a_rule_name_is_reported(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "no-rule", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore legacy code\n"
                 "void g(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[] legacy code\n"
                 "void h(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-commit,] x\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    for (long line = 2; line <= 4; line++) {
        lc_need_finding(&r, BARE, "a.c", line);
        json_t *f = lc_need_finding(&r, INVALID, "a.c", line);
        assert_non_null(strstr(lc_str(f, "message"), "suppression without a rule name"));
    }
    lc_free(&r);
}

static void an_unknown_rule_name_is_reported(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unknown-rule", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-comit] typo\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 2);
    assert_string_equal(lc_str(lc_need_finding(&r, INVALID, "a.c", 2), "message"),
                        "ignore[bare-comit]: unknown rule 'bare-comit' (see kdc-lint "
                        "--list-rules); it suppresses nothing");
    lc_free(&r);
}

static void unbalanced_blocks_are_reported_and_suppress_nothing(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unbalanced", "a.c",
             INC "// kdc-lint: ignore-end\n"
                 "// kdc-lint: ignore-begin[bare-commit] never closed\n"
                 "void f(rd_kafka_t *rk) { " COMMIT " }\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 4);
    assert_string_equal(lc_str(lc_need_finding(&r, INVALID, "a.c", 2), "message"),
                        "ignore-end without an ignore-begin before it; it suppresses nothing");
    assert_string_equal(lc_str(lc_need_finding(&r, INVALID, "a.c", 3), "message"),
                        "ignore-begin without an ignore-end after it; it suppresses nothing");
    lc_free(&r);
    lint_one(&r, "mismatched-end", "a.c",
             INC "// kdc-lint: ignore-begin[bare-commit] migrating\n"
                 "void f(rd_kafka_t *rk) { " COMMIT " }\n"
                 "// kdc-lint: ignore-end[" DLQ "]\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 3);
    assert_non_null(lc_finding(&r, INVALID, "a.c", 4));
    lc_free(&r);
}

static void unknown_directives_are_reported_and_prose_is_not(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "directives", "a.c",
             INC "// kdc-lint: disable[bare-commit] other linters' word\n"
                 "// kdc-lint: ignored[bare-commit] typo\n"
                 "// kdc-lint: this file is checked in CI\n"
                 "int x;\n",
             NULL, NULL);
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, INVALID), 2);
    assert_non_null(strstr(lc_str(lc_need_finding(&r, INVALID, "a.c", 2), "message"),
                           "unknown kdc-lint directive 'disable'"));
    lc_need_finding(&r, INVALID, "a.c", 3);
    lc_free(&r);
}

/* ---------- unused suppressions ---------- */

static const char unused_c[] = INC "// kdc-lint: ignore[bare-commit] nothing to hide any more\n"
                                   "int x;\n"
                                   "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: "
                                   "ignore[bare-commit] used\n";

static void unused_suppressions_are_silent_by_default(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-default", "a.c", unused_c, NULL, NULL);
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
}

static void report_unused_suppressions_names_the_ones_that_match_nothing(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-flag", "a.c", unused_c, "--report-unused-suppressions", NULL);
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, NULL), 1);
    assert_string_equal(lc_str(lc_need_finding(&r, UNUSED, "a.c", 2), "message"),
                        "ignore matches no finding of bare-commit on this line or the next: "
                        "remove the suppression");
    lc_free(&r);
}

/* A unit parsed with compile errors (its own include/ not on the path: the
 * pre-commit hook without -p) misses findings: its suppressions are not called
 * unused. */
static const char incomplete_c[] = INC "#include \"project/settings.h\"\n"
                                       "void f(rd_kafka_t *rk) {\n"
                                       "    rd_kafka_commit(rk, NULL, PROJECT_ASYNC); "
                                       "// kdc-lint: ignore[bare-commit] the batch owner stores "
                                       "offsets\n"
                                       "}\n";

static void suppressions_of_a_unit_with_compile_errors_are_not_called_unused(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-incomplete", "a.c", incomplete_c, "--report-unused-suppressions", NULL);
    assert_int_equal(lc_nfindings(&r, UNUSED), 0);
    lc_expect_out(&r, "\"incomplete\": 1,");
    lc_free(&r);
}

static void the_strict_profile_and_the_configuration_report_unused_suppressions(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-strict", "a.c", unused_c, "--profile=strict", NULL);
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, UNUSED, "a.c", 2);
    lc_free(&r);
    char *d = lc_dir("unused-config");
    lc_write(d, "a.c", unused_c);
    lc_write(d, ".kdc-lint.yaml", "report-unused-suppressions: true\n");
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, UNUSED, "a.c", 2);
    lc_free(&r);
    /* the configuration can turn it off in the strict profile */
    lc_write(d, ".kdc-lint.yaml", "profile: strict\nreport-unused-suppressions: false\n");
    LC(&r, d, "--format=json", "a.c");
    assert_int_equal(lc_nfindings(&r, UNUSED), 0);
    lc_free(&r);
    free(d);
}

static void an_unused_rule_in_a_list_is_named_alone(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-partial", "a.c",
             INC "void f(rd_kafka_t *rk) { " COMMIT " } // kdc-lint: ignore[bare-commit, " DLQ
                 "] x\n",
             "--report-unused-suppressions", NULL);
    lc_expect_exit(&r, 1);
    assert_null(lc_finding(&r, BARE, "a.c", 2));
    assert_string_equal(lc_str(lc_need_finding(&r, UNUSED, "a.c", 2), "message"),
                        "ignore matches no finding of " DLQ " on this line or the next: remove "
                        DLQ " from its list");
    lc_free(&r);
}

static void a_suppression_of_a_disabled_rule_is_not_called_unused(void **s) {
    (void)s;
    lc_res_t r;
    lint_one(&r, "unused-disabled", "a.c", unused_c, "--report-unused-suppressions",
             "--disable=bare-commit");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
}

static void suppressions_in_excluded_files_are_not_checked(void **s) {
    (void)s;
    char *d = lc_dir("excluded");
    lc_write(d, ".kdc-lint.yaml", "exclude: [vendor/]\nreport-unused-suppressions: true\n");
    lc_write(d, "vendor/v.c", INC "// kdc-lint: ignore[bare-commit]\n" "int v;\n");
    lc_write(d, "vendor/w.c", unused_c);
    lc_res_t r;
    LC(&r, d, "--format=json", "vendor");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, NULL), 0);
    lc_free(&r);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_suppression_on_the_finding_line_hides_it),
        cmocka_unit_test(a_block_comment_on_the_line_before_hides_it),
        cmocka_unit_test(a_suppression_after_code_covers_only_its_own_line),
        cmocka_unit_test(a_suppression_two_lines_above_does_not_reach_the_finding),
        cmocka_unit_test(a_suppression_hides_only_the_rules_it_names),
        cmocka_unit_test(several_rules_separated_by_commas_are_all_suppressed),
        cmocka_unit_test(a_block_suppresses_every_line_from_begin_to_end_and_no_further),
        cmocka_unit_test(a_finding_in_a_header_is_suppressed_in_the_header),
        cmocka_unit_test(suppression_text_inside_a_string_literal_is_not_a_comment),
        cmocka_unit_test(a_suppression_without_a_reason_is_reported_and_suppresses_nothing),
        cmocka_unit_test(an_invalid_suppression_alone_fails_the_run),
        cmocka_unit_test(a_suppression_without_a_rule_name_is_reported),
        cmocka_unit_test(an_unknown_rule_name_is_reported),
        cmocka_unit_test(unbalanced_blocks_are_reported_and_suppress_nothing),
        cmocka_unit_test(unknown_directives_are_reported_and_prose_is_not),
        cmocka_unit_test(unused_suppressions_are_silent_by_default),
        cmocka_unit_test(report_unused_suppressions_names_the_ones_that_match_nothing),
        cmocka_unit_test(suppressions_of_a_unit_with_compile_errors_are_not_called_unused),
        cmocka_unit_test(the_strict_profile_and_the_configuration_report_unused_suppressions),
        cmocka_unit_test(an_unused_rule_in_a_list_is_named_alone),
        cmocka_unit_test(a_suppression_of_a_disabled_rule_is_not_called_unused),
        cmocka_unit_test(suppressions_in_excluded_files_are_not_checked),
    };
    return cmocka_run_group_tests_name("kdc-lint suppression comments", tests, lc_setup,
                                       lc_teardown);
}
