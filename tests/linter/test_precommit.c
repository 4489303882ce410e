/*
 * kdc-lint's pre-commit hooks (.pre-commit-hooks.yaml at the repository root)
 * run by Debian's pre-commit, for real and offline: a scratch git repository
 * holding this repository's hook file serves as the hook repository (cloned
 * by path), a scratch project uses it in .pre-commit-config.yaml, and `git
 * commit` runs the installed hook. kdc-lint is found on PATH, as the hook
 * documents (the build directory is put first on PATH).
 *
 *   test_precommit     (KDC_LINT, KDC_SOURCE_DIR from the environment;
 *                       git and pre-commit on PATH: scripts/install-deps.sh)
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lintrun.h"
#include "scratch.h"

static const char bare_c[] = "#include <librdkafka/rdkafka.h>\n"
                             "\n"
                             "void drain(rd_kafka_t *consumer) {\n"
                             "    rd_kafka_commit(consumer, NULL, 0);\n"
                             "}\n";
static const char fixed_c[] = "#include <librdkafka/rdkafka.h>\n"
                              "\n"
                              "void done(rd_kafka_t *consumer, const rd_kafka_message_t *m) {\n"
                              "    rd_kafka_commit_message(consumer, m, 0);\n"
                              "}\n";
static const char header_h[] = "#include <librdkafka/rdkafka.h>\n"
                               "static inline void drain_all(rd_kafka_t *rk) {\n"
                               "    rd_kafka_commit(rk, NULL, 0);\n"
                               "}\n";

/* A producer created in one file and used in another (kdc-lint must see both at once). */
static const char producer_c[] = "#include <librdkafka/rdkafka.h>\n"
                                 "rd_kafka_t *make_producer(void) {\n"
                                 "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
                                 "    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0);\n"
                                 "}\n";
static const char send_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "rd_kafka_t *make_producer(void);\n"
    "void send_order(const char *payload, size_t len) {\n"
    "    rd_kafka_t *p = make_producer();\n"
    "    rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders\"), RD_KAFKA_V_VALUE((void *)payload, len),\n"
    "                      RD_KAFKA_V_END);\n"
    "}\n";

static const char hook_name[] = "kdc-lint (Kafka durability contract)";

static struct {
    char *scratch;   /* everything below */
    char *hooks;     /* the hook repository */
    char *hooks_rev; /* its commit */
    char *project;   /* the repository under test (one per test) */
} g;

static void show(const kdc_run_t *r) {
    print_error("exit %d\n--- stdout\n%.6000s\n--- stderr\n%.3000s\n---\n", r->exit_code, r->out,
                r->err);
}

/* Runs a command (NULL-terminated) in cwd; returns its exit code, r keeps its output. */
static int run(kdc_run_t *r, const char *cwd, ...) {
    const char *argv[32];
    size_t n = 0;
    va_list ap;
    va_start(ap, cwd);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return scratch_runv(r, cwd, argv);
}
#define RUN(r, cwd, ...) run((r), (cwd), __VA_ARGS__, (const char *)NULL)

/* The same, and the command must succeed. */
static void must(const char *cwd, ...) {
    const char *argv[32];
    size_t n = 0;
    va_list ap;
    va_start(ap, cwd);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 31;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    kdc_run_t r;
    if (scratch_runv(&r, cwd, argv) != 0) {
        show(&r);
        fail_msg("%s %s failed in %s", argv[0], argv[1], cwd);
    }
    kdc_run_free(&r);
}
#define MUST(cwd, ...) must((cwd), __VA_ARGS__, (const char *)NULL)

/* Both output streams of a commit, as a developer sees them. */
static char *combined(const kdc_run_t *r) {
    char *s = NULL;
    if (asprintf(&s, "%s%s", r->out, r->err) < 0)
        abort();
    return s;
}

static void expect_in(const kdc_run_t *r, const char *text, const char *needle) {
    if (!strstr(text, needle)) {
        show(r);
        fail_msg("output lacks \"%s\"", needle);
    }
}

static void expect_not_in(const kdc_run_t *r, const char *text, const char *needle) {
    if (strstr(text, needle)) {
        show(r);
        fail_msg("output has \"%s\"", needle);
    }
}

