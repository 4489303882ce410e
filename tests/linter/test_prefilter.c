/*
 * The prefilter: translation units that cannot involve Kafka are not parsed,
 * and skipping them changes no finding.
 *
 *   test_prefilter     (KDC_LINT, KDC_FIXTURES_DIR from the environment)
 *
 * With a cache, the verdicts are stored and taken from it while nothing they
 * depend on has changed (the last test).
 *
 * The service (made at test time, src/):
 *   consumer.c   commits a message, then calls store_row()     (Kafka)
 *   rows.c       defines store_row(): a checksum, no effect    (no Kafka: a helper of consumer.c;
 *                without it store_row() is code outside the program, an effect, and
 *                commit-before-effect fires at consumer.c:10)
 *   producer.c   a transactional producer factory taking its id (Kafka)
 *   main.c       calls it with a constant id                    (no Kafka: a caller; without it
 *                the id is "a parameter no analysed code calls" and shared-transactional-id
 *                is not reported at main.c:5)
 *   ack.c        calls svc_ack_input(), a configured commit role (no Kafka identifier)
 *   quiet.c      holds a kdc-lint suppression comment           (no Kafka identifier)
 *   generated.c  includes a header named by a macro              (cannot be followed)
 *   typed.c      includes svc.h, a project header naming rd_kafka_s
 *   unrelated.c  a string helper nobody calls: the one unit skipped
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

static const struct {
    const char *path, *text;
} service[] = {
    {"src/consumer.c", "#include <librdkafka/rdkafka.h>\n"
                       "#include \"rows.h\"\n"
                       "\n"
                       "void consume_orders(rd_kafka_t *rk) {\n"
                       "    for (;;) {\n"
                       "        rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);\n"
                       "        if (!m)\n"
                       "            continue;\n"
                       "        /* committed, then stored: the store is no effect of its own */\n"
                       "        rd_kafka_commit_message(rk, m, 0);\n"
                       "        store_row(m->payload, m->len);\n"
                       "        rd_kafka_message_destroy(m);\n"
                       "    }\n"
                       "}\n"},
    {"src/rows.h", "#include <stddef.h>\n"
                   "int store_row(const void *row, size_t len);\n"},
    {"src/rows.c", "#include \"rows.h\"\n"
                   "\n"
                   "static unsigned sum;\n"
                   "int store_row(const void *row, size_t len) {\n"
                   "    const unsigned char *p = row;\n"
                   "    for (size_t i = 0; i < len; i++)\n"
                   "        sum += p[i];\n"
                   "    return 0;\n"
                   "}\n"},
    {"src/producer.c",
     "#include <librdkafka/rdkafka.h>\n"
     "#include <stddef.h>\n"
     "void abort_service(void);\n"
     "\n"
     "static void on_delivery(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {\n"
     "    (void)rk;\n"
     "    (void)opaque;\n"
     "    if (m->err)\n"
     "        abort_service();\n"
     "}\n"
     "\n"
     "void *start_producer(const char *txn_id) {\n"
     "    char err[256];\n"
     "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
     "    rd_kafka_conf_set_dr_msg_cb(conf, on_delivery);\n"
     "    if (rd_kafka_conf_set(conf, \"transactional.id\", txn_id, err, sizeof err) !=\n"
     "        RD_KAFKA_CONF_OK)\n"
     "        return NULL;\n"
     "    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);\n"
     "}\n"},
    {"src/main.c", "void *start_producer(const char *txn_id);\n"
                   "\n"
                   "int main(void) {\n"
                   "    /* every instance gets the same transactional id */\n"
                   "    return start_producer(\"orders-enricher\") ? 0 : 1;\n"
                   "}\n"},
    {"src/ack.c", "void svc_ack_input(int id);\n"
                  "\n"
                  "void finish(int id) {\n"
                  "    svc_ack_input(id);\n"
                  "}\n"},
    {"src/quiet.c", "int quiet(int x) {\n"
                    "    return x + 1; // kdc-lint: ignore[bare-commit] nothing commits here\n"
                    "}\n"},
    {"src/generated.c", "#define HEADER \"rows.h\"\n"
                        "#include HEADER\n"
                        "int generated(void) { return 0; }\n"},
    {"src/svc.h", "typedef struct rd_kafka_s *svc_handle_t;\n"},
    {"src/typed.c", "#include \"svc.h\"\n"
                    "int typed(svc_handle_t h) { return h != 0; }\n"},
    {"src/unrelated.c", "#include <string.h>\n"
                        "\n"
                        "size_t count_commas(const char *s) {\n"
                        "    size_t n = 0;\n"
                        "    for (; *s; s++)\n"
                        "        n += *s == ',';\n"
                        "    return n;\n"
                        "}\n"},
    {".kdc-lint.yaml", "functions:\n  commit: [svc_ack_input]\n"},
};

