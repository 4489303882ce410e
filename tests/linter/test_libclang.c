/*
 * libclang is loaded only when something is parsed (linter/frontend/libclang_lazy.h):
 * kdc-lint is not linked against it, a run that takes everything from the
 * cache never maps it (with one process or several), and a libclang that
 * cannot be loaded is one message and exit status 2, never a crash.
 *
 *   test_libclang      (KDC_LINT from the environment)
 *
 * The service (made at test time): three units, each with a compilation
 * database entry in build/: consumer.c (a bare commit unless QUIET is
 * defined), producer.c, and helper.c, which the prefilter skips. The
 * database, as libclang reads it, is cached too (linter/inputs/compdb.h).
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

#include "scale.h"

static const char consumer_c[] = "#include <librdkafka/rdkafka.h>\n"
                                 "void drain(rd_kafka_t *consumer) {\n"
                                 "#ifndef QUIET\n"
                                 "    rd_kafka_commit(consumer, NULL, 0);\n"
                                 "#endif\n"
                                 "    (void)consumer;\n"
                                 "}\n";
static const char producer_c[] = "#include <librdkafka/rdkafka.h>\n"
                                 "rd_kafka_t *make_producer(void) {\n"
                                 "    return rd_kafka_new(RD_KAFKA_PRODUCER, NULL, NULL, 0);\n"
                                 "}\n";
static const char helper_c[] = "int helper(int x) { return x + 1; }\n";

static struct {
    char *tree;
} g;

/* build/compile_commands.json: quoting clang splits its own way, a compiler whose name
 * implies a target (libclang adds --target=x86_64-linux-gnu), `extra` in consumer.c's
 * command. */
static void write_db(const char *extra) {
    char db[8192];
    snprintf(db, sizeof db,
             "[{\"directory\": \"%s/src\", \"file\": \"consumer.c\", \"command\": "
             "\"x86_64-linux-gnu-gcc -c -DBUILD='\\\"x y\\\"' -DNAME=a\\\\ b %s consumer.c "
             "-o consumer.o\"},\n"
             " {\"directory\": \"%s/src\", \"file\": \"producer.c\", \"arguments\": [\"cc\", "
             "\"-c\", \"-DSPACED=a b\", \"producer.c\"]},\n"
             " {\"directory\": \"%s/src\", \"file\": \"helper.c\", \"command\": \"cc -c "
             "helper.c\"}]\n",
             g.tree, extra, g.tree, g.tree);
    scratch_write(g.tree, "build/compile_commands.json", db);
}

static int each_setup(void **state) {
    (void)state;
    g.tree = scratch_dir("libclang");
    scratch_write(g.tree, "src/consumer.c", consumer_c);
    scratch_write(g.tree, "src/producer.c", producer_c);
    scratch_write(g.tree, "src/helper.c", helper_c);
    write_db("");
    return 0;
}

static int each_teardown(void **state) {
    (void)state;
    scratch_remove(g.tree);
    free(g.tree);
    return 0;
}

static void expect_in(const kdc_run_t *r, const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        scale_show(r);
        fail_msg("want \"%s\"", needle);
    }
}

static void kdc_lint_is_not_linked_against_libclang(void **state) {
    (void)state;
    kdc_run_t r;
    assert_int_equal(scratch_run(&r, NULL, "readelf", "-d", scale_lint_path(), (const char *)NULL),
                     0);
    expect_in(&r, r.out, "(NEEDED)"); /* the dynamic section was read */
    if (strstr(r.out, "[libclang") || strstr(r.out, "[libLLVM")) {
        scale_show(&r);
        fail_msg("kdc-lint needs libclang or libLLVM at start-up");
    }
    kdc_run_free(&r);
}

static void a_run_that_parses_loads_libclang_and_a_warm_one_does_not(void **state) {
    (void)state;
    const char *jobs[] = {"-j1", "-j2"};
    for (size_t j = 0; j < 2; j++) {
        kdc_run_t cold, warm;
        char dir[32];
        snprintf(dir, sizeof dir, "--cache-dir=c%zu", j);
        LINT(&cold, g.tree, jobs[j], dir, "--stats", "--format=json", "src");
        expect_in(&cold, cold.err, ": 2 parsed, 0 from the cache,");
        expect_in(&cold, cold.err, "; libclang loaded; ");
        LINT(&warm, g.tree, jobs[j], dir, "--stats", "--format=json", "src");
        expect_in(&warm, warm.err, ": 0 parsed, 2 from the cache,");
        expect_in(&warm, warm.err, "the analysis from the cache");
        expect_in(&warm, warm.err, "; libclang not loaded; ");
        assert_int_equal(warm.exit_code, 1);
        scale_same_report(jobs[j], cold.out, warm.out);
        kdc_run_free(&cold);
        kdc_run_free(&warm);
    }
}

/* The database as libclang split it is cached by its bytes: a warm run with -p takes it from
 * the cache, and every unit's arguments are the same (its model's entry is keyed by them). */
static void a_warm_run_with_a_compilation_database_does_not_load_libclang_either(
    void **state) {
    (void)state;
    const char *jobs[] = {"-j1", "-j2"};
    for (size_t j = 0; j < 2; j++) {
        kdc_run_t cold, warm;
        char dir[32];
        snprintf(dir, sizeof dir, "--cache-dir=c%zu", j);
        LINT(&cold, g.tree, jobs[j], dir, "--stats", "--format=json", "-p", "build");
        expect_in(&cold, cold.err, ": 2 parsed, 0 from the cache,");
        expect_in(&cold, cold.out, "\"rule\": \"bare-commit\"");
        LINT(&warm, g.tree, jobs[j], dir, "--stats", "--format=json", "-p", "build");
        expect_in(&warm, warm.err, ": 0 parsed, 2 from the cache,");
        expect_in(&warm, warm.err, "; libclang not loaded; ");
        scale_same_report(jobs[j], cold.out, warm.out);
        kdc_run_free(&cold);
        kdc_run_free(&warm);
    }
}

