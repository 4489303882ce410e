/*
 * .kdc-lint.yaml as a service meets it (lint.config): discovery (nearest
 * wins, --config), every key, precedence of the command line, excludes,
 * severities in text and JSON, function roles and DLQ patterns changing the
 * findings, --dump-config, and malformed files (FILE:LINE:COLUMN, exit 2,
 * the other inputs still analysed). Every test asserts the exit code and the
 * finding or message that matters.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lintcase.h"

/* bare-commit at 2:26 in the default profile. */
static const char bare_c[] = "#include <librdkafka/rdkafka.h>\n"
                             "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n";

/* bare-commit at line 11 in the strict profile only: the consumer stores
 * offsets explicitly with enable.auto.offset.store=false. */
static const char strict_only_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "static rd_kafka_t *mk(void) {\n"
    "    char e[256];\n"
    "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
    "    rd_kafka_conf_set(conf, \"enable.auto.offset.store\", \"false\", e, sizeof e);\n"
    "    return rd_kafka_new(RD_KAFKA_CONSUMER, conf, e, sizeof e);\n"
    "}\n"
    "void loop(void) {\n"
    "    rd_kafka_t *rk = mk();\n"
    "    rd_kafka_offsets_store(rk, NULL);\n"
    "    rd_kafka_commit(rk, NULL, 0);\n"
    "}\n";

/* DLQ routing through functions of an external library (not analysed):
 * line 11 is reported unless extlib_wait_delivered() is a configured
 * confirm function; line 17 is reported only when svc_send() is a
 * configured produce function (its topic argument names the DLQ). */
static const char roles_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "int extlib_wait_delivered(rd_kafka_t *p, int timeout_ms);\n"
    "int svc_send(rd_kafka_t *p, const char *topic, const void *payload, size_t len);\n"
    "\n"
    "void park(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders.dlq\"),\n"
    "                          RD_KAFKA_V_VALUE(in->payload, in->len), RD_KAFKA_V_END))\n"
    "        return;\n"
    "    extlib_wait_delivered(p, 5000);\n"
    "\n"
    "    rd_kafka_commit_message(c, in, 0);\n"
    "}\n"
    "\n"
    "void park_wrapped(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in) {\n"
    "    if (svc_send(p, \"orders.dlq\", in->payload, in->len))\n"
    "        return;\n"
    "    rd_kafka_commit_message(c, in, 0);\n"
    "}\n";

/* Dead-letter destinations by pattern: "orders.parking" (line 5), a topic
 * parameter named quarantine_topic (line 10), "orders.dlq" (line 15, a
 * built-in pattern). Each produce is followed by an unconfirmed commit. */
static const char dlq_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "void park(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders.parking\"), RD_KAFKA_V_END))\n"
    "        return;\n"
    "    rd_kafka_commit_message(c, in, 0);\n"
    "}\n"
    "void hold(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in, const char *quarantine_topic) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(quarantine_topic), RD_KAFKA_V_END))\n"
    "        return;\n"
    "    rd_kafka_commit_message(c, in, 0);\n"
    "}\n"
    "void dead(rd_kafka_t *c, rd_kafka_t *p, rd_kafka_message_t *in) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders.dlq\"), RD_KAFKA_V_END))\n"
    "        return;\n"
    "    rd_kafka_commit_message(c, in, 0);\n"
    "}\n";

#define DLQ "unconfirmed-dlq-routing"
#define BARE "bare-commit"

/* ---------- discovery ---------- */

static void a_configuration_next_to_the_file_applies_to_it(void **s) {
    (void)s;
    char *d = lc_dir("next-to-file");
    lc_write(d, "svc/a.c", bare_c);
    lc_write(d, "svc/.kdc-lint.yaml", "rules:\n  bare-commit: {severity: error}\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "svc/a.c");
    lc_expect_exit(&r, 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "svc/a.c", 2), "severity"), "error");
    lc_free(&r);
    free(d);
}

