/*
 * kdc-lint's report formats as CI meets them: SARIF for GitHub code scanning
 * (rule metadata from the embedded docs, locations relative to the repository
 * root, related locations, code flows, fingerprints that survive line
 * shifts), GitHub Actions annotations (escaping, locations), colour in text
 * output (--color, NO_COLOR, terminals) and the closing summary line.
 *
 *   test_output            (KDC_LINT, KDC_RULES_DIR from the environment)
 *
 * Each test lints files in a scratch repository (a directory with .git) from
 * its subdirectory svc/, so paths relative to the repository root ("svc/...")
 * differ from paths relative to the working directory.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <jansson.h>
#include <pty.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lintrun.h"
#include "scratch.h"

/* Line numbers matter: the tests assert them. */
static const char worker_c[] =
    "#include <librdkafka/rdkafka.h>\n"                                            /*  1 */
    "\n"                                                                           /*  2 */
    "static void to_dlq(rd_kafka_t *producer, rd_kafka_message_t *in) {\n"         /*  3 */
    "    if (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(\"orders.dlq\"),\n"       /*  4 */
    "        RD_KAFKA_V_VALUE(in->payload, in->len), RD_KAFKA_V_END)) return;\n"      /*  5 */
    "}\n"                                                                          /*  6 */
    "\n"                                                                           /*  7 */
    "void route(rd_kafka_t *consumer, rd_kafka_t *producer, rd_kafka_message_t *in) {\n" /*  8 */
    "    to_dlq(producer, in);\n"                                                  /*  9 */
    "    rd_kafka_commit_message(consumer, in, 0);\n"                              /* 10 */
    "}\n"                                                                          /* 11 */
    "\n"                                                                           /* 12 */
    "void drain(rd_kafka_t *consumer) {\n"                                         /* 13 */
    "    rd_kafka_commit(consumer, NULL, 0);\n"                                    /* 14 */
    "    rd_kafka_commit(consumer, NULL, 0);\n"                                    /* 15 */
    "}\n";                                                                         /* 16 */

/* One bare commit at 2:26, in a file whose name needs escaping everywhere. */
static const char odd_name[] = "odd/50%,a:b.c";
static const char odd_c[] = "#include <librdkafka/rdkafka.h>\n"
                            "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n";

static struct {
    const char *lint, *rules_dir;
    char *root; /* scratch repository */
    char *svc;  /* root/svc: the working directory of every run */
} g;

/* ---------- running kdc-lint ---------- */

typedef struct res {
    kdc_run_t run;
    char *cmd;
} res_t;

static void lint_v(res_t *r, const char *cwd, va_list ap) {
    const char *argv[32];
    size_t n = 0;
    argv[n++] = g.lint;
    for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
        argv[n++] = a;
    argv[n] = NULL;
    char buf[2048];
    r->cmd = strdup(kdc_argv_str((char *const *)argv, buf, sizeof buf));
    kdc_run_opts_t o = {.timeout = 300};
    if (kdc_run_ex(cwd, (char *const *)argv, &o, &r->run) != 0)
        fail_msg("cannot run %s", r->cmd);
}

static void lint(res_t *r, const char *cwd, ...) {
    va_list ap;
    va_start(ap, cwd);
    lint_v(r, cwd, ap);
    va_end(ap);
}
#define LINT(r, ...) lint((r), g.svc, __VA_ARGS__, (const char *)NULL)

static void res_free(res_t *r) {
    kdc_run_free(&r->run);
    free(r->cmd);
}

static void show(const res_t *r) {
    print_error("command (in %s): %s\nexit: %d\n--- stdout\n%.6000s\n--- stderr\n%.3000s\n---\n",
                g.svc, r->cmd, r->run.exit_code, r->run.out, r->run.err);
}

static void expect_exit(const res_t *r, int code) {
    if (r->run.exit_code != code || r->run.timed_out) {
        show(r);
        fail_msg("exit %d, expected %d", r->run.exit_code, code);
    }
}

static void expect_in(const res_t *r, const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        show(r);
        fail_msg("output lacks \"%s\"", needle);
    }
}

static void expect_not_in(const res_t *r, const char *text, const char *needle) {
    if (strstr(text, needle)) {
        show(r);
        fail_msg("output has \"%s\"", needle);
    }
}

/* ---------- JSON ---------- */

static json_t *parse(const res_t *r) {
    json_error_t e;
    json_t *j = json_loads(r->run.out, 0, &e);
    if (!j) {
        show(r);
        fail_msg("stdout is not JSON: %s (line %d)", e.text, e.line);
    }
    return j;
}

