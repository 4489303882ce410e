#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lintcase.h"

static struct {
    char lint[PATH_MAX];
    char root[PATH_MAX];
} g;

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    chmod(path, 0700);
    return remove(path);
}

int lc_setup(void **state) {
    (void)state;
    const char *lint = getenv("KDC_LINT");
    if (!lint || !realpath(lint, g.lint) || access(g.lint, X_OK) != 0) {
        fprintf(stderr, "KDC_LINT must name the kdc-lint executable\n");
        return -1;
    }
    const char *tmp = getenv("TMPDIR");
    snprintf(g.root, sizeof g.root, "%s/kdc-lintcase-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(g.root))
        return -1;
    char real[PATH_MAX];
    if (!realpath(g.root, real))
        return -1;
    snprintf(g.root, sizeof g.root, "%s", real);
    return 0;
}

int lc_teardown(void **state) {
    (void)state;
    if (g.root[0] && !getenv("KDC_KEEP_TMP"))
        nftw(g.root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
    return 0;
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

char *lc_dir(const char *name) {
    char *d = NULL;
    if (asprintf(&d, "%s/%s", g.root, name) < 0)
        abort();
    mkdirs(d);
    return d;
}

void lc_write(const char *dir, const char *rel, const char *text) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, rel) < 0)
        abort();
    char *slash = strrchr(p, '/');
    *slash = 0;
    mkdirs(p);
    *slash = '/';
    FILE *f = fopen(p, "wb");
    if (!f)
        fail_msg("cannot write %s: %s", p, strerror(errno));
    fputs(text, f);
    assert_int_equal(fclose(f), 0);
    free(p);
}

char *lc_read(const char *dir, const char *rel) {
    char *p = NULL, *text = NULL;
    size_t len = 0;
    if (asprintf(&p, "%s/%s", dir, rel) < 0)
        abort();
    FILE *f = fopen(p, "rb"), *m = open_memstream(&text, &len);
    if (!f)
        fail_msg("cannot read %s: %s", p, strerror(errno));
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0)
        fwrite(buf, 1, n, m);
    fclose(f);
    fclose(m);
    free(p);
    return text;
}

static void show(const lc_res_t *r) {
    print_error("command: %s\nexit: %d\n--- stdout (first 6000 bytes)\n%.6000s\n--- stderr (first "
                "4000 bytes)\n%.4000s\n---\n",
                r->cmd, r->code, r->run.out, r->run.err);
}

void lc_run(lc_res_t *r, const char *cwd, ...) {
    const char *argv[64];
    size_t n = 0;
    argv[n++] = g.lint;
    va_list ap;
    va_start(ap, cwd);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 63;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    memset(r, 0, sizeof *r);
    size_t len = 0;
    FILE *cmd = open_memstream(&r->cmd, &len);
    fprintf(cmd, "(cd %s &&", cwd);
    for (size_t i = 0; i < n; i++)
        fprintf(cmd, " '%s'", argv[i]);
    fprintf(cmd, ")");
    fclose(cmd);
    kdc_run_opts_t o = {.timeout = 300};
    if (kdc_run_ex(cwd, (char *const *)argv, &o, &r->run) != 0)
        fail_msg("cannot run %s", r->cmd);
    r->code = r->run.timed_out ? -1 : r->run.exit_code;
    json_error_t e;
    r->json = r->run.out[0] == '{' ? json_loads(r->run.out, 0, &e) : NULL;
}

void lc_free(lc_res_t *r) {
    kdc_run_free(&r->run);
    free(r->cmd);
    json_decref(r->json);
    memset(r, 0, sizeof *r);
}

void lc_expect_exit(const lc_res_t *r, int code) {
    static const char *const reports[] = {"ERROR: AddressSanitizer", "ERROR: LeakSanitizer",
                                          "runtime error:", NULL};
    for (size_t i = 0; reports[i]; i++)
        if (strstr(r->run.err, reports[i])) {
            show(r);
            fail_msg("sanitizer report (%s)", reports[i]);
        }
    if (r->code != code) {
        show(r);
        fail_msg("exit %d, expected %d", r->code, code);
    }
}

static void expect(const lc_res_t *r, const char *stream, const char *text, const char *needle,
                   int present) {
    if ((strstr(text, needle) != NULL) != present) {
        show(r);
        fail_msg("%s %s \"%s\"", stream, present ? "lacks" : "has", needle);
    }
}

void lc_expect_err(const lc_res_t *r, const char *n) { expect(r, "stderr", r->run.err, n, 1); }
void lc_expect_no_err(const lc_res_t *r, const char *n) { expect(r, "stderr", r->run.err, n, 0); }
void lc_expect_out(const lc_res_t *r, const char *n) { expect(r, "stdout", r->run.out, n, 1); }
void lc_expect_no_out(const lc_res_t *r, const char *n) { expect(r, "stdout", r->run.out, n, 0); }

static json_t *findings(const lc_res_t *r) {
    json_t *f = r->json ? json_object_get(r->json, "findings") : NULL;
    if (!json_is_array(f)) {
        show(r);
        fail_msg("stdout is not a kdc-lint JSON report");
    }
    return f;
}

size_t lc_nfindings(const lc_res_t *r, const char *rule) {
    json_t *fs = findings(r), *f;
    size_t i, n = 0;
    json_array_foreach(fs, i, f) {
        if (!rule || !strcmp(json_string_value(json_object_get(f, "rule")), rule))
            n++;
    }
    return n;
}

json_t *lc_finding(const lc_res_t *r, const char *rule, const char *file, long line) {
    json_t *fs = findings(r), *f;
    size_t i;
    json_array_foreach(fs, i, f) {
        if (!strcmp(json_string_value(json_object_get(f, "rule")), rule) &&
            !strcmp(json_string_value(json_object_get(f, "file")), file) &&
            json_integer_value(json_object_get(f, "line")) == line)
            return f;
    }
    return NULL;
}

json_t *lc_need_finding(const lc_res_t *r, const char *rule, const char *file, long line) {
    json_t *f = lc_finding(r, rule, file, line);
    if (!f) {
        show(r);
        fail_msg("no %s finding at %s:%ld", rule, file, line);
    }
    return f;
}

const char *lc_str(json_t *finding, const char *key) {
    json_t *v = json_object_get(finding, key);
    if (!json_is_string(v))
        fail_msg("finding member %s is not a string", key);
    return json_string_value(v);
}

size_t lc_count(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}