static void the_nearest_configuration_wins_and_is_not_merged_with_those_above(void **s) {
    (void)s;
    char *d = lc_dir("nearest");
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit: false\n");
    lc_write(d, "svc/.kdc-lint.yaml", "rules:\n  bare-commit: {severity: note}\n");
    lc_write(d, "top.c", bare_c);
    lc_write(d, "svc/deep/er/a.c", bare_c);
    lc_res_t r;
    LC(&r, d, "--format=json", ".");
    lc_expect_exit(&r, 1);
    /* top.c: the root configuration disables the rule; svc/deep/er/a.c: the
     * nearest (svc/) only sets a severity, and the root's disable does not reach it */
    assert_null(lc_finding(&r, BARE, "top.c", 2));
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "svc/deep/er/a.c", 2), "severity"),
                        "note");
    assert_int_equal(lc_nfindings(&r, NULL), 1);
    lc_free(&r);
    free(d);
}

static void config_option_makes_one_file_apply_everywhere_and_turns_discovery_off(void **s) {
    (void)s;
    char *d = lc_dir("explicit");
    lc_write(d, "svc/a.c", bare_c);
    lc_write(d, "svc/.kdc-lint.yaml", "rules:\n  bare-commit: {severity: error}\n");
    lc_write(d, "ci/lint.yaml", "rules:\n  bare-commit: {severity: note}\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "--config", "ci/lint.yaml", "svc/a.c");
    lc_expect_exit(&r, 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "svc/a.c", 2), "severity"), "note");
    lc_free(&r);
    LC(&r, d, "--config=ci/missing.yaml", "svc/a.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, "kdc-lint: error: ci/missing.yaml: cannot read the configuration: No such "
                      "file or directory");
    lc_expect_no_out(&r, "[bare-commit]");
    lc_free(&r);
    free(d);
}

static void an_empty_configuration_file_is_valid_and_changes_nothing(void **s) {
    (void)s;
    char *d = lc_dir("empty");
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", "# nothing configured yet\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "a.c", 2), "severity"), "warning");
    lc_free(&r);
    free(d);
}

/* ---------- every key ---------- */

static void profile_strict_in_the_configuration_applies_the_strict_profile(void **s) {
    (void)s;
    char *d = lc_dir("profile");
    lc_write(d, "plain/st.c", strict_only_c);
    lc_write(d, "strict/st.c", strict_only_c);
    lc_write(d, "strict/.kdc-lint.yaml", "profile: strict\n");
    lc_res_t r;
    /* one run, two profiles: each file gets its own */
    LC(&r, d, "--format=json", "plain", "strict");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "strict/st.c", 11);
    assert_null(lc_finding(&r, BARE, "plain/st.c", 11));
    lc_free(&r);
    free(d);
}

static void rules_switch_off_and_on_with_a_boolean_or_enabled(void **s) {
    (void)s;
    char *d = lc_dir("rules-onoff");
    lc_write(d, "off/a.c", bare_c);
    lc_write(d, "off/.kdc-lint.yaml", "rules:\n  bare-commit: off\n");
    lc_write(d, "off2/a.c", bare_c);
    lc_write(d, "off2/.kdc-lint.yaml", "rules:\n  bare-commit:\n    enabled: false\n");
    lc_write(d, "on/a.c", bare_c);
    lc_write(d, "on/.kdc-lint.yaml", "rules:\n  bare-commit: {enabled: true}\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "off", "off2", "on");
    lc_expect_exit(&r, 1);
    assert_int_equal(lc_nfindings(&r, BARE), 1);
    lc_need_finding(&r, BARE, "on/a.c", 2);
    lc_free(&r);
    LC(&r, d, "off", "off2");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    free(d);
}

static void a_severity_override_shows_in_text_and_json(void **s) {
    (void)s;
    char *d = lc_dir("severity");
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit:\n    severity: error\n");
    lc_res_t r;
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 1);
    lc_expect_out(&r, "a.c:2:26: error: rd_kafka_commit without an offset list");
    lc_free(&r);
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "a.c", 2), "severity"), "error");
    lc_free(&r);
    /* a note is still a finding: it counts for the exit code */
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit: {severity: note}\n");
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 1);
    lc_expect_out(&r, "a.c:2:26: note: rd_kafka_commit without an offset list");
    lc_free(&r);
    free(d);
}

