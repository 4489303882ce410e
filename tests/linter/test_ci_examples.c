/*
 * The CI integration files say what works: examples/ci/ (GitHub Actions, GitLab
 * CI, make, pre-commit), .pre-commit-hooks.yaml and docs/ci.md.
 *
 *   test_ci_examples   (KDC_LINT, KDC_SOURCE_DIR from the environment; python3 with
 *                       yaml, pre-commit, make, cmake and git on PATH)
 *
 * The YAML parses and has the shape its consumer needs, every kdc-lint option
 * the files use exists (kdc-lint --help), the options are in docs/kdc-lint.md's table,
 * pre-commit accepts the hook manifest and the example configuration, and the
 * make targets run on a scratch CMake project.
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

#include "lintrun.h"
#include "scratch.h"

static struct {
    const char *lint, *src;
    char *help; /* kdc-lint --help */
} g;

static const char *const files_using_kdc_lint[] = {
    "docs/ci.md",
    "examples/ci/github-actions.yml",
    "examples/ci/gitlab-ci.yml",
    "examples/ci/kdc-lint.mk",
    "examples/ci/pre-commit-config.yaml",
    ".pre-commit-hooks.yaml",
};

static void show(const kdc_run_t *r) {
    print_error("exit %d\n--- stdout\n%.6000s\n--- stderr\n%.3000s\n---\n", r->exit_code, r->out,
                r->err);
}

static int setup(void **state) {
    (void)state;
    g.lint = getenv("KDC_LINT");
    g.src = getenv("KDC_SOURCE_DIR");
    if (!g.lint || !g.src) {
        fprintf(stderr, "test_ci_examples: KDC_LINT and KDC_SOURCE_DIR must be set\n");
        return -1;
    }
    unsetenv("NO_COLOR");
    kdc_run_t r;
    if (scratch_run(&r, NULL, g.lint, "--help", (char *)NULL) != 0) {
        fprintf(stderr, "kdc-lint --help failed\n");
        return -1;
    }
    g.help = strdup(r.out);
    kdc_run_free(&r);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    free(g.help);
    return 0;
}

/* A YAML file of the source tree as JSON (python3's yaml.safe_load). Caller decrefs. */
static json_t *yaml(const char *rel) {
    char *path = scratch_path(g.src, rel);
    kdc_run_t r;
    int code = scratch_run(&r, NULL, "python3", "-c",
                           "import json, sys, yaml\n"
                           "json.dump(yaml.safe_load(open(sys.argv[1])), sys.stdout)\n",
                           path, (char *)NULL);
    if (code != 0) {
        show(&r);
        fail_msg("%s is not YAML python3 can read", rel);
    }
    json_error_t e;
    json_t *j = json_loads(r.out, JSON_DECODE_ANY, &e);
    if (!j)
        fail_msg("%s: %s", rel, e.text);
    kdc_run_free(&r);
    free(path);
    return j;
}

static int array_has(json_t *a, const char *s) {
    for (size_t i = 0; i < json_array_size(a); i++)
        if (json_is_string(json_array_get(a, i)) && !strcmp(json_string_value(json_array_get(a, i)), s))
            return 1;
    return 0;
}

