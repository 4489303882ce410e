/*
 * kdc-lint's SARIF passes the real validator: Microsoft's SARIF Multitool
 * (npm @microsoft/sarif-multitool, pinned in tests/linter/npm/package.json and
 * installed by scripts/install-deps.sh with npm ci into tests/linter/npm).
 *
 *   test_sarif_validate    (KDC_LINT, KDC_SARIF_MULTITOOL from the environment)
 *
 * `sarif-multitool validate` exits 0 even when it reports schema errors, so
 * the verdict is read from its own SARIF log (-o): any result at level error
 * or warning (the default level) fails the test, and so does its console
 * output naming one. A second test feeds a broken copy through the same check
 * to prove the check can fail.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lintrun.h"
#include "scratch.h"

static struct {
    const char *lint, *multitool;
    char *root;
    char *sarif; /* kdc-lint's report: root/report.sarif */
} g;

/* Everything SARIF output must carry: a path rule with a code flow through a
 * helper, bare commits, file names with spaces, '%', non-ASCII and invalid
 * UTF-8, a suppressed finding, an incomplete unit, a header note and a missing input. */
static const char worker_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "static void to_dlq(rd_kafka_t *producer, rd_kafka_message_t *in) {\n"
    "    if (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(\"orders.dlq\"),\n"
    "        RD_KAFKA_V_VALUE(in->payload, in->len), RD_KAFKA_V_END)) return;\n"
    "}\n"
    "void route(rd_kafka_t *consumer, rd_kafka_t *producer, rd_kafka_message_t *in) {\n"
    "    to_dlq(producer, in);\n"
    "    rd_kafka_commit_message(consumer, in, 0);\n"
    "}\n"
    "void drain(rd_kafka_t *consumer) {\n"
    "    /* caf\xc3\xa9 \xf0\x9f\x93\xa6 */ rd_kafka_commit(consumer, NULL, 0);\n"
    "}\n";
static const char bare_c[] = "#include <librdkafka/rdkafka.h>\n"
                             "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n";
static const char suppressed_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "void g(rd_kafka_t *rk) {\n"
    "    rd_kafka_commit(rk, NULL, 0); /* kdc-lint: ignore[bare-commit] replayed at start-up */\n"
    "}\n";
static const char broken_c[] = "#include <librdkafka/rdkafka.h>\n"
                               "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); (void)undeclared_variable; }\n";

static int setup(void **state) {
    (void)state;
    g.lint = getenv("KDC_LINT");
    g.multitool = getenv("KDC_SARIF_MULTITOOL");
    if (!g.lint || !g.multitool) {
        fprintf(stderr, "test_sarif_validate: KDC_LINT and KDC_SARIF_MULTITOOL must be set\n");
        return -1;
    }
    g.root = scratch_dir("sarif");
    char *git = scratch_path(g.root, ".git");
    mkdir(git, 0755);
    free(git);
    scratch_write(g.root, "src/worker.c", worker_c);
    scratch_write(g.root, "src/dir with space/caf\xc3\xa9 50%.c", bare_c);
    scratch_write(g.root, "src/latin1-\xe9.c", bare_c);
    scratch_write(g.root, "src/broken.c", broken_c);
    scratch_write(g.root, "src/suppressed.c", suppressed_c);
    scratch_write(g.root, "src/worker.h", "void route(void);\n");
    g.sarif = scratch_path(g.root, "report.sarif");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.root);
    free(g.root);
    free(g.sarif);
    return 0;
}

/* Validates `file` with the Multitool. Returns the number of problems (results
 * at level error or warning in its log, or console lines naming one) and puts
 * a description of them in *why. */