static void exclude_globs_drop_findings_below_the_configuration(void **s) {
    (void)s;
    char *d = lc_dir("exclude");
    lc_write(d, ".kdc-lint.yaml",
             "exclude:\n"
             "  - src/generated/**    # anchored: this directory and below\n"
             "  - vendor/             # a directory named vendor anywhere\n"
             "  - '*_test.c'          # a file name anywhere\n"
             "  - gen/*.c             # anchored at this directory: not src/gen\n");
    lc_write(d, "src/a.c", bare_c);
    lc_write(d, "src/generated/x/b.c", bare_c);
    lc_write(d, "lib/vendor/c.c", bare_c);
    lc_write(d, "src/d_test.c", bare_c);
    lc_write(d, "src/gen/e.c", bare_c);
    lc_res_t r;
    LC(&r, d, "--format=json", ".");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "src/a.c", 2);
    lc_need_finding(&r, BARE, "src/gen/e.c", 2);
    assert_int_equal(lc_nfindings(&r, NULL), 2);
    lc_free(&r);
    /* everything excluded: exit 0 */
    LC(&r, d, "src/generated", "lib", "src/d_test.c");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    free(d);
}

static void dlq_topic_and_name_patterns_add_dead_letter_destinations(void **s) {
    (void)s;
    char *d = lc_dir("dlq-patterns");
    lc_write(d, "builtin/dlq.c", dlq_c);
    lc_write(d, "added/dlq.c", dlq_c);
    lc_write(d, "added/.kdc-lint.yaml", "dlq:\n  topics: ['*.parking']\n  names: [quarantine*]\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "builtin/dlq.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "builtin/dlq.c", 15);
    assert_int_equal(lc_nfindings(&r, DLQ), 1);
    lc_free(&r);
    LC(&r, d, "--format=json", "added/dlq.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "added/dlq.c", 5);
    lc_need_finding(&r, DLQ, "added/dlq.c", 10);
    lc_need_finding(&r, DLQ, "added/dlq.c", 15);
    lc_free(&r);
    free(d);
}

static void dlq_defaults_false_keeps_only_the_configured_patterns(void **s) {
    (void)s;
    char *d = lc_dir("dlq-nodefaults");
    lc_write(d, "dlq.c", dlq_c);
    lc_write(d, ".kdc-lint.yaml", "dlq:\n  defaults: false\n  topics: ['*.parking']\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "dlq.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "dlq.c", 5);
    assert_int_equal(lc_nfindings(&r, DLQ), 1); /* not "orders.dlq", not quarantine_topic */
    lc_free(&r);
    free(d);
}

static void a_configured_confirm_function_makes_the_dlq_finding_go_away(void **s) {
    (void)s;
    char *d = lc_dir("role-confirm");
    lc_write(d, "roles.c", roles_c);
    lc_res_t r;
    LC(&r, d, "--format=json", "roles.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "roles.c", 11);
    assert_int_equal(lc_nfindings(&r, DLQ), 1);
    lc_free(&r);
    lc_write(d, ".kdc-lint.yaml", "functions:\n  confirm: [extlib_wait_*]\n");
    LC(&r, d, "--format=json", "roles.c");
    lc_expect_exit(&r, 0);
    assert_int_equal(lc_nfindings(&r, DLQ), 0);
    lc_free(&r);
    free(d);
}

static void a_configured_produce_function_to_a_dlq_name_creates_a_finding(void **s) {
    (void)s;
    char *d = lc_dir("role-produce");
    lc_write(d, "roles.c", roles_c);
    lc_write(d, ".kdc-lint.yaml",
             "functions:\n  confirm: [extlib_wait_delivered]\n  produce: [svc_send]\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "roles.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "roles.c", 17);
    assert_int_equal(lc_nfindings(&r, DLQ), 1);
    lc_free(&r);
    free(d);
}

static void a_configured_commit_function_counts_as_the_commit(void **s) {
    (void)s;
    char *d = lc_dir("role-commit");
    lc_write(d, "a.c",
             "#include <librdkafka/rdkafka.h>\n"
             "void svc_ack_input(rd_kafka_message_t *in);\n"
             "void park(rd_kafka_t *p, rd_kafka_message_t *in) {\n"
             "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders.dlq\"), RD_KAFKA_V_END))\n"
             "        return;\n"
             "    svc_ack_input(in);\n"
             "}\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    lc_write(d, ".kdc-lint.yaml", "functions:\n  commit: [svc_ack_*]\n");
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "a.c", 6);
    lc_free(&r);
    free(d);
}

static void function_roles_are_the_union_over_the_configurations_of_the_run(void **s) {
    (void)s;
    char *d = lc_dir("role-union");
    lc_write(d, "lib/.kdc-lint.yaml", "functions:\n  confirm: [extlib_wait_delivered]\n");
    lc_write(d, "lib/x.c", "int lib_x;\n");
    lc_write(d, "svc/roles.c", roles_c);
    lc_res_t r;
    /* svc/ has no configuration, but lib/'s is in the run: facts are computed once */
    LC(&r, d, "--format=json", "lib", "svc");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    LC(&r, d, "--format=json", "svc");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, DLQ, "svc/roles.c", 11);
    lc_free(&r);
    free(d);
}

static void every_key_together_is_accepted_and_dumped(void **s) {
    (void)s;
    char *d = lc_dir("every-key");
    lc_write(d, ".kdc-lint.yaml",
             "profile: strict\n"
             "report-unused-suppressions: false\n"
             "rules:\n"
             "  bare-commit: {enabled: true, severity: error}\n"
             "  unconfirmed-dlq-routing: false\n"
             "exclude: [third_party/]\n"
             "dlq:\n"
             "  topics: ['*.parking']\n"
             "  names: [quarantine*]\n"
             "  defaults: true\n"
             "functions:\n"
             "  produce: [svc_send]\n"
             "  commit: [svc_ack_input]\n"
             "  confirm: ['extlib::wait*']\n"
             "  ack: [upstream_release]\n"
             "  effect: [db_write, 'Sink::put']\n"
             "  poison-classifier: [is_poison]\n");
    lc_write(d, "a.c", bare_c);
    lc_res_t r;
    LC(&r, d, "--dump-config", "a.c");
    lc_expect_exit(&r, 0);
    json_error_t e;
    json_t *j = json_loads(r.run.out, 0, &e);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "configuration")), ".kdc-lint.yaml");
    assert_string_equal(json_string_value(json_object_get(j, "profile")), "strict");
    assert_true(json_is_false(json_object_get(j, "report-unused-suppressions")));
    assert_true(json_is_false(json_object_get(j, "excluded")));
    json_t *rules = json_object_get(j, "rules");
    assert_string_equal(json_string_value(json_object_get(json_object_get(rules, BARE), "severity")),
                        "error");
    assert_true(json_is_false(json_object_get(json_object_get(rules, DLQ), "enabled")));
    json_t *fns = json_object_get(j, "functions");
    assert_string_equal(json_string_value(json_array_get(json_object_get(fns, "effect"), 1)),
                        "Sink::put");
    assert_string_equal(
        json_string_value(json_array_get(json_object_get(fns, "poison-classifier"), 0)),
        "is_poison");
    assert_string_equal(json_string_value(json_array_get(json_object_get(fns, "ack"), 0)),
                        "upstream_release");
    json_t *topics = json_object_get(json_object_get(j, "dlq"), "topics");
    assert_string_equal(json_string_value(json_array_get(topics, 0)), "*.parking");
    assert_true(json_array_size(topics) > 1); /* the built-in patterns follow */
    json_decref(j);
    lc_free(&r);
    LC(&r, d, "--format=json", "a.c");
    lc_expect_exit(&r, 1);
    assert_string_equal(lc_str(lc_need_finding(&r, BARE, "a.c", 2), "severity"), "error");
    lc_free(&r);
    free(d);
}

