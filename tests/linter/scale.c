/* Shared by the scale tests; see scale.h. */
#define _GNU_SOURCE
#include "scale.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *scale_lint_path(void) {
    const char *l = getenv("KDC_LINT");
    if (!l || !*l)
        fail_msg("KDC_LINT must name the kdc-lint executable");
    return l;
}

static int lintv(const char *lint, int as_nobody, kdc_run_t *r, const char *cwd,
                 const char *const *args) {
    const char *argv[64] = {lint};
    size_t n = 1;
    for (; args[n - 1] && n < 63; n++)
        argv[n] = args[n - 1];
    argv[n] = NULL;
    kdc_run_opts_t o = {.timeout = 600, .as_nobody = as_nobody};
    if (kdc_run_ex(cwd, (char *const *)argv, &o, r) != 0)
        fail_msg("cannot run %s", argv[0]);
    if (r->timed_out)
        fail_msg("kdc-lint timed out in %s", cwd);
    return r->exit_code;
}

int scale_lintv(kdc_run_t *r, const char *cwd, const char *const *args) {
    return lintv(scale_lint_path(), 0, r, cwd, args);
}

#define COLLECT_ARGS(args, last)                                                                \
    const char *args[62];                                                                       \
    size_t n_ = 0;                                                                              \
    va_list ap;                                                                                 \
    va_start(ap, last);                                                                         \
    for (const char *a; (a = va_arg(ap, const char *)) && n_ < 61;)                             \
        args[n_++] = a;                                                                         \
    va_end(ap);                                                                                 \
    args[n_] = NULL

int scale_lint(kdc_run_t *r, const char *cwd, ...) {
    COLLECT_ARGS(args, cwd);
    return lintv(scale_lint_path(), 0, r, cwd, args);
}

int scale_lint_nobody(kdc_run_t *r, const char *cwd, ...) {
    COLLECT_ARGS(args, cwd);
    return lintv(scale_lint_path(), 1, r, cwd, args);
}

int scale_lint_with(const char *lint, kdc_run_t *r, const char *cwd, ...) {
    COLLECT_ARGS(args, cwd);
    return lintv(lint, 0, r, cwd, args);
}

char *scale_without_seconds(const char *report) {
    static const char key[] = "\"seconds\": ";
    size_t len = strlen(report);
    char *out = malloc(len + 1), *o = out;
    assert_non_null(out);
    for (const char *p = report; *p;) {
        if (!strncmp(p, key, sizeof key - 1)) {
            memcpy(o, key, sizeof key - 1);
            o += sizeof key - 1;
            p += sizeof key - 1;
            while (*p && strchr("0123456789.eE+-", *p))
                p++;
            *o++ = '0';
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

void scale_same_report(const char *what, const char *a, const char *b) {
    char *x = scale_without_seconds(a), *y = scale_without_seconds(b);
    if (strcmp(x, y)) {
        size_t i = 0;
        while (x[i] && x[i] == y[i])
            i++;
        size_t from = i > 300 ? i - 300 : 0;
        print_error("%s: the reports differ at byte %zu:\n--- first\n%.600s\n--- second\n%.600s\n",
                    what, i, x + from, y + from);
        free(x);
        free(y);
        fail_msg("%s: reports differ", what);
    }
    free(x);
    free(y);
}

void scale_show(const kdc_run_t *r) {
    /* in pieces: cmocka's print_error cuts a message at about 500 bytes */
    print_error("exit %d\n--- stderr (first 3000 bytes)\n", r->exit_code);
    for (size_t at = 0, n = strlen(r->err); at < n && at < 3000; at += 400)
        print_error("%.400s", r->err + at);
    print_error("\n--- stdout (first 3000 bytes)\n");
    for (size_t at = 0, n = strlen(r->out); at < n && at < 3000; at += 400)
        print_error("%.400s", r->out + at);
    print_error("\n---\n");
}

void scale_expect_err(const kdc_run_t *r, int code, ...) {
    if (r->exit_code != code) {
        scale_show(r);
        fail_msg("exit %d, expected %d", r->exit_code, code);
    }
    va_list ap;
    va_start(ap, code);
    for (const char *n; (n = va_arg(ap, const char *));)
        if (!strstr(r->err, n)) {
            scale_show(r);
            va_end(ap);
            fail_msg("stderr lacks \"%s\"", n);
        }
    va_end(ap);
}