static struct {
    char *tree;
} g;

static void write_service(const char *dir) {
    for (size_t i = 0; i < sizeof service / sizeof *service; i++)
        scratch_write(dir, service[i].path, service[i].text);
}

static int setup(void **state) {
    (void)state;
    g.tree = scratch_dir("prefilter");
    write_service(g.tree);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.tree);
    free(g.tree);
    return 0;
}

/* The "kdc-lint: stats: skipped by the prefilter: PATH" lines, joined by spaces. */
static char *skipped_units(const char *err) {
    static const char key[] = "kdc-lint: stats: skipped by the prefilter: ";
    char *out = calloc(1, strlen(err) + 1);
    assert_non_null(out);
    for (const char *p = strstr(err, key); p; p = strstr(p, key)) {
        p += sizeof key - 1;
        size_t n = strcspn(p, "\n");
        if (*out)
            strcat(out, " ");
        strncat(out, p, n);
    }
    return out;
}

static json_t *report_of(const kdc_run_t *r) {
    json_error_t e;
    json_t *j = json_loads(r->out, 0, &e);
    if (!j) {
        scale_show(r);
        fail_msg("not JSON: %s", e.text);
    }
    return j;
}

/* Fails unless both reports have the same findings, errors and incomplete units. */
static void same_findings(const char *what, const kdc_run_t *a, const kdc_run_t *b) {
    json_t *x = report_of(a), *y = report_of(b);
    const char *keys[] = {"findings", "errors"};
    for (size_t i = 0; i < 2; i++)
        if (!json_equal(json_object_get(x, keys[i]), json_object_get(y, keys[i]))) {
            char *sx = json_dumps(json_object_get(x, keys[i]), JSON_INDENT(1));
            char *sy = json_dumps(json_object_get(y, keys[i]), JSON_INDENT(1));
            print_error("%s: \"%s\" differ\n--- prefilter\n%.4000s\n--- --no-prefilter\n%.4000s\n",
                        what, keys[i], sx, sy);
            free(sx);
            free(sy);
            fail_msg("%s: the prefilter changed the report", what);
        }
    json_decref(x);
    json_decref(y);
}

static long long stat_of(const kdc_run_t *r, const char *key) {
    json_t *j = report_of(r);
    json_t *v = json_object_get(json_object_get(j, "stats"), key);
    assert_true(json_is_integer(v));
    long long n = json_integer_value(v);
    json_decref(j);
    return n;
}

static void only_the_unit_that_cannot_involve_kafka_is_skipped_and_counted(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--no-cache", "--stats", "src");
    EXPECT_ERR(&r, 1,
               "kdc-lint: 1 of 9 translation units skipped: they cannot involve Kafka (prefilter; "
               "--no-prefilter analyses them)",
               "kdc-lint: stats: 9 translation units: 8 parsed, 0 from the cache (no cache), 1 "
               "skipped by the prefilter");
    char *skipped = skipped_units(r.err);
    assert_string_equal(skipped, "src/unrelated.c");
    free(skipped);
    kdc_run_free(&r);

    LINT(&r, g.tree, "--no-cache", "--format=json", "src");
    assert_int_equal(stat_of(&r, "translation_units"), 8);
    assert_int_equal(stat_of(&r, "skipped_by_prefilter"), 1);
    kdc_run_free(&r);

    LINT(&r, g.tree, "--no-cache", "--no-prefilter", "--format=json", "src");
    assert_int_equal(stat_of(&r, "translation_units"), 9);
    assert_int_equal(stat_of(&r, "skipped_by_prefilter"), 0);
    assert_null(strstr(r.err, "skipped"));
    kdc_run_free(&r);
}

