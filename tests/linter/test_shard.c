/*
 * --shard=K/N and kdc-lint merge: every shard analyses the whole program and
 * reports the findings of its share of the files; merging the N reports gives
 * the unsharded report, byte for byte ("seconds" aside), in JSON and SARIF.
 *
 *   test_shard         (KDC_LINT, KDC_FIXTURES_DIR; KDC_SARIF_MULTITOOL, when
 *                       installed, validates a shard's and a merged SARIF report)
 *
 * Trees (made at test time): a copy of the fixtures (hundreds of findings in
 * many files); nine consumers with one bare commit each (c1.c .. c9.c), for
 * shard counts below and above the number of files.
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
#include <unistd.h>

#include "scale.h"

static struct {
    char *dir; /* fixtures/, small/, cache/ and the reports */
} g;

static int setup(void **state) {
    (void)state;
    const char *live = getenv("KDC_FIXTURES_DIR");
    if (!live) {
        fprintf(stderr, "test_shard: KDC_FIXTURES_DIR must be set\n");
        return -1;
    }
    g.dir = scratch_dir("shard");
    char *fixtures = scratch_path(g.dir, "fixtures");
    kdc_run_t r;
    int rc = scratch_run(&r, NULL, "cp", "-a", live, fixtures, (const char *)NULL);
    kdc_run_free(&r);
    free(fixtures);
    for (int k = 1; k <= 9; k++) {
        char rel[32], text[256];
        snprintf(rel, sizeof rel, "small/c%d.c", k);
        snprintf(text, sizeof text,
                 "#include <librdkafka/rdkafka.h>\n"
                 "void drain%d(rd_kafka_t *consumer) {\n"
                 "    rd_kafka_commit(consumer, NULL, 0);\n"
                 "}\n",
                 k);
        scratch_write(g.dir, rel, text);
    }
    return rc;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.dir);
    free(g.dir);
    return 0;
}

/* Runs kdc-lint in g.dir writing its report to `out` (relative to g.dir). */
static int lint_to(const char *out, const char *format, const char *shard, const char *tree,
                   kdc_run_t *r) {
    const char *args[16];
    size_t n = 0;
    args[n++] = "--cache-dir=cache"; /* the shards of one run share it, as CI would */
    args[n++] = format;
    if (shard)
        args[n++] = shard;
    args[n++] = "-o";
    args[n++] = out;
    args[n++] = tree;
    args[n] = NULL;
    return scale_lintv(r, g.dir, args);
}

static char *read_report(const char *rel) {
    char *t = scratch_read(g.dir, rel);
    if (!t)
        fail_msg("no report %s", rel);
    return t;
}

/* The files of the findings of a JSON or SARIF report, one per line. */
static void files_of(const char *rel, int sarif, json_t *seen, int shard) {
    char *path = scratch_path(g.dir, rel);
    json_t *doc = json_load_file(path, 0, NULL);
    free(path);
    assert_non_null(doc);
    json_t *list = sarif ? json_object_get(json_array_get(json_object_get(doc, "runs"), 0),
                                           "results")
                         : json_object_get(doc, "findings");
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) {
        const char *file =
            sarif ? json_string_value(json_object_get(
                        json_object_get(json_object_get(json_array_get(json_object_get(f,
                                                                                       "locations"),
                                                                       0),
                                                        "physicalLocation"),
                                        "artifactLocation"),
                        "uri"))
                  : json_string_value(json_object_get(f, "file"));
        assert_non_null(file);
        json_t *owner = json_object_get(seen, file);
        if (owner && json_integer_value(owner) != shard)
            fail_msg("%s has findings in shard %lld and in shard %d", file,
                     (long long)json_integer_value(owner), shard);
        json_object_set_new(seen, file, json_integer(shard));
    }
    json_decref(doc);
}

