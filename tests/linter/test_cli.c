/*
 * kdc-lint as a user meets it: awkward and hostile inputs, the compilation
 * database, options and output. Every test asserts the exit code (0 no
 * findings, 1 findings, 2 usage/input/configuration error), the message that
 * names the problem, that the other inputs are still analysed, and that no
 * sanitizer reported anything (the asan preset runs the same tests).
 *
 *   test_cli [--kdc-lint PATH] [--inputs DIR]
 *
 * Defaults come from the environment: KDC_LINT, KDC_CLI_INPUTS (committed
 * inputs, tests/linter/inputs). Everything else is generated into a temporary
 * directory at test time.
 *
 * Known limits these tests document without asserting a finding (false
 * negatives, not crashes): commits inside templates (calls on a template
 * parameter) are not seen; `#include "/dev/zero"` makes libclang read
 * forever.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lintrun.h"

static struct {
    const char *lint, *inputs;
    char tmp[256];
} g;

/* ---------- files ---------- */

/* A consumer committed without an offset list: one bare-commit finding at 2:26. */
static const char good_c[] = "#include <librdkafka/rdkafka.h>\n"
                             "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n";

static char *path_in(const char *dir, const char *rel) {
    /* malloc + snprintf, not asprintf(&p, ..): once inlined, gcc -O2 took
     * the address of path_in's p for a pointer into the caller's frame and
     * warned (falsely) of a dangling pointer in write_bytes. */
    size_t len = strlen(dir) + 1 + strlen(rel) + 1;
    char *p = malloc(len);
    if (!p)
        abort();
    snprintf(p, len, "%s/%s", dir, rel);
    return p;
}

static void mkdirs(const char *path) {
    char *p = strdup(path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(p, 0755);
            *s = '/';
        }
    mkdir(p, 0755);
    free(p);
}

/* A fresh directory for one test: g.tmp/name. */
static char *test_dir(const char *name) {
    char *d = path_in(g.tmp, name);
    mkdirs(d);
    return d;
}

static void write_bytes(const char *dir, const char *rel, const char *data, size_t len) {
    char *p = path_in(dir, rel);
    char *slash = strrchr(p, '/');
    *slash = 0;
    mkdirs(p);
    *slash = '/';
    FILE *f = fopen(p, "wb");
    if (!f)
        fail_msg("cannot write %s: %s", p, strerror(errno));
    assert_int_equal(fwrite(data, 1, len, f), len);
    assert_int_equal(fclose(f), 0);
    free(p);
}

static void write_text(const char *dir, const char *rel, const char *text) {
    write_bytes(dir, rel, text, strlen(text));
}

static void write_good(const char *dir, const char *rel) { write_text(dir, rel, good_c); }

/* ---------- running kdc-lint ---------- */

typedef struct res {
    kdc_run_t run; /* out, err, seconds */
    int code;      /* exit status, 128 + signal when killed, -1 when timed out */
    char *cmd;     /* for failure messages */
} res_t;

typedef kdc_run_opts_t runopt_t;

/* Runs kdc-lint in cwd with the NULL-terminated arguments (default timeout 300 s). */
static void run_v(res_t *r, const runopt_t *o, const char *cwd, va_list ap) {
    runopt_t opts = o ? *o : (runopt_t){0};
    if (!opts.timeout)
        opts.timeout = 300;
    const char *argv[64];
    size_t n = 0;
    argv[n++] = g.lint;
    for (const char *a; (a = va_arg(ap, const char *)) && n < 63;)
        argv[n++] = a;
    argv[n] = NULL;

    memset(r, 0, sizeof *r);
    size_t len = 0;
    FILE *cmd = open_memstream(&r->cmd, &len);
    fprintf(cmd, "(cd %s &&", cwd);
    for (size_t i = 0; i < n; i++)
        fprintf(cmd, " '%s'", argv[i]);
    fprintf(cmd, ")");
    fclose(cmd);

    if (kdc_run_ex(cwd, (char *const *)argv, &opts, &r->run) != 0)
        fail_msg("cannot run %s", r->cmd);
    r->code = r->run.timed_out ? -1 : r->run.exit_code;
}

static void run_in(res_t *r, const runopt_t *o, const char *cwd, ...) {
    va_list ap;
    va_start(ap, cwd);
    run_v(r, o, cwd, ap);
    va_end(ap);
}

#define LINT(r, cwd, ...) run_in((r), NULL, (cwd), __VA_ARGS__, (const char *)NULL)
#define LINT_OPT(r, o, cwd, ...) run_in((r), (o), (cwd), __VA_ARGS__, (const char *)NULL)

static void res_free(res_t *r) {
    kdc_run_free(&r->run);
    free(r->cmd);
}

static void show(const res_t *r) {
    print_error("command: %s\nexit: %d\n--- stdout (first 4000 bytes)\n%.4000s\n--- stderr (first "
                "4000 bytes)\n%.4000s\n---\n",
                r->cmd, r->code, r->run.out, r->run.err);
}

/* Exit code as expected, and no sanitizer report (asan preset). */
static void expect_exit(const res_t *r, int code) {
    static const char *const reports[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                          "runtime error:", NULL};
    for (size_t i = 0; reports[i]; i++)
        if (strstr(r->run.err, reports[i])) {
            show(r);
            fail_msg("sanitizer report (%s)", reports[i]);
        }
    if (r->code != code) {
        show(r);
        if (r->code == -1)
            fail_msg("timed out (expected exit %d)", code);
        fail_msg("exit %d, expected %d", r->code, code);
    }
}

static void expect_in(const res_t *r, const char *stream, const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        show(r);
        fail_msg("%s lacks \"%s\"", stream, needle);
    }
}

static void expect_not_in(const res_t *r, const char *stream, const char *text,
                          const char *needle) {
    if (strstr(text, needle)) {
        show(r);
        fail_msg("%s has \"%s\"", stream, needle);
    }
}

#define EXPECT_ERR(r, s) expect_in((r), "stderr", (r)->run.err, (s))
#define EXPECT_OUT(r, s) expect_in((r), "stdout", (r)->run.out, (s))
#define EXPECT_NO_ERR(r, s) expect_not_in((r), "stderr", (r)->run.err, (s))
#define EXPECT_NO_OUT(r, s) expect_not_in((r), "stdout", (r)->run.out, (s))

static size_t count(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}

/* The JSON report (stdout): must parse (so also be valid UTF-8). Caller decrefs. */
static json_t *report(const res_t *r) {
    json_error_t e;
    json_t *j = json_loads(r->run.out, 0, &e);
    if (!j) {
        show(r);
        fail_msg("stdout is not a JSON document: line %d: %s", e.line, e.text);
    }
    return j;
}

static json_t *jget(json_t *j, const char *path) {
    /* "findings.0.file": object keys and array indexes */
    char *copy = strdup(path), *save = NULL;
    for (char *k = strtok_r(copy, ".", &save); k && j; k = strtok_r(NULL, ".", &save))
        j = json_is_array(j) ? json_array_get(j, strtoul(k, NULL, 10)) : json_object_get(j, k);
    free(copy);
    return j;
}