static long commits(void) {
    kdc_run_t r;
    long n = RUN(&r, g.project, "git", "rev-list", "--count", "HEAD") == 0 ? atol(r.out) : -1;
    kdc_run_free(&r);
    return n;
}

static int setup(void **state) {
    (void)state;
    const char *lint = getenv("KDC_LINT"), *src = getenv("KDC_SOURCE_DIR");
    if (!lint || !src) {
        fprintf(stderr, "test_precommit: KDC_LINT and KDC_SOURCE_DIR must be set\n");
        return -1;
    }
    char *pc = scratch_which("pre-commit");
    if (!pc) {
        fprintf(stderr, "test_precommit: pre-commit is not installed: run scripts/install-deps.sh\n");
        return -1;
    }
    free(pc);
    g.scratch = scratch_dir("precommit");
    /* kdc-lint on PATH, as an installed kdc-lint would be */
    char *lint_copy = strdup(lint), *path = NULL;
    if (asprintf(&path, "%s:%s", dirname(lint_copy), getenv("PATH") ? getenv("PATH") : "") < 0)
        abort();
    setenv("PATH", path, 1);
    free(path);
    free(lint_copy);
    /* hermetic git and pre-commit: no user configuration, caches in the scratch directory */
    char *home = scratch_path(g.scratch, "home"), *cache = scratch_path(g.scratch, "cache");
    scratch_write(home, ".keep", "");
    setenv("HOME", home, 1);
    setenv("PRE_COMMIT_HOME", cache, 1);
    setenv("XDG_CACHE_HOME", cache, 1);
    free(home);
    free(cache);
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_AUTHOR_NAME", "kdc test", 1);
    setenv("GIT_AUTHOR_EMAIL", "kdc@example.invalid", 1);
    setenv("GIT_COMMITTER_NAME", "kdc test", 1);
    setenv("GIT_COMMITTER_EMAIL", "kdc@example.invalid", 1);
    unsetenv("NO_COLOR");

    /* the hook repository: this repository's hook file, committed */
    char *hooks_yaml = scratch_read(src, ".pre-commit-hooks.yaml");
    if (!hooks_yaml) {
        fprintf(stderr, "test_precommit: no %s/.pre-commit-hooks.yaml\n", src);
        return -1;
    }
    g.hooks = scratch_path(g.scratch, "hooks");
    scratch_write(g.hooks, ".pre-commit-hooks.yaml", hooks_yaml);
    free(hooks_yaml);
    kdc_run_t r;
    if (RUN(&r, g.hooks, "git", "init", "-q", "-b", "main") ||
        (kdc_run_free(&r), RUN(&r, g.hooks, "git", "add", ".")) ||
        (kdc_run_free(&r), RUN(&r, g.hooks, "git", "commit", "-q", "-m", "hooks")) ||
        (kdc_run_free(&r), RUN(&r, g.hooks, "git", "rev-parse", "HEAD"))) {
        fprintf(stderr, "test_precommit: cannot make the hook repository:\n%s%s", r.out, r.err);
        return -1;
    }
    g.hooks_rev = strndup(r.out, strcspn(r.out, "\n"));
    kdc_run_free(&r);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.scratch);
    free(g.scratch);
    free(g.hooks);
    free(g.hooks_rev);
    return 0;
}

/* A new project repository using hook `id` (with `args` when not NULL), its
 * configuration committed and the git hook installed. */
static void project(const char *name, const char *id, const char *args) {
    free(g.project);
    g.project = scratch_path(g.scratch, name);
    char *config = NULL;
    if (asprintf(&config,
                 "repos:\n"
                 "  - repo: %s\n"
                 "    rev: %s\n"
                 "    hooks:\n"
                 "      - id: %s\n"
                 "%s%s%s",
                 g.hooks, g.hooks_rev, id, args ? "        args: " : "", args ? args : "",
                 args ? "\n" : "") < 0)
        abort();
    scratch_write(g.project, ".pre-commit-config.yaml", config);
    free(config);
    MUST(g.project, "git", "init", "-q", "-b", "main");
    MUST(g.project, "git", "add", ".pre-commit-config.yaml");
    MUST(g.project, "git", "commit", "-q", "-m", "pre-commit configuration");
    MUST(g.project, "pre-commit", "install");
}