/* ---------- precedence ---------- */

static void enable_on_the_command_line_beats_a_disable_in_the_configuration(void **s) {
    (void)s;
    char *d = lc_dir("prec-enable");
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit: false\n");
    lc_res_t r;
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    LC(&r, d, "--format=json", "--enable=bare-commit", "a.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "a.c", 2);
    lc_free(&r);
    free(d);
}

static void disable_on_the_command_line_beats_the_configuration(void **s) {
    (void)s;
    char *d = lc_dir("prec-disable");
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit: {enabled: true, severity: error}\n");
    lc_res_t r;
    LC(&r, d, "--disable=bare-commit", "a.c");
    lc_expect_exit(&r, 0);
    lc_free(&r);
    free(d);
}

static void profile_on_the_command_line_beats_the_configured_profile(void **s) {
    (void)s;
    char *d = lc_dir("prec-profile");
    lc_write(d, "st.c", strict_only_c);
    lc_write(d, ".kdc-lint.yaml", "profile: strict\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "st.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, BARE, "st.c", 11);
    lc_free(&r);
    LC(&r, d, "--format=json", "--profile=default", "st.c");
    assert_null(lc_finding(&r, BARE, "st.c", 11));
    lc_expect_exit(&r, 0);
    lc_free(&r);
    /* the configuration's own rule settings still apply on top of --profile */
    lc_write(d, ".kdc-lint.yaml", "rules:\n  bare-commit: false\n");
    LC(&r, d, "--format=json", "--profile=strict", "st.c");
    assert_int_equal(lc_nfindings(&r, BARE), 0);
    lc_free(&r);
    free(d);
}

static void dump_config_shows_the_command_line_overrides(void **s) {
    (void)s;
    char *d = lc_dir("prec-dump");
    lc_write(d, "svc/a.c", bare_c);
    lc_write(d, "svc/.kdc-lint.yaml", "profile: strict\nrules:\n  bare-commit: false\n");
    lc_res_t r;
    LC(&r, d, "--dump-config=svc/a.c", "--profile=default", "--enable=bare-commit",
       "--report-unused-suppressions");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"configuration\": \"svc/.kdc-lint.yaml\"");
    lc_expect_out(&r, "\"profile\": \"default\"");
    lc_expect_out(&r, "\"report-unused-suppressions\": true");
    lc_expect_out(&r, "\"bare-commit\": {\n      \"enabled\": true");
    lc_free(&r);
    /* a directory path, and a path with no configuration above it */
    LC(&r, d, "--dump-config", "svc");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"configuration\": \"svc/.kdc-lint.yaml\"");
    lc_free(&r);
    free(d);
}