static const char *jstr(json_t *j, const char *path) {
    json_t *v = jget(j, path);
    if (!json_is_string(v))
        fail_msg("JSON %s is not a string", path);
    return json_string_value(v);
}

static long long jint(json_t *j, const char *path) {
    json_t *v = jget(j, path);
    if (!json_is_integer(v))
        fail_msg("JSON %s is not an integer", path);
    return json_integer_value(v);
}

static size_t jlen(json_t *j, const char *path) {
    json_t *v = jget(j, path);
    if (!json_is_array(v))
        fail_msg("JSON %s is not an array", path);
    return json_array_size(v);
}

#define GOOD_FINDING "good.c:2:26: warning: rd_kafka_commit without an offset list"

/* ---------- awkward inputs ---------- */

static void a_binary_file_named_like_c_source_is_an_input_error_and_the_rest_is_reported(void **s) {
    (void)s;
    char *d = test_dir("binary");
    char bin[4096];
    for (size_t i = 0; i < sizeof bin; i++)
        bin[i] = (char)(i * 7);
    write_bytes(d, "x.c", bin, sizeof bin);
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "x.c", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: x.c: binary file, not C or C++ source: not analysed");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    LINT(&r, d, "--format=json", "x.c", "good.c");
    expect_exit(&r, 2);
    json_t *j = report(&r);
    assert_int_equal(jlen(j, "errors"), 1);
    assert_string_equal(jstr(j, "errors.0.file"), "x.c");
    assert_int_equal(jlen(j, "findings"), 1);
    assert_string_equal(jstr(j, "findings.0.file"), "good.c");
    json_decref(j);
    res_free(&r);
    free(d);
}

static void an_empty_source_file_is_one_translation_unit_without_findings(void **s) {
    (void)s;
    char *d = test_dir("empty");
    write_text(d, "empty.c", "");
    res_t r;
    LINT(&r, d, "--no-prefilter", "empty.c");
    expect_exit(&r, 0);
    EXPECT_ERR(&r, "kdc-lint: 0 findings in 1 translation unit (0 incomplete, 0 input errors)");
    assert_string_equal(r.run.out, "");
    res_free(&r);
    free(d);
}

static void a_missing_path_is_an_input_error_and_the_rest_is_reported(void **s) {
    (void)s;
    char *d = test_dir("missing");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "nosuch.c", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: nosuch.c: No such file or directory");
    EXPECT_ERR(&r, "1 finding in 1 translation unit (0 incomplete, 1 input error)");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void an_empty_path_argument_is_named_as_such(void **s) {
    (void)s;
    char *d = test_dir("emptypath");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: '': empty path");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void a_directory_without_sources_is_an_input_error_and_the_rest_is_reported(void **s) {
    (void)s;
    char *d = test_dir("nosrc");
    write_text(d, "docs/readme.txt", "no sources here\n");
    write_good(d, "docs/.hidden/hidden.c"); /* hidden directories are skipped */
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "docs", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: docs: no C or C++ sources (.c, .cc, .cpp, .cxx) in this "
                   "directory");
    EXPECT_OUT(&r, GOOD_FINDING);
    EXPECT_NO_OUT(&r, "hidden.c");
    res_free(&r);
    free(d);
}

static void a_file_with_syntax_errors_is_incomplete_and_the_good_file_is_still_reported(void **s) {
    (void)s;
    char *d = test_dir("syntax");
    write_text(d, "bad.c", "int f( {\n");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--no-prefilter", "bad.c", "good.c");
    expect_exit(&r, 1);
    /* the first error is shown relative to the working directory, like every path */
    EXPECT_ERR(&r, "bad.c: warning: 3 compile errors; analysed partially (first: bad.c:1:8: error: ");
    EXPECT_ERR(&r, "hint: pass -p BUILD_DIR");
    EXPECT_ERR(&r, "1 finding in 2 translation units (1 incomplete, 0 input errors)");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);

    LINT(&r, d, "--no-prefilter", "--format=json", "bad.c", "good.c");
    expect_exit(&r, 1);
    json_t *j = report(&r);
    assert_int_equal(jlen(j, "incomplete"), 1);
    assert_string_equal(jstr(j, "incomplete.0.file"), "bad.c");
    assert_int_equal(jint(j, "incomplete.0.compile_errors"), 3);
    assert_true(!strncmp(jstr(j, "incomplete.0.first_error"), "bad.c:1:8: error: ", 18));
    assert_int_equal(jint(j, "stats.translation_units"), 2);
    assert_int_equal(jint(j, "stats.incomplete"), 1);
    json_decref(j);
    res_free(&r);

    LINT(&r, d, "--no-prefilter", "--fail-on-incomplete", "bad.c", "good.c");
    expect_exit(&r, 2);
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void a_missing_include_is_the_first_error_with_the_hint_to_use_the_build_flags(void **s) {
    (void)s;
    char *d = test_dir("include");
    write_text(d, "inc.c",
               "#include \"nope.h\"\n#include <librdkafka/rdkafka.h>\n"
               "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n");
    res_t r;
    LINT(&r, d, "inc.c");
    expect_exit(&r, 1); /* still analysed: KeepGoing */
    EXPECT_ERR(&r, "inc.c: warning: 1 compile error; analysed partially (first: inc.c:1:10: "
                   "error: 'nope.h' file not found)");
    EXPECT_ERR(&r, "hint: pass -p BUILD_DIR with the project's compile_commands.json");
    EXPECT_OUT(&r, "inc.c:3:26: warning: rd_kafka_commit");
    res_free(&r);
    free(d);
}

static void an_unreadable_directory_is_an_input_error_and_the_readable_files_are_reported(void **s) {
    (void)s;
    /* As root, permissions do not stop reading: run kdc-lint as nobody instead. */
    char *d = test_dir("unreadable");
    assert_int_equal(chmod(g.tmp, 0755), 0);
    assert_int_equal(chmod(d, 0755), 0);
    write_good(d, "src/a.c");
    write_good(d, "src/locked/b.c");
    char *locked = path_in(d, "src/locked");
    assert_int_equal(chmod(locked, 0), 0);
    runopt_t o = {.as_nobody = 1};
    res_t r;
    LINT_OPT(&r, &o, d, "src");
    chmod(locked, 0755);
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: src/locked: cannot read directory: Permission denied");
    EXPECT_OUT(&r, "src/a.c:2:26: warning: rd_kafka_commit");
    EXPECT_NO_OUT(&r, "b.c");
    res_free(&r);

    /* an unreadable file, the same way */
    char *b = path_in(d, "src/locked/b.c");
    assert_int_equal(chmod(b, 0), 0);
    LINT_OPT(&r, &o, d, "src/locked/b.c", "src/a.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: src/locked/b.c: cannot read: Permission denied");
    EXPECT_OUT(&r, "src/a.c:2:26: warning: rd_kafka_commit");
    res_free(&r);
    free(b);
    free(locked);
    free(d);
}

