/*
 * The unit cache (.kdc-cache, --cache-dir): a re-run on an unchanged tree
 * parses nothing, analyses nothing and writes the same report; anything that
 * decides a unit's model (its files' contents, its flags, the executable)
 * makes it parsed again, anything that decides the analysis (any model, the
 * DLQ patterns and function roles, which rules run) makes the program
 * analysed again, while configuration, suppressions and the baseline apply on
 * every run; damaged entries are ignored with a note; bad directories are
 * errors.
 *
 *   test_cache         (KDC_LINT from the environment)
 *
 * The service (made at test time, per test):
 *   producer.c  creates the producer; registers a delivery-report callback only when
 *               conf.h defines WITH_DR
 *   send.c      produces on it (produce-without-delivery-callback at send.c:6 without WITH_DR)
 *   consumer.c  a bare commit at consumer.c:3
 *   conf.h      included by producer.c only
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "scale.h"

#define XXH_INLINE_ALL
#include <xxhash.h>

static const char producer_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "#include \"conf.h\"\n"
    "\n"
    "static void on_dr(rd_kafka_t *rk, const rd_kafka_message_t *m, void *o) {\n"
    "    (void)rk; (void)o;\n"
    "    if (m->err) *(volatile int *)0 = 0;\n"
    "}\n"
    "\n"
    "rd_kafka_t *make_producer(void) {\n"
    "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
    "#ifdef WITH_DR\n"
    "    rd_kafka_conf_set_dr_msg_cb(conf, on_dr);\n"
    "#endif\n"
    "    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0);\n"
    "}\n";
static const char send_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "rd_kafka_t *make_producer(void);\n"
    "\n"
    "rd_kafka_resp_err_t send_order(const char *payload, size_t len) {\n"
    "    rd_kafka_t *p = make_producer();\n"
    "    return rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders\"),\n"
    "                             RD_KAFKA_V_VALUE((void *)payload, len), RD_KAFKA_V_END);\n"
    "}\n";
static const char consumer_c[] = "#include <librdkafka/rdkafka.h>\n"
                                 "void drain(rd_kafka_t *consumer) {\n"
                                 "    rd_kafka_commit(consumer, NULL, 0);\n"
                                 "}\n";

static const char produce_finding[] = "send.c:6:12: warning: rd_kafka_producev on a producer "
                                      "without a delivery-report callback";
static const char commit_finding[] = "consumer.c:3:5: warning: rd_kafka_commit without an "
                                     "offset list";

static struct {
    char *tree;
} g;

static int each_setup(void **state) {
    (void)state;
    g.tree = scratch_dir("cache");
    assert_int_equal(chmod(g.tree, 0755), 0); /* permission tests run as nobody */
    scratch_write(g.tree, "src/producer.c", producer_c);
    scratch_write(g.tree, "src/send.c", send_c);
    scratch_write(g.tree, "src/consumer.c", consumer_c);
    scratch_write(g.tree, "src/conf.h", "/* WITH_DR not defined */\n");
    return 0;
}

static int each_teardown(void **state) {
    (void)state;
    scratch_remove(g.tree);
    free(g.tree);
    return 0;
}

/* "N parsed, M from the cache" must be in the --stats line. */
static void expect_parsed(const kdc_run_t *r, int parsed, int cached) {
    char want[96];
    snprintf(want, sizeof want, ": %d parsed, %d from the cache,", parsed, cached);
    if (!strstr(r->err, want)) {
        scale_show(r);
        fail_msg("stderr lacks \"%s\"", want);
    }
}

/* Whether the --stats line says the analysis ran or came from the cache. */
static const char analysis_run[] = "; the analysis run (and stored in the cache); ";
static const char analysis_cached[] =
    "; the analysis from the cache (the same program and options); ";

static void expect_analysis(const kdc_run_t *r, const char *want) {
    if (!strstr(r->err, want)) {
        scale_show(r);
        fail_msg("stderr lacks \"%s\"", want);
    }
}

/* The entries of a cache directory's `sub` (units/ or runs/), sorted; count in *n. */
static char **entries_in(const char *cache, const char *sub, size_t *n) {
    char *units = scratch_path(cache, sub);
    struct dirent **list = NULL;
    int k = scandir(units, &list, NULL, alphasort);
    char **out = calloc((size_t)(k > 0 ? k : 0) + 1, sizeof *out);
    *n = 0;
    for (int i = 0; i < k; i++) {
        if (list[i]->d_name[0] != '.')
            out[(*n)++] = scratch_path(units, list[i]->d_name);
        free(list[i]);
    }
    free(list);
    free(units);
    return out;
}

static char **entries(const char *cache, size_t *n) { return entries_in(cache, "units", n); }

static void free_entries(char **e, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(e[i]);
    free(e);
}

static void a_warm_run_parses_nothing_and_writes_the_same_report(void **state) {
    (void)state;
    const char *formats[] = {"--format=json", "--format=sarif", "--format=text"};
    for (size_t f = 0; f < 3; f++) {
        const char *dirs[] = {".kdc-cache", "sarif-cache", "text-cache"};
        char *cache = scratch_path(g.tree, dirs[f]);
        char opt[4200];
        snprintf(opt, sizeof opt, "--cache-dir=%s", cache);
        if (f == 0)
            snprintf(opt, sizeof opt, "--stats"); /* the default directory */
        kdc_run_t cold, warm;
        LINT(&cold, g.tree, "--stats", opt, formats[f], "src");
        expect_parsed(&cold, 3, 0);
        LINT(&warm, g.tree, "--stats", opt, formats[f], "src");
        expect_parsed(&warm, 0, 3);
        assert_int_equal(cold.exit_code, 1);
        assert_int_equal(warm.exit_code, 1);
        scale_same_report(formats[f], cold.out, warm.out);
        if (f == 2) {
            assert_non_null(strstr(warm.out, produce_finding));
            assert_non_null(strstr(warm.out, commit_finding));
        }
        size_t n;
        char **e = entries(cache, &n);
        assert_int_equal(n, 3); /* one entry per unit */
        free_entries(e, n);
        kdc_run_free(&cold);
        kdc_run_free(&warm);
        free(cache);
    }
    /* the cache says what it is and keeps itself out of git */
    char *tag = scratch_read(g.tree, ".kdc-cache/CACHEDIR.TAG");
    assert_non_null(tag);
    assert_true(!strncmp(tag, "Signature: 8a477f597d28d172789f06886806bc55\n", 44));
    free(tag);
    char *ignore = scratch_read(g.tree, ".kdc-cache/.gitignore");
    assert_non_null(ignore);
    assert_non_null(strstr(ignore, "\n*\n"));
    free(ignore);
}