static size_t validator_problems(const char *file, char **why) {
    if (access(g.multitool, X_OK) != 0)
        fail_msg("%s is not installed: run scripts/install-deps.sh (npm ci in tests/linter/npm)",
                 g.multitool);
    char *log = NULL;
    assert_true(asprintf(&log, "%s.validation.sarif", file) > 0);
    remove(log);
    kdc_run_t r;
    int code = scratch_run(&r, g.root, g.multitool, "validate", file, "-o", log, (char *)NULL);
    size_t len = 0, problems = 0;
    FILE *m = open_memstream(why, &len);
    if (code != 0) {
        fprintf(m, "sarif-multitool exited %d\n%s\n%s\n", code, r.out, r.err);
        problems++;
    }
    /* the console: "FILE(line,col): error CODE: message" */
    for (const char *line = r.out; line && *line;) {
        const char *eol = strchr(line, '\n');
        size_t n = eol ? (size_t)(eol - line) : strlen(line);
        char *l = strndup(line, n);
        if (strstr(l, ": error ") || strstr(l, ": warning ")) {
            fprintf(m, "console: %s\n", l);
            problems++;
        }
        free(l);
        line = eol ? eol + 1 : line + n;
    }
    /* the log: results are the problems found, at their level (default warning) */
    json_error_t e;
    json_t *doc = json_load_file(log, 0, &e);
    if (!doc) {
        fprintf(m, "no validation log %s: %s\n%s\n%s\n", log, e.text, r.out, r.err);
        problems++;
    } else {
        json_t *results = json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "results");
        if (!json_is_array(results)) {
            fprintf(m, "validation log without runs[0].results\n");
            problems++;
        }
        for (size_t i = 0; i < json_array_size(results); i++) {
            json_t *res = json_array_get(results, i);
            const char *level = json_string_value(json_object_get(res, "level"));
            if (!level)
                level = "warning";
            if (strcmp(level, "error") && strcmp(level, "warning"))
                continue;
            char *text = json_dumps(res, JSON_COMPACT);
            fprintf(m, "log: %s: %.2000s\n", level, text ? text : "?");
            free(text);
            problems++;
        }
        json_decref(doc);
    }
    fclose(m);
    kdc_run_free(&r);
    free(log);
    return problems;
}

static void kdc_sarif_passes_the_sarif_multitool_validator(void **state) {
    (void)state;
    char *out = NULL;
    assert_true(asprintf(&out, "-o%s", g.sarif) > 0);
    const char *argv[] = {g.lint,       "--format=sarif", out,         "src",
                          "src/worker.h", "src/missing.c", NULL};
    kdc_run_t r;
    assert_int_equal(kdc_run(g.root, (char *const *)argv, &r), 0);
    /* the missing input makes it exit 2; everything else is still reported */
    if (r.exit_code != 2)
        fail_msg("kdc-lint exited %d\n%s", r.exit_code, r.err);
    kdc_run_free(&r);

    /* the report has what the validator should see: results, flows, notifications */
    json_error_t e;
    json_t *doc = json_load_file(g.sarif, 0, &e);
    if (!doc)
        fail_msg("%s: %s", g.sarif, e.text);
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_t *results = json_object_get(run, "results");
    /* dlq, queue-full (to_dlq), 4 bare commits, 1 suppressed */
    assert_int_equal(json_array_size(results), 7);
    size_t flows = 0, suppressed = 0;
    for (size_t i = 0; i < json_array_size(results); i++) {
        flows += json_object_get(json_array_get(results, i), "codeFlows") != NULL;
        suppressed += json_object_get(json_array_get(results, i), "suppressions") != NULL;
    }
    assert_int_equal(flows, 1);
    assert_int_equal(suppressed, 1);
    json_t *inv = json_array_get(json_object_get(run, "invocations"), 0);
    /* an input error, an incomplete unit, a header note */
    assert_int_equal(json_array_size(json_object_get(inv, "toolExecutionNotifications")), 3);
    json_decref(doc);

    char *why = NULL;
    size_t problems = validator_problems(g.sarif, &why);
    if (problems)
        fail_msg("the SARIF Multitool found %zu problem(s) in %s:\n%s", problems, g.sarif, why);
    free(why);
    free(out);
}

/* The check above can fail: a schema violation and a missing required
 * property are reported by the same function. */
static void a_broken_sarif_file_fails_the_same_check(void **state) {
    (void)state;
    json_error_t e;
    json_t *doc = json_load_file(g.sarif, 0, &e);
    if (!doc)
        fail_msg("%s: %s (the first test writes it)", g.sarif, e.text);
    json_t *run = json_array_get(json_object_get(doc, "runs"), 0);
    json_object_set_new(doc, "version", json_string("2.0.9"));
    json_object_del(json_array_get(json_object_get(run, "results"), 0), "message");
    char *bad = scratch_path(g.root, "broken.sarif");
    assert_int_equal(json_dump_file(doc, bad, JSON_INDENT(2)), 0);
    json_decref(doc);
    char *why = NULL;
    size_t problems = validator_problems(bad, &why);
    if (problems < 2)
        fail_msg("expected at least 2 problems in %s, got %zu:\n%s", bad, problems, why);
    if (!strstr(why, "error"))
        fail_msg("no error level among the problems:\n%s", why);
    free(why);
    free(bad);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kdc_sarif_passes_the_sarif_multitool_validator),
        cmocka_unit_test(a_broken_sarif_file_fails_the_same_check),
    };
    return cmocka_run_group_tests_name("lint.sarif_validator", tests, setup, teardown);
}