static void the_hook_manifest_runs_kdc_lint_on_c_and_cxx_serially(void **state) {
    (void)state;
    json_t *hooks = yaml(".pre-commit-hooks.yaml");
    assert_true(json_is_array(hooks));
    size_t seen = 0;
    for (size_t i = 0; i < json_array_size(hooks); i++) {
        json_t *h = json_array_get(hooks, i);
        const char *id = json_string_value(json_object_get(h, "id"));
        assert_non_null(id);
        assert_string_equal(json_string_value(json_object_get(h, "language")), "system");
        const char *entry = json_string_value(json_object_get(h, "entry"));
        assert_true(!strncmp(entry, "kdc-lint", 8)); /* the kdc-lint on PATH */
        json_t *types = json_object_get(h, "types_or");
        assert_true(array_has(types, "c") && array_has(types, "c++"));
        assert_true(json_is_true(json_object_get(h, "require_serial")));
        json_t *pass = json_object_get(h, "pass_filenames");
        if (!strcmp(id, "kdc-lint")) {
            assert_true(!pass || json_is_true(pass)); /* file names passed */
            assert_string_equal(entry, "kdc-lint");
            seen++;
        } else if (!strcmp(id, "kdc-lint-changed")) {
            assert_true(json_is_false(pass));
            assert_non_null(strstr(entry, "--changed-since=HEAD"));
            seen++;
        }
    }
    assert_int_equal(seen, 2);
    json_decref(hooks);

    /* pre-commit itself accepts the manifest and the example configuration */
    char *manifest = scratch_path(g.src, ".pre-commit-hooks.yaml");
    char *config = scratch_path(g.src, "examples/ci/pre-commit-config.yaml");
    kdc_run_t r;
    if (scratch_run(&r, NULL, "pre-commit", "validate-manifest", manifest, (char *)NULL) != 0) {
        show(&r);
        fail_msg("pre-commit validate-manifest %s", manifest);
    }
    kdc_run_free(&r);
    if (scratch_run(&r, NULL, "pre-commit", "validate-config", config, (char *)NULL) != 0) {
        show(&r);
        fail_msg("pre-commit validate-config %s", config);
    }
    kdc_run_free(&r);
    free(manifest);
    free(config);
}

static void the_github_workflow_uploads_sarif_and_annotates_pull_requests(void **state) {
    (void)state;
    json_t *wf = yaml("examples/ci/github-actions.yml");
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(wf, "permissions"), "security-events")),
        "write");
    json_t *job = json_object_get(json_object_get(wf, "jobs"), "kdc-lint");
    assert_non_null(job);
    json_t *steps = json_object_get(job, "steps");
    int sarif = 0, upload = 0, annotate = 0, depth = 0;
    for (size_t i = 0; i < json_array_size(steps); i++) {
        json_t *s = json_array_get(steps, i);
        const char *run = json_string_value(json_object_get(s, "run"));
        const char *uses = json_string_value(json_object_get(s, "uses"));
        if (run && strstr(run, "kdc-lint -p build --format=sarif -o kdc-lint.sarif"))
            sarif = 1;
        if (run && strstr(run, "--format=github --changed-since="))
            annotate = 1;
        if (uses && !strncmp(uses, "github/codeql-action/upload-sarif@", 34)) {
            upload = 1;
            assert_string_equal(
                json_string_value(json_object_get(json_object_get(s, "with"), "sarif_file")),
                "kdc-lint.sarif");
        }
        if (uses && !strncmp(uses, "actions/checkout@", 17)) {
            json_t *fd = json_object_get(json_object_get(s, "with"), "fetch-depth");
            depth = json_is_integer(fd) && json_integer_value(fd) == 0;
        }
    }
    assert_true(sarif);
    assert_true(upload);
    assert_true(annotate);
    assert_true(depth); /* history for --changed-since */
    json_decref(wf);

    json_t *gl = yaml("examples/ci/gitlab-ci.yml");
    json_t *gjob = json_object_get(gl, "kdc-lint");
    assert_non_null(json_object_get(gjob, "script"));
    assert_true(array_has(json_object_get(json_object_get(gjob, "artifacts"), "paths"),
                          "kdc-lint.sarif"));
    json_decref(gl);
}

/* The long options given to kdc-lint in text: after each "kdc-lint " followed
 * by an option, up to the end of the command (end of line, ||, ;, #, a
 * backtick or a parenthesis). Prose ("the kdc-lint on PATH") is skipped. */
static void check_options(const char *rel, const char *text, size_t *checked) {
    for (const char *p = text; (p = strstr(p, "kdc-lint ")); p++) {
        if (p > text && (p[-1] == '/' || p[-1] == '-' || p[-1] == '.'))
            continue; /* a path or a longer name */
        const char *q = p + 9;
        if (*q != '-')
            continue;
        size_t end = strcspn(q, "\n|;#`)");
        char *cmd = strndup(q, end);
        char *save = NULL;
        for (char *tok = strtok_r(cmd, " \t\\\"'[],", &save); tok;
             tok = strtok_r(NULL, " \t\\\"'[],", &save)) {
            if (strncmp(tok, "--", 2) || !tok[2])
                continue;
            char *opt = strndup(tok, strcspn(tok, "="));
            if (!strstr(g.help, opt))
                fail_msg("%s uses kdc-lint %s, which kdc-lint --help does not know", rel, opt);
            (*checked)++;
            free(opt);
        }
        free(cmd);
    }
}