/* The value at a '/'-separated path ("runs/0/results/1/ruleId"); fails when absent. */
static json_t *jget(json_t *j, const char *path) {
    char *copy = strdup(path), *save = NULL;
    json_t *v = j;
    for (char *seg = strtok_r(copy, "/", &save); seg && v; seg = strtok_r(NULL, "/", &save)) {
        char *end;
        long idx = strtol(seg, &end, 10);
        v = json_is_array(v) && !*end ? json_array_get(v, (size_t)idx) : json_object_get(v, seg);
    }
    if (!v) {
        char *dump = json_dumps(j, JSON_INDENT(1));
        print_error("%.6000s\n", dump ? dump : "");
        free(dump);
        fail_msg("no %s in the document", path);
    }
    free(copy);
    return v;
}

static const char *jstr(json_t *j, const char *path) {
    json_t *v = jget(j, path);
    if (!json_is_string(v))
        fail_msg("%s is not a string", path);
    return json_string_value(v);
}

static long long jint(json_t *j, const char *path) {
    json_t *v = jget(j, path);
    if (!json_is_integer(v))
        fail_msg("%s is not an integer", path);
    return json_integer_value(v);
}

static int jhas(json_t *j, const char *path) {
    char *copy = strdup(path), *save = NULL;
    json_t *v = j;
    for (char *seg = strtok_r(copy, "/", &save); seg && v; seg = strtok_r(NULL, "/", &save)) {
        char *end;
        long idx = strtol(seg, &end, 10);
        v = json_is_array(v) && !*end ? json_array_get(v, (size_t)idx) : json_object_get(v, seg);
    }
    free(copy);
    return v != NULL;
}

/* runs[0].results[i] whose ruleId and startLine are as given; fails when absent. */
static json_t *result_at(json_t *doc, const char *rule, long long line) {
    json_t *results = jget(doc, "runs/0/results");
    for (size_t i = 0; i < json_array_size(results); i++) {
        json_t *r = json_array_get(results, i);
        if (!strcmp(jstr(r, "ruleId"), rule) &&
            jint(r, "locations/0/physicalLocation/region/startLine") == line)
            return r;
    }
    fail_msg("no %s result at line %lld", rule, line);
    return NULL;
}

/* ---------- setup ---------- */

static int setup(void **state) {
    (void)state;
    g.lint = getenv("KDC_LINT");
    g.rules_dir = getenv("KDC_RULES_DIR");
    if (!g.lint || !g.rules_dir) {
        fprintf(stderr, "test_output: KDC_LINT and KDC_RULES_DIR must be set\n");
        return -1;
    }
    g.root = scratch_dir("output");
    char *git = scratch_path(g.root, ".git");
    mkdir(git, 0755); /* marks the repository root */
    free(git);
    scratch_write(g.root, "svc/worker.c", worker_c);
    char *odd = scratch_path("svc", odd_name);
    scratch_write(g.root, odd, odd_c);
    free(odd);
    g.svc = scratch_path(g.root, "svc");
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.root);
    free(g.root);
    free(g.svc);
    return 0;
}

/* ---------- SARIF ---------- */

/* The doc's "<Label>: value." (e.g. "Confidence: high."), lower-cased; NULL when absent. */
static char *doc_field(const char *doc, const char *label) {
    const char *p = strstr(doc, label);
    if (!p)
        return NULL;
    p += strlen(label);
    size_t n = strcspn(p, ". \n");
    char *v = strndup(p, n);
    for (char *c = v; *c; c++)
        if (*c >= 'A' && *c <= 'Z')
            *c = (char)(*c - 'A' + 'a');
    return v;
}