/* Lints `tree` unsharded and as N shards, merges them, and compares. */
static void merged_equals_unsharded(const char *tree, const char *format, int n) {
    int sarif = !strcmp(format, "--format=sarif");
    const char *ext = sarif ? "sarif" : "json";
    char whole[64], merged[64];
    snprintf(whole, sizeof whole, "whole-%d.%s", n, ext);
    snprintf(merged, sizeof merged, "merged-%d.%s", n, ext);
    kdc_run_t r;
    int whole_code = lint_to(whole, format, NULL, tree, &r);
    assert_true(whole_code == 0 || whole_code == 1);
    kdc_run_free(&r);
    const char *margs[40] = {"merge", "-o", merged};
    size_t m = 3;
    json_t *seen = json_object();
    int any_findings = 0;
    for (int k = 1; k <= n; k++) {
        char shard[32], out[64];
        snprintf(shard, sizeof shard, "--shard=%d/%d", k, n);
        snprintf(out, sizeof out, "shard-%d-of-%d.%s", k, n, ext);
        int code = lint_to(out, format, shard, tree, &r);
        char line[64];
        snprintf(line, sizeof line, "kdc-lint: shard %d/%d: ", k, n);
        if (!strstr(r.err, line) || (code != 0 && code != 1)) {
            scale_show(&r);
            fail_msg("shard %d/%d", k, n);
        }
        any_findings |= code == 1;
        kdc_run_free(&r);
        files_of(out, sarif, seen, k);
        margs[m++] = strdup(out);
    }
    margs[m] = NULL;
    json_decref(seen);
    int code = scale_lintv(&r, g.dir, margs);
    if (code != whole_code) {
        scale_show(&r);
        fail_msg("merge exited %d; the unsharded run %d", code, whole_code);
    }
    assert_int_equal(any_findings, whole_code == 1);
    kdc_run_free(&r);
    for (size_t i = 3; i < m; i++)
        free((char *)margs[i]);
    char *a = read_report(whole), *b = read_report(merged);
    char what[64];
    snprintf(what, sizeof what, "%s, %d shards", ext, n);
    scale_same_report(what, a, b);
    free(a);
    free(b);
}

static void the_merged_shards_of_the_fixtures_are_the_unsharded_report_in_json_and_sarif(
    void **state) {
    (void)state;
    merged_equals_unsharded("fixtures", "--format=json", 3);
    merged_equals_unsharded("fixtures", "--format=sarif", 3);
}

static void any_shard_count_merges_to_the_unsharded_report(void **state) {
    (void)state;
    const int counts[] = {1, 2, 5, 9, 12}; /* 12 > 9 files: some shards are empty */
    for (size_t i = 0; i < sizeof counts / sizeof *counts; i++)
        merged_equals_unsharded("small", "--format=json", counts[i]);
    merged_equals_unsharded("small", "--format=sarif", 4);
}

static void a_shard_is_deterministic_and_exits_by_its_own_findings(void **state) {
    (void)state;
    /* the split is by path: the same shard twice is the same report */
    kdc_run_t a, b;
    lint_to("again-1.json", "--format=json", "--shard=2/5", "small", &a);
    lint_to("again-2.json", "--format=json", "--shard=2/5", "small", &b);
    char *x = read_report("again-1.json"), *y = read_report("again-2.json");
    scale_same_report("the same shard twice", x, y);
    free(x);
    free(y);
    kdc_run_free(&a);
    kdc_run_free(&b);
    /* with 12 shards of 9 files, some shards have no finding and exit 0, the others 1 */
    int zero = 0, one = 0;
    size_t total = 0;
    for (int k = 1; k <= 12; k++) {
        char shard[32];
        snprintf(shard, sizeof shard, "--shard=%d/12", k);
        kdc_run_t r;
        LINT(&r, g.dir, "--cache-dir=cache", shard, "small");
        unsigned long mine = 0, all = 0;
        const char *line = strstr(r.err, "kdc-lint: shard ");
        assert_non_null(line);
        assert_int_equal(sscanf(strchr(line, ':') + 1, " shard %*u/%*u: %lu of the run's %lu",
                                &mine, &all),
                         2);
        assert_int_equal(all, 9);
        assert_int_equal(r.exit_code, mine ? 1 : 0);
        assert_int_equal(scratch_count(r.out, "warning: rd_kafka_commit"), mine);
        zero += r.exit_code == 0;
        one += r.exit_code == 1;
        total += mine;
        kdc_run_free(&r);
    }
    assert_int_equal(total, 9);
    assert_true(zero >= 3); /* 12 shards, at most 9 with a file */
    assert_true(one >= 1);
}