static void the_findings_are_the_same_with_and_without_the_prefilter(void **state) {
    (void)state;
    const char *profiles[] = {"--profile=default", "--profile=strict"};
    for (size_t i = 0; i < 2; i++) {
        kdc_run_t on, off;
        LINT(&on, g.tree, "--no-cache", "--format=json", "--report-unused-suppressions",
             profiles[i], "src");
        LINT(&off, g.tree, "--no-cache", "--no-prefilter", "--format=json",
             "--report-unused-suppressions", profiles[i], "src");
        assert_int_equal(on.exit_code, off.exit_code);
        same_findings(profiles[i], &on, &off);
        /* the kept units' findings are there: the caller's, and the suppression's */
        assert_non_null(strstr(on.out, "\"file\": \"src/main.c\""));
        assert_non_null(strstr(on.out, "\"rule\": \"unused-suppression\""));
        kdc_run_free(&on);
        kdc_run_free(&off);
    }
}

static void a_helper_without_kafka_is_kept_because_its_body_decides_a_finding(void **state) {
    (void)state;
    kdc_run_t alone, all;
    /* without rows.c, store_row() is code outside the program: an effect after the commit */
    LINT(&alone, g.tree, "--no-cache", "src/consumer.c");
    EXPECT_ERR(&alone, 1, "");
    assert_non_null(strstr(alone.out, "src/consumer.c:10:9: warning: the message is committed "
                                      "before its effect"));
    LINT(&all, g.tree, "--no-cache", "--stats", "src");
    assert_null(strstr(all.out, "src/consumer.c:10:9"));
    assert_null(strstr(all.err, "skipped by the prefilter: src/rows.c"));
    kdc_run_free(&alone);
    kdc_run_free(&all);
}

static void a_caller_without_kafka_is_kept_because_its_call_decides_a_finding(void **state) {
    (void)state;
    kdc_run_t alone, all;
    LINT(&alone, g.tree, "--no-cache", "src/producer.c");
    assert_int_equal(alone.exit_code, 0); /* the id is a parameter no analysed code calls */
    LINT(&all, g.tree, "--no-cache", "--stats", "src");
    assert_non_null(strstr(all.out, "src/main.c:5:12: warning: transactional.id is the constant "
                                    "\"orders-enricher\""));
    assert_null(strstr(all.err, "skipped by the prefilter: src/main.c"));
    kdc_run_free(&alone);
    kdc_run_free(&all);
}

/* A copy of the service with one file replaced (or removed: text NULL). */
static char *variant(const char *path, const char *text) {
    char *d = scratch_dir("prefilter-variant");
    write_service(d);
    char *p = scratch_path(d, path);
    remove(p);
    free(p);
    if (text)
        scratch_write(d, path, text);
    return d;
}