static void sarif_describes_every_rule_with_its_embedded_doc(void **state) {
    (void)state;
    char **names = NULL, err[512];
    long nrules = kdc_list_rules(g.lint, &names, err, sizeof err);
    if (nrules < 0)
        fail_msg("--list-rules: %s", err);
    res_t r;
    LINT(&r, "--format=sarif", "worker.c");
    expect_exit(&r, 1);
    json_t *doc = parse(&r);
    assert_string_equal(jstr(doc, "version"), "2.1.0");
    assert_string_equal(jstr(doc, "runs/0/tool/driver/name"), "kdc-lint");
    json_t *rules = jget(doc, "runs/0/tool/driver/rules");
    assert_int_equal(json_array_size(rules), (size_t)nrules);
    for (long i = 0; i < nrules; i++) {
        json_t *rule = json_array_get(rules, (size_t)i);
        const char *id = jstr(rule, "id");
        assert_string_equal(id, names[i]); /* the registry's order: ruleIndex refers to it */
        char *md_name = NULL;
        assert_true(asprintf(&md_name, "%s.md", id) > 0);
        char *md = scratch_read(g.rules_dir, md_name);
        assert_non_null(md);
        /* the doc is embedded whole: help.markdown is rules/<id>.md, byte for byte */
        assert_string_equal(jstr(rule, "help/markdown"), md);
        assert_true(strlen(jstr(rule, "help/text")) > 0);
        assert_true(strlen(jstr(rule, "name")) > 0);
        assert_null(strchr(jstr(rule, "name"), '-')); /* a friendly (PascalCase) name */
        assert_true(strlen(jstr(rule, "shortDescription/text")) > 10);
        /* fullDescription: the doc's first paragraph ("**Finds** ..."), as markdown and text */
        const char *full_md = jstr(rule, "fullDescription/markdown");
        assert_true(!strncmp(full_md, "**Finds**", 9));
        assert_null(strstr(jstr(rule, "fullDescription/text"), "**"));
        assert_null(strstr(jstr(rule, "fullDescription/text"), "`"));
        const char *uri = jstr(rule, "helpUri");
        char *tail = NULL;
        assert_true(asprintf(&tail, "/rules/%s.md", id) > 0);
        assert_true(!strncmp(uri, "https://", 8));
        assert_true(strlen(uri) > strlen(tail) && !strcmp(uri + strlen(uri) - strlen(tail), tail));
        /* level and precision say what the doc says */
        char *sev = doc_field(md, "Severity: "), *conf = doc_field(md, "Confidence: ");
        const char *level = jstr(rule, "defaultConfiguration/level");
        assert_true(!strcmp(level, "warning") || !strcmp(level, "error") || !strcmp(level, "note"));
        if (sev)
            assert_string_equal(level, sev);
        const char *precision = jstr(rule, "properties/precision");
        if (conf)
            assert_string_equal(precision, conf);
        assert_true(json_array_size(jget(rule, "properties/tags")) > 0);
        free(sev);
        free(conf);
        free(tail);
        free(md);
        free(md_name);
        free(names[i]);
    }
    free(names);
    json_decref(doc);
    res_free(&r);
}

static void sarif_locations_are_relative_to_the_repository_root(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=sarif", "worker.c");
    expect_exit(&r, 1);
    json_t *doc = parse(&r);
    char *root_uri = NULL;
    assert_true(asprintf(&root_uri, "file://%s/", g.root) > 0);
    assert_string_equal(jstr(doc, "runs/0/originalUriBaseIds/%SRCROOT%/uri"), root_uri);
    /* unconfirmed-dlq-routing 10, queue-full-dropped 9 (to_dlq keeps its failure), bare 14, 15 */
    assert_int_equal(json_array_size(jget(doc, "runs/0/results")), 4);

    json_t *bare = result_at(doc, "bare-commit", 14);
    assert_string_equal(jstr(bare, "level"), "warning");
    assert_string_equal(jstr(bare, "locations/0/physicalLocation/artifactLocation/uri"),
                        "svc/worker.c");
    assert_string_equal(jstr(bare, "locations/0/physicalLocation/artifactLocation/uriBaseId"),
                        "%SRCROOT%");
    assert_int_equal(jint(bare, "locations/0/physicalLocation/region/startColumn"), 5);
    assert_int_equal(jint(bare, "locations/0/physicalLocation/region/endLine"), 14);
    /* "rd_kafka_commit(consumer, NULL, 0)" is 34 columns: endColumn is one past it */
    assert_int_equal(jint(bare, "locations/0/physicalLocation/region/endColumn"), 5 + 34);
    assert_string_equal(jstr(bare, "locations/0/logicalLocations/0/name"), "drain");
    const char *msg = jstr(bare, "message/text");
    assert_true(!strncmp(msg, "rd_kafka_commit without an offset list", 38));
    /* ruleIndex points at the rule's descriptor */
    long long idx = jint(bare, "ruleIndex");
    char path[64];
    snprintf(path, sizeof path, "runs/0/tool/driver/rules/%lld/id", idx);
    assert_string_equal(jstr(doc, path), "bare-commit");
    /* a bare commit is not a path: no code flow */
    assert_false(jhas(bare, "codeFlows"));
    /* execution went fine */
    assert_true(json_is_true(jget(doc, "runs/0/invocations/0/executionSuccessful")));
    free(root_uri);
    json_decref(doc);
    res_free(&r);
}