static void symlink_loops_in_a_directory_neither_hang_nor_repeat_a_file(void **s) {
    (void)s;
    char *d = test_dir("loops");
    write_good(d, "tree/sub/good.c");
    char *p;
    p = path_in(d, "tree/self");
    assert_int_equal(symlink(".", p), 0);
    free(p);
    p = path_in(d, "tree/sub/up");
    assert_int_equal(symlink("..", p), 0);
    free(p);
    p = path_in(d, "tree/a");
    assert_int_equal(symlink("b", p), 0); /* a -> b -> a */
    free(p);
    p = path_in(d, "tree/b");
    assert_int_equal(symlink("a", p), 0);
    free(p);
    p = path_in(d, "loop.c");
    assert_int_equal(symlink("loop.c", p), 0); /* a PATH that loops on itself */
    free(p);
    runopt_t o = {.timeout = 60};
    res_t r;
    LINT_OPT(&r, &o, d, "tree", "loop.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: loop.c: Too many levels of symbolic links");
    assert_int_equal(count(r.run.out, "warning: rd_kafka_commit"), 1);
    EXPECT_OUT(&r, "tree/sub/good.c:2:26: warning:");
    res_free(&r);
    free(d);
}

static void a_fifo_named_like_c_source_is_an_input_error_not_a_hang(void **s) {
    (void)s;
    char *d = test_dir("fifo");
    write_good(d, "good.c");
    char *f = path_in(d, "pipe.c");
    assert_int_equal(mkfifo(f, 0644), 0);
    runopt_t o = {.timeout = 30};
    res_t r;
    LINT_OPT(&r, &o, d, "pipe.c", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: pipe.c: not a regular file (device, FIFO or socket): not "
                   "analysed");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(f);
    free(d);
}

static void a_header_path_gets_a_note_that_headers_are_analysed_through_their_units(void **s) {
    (void)s;
    char *d = test_dir("header");
    write_text(d, "api.h", "void f(void);\n");
    res_t r;
    LINT(&r, d, "api.h");
    expect_exit(&r, 0);
    EXPECT_ERR(&r, "api.h: note: headers are analysed through the translation units that "
                   "include them");
    EXPECT_ERR(&r, "0 findings in 0 translation units (0 incomplete, 0 input errors)");
    res_free(&r);
    free(d);
}

/* ---------- size and depth ---------- */

static void a_file_of_20000_functions_is_analysed_to_its_last_function(void **s) {
    (void)s;
    char *d = test_dir("huge");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("#include <librdkafka/rdkafka.h>\n", f);
    for (int i = 0; i < 20000; i++)
        fprintf(f, "int f%d(int x) { if (x > %d) return f%d(x - 1); return x + %d; }\n", i, i,
                i ? i - 1 : 0, i);
    fputs("void last(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n", f);
    fclose(f);
    write_bytes(d, "huge.c", buf, len);
    free(buf);
    res_t r;
    LINT(&r, d, "huge.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "huge.c:20002:29: warning: rd_kafka_commit");
    res_free(&r);
    free(d);
}

/* rd_kafka_t *a0..aN; a0 = a1; a1 = a2; ...; aN = rd_kafka_new(..); bare commit on a0. */
static void write_chain(const char *d, const char *name, int n) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("#include <librdkafka/rdkafka.h>\nvoid run(rd_kafka_conf_t *conf) {\n", f);
    for (int i = 0; i <= n; i++)
        fprintf(f, "    rd_kafka_t *a%d;\n", i);
    for (int i = 0; i < n; i++)
        fprintf(f, "    a%d = a%d;\n", i, i + 1);
    fprintf(f, "    a%d = rd_kafka_new(RD_KAFKA_CONSUMER, conf, NULL, 0);\n", n);
    fputs("    rd_kafka_commit(a0, NULL, 0);\n}\n", f);
    fclose(f);
    write_bytes(d, name, buf, len);
    free(buf);
}

static void a_handle_copied_through_80000_variables_is_followed_in_linear_time(void **s) {
    (void)s;
    /* The links run against the order the solver used to sweep its copies in:
     * one sweep per link made this quadratic (64 times slower for 8 times the
     * links; a worklist is linear). Timed against 10000 links with the same
     * binary, so that slow builds (sanitizers) and slow machines compare fairly. */
    char *d = test_dir("chain");
    write_chain(d, "short.c", 10000);
    write_chain(d, "long.c", 80000);
    res_t small, big;
    LINT(&small, d, "short.c");
    expect_exit(&small, 1);
    LINT(&big, d, "long.c");
    expect_exit(&big, 1);
    EXPECT_OUT(&big, "long.c:160005:5: warning: rd_kafka_commit");
    /* the note names where the consumer was created, at the far end of the chain */
    EXPECT_OUT(&big, "long.c:160004:");
    EXPECT_OUT(&big, "consumer created here");
    print_message("10000 links: %.2f s, 80000 links: %.2f s\n", small.run.seconds, big.run.seconds);
    if (big.run.seconds > 20 * small.run.seconds + 1.0)
        fail_msg("80000 links took %.2f s, 10000 took %.2f s: not linear", big.run.seconds,
                 small.run.seconds);
    res_free(&small);
    res_free(&big);
    free(d);
}

static char *generated(const char *head, const char *unit, int n, const char *tail) {
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs(head, f);
    for (int i = 0; i < n; i++)
        fprintf(f, unit, i, i);
    fputs(tail, f);
    fclose(f);
    return buf;
}

static void an_else_if_chain_of_3000_branches_is_analysed_completely(void **s) {
    (void)s;
    char *d = test_dir("elseif3000");
    char *src = generated("#include <librdkafka/rdkafka.h>\nint g(rd_kafka_t *rk, int x) {\n"
                          "    if (x < 0) return -1;\n",
                          "    else if (x == %d) return %d;\n", 3000,
                          "    rd_kafka_commit(rk, NULL, 0);\n    return 0;\n}\n");
    write_text(d, "chain.c", src);
    free(src);
    res_t r;
    LINT(&r, d, "chain.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "chain.c:3004:5: warning: rd_kafka_commit");
    EXPECT_ERR(&r, "(0 incomplete, 0 input errors)");
    res_free(&r);
    free(d);
}

static void an_else_if_chain_of_20000_branches_is_analysed_partially_without_a_crash(void **s) {
    (void)s;
    /* gcc compiles this; libclang's own 8 MiB parser thread used to overflow
     * at about 10000 levels, and the model's recursion too. */
    char *d = test_dir("elseif20000");
    char *src = generated("int g(int x) {\n    if (x < 0) return -1;\n",
                          "    else if (x == %d) return %d;\n", 20000, "    return 0;\n}\n");
    write_text(d, "chain.c", src);
    free(src);
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--no-prefilter", "chain.c", "good.c");
    expect_exit(&r, 1);
    EXPECT_ERR(&r, "chain.c: warning: analysed partially: chain.c:");
    EXPECT_ERR(&r, "nesting deeper than 10000 expressions and statements; the deeper part is not "
                   "analysed");
    EXPECT_ERR(&r, "1 finding in 2 translation units (1 incomplete, 0 input errors)");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);

    LINT(&r, d, "--no-prefilter", "--format=json", "chain.c", "good.c");
    expect_exit(&r, 1);
    json_t *j = report(&r);
    assert_int_equal(jlen(j, "incomplete"), 1);
    assert_string_equal(jstr(j, "incomplete.0.file"), "chain.c");
    assert_int_equal(jint(j, "incomplete.0.compile_errors"), 0);
    assert_non_null(strstr(jstr(j, "incomplete.0.too_deep"), "nesting deeper than 10000"));
    json_decref(j);
    res_free(&r);

    LINT(&r, d, "--no-prefilter", "--fail-on-incomplete", "chain.c", "good.c");
    expect_exit(&r, 2);
    res_free(&r);
    free(d);
}