/* Stages `rel` with `text` and commits it; returns git commit's exit code. */
static int commit_file(kdc_run_t *r, const char *rel, const char *text) {
    scratch_write(g.project, rel, text);
    kdc_run_t a;
    if (RUN(&a, g.project, "git", "add", rel) != 0) {
        show(&a);
        fail_msg("git add %s", rel);
    }
    kdc_run_free(&a);
    return RUN(r, g.project, "git", "commit", "-m", rel);
}

static void a_commit_with_a_finding_is_rejected_and_shows_it(void **state) {
    (void)state;
    project("reject", "kdc-lint", NULL);
    kdc_run_t r;
    int code = commit_file(&r, "src/worker.c", bare_c);
    char *out = combined(&r);
    if (code == 0) {
        show(&r);
        fail_msg("the commit was accepted");
    }
    expect_in(&r, out, hook_name);
    expect_in(&r, out, "Failed");
    expect_in(&r, out, "- hook id: kdc-lint");
    expect_in(&r, out, "src/worker.c:4:5: warning: rd_kafka_commit without an offset list");
    expect_in(&r, out, "[bare-commit]");
    assert_int_equal(commits(), 1); /* only the configuration */
    free(out);
    kdc_run_free(&r);

    /* fixed: the same file commits */
    code = commit_file(&r, "src/worker.c", fixed_c);
    out = combined(&r);
    if (code != 0) {
        show(&r);
        fail_msg("the fixed file was rejected");
    }
    expect_in(&r, out, "Passed");
    expect_not_in(&r, out, "Failed");
    assert_int_equal(commits(), 2);
    free(out);
    kdc_run_free(&r);
}

static void a_clean_file_commits(void **state) {
    (void)state;
    project("clean", "kdc-lint", NULL);
    kdc_run_t r;
    int code = commit_file(&r, "src/consumer.c", fixed_c);
    char *out = combined(&r);
    if (code != 0) {
        show(&r);
        fail_msg("a clean file was rejected");
    }
    expect_in(&r, out, hook_name);
    expect_in(&r, out, "Passed");
    assert_int_equal(commits(), 2);
    free(out);
    kdc_run_free(&r);
}

/* The staged files reach kdc-lint in one invocation, so a producer created in
 * one file and used in another is followed (the hook is require_serial: with
 * many files pre-commit would otherwise split them across parallel runs). */
static void files_of_one_commit_are_analysed_together(void **state) {
    (void)state;
    project("together", "kdc-lint", NULL);
    scratch_write(g.project, "src/producer.c", producer_c);
    scratch_write(g.project, "src/send.c", send_c);
    MUST(g.project, "git", "add", "src");
    kdc_run_t r;
    int code = RUN(&r, g.project, "git", "commit", "-m", "producer");
    char *out = combined(&r);
    if (code == 0) {
        show(&r);
        fail_msg("the commit was accepted");
    }
    expect_in(&r, out, "src/send.c:5:5: warning: rd_kafka_producev on a producer without a "
                       "delivery-report callback");
    expect_in(&r, out, "src/producer.c:4:12: note: producer created here");
    free(out);
    kdc_run_free(&r);
}

static void headers_are_passed_and_only_noted(void **state) {
    (void)state;
    project("headers", "kdc-lint", NULL);
    kdc_run_t r;
    /* a header alone: passed to kdc-lint, which notes it and finds nothing */
    int code = commit_file(&r, "include/drain.h", header_h);
    char *out = combined(&r);
    if (code != 0) {
        show(&r);
        fail_msg("a header-only commit was rejected");
    }
    expect_in(&r, out, "Passed");
    free(out);
    kdc_run_free(&r);
    /* what the hook ran with (verbose shows a passing hook's output) */
    scratch_write(g.project, "include/drain.h", "/* touched */\n");
    MUST(g.project, "git", "add", "include/drain.h");
    RUN(&r, g.project, "pre-commit", "run", "kdc-lint", "--verbose");
    out = combined(&r);
    expect_in(&r, out, "include/drain.h: note: headers are analysed through the translation units");
    free(out);
    kdc_run_free(&r);
}