static void sarif_dlq_result_has_a_code_flow_from_the_dlq_produce_to_the_commit(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=sarif", "worker.c");
    expect_exit(&r, 1);
    json_t *doc = parse(&r);
    json_t *dlq = result_at(doc, "unconfirmed-dlq-routing", 10);
    /* related: the helper call (9:5), the produce inside the helper (4:9) */
    assert_int_equal(json_array_size(jget(dlq, "relatedLocations")), 2);
    assert_int_equal(jint(dlq, "relatedLocations/0/id"), 1);
    assert_int_equal(jint(dlq, "relatedLocations/0/physicalLocation/region/startLine"), 9);
    assert_int_equal(jint(dlq, "relatedLocations/1/physicalLocation/region/startLine"), 4);
    assert_string_equal(jstr(dlq, "relatedLocations/1/physicalLocation/artifactLocation/uri"),
                        "svc/worker.c");
    assert_true(strlen(jstr(dlq, "relatedLocations/0/message/text")) > 0);
    /* the flow: helper call -> DLQ produce -> commit, in that order */
    json_t *steps = jget(dlq, "codeFlows/0/threadFlows/0/locations");
    assert_int_equal(json_array_size(steps), 3);
    assert_int_equal(jint(steps, "0/location/physicalLocation/region/startLine"), 9);
    assert_int_equal(jint(steps, "1/location/physicalLocation/region/startLine"), 4);
    assert_int_equal(jint(steps, "2/location/physicalLocation/region/startLine"), 10);
    assert_int_equal(jint(steps, "2/location/physicalLocation/region/startColumn"), 5);
    expect_in(&r, jstr(steps, "1/location/message/text"), "dead-letter queue");
    json_decref(doc);
    res_free(&r);
}

/* The path-rule table of linter/output/sarif.c: names and where the finding
 * stands on the path (1: after its notes, 0: before them). */
static size_t path_rule_table(char names[][64], int *finding_last, size_t max) {
    char *src = NULL;
    assert_true(asprintf(&src, "%s/../linter/output/sarif.c", g.rules_dir) > 0);
    FILE *f = fopen(src, "r");
    if (!f)
        fail_msg("cannot read %s", src);
    char *text = NULL;
    size_t cap = 0;
    assert_true(getdelim(&text, &cap, 0, f) > 0);
    fclose(f);
    const char *p = strstr(text, "path_rules[] = {");
    assert_non_null(p);
    const char *end = strstr(p, "};");
    size_t n = 0;
    for (p = strstr(p, "{\""); p && p < end && n < max; p = strstr(p + 1, "{\"")) {
        size_t len = strcspn(p + 2, "\"");
        assert_true(len < 64);
        memcpy(names[n], p + 2, len);
        names[n][len] = 0;
        const char *comma = p + 2 + len;
        finding_last[n] = !strncmp(comma, "\", NOTES_THEN_FINDING}", 21);
        assert_true(finding_last[n] || !strncmp(comma, "\", FINDING_THEN_NOTES}", 21));
        n++;
    }
    free(text);
    free(src);
    return n;
}

static long long step_line(json_t *steps, size_t i) {
    char path[96];
    snprintf(path, sizeof path, "%zu/location/physicalLocation/region/startLine", i);
    return jint(steps, path);
}

/* Every result of a path rule with notes has a code flow through its notes and
 * its own location in the table's order; no other result has one. Checked on
 * the fixtures of every rule. */
static void sarif_code_flows_follow_each_path_rule(void **state) {
    (void)state;
    char names[16][64];
    int finding_last[16];
    size_t n = path_rule_table(names, finding_last, 16);
    assert_true(n >= 1);
    char **rules = NULL, err[512];
    long nrules = kdc_list_rules(g.lint, &rules, err, sizeof err);
    assert_true(nrules > 0);
    for (size_t i = 0; i < n; i++) {
        int known = 0;
        for (long k = 0; k < nrules; k++)
            known |= !strcmp(rules[k], names[i]);
        if (!known)
            fail_msg("sarif.c's path rule %s is not a rule (--list-rules)", names[i]);
    }
    for (long k = 0; k < nrules; k++)
        free(rules[k]);
    free(rules);

    const char *fixtures = getenv("KDC_FIXTURES_DIR");
    assert_non_null(fixtures);
    res_t r;
    LINT(&r, "--format=sarif", "--profile=strict", fixtures);
    json_t *doc = parse(&r);
    json_t *results = jget(doc, "runs/0/results");
    size_t flows[16] = {0};
    for (size_t i = 0; i < json_array_size(results); i++) {
        json_t *res = json_array_get(results, i);
        const char *rule = jstr(res, "ruleId");
        json_t *rel = json_object_get(res, "relatedLocations");
        size_t nrel = json_array_size(rel), t = 0;
        while (t < n && strcmp(names[t], rule))
            t++;
        if (t == n || !nrel) {
            if (jhas(res, "codeFlows"))
                fail_msg("a %s result has a code flow", rule);
            continue;
        }
        json_t *steps = jget(res, "codeFlows/0/threadFlows/0/locations");
        assert_int_equal(json_array_size(steps), nrel + 1);
        size_t at = finding_last[t] ? nrel : 0, first_note = finding_last[t] ? 0 : 1;
        assert_int_equal(step_line(steps, at),
                         jint(res, "locations/0/physicalLocation/region/startLine"));
        for (size_t k = 0; k < nrel; k++) {
            char path[96];
            snprintf(path, sizeof path, "%zu/physicalLocation/region/startLine", k);
            assert_int_equal(step_line(steps, first_note + k), jint(rel, path));
        }
        flows[t]++;
    }
    for (size_t t = 0; t < n; t++)
        if (!flows[t])
            fail_msg("no %s result with a code flow in the fixtures", names[t]);
    json_decref(doc);
    res_free(&r);
}