static void roles_suppressions_macro_includes_and_kafka_headers_each_keep_a_unit(void **state) {
    (void)state;
    struct {
        const char *path, *text, *now_skipped;
    } cases[] = {
        /* without the configured role, ack.c names nothing Kafka */
        {".kdc-lint.yaml", NULL, "src/ack.c src/unrelated.c"},
        /* a role given as a qualified C++ pattern still names svc_ack_input */
        {".kdc-lint.yaml", "functions:\n  commit: [\"svc::io::svc_ack_*\"]\n", "src/unrelated.c"},
        {"src/quiet.c", "int quiet(int x) {\n    return x + 1; // no directive here\n}\n",
         "src/quiet.c src/unrelated.c"},
        {"src/generated.c", "#include \"rows.h\"\nint generated(void) { return 0; }\n",
         "src/generated.c src/unrelated.c"},
        {"src/svc.h", "typedef struct queue_s *svc_handle_t;\n", "src/typed.c src/unrelated.c"},
        /* the name in a comment or a string is no mention */
        {"src/unrelated.c",
         "/* rd_kafka_commit is not called here */\nconst char *s = \"rd_kafka_t\";\n",
         "src/unrelated.c"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char *d = variant(cases[i].path, cases[i].text);
        kdc_run_t r;
        LINT(&r, d, "--no-cache", "--stats", "src");
        char *skipped = skipped_units(r.err);
        if (strcmp(skipped, cases[i].now_skipped)) {
            scale_show(&r);
            fail_msg("case %zu (%s): skipped \"%s\", expected \"%s\"", i, cases[i].path, skipped,
                     cases[i].now_skipped);
        }
        free(skipped);
        kdc_run_free(&r);
        scratch_remove(d);
        free(d);
    }
}

/* Kafka-free units beside the fixtures: four a real monorepo would hold, one defining
 * db_write(), which fixtures call without defining (a helper: it is kept). */
static const struct {
    const char *path, *text;
} decoys[] = {
    {"strings.c", "#include <stddef.h>\n"
                  "size_t count_char(const char *s, char c) {\n"
                  "    size_t n = 0;\n"
                  "    for (; *s; s++)\n"
                  "        n += *s == c;\n"
                  "    return n;\n"
                  "}\n"},
    {"mathx.c", "double clampd(double x, double lo, double hi) {\n"
                "    return x < lo ? lo : x > hi ? hi : x;\n"
                "}\n"},
    {"escape.c", "#include <stdio.h>\n"
                 "void json_escape(FILE *o, const char *s) {\n"
                 "    for (; *s; s++) {\n"
                 "        if (*s == '\"' || *s == '\\\\')\n"
                 "            fputc('\\\\', o);\n"
                 "        fputc(*s, o);\n"
                 "    }\n"
                 "}\n"},
    {"ini.c", "#include <string.h>\n"
              "struct kv { const char *key, *value; };\n"
              "static struct kv table[8];\n"
              "const char *ini_get(const char *key) {\n"
              "    for (int i = 0; i < 8; i++)\n"
              "        if (table[i].key && !strcmp(table[i].key, key))\n"
              "            return table[i].value;\n"
              "    return 0;\n"
              "}\n"},
    {"db.c", "#include <stddef.h>\n"
             "static size_t bytes;\n"
             "int db_write(const void *row, size_t len) {\n"
             "    (void)row;\n"
             "    bytes += len;\n"
             "    return 0;\n"
             "}\n"},
};

static void skipping_units_beside_the_fixtures_changes_no_fixture_finding(void **state) {
    (void)state;
    const char *live = getenv("KDC_FIXTURES_DIR");
    assert_non_null(live);
    char *d = scratch_dir("prefilter-fixtures");
    char *fixtures = scratch_path(d, "fixtures");
    kdc_run_t on, off;
    assert_int_equal(scratch_run(&on, NULL, "cp", "-a", live, fixtures, (const char *)NULL), 0);
    kdc_run_free(&on);
    for (size_t i = 0; i < sizeof decoys / sizeof *decoys; i++) {
        char rel[64];
        snprintf(rel, sizeof rel, "monorepo/%s", decoys[i].path);
        scratch_write(d, rel, decoys[i].text);
    }
    LINT(&on, d, "--no-cache", "--stats", "--format=json", "fixtures", "monorepo");
    LINT(&off, d, "--no-cache", "--no-prefilter", "--format=json", "fixtures", "monorepo");
    assert_int_equal(on.exit_code, 1);
    assert_int_equal(off.exit_code, 1);
    char *skipped = skipped_units(on.err);
    assert_string_equal(skipped, "monorepo/escape.c monorepo/ini.c monorepo/mathx.c "
                                 "monorepo/strings.c");
    free(skipped);
    same_findings("fixtures", &on, &off);
    assert_int_equal(stat_of(&on, "skipped_by_prefilter"), 4);
    assert_int_equal(stat_of(&on, "translation_units") + 4, stat_of(&off, "translation_units"));
    kdc_run_free(&on);
    kdc_run_free(&off);
    scratch_remove(d);
    free(d);
    free(fixtures);
}

/* Whether --stats says the verdicts came from the cache. */
static int prefilter_cached(const kdc_run_t *r) {
    if (!strstr(r->err, "kdc-lint: stats: ")) {
        scale_show(r);
        fail_msg("no --stats line");
    }
    return strstr(r->err, "s, from the cache; models merged") != NULL;
}

/* Runs kdc-lint with the cache on d and checks what was skipped and whether the verdicts
 * came from the cache. */
static void expect_verdicts(const char *d, const char *skipped_want, int cached) {
    kdc_run_t r;
    LINT(&r, d, "--stats", "--extra-arg=-Iinc_a", "--extra-arg=-Iinc_b", "src");
    char *skipped = skipped_units(r.err);
    if (strcmp(skipped, skipped_want) || prefilter_cached(&r) != cached) {
        scale_show(&r);
        fail_msg("skipped \"%s\" (want \"%s\"), verdicts %sfrom the cache (want %s)", skipped,
                 skipped_want, prefilter_cached(&r) ? "" : "not ", cached ? "so" : "not");
    }
    free(skipped);
    kdc_run_free(&r);
}

/* The verdicts are cached with every file read and every directory an include was looked
 * up in: a re-run reads no source; a changed source, a header that now comes first on the
 * include path, or other function roles make them again. */
static void the_verdicts_are_cached_until_a_source_an_include_path_or_a_role_changes(
    void **state) {
    (void)state;
    char *d = variant("src/unrelated.c", "#include \"conf.h\"\n"
                                         "int unrelated(void) { return CONF_X; }\n");
    scratch_write(d, "inc_b/conf.h", "#define CONF_X 1\n");
    expect_verdicts(d, "src/unrelated.c", 0);
    expect_verdicts(d, "src/unrelated.c", 1);
    /* the cached verdicts give the report of --no-cache */
    kdc_run_t cached, fresh;
    LINT(&cached, d, "--format=json", "--extra-arg=-Iinc_a", "--extra-arg=-Iinc_b", "src");
    LINT(&fresh, d, "--no-cache", "--format=json", "--extra-arg=-Iinc_a", "--extra-arg=-Iinc_b",
         "src");
    scale_same_report("cached verdicts", fresh.out, cached.out);
    kdc_run_free(&cached);
    kdc_run_free(&fresh);
    /* a header found first now, in an earlier include directory, names Kafka */
    scratch_write(d, "inc_a/conf.h", "typedef struct rd_kafka_s *conf_t;\n#define CONF_X 2\n");
    expect_verdicts(d, "", 0);
    expect_verdicts(d, "", 1);
    char *first = scratch_path(d, "inc_a/conf.h");
    assert_int_equal(remove(first), 0);
    free(first);
    expect_verdicts(d, "src/unrelated.c", 0);
    /* the header's contents */
    scratch_write(d, "inc_b/conf.h", "#define CONF_X rd_kafka_version()\n");
    expect_verdicts(d, "", 0);
    scratch_write(d, "inc_b/conf.h", "#define CONF_X 1\n");
    expect_verdicts(d, "src/unrelated.c", 0);
    /* a role naming the unit's function keeps it; the verdicts of other roles are others */
    scratch_write(d, ".kdc-lint.yaml", "functions:\n  commit: [svc_ack_input, unrelated]\n");
    expect_verdicts(d, "", 0);
    scratch_write(d, ".kdc-lint.yaml", "functions:\n  commit: [svc_ack_input]\n");
    expect_verdicts(d, "src/unrelated.c", 1);
    scratch_remove(d);
    free(d);
}

/* An include directory reached through a symbolic link (-Iinc_a, inc_a -> plain):
 * retargeted to a directory whose header of the same name names Kafka, the unit is kept,
 * as --no-cache keeps it; the old target and its header are unchanged. */
static void an_include_directory_link_retargeted_makes_the_verdicts_again(void **state) {
    (void)state;
    char *d = variant("src/unrelated.c", "#include \"conf.h\"\n"
                                         "int unrelated(void) { return CONF_X; }\n");
    scratch_write(d, "plain/conf.h", "#define CONF_X 1\n");
    scratch_write(d, "kafka/conf.h", "typedef struct rd_kafka_s *conf_t;\n#define CONF_X 2\n");
    scratch_write(d, "inc_b/.keep", "");
    char *link = scratch_path(d, "inc_a");
    assert_int_equal(symlink("plain", link), 0);
    expect_verdicts(d, "src/unrelated.c", 0);
    expect_verdicts(d, "src/unrelated.c", 1);
    assert_int_equal(unlink(link), 0);
    assert_int_equal(symlink("kafka", link), 0);
    kdc_run_t fresh;
    LINT(&fresh, d, "--no-cache", "--stats", "--extra-arg=-Iinc_a", "--extra-arg=-Iinc_b", "src");
    char *skipped = skipped_units(fresh.err);
    assert_string_equal(skipped, "");
    free(skipped);
    kdc_run_free(&fresh);
    expect_verdicts(d, "", 0);
    free(link);
    scratch_remove(d);
    free(d);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(only_the_unit_that_cannot_involve_kafka_is_skipped_and_counted),
        cmocka_unit_test(the_findings_are_the_same_with_and_without_the_prefilter),
        cmocka_unit_test(a_helper_without_kafka_is_kept_because_its_body_decides_a_finding),
        cmocka_unit_test(a_caller_without_kafka_is_kept_because_its_call_decides_a_finding),
        cmocka_unit_test(roles_suppressions_macro_includes_and_kafka_headers_each_keep_a_unit),
        cmocka_unit_test(skipping_units_beside_the_fixtures_changes_no_fixture_finding),
        cmocka_unit_test(
            the_verdicts_are_cached_until_a_source_an_include_path_or_a_role_changes),
        cmocka_unit_test(an_include_directory_link_retargeted_makes_the_verdicts_again),
    };
    return cmocka_run_group_tests_name("kdc-lint prefilter", tests, setup, teardown);
}