static void dump_config_says_whether_a_path_is_excluded(void **s) {
    (void)s;
    char *d = lc_dir("dump-excluded");
    lc_write(d, ".kdc-lint.yaml", "exclude: [vendor/]\n");
    lc_res_t r;
    LC(&r, d, "--dump-config", "vendor/lib/x.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"excluded\": true");
    lc_free(&r);
    LC(&r, d, "--dump-config", "src/x.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"excluded\": false");
    lc_free(&r);
    free(d);
}

/* ---------- malformed configurations ---------- */

/* Writes `yaml` as d/.kdc-lint.yaml next to a.c, runs kdc-lint on a.c and
 * expects exit 2 with `message` on stderr and no finding. */
static void expect_config_error(const char *name, const char *yaml, const char *message) {
    char *d = lc_dir(name);
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", yaml);
    lc_res_t r;
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, message);
    lc_expect_no_out(&r, "[bare-commit]");
    lc_free(&r);
    /* --dump-config names the same error */
    LC(&r, d, "--dump-config", "a.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, message);
    lc_free(&r);
    free(d);
}

static void yaml_syntax_errors_give_file_line_and_column(void **s) {
    (void)s;
    expect_config_error("bad-syntax", "profile: strict\nrules: [bare-commit\n",
                        "kdc-lint: error: .kdc-lint.yaml:3:1: invalid YAML: did not find expected "
                        "',' or ']'");
    expect_config_error("bad-indent", "rules:\n  bare-commit: false\n severity: x\n",
                        "kdc-lint: error: .kdc-lint.yaml:3:2: invalid YAML:");
    expect_config_error("bad-tab", "rules:\n\tbare-commit: false\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:1: invalid YAML:");
}

static void unknown_keys_are_named_with_their_position_and_the_accepted_keys(void **s) {
    (void)s;
    expect_config_error("unknown-top", "profile: strict\nprofil: default\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:1: unknown key 'profil' (expected one "
                        "of: profile, rules, exclude, dlq, functions, acknowledge, "
                        "report-unused-suppressions)");
    expect_config_error("unknown-rule", "rules:\n  bare-comit: false\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:3: rules: unknown rule 'bare-comit' "
                        "(see kdc-lint --list-rules)");
    expect_config_error("unknown-rule-key", "rules:\n  bare-commit: {enabled: true, level: error}\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:32: rules: bare-commit: unknown key "
                        "'level' (expected one of: enabled, severity)");
    expect_config_error("unknown-role", "functions:\n  confirms: [wait]\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:3: functions: unknown key 'confirms' "
                        "(expected one of: produce, commit, confirm, ack, effect, "
                        "poison-classifier, consume, presets)");
    expect_config_error("unknown-dlq", "dlq:\n  topic: ['*.x']\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:3: dlq: unknown key 'topic' (expected "
                        "one of: topics, names, defaults)");
}