static void thirty_thousand_nested_ifs_are_analysed_partially_without_a_crash(void **s) {
    (void)s;
    char *d = test_dir("nestedif");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("int h(int x) {\n", f);
    for (int i = 0; i < 30000; i++)
        fputs("if (x) ", f);
    fputs("return 1;\n    return 0;\n}\n", f);
    fclose(f);
    write_bytes(d, "nested.c", buf, len);
    free(buf);
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--no-prefilter", "nested.c", "good.c");
    expect_exit(&r, 1);
    EXPECT_ERR(&r, "nested.c: warning: analysed partially: nested.c:2:");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void a_sum_of_20000_terms_is_analysed_partially_without_a_crash(void **s) {
    (void)s;
    char *d = test_dir("deepexpr");
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    fputs("int f(int x) { return x", f);
    for (int i = 1; i < 20000; i++)
        fputs(" + x", f);
    fputs("; }\n", f);
    fclose(f);
    write_bytes(d, "sum.c", buf, len);
    free(buf);
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--no-prefilter", "sum.c", "good.c");
    expect_exit(&r, 1);
    EXPECT_ERR(&r, "sum.c: warning: analysed partially: sum.c:1:");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void constants_that_overflow_are_folded_without_undefined_behaviour(void **s) {
    (void)s;
    /* signed overflow in the model's constant folding was undefined behaviour
     * (UBSan aborts the asan build) */
    char *d = test_dir("overflow");
    write_text(d, "big.c",
               "long long a(void) { return 9223372036854775807LL + 1; }\n"
               "long long b(void) { return 4611686018427387904LL * 4; }\n"
               "long long c(void) { return -(-9223372036854775807LL - 1); }\n"
               "long long d(void) { return (-1LL) << 3; }\n"
               "long long e(void) { return 3LL << 62; }\n"
               "long long f(void) { return (-9223372036854775807LL - 1) - 1; }\n");
    res_t r;
    LINT(&r, d, "--no-prefilter", "big.c");
    expect_exit(&r, 0);
    EXPECT_ERR(&r, "0 findings in 1 translation unit (0 incomplete, 0 input errors)");
    res_free(&r);
    free(d);
}

static void a_two_megabyte_source_line_is_shown_cut_around_the_caret(void **s) {
    (void)s;
    char *d = test_dir("longline");
    size_t pad = 2000000;
    const char *head = "#include <librdkafka/rdkafka.h>\nint a = 0;";
    const char *tail = "void f(rd_kafka_t *rk) { rd_kafka_commit(rk, NULL, 0); }\n";
    char *src = malloc(strlen(head) + pad + strlen(tail) + 1);
    strcpy(src, head);
    memset(src + strlen(head), ' ', pad);
    strcpy(src + strlen(head) + pad, tail);
    write_text(d, "long.c", src);
    free(src);
    res_t r;
    LINT(&r, d, "long.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "long.c:2:2000036: warning: rd_kafka_commit");
    /* a window of the line, marked as cut, with the caret under the call */
    assert_true(strlen(r.run.out) < 1500);
    EXPECT_OUT(&r, "\n  ...");
    const char *line = strstr(r.run.out, "\n  ...") + 1, *caret_line = strchr(line, '\n') + 1;
    size_t call = (size_t)(strstr(line, "rd_kafka_commit") - line);
    assert_int_equal(strchr(caret_line, '^') - caret_line, call);
    res_free(&r);
    free(d);
}

static void non_utf8_bytes_in_comments_and_strings_are_analysed(void **s) {
    (void)s;
    char *d = test_dir("latin1");
    write_text(d, "latin1.c",
               "#include <librdkafka/rdkafka.h>\n"
               "/* caf\xe9 \xff\xfe */\n"
               "static const char *s = \"na\xefve \xc3\x28\";\n"
               "void f(rd_kafka_t *rk) { /* \xe9 */ rd_kafka_commit(rk, NULL, 0); }\n");
    res_t r;
    LINT(&r, d, "latin1.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "latin1.c:4:34: warning: rd_kafka_commit");
    res_free(&r);
    LINT(&r, d, "--format=json", "latin1.c");
    expect_exit(&r, 1);
    json_t *j = report(&r);
    assert_int_equal(jlen(j, "findings"), 1);
    assert_string_equal(jstr(j, "findings.0.function"), "f");
    json_decref(j);
    res_free(&r);
    free(d);
}

static void a_non_utf8_file_name_keeps_its_finding_and_errors_in_json(void **s) {
    (void)s;
    /* jansson refuses invalid UTF-8: the finding used to vanish from the JSON
     * report while the exit code still said 1 */
    char *d = test_dir("latin1name");
    write_good(d, "caf\xe9.c");
    write_text(d, "bad\xe9.c", "int f( {\n");
    res_t r;
    LINT(&r, d, "--no-prefilter", "--format=json", "caf\xe9.c", "bad\xe9.c", "miss\xe9.c");
    expect_exit(&r, 2);
    json_t *j = report(&r);
    assert_int_equal(jlen(j, "findings"), 1);
    assert_string_equal(jstr(j, "findings.0.file"), "caf\xef\xbf\xbd.c"); /* U+FFFD */
    assert_int_equal(jint(j, "findings.0.line"), 2);
    assert_int_equal(jlen(j, "errors"), 1);
    assert_string_equal(jstr(j, "errors.0.file"), "miss\xef\xbf\xbd.c");
    assert_int_equal(jlen(j, "incomplete"), 1);
    assert_string_equal(jstr(j, "incomplete.0.file"), "bad\xef\xbf\xbd.c");
    json_decref(j);
    res_free(&r);
    free(d);
}

/* ---------- compilation database ---------- */

static void p_at_a_missing_directory_is_a_configuration_error(void **s) {
    (void)s;
    char *d = test_dir("db-missing");
    res_t r;
    LINT(&r, d, "-p", "build");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: build: -p: No such file or directory");
    res_free(&r);
    free(d);
}

static void p_at_a_directory_without_compile_commands_names_the_missing_file(void **s) {
    (void)s;
    char *d = test_dir("db-none");
    free(test_dir("db-none/build"));
    res_t r;
    LINT(&r, d, "-p", "build");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: build/compile_commands.json: cannot read the compilation "
                   "database: No such file or directory");
    res_free(&r);
    free(d);
}

/* Writes build/compile_commands.json under d, "%s" in json replaced by d. */
static void write_db(const char *d, const char *json) {
    char *text = NULL;
    if (asprintf(&text, json, d, d, d, d) < 0)
        abort();
    write_text(d, "build/compile_commands.json", text);
    free(text);
}

static void expect_db_error(const char *name, const char *json, const char *message) {
    char *d = test_dir(name);
    write_good(d, "good.c");
    write_db(d, json);
    res_t r;
    LINT(&r, d, "-p", "build");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, message);
    /* one message, in kdc-lint's words: no libclang noise */
    EXPECT_NO_ERR(&r, "LIBCLANG");
    assert_int_equal(count(r.run.err, "error:"), 1);
    res_free(&r);
    free(d);
}

static void p_with_invalid_json_gives_the_line_and_column(void **s) {
    (void)s;
    expect_db_error("db-invalid", "[{\n",
                    "kdc-lint: error: build/compile_commands.json: invalid compilation database: "
                    "line 2, column 0: ");
}

static void p_with_a_json_object_instead_of_an_array_is_rejected(void **s) {
    (void)s;
    expect_db_error("db-object", "{\"directory\": \"%s\"}\n",
                    "build/compile_commands.json: invalid compilation database: expected a JSON "
                    "array of entries");
}

static void p_with_an_entry_missing_fields_names_the_entry(void **s) {
    (void)s;
    expect_db_error("db-fields",
                    "[{\"directory\": \"%s\", \"file\": \"good.c\", \"command\": \"cc -c good.c\"},\n"
                    " {\"directory\": \"%s\", \"file\": \"good.c\"}]\n",
                    "build/compile_commands.json: invalid compilation database: entry 2 needs "
                    "\"directory\", \"file\" and \"command\" or \"arguments\"");
}

static void p_with_non_string_arguments_gives_one_message_without_libclang_noise(void **s) {
    (void)s;
    expect_db_error("db-args",
                    "[{\"directory\": \"%s\", \"file\": \"good.c\", "
                    "\"arguments\": [\"cc\", 1, \"good.c\"]}]\n",
                    "build/compile_commands.json: invalid compilation database: entry 1: "
                    "\"arguments\" item 2 is not a string");
}

static void p_with_an_empty_array_is_an_error(void **s) {
    (void)s;
    expect_db_error("db-empty", "[]\n",
                    "build/compile_commands.json: the compilation database has no entries");
}

static void p_with_entries_but_no_c_or_cpp_unit_is_an_error_not_a_silent_pass(void **s) {
    (void)s;
    /* a header, an assembler file and an empty "file": nothing to analyse */
    expect_db_error("db-nounits",
                    "[{\"directory\": \"%s\", \"file\": \"api.h\", \"command\": \"cc -c api.h\"},\n"
                    " {\"directory\": \"%s\", \"file\": \"start.S\", \"command\": \"cc -c start.S\"},\n"
                    " {\"directory\": \"%s\", \"file\": \"\", \"command\": \"cc -c\"}]\n",
                    "build/compile_commands.json: no C or C++ translation units (.c, .cc, .cpp, "
                    ".cxx) in this compilation database");
}

static void p_with_an_entry_whose_file_is_missing_reports_it_and_analyses_the_rest(void **s) {
    (void)s;
    char *d = test_dir("db-nofile");
    write_good(d, "good.c");
    write_db(d, "[{\"directory\": \"%s\", \"file\": \"gone.c\", \"command\": \"cc -c gone.c\"},\n"
                " {\"directory\": \"%s\", \"file\": \"good.c\", \"command\": \"cc -c good.c\"}]\n");
    res_t r;
    LINT(&r, d, "-p", "build");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: gone.c: cannot read: No such file or directory");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void p_resolves_a_relative_directory_against_the_database_folder(void **s) {
    (void)s;
    char *d = test_dir("db-relative");
    write_text(d, "build/gen/cfg.h", "#define COMMIT(rk) rd_kafka_commit(rk, NULL, 0)\n");
    write_text(d, "src/w.c",
               "#include <librdkafka/rdkafka.h>\n#include \"cfg.h\"\n"
               "void f(rd_kafka_t *rk) { COMMIT(rk); }\n");
    write_db(d, "[{\"directory\": \"gen\", \"file\": \"../../src/w.c\", "
                "\"command\": \"cc -I. -c ../../src/w.c\"}]\n");
    res_t r;
    LINT(&r, d, "-p", "build");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "src/w.c:3:26: warning: rd_kafka_commit");
    EXPECT_ERR(&r, "(0 incomplete, 0 input errors)");
    res_free(&r);
    free(d);
}

static void paths_that_match_no_entry_of_the_database_are_input_errors(void **s) {
    (void)s;
    char *d = test_dir("db-nomatch");
    write_good(d, "good.c");
    write_good(d, "other/x.c");
    write_db(d, "[{\"directory\": \"%s\", \"file\": \"good.c\", \"command\": \"cc -c good.c\"}]\n");
    res_t r;
    LINT(&r, d, "-p", "build", "other", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: other: no translation unit of build/compile_commands.json is "
                   "in this path");
    EXPECT_OUT(&r, GOOD_FINDING);
    EXPECT_NO_OUT(&r, "x.c");
    res_free(&r);
    free(d);
}

static void p_with_a_header_path_gives_the_header_note_not_silence(void **s) {
    (void)s;
    char *d = test_dir("db-header");
    write_good(d, "good.c");
    write_text(d, "api.h", "void f(void);\n");
    write_db(d, "[{\"directory\": \"%s\", \"file\": \"good.c\", \"command\": \"cc -c good.c\"}]\n");
    res_t r;
    LINT(&r, d, "-p", "build", "api.h", "good.c");
    expect_exit(&r, 1);
    EXPECT_ERR(&r, "api.h: note: headers are analysed through the translation units that "
                   "include them");
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    free(d);
}

static void extra_include_paths_are_relative_to_the_working_directory_also_with_p(void **s) {
    (void)s;
    /* -working-directory (the entry's "directory") applies to every argument of
     * a unit; the user's own -I is relative to where kdc-lint runs */
    char *d = test_dir("db-extra");
    write_text(d, "inc/cfg.h", "#define COMMIT(rk) rd_kafka_commit(rk, NULL, 0)\n");
    write_text(d, "src/a/w.c",
               "#include <librdkafka/rdkafka.h>\n#include \"cfg.h\"\n"
               "#ifdef FOO\nvoid f(rd_kafka_t *rk) { COMMIT(rk); }\n#endif\n");
    write_db(d, "[{\"directory\": \"%s/src/a\", \"file\": \"w.c\", \"command\": \"cc -c w.c\"}]\n");
    const char *forms[][4] = {{"--", "-DFOO", "-Iinc", NULL},
                              {"--", "-DFOO", "-I", "inc"},
                              {"--extra-arg=-DFOO", "--extra-arg=-Iinc", NULL, NULL},
                              {"--", "-DFOO", "-isystem", "inc"}};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++) {
        res_t r;
        LINT(&r, d, "-p", "build", forms[i][0], forms[i][1], forms[i][2], forms[i][3]);
        expect_exit(&r, 1);
        EXPECT_OUT(&r, "src/a/w.c:4:26: warning: rd_kafka_commit");
        EXPECT_ERR(&r, "(0 incomplete, 0 input errors)");
        res_free(&r);
    }
    free(d);
}