static void a_changed_header_reparses_only_the_unit_that_includes_it(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 3, 0);
    assert_non_null(strstr(r.out, produce_finding));
    kdc_run_free(&r);
    scratch_write(g.tree, "src/conf.h", "#define WITH_DR 1\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2); /* producer.c; send.c and consumer.c from the cache */
    assert_null(strstr(r.out, "produce-without-delivery-callback")); /* the new header counts */
    assert_non_null(strstr(r.out, commit_finding));
    kdc_run_free(&r);
    /* and back: the entry of the old contents was replaced, so it is parsed again */
    scratch_write(g.tree, "src/conf.h", "/* WITH_DR not defined */\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2);
    assert_non_null(strstr(r.out, produce_finding));
    kdc_run_free(&r);
    /* a changed main file too */
    scratch_write(g.tree, "src/consumer.c", "#include <librdkafka/rdkafka.h>\n"
                                            "void drain(rd_kafka_t *consumer) {\n"
                                            "    (void)consumer;\n"
                                            "}\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2);
    assert_null(strstr(r.out, "consumer.c"));
    kdc_run_free(&r);
}

/* Files are checked by their stat signature: a header rewritten in place with the same size
 * and its modification time set back still has a new status-change time (which no one can
 * set back), so its unit is parsed again; a file only touched (new times, the same
 * contents) is compared by its contents and its unit is not. */
static void a_header_rewritten_with_its_size_and_mtime_forged_back_is_still_changed(
    void **state) {
    (void)state;
    static const char off[] = "/* WITH_DR not defined */\n";
    static const char on[] = "#define WITH_DR 1 /* on*/\n";
    assert_int_equal(strlen(off), strlen(on));
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 3, 0);
    assert_non_null(strstr(r.out, produce_finding));
    kdc_run_free(&r);
    char *conf = scratch_path(g.tree, "src/conf.h");
    struct stat before, after;
    assert_int_equal(stat(conf, &before), 0);
    FILE *f = fopen(conf, "r+");
    assert_non_null(f);
    assert_int_equal(fputs(on, f) >= 0, 1);
    assert_int_equal(fclose(f), 0);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, conf, times, 0), 0);
    assert_int_equal(stat(conf, &after), 0);
    assert_int_equal(after.st_size, before.st_size);
    assert_int_equal(after.st_ino, before.st_ino);
    assert_int_equal(after.st_mtim.tv_sec, before.st_mtim.tv_sec);
    assert_int_equal(after.st_mtim.tv_nsec, before.st_mtim.tv_nsec);
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2);
    assert_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    /* touched only: new times, the same contents */
    assert_int_equal(utimensat(AT_FDCWD, conf, NULL, 0), 0);
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    kdc_run_free(&r);
    free(conf);
}

static void other_flags_and_another_executable_are_other_entries(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 3, 0);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "src", "--", "-DWITH_DR=1");
    expect_parsed(&r, 3, 0);
    assert_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "src", "--", "-DWITH_DR=1");
    expect_parsed(&r, 0, 3);
    assert_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    /* a rebuilt kdc-lint (here: a copy with a byte appended) does not trust the entries of
     * another */
    char *copy = scratch_path(g.tree, "kdc-lint-copy");
    assert_int_equal(scratch_run(&r, NULL, "sh", "-c", "cp \"$0\" \"$1\" && printf x >>\"$1\"",
                                 scale_lint_path(), copy, (const char *)NULL), 0);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    scale_lint_with(copy, &r, g.tree, "--stats", "src", (const char *)NULL);
    expect_parsed(&r, 3, 0);
    assert_non_null(strstr(r.out, produce_finding));
    kdc_run_free(&r);
    free(copy);
}

static void damaged_entries_are_ignored_with_a_note_and_written_again(void **state) {
    (void)state;
    kdc_run_t cold, r;
    LINT(&cold, g.tree, "--format=json", "src");
    assert_int_equal(cold.exit_code, 1);
    size_t n;
    char *cache = scratch_path(g.tree, ".kdc-cache");
    char **e = entries(cache, &n);
    assert_int_equal(n, 3);
    /* truncated to half */
    struct stat st;
    assert_int_equal(stat(e[0], &st), 0);
    assert_int_equal(truncate(e[0], st.st_size / 2), 0);
    /* one byte flipped in the middle */
    FILE *f = fopen(e[1], "r+b");
    assert_non_null(f);
    assert_int_equal(stat(e[1], &st), 0);
    fseek(f, st.st_size / 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, st.st_size / 2, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    /* something else entirely */
    f = fopen(e[2], "w");
    fputs("not a cache entry\n", f);
    fclose(f);

    LINT(&r, g.tree, "--stats", "--format=json", "src");
    char note0[4300], note1[4300], note2[4300];
    snprintf(note0, sizeof note0,
             "kdc-lint: note: cache entry .kdc-cache/units/%s: checksum mismatch (truncated or "
             "damaged); ignored, the unit is parsed again",
             strrchr(e[0], '/') + 1);
    snprintf(note1, sizeof note1,
             "kdc-lint: note: cache entry .kdc-cache/units/%s: checksum mismatch",
             strrchr(e[1], '/') + 1);
    snprintf(note2, sizeof note2,
             "kdc-lint: note: cache entry .kdc-cache/units/%s: not a kdc-lint cache entry",
             strrchr(e[2], '/') + 1);
    EXPECT_ERR(&r, 1, note0, note1, note2);
    expect_parsed(&r, 3, 0);
    scale_same_report("after damage", cold.out, r.out);
    kdc_run_free(&r);
    /* written again: the next run takes all three from the cache, silently */
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_parsed(&r, 0, 3);
    assert_null(strstr(r.err, "note:"));
    scale_same_report("rewritten", cold.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&cold);
    free_entries(e, n);
    free(cache);
}

static void a_unit_with_compile_errors_is_parsed_every_time(void **state) {
    (void)state;
    scratch_write(g.tree, "src/broken.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "#include \"later.h\"\n"
                  "void stop(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, LATER_ASYNC); }\n");
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 4, 0);
    EXPECT_ERR(&r, 1, "src/broken.c: warning: 2 compile errors; analysed partially");
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 3); /* never stored: later.h may appear */
    kdc_run_free(&r);
    scratch_write(g.tree, "src/later.h", "#define LATER_ASYNC 0\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 3);
    assert_null(strstr(r.err, "compile error"));
    assert_non_null(strstr(r.out, "broken.c:3:29: warning: rd_kafka_commit without an offset"));
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 0, 4); /* complete now: stored */
    kdc_run_free(&r);
}

