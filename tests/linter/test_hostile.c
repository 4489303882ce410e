/*
 * kdc-lint against hostile input (issue 16; the attack table in docs/reliability.md):
 * every input that is not what it claims to be is refused with one message and exit 2,
 * before anything could block, while every other input is still analysed and reported;
 * nothing but a regular file is ever replaced; no damaged report crashes kdc-lint merge.
 * Each kdc-lint run has a deadline (a hang fails the test, it does not stall CI).
 *
 *   test_hostile       (KDC_LINT)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "scale.h"

/* A deadline far above what these small runs take, far below a CI time limit. */
#define DEADLINE_S 60

static char *root; /* a scratch directory per test */

static const char bare_commit[] = "#include <librdkafka/rdkafka.h>\n"
                                  "void drain(rd_kafka_t *consumer) {\n"
                                  "    rd_kafka_commit(consumer, NULL, 0);\n"
                                  "}\n";
/* the finding of bare_commit in good.c, as the text report's first line shows it */
#define GOOD_FINDING "good.c:3:5: warning: rd_kafka_commit without an offset list"

static int setup(void **state) {
    (void)state;
    root = scratch_dir("hostile");
    scratch_write(root, "good.c", bare_commit);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(root);
    free(root);
    return 0;
}

/* Runs kdc-lint in root with the NULL-terminated arguments, stdin an open and empty
 * pipe when stdin_pipe; fails the test when it does not end within the deadline. */
static int hostile_run(kdc_run_t *r, int stdin_pipe, ...) {
    const char *argv[64] = {scale_lint_path()};
    size_t n = 1;
    va_list ap;
    va_start(ap, stdin_pipe);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 63;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    kdc_run_opts_t o = {.timeout = DEADLINE_S, .stdin_pipe = stdin_pipe};
    if (kdc_run_ex(root, (char *const *)argv, &o, r) != 0)
        fail_msg("cannot run %s", argv[0]);
    if (r->timed_out) {
        scale_show(r);
        fail_msg("kdc-lint did not end within %d s (a hang)", DEADLINE_S);
    }
    if (r->signaled) {
        scale_show(r);
        fail_msg("kdc-lint was killed by signal %d", r->exit_code - 128);
    }
    return r->exit_code;
}
#define RUN(r, ...) hostile_run((r), 0, __VA_ARGS__, (const char *)NULL)
#define RUN_STDIN_PIPE(r, ...) hostile_run((r), 1, __VA_ARGS__, (const char *)NULL)

static void expect_in(const char *what, const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        print_error("%s:\n%s\n", what, text);
        fail_msg("%s lacks \"%s\"", what, needle);
    }
}

/* Runs kdc-lint and fails unless it ends within `limit` seconds: for input the code took
 * minutes on before (exponential or quadratic), and takes well under a second now. */
static void expect_quick(const kdc_run_t *r, double limit, const char *what) {
    if (r->seconds > limit)
        fail_msg("%s took %.1f s (limit %.0f s): not linear", what, r->seconds, limit);
}

static void make_fifo(const char *rel) {
    char *p = scratch_path(root, rel);
    assert_int_equal(mkfifo(p, 0644), 0);
    free(p);
}

static mode_t type_of(const char *rel) {
    char *p = scratch_path(root, rel);
    struct stat st;
    assert_int_equal(lstat(p, &st), 0);
    free(p);
    return st.st_mode & S_IFMT;
}

/* ---------- 1. kdc-lint merge of damaged shard reports ---------- */

/* Writes a shard report of good.c (--shard=1/1) with its "shard" object edited. */
static void shard_report_with(const char *rel, json_int_t index, json_int_t count,
                              json_int_t total) {
    kdc_run_t r;
    assert_int_equal(
        RUN(&r, "--no-cache", "--format=json", "--shard=1/1", "-o", "s.json", "good.c"), 1);
    kdc_run_free(&r);
    char *path = scratch_path(root, "s.json");
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e);
    assert_non_null(doc);
    json_t *shard = json_object_get(doc, "shard");
    assert_true(json_is_object(shard));
    json_object_set_new(shard, "index", json_integer(index));
    json_object_set_new(shard, "count", json_integer(count));
    json_object_set_new(shard, "total", json_integer(total));
    char *out = scratch_path(root, rel);
    assert_int_equal(json_dump_file(doc, out, JSON_INDENT(2)), 0);
    json_decref(doc);
    free(out);
    free(path);
}

static void merge_refuses_a_shard_count_of_2_to_the_32_instead_of_overflowing(void **state) {
    (void)state;
    /* truncated to unsigned, 2^32 was shard 3 of 0: a write past a one-slot array */
    shard_report_with("big.json", 3, (json_int_t)1 << 32, 1);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "merge", "big.json"), 2);
    expect_in("stderr", r.err,
              "kdc-lint merge: error: big.json: its shard description is damaged (shard 3 of "
              "4294967296; N is at most 1000)\n");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
    /* 2^32 + 1 was shard 1 of 1: merged as if whole */
    shard_report_with("wrap.json", 1, ((json_int_t)1 << 32) + 1, 1);
    assert_int_equal(RUN(&r, "merge", "wrap.json"), 2);
    expect_in("stderr", r.err, "wrap.json: its shard description is damaged");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
}