/* Other bytes are another database: libclang reads it again and its flags count. */
static void a_changed_compilation_database_is_read_by_libclang_again(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "-p", "build");
    expect_in(&r, r.out, "[bare-commit]");
    kdc_run_free(&r);
    write_db("-DQUIET");
    LINT(&r, g.tree, "--stats", "-p", "build");
    expect_in(&r, r.err, ": 1 parsed, 1 from the cache,");
    expect_in(&r, r.err, "; libclang loaded; ");
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "-p", "build");
    expect_in(&r, r.err, ": 0 parsed, 2 from the cache,");
    expect_in(&r, r.err, "; libclang not loaded; ");
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
}

/* A response file (@file) is read by libclang from disk: such a database is not cached,
 * libclang reads it on every run, and what the file says counts. */
static void a_compilation_database_naming_a_response_file_is_read_by_libclang_every_time(
    void **state) {
    (void)state;
    scratch_write(g.tree, "src/quiet.rsp", "-DQUIET\n");
    write_db("@quiet.rsp");
    kdc_run_t r;
    for (int i = 0; i < 2; i++) {
        LINT(&r, g.tree, "--stats", "-p", "build");
        expect_in(&r, r.err, i ? ": 0 parsed, 2 from the cache," : ": 2 parsed, 0 from the cache,");
        expect_in(&r, r.err, "; libclang loaded; ");
        assert_int_equal(r.exit_code, 0); /* -DQUIET from the file */
        kdc_run_free(&r);
    }
    scratch_write(g.tree, "src/quiet.rsp", "-DLOUD\n");
    LINT(&r, g.tree, "--stats", "-p", "build");
    expect_in(&r, r.out, "[bare-commit]");
    kdc_run_free(&r);
}

/* libclang reads compile_flags.txt when it is next to compile_commands.json (another of
 * its databases): one that appears after the database was cached decides the units as it
 * does without a cache, whatever the unchanged bytes of compile_commands.json say. */
static void a_compile_flags_txt_that_appears_after_the_database_was_cached_counts(
    void **state) {
    (void)state;
    kdc_run_t r, ref;
    LINT(&r, g.tree, "--cache-dir=c", "--format=json", "-p", "build");
    expect_in(&r, r.out, "\"rule\": \"bare-commit\"");
    kdc_run_free(&r);
    scratch_write(g.tree, "build/compile_flags.txt", "-DQUIET\n");
    LINT(&ref, g.tree, "--no-cache", "--format=json", "-p", "build");
    LINT(&r, g.tree, "--cache-dir=c", "--format=json", "-p", "build");
    assert_int_equal(r.exit_code, ref.exit_code);
    scale_same_report("compile_flags.txt", ref.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&ref);
}

/* One line naming the library and why, exit status 2, no report: with one process and
 * with workers (the driver loads it before forking them, so it is said once). */
static void a_libclang_that_cannot_be_loaded_is_one_message_and_exit_2(void **state) {
    (void)state;
    assert_int_equal(setenv("KDC_LINT_LIBCLANG", "/nonexistent/libclang.so.1", 1), 0);
    const char *jobs[] = {"-j1", "-j3"};
    for (size_t j = 0; j < 2; j++) {
        kdc_run_t r;
        LINT(&r, g.tree, jobs[j], "--no-cache", "--format=json", "src");
        assert_int_equal(r.exit_code, 2);
        assert_string_equal(r.out, "");
        assert_string_equal(r.err,
                            "kdc-lint: cannot load libclang (/nonexistent/libclang.so.1): "
                            "/nonexistent/libclang.so.1: cannot open shared object file: No "
                            "such file or directory\n");
        kdc_run_free(&r);
    }
    /* a file that is no library */
    scratch_write(g.tree, "not-a-library.so", "not ELF\n");
    char *fake = scratch_path(g.tree, "not-a-library.so");
    assert_int_equal(setenv("KDC_LINT_LIBCLANG", fake, 1), 0);
    kdc_run_t r;
    LINT(&r, g.tree, "--no-cache", "src");
    assert_int_equal(r.exit_code, 2);
    assert_int_equal(scratch_count(r.err, "\n"), 1);
    char want[4200];
    snprintf(want, sizeof want, "kdc-lint: cannot load libclang (%s): ", fake);
    assert_true(!strncmp(r.err, want, strlen(want)));
    kdc_run_free(&r);
    free(fake);
    unsetenv("KDC_LINT_LIBCLANG");
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(kdc_lint_is_not_linked_against_libclang),
        cmocka_unit_test_setup_teardown(a_run_that_parses_loads_libclang_and_a_warm_one_does_not,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_warm_run_with_a_compilation_database_does_not_load_libclang_either, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(a_changed_compilation_database_is_read_by_libclang_again,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_compilation_database_naming_a_response_file_is_read_by_libclang_every_time,
            each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_compile_flags_txt_that_appears_after_the_database_was_cached_counts,
            each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_libclang_that_cannot_be_loaded_is_one_message_and_exit_2, each_setup,
            each_teardown),
    };
    return cmocka_run_group_tests_name("kdc-lint loads libclang only to parse", tests, NULL,
                                       NULL);
}