static void bad_cache_directories_are_errors_before_anything_is_analysed(void **state) {
    (void)state;
    kdc_run_t r;
    scratch_write(g.tree, "a-file", "x\n");
    LINT(&r, g.tree, "--cache-dir=a-file", "src");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --cache-dir a-file: not a directory\n");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
    LINT(&r, g.tree, "--cache-dir=", "src");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --cache-dir : an empty path\n");
    kdc_run_free(&r);
    LINT(&r, g.tree, "--cache-dir=a-file/below", "src");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --cache-dir a-file/below: cannot create, read or write "
                      "it: Not a directory\n");
    kdc_run_free(&r);
    LINT(&r, g.tree, "--no-cache", "--cache-dir=c", "src");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --no-cache and --cache-dir=c contradict each other");
    kdc_run_free(&r);
    /* a directory this user may not write to (as nobody: root may write anywhere) */
    char *locked = scratch_path(g.tree, "locked");
    assert_int_equal(mkdir(locked, 0555), 0);
    assert_int_equal(chmod(locked, 0555), 0);
    assert_int_equal(chown(locked, 65534, 65534), 0); /* nobody's own: trusted, not writable */
    LINT_AS_NOBODY(&r, g.tree, "--cache-dir=locked", "src");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --cache-dir locked: cannot create, read or write it: "
                      "Permission denied\n");
    assert_string_equal(r.out, "");
    kdc_run_free(&r);
    free(locked);
}

static void the_default_cache_is_made_where_kdc_lint_runs_unless_that_is_read_only(
    void **state) {
    (void)state;
    kdc_run_t r;
    struct stat st;
    LINT(&r, g.tree, "--no-cache", "src");
    assert_int_equal(r.exit_code, 1);
    char *cache = scratch_path(g.tree, ".kdc-cache");
    assert_int_not_equal(stat(cache, &st), 0); /* --no-cache writes nothing */
    kdc_run_free(&r);
    /* a read-only working directory: a note, no cache, the same findings */
    char *ro = scratch_path(g.tree, "ro");
    assert_int_equal(mkdir(ro, 0755), 0);
    assert_int_equal(chmod(ro, 0555), 0);
    LINT(&r, ro, "../src");
    EXPECT_ERR(&r, 1, "kdc-lint: note: .kdc-cache: not created: the working directory is "
                      "read-only; running without a cache (--no-cache: no note)");
    assert_non_null(strstr(r.out, "src/consumer.c:3:5: warning: rd_kafka_commit"));
    char *ro_cache = scratch_path(ro, ".kdc-cache");
    assert_int_not_equal(stat(ro_cache, &st), 0);
    kdc_run_free(&r);
    chmod(ro, 0755);
    free(ro_cache);
    free(ro);
    LINT(&r, g.tree, "src");
    assert_int_equal(stat(cache, &st), 0);
    assert_true(S_ISDIR(st.st_mode));
    kdc_run_free(&r);
    free(cache);
}

static void an_unchanged_tree_is_neither_parsed_nor_analysed_again(void **state) {
    (void)state;
    kdc_run_t cold, warm, r;
    LINT(&cold, g.tree, "--stats", "--format=json", "src");
    expect_parsed(&cold, 3, 0);
    expect_analysis(&cold, analysis_run);
    LINT(&warm, g.tree, "--stats", "--format=json", "src");
    expect_parsed(&warm, 0, 3);
    expect_analysis(&warm, analysis_cached);
    assert_int_equal(warm.exit_code, 1);
    scale_same_report("json", cold.out, warm.out);
    assert_non_null(strstr(warm.out, "\"rule\": \"bare-commit\""));
    assert_non_null(strstr(warm.out, "\"rule\": \"produce-without-delivery-callback\""));
    char *cache = scratch_path(g.tree, ".kdc-cache");
    size_t n;
    char **e = entries_in(cache, "runs", &n);
    assert_int_equal(n, 1); /* one analysis per set of units */
    free_entries(e, n);
    /* the same units with other flags are another set: a second entry */
    LINT(&r, g.tree, "--stats", "src", "--", "-DWITH_DR=1");
    expect_analysis(&r, analysis_run);
    kdc_run_free(&r);
    e = entries_in(cache, "runs", &n);
    assert_int_equal(n, 2);
    free_entries(e, n);
    /* a changed unit is a new program: analysed again, and its entry replaced */
    scratch_write(g.tree, "src/conf.h", "#define WITH_DR 1\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2);
    expect_analysis(&r, analysis_run);
    assert_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    e = entries_in(cache, "runs", &n);
    assert_int_equal(n, 2);
    free_entries(e, n);
    /* without a cache the analysis runs every time */
    LINT(&r, g.tree, "--stats", "--no-cache", "src");
    expect_analysis(&r, "; the analysis run; ");
    kdc_run_free(&r);
    kdc_run_free(&cold);
    kdc_run_free(&warm);
    free(cache);
}

static const char no_model[] = "; no model loaded (the stored analysis applies); ";

static void expect_models(const kdc_run_t *r, int loaded) {
    if (!strstr(r->err, "kdc-lint: stats: ") || !!strstr(r->err, no_model) == loaded) {
        scale_show(r);
        fail_msg("want the models %sloaded", loaded ? "" : "not ");
    }
}

/* The analysis's entry keeps how every unit's entry and every file the units read were
 * seen: a warm run checks those (signatures; contents where a signature changed) and
 * loads no model. A file touched (the same contents) is read, and the entry signed again;
 * a unit's entry rewritten in place with its size and mtime forged back is noticed. */
static void a_warm_run_loads_no_model_while_every_entry_and_file_is_unchanged(void **state) {
    (void)state;
    kdc_run_t cold, r;
    LINT(&cold, g.tree, "--stats", "--format=json", "src");
    expect_models(&cold, 1);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    expect_models(&r, 0);
    scale_same_report("warm", cold.out, r.out);
    kdc_run_free(&r);
    /* touched: read, found the same, and the analysis's entry signed again */
    char *cache = scratch_path(g.tree, ".kdc-cache");
    size_t n;
    char **runs = entries_in(cache, "runs", &n);
    assert_int_equal(n, 1);
    struct stat before, after;
    assert_int_equal(stat(runs[0], &before), 0);
    char *conf = scratch_path(g.tree, "src/conf.h");
    assert_int_equal(utimensat(AT_FDCWD, conf, NULL, 0), 0);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_models(&r, 0);
    scale_same_report("touched", cold.out, r.out);
    kdc_run_free(&r);
    assert_int_equal(stat(runs[0], &after), 0);
    assert_true(after.st_ino != before.st_ino); /* written again (renamed into place) */
    free_entries(runs, n);
    /* a unit's entry rewritten in place: the same size, its mtime set back */
    char **units = entries(cache, &n);
    assert_int_equal(n, 3);
    assert_int_equal(stat(units[1], &before), 0);
    FILE *f = fopen(units[1], "r+b");
    assert_non_null(f);
    fseek(f, before.st_size / 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, before.st_size / 2, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, units[1], times, 0), 0);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_models(&r, 1);
    expect_parsed(&r, 1, 2);
    EXPECT_ERR(&r, 1, "checksum mismatch (truncated or damaged); ignored, the unit is parsed "
                      "again");
    expect_analysis(&r, analysis_cached); /* parsed again into the same model */
    scale_same_report("entry damaged", cold.out, r.out);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_models(&r, 0);
    scale_same_report("again", cold.out, r.out);
    kdc_run_free(&r);
    free_entries(units, n);
    free(conf);
    free(cache);
    kdc_run_free(&cold);
}