static void merge_refuses_a_huge_total_before_allocating_for_it(void **state) {
    (void)state;
    shard_report_with("total.json", 1, 1, (json_int_t)1 << 62);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "merge", "total.json"), 2);
    expect_in("stderr", r.err,
              "kdc-lint merge: error: the shards hold 1 of the run's 4611686018427387904 "
              "findings\n");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
}

/* ---------- 2. outputs replace nothing but a regular file ---------- */

static void write_baseline_onto_a_fifo_refuses_and_leaves_it_a_fifo(void **state) {
    (void)state;
    /* a FIFO stands for any file that is not regular (/dev/full as root was replaced) */
    make_fifo("base.fifo");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--write-baseline=base.fifo", "good.c"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: base.fifo: cannot write the baseline: a FIFO, not a regular "
              "file: not replacing it");
    assert_int_equal(type_of("base.fifo"), S_IFIFO);
    kdc_run_free(&r);
}

static void write_baseline_through_a_link_replaces_the_file_it_names(void **state) {
    (void)state;
    scratch_write(root, "real-baseline.json", "{}\n");
    char *link = scratch_path(root, "kb.json");
    assert_int_equal(symlink("real-baseline.json", link), 0);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--write-baseline=kb.json", "good.c"), 0);
    kdc_run_free(&r);
    assert_int_equal(type_of("kb.json"), S_IFLNK);
    char *text = scratch_read(root, "real-baseline.json");
    expect_in("the baseline", text, "\"rule\": \"bare-commit\"");
    free(text);
    /* a link that names nothing is not followed: it could point anywhere on disk */
    char *dangling = scratch_path(root, "nowhere.json");
    assert_int_equal(symlink("no-such-dir/baseline.json", dangling), 0);
    assert_int_equal(RUN(&r, "--no-cache", "--write-baseline=nowhere.json", "good.c"), 2);
    expect_in("stderr", r.err,
              "nowhere.json: cannot write the baseline: a symbolic link that names nothing");
    assert_int_equal(type_of("nowhere.json"), S_IFLNK);
    kdc_run_free(&r);
    free(dangling);
    free(link);
}

/* ---------- 3. inputs are regular files, refused before any blocking read ---------- */

static void an_include_of_dev_stdin_with_stdin_a_pipe_is_an_input_error_not_a_hang(void **s) {
    (void)s;
    scratch_write(root, "stdin.c",
                  "#include \"/dev/stdin\"\n"
                  "#include <librdkafka/rdkafka.h>\n"
                  "void drain2(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); }\n");
    for (int j = 0; j < 2; j++) { /* in worker processes, and in kdc-lint's own */
        kdc_run_t r;
        assert_int_equal(RUN_STDIN_PIPE(&r, "--no-cache", j ? "-j1" : "-j2", "stdin.c", "good.c"),
                         2);
        /* kdc-lint's stdin is /dev/null (it reads none): never the user's pipe */
        expect_in("stderr", r.err,
                  "kdc-lint: error: stdin.c: /dev/stdin: a character device, not a regular "
                  "file: not analysed\n");
        expect_in("stdout", r.out, GOOD_FINDING);
        kdc_run_free(&r);
    }
}

static void an_include_of_dev_zero_is_refused_before_it_is_read(void **state) {
    (void)state;
    /* read to its end, /dev/zero grew libclang to 2 GB before it aborted */
    scratch_write(root, "zero.c", "#include \"/dev/zero\"\nint x;\n");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--no-prefilter", "zero.c", "good.c"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: zero.c: /dev/zero: a character device, not a regular file: not "
              "analysed\n");
    expect_in("stdout", r.out, GOOD_FINDING);
    expect_quick(&r, 15, "#include \"/dev/zero\"");
    kdc_run_free(&r);
}

static void a_header_that_is_a_fifo_is_an_input_error_not_a_hang(void **state) {
    (void)state;
    make_fifo("fifo.h");
    scratch_write(root, "fifo.c",
                  "#include \"fifo.h\"\n"
                  "#include <librdkafka/rdkafka.h>\n"
                  "void drain3(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); }\n");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "fifo.c", "good.c"), 2);
    char *want = NULL;
    assert_true(asprintf(&want,
                         "kdc-lint: error: fifo.c: %s/fifo.h: a FIFO, not a regular "
                         "file: not analysed\n",
                         root) > 0);
    expect_in("stderr", r.err, want);
    expect_in("stdout", r.out, GOOD_FINDING);
    free(want);
    kdc_run_free(&r);
}

static void a_compilation_database_that_is_a_fifo_is_refused_with_exit_2(void **state) {
    (void)state;
    char *dir = scratch_path(root, "db");
    assert_int_equal(mkdir(dir, 0755), 0);
    make_fifo("db/compile_commands.json");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "-p", "db"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: db/compile_commands.json: cannot read the compilation "
              "database: a FIFO, not a regular file\n");
    kdc_run_free(&r);
    free(dir);
}