/* A rule whose finding comes first on its path: flush() == 0 (6:10), then the
 * checkpoint it wrongly allows (7:9). */
static void sarif_flush_result_has_a_code_flow_from_the_flush_to_the_checkpoint(void **state) {
    (void)state;
    scratch_write(g.root, "svc/relay.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "\n"
                  "static unsigned long confirmed;\n"
                  "\n"
                  "void batch(rd_kafka_t *rk, unsigned long lsn) {\n"
                  "    if (!rd_kafka_flush(rk, 10000))\n"
                  "        confirmed = lsn;\n"
                  "}\n");
    res_t r;
    LINT(&r, "--format=sarif", "relay.c");
    expect_exit(&r, 1);
    json_t *doc = parse(&r);
    json_t *res = result_at(doc, "flush-as-confirmation", 6);
    json_t *steps = jget(res, "codeFlows/0/threadFlows/0/locations");
    assert_int_equal(json_array_size(steps), 2);
    assert_int_equal(step_line(steps, 0), 6);
    assert_int_equal(step_line(steps, 1), 7);
    assert_int_equal(jint(steps, "1/location/physicalLocation/region/startColumn"), 9);
    json_decref(doc);
    res_free(&r);
    char *relay = scratch_path(g.svc, "relay.c"); /* the other tests lint svc/ whole */
    remove(relay);
    free(relay);
}

/* The fingerprints of the run's results, in report order. */
static char **fingerprints(const char *cwd, const char *file, size_t *n, long long *lines) {
    res_t r;
    lint(&r, cwd, "--format=sarif", file, (const char *)NULL);
    expect_exit(&r, 1);
    json_t *doc = parse(&r);
    json_t *results = jget(doc, "runs/0/results");
    *n = json_array_size(results);
    char **fps = calloc(*n, sizeof *fps);
    for (size_t i = 0; i < *n; i++) {
        json_t *res = json_array_get(results, i);
        json_t *fp = json_object_get(jget(res, "partialFingerprints"), "kdcFindingHash/v1");
        assert_true(json_is_string(fp));
        fps[i] = strdup(json_string_value(fp));
        lines[i] = jint(res, "locations/0/physicalLocation/region/startLine");
        assert_int_equal(strlen(fps[i]), 32);
        assert_int_equal(strspn(fps[i], "0123456789abcdef"), 32);
    }
    json_decref(doc);
    res_free(&r);
    return fps;
}

static void sarif_fingerprints_survive_lines_inserted_above(void **state) {
    (void)state;
    size_t n0, n1, n2;
    long long l0[8], l1[8], l2[8];
    char **before = fingerprints(g.svc, "worker.c", &n0, l0);
    assert_int_equal(n0, 4);
    /* every finding has its own fingerprint, also the two identical commit lines */
    assert_string_not_equal(before[0], before[1]);
    assert_string_not_equal(before[1], before[2]);
    assert_string_not_equal(before[0], before[2]);

    /* three lines above everything: same fingerprints, lines moved by 3 */
    char *shifted = NULL;
    assert_true(asprintf(&shifted, "/* orders service */\n#include <stdio.h>\n\n%s", worker_c) > 0);
    scratch_write(g.root, "svc/worker.c", shifted);
    char **after = fingerprints(g.svc, "worker.c", &n1, l1);
    /* and the same from the repository root: fingerprints hash root-relative paths */
    char **from_root = fingerprints(g.root, "svc/worker.c", &n2, l2);
    scratch_write(g.root, "svc/worker.c", worker_c);
    assert_int_equal(n1, n0);
    assert_int_equal(n2, n0);
    for (size_t i = 0; i < n0; i++) {
        assert_int_equal(l1[i], l0[i] + 3);
        assert_string_equal(after[i], before[i]);
        assert_string_equal(from_root[i], before[i]);
    }
    for (size_t i = 0; i < n0; i++) {
        free(before[i]);
        free(after[i]);
        free(from_root[i]);
    }
    free(before);
    free(after);
    free(from_root);
    free(shifted);
}