static void configuration_suppressions_and_baseline_apply_to_cached_findings(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_run);
    assert_non_null(strstr(r.out, commit_finding));
    kdc_run_free(&r);
    /* a suppression at the end of the line: consumer.c is parsed again into the same
     * model, so the program and its analysis are the cached ones; the comment counts */
    scratch_write(g.tree, "src/consumer.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void drain(rd_kafka_t *consumer) {\n"
                  "    rd_kafka_commit(consumer, NULL, 0); // kdc-lint: ignore[bare-commit] "
                  "offsets are stored after processing\n"
                  "}\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_parsed(&r, 1, 2);
    expect_analysis(&r, analysis_cached);
    assert_null(strstr(r.out, "bare-commit"));
    assert_non_null(strstr(r.out, produce_finding));
    assert_non_null(strstr(r.err, "not shown: 1 suppressed by comments"));
    kdc_run_free(&r);
    /* a severity from the configuration: the same analysis, shown as an error */
    scratch_write(g.tree, ".kdc-lint.yaml",
                  "rules:\n  produce-without-delivery-callback: {severity: error}\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_cached);
    assert_non_null(strstr(r.out, "send.c:6:12: error: rd_kafka_producev on a producer"));
    kdc_run_free(&r);
    /* a baseline: the same analysis, the finding in it not shown */
    LINT(&r, g.tree, "--write-baseline=base.json", "src");
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "--baseline=base.json", "src");
    expect_analysis(&r, analysis_cached);
    assert_int_equal(r.exit_code, 0);
    assert_null(strstr(r.out, "send.c"));
    kdc_run_free(&r);
    /* a rule off everywhere: other rules run, so the program is analysed again */
    scratch_write(g.tree, ".kdc-lint.yaml", "rules:\n  produce-without-delivery-callback: false\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_run);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    /* DLQ patterns and function roles decide the analysis itself */
    scratch_write(g.tree, ".kdc-lint.yaml", "rules:\n  produce-without-delivery-callback: false\n"
                                            "dlq:\n  topics: [orders]\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_run);
    kdc_run_free(&r);
    scratch_write(g.tree, ".kdc-lint.yaml", "rules:\n  produce-without-delivery-callback: false\n"
                                            "dlq:\n  topics: [orders]\n"
                                            "functions:\n  commit: [drain]\n");
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_run);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "src");
    expect_analysis(&r, analysis_cached);
    kdc_run_free(&r);
    /* and the profile on the command line */
    LINT(&r, g.tree, "--stats", "--profile=strict", "src");
    expect_analysis(&r, analysis_run);
    kdc_run_free(&r);
}

static void a_damaged_analysis_entry_is_ignored_with_a_note_and_written_again(void **state) {
    (void)state;
    kdc_run_t cold, r;
    LINT(&cold, g.tree, "--format=json", "src");
    assert_int_equal(cold.exit_code, 1);
    char *cache = scratch_path(g.tree, ".kdc-cache");
    size_t n;
    char **e = entries_in(cache, "runs", &n);
    assert_int_equal(n, 1);
    struct stat st;
    assert_int_equal(stat(e[0], &st), 0);
    FILE *f = fopen(e[0], "r+b");
    assert_non_null(f);
    fseek(f, st.st_size / 2, SEEK_SET);
    int c = fgetc(f);
    fseek(f, st.st_size / 2, SEEK_SET);
    fputc(c ^ 0x5a, f);
    fclose(f);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    char note[4300];
    snprintf(note, sizeof note,
             "kdc-lint: note: cache entry .kdc-cache/runs/%s: checksum mismatch (truncated or "
             "damaged); ignored, the program is analysed again",
             strrchr(e[0], '/') + 1);
    EXPECT_ERR(&r, 1, note);
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_run);
    scale_same_report("after damage", cold.out, r.out);
    kdc_run_free(&r);
    /* truncated: the same */
    assert_int_equal(stat(e[0], &st), 0);
    assert_int_equal(truncate(e[0], st.st_size / 2), 0);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    EXPECT_ERR(&r, 1, "checksum mismatch", "; ignored, the program is analysed again");
    scale_same_report("after truncation", cold.out, r.out);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    expect_analysis(&r, analysis_cached);
    assert_null(strstr(r.err, "note:"));
    scale_same_report("rewritten", cold.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&cold);
    free_entries(e, n);
    free(cache);
}