static void forced_includes_and_response_files_of_dev_stdin_are_input_errors(void **state) {
    (void)state;
    scratch_write(root, "e.c", bare_commit);
    scratch_write(root, "f.c", bare_commit);
    char *db = NULL;
    assert_true(asprintf(&db,
                         "[{\"directory\": \"%s\", \"file\": \"good.c\", \"arguments\": "
                         "[\"cc\", \"-c\", \"good.c\"]},\n"
                         " {\"directory\": \"%s\", \"file\": \"e.c\", \"arguments\": "
                         "[\"cc\", \"-include\", \"/dev/stdin\", \"-c\", \"e.c\"]},\n"
                         " {\"directory\": \"%s\", \"file\": \"f.c\", \"arguments\": "
                         "[\"cc\", \"@/dev/stdin\", \"-c\", \"f.c\"]}]\n",
                         root, root, root) > 0);
    scratch_write(root, "stdindb/compile_commands.json", db);
    free(db);
    kdc_run_t r;
    assert_int_equal(RUN_STDIN_PIPE(&r, "--no-cache", "-p", "stdindb"), 2);
    expect_in("stderr", r.err,
              "e.c: /dev/stdin: a character device, not a regular file: not analysed\n");
    expect_in("stderr", r.err,
              "f.c: response file /dev/stdin: a character device, not a regular file: not "
              "analysed\n");
    expect_in("stdout", r.out, GOOD_FINDING);
    assert_null(strstr(r.out, "e.c:3:5"));
    assert_null(strstr(r.out, "f.c:3:5"));
    kdc_run_free(&r);
}

static void a_merge_input_that_is_a_fifo_is_refused_not_waited_for(void **state) {
    (void)state;
    make_fifo("shard.fifo");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "merge", "shard.fifo"), 2);
    assert_string_equal(r.err, "kdc-lint merge: error: shard.fifo: a FIFO, not a regular file\n");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
}

static void a_baseline_that_is_a_fifo_is_refused_not_waited_for(void **state) {
    (void)state;
    make_fifo("old.fifo");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--baseline=old.fifo", "good.c"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: old.fifo: the baseline is not a regular file (a FIFO, not a "
              "regular file)");
    kdc_run_free(&r);
}

/* ---------- 9. control characters in names and messages ---------- */

/* A file whose name forges a finding line and clears the screen. */
#define FORGED_NAME "pay\npayments.c:10:5: warning: forged finding [bare-commit]\n\033[2Jx.c"
#define FORGED_SHOWN "pay\\npayments.c:10:5: warning: forged finding [bare-commit]\\n\\x1b[2Jx.c"

static void a_file_name_cannot_forge_a_finding_line_in_the_text_report(void **state) {
    (void)state;
    scratch_write(root, "forge/" FORGED_NAME, bare_commit);
    scratch_write(root, "forge/bin\033[31m.c", "int x;\n");
    char *bin = scratch_path(root, "forge/bin\033[31m.c");
    FILE *f = fopen(bin, "w");
    assert_non_null(f);
    fwrite("int x;\0\n", 1, 9, f); /* binary: an input error naming the file */
    fclose(f);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--color=never", "forge"), 2);
    /* one finding line, the name escaped; no line starts with the forged location */
    assert_int_equal(scratch_count(r.out, ": warning: "), 2); /* the real one, and the text */
    assert_null(strstr(r.out, "\npayments.c:10:5"));
    expect_in("stdout", r.out, "forge/" FORGED_SHOWN ":3:5: warning: rd_kafka_commit");
    assert_null(strchr(r.out, '\033'));
    expect_in("stderr", r.err, "kdc-lint: error: forge/bin\\x1b[31m.c: binary file");
    assert_null(strchr(r.err, '\033'));
    kdc_run_free(&r);
    free(bin);
}