/* ---------- compiler arguments without -p ---------- */

static void double_dash_passes_defines_and_relative_includes_to_every_file(void **s) {
    (void)s;
    char *d = test_dir("dashdash");
    const char *src = "#include <librdkafka/rdkafka.h>\n#include \"cfg.h\"\n"
                      "#ifdef FOO\nvoid f(rd_kafka_t *rk) { COMMIT(rk); }\n#endif\n";
    write_text(d, "inc/cfg.h", "#define COMMIT(rk) rd_kafka_commit(rk, NULL, 0)\n");
    write_text(d, "a/w.c", src);
    write_text(d, "b/w.c", src);
    write_text(d, "c/w.c", src);
    res_t r;
    LINT(&r, d, "a/w.c", "b", "c/w.c", "--", "-DFOO", "-Iinc");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "a/w.c:4:26: warning:");
    EXPECT_OUT(&r, "b/w.c:4:26: warning:");
    EXPECT_OUT(&r, "c/w.c:4:26: warning:");
    EXPECT_ERR(&r, "3 findings in 3 translation units (0 incomplete, 0 input errors)");
    res_free(&r);
    /* an option after -- is a compiler argument, not kdc-lint's */
    LINT(&r, d, "a/w.c", "--", "-DFOO", "-Iinc", "--format=json");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "a/w.c:4:26: warning:");
    res_free(&r);
    free(d);
}

