/* Scratch directories and commands for tests; see scratch.h. */
#define _GNU_SOURCE
#include "scratch.h"

#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("scratch: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    abort();
}

char *scratch_path(const char *dir, const char *rel) {
    char *p = NULL;
    if (asprintf(&p, "%s/%s", dir, rel) < 0)
        die("out of memory");
    return p;
}

char *scratch_dir(const char *name) {
    const char *tmp = getenv("TMPDIR");
    char *templ = NULL;
    if (asprintf(&templ, "%s/kdc-%s-XXXXXX", tmp && *tmp ? tmp : "/tmp", name) < 0)
        die("out of memory");
    if (!mkdtemp(templ))
        die("mkdtemp %s: %s", templ, strerror(errno));
    char *real = realpath(templ, NULL);
    if (!real)
        die("realpath %s: %s", templ, strerror(errno));
    free(templ);
    return real;
}

static int remove_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)flag;
    (void)ftw;
    remove(path);
    return 0;
}

void scratch_remove(const char *dir) {
    if (dir)
        nftw(dir, remove_one, 32, FTW_DEPTH | FTW_PHYS);
}

static void mkdirs(char *path) {
    for (char *s = path + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(path, 0755) != 0 && errno != EEXIST)
                die("mkdir %s: %s", path, strerror(errno));
            *s = '/';
        }
}

void scratch_write(const char *dir, const char *rel, const char *text) {
    char *p = scratch_path(dir, rel);
    mkdirs(p);
    FILE *f = fopen(p, "w");
    if (!f || fputs(text, f) < 0 || fclose(f) != 0)
        die("cannot write %s: %s", p, strerror(errno));
    free(p);
}

char *scratch_read(const char *dir, const char *rel) {
    char *p = scratch_path(dir, rel);
    FILE *f = fopen(p, "r");
    free(p);
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, m);
    fclose(m);
    fclose(f);
    return buf;
}

char *scratch_which(const char *prog) {
    if (strchr(prog, '/'))
        return access(prog, X_OK) == 0 ? strdup(prog) : NULL;
    const char *path = getenv("PATH");
    char *copy = strdup(path && *path ? path : "/usr/local/bin:/usr/bin:/bin"), *save = NULL;
    char *found = NULL;
    for (char *d = strtok_r(copy, ":", &save); d && !found; d = strtok_r(NULL, ":", &save)) {
        char *p = scratch_path(*d ? d : ".", prog);
        struct stat st;
        if (stat(p, &st) == 0 && S_ISREG(st.st_mode) && access(p, X_OK) == 0)
            found = p;
        else
            free(p);
    }
    free(copy);
    return found;
}

int scratch_runv(kdc_run_t *r, const char *cwd, const char *const argv[]) {
    const char *args[64];
    size_t n = 0;
    char *exe = scratch_which(argv[0]);
    memset(r, 0, sizeof *r);
    if (!exe) {
        r->out = strdup("");
        if (asprintf(&r->err, "%s: not found on PATH\n", argv[0]) < 0)
            die("out of memory");
        return -1;
    }
    args[n++] = exe;
    for (size_t i = 1; argv[i] && n < 63; i++)
        args[n++] = argv[i];
    args[n] = NULL;
    kdc_run_opts_t o = {.timeout = 600};
    int rc = kdc_run_ex(cwd, (char *const *)args, &o, r);
    free(exe);
    if (rc != 0)
        return -1;
    return r->timed_out ? -1 : r->exit_code;
}

int scratch_run(kdc_run_t *r, const char *cwd, const char *prog, ...) {
    const char *argv[64];
    size_t n = 0;
    argv[n++] = prog;
    va_list ap;
    va_start(ap, prog);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 63;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    return scratch_runv(r, cwd, argv);
}

size_t scratch_count(const char *text, const char *needle) {
    size_t n = 0;
    for (const char *p = text; p && (p = strstr(p, needle)); p += strlen(needle))
        n++;
    return n;
}