static void github_annotations_escape_every_control_character(void **state) {
    (void)state;
    scratch_write(root, "forge/" FORGED_NAME, bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--format=github", "forge"), 1);
    expect_in("stdout", r.out,
              "::warning file=forge/pay%0Apayments.c%3A10%3A5%3A warning%3A forged finding "
              "[bare-commit]%0A\\x1b[2Jx.c,line=3,");
    assert_null(strchr(r.out, '\033'));
    assert_int_equal(scratch_count(r.out, "\n"), 1); /* one annotation, one line */
    kdc_run_free(&r);
}

static void configuration_errors_and_stats_lines_escape_control_characters(void **state) {
    (void)state;
    scratch_write(root, "cfg\033[2J\n/.kdc-lint.yaml", "profile: bogus\n");
    scratch_write(root, "cfg\033[2J\n/plain\033[31m.c", "int x;\n");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--dump-config=cfg\033[2J\n"), 2);
    expect_in("stderr", r.err, "kdc-lint: error: cfg\\x1b[2J\\n/.kdc-lint.yaml:1:10: ");
    assert_null(strchr(r.err, '\033'));
    kdc_run_free(&r);
    scratch_write(root, "cfg\033[2J\n/.kdc-lint.yaml", "profile: strict\n");
    assert_int_equal(RUN(&r, "--no-cache", "--stats", "cfg\033[2J\n", "good.c"), 1);
    expect_in("stderr", r.err,
              "kdc-lint: stats: skipped by the prefilter: cfg\\x1b[2J\\n/plain\\x1b[31m.c\n");
    assert_null(strchr(r.err, '\033'));
    kdc_run_free(&r);
}

/* ---------- 10. nothing skipped without a word ---------- */

static void a_directory_deeper_than_64_levels_is_an_input_error_not_skipped(void **state) {
    (void)state;
    char rel[4096] = "deep";
    for (int i = 0; i < 66; i++)
        strcat(rel, "/d");
    char file[4200];
    snprintf(file, sizeof file, "%s/lost.c", rel);
    scratch_write(root, file, bare_commit);
    scratch_write(root, "deep/good.c", bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "deep"), 2);
    expect_in("stderr", r.err,
              "/d/d: more than 64 directory levels below the path given: not "
              "searched\n");
    expect_in("stdout", r.out, "deep/" GOOD_FINDING);
    kdc_run_free(&r);
}

static void a_source_link_that_names_nothing_is_an_input_error_not_skipped(void **state) {
    (void)state;
    scratch_write(root, "tree/good.c", bare_commit);
    char *link = scratch_path(root, "tree/gone.c");
    assert_int_equal(symlink("moved-away.c", link), 0);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "tree"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: tree/gone.c: No such file or directory (a symbolic link that "
              "names nothing): not analysed\n");
    expect_in("stdout", r.out, "tree/" GOOD_FINDING);
    kdc_run_free(&r);
    free(link);
}

static void a_suppression_in_a_file_with_cr_only_line_endings_applies(void **state) {
    (void)state;
    scratch_write(root, "mac.c",
                  "#include <librdkafka/rdkafka.h>\r"
                  "void drain(rd_kafka_t *consumer) {\r"
                  "    rd_kafka_commit(consumer, NULL, 0); // kdc-lint: ignore[bare-commit] "
                  "every message is confirmed before\r"
                  "}\r");
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--report-unused-suppressions", "mac.c"), 0);
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
    /* and one that names no rule is reported invalid, on its own line */
    scratch_write(root, "mac2.c",
                  "#include <librdkafka/rdkafka.h>\r"
                  "void drain(rd_kafka_t *consumer) {\r"
                  "    rd_kafka_commit(consumer, NULL, 0); // kdc-lint: ignore[] no rule\r"
                  "}\r");
    assert_int_equal(RUN(&r, "--no-cache", "--format=json", "mac2.c"), 1);
    expect_in("stdout", r.out, "\"rule\": \"invalid-suppression\"");
    expect_in("stdout", r.out, "\"line\": 3,");
    kdc_run_free(&r);
}

static void write_errors_of_informational_options_are_exit_2(void **state) {
    (void)state;
    const char *opts[] = {"--list-rules", "--version", "--help", "--dump-config=."};
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++) {
        const char *argv[] = {scale_lint_path(), opts[i], NULL};
        kdc_run_opts_t o = {.timeout = DEADLINE_S, .stdout_path = "/dev/full"};
        kdc_run_t r;
        assert_int_equal(kdc_run_ex(root, (char *const *)argv, &o, &r), 0);
        if (r.exit_code != 2)
            fail_msg("%s > /dev/full: exit %d, not 2", opts[i], r.exit_code);
        expect_in("stderr", r.err,
                  "kdc-lint: error: cannot write to standard output: No space left on device\n");
        kdc_run_free(&r);
    }
}

static void a_nul_byte_after_the_first_8_kib_makes_a_source_binary(void **state) {
    (void)state;
    char *path = scratch_path(root, "late-nul.c");
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(bare_commit, f);
    for (int i = 0; i < 100; i++)
        fputs("/* padding padding padding padding padding padding padding padding padding */\n", f);
    fputc(0, f);
    fputs("\n", f);
    fclose(f);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "late-nul.c", "good.c"), 2);
    expect_in("stderr", r.err,
              "kdc-lint: error: late-nul.c: binary file, not C or C++ source: not analysed\n");
    expect_in("stdout", r.out, GOOD_FINDING);
    assert_null(strstr(r.out, "late-nul.c:3:5"));
    kdc_run_free(&r);
    free(path);
}

/* ---------- 5-6. configurations and findings in linear time ---------- */

static void an_exclude_glob_of_many_double_stars_is_matched_in_linear_time(void **state) {
    (void)state;
    char deep[256] = "g", pattern[512] = "";
    for (int i = 0; i < 40; i++)
        strcat(deep, "/a");
    for (int i = 0; i < 12; i++)
        strcat(pattern, "**/a/");
    strcat(pattern, "**/b"); /* no path has a 'b': every way of matching is tried */
    char rel[300], yaml[600];
    snprintf(rel, sizeof rel, "%s/x.c", deep);
    scratch_write(root, rel, bare_commit);
    snprintf(yaml, sizeof yaml, "exclude:\n  - \"%s\"\n  - \"**/a/**/a/**/skip.c\"\n", pattern);
    scratch_write(root, "g/.kdc-lint.yaml", yaml);
    snprintf(rel, sizeof rel, "%s/skip.c", deep);
    scratch_write(root, rel, bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "g"), 1);
    expect_quick(&r, 15, "a glob of 12 '**' against a path 40 deep");
    /* x.c is not excluded, skip.c is */
    assert_int_equal(scratch_count(r.out, ": warning: "), 1);
    expect_in("stdout", r.out, "/a/x.c:3:5: warning:");
    kdc_run_free(&r);
}