static void wrong_types_are_errors_naming_the_expected_type(void **s) {
    (void)s;
    expect_config_error("type-root", "- profile\n",
                        ".kdc-lint.yaml:1:1: a configuration is a mapping of keys");
    expect_config_error("type-profile", "profile: [strict]\n",
                        ".kdc-lint.yaml:1:10: profile must be a string, not a list");
    expect_config_error("type-exclude", "exclude: vendor\n",
                        ".kdc-lint.yaml:1:10: exclude must be a list of strings, not a string");
    expect_config_error("type-exclude-item", "exclude:\n  - [a, b]\n",
                        ".kdc-lint.yaml:2:5: exclude item 1 must be a string, not a list");
    expect_config_error("type-rule", "rules:\n  bare-commit: maybe\n",
                        ".kdc-lint.yaml:2:16: rules: bare-commit must be true, false or a mapping "
                        "with 'enabled' and 'severity', not 'maybe'");
    expect_config_error("type-enabled", "rules:\n  bare-commit: {enabled: \"true\"}\n",
                        ".kdc-lint.yaml:2:26: rules: bare-commit: enabled must be true or false, "
                        "not 'true'");
    expect_config_error("type-rules", "rules: [bare-commit]\n",
                        ".kdc-lint.yaml:1:8: rules must be a mapping, not a list");
    expect_config_error("type-functions", "functions:\n  confirm: wait_delivered\n",
                        ".kdc-lint.yaml:2:12: functions: confirm must be a list of strings, not a "
                        "string");
    expect_config_error("type-defaults", "dlq: {defaults: 0}\n",
                        ".kdc-lint.yaml:1:17: dlq: defaults must be true or false, not '0'");
    expect_config_error("type-unused", "report-unused-suppressions: [yes]\n",
                        ".kdc-lint.yaml:1:29: report-unused-suppressions must be true or false, "
                        "not a list");
}

static void bad_values_are_errors_naming_the_choices(void **s) {
    (void)s;
    expect_config_error("value-profile", "profile: lenient\n",
                        ".kdc-lint.yaml:1:10: profile: 'lenient' is not one of default, strict");
    expect_config_error("value-severity", "rules:\n  bare-commit: {severity: fatal}\n",
                        ".kdc-lint.yaml:2:27: rules: bare-commit: severity: 'fatal' is not one of "
                        "note, warning, error");
    expect_config_error("value-empty-pattern", "functions:\n  confirm: ['']\n",
                        ".kdc-lint.yaml:2:13: functions: confirm item 1 is empty");
    expect_config_error("value-dotdot", "exclude: ['../other']\n",
                        ".kdc-lint.yaml:1:11: exclude item 1 cannot leave the configuration's "
                        "directory ('..')");
    expect_config_error("value-duplicate", "profile: strict\nrules: {}\nprofile: default\n",
                        ".kdc-lint.yaml:3:1: duplicate key 'profile' (first at line 1)");
    expect_config_error("value-two-documents", "profile: strict\n---\nprofile: default\n",
                        ".kdc-lint.yaml:3:1: more than one YAML document; a configuration is one");
}

static void every_error_of_a_file_is_reported_not_only_the_first(void **s) {
    (void)s;
    char *d = lc_dir("many-errors");
    lc_write(d, "a.c", bare_c);
    lc_write(d, ".kdc-lint.yaml", "profil: strict\nrules:\n  nope: true\nexclude: x\n");
    lc_res_t r;
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, ".kdc-lint.yaml:1:1: unknown key 'profil'");
    lc_expect_err(&r, ".kdc-lint.yaml:3:3: rules: unknown rule 'nope'");
    lc_expect_err(&r, ".kdc-lint.yaml:4:10: exclude must be a list of strings");
    lc_free(&r);
    free(d);
}

