/*
 * kdc-lint against its fixtures: one cmocka test per fixture input.
 *
 *   test_fixtures [--mode=lint|compile] [--kdc-lint PATH] [--fixtures DIR] [--filter GLOB]
 *
 * --mode=lint (default): runs `kdc-lint --format=json [kdc-fixture args] FILE`
 * (or `-p DIR DIR` for a multi-file input) from the rule's fixture folder,
 * validates the JSON report and compares its (file, line, rule) findings with
 * the inline markers in both directions; the exit code must be 1 when the
 * input expects findings and 0 otherwise.
 *
 * --mode=compile: checks that every fixture is real code: each translation
 * unit compiles with `cc -fsyntax-only -Wall` (C++: `c++`) without a single
 * diagnostic, starts with a comment, and has markers that parse and name
 * only rules that have a fixture folder.
 *
 * Defaults come from the environment: KDC_LINT, KDC_FIXTURES_DIR, KDC_CC,
 * KDC_CXX, KDC_FIXTURE_CFLAGS (whitespace-separated extra compiler flags).
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
#include <unistd.h>

#include "fixtures.h"
#include "lintrun.h"
#include "markers.h"
#include "score.h"

static struct {
    const char *lint;
    const char *cc, *cxx;
    char **cflags;
    size_t ncflags;
    kdc_fixture_set_t set;
    char root[4096];      /* resolved fixtures folder, for short paths in messages */
    char discovery_error[4096];
} g;

static void print_problems(const kdc_problems_t *p) {
    for (size_t i = 0; i < p->n; i++)
        print_error("  %s\n", p->v[i]);
}

/* Parses the markers of every source of fx and checks their rule names. */
static int load_markers(const kdc_fixture_t *fx, kdc_markers_t *ms, kdc_problems_t *problems) {
    char err[1024];
    memset(ms, 0, sizeof *ms);
    for (size_t i = 0; i < fx->nsources; i++) {
        if (kdc_markers_parse_file(ms, fx->sources[i], err, sizeof err)) {
            kdc_problems_add(problems, "fixture: %s", err);
            return -1;
        }
    }
    for (size_t i = 0; i < ms->n; i++) {
        int known = 0;
        for (size_t r = 0; r < g.set.nrules; r++)
            known |= !strcmp(g.set.rules[r], ms->v[i].rule);
        if (!known) {
            kdc_problems_add(problems, "fixture: %s:%u: marker names %s, which has no fixture folder",
                             kdc_display_path(ms->v[i].file, g.root), ms->v[i].line, ms->v[i].rule);
            return -1;
        }
    }
    return 0;
}

static void finish(const kdc_fixture_t *fx, kdc_problems_t *problems, const char *cmdline) {
    if (!problems->n)
        return;
    print_error("%s: %zu problem(s)\n", fx->name, problems->n);
    if (cmdline)
        print_error("  command (in %s): %s\n", fx->rule_dir, cmdline);
    print_problems(problems);
    size_t n = problems->n;
    kdc_problems_free(problems);
    fail_msg("%s: %zu missing/extra finding(s) or contract violation(s), listed above", fx->name, n);
}

static void test_lint_fixture(void **state) {
    const kdc_fixture_t *fx = *state;
    kdc_problems_t problems = {0};
    kdc_markers_t ms;
    if (fx->error) {
        kdc_problems_add(&problems, "fixture: %s", fx->error);
        finish(fx, &problems, NULL);
    }
    if (load_markers(fx, &ms, &problems)) {
        kdc_markers_free(&ms);
        finish(fx, &problems, NULL);
    }

    char *argv[64];
    size_t argc = 0;
    argv[argc++] = (char *)g.lint;
    argv[argc++] = "--format=json";
    argv[argc++] = "--no-cache"; /* the analysis is under test, and fixtures/ stays clean */
    for (size_t i = 0; i < ms.nargs && argc < 58; i++)
        argv[argc++] = ms.args[i];
    if (fx->multi) {
        argv[argc++] = "-p";
        argv[argc++] = fx->entry;
    }
    argv[argc++] = fx->entry;
    argv[argc] = NULL;
    char cmdline[4096];
    kdc_argv_str(argv, cmdline, sizeof cmdline);

    kdc_run_t run;
    if (kdc_run(fx->rule_dir, argv, &run)) {
        kdc_markers_free(&ms);
        fail_msg("%s: could not start %s", fx->name, g.lint);
    }
    int expect_findings = kdc_markers_count(&ms, KDC_MARK_EXPECT, NULL) > 0;
    if (run.signaled || (run.exit_code != 0 && run.exit_code != 1)) {
        kdc_problems_add(&problems, "kdc-lint exited with %d%s (0 or 1 expected); stderr:\n%s",
                         run.exit_code, run.signaled ? " (signal)" : "", run.err);
    } else {
        kdc_report_t rep;
        char err[1024];
        if (kdc_report_parse(run.out, fx->rule_dir, &rep, err, sizeof err)) {
            kdc_problems_add(&problems, "JSON report violates the contract: %s; stdout starts: %.300s",
                             err, run.out);
        } else {
            kdc_score_fixture(&ms, rep.findings, rep.nfindings, g.root, &problems);
            if (rep.nerrors)
                kdc_problems_add(&problems, "kdc-lint reported %zu error(s) for a fixture that "
                                 "compiles:\n%s", rep.nerrors, rep.errors_text);
            if (rep.translation_units != (long long)fx->ntus)
                kdc_problems_add(&problems, "stats.translation_units is %lld, the fixture has %zu",
                                 rep.translation_units, fx->ntus);
            if (rep.incomplete != 0)
                kdc_problems_add(&problems, "stats.incomplete is %lld, expected 0", rep.incomplete);
            if (run.exit_code != (rep.nfindings > 0 ? 1 : 0))
                kdc_problems_add(&problems, "exit code %d does not match %zu finding(s) in the report",
                                 run.exit_code, rep.nfindings);
            kdc_report_free(&rep);
        }
        if (run.exit_code != (expect_findings ? 1 : 0))
            kdc_problems_add(&problems, "exit code %d, expected %d (%s)", run.exit_code,
                             expect_findings ? 1 : 0,
                             expect_findings ? "the fixture expects findings" : "no expect marker");
    }
    kdc_run_free(&run);
    kdc_markers_free(&ms);
    finish(fx, &problems, cmdline);
}