/* Without -p, inside a repository, the compilation database clangd would find (in a
 * directory from the PATH's up to the repository root, or its build/): its units with
 * their build flags, other source files with default flags; `--` (as with clang-tidy)
 * or no repository: none. */
static void without_p_the_database_clangd_finds_is_used_inside_a_repository(void **s) {
    (void)s;
    char *d = test_dir("found-db");
    char *git = path_in(d, ".git");
    mkdirs(git);
    write_text(d, "include/svc.h",
               "#include <librdkafka/rdkafka.h>\n"
               "#define SVC_COMMIT_ALL(c) rd_kafka_commit((c), NULL, 0)\n");
    write_text(d, "src/a.c",
               "#include \"svc.h\"\n"
               "void drain(rd_kafka_t *consumer) { SVC_COMMIT_ALL(consumer); }\n");
    write_good(d, "src/new.c"); /* not in the database yet */
    char *db = NULL;
    assert_true(asprintf(&db,
                         "[{\"directory\": \"%s/build\", \"file\": \"../src/a.c\",\n"
                         "  \"arguments\": [\"cc\", \"-I../include\", \"-c\", \"../src/a.c\"]}]\n",
                         d) > 0);
    write_text(d, "build/compile_commands.json", db);
    free(db);
    char *sub = path_in(d, "src");
    res_t r;
    /* a directory, and the same from inside it by file name */
    LINT(&r, d, "--no-cache", "src");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "src/a.c:2:36: warning: rd_kafka_commit without an offset list");
    EXPECT_OUT(&r, "src/new.c:2:26: warning:");
    EXPECT_ERR(&r, "build/compile_commands.json: note: compilation database found as clangd "
                   "finds it");
    EXPECT_ERR(&r, "2 findings in 2 translation units (0 incomplete, 0 input errors)");
    res_free(&r);
    LINT(&r, sub, "--no-cache", "a.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "a.c:2:36: warning:");
    EXPECT_ERR(&r, "1 finding in 1 translation unit (0 incomplete, 0 input errors)");
    res_free(&r);
    /* `--`: its arguments, no database */
    LINT(&r, d, "--no-cache", "src/a.c", "--");
    expect_exit(&r, 0);
    EXPECT_NO_ERR(&r, "compilation database found");
    EXPECT_ERR(&r, "(1 incomplete, 0 input errors)");
    res_free(&r);
    /* outside a repository nothing is searched */
    assert_int_equal(rmdir(git), 0);
    LINT(&r, d, "--no-cache", "src/a.c");
    expect_exit(&r, 0);
    EXPECT_NO_ERR(&r, "compilation database found");
    EXPECT_ERR(&r, "(1 incomplete, 0 input errors)");
    res_free(&r);
    free(sub);
    free(git);
    free(d);
}

/* ---------- C and C++ the front end must get through ---------- */

static void c_goto_fallthrough_computed_goto_setjmp_and_knr_code_is_analysed(void **s) {
    (void)s;
    res_t r;
    LINT(&r, g.inputs, "--no-cache", "c-control-flow.c");
    expect_exit(&r, 1);
    static const char *const at[] = {"c-control-flow.c:23:5: warning: rd_kafka_commit",
                                     "c-control-flow.c:38:9: warning: rd_kafka_commit",
                                     "c-control-flow.c:50:5: warning: rd_kafka_commit",
                                     "c-control-flow.c:63:5: warning: rd_kafka_commit",
                                     "c-control-flow.c:70:40: warning: rd_kafka_commit",
                                     "c-control-flow.c:77:9: warning: rd_kafka_commit"};
    for (size_t i = 0; i < sizeof at / sizeof at[0]; i++)
        EXPECT_OUT(&r, at[i]);
    assert_int_equal(count(r.run.out, "[bare-commit]"), 6);
    EXPECT_ERR(&r, "6 findings in 1 translation unit (0 incomplete, 0 input errors)");
    res_free(&r);
}

static void cpp_with_templates_lambdas_and_exceptions_is_analysed(void **s) {
    (void)s;
    res_t r;
    LINT(&r, g.inputs, "--no-cache", "cpp-features.cpp");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, "cpp-features.cpp:27:13: warning: KafkaConsumer::commitAsync without an "
                   "offset list");
    /* lambda bodies are analysed as functions of their own */
    EXPECT_OUT(&r, "cpp-features.cpp:21:13: warning: KafkaConsumer::commitSync without an "
                   "offset list");
    EXPECT_OUT(&r, "cpp-features.cpp:43:49: warning: KafkaConsumer::commitSync without an "
                   "offset list");
    assert_int_equal(count(r.run.out, "[bare-commit]"), 3);
    EXPECT_ERR(&r, "(0 incomplete, 0 input errors)");
    res_free(&r);
}

/* ---------- options and output ---------- */

static void o_into_a_missing_directory_is_an_error_before_any_analysis(void **s) {
    (void)s;
    char *d = test_dir("o-missing");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "-o", "no/such/dir/report.txt", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: -o no/such/dir/report.txt: No such file or directory");
    EXPECT_NO_ERR(&r, "finding");
    res_free(&r);
    free(d);
}

static void o_naming_a_source_to_analyse_is_refused_and_the_source_kept(void **s) {
    (void)s;
    /* it used to truncate the source, then report it clean with exit 0 */
    char *d = test_dir("o-input");
    write_good(d, "src/good.c");
    const char *const forms[] = {"src/good.c", "src"};
    for (size_t i = 0; i < 2; i++) {
        res_t r;
        LINT(&r, d, "-o", "src/good.c", forms[i]);
        expect_exit(&r, 2);
        EXPECT_ERR(&r, "kdc-lint: error: -o src/good.c: is a source file to analyse; not "
                       "overwriting it");
        res_free(&r);
        char *p = path_in(d, "src/good.c");
        struct stat st;
        assert_int_equal(stat(p, &st), 0);
        assert_int_equal(st.st_size, strlen(good_c));
        free(p);
    }
    free(d);
}