static void a_configuration_nested_too_deep_is_refused_quickly(void **state) {
    (void)state;
    size_t depth = 300000; /* 600 KB, under the 1 MiB cap: minutes in libyaml's loader */
    char *text = malloc(2 * depth + 64);
    assert_non_null(text);
    char *p = stpcpy(text, "exclude: ");
    memset(p, '[', depth);
    memset(p + depth, ']', depth);
    strcpy(p + 2 * depth, "\n");
    scratch_write(root, "nest/.kdc-lint.yaml", text);
    free(text);
    scratch_write(root, "nest/good.c", bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "nest"), 2);
    expect_quick(&r, 15, "a configuration nested 300,000 deep");
    expect_in("stderr", r.err,
              "nest/.kdc-lint.yaml:1:73: the configuration is nested deeper than 64 levels; "
              "not read\n");
    kdc_run_free(&r);
}

static void a_configuration_of_too_many_entries_is_refused(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fputs("exclude: [", m);
    for (int i = 0; i < 200001; i++)
        fputs("e,", m);
    fputs("e]\n", m);
    fclose(m);
    scratch_write(root, "many/.kdc-lint.yaml", text);
    free(text);
    scratch_write(root, "many/good.c", bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "many"), 2);
    expect_in("stderr", r.err, "the configuration is more than 200000 entries; not read\n");
    kdc_run_free(&r);
}

static void duplicate_keys_among_many_are_found_in_linear_time(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fputs("dlq:\n  topics: [a]\nrules:\n", m);
    for (int i = 0; i < 80000; i++) /* 960 KB: within the 1 MiB and 200,000 entries caps */
        fprintf(m, "  r%d: 0\n", i);
    fputs("  r7: 0\n", m); /* line 4 + 80000 */
    fclose(m);
    scratch_write(root, "keys/.kdc-lint.yaml", text);
    free(text);
    scratch_write(root, "keys/good.c", bare_commit);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--dump-config=keys"), 2);
    expect_quick(&r, 15, "a mapping of 80,000 keys"); /* a scan of earlier keys: 35 s */
    expect_in("stderr", r.err,
              "keys/.kdc-lint.yaml:80004:3: rules: duplicate key 'r7' (first at line 11)\n");
    kdc_run_free(&r);
}

static void many_unused_suppressions_are_reported_in_linear_time(void **state) {
    (void)state;
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fputs(bare_commit, m);
    for (int i = 0; i < 60000; i++)
        fputs("// kdc-lint: ignore[bare-commit] nothing to suppress here\n", m);
    fclose(m);
    scratch_write(root, "unused.c", text);
    free(text);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--report-unused-suppressions", "--format=json", "-o",
                         "unused.json", "unused.c"),
                     1);
    expect_quick(&r, 20, "60,000 unused suppressions"); /* quadratic: 30 s and more */
    char *path = scratch_path(root, "unused.json");
    json_error_t e;
    json_t *doc = json_load_file(path, 0, &e), *findings = json_object_get(doc, "findings");
    assert_true(json_is_array(findings));
    size_t unused = 0, bare = 0, i;
    json_t *f;
    json_array_foreach(findings, i, f) {
        const char *rule = json_string_value(json_object_get(f, "rule"));
        unused += rule && !strcmp(rule, "unused-suppression");
        bare += rule && !strcmp(rule, "bare-commit");
    }
    assert_int_equal(unused, 60000);
    assert_int_equal(bare, 1);
    json_decref(doc);
    free(path);
    kdc_run_free(&r);
}

/* ---------- 7. a cache that arrives with the checkout ---------- */

static void cache_marker_links_that_name_nothing_create_no_file_anywhere(void **state) {
    (void)state;
    scratch_write(root, "ck/good.c", bare_commit);
    char *dir = scratch_path(root, "ck/.kdc-cache");
    assert_int_equal(mkdir(dir, 0755), 0);
    char *tag = scratch_path(root, "ck/.kdc-cache/CACHEDIR.TAG");
    char *ignore = scratch_path(root, "ck/.kdc-cache/.gitignore");
    char *target1 = scratch_path(root, "planted-tag"), *target2 = scratch_path(root, "planted");
    assert_int_equal(symlink(target1, tag), 0);
    assert_int_equal(symlink("../../planted", ignore), 0);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--cache-dir=ck/.kdc-cache", "ck/good.c"), 1);
    expect_in("stdout", r.out, "ck/" GOOD_FINDING);
    kdc_run_free(&r);
    struct stat st;
    assert_int_equal(lstat(target1, &st), -1);
    assert_int_equal(lstat(target2, &st), -1);
    assert_int_equal(type_of("ck/.kdc-cache/CACHEDIR.TAG"), S_IFLNK);
    assert_int_equal(type_of("ck/.kdc-cache/.gitignore"), S_IFLNK);
    free(target1);
    free(target2);
    free(ignore);
    free(tag);
    free(dir);
}

/* ---------- 8. signals ---------- */