static int starts_with_comment(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f)
        return 0;
    char l1[512] = "", l2[512] = "";
    if (!fgets(l1, sizeof l1, f))
        l1[0] = '\0';
    if (!fgets(l2, sizeof l2, f))
        l2[0] = '\0';
    fclose(f);
    int c1 = !strncmp(l1, "/*", 2) || !strncmp(l1, "//", 2);
    /* after a "kdc-fixture:" line the description comment must follow */
    if (strstr(l1, "kdc-fixture:"))
        return !strncmp(l2, "/*", 2) || !strncmp(l2, "//", 2);
    return c1;
}

static void test_compile_fixture(void **state) {
    const kdc_fixture_t *fx = *state;
    kdc_problems_t problems = {0};
    kdc_markers_t ms;
    if (fx->error) {
        kdc_problems_add(&problems, "fixture: %s", fx->error);
        finish(fx, &problems, NULL);
    }
    if (load_markers(fx, &ms, &problems)) {
        kdc_markers_free(&ms);
        finish(fx, &problems, NULL);
    }
    if (ms.n == 0)
        kdc_problems_add(&problems, "no expect: or ok: marker: the input checks nothing");
    kdc_markers_free(&ms);
    char *dir = fx->multi ? NULL : strdup(fx->rule_dir);
    if (fx->multi && asprintf(&dir, "%s/%s", fx->rule_dir, fx->entry) < 0)
        dir = NULL;
    for (size_t i = 0; i < fx->ntus; i++) {
        const char *tu = fx->tus[i];
        if (!starts_with_comment(tu))
            kdc_problems_add(&problems, "%s does not start with a comment saying what it covers",
                             kdc_display_path(tu, g.root));
        char *argv[64];
        size_t argc = 0;
        argv[argc++] = (char *)(kdc_is_cxx_name(tu) ? g.cxx : g.cc);
        argv[argc++] = "-fsyntax-only";
        argv[argc++] = "-Wall";
        for (size_t k = 0; k < g.ncflags && argc < 58; k++)
            argv[argc++] = g.cflags[k];
        argv[argc++] = "-I";
        argv[argc++] = dir;
        argv[argc++] = (char *)tu;
        argv[argc] = NULL;
        kdc_run_t run;
        char cmdline[4096];
        if (kdc_run(dir, argv, &run)) {
            kdc_problems_add(&problems, "could not start %s", argv[0]);
            continue;
        }
        if (run.exit_code != 0 || run.err[0])
            kdc_problems_add(&problems, "%s: `%s` exited %d with diagnostics:\n%s",
                             kdc_display_path(tu, g.root), kdc_argv_str(argv, cmdline, sizeof cmdline),
                             run.exit_code, run.err);
        kdc_run_free(&run);
    }
    free(dir);
    finish(fx, &problems, NULL);
}

static void test_discovery_failed(void **state) {
    (void)state;
    fail_msg("%s", g.discovery_error);
}

static void split_flags(const char *s) {
    if (!s)
        return;
    char *copy = strdup(s), *save = NULL;
    for (char *t = strtok_r(copy, " \t", &save); t; t = strtok_r(NULL, " \t", &save)) {
        g.cflags = realloc(g.cflags, (g.ncflags + 1) * sizeof *g.cflags);
        g.cflags[g.ncflags++] = strdup(t);
    }
    free(copy);
}