static void every_kdc_lint_option_used_exists(void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < sizeof files_using_kdc_lint / sizeof *files_using_kdc_lint; i++) {
        char *text = scratch_read(g.src, files_using_kdc_lint[i]);
        if (!text)
            fail_msg("cannot read %s/%s", g.src, files_using_kdc_lint[i]);
        check_options(files_using_kdc_lint[i], text, &checked);
        free(text);
    }
    assert_true(checked >= 10); /* the scan found the commands */
}

static void the_ci_options_are_in_the_reference_option_table(void **state) {
    (void)state;
    char *readme = scratch_read(g.src, "docs/kdc-lint.md");
    assert_non_null(readme);
    static const char *const rows[] = {
        "| `--format=text\\|json\\|sarif\\|github` |",
        "| `--color=auto\\|always\\|never` |",
        "| `--changed-since=REV` |",
    };
    for (size_t i = 0; i < sizeof rows / sizeof *rows; i++)
        if (!strstr(readme, rows[i]))
            fail_msg("docs/kdc-lint.md's option table lacks %s", rows[i]);
    free(readme);
}

/* Whether `word` occurs in text as a whole word (package names: [a-z0-9+.-]). */
static int has_word(const char *text, const char *word) {
    size_t n = strlen(word);
    for (const char *p = text; (p = strstr(p, word)); p++) {
        char before = p > text ? p[-1] : ' ', after = p[n];
        if (!strchr("abcdefghijklmnopqrstuvwxyz0123456789+.-", before ? before : ' ') &&
            !(after && strchr("abcdefghijklmnopqrstuvwxyz0123456789+.-", after)))
            return 1;
    }
    return 0;
}

/* The packages kdc builds from (scripts/install-deps.sh) are the ones the CI
 * setups install: a package added there fails here until they have it too. */
static void the_ci_setups_install_the_packages_kdc_builds_from(void **state) {
    (void)state;
    /* and help2man: without it the build leaves the man pages out (man/CMakeLists.txt);
     * clang-14 and libclang-rt-14-dev: the fuzz targets (scripts/fuzz.sh);
     * python3-confluent-kafka: examples/python/ under kdc-harness (ctest testkit.python.*);
     * python3-psycopg2: examples/python/'s PostgreSQL sink (ctest testkit.python.*);
     * chromium: kdc-harness --report-html rendered headless (ctest testkit.report_html);
     * python3-prometheus-client: libkdc's OpenMetrics parsed (ctest harness.stats.*);
     * postgresql: the server of kdc-harness's PostgreSQL sink (ctest testkit.sink_postgresql);
     * jq: scripts/harness-matrix.sh reads which scenarios judge a sink */
    static const char *const test_only[] = {"libcmocka-dev",
                                            "pre-commit",
                                            "clang-format-14",
                                            "help2man",
                                            "man-db",
                                            "clang-14",
                                            "libclang-rt-14-dev",
                                            "python3-confluent-kafka",
                                            "python3-psycopg2",
                                            "chromium",
                                            "python3-prometheus-client",
                                            "postgresql",
                                            "jq",
                                            NULL};
    static const char *const setups[] = {"examples/ci/github-actions.yml",
                                         "examples/ci/gitlab-ci.yml", "docs/ci.md"};
    char *deps = scratch_read(g.src, "scripts/install-deps.sh");
    assert_non_null(deps);
    const char *list = strstr(deps, "packages=(");
    assert_non_null(list);
    list += strlen("packages=(");
    const char *close = strstr(list, "\n)"); /* the list ends with ")" on a line of its own */
    assert_non_null(close);
    char *body = strndup(list, (size_t)(close - list));
    size_t checked = 0;
    char *save_line = NULL;
    for (char *line = strtok_r(body, "\n", &save_line); line;
         line = strtok_r(NULL, "\n", &save_line)) {
        line[strcspn(line, "#")] = 0; /* comments */
        char *save = NULL;
        for (char *pkg = strtok_r(line, " \t", &save); pkg; pkg = strtok_r(NULL, " \t", &save)) {
            int skip = 0;
            for (size_t k = 0; test_only[k]; k++)
                skip |= !strcmp(pkg, test_only[k]);
            if (skip)
                continue;
            for (size_t k = 0; k < sizeof setups / sizeof *setups; k++) {
                char *text = scratch_read(g.src, setups[k]);
                assert_non_null(text);
                if (!has_word(text, pkg))
                    fail_msg("%s does not install %s (scripts/install-deps.sh does; add it, or "
                             "mark it test-only in this test)",
                             setups[k], pkg);
                free(text);
            }
            checked++;
        }
    }
    assert_true(checked >= 8);
    free(body);
    free(deps);
}