/* The processes whose parent is pid (from /proc), at most max. */
static size_t children_of(pid_t pid, pid_t *out, size_t max) {
    size_t n = 0;
    DIR *d = opendir("/proc");
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d)) && n < max;) {
        char path[300], buf[512];
        if (de->d_name[0] < '0' || de->d_name[0] > '9')
            continue;
        snprintf(path, sizeof path, "/proc/%s/stat", de->d_name);
        FILE *f = fopen(path, "r");
        if (!f)
            continue;
        size_t got = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[got] = 0;
        char *close_paren = strrchr(buf, ')');
        int ppid = 0;
        char state = 0;
        if (close_paren && sscanf(close_paren + 1, " %c %d", &state, &ppid) == 2 && ppid == pid &&
            state != 'Z')
            out[n++] = (pid_t)atoi(de->d_name);
    }
    closedir(d);
    return n;
}

/* Is pid alive (not gone, not a zombie)? */
static int alive(pid_t pid) {
    char path[64], buf[512];
    snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    size_t got = fread(buf, 1, sizeof buf - 1, f);
    fclose(f);
    buf[got] = 0;
    char *close_paren = strrchr(buf, ')');
    return close_paren && close_paren[1] && close_paren[2] != 'Z';
}

static void nap_ms(long ms) {
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* rel: a unit libclang takes `lines` / 2000 seconds or so over (a long else-if chain), with
 * a bare commit after the chain. */
static void write_else_if_chain(const char *rel, int lines) {
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fputs("#include <librdkafka/rdkafka.h>\nint f(int x, rd_kafka_t *c) {\n"
          "    if (x == 0) return 0;\n",
          m);
    for (int i = 1; i < lines; i++)
        fprintf(m, "    else if (x == %d) return %d;\n", i, i);
    fputs("    rd_kafka_commit(c, NULL, 0);\n    return -1;\n}\n", m);
    fclose(m);
    scratch_write(root, rel, text);
    free(text);
}

/* Starts kdc-lint in root with the NULL-terminated arguments, its output to /dev/null;
 * returns its pid once it has worker processes (at most max of them in *workers, *n). */
static pid_t start_with_workers(pid_t *workers, size_t max, size_t *n, ...) {
    const char *argv[64] = {scale_lint_path()};
    size_t argc = 1;
    va_list ap;
    va_start(ap, n);
    for (const char *a; (a = va_arg(ap, const char *)) && argc < 63;)
        argv[argc++] = a;
    va_end(ap);
    pid_t driver = fork();
    assert_true(driver >= 0);
    if (driver == 0) {
        if (chdir(root) != 0)
            _exit(127);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        dup2(null, STDERR_FILENO);
        execv(scale_lint_path(), (char *const *)argv);
        _exit(127);
    }
    *n = 0;
    for (int i = 0; i < 400 && !*n; i++, nap_ms(50))
        *n = children_of(driver, workers, max);
    if (!*n) {
        kill(driver, SIGKILL);
        waitpid(driver, NULL, 0);
        fail_msg("kdc-lint started no worker within 20 s");
    }
    return driver;
}

static void a_worker_dies_with_a_killed_driver(void **state) {
    (void)state;
    /* a unit libclang takes seconds over, and one more: workers */
    write_else_if_chain("slow.c", 15000);
    pid_t workers[8];
    size_t n = 0;
    pid_t driver =
        start_with_workers(workers, 8, &n, "--no-cache", "-j2", "slow.c", "good.c", (char *)NULL);
    nap_ms(300); /* the workers are parsing */
    kill(driver, SIGKILL);
    waitpid(driver, NULL, 0);
    int left = 0;
    for (int i = 0; i < 40; i++, nap_ms(50)) { /* 2 s */
        left = 0;
        for (size_t k = 0; k < n; k++)
            left += alive(workers[k]);
        if (!left)
            break;
    }
    for (size_t k = 0; k < n; k++)
        if (alive(workers[k]))
            kill(workers[k], SIGKILL); /* a failing run leaves nothing behind either */
    if (left)
        fail_msg("%d of %zu workers still running 2 s after kdc-lint was killed", left, n);
}

/* ---------- 8. a signal ends the run cleanly ---------- */

static size_t ntmp; /* for count_tmp (nftw has no argument for its callback) */

static int count_tmp(const char *path, const struct stat *st, int type, struct FTW *f) {
    (void)st;
    (void)type;
    if (strstr(path + f->base, ".tmp.")) {
        print_error("left behind: %s\n", path);
        ntmp++;
    }
    return 0;
}

/* SIGTERM or SIGINT to kdc-lint in the middle of a run with workers writing cache entries
 * (40 small units, the else-if chain): kdc-lint ends within 5 s, by that signal; its workers
 * are gone and were reaped by kdc-lint itself (this test is their subreaper: a worker
 * orphaned by a driver that died first would be handed to it); no temporary file is left in
 * the cache. */
static void ended_by(int sig) {
    /* the run's shared preambles (the 40 units begin alike) go to a TMPDIR of its own */
    char *tmp = scratch_path(root, "sig-tmp"), *was = getenv("TMPDIR");
    was = was ? strdup(was) : NULL;
    assert_int_equal(mkdir(tmp, 0700), 0);
    setenv("TMPDIR", tmp, 1);
    write_else_if_chain("sig/slow.c", 15000);
    for (int i = 0; i < 40; i++) {
        char rel[32];
        snprintf(rel, sizeof rel, "sig/u%02d.c", i);
        scratch_write(root, rel, bare_commit);
    }
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
    pid_t workers[8];
    size_t n = 0;
    pid_t driver =
        start_with_workers(workers, 8, &n, "-j2", "--cache-dir=sig/cache", "sig", (char *)NULL);
    if (was)
        setenv("TMPDIR", was, 1);
    else
        unsetenv("TMPDIR");
    free(was);
    nap_ms(700); /* the small units are parsed and stored while the chain is */
    kill(driver, sig);
    int status = 0, waited = 0;
    pid_t got = 0;
    for (; waited < 100 && !(got = waitpid(driver, &status, WNOHANG)); waited++)
        nap_ms(50);
    if (!got) {
        kill(driver, SIGKILL);
        waitpid(driver, NULL, 0);
    }
    nap_ms(200);
    /* anything handed to this process: a worker kdc-lint did not reap */
    int orphans = 0;
    while (waitpid(-1, NULL, WNOHANG) > 0)
        orphans++;
    assert_int_equal(prctl(PR_SET_CHILD_SUBREAPER, 0), 0);
    if (!got)
        fail_msg("kdc-lint did not end within 5 s of signal %d", sig);
    if (!WIFSIGNALED(status) || WTERMSIG(status) != sig)
        fail_msg("kdc-lint ended with status 0x%x, not by signal %d", status, sig);
    for (size_t k = 0; k < n; k++)
        if (alive(workers[k]))
            fail_msg("worker %d still running after kdc-lint ended", (int)workers[k]);
    if (orphans)
        fail_msg("%d worker process(es) were left for another process to reap", orphans);
    char *cache = scratch_path(root, "sig/cache");
    ntmp = 0;
    assert_int_equal(nftw(cache, count_tmp, 16, FTW_PHYS), 0);
    free(cache);
    if (ntmp)
        fail_msg("%zu temporary file(s) left in the cache", ntmp);
    DIR *d = opendir(tmp);
    assert_non_null(d);
    for (struct dirent *de; (de = readdir(d));)
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            fail_msg("left behind in TMPDIR: %s", de->d_name);
    closedir(d);
    free(tmp);
}

static void sigterm_ends_the_run_cleanly_workers_reaped_no_temporary_file(void **state) {
    (void)state;
    ended_by(SIGTERM);
}

static void sigint_ends_the_run_cleanly_workers_reaped_no_temporary_file(void **state) {
    (void)state;
    ended_by(SIGINT);
}

/* ---------- 4. a budget per translation unit ---------- */

static void a_unit_over_the_time_limit_is_an_input_error_and_the_run_goes_on(void **state) {
    (void)state;
    /* 100,000 lines kept libclang busy for 393 s; also with -j1 the unit is given up */
    write_else_if_chain("chain.c", 100000);
    const char *jobs[] = {"-j1", "-j2"};
    for (size_t i = 0; i < 2; i++) {
        kdc_run_t r;
        assert_int_equal(
            RUN(&r, "--cache-dir=cache", jobs[i], "--unit-time-limit=2", "chain.c", "good.c"), 2);
        expect_in("stderr", r.err,
                  "kdc-lint: error: chain.c: over the time limit of 2 s per file "
                  "(--unit-time-limit): not analysed\n");
        expect_in("stdout", r.out, GOOD_FINDING);
        assert_null(strstr(r.out, "chain.c:"));
        expect_quick(&r, 15, "a run with a unit over a 2 s limit");
        kdc_run_free(&r);
    }
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "--unit-time-limit=x", "good.c"), 2);
    expect_in("stderr", r.err, "--unit-time-limit: 'x' is not a number of seconds");
    kdc_run_free(&r);
}