/* A cache that arrives with the checkout, or another user's, must not hide a finding:
 * entries are authenticated with the user's own key (outside the checkout), so an entry
 * edited with its checksum recomputed is ignored; a cache directory another user owns, or
 * one git tracks, is not read at all. */
static void a_planted_cache_cannot_hide_a_finding(void **state) {
    (void)state;
    kdc_run_t cold, r;
    LINT(&cold, g.tree, "--format=json", "src");
    assert_int_equal(cold.exit_code, 1);
    char *cache = scratch_path(g.tree, ".kdc-cache");
    size_t n;
    char **e = entries_in(cache, "runs", &n);
    assert_int_equal(n, 1);
    /* the stored findings edited (one rule name's letter) and the checksum at the end of
     * the entry recomputed over everything before it, as the entry's format says */
    struct stat st;
    assert_int_equal(stat(e[0], &st), 0);
    unsigned char *data = malloc((size_t)st.st_size);
    FILE *f = fopen(e[0], "r+b");
    assert_non_null(f);
    assert_int_equal(fread(data, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    unsigned char *hit = memmem(data, (size_t)st.st_size, "bare-commit", 11);
    assert_non_null(hit);
    hit[0] = 'B';
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(data, (size_t)st.st_size - 16));
    memcpy(data + st.st_size - 16, sum.digest, 16);
    rewind(f);
    assert_int_equal(fwrite(data, 1, (size_t)st.st_size, f), (size_t)st.st_size);
    fclose(f);
    free(data);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    EXPECT_ERR(&r, 1, "; ignored, the program is analysed again");
    expect_analysis(&r, analysis_run);
    scale_same_report("after a planted entry", cold.out, r.out);
    kdc_run_free(&r);

    /* a cache directory another user owns: not read, said once */
    assert_int_equal(chown(cache, 65534, 65534), 0);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    EXPECT_ERR(&r, 1,
               "kdc-lint: note: .kdc-cache: not trusted: owned by another user (uid 65534); "
               "running without a cache");
    EXPECT_ERR(&r, 1, ": 3 parsed, 0 from the cache (no cache),");
    scale_same_report("another user's cache", cold.out, r.out);
    kdc_run_free(&r);
    assert_int_equal(chown(cache, getuid(), getgid()), 0);

    /* a cache directory git tracks (committed with the checkout): not read */
    kdc_run_t git;
    const char *init[] = {"git", "init", "-q", NULL};
    assert_int_equal(scratch_run(&git, g.tree, init[0], init[1], init[2], (char *)NULL), 0);
    kdc_run_free(&git);
    assert_int_equal(
        scratch_run(&git, g.tree, "git", "add", "-f", ".kdc-cache/CACHEDIR.TAG", (char *)NULL), 0);
    kdc_run_free(&git);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    EXPECT_ERR(&r, 1,
               "kdc-lint: note: .kdc-cache: not trusted: git tracks files in it (it came with "
               "the checkout); running without a cache");
    EXPECT_ERR(&r, 1, ": 3 parsed, 0 from the cache (no cache),");
    scale_same_report("a tracked cache", cold.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&cold);

    /* a cache restored on another machine (another user's key): not read, said once, then
     * written again under this key; the run after it takes everything from it, silently */
    char *cache2 = scratch_path(g.tree, "cache2"), *home_a = scratch_path(g.tree, "home-a"),
         *home_b = scratch_path(g.tree, "home-b");
    const char *xdg = getenv("XDG_CACHE_HOME");
    char *saved = xdg ? strdup(xdg) : NULL;
    setenv("XDG_CACHE_HOME", home_a, 1);
    LINT(&cold, g.tree, "--cache-dir=cache2", "--format=json", "src");
    setenv("XDG_CACHE_HOME", home_b, 1);
    LINT(&r, g.tree, "--cache-dir=cache2", "--stats", "--format=json", "src");
    EXPECT_ERR(&r, 1,
               "kdc-lint: note: cache2: its entries were written under another key (another "
               "user's or machine's: a restored cache needs ~/.cache/kdc-lint too); not read, "
               "written again");
    expect_parsed(&r, 3, 0);
    scale_same_report("a cache under another key", cold.out, r.out);
    kdc_run_free(&r);
    LINT(&r, g.tree, "--cache-dir=cache2", "--stats", "--format=json", "src");
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    assert_null(strstr(r.err, "note:"));
    kdc_run_free(&r);
    if (saved)
        setenv("XDG_CACHE_HOME", saved, 1);
    else
        unsetenv("XDG_CACHE_HOME");
    free(saved);
    free(cache2);
    free(home_a);
    free(home_b);
    kdc_run_free(&cold);
    free_entries(e, n);
    free(cache);
}

/* A process converts a shared header's function once: the second unit's entry leaves it
 * out. Run without the first unit, that entry cannot be used: the unit is parsed again in
 * full (and stored so); the header's finding is there either way. */
static void a_unit_that_left_out_a_shared_function_is_parsed_again_without_its_provider(
    void **state) {
    (void)state;
    scratch_write(g.tree, "src/commit.h",
                  "#include <librdkafka/rdkafka.h>\n"
                  "static inline void commit_now(rd_kafka_t *rk) {\n"
                  "    rd_kafka_commit(rk, NULL, 0);\n"
                  "}\n");
    scratch_write(g.tree, "src/a.c", "#include \"commit.h\"\n"
                                     "void a_done(rd_kafka_t *rk) { commit_now(rk); }\n");
    scratch_write(g.tree, "src/b.c", "#include \"commit.h\"\n"
                                     "void b_done(rd_kafka_t *rk) { commit_now(rk); }\n");
    static const char header_finding[] = "commit.h:3:5: warning: rd_kafka_commit without an "
                                         "offset list";
    kdc_run_t all, r;
    LINT(&all, g.tree, "-j1", "--stats", "--format=json", "src");
    expect_parsed(&all, 5, 0);
    assert_non_null(strstr(all.out, "\"file\": \"src/commit.h\""));
    /* a.c converted commit_now; b.c's entry left it out */
    LINT(&r, g.tree, "-j1", "--stats", "src/b.c");
    expect_parsed(&r, 1, 0);
    assert_non_null(strstr(r.out, header_finding));
    kdc_run_free(&r);
    LINT(&r, g.tree, "-j1", "--stats", "src/b.c");
    expect_parsed(&r, 0, 1); /* stored in full */
    assert_non_null(strstr(r.out, header_finding));
    kdc_run_free(&r);
    /* a.c's entry is whole: usable alone */
    LINT(&r, g.tree, "-j1", "--stats", "src/a.c");
    expect_parsed(&r, 0, 1);
    assert_non_null(strstr(r.out, header_finding));
    kdc_run_free(&r);
    /* and all of them again: from the cache, the same report, with two processes too */
    LINT(&r, g.tree, "-j1", "--stats", "--format=json", "src");
    expect_parsed(&r, 0, 5);
    scale_same_report("json", all.out, r.out);
    kdc_run_free(&r);
    LINT(&r, g.tree, "-j2", "--stats", "--format=json", "--no-cache", "src");
    scale_same_report("json", all.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&all);
}

/* How often `needle` occurs in s. */
static int count_of(const char *s, const char *needle) {
    int n = 0;
    for (const char *at = s; (at = strstr(at, needle)); at += strlen(needle))
        n++;
    return n;
}

/* A cache whose writes fail after it was opened (a full disk; here a file size limit of
 * 512 bytes, so CACHEDIR.TAG is written and no entry is): one note for the whole run,
 * however many worker processes found the disk full, nothing half-written left behind,
 * and the report of --no-cache. */
static void a_cache_that_cannot_be_written_is_noted_once_and_the_report_is_unchanged(
    void **state) {
    (void)state;
    kdc_run_t ref;
    LINT(&ref, g.tree, "--no-cache", "--format=json", "src");
    assert_int_equal(ref.exit_code, 1);
    const char *jobs[] = {"-j1", "-j3"};
    for (size_t j = 0; j < 2; j++) {
        /* the limit for kdc-lint only: its stdout and stderr go through pipes */
        char *const argv[] = {"/bin/sh", "-c",
                              "trap '' XFSZ; ((ulimit -f 1; \"$0\" \"$@\"; echo $? >status) "
                              "2>&1 >&3 | cat >&2) 3>&1 | cat; exit $(cat status)",
                              (char *)scale_lint_path(), (char *)jobs[j], "--format=json",
                              "--cache-dir=full", "src", NULL};
        kdc_run_t r;
        assert_int_equal(kdc_run(g.tree, argv, &r), 0);
        assert_int_equal(r.exit_code, 1);
        scale_same_report("json", ref.out, r.out);
        if (count_of(r.err, "cannot write cache entry") != 1 ||
            !strstr(r.err, "File too large (no further cache writes are tried)\n")) {
            scale_show(&r);
            fail_msg("%s: want one note on the cache write that failed", jobs[j]);
        }
        kdc_run_free(&r);
        char *full = scratch_path(g.tree, "full");
        size_t nu, nr;
        char **u = entries_in(full, "units", &nu), **ru = entries_in(full, "runs", &nr);
        assert_int_equal(nu + nr, 0);
        free_entries(u, nu);
        free_entries(ru, nr);
        free(full);
    }
    /* the space is back: the cache is written and used */
    kdc_run_t cold, warm;
    LINT(&cold, g.tree, "-j3", "--stats", "--format=json", "--cache-dir=full", "src");
    expect_parsed(&cold, 3, 0);
    LINT(&warm, g.tree, "-j3", "--stats", "--format=json", "--cache-dir=full", "src");
    expect_parsed(&warm, 0, 3);
    scale_same_report("json", ref.out, warm.out);
    kdc_run_free(&cold);
    kdc_run_free(&warm);
    kdc_run_free(&ref);
}

/* The same build installed again (a CI job that installs kdc-lint afresh: another inode,
 * another modification time) uses the entries an earlier job stored; another build (other
 * contents, here a byte appended) does not. */
static void the_same_build_installed_again_keeps_the_entries_another_build_does_not(
    void **state) {
    (void)state;
    kdc_run_t r, cold;
    char *bin = scratch_path(g.tree, "bin/kdc-lint");
    const char *lint = scale_lint_path();
    assert_int_equal(scratch_run(&r, g.tree, "sh", "-c", "mkdir bin && cp \"$0\" bin/kdc-lint",
                                 lint, (const char *)NULL), 0);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    scale_lint_with(bin, &cold, g.tree, "--stats", "--format=json", "src", (const char *)NULL);
    expect_parsed(&cold, 3, 0);
    assert_int_equal(scratch_run(&r, g.tree, "sh", "-c",
                                 "cp \"$0\" bin/new && touch -d 2001-01-01 bin/new && "
                                 "mv bin/new bin/kdc-lint",
                                 lint, (const char *)NULL), 0);
    assert_int_equal(r.exit_code, 0);
    kdc_run_free(&r);
    scale_lint_with(bin, &r, g.tree, "--stats", "--format=json", "src", (const char *)NULL);
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    scale_same_report("json", cold.out, r.out);
    kdc_run_free(&r);
    assert_int_equal(scratch_run(&r, g.tree, "sh", "-c", "printf x >>bin/kdc-lint",
                                 (const char *)NULL), 0);
    kdc_run_free(&r);
    scale_lint_with(bin, &r, g.tree, "--stats", "--format=json", "src", (const char *)NULL);
    expect_parsed(&r, 3, 0);
    expect_analysis(&r, analysis_run);
    scale_same_report("json", cold.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&cold);
    free(bin);
}

/* Runs sharing a cache directory from containers of their own (a CI runner's jobs, each
 * kdc-lint with the same pid) do not write into one temporary file: here the temporary
 * names the entries had with pid 1 are taken (directories) and kdc-lint runs as pid 1 of a
 * new pid namespace; every entry is still written, without a note, and used. */
static void a_temporary_name_taken_by_another_run_does_not_stop_a_cache_write(void **state) {
    (void)state;
    kdc_run_t ref, r;
    LINT(&ref, g.tree, "-j1", "--format=json", "--cache-dir=c", "src");
    assert_int_equal(ref.exit_code, 1);
    const char *subs[] = {"units", "runs"};
    size_t total = 0;
    char *cache = scratch_path(g.tree, "c");
    for (size_t k = 0; k < 2; k++) {
        size_t n;
        char **e = entries_in(cache, subs[k], &n);
        for (size_t i = 0; i < n; i++) {
            char *taken = NULL;
            assert_true(asprintf(&taken, "%s.tmp.1", e[i]) > 0);
            assert_int_equal(unlink(e[i]), 0);
            assert_int_equal(mkdir(taken, 0755), 0);
            free(taken);
        }
        total += n;
        free_entries(e, n);
    }
    free(cache);
    assert_int_equal(total, 4); /* three units, one analysis */
    char *const argv[] = {"/usr/bin/unshare", "--pid", "--fork", (char *)scale_lint_path(), "-j1",
                          "--format=json", "--cache-dir=c", "src", NULL};
    assert_int_equal(kdc_run(g.tree, argv, &r), 0);
    if (r.exit_code != 1 && strstr(r.err, "unshare")) { /* no unshare, or no pid namespaces */
        kdc_run_free(&r);
        kdc_run_free(&ref);
        skip();
    }
    assert_int_equal(r.exit_code, 1);
    scale_same_report("json", ref.out, r.out);
    if (strstr(r.err, "cannot write cache entry")) {
        scale_show(&r);
        fail_msg("a cache write failed on another run's temporary name");
    }
    kdc_run_free(&r);
    LINT(&r, g.tree, "-j1", "--stats", "--format=json", "--cache-dir=c", "src");
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&ref);
}