static void binary_and_non_file_configurations_are_errors_not_crashes(void **s) {
    (void)s;
    static const char binary[] = "profile: \x01\x02\xff\xfe strict\n";
    expect_config_error("binary", binary, ".kdc-lint.yaml:1:");
    char *d = lc_dir("config-dir");
    lc_write(d, "a.c", bare_c);
    char *p = NULL;
    if (asprintf(&p, "%s/.kdc-lint.yaml", d) < 0)
        abort();
    assert_int_equal(mkdir(p, 0755), 0);
    lc_res_t r;
    LC(&r, d, "a.c");
    lc_expect_exit(&r, 2);
    lc_expect_err(&r, "kdc-lint: error: .kdc-lint.yaml: the configuration is not a regular file");
    lc_free(&r);
    free(p);
    free(d);
}

static void a_broken_configuration_stops_only_the_files_it_governs(void **s) {
    (void)s;
    char *d = lc_dir("broken-sub");
    lc_write(d, "ok/a.c", bare_c);
    lc_write(d, "broken/b.c", bare_c);
    lc_write(d, "broken/.kdc-lint.yaml", "profile: [\n");
    lc_res_t r;
    LC(&r, d, "--format=json", "ok", "broken");
    lc_expect_exit(&r, 2);
    lc_need_finding(&r, BARE, "ok/a.c", 2);
    assert_null(lc_finding(&r, BARE, "broken/b.c", 2));
    lc_expect_out(&r, "\"file\": \"broken/.kdc-lint.yaml:2:1\"");
    lc_expect_err(&r, "kdc-lint: error: broken/.kdc-lint.yaml: invalid configuration: the 1 "
                      "translation unit it governs was not analysed");
    lc_free(&r);
    free(d);
}

static void the_example_configuration_of_the_docs_is_valid(void **s) {
    (void)s;
    const char *doc = getenv("KDC_CONFIGURATION_DOC");
    assert_non_null(doc);
    char *text = lc_read("/", doc[0] == '/' ? doc + 1 : doc);
    const char *start = strstr(text, "```yaml\n# .kdc-lint.yaml\n");
    assert_non_null(start);
    start += strlen("```yaml\n");
    const char *end = strstr(start, "```");
    assert_non_null(end);
    char *yaml = strndup(start, (size_t)(end - start));
    char *d = lc_dir("doc");
    lc_write(d, ".kdc-lint.yaml", yaml);
    lc_res_t r;
    LC(&r, d, "--dump-config", "src/worker.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"configuration\": \".kdc-lint.yaml\"");
    lc_free(&r);
    LC(&r, d, "--dump-config", "src/generated/x.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"excluded\": true");
    lc_free(&r);
    free(d);
    free(yaml);
    free(text);
}

/* A relay whose framework takes a return value as "done" (a plugin API of its own). */
static const char *const plugin_c =
    "#include <librdkafka/rdkafka.h>\n"
    "enum relay_result { RELAY_DONE, RELAY_RETRY };\n"
    "enum relay_result relay_send(rd_kafka_t *p, const char *line, int len) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"logs\"), RD_KAFKA_V_VALUE((void *)line, len),\n"
    "                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END))\n"
    "        return RELAY_RETRY;\n"
    "    return RELAY_DONE;\n"
    "}\n"
    "void relay_ack(int status);\n"
    "void relay_send_cb(rd_kafka_t *p, const char *line, int len) {\n"
    "    if (rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"logs\"), RD_KAFKA_V_VALUE((void *)line, len),\n"
    "                          RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY), RD_KAFKA_V_END)) {\n"
    "        relay_ack(1);\n"
    "        return;\n"
    "    }\n"
    "    relay_ack(0);\n"
    "}\n";

static void configured_acknowledgements_by_return_value_and_by_argument(void **s) {
    (void)s;
    char *d = lc_dir("acknowledge");
    lc_write(d, "plugin.c", plugin_c);
    lc_res_t r;
    LC(&r, d, "--format=json", "plugin.c");
    lc_expect_exit(&r, 0); /* nothing says what acknowledges */
    lc_free(&r);
    lc_write(d, ".kdc-lint.yaml",
             "acknowledge:\n  returns: [\"relay_send=RELAY_DONE\"]\n  calls: [\"relay_ack(0)\"]\n");
    LC(&r, d, "--format=json", "plugin.c");
    lc_expect_exit(&r, 1);
    lc_need_finding(&r, "commit-before-delivery-report", "plugin.c", 7);  /* return RELAY_DONE */
    lc_need_finding(&r, "commit-before-delivery-report", "plugin.c", 16); /* relay_ack(0) */
    assert_int_equal(lc_nfindings(&r, "commit-before-delivery-report"), 2); /* not RETRY, not (1) */
    lc_free(&r);
    LC(&r, d, "--dump-config", "plugin.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"relay_send=RELAY_DONE\"");
    lc_expect_out(&r, "\"relay_ack(0)\"");
    lc_expect_out(&r, "\"*=LTR_SUCCESS\""); /* the presets stay */
    lc_expect_out(&r, "\"presets\": true");
    lc_free(&r);
    lc_write(d, ".kdc-lint.yaml", "acknowledge:\n  presets: false\n");
    LC(&r, d, "--dump-config", "plugin.c");
    lc_expect_exit(&r, 0);
    lc_expect_out(&r, "\"returns\": []");
    lc_expect_out(&r, "\"presets\": false");
    lc_free(&r);
    free(d);
}