static void bad_shard_specs_are_usage_errors(void **state) {
    (void)state;
    const struct {
        const char *arg, *msg;
    } bad[] = {
        {"--shard=0/2", "kdc-lint: error: --shard: '0/2' is not K/N (shard K of N, both from 1)"},
        {"--shard=3/2", "kdc-lint: error: --shard: '3/2': K must be from 1 to N, and N at most "
                        "1000"},
        {"--shard=2", "kdc-lint: error: --shard: '2' is not K/N"},
        {"--shard=a/b", "kdc-lint: error: --shard: 'a/b' is not K/N"},
        {"--shard=1/0", "kdc-lint: error: --shard: '1/0' is not K/N"},
        {"--shard=1/2/3", "kdc-lint: error: --shard: '1/2/3' is not K/N"},
        {"--shard=1/1001", "kdc-lint: error: --shard: '1/1001': K must be from 1 to N"},
        {"--shard=", "kdc-lint: error: --shard: '' is not K/N"},
        {"--shard=-1/2", "kdc-lint: error: --shard: '-1/2' is not K/N"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kdc_run_t r;
        LINT(&r, g.dir, bad[i].arg, "small");
        EXPECT_ERR(&r, 2, bad[i].msg);
        assert_string_equal(r.out, "");
        kdc_run_free(&r);
    }
}

/* kdc-lint merge with the NULL-terminated arguments must fail with `msg`. */
static void merge_fails(const char *msg, ...) {
    const char *args[16] = {"merge"};
    size_t n = 1;
    va_list ap;
    va_start(ap, msg);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 15;)
        args[n++] = a;
    va_end(ap);
    args[n] = NULL;
    kdc_run_t r;
    scale_lintv(&r, g.dir, args);
    EXPECT_ERR(&r, 2, msg);
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
}

static void merge_refuses_reports_that_are_not_the_shards_of_one_run(void **state) {
    (void)state;
    kdc_run_t r;
    lint_to("m1.json", "--format=json", "--shard=1/3", "small", &r);
    kdc_run_free(&r);
    lint_to("m2.json", "--format=json", "--shard=2/3", "small", &r);
    kdc_run_free(&r);
    lint_to("m3.json", "--format=json", "--shard=3/3", "small", &r);
    kdc_run_free(&r);
    lint_to("m1.sarif", "--format=sarif", "--shard=1/3", "small", &r);
    kdc_run_free(&r);
    lint_to("h1.json", "--format=json", "--shard=1/2", "small", &r);
    kdc_run_free(&r);
    lint_to("plain.json", "--format=json", NULL, "small", &r);
    kdc_run_free(&r);
    LINT(&r, g.dir, "--cache-dir=cache", "--format=json", "--profile=strict", "--shard=2/3",
         "-o", "strict2.json", "small");
    kdc_run_free(&r);
    scratch_write(g.dir, "broken.json", "{\"tool\": \n");

    merge_fails("kdc-lint merge: error: shard 3/3 is missing (2 of 3 reports given)\n", "m1.json",
                "m2.json", NULL);
    merge_fails("kdc-lint merge: error: shard 1/3 is given twice: m1.json and m1.json\n",
                "m1.json", "m2.json", "m1.json", NULL);
    merge_fails("kdc-lint merge: error: m1.sarif is SARIF but m2.json is JSON: merge reports of "
                "one format\n",
                "m2.json", "m1.sarif", "m3.json", NULL);
    merge_fails("kdc-lint merge: error: h1.json is shard 1/2 but m2.json is shard 2/3: not the "
                "shards of one run\n",
                "m2.json", "h1.json", "m3.json", NULL);
    merge_fails("kdc-lint merge: error: strict2.json and m1.json are shards of different runs "
                "(other options, units or sources)\n",
                "m1.json", "strict2.json", "m3.json", NULL);
    merge_fails("kdc-lint merge: error: plain.json: not a shard's report (it was written "
                "without --shard=K/N)\n",
                "m1.json", "plain.json", NULL);
    merge_fails("kdc-lint merge: error: broken.json: not JSON (line 2, column 0:", "broken.json",
                NULL);
    merge_fails("kdc-lint merge: error: nowhere.json: No such file or directory\n", "m1.json",
                "nowhere.json", NULL);
    merge_fails("kdc-lint merge: error: no reports to merge", NULL);
    merge_fails("kdc-lint merge: error: -o m2.json: is one of the reports to merge; not "
                "overwriting it\n",
                "-o", "m2.json", "m1.json", "m2.json", "m3.json", NULL);
    merge_fails("kdc-lint merge: error: unknown option '--frobnicate'", "--frobnicate", "m1.json",
                NULL);

    /* the same run id, but a shard whose shared part was edited */
    char *text = read_report("m3.json");
    char *errs = strstr(text, "\"errors\": []");
    assert_non_null(errs);
    char *edited = NULL;
    assert_true(asprintf(&edited, "%.*s\"errors\": [{\"file\": \"x.c\", \"message\": \"m\"}]%s",
                         (int)(errs - text), text, errs + strlen("\"errors\": []")) > 0);
    scratch_write(g.dir, "m3-edited.json", edited);
    merge_fails("kdc-lint merge: error: m3-edited.json and m1.json are shards of different runs: "
                "their \"errors\" differ\n",
                "m1.json", "m2.json", "m3-edited.json", NULL);
    free(edited);
    free(text);
    char *m2 = read_report("m2.json");
    assert_non_null(strstr(m2, "\"shard\": {"));
    free(m2);
}