/* A cache entry that is a FIFO (a cache restored from elsewhere, a prank) is refused with
 * a note and replaced; opening it must not wait for a writer. */
static void an_entry_that_is_a_fifo_is_ignored_not_waited_for(void **state) {
    (void)state;
    kdc_run_t ref, r;
    LINT(&ref, g.tree, "-j1", "--format=json", "--cache-dir=c", "src");
    assert_int_equal(ref.exit_code, 1);
    const char *subs[] = {"units", "runs"};
    char *cache = scratch_path(g.tree, "c");
    for (size_t k = 0; k < 2; k++) {
        size_t n;
        char **e = entries_in(cache, subs[k], &n);
        assert_true(n > 0);
        for (size_t i = 0; i < n; i++) {
            assert_int_equal(unlink(e[i]), 0);
            assert_int_equal(mkfifo(e[i], 0644), 0);
        }
        free_entries(e, n);
    }
    free(cache);
    char *const argv[] = {(char *)scale_lint_path(), "-j1", "--stats", "--format=json",
                          "--cache-dir=c", "src", NULL};
    kdc_run_opts_t o = {.timeout = 30};
    assert_int_equal(kdc_run_ex(g.tree, argv, &o, &r), 0);
    if (r.timed_out) {
        scale_show(&r);
        fail_msg("kdc-lint waited on a FIFO in the cache");
    }
    assert_int_equal(r.exit_code, 1);
    scale_same_report("json", ref.out, r.out);
    expect_parsed(&r, 3, 0);
    assert_non_null(strstr(r.err, ": not a regular file of a plausible size; ignored, the unit "
                                  "is parsed again\n"));
    assert_non_null(strstr(r.err, ": not a regular file of a plausible size; ignored, the "
                                  "program is analysed again\n"));
    kdc_run_free(&r);
    LINT(&r, g.tree, "-j1", "--stats", "--format=json", "--cache-dir=c", "src");
    expect_parsed(&r, 0, 3);
    expect_analysis(&r, analysis_cached);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    /* one unit's entry only, the analysis's entry intact: its check must not wait either */
    cache = scratch_path(g.tree, "c");
    size_t n;
    char **e = entries_in(cache, "units", &n);
    assert_int_equal(unlink(e[0]), 0);
    assert_int_equal(mkfifo(e[0], 0644), 0);
    assert_int_equal(kdc_run_ex(g.tree, argv, &o, &r), 0);
    if (r.timed_out) {
        scale_show(&r);
        fail_msg("kdc-lint waited on a FIFO in the cache");
    }
    expect_parsed(&r, 1, 2);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    free_entries(e, n);
    free(cache);
    kdc_run_free(&ref);
}