/* Two identical bare commits, the first inside an ignore block whose reason spans two
 * lines of a block comment. Line numbers matter. */
static const char suppressed_c[] =
    "#include <librdkafka/rdkafka.h>\n"                               /* 1 */
    "void drain(rd_kafka_t *consumer) {\n"                            /* 2 */
    "    /* kdc-lint: ignore-begin[bare-commit] shutdown path: the\n" /* 3 */
    "     * offsets are replayed idempotently */\n"                   /* 4 */
    "    rd_kafka_commit(consumer, NULL, 0);\n"                       /* 5 */
    "    /* kdc-lint: ignore-end */\n"                                /* 6 */
    "    rd_kafka_commit(consumer, NULL, 0);\n"                       /* 7 */
    "}\n";

static const char *fingerprint_of(json_t *result) {
    json_t *fp = json_object_get(jget(result, "partialFingerprints"), "kdcFindingHash/v1");
    assert_true(json_is_string(fp));
    return json_string_value(fp);
}

#define ROOT_LINT(r, ...) lint((r), g.root, __VA_ARGS__, (const char *)NULL)

static void sarif_shows_suppressed_findings_with_their_justification(void **state) {
    (void)state;
    scratch_write(g.root, "sup/suppressed.c", suppressed_c);
    res_t r;
    ROOT_LINT(&r, "--format=sarif", "sup/suppressed.c");
    expect_exit(&r, 1); /* the finding at line 7; the suppressed one is no problem */
    json_t *doc = parse(&r);
    assert_int_equal(json_array_size(jget(doc, "runs/0/results")), 2);
    json_t *hidden = result_at(doc, "bare-commit", 5);
    assert_int_equal(json_array_size(jget(hidden, "suppressions")), 1);
    assert_string_equal(jstr(hidden, "suppressions/0/kind"), "inSource");
    assert_string_equal(jstr(hidden, "suppressions/0/justification"),
                        "shutdown path: the offsets are replayed idempotently");
    json_t *shown = result_at(doc, "bare-commit", 7);
    assert_false(jhas(shown, "suppressions"));

    /* the shown finding keeps the fingerprint the baseline gives it (which never sees
     * the suppressed one; run from the repository root, where both hash the same path), and the two fingerprints differ though their lines are equal */
    res_t b;
    ROOT_LINT(&b, "--write-baseline=sup/suppressed.baseline", "sup/suppressed.c");
    expect_exit(&b, 0);
    char *base = scratch_read(g.root, "sup/suppressed.baseline");
    json_t *bdoc = json_loads(base, 0, NULL);
    assert_non_null(bdoc);
    assert_int_equal(json_array_size(jget(bdoc, "findings")), 1);
    assert_string_equal(jstr(bdoc, "findings/0/fingerprint"), fingerprint_of(shown));
    assert_string_not_equal(fingerprint_of(hidden), fingerprint_of(shown));
    json_decref(bdoc);
    free(base);
    res_free(&b);
    json_decref(doc);
    res_free(&r);

    /* text and JSON leave it out, as before, and say it was suppressed */
    ROOT_LINT(&r, "--format=json", "sup/suppressed.c");
    expect_exit(&r, 1);
    doc = parse(&r);
    assert_int_equal(json_array_size(jget(doc, "findings")), 1);
    assert_int_equal(jint(doc, "findings/0/line"), 7);
    json_decref(doc);
    res_free(&r);
    ROOT_LINT(&r, "sup/suppressed.c");
    expect_exit(&r, 1);
    expect_in(&r, r.run.out, "sup/suppressed.c:7:5: warning:");
    expect_not_in(&r, r.run.out, "sup/suppressed.c:5:");
    expect_in(&r, r.run.err, "not shown: 1 suppressed by comments");
    res_free(&r);

    /* only suppressed findings: exit 0, the SARIF result still there */
    scratch_write(g.root, "sup/suppressed.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void drain(rd_kafka_t *consumer) {\n"
                  "    rd_kafka_commit(consumer, NULL, 0); // kdc-lint: ignore[bare-commit] "
                  "replayed\n"
                  "}\n");
    ROOT_LINT(&r, "--format=sarif", "sup/suppressed.c");
    expect_exit(&r, 0);
    doc = parse(&r);
    assert_int_equal(json_array_size(jget(doc, "runs/0/results")), 1);
    assert_string_equal(jstr(result_at(doc, "bare-commit", 3), "suppressions/0/justification"),
                        "replayed");
    json_decref(doc);
    res_free(&r);
}