/* The time limit holds for a worker that takes its unit before fork() has returned in the
 * driver: under load (here, eight runs at once on the machine's cores) the driver cleared
 * that worker's unit after it had been taken, and the unit ran for minutes unwatched. */
static void the_time_limit_holds_under_load_for_every_worker(void **state) {
    (void)state;
    write_else_if_chain("chain.c", 100000);
    enum { RUNS = 8 };
    pid_t runs[RUNS];
    for (int i = 0; i < RUNS; i++) {
        runs[i] = fork();
        assert_true(runs[i] >= 0);
        if (runs[i] == 0) {
            int null = open("/dev/null", O_WRONLY);
            if (chdir(root) != 0 || null < 0 || dup2(null, STDOUT_FILENO) < 0 ||
                dup2(null, STDERR_FILENO) < 0)
                _exit(127);
            execl(scale_lint_path(), scale_lint_path(), "--no-cache", "-j2", "--unit-time-limit=1",
                  "chain.c", "good.c", (char *)NULL);
            _exit(127);
        }
    }
    int ended = 0, wrong = 0;
    for (int waited = 0; waited < 600 && ended < RUNS; waited++, nap_ms(50)) /* 30 s */
        for (int i = 0; i < RUNS; i++) {
            int status = 0;
            if (runs[i] > 0 && waitpid(runs[i], &status, WNOHANG) == runs[i]) {
                runs[i] = 0;
                ended++;
                wrong += !WIFEXITED(status) || WEXITSTATUS(status) != 2;
            }
        }
    for (int i = 0; i < RUNS; i++)
        if (runs[i] > 0) { /* its workers die with it */
            kill(runs[i], SIGKILL);
            waitpid(runs[i], NULL, 0);
        }
    if (ended < RUNS)
        fail_msg("%d of %d runs with a 1 s limit per file did not end within 30 s", RUNS - ended,
                 RUNS);
    assert_int_equal(wrong, 0); /* each: exit 2, the chain an input error */
}