static void merge_exits_as_the_unsharded_run_would(void **state) {
    (void)state;
    kdc_run_t r;
    /* findings: 1 */
    lint_to("e1.json", "--format=json", "--shard=1/1", "small", &r);
    assert_int_equal(r.exit_code, 1);
    kdc_run_free(&r);
    LINT(&r, g.dir, "merge", "e1.json");
    assert_int_equal(r.exit_code, 1);
    assert_non_null(strstr(r.out, "\"rule\": \"bare-commit\""));
    assert_null(strstr(r.out, "\"shard\""));
    kdc_run_free(&r);
    /* no findings: 0 */
    scratch_write(g.dir, "clean/ok.c", "#include <librdkafka/rdkafka.h>\n"
                                       "int version(void) { return rd_kafka_version(); }\n");
    lint_to("e0.json", "--format=json", "--shard=1/1", "clean", &r);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    LINT(&r, g.dir, "merge", "e0.json");
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    /* suppressed findings only: 0 in SARIF too, where they are results with "suppressions" */
    scratch_write(g.dir, "quiet/q1.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void q1(rd_kafka_t *c) {\n"
                  "    rd_kafka_commit(c, NULL, 0); // kdc-lint: "
                  "ignore[bare-commit] drained at shutdown\n"
                  "}\n");
    scratch_write(g.dir, "quiet/q2.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void q2(rd_kafka_t *c) {\n"
                  "    rd_kafka_commit(c, NULL, 0); // kdc-lint: "
                  "ignore[bare-commit] drained at shutdown\n"
                  "}\n");
    for (int k = 1; k <= 2; k++) {
        char shard[32], out[32];
        snprintf(shard, sizeof shard, "--shard=%d/2", k);
        snprintf(out, sizeof out, "q%d.sarif", k);
        lint_to(out, "--format=sarif", shard, "quiet", &r);
        assert_int_equal(r.exit_code, 0);
        kdc_run_free(&r);
    }
    lint_to("q.sarif", "--format=sarif", NULL, "quiet", &r);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    LINT(&r, g.dir, "merge", "q1.sarif", "q2.sarif", "-o", "qm.sarif");
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    char *whole = read_report("q.sarif"), *joined = read_report("qm.sarif");
    scale_same_report("suppressed findings, 2 shards", whole, joined);
    assert_int_equal(scratch_count(joined, "\"justification\": \"drained at shutdown\""), 2);
    free(whole);
    free(joined);
    /* an input error in the run: 2, in every shard and in the merge */
    for (int k = 1; k <= 2; k++) {
        char shard[32], out[32];
        snprintf(shard, sizeof shard, "--shard=%d/2", k);
        snprintf(out, sizeof out, "err%d.sarif", k);
        LINT(&r, g.dir, "--cache-dir=cache", "--format=sarif", shard, "-o", out, "small",
             "missing.c");
        EXPECT_ERR(&r, 2, "kdc-lint: error: missing.c: No such file or directory");
        kdc_run_free(&r);
    }
    LINT(&r, g.dir, "merge", "err1.sarif", "err2.sarif", "-o", "err.sarif");
    assert_int_equal(r.exit_code, 2);
    assert_string_equal(r.err, "");
    kdc_run_free(&r);
    char *merged = read_report("err.sarif");
    assert_non_null(strstr(merged, "\"executionSuccessful\": false"));
    assert_null(strstr(merged, "kdcShard"));
    free(merged);
}