/* Directories where unit entries belong (a damaged or tampered cache): an empty one is
 * replaced by the entry, a non-empty one costs that entry only (a note), never the
 * other entries of the run. */
static void a_directory_in_an_entrys_place_costs_that_entry_only(void **state) {
    (void)state;
    kdc_run_t ref, r;
    LINT(&ref, g.tree, "-j1", "--format=json", "--cache-dir=c", "src");
    assert_int_equal(ref.exit_code, 1);
    char *cache = scratch_path(g.tree, "c");
    size_t n;
    char **e = entries_in(cache, "units", &n);
    assert_int_equal(n, 3);
    for (size_t i = 0; i < n; i++) {
        assert_int_equal(unlink(e[i]), 0);
        assert_int_equal(mkdir(e[i], 0755), 0);
    }
    scratch_write(e[0], "x", "not an entry\n");
    kdc_run_t cold;
    LINT(&cold, g.tree, "-j1", "--stats", "--format=json", "--cache-dir=c", "src");
    assert_int_equal(cold.exit_code, 1);
    scale_same_report("json", ref.out, cold.out);
    expect_parsed(&cold, 3, 0);
    char want[4200];
    snprintf(want, sizeof want, "cannot write cache entry c/units/%s: Is a directory\n",
             strrchr(e[0], '/') + 1);
    if (!strstr(cold.err, want) || strstr(cold.err, "no further cache writes")) {
        scale_show(&cold);
        fail_msg("want one note for %s alone", e[0]);
    }
    kdc_run_free(&cold);
    LINT(&r, g.tree, "-j1", "--stats", "--format=json", "--cache-dir=c", "src");
    expect_parsed(&r, 1, 2);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    free_entries(e, n);
    free(cache);
    kdc_run_free(&ref);
}

/* Without -p, a relative path in the extra arguments (-Iinc) is relative to the directory
 * kdc-lint runs in: run from another directory with the same cache, it names another
 * header, and the report is that of --no-cache there, not the stored one. */