static void a_unit_over_the_memory_limit_is_an_input_error_and_the_run_goes_on(void **state) {
    (void)state;
#if defined(__SANITIZE_ADDRESS__)
    skip(); /* ASan reserves terabytes of address space: kdc-lint sets no RLIMIT_AS there */
#endif
    /* an initializer of 1,000,000 numbers: libclang takes about 180 MiB for it */
    char *text = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&text, &len);
    fputs("#include <librdkafka/rdkafka.h>\nstatic const int big[] = {", m);
    for (int i = 0; i < 1000000; i++)
        fprintf(m, "%d,", i % 1000);
    fputs("};\nint g(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); return big[3]; }\n", m);
    fclose(m);
    scratch_write(root, "big.c", text);
    free(text);
    kdc_run_t r;
    assert_int_equal(RUN(&r, "--no-cache", "-j1", "--unit-memory-limit=64", "big.c", "good.c"), 2);
    expect_in("stderr", r.err, "kdc-lint: error: big.c: kdc-lint's parser process");
    expect_in("stderr", r.err, "the memory limit of 64 MiB per file (--unit-memory-limit)\n");
    expect_in("stdout", r.out, GOOD_FINDING);
    kdc_run_free(&r);
    /* within the default limit it is analysed */
    assert_int_equal(RUN(&r, "--no-cache", "-j1", "big.c"), 1);
    expect_in("stdout", r.out, "big.c:3:24: warning: rd_kafka_commit without an offset list");
    kdc_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(
            merge_refuses_a_shard_count_of_2_to_the_32_instead_of_overflowing, setup, teardown),
        cmocka_unit_test_setup_teardown(merge_refuses_a_huge_total_before_allocating_for_it, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(write_baseline_onto_a_fifo_refuses_and_leaves_it_a_fifo,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(write_baseline_through_a_link_replaces_the_file_it_names,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            an_include_of_dev_stdin_with_stdin_a_pipe_is_an_input_error_not_a_hang, setup,
            teardown),
        cmocka_unit_test_setup_teardown(an_include_of_dev_zero_is_refused_before_it_is_read, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_header_that_is_a_fifo_is_an_input_error_not_a_hang, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_compilation_database_that_is_a_fifo_is_refused_with_exit_2, setup, teardown),
        cmocka_unit_test_setup_teardown(
            forced_includes_and_response_files_of_dev_stdin_are_input_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(a_merge_input_that_is_a_fifo_is_refused_not_waited_for,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(a_baseline_that_is_a_fifo_is_refused_not_waited_for, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_file_name_cannot_forge_a_finding_line_in_the_text_report,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(github_annotations_escape_every_control_character, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            configuration_errors_and_stats_lines_escape_control_characters, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_directory_deeper_than_64_levels_is_an_input_error_not_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_source_link_that_names_nothing_is_an_input_error_not_skipped, setup, teardown),
        cmocka_unit_test_setup_teardown(a_suppression_in_a_file_with_cr_only_line_endings_applies,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(write_errors_of_informational_options_are_exit_2, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_nul_byte_after_the_first_8_kib_makes_a_source_binary,
                                        setup, teardown),
        cmocka_unit_test_setup_teardown(
            an_exclude_glob_of_many_double_stars_is_matched_in_linear_time, setup, teardown),
        cmocka_unit_test_setup_teardown(a_configuration_nested_too_deep_is_refused_quickly, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(a_configuration_of_too_many_entries_is_refused, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(duplicate_keys_among_many_are_found_in_linear_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(many_unused_suppressions_are_reported_in_linear_time, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            cache_marker_links_that_name_nothing_create_no_file_anywhere, setup, teardown),
        cmocka_unit_test_setup_teardown(
            a_unit_over_the_time_limit_is_an_input_error_and_the_run_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(the_time_limit_holds_under_load_for_every_worker, setup,
                                        teardown),
        cmocka_unit_test_setup_teardown(
            a_unit_over_the_memory_limit_is_an_input_error_and_the_run_goes_on, setup, teardown),
        cmocka_unit_test_setup_teardown(a_worker_dies_with_a_killed_driver, setup, teardown),
        cmocka_unit_test_setup_teardown(
            sigterm_ends_the_run_cleanly_workers_reaped_no_temporary_file, setup, teardown),
        cmocka_unit_test_setup_teardown(
            sigint_ends_the_run_cleanly_workers_reaped_no_temporary_file, setup, teardown),
    };
    return cmocka_run_group_tests_name("kdc-lint against hostile input", tests, NULL, NULL);
}