static void o_writes_the_report_to_the_file_and_nothing_to_stdout(void **s) {
    (void)s;
    char *d = test_dir("o-file");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--format=json", "-o", "report.json", "good.c");
    expect_exit(&r, 1);
    assert_string_equal(r.run.out, "");
    res_free(&r);
    char *p = path_in(d, "report.json");
    json_error_t e;
    json_t *j = json_load_file(p, 0, &e);
    assert_non_null(j);
    assert_int_equal(jlen(j, "findings"), 1);
    assert_string_equal(jstr(j, "findings.0.rule"), "bare-commit");
    json_decref(j);
    free(p);
    free(d);
}

/* -o - is standard output, as in most command-line tools; no file named "-" */
static void o_dash_is_standard_output(void **s) {
    (void)s;
    char *d = test_dir("o-dash");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--format=json", "-o", "-", "good.c");
    expect_exit(&r, 1);
    json_error_t e;
    json_t *j = json_loads(r.run.out, 0, &e);
    assert_non_null(j);
    assert_int_equal(jlen(j, "findings"), 1);
    assert_string_equal(jstr(j, "findings.0.rule"), "bare-commit");
    json_decref(j);
    res_free(&r);
    char *dash = path_in(d, "-");
    assert_int_equal(access(dash, F_OK), -1);
    free(dash);
    free(d);
}

static void a_report_that_cannot_be_written_is_exit_2_also_on_stdout(void **s) {
    (void)s;
    char *d = test_dir("full");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "-o", "/dev/full", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: cannot write the report to /dev/full");
    res_free(&r);
    /* stdout on a full disk: the buffered report used to be lost with exit 1 */
    runopt_t o = {.stdout_path = "/dev/full"};
    LINT_OPT(&r, &o, d, "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: cannot write the report");
    res_free(&r);
    free(d);
}