static void sarif_input_errors_make_execution_unsuccessful(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=sarif", "worker.c", "missing.c");
    expect_exit(&r, 2);
    json_t *doc = parse(&r);
    assert_true(json_is_false(jget(doc, "runs/0/invocations/0/executionSuccessful")));
    json_t *n = jget(doc, "runs/0/invocations/0/toolExecutionNotifications/0");
    assert_string_equal(jstr(n, "level"), "error");
    assert_string_equal(jstr(n, "locations/0/physicalLocation/artifactLocation/uri"),
                        "svc/missing.c");
    assert_int_equal(json_array_size(jget(doc, "runs/0/results")), 4); /* still analysed */
    json_decref(doc);
    res_free(&r);
}

/* ---------- GitHub annotations ---------- */

static void github_annotations_locate_and_escape(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=github", ".");
    expect_exit(&r, 1);
    /* one line per finding, each a workflow command */
    assert_int_equal(scratch_count(r.run.out, "\n"), 5);
    for (const char *line = r.run.out; *line; line = strchr(line, '\n') + 1)
        if (strncmp(line, "::warning file=", 15)) {
            show(&r);
            fail_msg("not a ::warning command: %.80s", line);
        }
    expect_not_in(&r, r.run.out, "\r");
    /* a file name with %, ',' and ':' (property escaping), root-relative */
    expect_in(&r, r.run.out,
              "::warning file=svc/odd/50%25%2Ca%3Ab.c,line=2,endLine=2,col=26,endColumn=54,"
              "title=kdc-lint bare-commit::rd_kafka_commit without an offset list commits the "
              "stored offsets of every assigned partition, including");
    /* message commas and colons stay as they are */
    expect_in(&r, r.run.out, "(rd_kafka_commit_message, or a one-partition list with offset+1) "
                             "[bare-commit]\n");
    /* related locations are further lines of the message (%0A) */
    expect_in(&r, r.run.out,
              "::warning file=svc/worker.c,line=10,endLine=10,col=5,endColumn=45,"
              "title=kdc-lint unconfirmed-dlq-routing::input offset committed after routing");
    expect_in(&r, r.run.out,
              "before committing [unconfirmed-dlq-routing]"
              "%0Asvc/worker.c:9:5: note: message routed to the dead-letter queue through this call"
              "%0Asvc/worker.c:4:9: note: the helper produces to the dead-letter queue here");
    res_free(&r);
}

static void github_annotations_name_input_errors(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=github", "worker.c", "no such,dir");
    expect_exit(&r, 2);
    expect_in(&r, r.run.out, "::error file=svc/no such%2Cdir,title=kdc-lint input error::");
    res_free(&r);
}

/* ---------- text: colour and summary ---------- */

static const char sgr_warning[] = "\033[1;35mwarning:\033[0m";
static const char sgr_note[] = "\033[1;36mnote:\033[0m";
static const char sgr_caret[] = "\033[1;32m^\033[0m";

static void text_colour_follows_the_color_option(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--color=always", "worker.c");
    expect_exit(&r, 1);
    expect_in(&r, r.run.out, "\033[1mworker.c:10:5: ");
    expect_in(&r, r.run.out, sgr_warning);
    expect_in(&r, r.run.out, sgr_note);
    expect_in(&r, r.run.out, sgr_caret);
    assert_int_equal(scratch_count(r.run.out, sgr_warning), 4);
    res_free(&r);

    /* never, and auto when stdout is not a terminal (here a file): plain text */
    LINT(&r, "--color=never", "worker.c");
    expect_exit(&r, 1);
    expect_not_in(&r, r.run.out, "\033");
    expect_in(&r, r.run.out, "worker.c:10:5: warning: input offset committed");
    res_free(&r);
    LINT(&r, "worker.c");
    expect_exit(&r, 1);
    expect_not_in(&r, r.run.out, "\033");
    res_free(&r);

    /* an explicit --color=always wins over NO_COLOR */
    setenv("NO_COLOR", "1", 1);
    LINT(&r, "--color=always", "worker.c");
    unsetenv("NO_COLOR");
    expect_in(&r, r.run.out, sgr_warning);
    res_free(&r);

    /* colour is for text only: JSON and SARIF stay parseable */
    LINT(&r, "--color=always", "--format=json", "worker.c");
    expect_exit(&r, 1);
    json_decref(parse(&r));
    expect_not_in(&r, r.run.out, "\033");
    res_free(&r);
}