static void files_other_than_c_and_cxx_skip_the_hook(void **state) {
    (void)state;
    project("skip", "kdc-lint", NULL);
    kdc_run_t r;
    int code = commit_file(&r, "notes.txt", "rd_kafka_commit(rk, NULL, 0);\n");
    char *out = combined(&r);
    if (code != 0) {
        show(&r);
        fail_msg("a text file was rejected");
    }
    expect_in(&r, out, "Skipped");
    free(out);
    kdc_run_free(&r);
}

static void the_whole_project_hook_reports_only_what_the_commit_changes(void **state) {
    (void)state;
    project("whole", "kdc-lint-changed", "[src]");
    /* an old finding, committed before the hook existed */
    scratch_write(g.project, "src/old.c", bare_c);
    MUST(g.project, "git", "add", "src/old.c");
    MUST(g.project, "git", "commit", "-q", "--no-verify", "-m", "old");
    kdc_run_t r;
    int code = commit_file(&r, "src/new.cpp", fixed_c);
    char *out = combined(&r);
    if (code != 0) {
        show(&r);
        fail_msg("a clean change was rejected for an old finding");
    }
    expect_in(&r, out, "Passed");
    free(out);
    kdc_run_free(&r);
    /* a new finding is reported, the old one is not */
    code = commit_file(&r, "src/bad.c", bare_c);
    out = combined(&r);
    if (code == 0) {
        show(&r);
        fail_msg("the commit was accepted");
    }
    expect_in(&r, out, "src/bad.c:4:5: warning: rd_kafka_commit without an offset list");
    expect_not_in(&r, out, "src/old.c:4:5");
    expect_in(&r, out, "kdc-lint: 1 finding in files unchanged since HEAD not shown");
    assert_int_equal(commits(), 3);
    free(out);
    kdc_run_free(&r);
}

/* A project with its own include/ and a build's compile_commands.json in build/ (not
 * committed): the default hook, without -p, finds it as clangd does, so the staged file
 * is parsed with the build's flags and the finding behind the project's macro is
 * reported. Without the database, the unit had compile errors and the finding was
 * missed. */
static void the_default_hook_finds_the_build_compilation_database(void **state) {
    (void)state;
    project("own-include", "kdc-lint", NULL);
    scratch_write(g.project, ".gitignore", "build/\n");
    scratch_write(g.project, "include/svc/commit.h",
                  "#include <librdkafka/rdkafka.h>\n"
                  "#define SVC_COMMIT_ALL(c) rd_kafka_commit((c), NULL, 0)\n");
    MUST(g.project, "git", "add", ".gitignore", "include");
    MUST(g.project, "git", "commit", "-q", "--no-verify", "-m", "include");
    char *db = NULL;
    if (asprintf(&db,
                 "[{\"directory\": \"%s/build\", \"file\": \"%s/src/drain.c\",\n"
                 "  \"command\": \"cc -I%s/include -c %s/src/drain.c\"}]\n",
                 g.project, g.project, g.project, g.project) < 0)
        abort();
    scratch_write(g.project, "build/compile_commands.json", db);
    free(db);
    kdc_run_t r;
    int code = commit_file(&r, "src/drain.c",
                           "#include <svc/commit.h>\n"
                           "\n"
                           "void drain(rd_kafka_t *consumer) {\n"
                           "    SVC_COMMIT_ALL(consumer);\n"
                           "}\n");
    char *out = combined(&r);
    if (code == 0) {
        show(&r);
        fail_msg("the commit was accepted");
    }
    expect_in(&r, out, "src/drain.c:4:5: warning: rd_kafka_commit without an offset list");
    expect_in(&r, out, "build/compile_commands.json: note: compilation database found");
    expect_not_in(&r, out, "compile error");
    assert_int_equal(commits(), 2);
    free(out);
    kdc_run_free(&r);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_commit_with_a_finding_is_rejected_and_shows_it),
        cmocka_unit_test(a_clean_file_commits),
        cmocka_unit_test(files_of_one_commit_are_analysed_together),
        cmocka_unit_test(headers_are_passed_and_only_noted),
        cmocka_unit_test(files_other_than_c_and_cxx_skip_the_hook),
        cmocka_unit_test(the_whole_project_hook_reports_only_what_the_commit_changes),
        cmocka_unit_test(the_default_hook_finds_the_build_compilation_database),
    };
    int rc = cmocka_run_group_tests_name("lint.precommit", tests, setup, teardown);
    free(g.project);
    return rc;
}