static void malformed_acknowledgements_are_errors(void **s) {
    (void)s;
    expect_config_error("ack-return", "acknowledge:\n  returns: [doAction]\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:13: acknowledge: returns item 1 is "
                        "not FUNCTION=VALUE");
    expect_config_error("ack-call", "acknowledge:\n  calls: [\"done(a b)\"]\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:11: acknowledge: calls item 1 is not "
                        "FUNCTION(VALUE)");
    expect_config_error("ack-key", "acknowledge:\n  return: [\"f=1\"]\n",
                        "kdc-lint: error: .kdc-lint.yaml:2:3: acknowledge: unknown key 'return'");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_configuration_next_to_the_file_applies_to_it),
        cmocka_unit_test(the_nearest_configuration_wins_and_is_not_merged_with_those_above),
        cmocka_unit_test(config_option_makes_one_file_apply_everywhere_and_turns_discovery_off),
        cmocka_unit_test(an_empty_configuration_file_is_valid_and_changes_nothing),
        cmocka_unit_test(profile_strict_in_the_configuration_applies_the_strict_profile),
        cmocka_unit_test(rules_switch_off_and_on_with_a_boolean_or_enabled),
        cmocka_unit_test(a_severity_override_shows_in_text_and_json),
        cmocka_unit_test(exclude_globs_drop_findings_below_the_configuration),
        cmocka_unit_test(dlq_topic_and_name_patterns_add_dead_letter_destinations),
        cmocka_unit_test(dlq_defaults_false_keeps_only_the_configured_patterns),
        cmocka_unit_test(a_configured_confirm_function_makes_the_dlq_finding_go_away),
        cmocka_unit_test(a_configured_produce_function_to_a_dlq_name_creates_a_finding),
        cmocka_unit_test(a_configured_commit_function_counts_as_the_commit),
        cmocka_unit_test(function_roles_are_the_union_over_the_configurations_of_the_run),
        cmocka_unit_test(every_key_together_is_accepted_and_dumped),
        cmocka_unit_test(enable_on_the_command_line_beats_a_disable_in_the_configuration),
        cmocka_unit_test(disable_on_the_command_line_beats_the_configuration),
        cmocka_unit_test(profile_on_the_command_line_beats_the_configured_profile),
        cmocka_unit_test(dump_config_shows_the_command_line_overrides),
        cmocka_unit_test(dump_config_says_whether_a_path_is_excluded),
        cmocka_unit_test(yaml_syntax_errors_give_file_line_and_column),
        cmocka_unit_test(unknown_keys_are_named_with_their_position_and_the_accepted_keys),
        cmocka_unit_test(wrong_types_are_errors_naming_the_expected_type),
        cmocka_unit_test(bad_values_are_errors_naming_the_choices),
        cmocka_unit_test(every_error_of_a_file_is_reported_not_only_the_first),
        cmocka_unit_test(binary_and_non_file_configurations_are_errors_not_crashes),
        cmocka_unit_test(a_broken_configuration_stops_only_the_files_it_governs),
        cmocka_unit_test(the_example_configuration_of_the_docs_is_valid),
        cmocka_unit_test(configured_acknowledgements_by_return_value_and_by_argument),
        cmocka_unit_test(malformed_acknowledgements_are_errors),
    };
    return cmocka_run_group_tests_name("kdc-lint configuration (.kdc-lint.yaml)", tests,
                                       lc_setup, lc_teardown);
}