static void the_make_targets_lint_a_cmake_project(void **state) {
    (void)state;
    char *proj = scratch_dir("make");
    scratch_write(proj, "CMakeLists.txt",
                  "cmake_minimum_required(VERSION 3.18)\n"
                  "project(orders C)\n"
                  "add_library(orders STATIC src/worker.c)\n");
    scratch_write(proj, "src/worker.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "\n"
                  "void drain(rd_kafka_t *consumer) {\n"
                  "    rd_kafka_commit(consumer, NULL, 0);\n"
                  "}\n");
    char *mk = scratch_path(g.src, "examples/ci/kdc-lint.mk"), *lint_var = NULL;
    assert_true(asprintf(&lint_var, "KDC_LINT=%s", g.lint) > 0);
    kdc_run_t r;
    /* configures the database, then lints: the finding fails make */
    int code = scratch_run(&r, proj, "make", "-f", mk, "kdc-lint", lint_var, (char *)NULL);
    if (code != 2 || !strstr(r.out, "src/worker.c:4:5: warning: rd_kafka_commit without")) {
        show(&r);
        fail_msg("make kdc-lint exited %d", code);
    }
    kdc_run_free(&r);
    char *db = scratch_read(proj, "build/compile_commands.json");
    assert_non_null(db);
    free(db);

    /* a SARIF report to a file */
    code = scratch_run(&r, proj, "make", "-f", mk, "kdc-lint", lint_var,
                       "KDC_LINT_FLAGS=--format=sarif", "KDC_LINT_OUT=kdc-lint.sarif", (char *)NULL);
    kdc_run_free(&r);
    char *sarif = scratch_read(proj, "kdc-lint.sarif");
    assert_non_null(sarif);
    json_t *doc = json_loads(sarif, 0, NULL);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "version")), "2.1.0");
    json_decref(doc);
    free(sarif);
    assert_int_equal(code, 2);

    /* only the changes since a revision: nothing changed since HEAD */
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    assert_int_equal(scratch_run(&r, proj, "git", "init", "-q", (char *)NULL), 0);
    kdc_run_free(&r);
    assert_int_equal(scratch_run(&r, proj, "git", "add", "CMakeLists.txt", "src", (char *)NULL), 0);
    kdc_run_free(&r);
    assert_int_equal(scratch_run(&r, proj, "git", "-c", "user.name=kdc", "-c",
                                 "user.email=kdc@example.invalid", "commit", "-q", "-m", "orders",
                                 (char *)NULL),
                     0);
    kdc_run_free(&r);
    code = scratch_run(&r, proj, "make", "-f", mk, "kdc-lint-changed", lint_var,
                       "KDC_LINT_BASE=HEAD", "KDC_LINT_PATHS=src", (char *)NULL);
    if (code != 0 || !strstr(r.err, "kdc-lint: 1 finding in files unchanged since HEAD not shown")) {
        show(&r);
        fail_msg("make kdc-lint-changed exited %d", code);
    }
    kdc_run_free(&r);
    scratch_remove(proj);
    free(proj);
    free(mk);
    free(lint_var);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_hook_manifest_runs_kdc_lint_on_c_and_cxx_serially),
        cmocka_unit_test(the_github_workflow_uploads_sarif_and_annotates_pull_requests),
        cmocka_unit_test(every_kdc_lint_option_used_exists),
        cmocka_unit_test(the_ci_options_are_in_the_reference_option_table),
        cmocka_unit_test(the_ci_setups_install_the_packages_kdc_builds_from),
        cmocka_unit_test(the_make_targets_lint_a_cmake_project),
    };
    return cmocka_run_group_tests_name("lint.ci_examples", tests, setup, teardown);
}