/* Finds name on PATH (names with a '/' are returned as they are). */
static const char *resolve_exe(const char *name, char *buf, size_t len) {
    if (strchr(name, '/'))
        return realpath(name, buf) ? buf : name;
    const char *path = getenv("PATH") ? getenv("PATH") : "/usr/bin:/bin";
    char *copy = strdup(path), *save = NULL;
    const char *found = name;
    for (char *d = strtok_r(copy, ":", &save); d; d = strtok_r(NULL, ":", &save)) {
        snprintf(buf, len, "%s/%s", d, name);
        if (access(buf, X_OK) == 0) {
            found = buf;
            break;
        }
    }
    free(copy);
    return found;
}

static void usage(void) {
    fprintf(stderr, "usage: test_fixtures [--mode=lint|compile] [--kdc-lint PATH] "
                    "[--fixtures DIR] [--filter GLOB]\n");
    exit(2);
}

int main(int argc, char **argv) {
    const char *mode = "lint", *fixtures = getenv("KDC_FIXTURES_DIR"), *filter = NULL;
    g.lint = getenv("KDC_LINT");
    g.cc = getenv("KDC_CC") ? getenv("KDC_CC") : "cc";
    g.cxx = getenv("KDC_CXX") ? getenv("KDC_CXX") : "c++";
    split_flags(getenv("KDC_FIXTURE_CFLAGS"));
    for (int i = 1; i < argc; i++) {
        if (!strncmp(argv[i], "--mode=", 7))
            mode = argv[i] + 7;
        else if (!strcmp(argv[i], "--kdc-lint") && i + 1 < argc)
            g.lint = argv[++i];
        else if (!strcmp(argv[i], "--fixtures") && i + 1 < argc)
            fixtures = argv[++i];
        else if (!strcmp(argv[i], "--filter") && i + 1 < argc)
            filter = argv[++i];
        else
            usage();
    }
    int lint_mode = !strcmp(mode, "lint");
    if (!lint_mode && strcmp(mode, "compile"))
        usage();

    /* Compilers are run without a shell: resolve bare names through PATH here. */
    static char cc_path[4096], cxx_path[4096];
    g.cc = resolve_exe(g.cc, cc_path, sizeof cc_path);
    g.cxx = resolve_exe(g.cxx, cxx_path, sizeof cxx_path);

    /* kdc-lint runs in each rule's fixture folder: make its path absolute. */
    static char lint_path[4096];
    if (g.lint && realpath(g.lint, lint_path))
        g.lint = lint_path;

    struct CMUnitTest *tests = NULL;
    size_t ntests = 0;
    char err[1024];
    if (lint_mode && (!g.lint || access(g.lint, X_OK) != 0)) {
        snprintf(g.discovery_error, sizeof g.discovery_error,
                 "kdc-lint binary not executable: %s (pass --kdc-lint PATH or set KDC_LINT)",
                 g.lint ? g.lint : "(not set)");
    } else if (!fixtures) {
        snprintf(g.discovery_error, sizeof g.discovery_error,
                 "fixtures folder not given (pass --fixtures DIR or set KDC_FIXTURES_DIR)");
    } else if (kdc_fixtures_discover(fixtures, &g.set, err, sizeof err)) {
        snprintf(g.discovery_error, sizeof g.discovery_error, "%s", err);
    } else if (g.set.nrules == 0 || g.set.n == 0) {
        snprintf(g.discovery_error, sizeof g.discovery_error,
                 "no fixture inputs under %s: a run with nothing to check is not a pass", fixtures);
    } else {
        if (!realpath(fixtures, g.root))
            g.root[0] = '\0';
        for (size_t r = 0; r < g.set.nrules && !g.discovery_error[0]; r++) {
            size_t n = 0;
            for (size_t i = 0; i < g.set.n; i++)
                n += !strcmp(g.set.v[i].rule, g.set.rules[r]);
            if (!n)
                snprintf(g.discovery_error, sizeof g.discovery_error,
                         "fixture folder %s/ has no inputs", g.set.rules[r]);
        }
    }
    if (g.discovery_error[0]) {
        tests = calloc(1, sizeof *tests);
        tests[0].name = "fixture discovery";
        tests[0].test_func = test_discovery_failed;
        ntests = 1;
    } else {
        tests = calloc(g.set.n, sizeof *tests);
        for (size_t i = 0; i < g.set.n; i++) {
            tests[i].name = g.set.v[i].name;
            tests[i].test_func = lint_mode ? test_lint_fixture : test_compile_fixture;
            tests[i].initial_state = &g.set.v[i];
        }
        ntests = g.set.n;
    }
    if (filter)
        cmocka_set_test_filter(filter);
    int failed = _cmocka_run_group_tests(lint_mode ? "kdc-lint findings match fixture markers"
                                                   : "fixtures are real, warning-free code",
                                         tests, ntests, NULL, NULL);
    free(tests);
    kdc_fixtures_free(&g.set);
    for (size_t i = 0; i < g.ncflags; i++)
        free(g.cflags[i]);
    free(g.cflags);
    return failed;
}