/* Problems the SARIF Multitool reports in `rel` (a description in *why). */
static size_t validator_problems(const char *multitool, const char *rel, char **why) {
    char *file = scratch_path(g.dir, rel), *log = NULL;
    assert_true(asprintf(&log, "%s.validation.sarif", file) > 0);
    kdc_run_t r;
    int code = scratch_run(&r, g.dir, multitool, "validate", file, "-o", log, (char *)NULL);
    size_t len = 0, problems = code != 0;
    FILE *m = open_memstream(why, &len);
    fprintf(m, "exit %d\n", code);
    for (const char *l = r.out; (l = strstr(l, ": error ")); l++, problems++)
        fprintf(m, "console: %.300s\n", l);
    json_t *doc = json_load_file(log, 0, NULL);
    json_t *results = json_object_get(json_array_get(json_object_get(doc, "runs"), 0), "results");
    if (!json_is_array(results))
        problems++;
    for (size_t i = 0; i < json_array_size(results); i++) {
        const char *level = json_string_value(json_object_get(json_array_get(results, i), "level"));
        if (!level || !strcmp(level, "error") || !strcmp(level, "warning")) {
            char *t = json_dumps(json_array_get(results, i), JSON_COMPACT);
            fprintf(m, "log: %.1000s\n", t);
            free(t);
            problems++;
        }
    }
    json_decref(doc);
    fclose(m);
    kdc_run_free(&r);
    free(log);
    free(file);
    return problems;
}

static void a_shard_sarif_report_and_the_merged_one_pass_the_sarif_multitool(void **state) {
    (void)state;
    const char *multitool = getenv("KDC_SARIF_MULTITOOL");
    if (!multitool || access(multitool, X_OK) != 0)
        fail_msg("the SARIF Multitool is not installed (%s): run scripts/install-deps.sh",
                 multitool ? multitool : "KDC_SARIF_MULTITOOL unset");
    kdc_run_t r;
    lint_to("v1.sarif", "--format=sarif", "--shard=1/2", "small", &r);
    kdc_run_free(&r);
    lint_to("v2.sarif", "--format=sarif", "--shard=2/2", "small", &r);
    kdc_run_free(&r);
    LINT(&r, g.dir, "merge", "-o", "v.sarif", "v1.sarif", "v2.sarif");
    assert_int_equal(r.exit_code, 1);
    kdc_run_free(&r);
    const char *files[] = {"v1.sarif", "v.sarif"};
    for (size_t i = 0; i < 2; i++) {
        char *why = NULL;
        size_t n = validator_problems(multitool, files[i], &why);
        if (n)
            fail_msg("%s: %zu problem(s):\n%s", files[i], n, why);
        free(why);
    }
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            the_merged_shards_of_the_fixtures_are_the_unsharded_report_in_json_and_sarif),
        cmocka_unit_test(any_shard_count_merges_to_the_unsharded_report),
        cmocka_unit_test(a_shard_is_deterministic_and_exits_by_its_own_findings),
        cmocka_unit_test(bad_shard_specs_are_usage_errors),
        cmocka_unit_test(merge_refuses_reports_that_are_not_the_shards_of_one_run),
        cmocka_unit_test(merge_exits_as_the_unsharded_run_would),
        cmocka_unit_test(a_shard_sarif_report_and_the_merged_one_pass_the_sarif_multitool),
    };
    return cmocka_run_group_tests_name("kdc-lint --shard and merge", tests, setup, teardown);
}