static void unknown_options_are_usage_errors_in_kdc_lint_words(void **s) {
    (void)s;
    char *d = test_dir("options");
    write_good(d, "good.c");
    static const char *const cases[][2] = {
        {"--bogus", "kdc-lint: error: unknown or ambiguous option '--bogus'"},
        {"-z", "kdc-lint: error: unknown option '-z'"},
        {"--f", "kdc-lint: error: unknown or ambiguous option '--f'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        res_t r;
        LINT(&r, d, cases[i][0], "good.c");
        expect_exit(&r, 2);
        EXPECT_ERR(&r, cases[i][1]);
        EXPECT_ERR(&r, "kdc-lint: see kdc-lint --help");
        assert_string_equal(r.run.out, "");
        res_free(&r);
    }
    free(d);
}

static void an_option_without_its_value_is_a_usage_error(void **s) {
    (void)s;
    char *d = test_dir("novalue");
    static const char *const cases[][2] = {
        {"-p", "kdc-lint: error: option '-p' needs a value"},
        {"-o", "kdc-lint: error: option '-o' needs a value"},
        {"--format", "kdc-lint: error: option '--format' needs a value"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        res_t r;
        LINT(&r, d, cases[i][0]);
        expect_exit(&r, 2);
        EXPECT_ERR(&r, cases[i][1]);
        res_free(&r);
    }
    free(d);
}

static void bad_format_and_profile_values_are_usage_errors_naming_the_choices(void **s) {
    (void)s;
    char *d = test_dir("values");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--format=xml", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --format: 'xml' is not one of text, json");
    assert_string_equal(r.run.out, "");
    res_free(&r);
    LINT(&r, d, "--format=", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --format: '' is not one of text, json");
    res_free(&r);
    LINT(&r, d, "--profile=paranoid", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --profile: 'paranoid' is not one of default, strict");
    res_free(&r);
    free(d);
}

static void unknown_rule_names_in_enable_and_disable_are_usage_errors(void **s) {
    (void)s;
    char *d = test_dir("rules");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--enable=nope,bare-commit", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --enable: unknown rule 'nope' (see --list-rules)");
    assert_string_equal(r.run.out, "");
    res_free(&r);
    LINT(&r, d, "--disable=bare-commit,BARE-COMMIT", "good.c");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --disable: unknown rule 'BARE-COMMIT' (see --list-rules)");
    res_free(&r);
    free(d);
}

static void rule_lists_accept_spaces_around_names(void **s) {
    (void)s;
    char *d = test_dir("rulespaces");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, d, "--disable= bare-commit ", "good.c");
    expect_exit(&r, 0);
    EXPECT_ERR(&r, "0 findings in 1 translation unit");
    res_free(&r);
    LINT(&r, d, "--enable=,, bare-commit ,", "good.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, GOOD_FINDING);
    res_free(&r);
    /* --disable wins over --enable, whatever their order */
    LINT(&r, d, "--disable=bare-commit", "--enable=bare-commit", "good.c");
    expect_exit(&r, 0);
    res_free(&r);
    free(d);
}

static void no_input_paths_is_a_usage_error(void **s) {
    (void)s;
    char *d = test_dir("nopaths");
    res_t r;
    LINT(&r, d, "--", "-DFOO");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: no input paths (see kdc-lint --help)");
    res_free(&r);
    free(d);
}

static void version_help_and_list_rules_exit_0_on_stdout(void **s) {
    (void)s;
    res_t r;
    LINT(&r, g.tmp, "--version");
    expect_exit(&r, 0);
    EXPECT_OUT(&r, "kdc-lint ");
    res_free(&r);
    LINT(&r, g.tmp, "--help");
    expect_exit(&r, 0);
    EXPECT_OUT(&r, "Usage: kdc-lint [options] PATH... [-- COMPILER-ARGS]");
    EXPECT_OUT(&r, "Exit status: 0 no findings, 1 findings, 2 usage, input or configuration error.");
    res_free(&r);
    LINT(&r, g.tmp, "--list-rules");
    expect_exit(&r, 0);
    EXPECT_OUT(&r, "bare-commit ");
    res_free(&r);
}

static void explain_prints_a_rules_doc_and_text_findings_point_to_it(void **s) {
    (void)s;
    char *d = test_dir("explain");
    write_good(d, "good.c");
    res_t r;
    LINT(&r, g.tmp, "--explain", "bare-commit");
    expect_exit(&r, 0);
    EXPECT_OUT(&r, "# bare-commit\n\n**Finds** a commit without an offset list");
    assert_string_equal(r.run.err, "");
    res_free(&r);
    LINT(&r, g.tmp, "--explain=commit-before-delivery-report");
    expect_exit(&r, 0);
    EXPECT_OUT(&r, "# commit-before-delivery-report\n");
    res_free(&r);
    /* not taken for --explain-config, nor for a rule it is not */
    LINT(&r, g.tmp, "--explain=nope");
    expect_exit(&r, 2);
    EXPECT_ERR(&r, "kdc-lint: error: --explain: unknown rule 'nope' (see --list-rules)");
    assert_string_equal(r.run.out, "");
    res_free(&r);
    /* a text report with findings says how to read about them; one without does not */
    LINT(&r, d, "good.c");
    expect_exit(&r, 1);
    EXPECT_OUT(&r, GOOD_FINDING);
    EXPECT_ERR(&r, "kdc-lint: what a rule's finding means and how to fix it: kdc-lint --explain "
                   "RULE\n");
    res_free(&r);
    LINT(&r, d, "--disable=bare-commit", "good.c");
    expect_exit(&r, 0);
    assert_null(strstr(r.run.err, "--explain"));
    res_free(&r);
    free(d);
}

/* ---------- setup ---------- */

static int rm_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (flag == FTW_DP)
        chmod(path, 0755);
    remove(path); /* best effort: a leftover in TMPDIR fails nothing */
    return 0;
}

static int setup(void **s) {
    (void)s;
    const char *base = getenv("TMPDIR");
    snprintf(g.tmp, sizeof g.tmp, "%s/kdc-cli-XXXXXX", base && *base ? base : "/tmp");
    if (!mkdtemp(g.tmp)) {
        fprintf(stderr, "mkdtemp %s: %s\n", g.tmp, strerror(errno));
        return -1;
    }
    return 0;
}

static int teardown(void **s) {
    (void)s;
    nftw(g.tmp, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
}

static void usage(void) {
    fprintf(stderr, "usage: test_cli [--kdc-lint PATH] [--inputs DIR]\n");
    exit(2);
}

int main(int argc, char **argv) {
    g.lint = getenv("KDC_LINT");
    g.inputs = getenv("KDC_CLI_INPUTS");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kdc-lint") && i + 1 < argc)
            g.lint = argv[++i];
        else if (!strcmp(argv[i], "--inputs") && i + 1 < argc)
            g.inputs = argv[++i];
        else
            usage();
    }
    if (!g.lint || !g.inputs) {
        fprintf(stderr, "test_cli: the kdc-lint and inputs paths are both required\n");
        usage();
    }
    /* kdc-lint runs in the tests' own directories: absolute paths */
    static char lint[PATH_MAX], inputs[PATH_MAX];
    if (!realpath(g.lint, lint) || access(lint, X_OK) != 0 || !realpath(g.inputs, inputs)) {
        fprintf(stderr, "test_cli: %s or %s: %s\n", g.lint, g.inputs, strerror(errno));
        return 1;
    }
    g.lint = lint;
    g.inputs = inputs;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(
            a_binary_file_named_like_c_source_is_an_input_error_and_the_rest_is_reported),
        cmocka_unit_test(an_empty_source_file_is_one_translation_unit_without_findings),
        cmocka_unit_test(a_missing_path_is_an_input_error_and_the_rest_is_reported),
        cmocka_unit_test(an_empty_path_argument_is_named_as_such),
        cmocka_unit_test(a_directory_without_sources_is_an_input_error_and_the_rest_is_reported),
        cmocka_unit_test(
            a_file_with_syntax_errors_is_incomplete_and_the_good_file_is_still_reported),
        cmocka_unit_test(a_missing_include_is_the_first_error_with_the_hint_to_use_the_build_flags),
        cmocka_unit_test(
            an_unreadable_directory_is_an_input_error_and_the_readable_files_are_reported),
        cmocka_unit_test(symlink_loops_in_a_directory_neither_hang_nor_repeat_a_file),
        cmocka_unit_test(a_fifo_named_like_c_source_is_an_input_error_not_a_hang),
        cmocka_unit_test(a_header_path_gets_a_note_that_headers_are_analysed_through_their_units),
        cmocka_unit_test(a_file_of_20000_functions_is_analysed_to_its_last_function),
        cmocka_unit_test(a_handle_copied_through_80000_variables_is_followed_in_linear_time),
        cmocka_unit_test(an_else_if_chain_of_3000_branches_is_analysed_completely),
        cmocka_unit_test(an_else_if_chain_of_20000_branches_is_analysed_partially_without_a_crash),
        cmocka_unit_test(thirty_thousand_nested_ifs_are_analysed_partially_without_a_crash),
        cmocka_unit_test(a_sum_of_20000_terms_is_analysed_partially_without_a_crash),
        cmocka_unit_test(constants_that_overflow_are_folded_without_undefined_behaviour),
        cmocka_unit_test(a_two_megabyte_source_line_is_shown_cut_around_the_caret),
        cmocka_unit_test(non_utf8_bytes_in_comments_and_strings_are_analysed),
        cmocka_unit_test(a_non_utf8_file_name_keeps_its_finding_and_errors_in_json),
        cmocka_unit_test(p_at_a_missing_directory_is_a_configuration_error),
        cmocka_unit_test(p_at_a_directory_without_compile_commands_names_the_missing_file),
        cmocka_unit_test(p_with_invalid_json_gives_the_line_and_column),
        cmocka_unit_test(p_with_a_json_object_instead_of_an_array_is_rejected),
        cmocka_unit_test(p_with_an_entry_missing_fields_names_the_entry),
        cmocka_unit_test(p_with_non_string_arguments_gives_one_message_without_libclang_noise),
        cmocka_unit_test(p_with_an_empty_array_is_an_error),
        cmocka_unit_test(p_with_entries_but_no_c_or_cpp_unit_is_an_error_not_a_silent_pass),
        cmocka_unit_test(p_with_an_entry_whose_file_is_missing_reports_it_and_analyses_the_rest),
        cmocka_unit_test(p_resolves_a_relative_directory_against_the_database_folder),
        cmocka_unit_test(paths_that_match_no_entry_of_the_database_are_input_errors),
        cmocka_unit_test(p_with_a_header_path_gives_the_header_note_not_silence),
        cmocka_unit_test(extra_include_paths_are_relative_to_the_working_directory_also_with_p),
        cmocka_unit_test(double_dash_passes_defines_and_relative_includes_to_every_file),
        cmocka_unit_test(without_p_the_database_clangd_finds_is_used_inside_a_repository),
        cmocka_unit_test(c_goto_fallthrough_computed_goto_setjmp_and_knr_code_is_analysed),
        cmocka_unit_test(cpp_with_templates_lambdas_and_exceptions_is_analysed),
        cmocka_unit_test(o_into_a_missing_directory_is_an_error_before_any_analysis),
        cmocka_unit_test(o_naming_a_source_to_analyse_is_refused_and_the_source_kept),
        cmocka_unit_test(o_writes_the_report_to_the_file_and_nothing_to_stdout),
        cmocka_unit_test(o_dash_is_standard_output),
        cmocka_unit_test(a_report_that_cannot_be_written_is_exit_2_also_on_stdout),
        cmocka_unit_test(unknown_options_are_usage_errors_in_kdc_lint_words),
        cmocka_unit_test(an_option_without_its_value_is_a_usage_error),
        cmocka_unit_test(bad_format_and_profile_values_are_usage_errors_naming_the_choices),
        cmocka_unit_test(unknown_rule_names_in_enable_and_disable_are_usage_errors),
        cmocka_unit_test(rule_lists_accept_spaces_around_names),
        cmocka_unit_test(no_input_paths_is_a_usage_error),
        cmocka_unit_test(version_help_and_list_rules_exit_0_on_stdout),
        cmocka_unit_test(explain_prints_a_rules_doc_and_text_findings_point_to_it),
    };
    return cmocka_run_group_tests_name("kdc-lint command line: inputs, exit codes, messages",
                                       tests, setup, teardown);
}