/* Runs kdc-lint on a pseudo-terminal (its stdout and stderr) and returns what it wrote. */
static char *lint_on_tty(const char *no_color, int *exit_code) {
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    if (pid < 0)
        fail_msg("forkpty: %s", strerror(errno));
    if (pid == 0) {
        if (chdir(g.svc) != 0)
            _exit(127);
        if (no_color)
            setenv("NO_COLOR", no_color, 1);
        else
            unsetenv("NO_COLOR");
        execl(g.lint, g.lint, "worker.c", (char *)NULL);
        _exit(127);
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[4096];
    ssize_t got;
    while ((got = read(master, chunk, sizeof chunk)) > 0) /* EIO once the child is gone */
        fwrite(chunk, 1, (size_t)got, m);
    fclose(m);
    close(master);
    int status;
    waitpid(pid, &status, 0);
    *exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128;
    return buf;
}

static void text_colour_auto_is_on_for_a_terminal_unless_no_color(void **state) {
    (void)state;
    int code;
    char *out = lint_on_tty(NULL, &code);
    assert_int_equal(code, 1);
    if (!strstr(out, sgr_warning))
        fail_msg("no colour on a terminal:\n%s", out);
    free(out);
    /* NO_COLOR set (to anything non-empty): no colour */
    out = lint_on_tty("1", &code);
    assert_int_equal(code, 1);
    if (strstr(out, "\033"))
        fail_msg("colour despite NO_COLOR=1:\n%s", out);
    if (!strstr(out, "worker.c:10:5: warning: input offset committed"))
        fail_msg("no finding on the terminal:\n%s", out);
    free(out);
    /* an empty NO_COLOR does not count (no-color.org) */
    out = lint_on_tty("", &code);
    if (!strstr(out, sgr_warning))
        fail_msg("no colour with an empty NO_COLOR:\n%s", out);
    free(out);
}

static void text_ends_with_a_summary_line_on_stderr(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "worker.c", "missing.c");
    expect_exit(&r, 2);
    expect_in(&r, r.run.err,
              "kdc-lint: 4 findings in 1 translation unit (0 incomplete, 1 input error)\n");
    expect_not_in(&r, r.run.out, "kdc-lint: 4 findings");
    res_free(&r);
}

static void unknown_format_or_color_is_a_usage_error(void **state) {
    (void)state;
    res_t r;
    LINT(&r, "--format=xml", "worker.c");
    expect_exit(&r, 2);
    expect_in(&r, r.run.err, "--format: 'xml' is not one of text, json, sarif, github");
    res_free(&r);
    LINT(&r, "--color=sometimes", "worker.c");
    expect_exit(&r, 2);
    expect_in(&r, r.run.err, "--color: 'sometimes' is not one of auto, always, never");
    res_free(&r);
    /* both are in --help */
    LINT(&r, "--help");
    expect_exit(&r, 0);
    expect_in(&r, r.run.out, "sarif");
    expect_in(&r, r.run.out, "github");
    expect_in(&r, r.run.out, "--color=WHEN");
    expect_in(&r, r.run.out, "NO_COLOR");
    res_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sarif_describes_every_rule_with_its_embedded_doc),
        cmocka_unit_test(sarif_locations_are_relative_to_the_repository_root),
        cmocka_unit_test(sarif_dlq_result_has_a_code_flow_from_the_dlq_produce_to_the_commit),
        cmocka_unit_test(sarif_code_flows_follow_each_path_rule),
        cmocka_unit_test(sarif_flush_result_has_a_code_flow_from_the_flush_to_the_checkpoint),
        cmocka_unit_test(sarif_fingerprints_survive_lines_inserted_above),
        cmocka_unit_test(sarif_shows_suppressed_findings_with_their_justification),
        cmocka_unit_test(sarif_input_errors_make_execution_unsuccessful),
        cmocka_unit_test(github_annotations_locate_and_escape),
        cmocka_unit_test(github_annotations_name_input_errors),
        cmocka_unit_test(text_colour_follows_the_color_option),
        cmocka_unit_test(text_colour_auto_is_on_for_a_terminal_unless_no_color),
        cmocka_unit_test(text_ends_with_a_summary_line_on_stderr),
        cmocka_unit_test(unknown_format_or_color_is_a_usage_error),
    };
    return cmocka_run_group_tests_name("lint.output", tests, setup, teardown);
}