static void a_relative_include_path_run_from_another_directory_is_another_unit(void **state) {
    (void)state;
    scratch_write(g.tree, "a/inc/dr.h", "#define WITH_DR 1\n");
    scratch_write(g.tree, "b/inc/dr.h", "/* WITH_DR not defined */\n");
    scratch_write(g.tree, "src/conf.h", "#include \"dr.h\"\n");
    char *a = scratch_path(g.tree, "a"), *b = scratch_path(g.tree, "b");
    char *src = scratch_path(g.tree, "src"), *cache = scratch_path(g.tree, "c");
    char opt[4200];
    snprintf(opt, sizeof opt, "--cache-dir=%s", cache);
    kdc_run_t r, ref;
    LINT(&r, a, "--stats", "--format=json", opt, src, "--", "-Iinc");
    assert_int_equal(r.exit_code, 1);
    assert_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    LINT(&ref, b, "--no-cache", "--format=json", src, "--", "-Iinc");
    assert_non_null(strstr(ref.out, "produce-without-delivery-callback"));
    LINT(&r, b, "--stats", "--format=json", opt, src, "--", "-Iinc");
    assert_int_equal(r.exit_code, ref.exit_code);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&ref);
    free(a);
    free(b);
    free(src);
    free(cache);
}

/* A header reached through a symbolic link: retargeting the link (the old and the new
 * target both unchanged) changes what the unit includes, and the report is that of
 * --no-cache. */
static void a_retargeted_symbolic_link_to_a_header_is_a_changed_header(void **state) {
    (void)state;
    scratch_write(g.tree, "src/conf-off.h", "/* WITH_DR not defined */\n");
    scratch_write(g.tree, "src/conf-on.h", "#define WITH_DR 1\n");
    char *conf = scratch_path(g.tree, "src/conf.h");
    assert_int_equal(unlink(conf), 0);
    assert_int_equal(symlink("conf-off.h", conf), 0);
    kdc_run_t r, ref;
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    assert_non_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    assert_int_equal(unlink(conf), 0);
    assert_int_equal(symlink("conf-on.h", conf), 0);
    LINT(&ref, g.tree, "--no-cache", "--format=json", "src");
    assert_null(strstr(ref.out, "produce-without-delivery-callback"));
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    assert_int_equal(r.exit_code, ref.exit_code);
    scale_same_report("json", ref.out, r.out);
    expect_parsed(&r, 1, 2); /* producer.c */
    kdc_run_free(&r);
    kdc_run_free(&ref);
    free(conf);
}

/* A header added in an include directory searched before the one its namesake was found
 * in (-Ifirst -Isecond) is what the unit includes now: the report is that of --no-cache,
 * though no file the unit read has changed. */
static void a_header_that_now_shadows_another_on_the_include_path_counts(void **state) {
    (void)state;
    char *conf = scratch_path(g.tree, "src/conf.h");
    assert_int_equal(unlink(conf), 0);
    free(conf);
    scratch_write(g.tree, "second/conf.h", "/* WITH_DR not defined */\n");
    scratch_write(g.tree, "first/.keep", "");
    kdc_run_t r, ref;
    LINT(&r, g.tree, "--stats", "--format=json", "src", "--", "-Ifirst", "-Isecond");
    expect_parsed(&r, 3, 0);
    assert_non_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    scratch_write(g.tree, "first/conf.h", "#define WITH_DR 1\n");
    LINT(&ref, g.tree, "--no-cache", "--format=json", "src", "--", "-Ifirst", "-Isecond");
    assert_null(strstr(ref.out, "produce-without-delivery-callback"));
    LINT(&r, g.tree, "--stats", "--format=json", "src", "--", "-Ifirst", "-Isecond");
    assert_int_equal(r.exit_code, ref.exit_code);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&ref);
    /* and on CPATH's include path: first/conf.h, gone, is shadowed by cpath/conf.h anew */
    char *first = scratch_path(g.tree, "first/conf.h"), *cpath = scratch_path(g.tree, "cpath");
    char *second = scratch_path(g.tree, "second"), *both = NULL;
    assert_int_equal(unlink(first), 0);
    scratch_write(g.tree, "cpath/.keep", "");
    assert_true(asprintf(&both, "%s:%s", cpath, second) > 0);
    assert_int_equal(setenv("CPATH", both, 1), 0);
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    assert_non_null(strstr(r.out, "produce-without-delivery-callback"));
    kdc_run_free(&r);
    scratch_write(g.tree, "cpath/conf.h", "#define WITH_DR 1\n");
    LINT(&ref, g.tree, "--no-cache", "--format=json", "src");
    assert_null(strstr(ref.out, "produce-without-delivery-callback"));
    LINT(&r, g.tree, "--stats", "--format=json", "src");
    assert_int_equal(unsetenv("CPATH"), 0);
    assert_int_equal(r.exit_code, ref.exit_code);
    scale_same_report("json", ref.out, r.out);
    kdc_run_free(&r);
    kdc_run_free(&ref);
    free(first);
    free(cpath);
    free(second);
    free(both);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(a_warm_run_parses_nothing_and_writes_the_same_report,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(a_changed_header_reparses_only_the_unit_that_includes_it,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(an_unchanged_tree_is_neither_parsed_nor_analysed_again,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_warm_run_loads_no_model_while_every_entry_and_file_is_unchanged, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            configuration_suppressions_and_baseline_apply_to_cached_findings, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_damaged_analysis_entry_is_ignored_with_a_note_and_written_again, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_unit_that_left_out_a_shared_function_is_parsed_again_without_its_provider, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_header_rewritten_with_its_size_and_mtime_forged_back_is_still_changed, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(other_flags_and_another_executable_are_other_entries,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            the_same_build_installed_again_keeps_the_entries_another_build_does_not, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(damaged_entries_are_ignored_with_a_note_and_written_again,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(a_planted_cache_cannot_hide_a_finding, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(a_unit_with_compile_errors_is_parsed_every_time, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(
            bad_cache_directories_are_errors_before_anything_is_analysed, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            the_default_cache_is_made_where_kdc_lint_runs_unless_that_is_read_only, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_cache_that_cannot_be_written_is_noted_once_and_the_report_is_unchanged, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_temporary_name_taken_by_another_run_does_not_stop_a_cache_write, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(an_entry_that_is_a_fifo_is_ignored_not_waited_for,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(a_directory_in_an_entrys_place_costs_that_entry_only,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_relative_include_path_run_from_another_directory_is_another_unit, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(a_retargeted_symbolic_link_to_a_header_is_a_changed_header,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_header_that_now_shadows_another_on_the_include_path_counts, each_setup,
            each_teardown),
    };
    return cmocka_run_group_tests_name("kdc-lint unit cache", tests, NULL, NULL);
}
