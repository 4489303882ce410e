/* Shared precompiled preambles (see preamble.h). */
#define _GNU_SOURCE
#include "preamble.h"
#include "bytes.h"
#include "libclang_lazy.h"
#include "regfile.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/openat2.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* One directive of a source's leading run: its text (from '#' to the end of its line,
 * trailing blanks dropped) and where its line ends (the offset of its newline). */
typedef struct directive {
    char *text;
    size_t end;
} directive_t;

typedef KDC_VEC(directive_t) directives_t;
typedef KDC_VEC(const char *) argv_t;

typedef struct preamble {
    char *header;              /* the prefix, as a header of the plan's directory */
    char *text;                /* its contents: each directive and a newline */
    char *pch;                 /* its precompiled form */
    const char *lang;          /* "c-header" or "c++-header" */
    size_t ndirectives;        /* how many leading directives of each unit it holds */
    int parent;                /* the preamble it is chained on, which holds the first of
                                  these directives (its header: only the others), or -1 */
    const kdc_tu_job_t *first; /* a unit of the group: its arguments are every unit's */
    /* in each process, once it has looked */
    int state;            /* 0 not yet, 1 ready, -1 failed */
    KDC_VEC(char *) deps; /* the files the precompiled header was made of */
} preamble_t;

struct kdc_preamble_plan {
    char *dir;
    int owner_fd;      /* OWNER_LOCK in dir, held (flock) while the run lives; -1: none */
    char *install_dir; /* -ccc-install-dir of C++ preambles (install_args), or NULL */
    int install_known;
    KDC_VEC(preamble_t) pre;
    size_t njobs;      /* the size of the two arrays below: the largest job index + 1 */
    int *pre_of;       /* job index -> preamble index, or -1 */
    size_t *blank_end; /* job index -> the end of its shared prefix */
};

static void directives_free(directives_t *d) {
    for (size_t i = 0; i < d->n; i++)
        free(d->v[i].text);
    free(d->v);
    memset(d, 0, sizeof *d);
}

static int is_blank(char ch) {
    return ch == ' ' || ch == '\t' || ch == '\f' || ch == '\v';
}

/* Skips blanks and complete block comments from s[i] on, within the line ending at eol;
 * -1 when a block comment is left open on the line (*open set). */
static long skip_space(const char *s, size_t i, size_t eol, int *open) {
    for (;;) {
        while (i < eol && (is_blank(s[i]) || s[i] == '\r'))
            i++;
        if (i + 1 < eol && s[i] == '/' && s[i + 1] == '*') {
            const char *close = memmem(s + i + 2, eol - i - 2, "*/", 2);
            if (!close) {
                *open = 1;
                return -1;
            }
            i = (size_t)(close - s) + 2;
            continue;
        }
        return (long)i;
    }
}

/* Does the directive at s[i..eol) ('#' at s[i]) qualify? The name after '#': include (of a
 * "quoted" or <bracketed> name), define or undef. */
static int shareable_directive(const char *s, size_t i, size_t eol) {
    size_t j = i + 1;
    while (j < eol && is_blank(s[j]))
        j++;
    size_t k = j;
    while (k < eol && ((s[k] >= 'a' && s[k] <= 'z') || s[k] == '_'))
        k++;
    size_t n = k - j;
    if ((n == 6 && !memcmp(s + j, "define", 6)) || (n == 5 && !memcmp(s + j, "undef", 5)))
        return k < eol && is_blank(s[k]);
    if (n == 7 && !memcmp(s + j, "include", 7)) {
        while (k < eol && is_blank(s[k]))
            k++;
        return k < eol && (s[k] == '"' || s[k] == '<');
    }
    return 0;
}

/* The leading directives of s[0..len) (see preamble.h for what ends them). */
static void scan(const char *s, size_t len, directives_t *out) {
    size_t pos = 0;
    int in_comment = 0;
    if (len >= 3 && !memcmp(s, "\xEF\xBB\xBF", 3))
        return; /* a byte-order mark: left as it is */
    while (pos < len) {
        const char *nl = memchr(s + pos, '\n', len - pos);
        if (!nl)
            return; /* a last line without its end, or the scan's limit: not taken */
        size_t eol = (size_t)(nl - s), i = pos;
        if (memchr(s + pos, '\0', eol - pos))
            return;
        size_t last = eol;
        while (last > pos && (is_blank(s[last - 1]) || s[last - 1] == '\r'))
            last--;
        if (last > pos && s[last - 1] == '\\')
            return; /* a continued line */
        if (in_comment) {
            const char *close = memmem(s + pos, eol - pos, "*/", 2);
            if (!close) {
                pos = eol + 1;
                continue;
            }
            in_comment = 0;
            i = (size_t)(close - s) + 2;
        }
        int open = 0;
        long at = skip_space(s, i, eol, &open);
        if (at < 0) {
            in_comment = 1;
            pos = eol + 1;
            continue;
        }
        i = (size_t)at;
        if (i == eol || (i + 1 < eol && s[i] == '/' && s[i + 1] == '/')) {
            pos = eol + 1;
            continue;
        }
        if (s[i] != '#' || !shareable_directive(s, i, eol))
            return;
        /* a block comment opened on the directive's line and left open ends the run */
        for (size_t k = i; k + 1 < eol; k++) {
            if (s[k] == '/' && s[k + 1] == '/')
                break;
            if (s[k] == '/' && s[k + 1] == '*') {
                const char *close = memmem(s + k + 2, eol - k - 2, "*/", 2);
                if (!close)
                    return;
                k = (size_t)(close - s) + 1;
            }
        }
        directive_t d = {kdc_xasprintf("%.*s", (int)(last - i), s + i), eol};
        KDC_VEC_PUSH(*out, d);
        pos = eol + 1;
    }
}

/* The header language of a unit's preamble, or NULL when it gets none: arguments that
 * include other files before it (-include, -imacros, -include-pch) or a language other
 * than C or C++. */
static const char *header_lang(const kdc_tu_job_t *job) {
    const char *x = NULL;
    for (int i = 0; i < job->argc; i++) {
        const char *a = job->argv[i];
        if (!strncmp(a, "-include", 8) || !strncmp(a, "-imacros", 8) || !strncmp(a, "--include", 9))
            return NULL;
        if (!strcmp(a, "-x") && i + 1 < job->argc)
            x = job->argv[++i];
        else if (!strncmp(a, "-x", 2) && a[2])
            x = a + 2;
    }
    if (x)
        return !strcmp(x, "c") ? "c-header" : !strcmp(x, "c++") ? "c++-header" : NULL;
    const char *dot = strrchr(job->file, '.');
    if (!dot || strchr(dot, '/'))
        return NULL;
    if (!strcmp(dot, ".c"))
        return "c-header";
    if (!strcmp(dot, ".cc") || !strcmp(dot, ".cpp") || !strcmp(dot, ".cxx") ||
        !strcmp(dot, ".c++") || !strcmp(dot, ".C"))
        return "c++-header";
    return NULL;
}

/* A unit as the planning sees it. */
typedef struct planned {
    size_t job;
    const char *lang;
    char *key; /* language, directory (or none), arguments and first directive, NUL-separated */
    size_t keylen;
    int near; /* a quoted include of its prefix names a file next to it (names_near) */
    directives_t dirs;
} planned_t;

static int by_key(const void *a, const void *b) {
    const planned_t *x = a, *y = b;
    size_t n = x->keylen < y->keylen ? x->keylen : y->keylen;
    int c = memcmp(x->key, y->key, n);
    if (c)
        return c;
    if (x->keylen != y->keylen)
        return x->keylen < y->keylen ? -1 : 1;
    /* then by the directives, so units sharing a longer prefix are next to each other */
    for (size_t i = 1; i < x->dirs.n && i < y->dirs.n; i++)
        if ((c = strcmp(x->dirs.v[i].text, y->dirs.v[i].text)) != 0)
            return c;
    if (x->dirs.n != y->dirs.n)
        return x->dirs.n < y->dirs.n ? -1 : 1;
    return x->job < y->job ? -1 : x->job > y->job;
}

/* (planned_t * elements) by their keys alone */
static int by_key_only(const void *a, const void *b) {
    const planned_t *x = *(const planned_t *const *)a, *y = *(const planned_t *const *)b;
    if (x->keylen != y->keylen)
        return x->keylen < y->keylen ? -1 : 1;
    return memcmp(x->key, y->key, x->keylen);
}

static char *dir_of(const char *file) {
    const char *slash = strrchr(file, '/');
    if (!slash)
        return kdc_xstrdup(".");
    if (slash == file)
        return kdc_xstrdup("/");
    return kdc_xasprintf("%.*s", (int)(slash - file), file);
}

/* The name of a directive `#include "name"` (malloc'd), or NULL for any other. */
static char *quoted_name(const char *text) {
    const char *t = text + 1; /* past '#' */
    t += strspn(t, " \t");
    if (strncmp(t, "include", 7) || (t[7] != ' ' && t[7] != '\t' && t[7] != '"'))
        return NULL;
    t += 7;
    t += strspn(t, " \t");
    const char *close = *t == '"' ? strchr(t + 1, '"') : NULL;
    return close ? kdc_xasprintf("%.*s", (int)(close - t - 1), t + 1) : NULL;
}

/* Options whose value is the next argument (so it is not read as an option itself). */
static int takes_value(const char *a) {
    static const char *const opts[] = {"-D",       "-U",        "-o",         "-x",
                                       "-MF",      "-MT",       "-MQ",        "-include",
                                       "-imacros", "-isystem",  "-idirafter", "-target",
                                       "-arch",    "-isysroot", "--sysroot"};
    for (size_t i = 0; i < sizeof opts / sizeof opts[0]; i++)
        if (!strcmp(a, opts[i]))
            return 1;
    return 0;
}

/* The path at which the first directory of the unit's quoted search path (-iquote, then
 * -I, each relative to -working-directory) has `name` (malloc'd), or NULL when none has it
 * or the search may not be what is followed here: an argument that changes it (-I-, -I=,
 * a virtual file system, -Xclang), or the directory found is one clang may drop as a
 * duplicate of a system directory (-isystem, -idirafter, anything under /usr). */
static char *on_search_path(const kdc_tu_job_t *job, const char *name) {
    const char *wd = ".";
    for (int i = 0; i < job->argc; i++) {
        const char *a = job->argv[i];
        if (!strncmp(a, "-working-directory=", 19))
            wd = a + 19;
        if (!strcmp(a, "-I-") || !strncmp(a, "-I=", 3) || !strncmp(a, "--include-directory", 19) ||
            !strncmp(a, "-ivfsoverlay", 12) || !strcmp(a, "-Xclang") ||
            !strcmp(a, "-Xpreprocessor"))
            return NULL;
    }
    char *found = NULL, *found_dir = NULL;
    for (int pass = 0; pass < 2 && !found; pass++) { /* -iquote dirs first, then -I dirs */
        const char *opt = pass ? "-I" : "-iquote";
        size_t ol = strlen(opt);
        for (int i = 0; i < job->argc && !found; i++) {
            const char *a = job->argv[i], *d = NULL;
            if (takes_value(a)) {
                i++;
                continue;
            }
            if (!strcmp(a, opt) && i + 1 < job->argc)
                d = job->argv[++i];
            else if (!strncmp(a, opt, ol) && a[ol])
                d = a + ol;
            if (!d)
                continue;
            char *dir = d[0] == '/' ? kdc_xstrdup(d) : kdc_xasprintf("%s/%s", wd, d);
            char *path = kdc_xasprintf("%s/%s", dir, name);
            if (access(path, F_OK) == 0) {
                found = path;
                found_dir = realpath(dir, NULL);
            } else {
                free(path);
            }
            free(dir);
        }
    }
    /* the directory it was found in must be one clang keeps */
    int kept = found_dir && strncmp(found_dir, "/usr/", 5);
    for (int i = 0; kept && i < job->argc; i++) {
        const char *a = job->argv[i], *d = NULL;
        if ((!strcmp(a, "-isystem") || !strcmp(a, "-idirafter")) && i + 1 < job->argc)
            d = job->argv[++i];
        else if (!strncmp(a, "-isystem", 8) && a[8])
            d = a + 8;
        else if (!strncmp(a, "-idirafter", 10) && a[10])
            d = a + 10;
        if (d) {
            char *sd = d[0] == '/' ? kdc_xstrdup(d) : kdc_xasprintf("%s/%s", wd, d);
            char *real = realpath(sd, NULL);
            kept = !real || strcmp(real, found_dir) != 0;
            free(real);
            free(sd);
        }
    }
    free(found_dir);
    if (!kept) {
        free(found);
        return NULL;
    }
    return found;
}

/* Are a and b the same file, reached through the same directory (so the quoted includes of
 * the header, looked up next to the name it was opened by, find the same files)? */
static int same_file_and_dir(const char *a, const char *b) {
    char *ra = realpath(a, NULL), *rb = realpath(b, NULL);
    int same = ra && rb && !strcmp(ra, rb);
    free(ra);
    free(rb);
    if (same) {
        char *da = dir_of(a), *db = dir_of(b);
        ra = realpath(da, NULL);
        rb = realpath(db, NULL);
        same = ra && rb && !strcmp(ra, rb);
        free(ra);
        free(rb);
        free(da);
        free(db);
    }
    return same;
}

/* Does name climb out of the directory it is looked up in ("../x.h", "./../x.h")? */
static int climbs(const char *name) {
    while (!strncmp(name, "./", 2))
        name += 2 + strspn(name + 2, "/");
    return !strncmp(name, "../", 3) || !strcmp(name, "..");
}

/* How the quoted includes among u's directives depend on dir, its directory: 0 not at all,
 * 1 one finds a file there other than the one the search path gives (units share its
 * prefix only within dir), -1 it cannot share (a name that climbs out with "..", which
 * would be looked up next to the preamble's header, or that cannot be looked up). clang
 * looks for a quoted name next to the including file first, then on the search path; a
 * header's own quoted includes are looked up next to the name it was opened by. */
static int names_near(const planned_t *u, const kdc_tu_job_t *job, const char *dir) {
    int near = 0;
    if (strpbrk(dir, "\"\n"))
        return -1; /* not writable in an #include (a near name is written with dir) */
    for (size_t m = 0; m < u->dirs.n; m++) {
        char *name = quoted_name(u->dirs.v[m].text);
        if (!name || name[0] == '/') {
            free(name);
            continue; /* not a quoted include, or an absolute name */
        }
        char *path = kdc_xasprintf("%s/%s", dir, name);
        int r = access(path, F_OK), e = errno;
        if (r != 0 && e != ENOENT && e != ENOTDIR) {
            near = -1;
        } else if (r != 0) {
            if (climbs(name))
                near = -1;
        } else if (climbs(name)) {
            near = near < 0 ? near : 1; /* written with dir: looked up nowhere else */
        } else {
            char *there = on_search_path(job, name);
            if (!there || !same_file_and_dir(path, there))
                near = near < 0 ? near : 1;
            free(there);
        }
        free(path);
        free(name);
        if (near < 0)
            return -1;
    }
    return near;
}

/* u's key: its language, its directory (none: with_dir 0), its arguments and its first
 * directive. */
static void make_key(planned_t *u, const kdc_tu_job_t *job, int with_dir) {
    free(u->key);
    kdc_buf_t b = {0};
    char *dir = with_dir ? dir_of(job->file) : kdc_xstrdup("");
    kdc_buf_put(&b, u->lang, strlen(u->lang) + 1);
    kdc_buf_put(&b, dir, strlen(dir) + 1);
    free(dir);
    for (int i = 0; i < job->argc; i++)
        kdc_buf_put(&b, job->argv[i], strlen(job->argv[i]) + 1);
    kdc_buf_put(&b, "\n", 1);
    kdc_buf_put(&b, u->dirs.v[0].text, strlen(u->dirs.v[0].text));
    u->key = (char *)b.v;
    u->keylen = b.n;
}

static int write_file(const char *path, const char *data, size_t len) {
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0)
        return -1;
    size_t off = 0;
    while (off < len) {
        ssize_t w = write(fd, data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            close(fd);
            return -1;
        }
        off += (size_t)w;
    }
    return close(fd);
}

/* Plans the preamble of u[lo, hi), units of one group that share their first `from`
 * directives with the preamble `parent` (or nothing: parent -1, from 0) and at least one
 * more, then, for each run of at least KDC_PREAMBLE_CHAIN_MIN of them sharing a longer
 * prefix, one chained on it (up to KDC_PREAMBLE_CHAIN_DEPTH deep): its header holds the
 * directives past this one's, parsed against this one's precompiled form. A unit is parsed
 * against the deepest preamble planned for it. Returns the preamble's index, or -1 when
 * its header cannot be written (*note says why). */
static int plan_run(kdc_preamble_plan_t *pl, const kdc_tu_job_t *jobs, const planned_t *u,
                    size_t lo, size_t hi, int parent, size_t from, int depth, char **note) {
    /* the longest run of leading directives every unit of u[lo, hi) has */
    size_t lcp = u[lo].dirs.n;
    for (size_t k = lo + 1; k < hi; k++) {
        size_t m = 0;
        while (m < lcp && m < u[k].dirs.n && !strcmp(u[k].dirs.v[m].text, u[lo].dirs.v[m].text))
            m++;
        lcp = m;
    }
    preamble_t pre = {0};
    size_t ix = pl->pre.n;
    char *hdir = kdc_xasprintf("%s/p%zu", pl->dir, ix);
    pre.header = kdc_xasprintf("%s/p.h", hdir);
    pre.pch = kdc_xasprintf("%s/p%zu.pch", pl->dir, ix);
    pre.lang = u[lo].lang;
    pre.ndirectives = lcp;
    pre.parent = parent;
    pre.first = &jobs[u[lo].job];
    /* a group of one directory (names_near): the names found next to its units are written
     * with that directory, where the units' parse finds them first */
    char *near_dir = u[lo].key[strlen(u[lo].lang) + 1] ? dir_of(jobs[u[lo].job].file) : NULL;
    kdc_buf_t text = {0}, header = {0};
    KDC_VEC(char *) beside = {0}; /* names looked up next to the header first */
    for (size_t m = 0; m < lcp; m++) {
        const char *d = u[lo].dirs.v[m].text;
        kdc_buf_put(&text, d, strlen(d));
        kdc_buf_put(&text, "\n", 1);
        if (m < from)
            continue;
        char *name = quoted_name(d);
        char *near =
            name && name[0] != '/' && near_dir ? kdc_xasprintf("%s/%s", near_dir, name) : NULL;
        if (near && access(near, F_OK) == 0) {
            kdc_buf_put(&header, "#include \"", 10);
            kdc_buf_put(&header, near, strlen(near));
            kdc_buf_put(&header, "\"\n", 2);
        } else {
            kdc_buf_put(&header, d, strlen(d));
            kdc_buf_put(&header, "\n", 1);
            if (name && name[0] != '/')
                KDC_VEC_PUSH(beside, kdc_xstrdup(name));
        }
        free(near);
        free(name);
    }
    free(near_dir);
    kdc_buf_put(&text, "", 1);
    pre.text = (char *)text.v;
    const char *why = NULL;
    if (mkdir(hdir, 0700) != 0 || write_file(pre.header, (const char *)header.v, header.n) != 0)
        why = strerror(errno);
    /* nothing but the header is next to it (names climbing out with ".." share nothing:
     * names_near), so a name found there is the header itself */
    for (size_t k = 0; k < beside.n; k++) {
        char *at = kdc_xasprintf("%s/%s", hdir, beside.v[k]);
        if (!why && access(at, F_OK) == 0) {
            why = "a quoted include names the preamble's own header";
            unlink(pre.header);
            rmdir(hdir);
        }
        free(at);
        free(beside.v[k]);
    }
    free(beside.v);
    kdc_buf_free(&header);
    if (why) {
        *note = kdc_xasprintf("no shared preamble for %zu units: %s: %s", hi - lo, pre.header, why);
        free(pre.header);
        free(pre.text);
        free(pre.pch);
        free(hdir);
        return -1;
    }
    free(hdir);
    KDC_VEC_PUSH(pl->pre, pre);
    for (size_t k = lo; k < hi; k++) {
        pl->pre_of[u[k].job] = (int)ix;
        pl->blank_end[u[k].job] = u[k].dirs.v[lcp - 1].end;
    }
    if (depth >= KDC_PREAMBLE_CHAIN_DEPTH)
        return (int)ix;
    /* the runs that share the next directive too (units end their prefix here first) */
    for (size_t a = lo, b; a < hi; a = b) {
        if (u[a].dirs.n <= lcp) {
            b = a + 1;
            continue;
        }
        for (b = a + 1;
             b < hi && u[b].dirs.n > lcp && !strcmp(u[b].dirs.v[lcp].text, u[a].dirs.v[lcp].text);
             b++)
            ;
        if (b - a >= KDC_PREAMBLE_CHAIN_MIN)
            plan_run(pl, jobs, u, a, b, (int)ix, lcp, depth + 1, note);
    }
    return (int)ix;
}

/* ---------- the run's directory ---------- */

#define RUN_DIR_PREFIX "kdc-lint-preambles."
/* A file of the run's directory that the run holds an exclusive flock(2) on for as long as
 * one of its processes lives: the kernel releases it when the last of them ends, SIGKILL
 * included. */
#define OWNER_LOCK "owner.lock"

/* Opens dir's entry name when it is a directory of the same mount as dir: no symbolic link
 * is followed and no mount point entered, a bind mount of the same file system included
 * (openat2's RESOLVE_NO_XDEV, Linux 5.6). Where there is no openat2, the same device as
 * dir's (dev) stands in for the same mount. -1 otherwise. */
static int open_subdir(int dir, dev_t dev, const char *name) {
    struct open_how how = {.flags = O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC,
                           .resolve = RESOLVE_NO_XDEV | RESOLVE_NO_SYMLINKS | RESOLVE_BENEATH};
    long sub = syscall(SYS_openat2, dir, name, &how, sizeof how);
    /* no openat2 here, or a container's seccomp filter refuses it */
    if (sub >= 0 || (errno != ENOSYS && errno != EPERM && errno != EINVAL && errno != E2BIG))
        return (int)sub;
    sub = openat(dir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    struct stat st;
    if (sub >= 0 && (fstat((int)sub, &st) != 0 || st.st_dev != dev)) {
        close((int)sub);
        sub = -1;
    }
    return (int)sub;
}

/* Calls fn(dir, entry name, arg) for each entry of directory dfd but . and ..; stops at the
 * first nonzero result, which it returns. */
static int each_entry(int dfd, int (*fn)(int, const char *, void *), void *arg) {
    /* opened again, not dup(): a duplicate shares the offset that an earlier pass ended */
    int fd = openat(dfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    DIR *d = fd >= 0 ? fdopendir(fd) : NULL;
    if (!d) {
        if (fd >= 0)
            close(fd);
        return -1;
    }
    int r = 0;
    struct dirent *de;
    while (!r && (de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            r = fn(dirfd(d), de->d_name, arg);
    closedir(d);
    return r;
}

/* What remove_within removes: regular files and symbolic links, and directories of the
 * same mount (open_subdir) holding only those, down to depth levels (a run's directory holds
 * its headers' directories: one level). */
struct removal {
    int depth;
    const char *last; /* an entry removed after all others (the lock), or NULL */
};

static int removable_cb(int dir, const char *name, void *arg) {
    const struct removal *rm = arg;
    struct stat st, here;
    if (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return 1;
    if (S_ISREG(st.st_mode) || S_ISLNK(st.st_mode))
        return 0;
    if (!S_ISDIR(st.st_mode) || rm->depth <= 0 || fstat(dir, &here) != 0)
        return 1;
    int sub = open_subdir(dir, here.st_dev, name);
    if (sub < 0)
        return 1;
    struct removal below = {rm->depth - 1, NULL};
    int r = each_entry(sub, removable_cb, &below);
    close(sub);
    return r != 0;
}

static int remove_cb(int dir, const char *name, void *arg) {
    const struct removal *rm = arg;
    struct stat here;
    if ((rm->last && !strcmp(name, rm->last)) || unlinkat(dir, name, 0) == 0 || errno != EISDIR ||
        rm->depth <= 0 || fstat(dir, &here) != 0)
        return 0;
    int sub = open_subdir(dir, here.st_dev, name);
    if (sub >= 0) {
        struct removal below = {rm->depth - 1, NULL};
        each_entry(sub, remove_cb, &below);
        close(sub);
        unlinkat(dir, name, AT_REMOVEDIR);
    }
    return 0;
}

/* Removes the entries of directory dfd as struct removal says, rm->last after all others;
 * no mount point is entered, no symbolic link followed. */
static void remove_within(int dfd, const struct removal *rm) {
    each_entry(dfd, remove_cb, (void *)rm);
    if (rm->last)
        unlinkat(dfd, rm->last, 0);
}

/* Makes dir's OWNER_LOCK, locked: created under another name and renamed once locked, so a
 * sweep (below) never finds it unlocked while this run lives. The descriptor, or -1 (the
 * file system refuses: the directory is only removed by this run, as before). Worker
 * processes inherit it, so the lock lasts while any process of the run does. */
static int own(const char *dir) {
    char *fresh = kdc_xasprintf("%s/" OWNER_LOCK ".new", dir);
    char *name = kdc_xasprintf("%s/" OWNER_LOCK, dir);
    int fd = open(fresh, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd >= 0 && (flock(fd, LOCK_EX | LOCK_NB) != 0 || rename(fresh, name) != 0)) {
        unlink(fresh);
        close(fd);
        fd = -1;
    }
    free(fresh);
    free(name);
    return fd;
}

/* Removes the directories that runs killed before their end (SIGKILL, a machine's OOM
 * killer, a CI job's timeout) left in tmp: those named like a run's, owned by this user,
 * whose OWNER_LOCK no process holds, whole or not at all. A directory without that file (a
 * run that could not lock one, or another program's), a symbolic link, another user's, a
 * mount point, or one that holds a mount point or more than a run writes is left alone. */
static void sweep_stale(const char *tmp) {
    DIR *d = opendir(tmp);
    struct stat tmp_st;
    if (d && fstat(dirfd(d), &tmp_st) != 0) {
        closedir(d);
        d = NULL;
    }
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        if (strncmp(de->d_name, RUN_DIR_PREFIX, sizeof RUN_DIR_PREFIX - 1))
            continue;
        int fd = open_subdir(dirfd(d), tmp_st.st_dev, de->d_name);
        if (fd < 0)
            continue;
        /* the lock a regular file: no FIFO or device is opened */
        struct stat st, lst;
        int lock = fstat(fd, &st) == 0 && st.st_uid == geteuid() &&
                           fstatat(fd, OWNER_LOCK, &lst, AT_SYMLINK_NOFOLLOW) == 0 &&
                           S_ISREG(lst.st_mode)
                       ? openat(fd, OWNER_LOCK, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                       : -1;
        /* All of it or nothing (a directory that holds what no run writes is not a run's),
         * the lock last: a sweep killed halfway leaves the lock for the next. */
        struct removal rm = {1, OWNER_LOCK};
        if (lock >= 0 && fstat(lock, &lst) == 0 && S_ISREG(lst.st_mode) &&
            flock(lock, LOCK_EX | LOCK_NB) == 0 && each_entry(fd, removable_cb, &rm) == 0) {
            remove_within(fd, &rm);
            unlinkat(dirfd(d), de->d_name, AT_REMOVEDIR);
        }
        if (lock >= 0)
            close(lock);
        close(fd);
    }
    closedir(d);
}

kdc_preamble_plan_t *kdc_preamble_plan(const kdc_tu_job_t *jobs, const size_t *idx, size_t n,
                                       char **note) {
    *note = NULL;
    if (n < 2)
        return NULL;
    planned_t *u = calloc(n, sizeof *u);
    if (!u)
        kdc_oom();
    size_t nu = 0, maxjob = 0;
    for (size_t i = 0; i < n; i++) {
        const kdc_tu_job_t *job = &jobs[idx[i]];
        const char *lang = header_lang(job);
        if (!lang)
            continue;
        FILE *f = kdc_fopen_regular(job->file);
        if (!f)
            continue;
        char *buf = malloc(KDC_PREAMBLE_SCAN_MAX);
        if (!buf)
            kdc_oom();
        size_t len = fread(buf, 1, KDC_PREAMBLE_SCAN_MAX, f);
        fclose(f);
        planned_t *p = &u[nu];
        scan(buf, len, &p->dirs);
        free(buf);
        if (!p->dirs.n)
            continue;
        p->job = idx[i];
        p->lang = lang;
        char *dir = dir_of(job->file);
        p->near = names_near(p, job, dir);
        free(dir);
        if (p->near < 0) {
            directives_free(&p->dirs);
            continue;
        }
        make_key(p, job, 1);
        if (p->job > maxjob)
            maxjob = p->job;
        nu++;
    }
    /* A unit whose prefix names nothing next to it but what the search path gives joins the
     * group of its directory when that group has units whose prefix does (their header
     * names the files found next to them by that directory: for this unit, the same files
     * through the same directory), and otherwise a group of any directory. */
    const planned_t **near = malloc((nu ? nu : 1) * sizeof *near);
    if (!near)
        kdc_oom();
    size_t nnear = 0;
    for (size_t i = 0; i < nu; i++)
        if (u[i].near)
            near[nnear++] = &u[i];
    qsort(near, nnear, sizeof *near, by_key_only);
    for (size_t i = 0; i < nu; i++) {
        const planned_t *me = &u[i];
        if (!me->near && !bsearch(&me, near, nnear, sizeof *near, by_key_only))
            make_key(&u[i], &jobs[u[i].job], 0);
    }
    free(near);
    qsort(u, nu, sizeof *u, by_key);
    kdc_preamble_plan_t *pl = NULL;
    for (size_t g = 0; g < nu;) {
        size_t e = g + 1;
        while (e < nu && u[e].keylen == u[g].keylen && !memcmp(u[e].key, u[g].key, u[g].keylen))
            e++;
        if (e - g < 2) {
            g = e;
            continue;
        }
        if (!pl) {
            pl = calloc(1, sizeof *pl);
            if (!pl)
                kdc_oom();
            const char *tmp = getenv("TMPDIR");
            tmp = tmp && *tmp ? tmp : "/tmp";
            /* absolute: the parses run in the units' directories (-working-directory) */
            char *abs_tmp = *tmp == '/' ? NULL : realpath(tmp, NULL);
            if (abs_tmp)
                tmp = abs_tmp;
            sweep_stale(tmp);
            pl->dir = kdc_xasprintf("%s/" RUN_DIR_PREFIX "XXXXXX", tmp);
            free(abs_tmp);
            pl->owner_fd = -1;
            if (!mkdtemp(pl->dir)) {
                *note = kdc_xasprintf("no shared preambles: cannot make a directory %s: %s",
                                      pl->dir, strerror(errno));
                free(pl->dir);
                free(pl);
                pl = NULL;
                break;
            }
            pl->owner_fd = own(pl->dir);
            pl->njobs = maxjob + 1;
            pl->pre_of = malloc(pl->njobs * sizeof *pl->pre_of);
            pl->blank_end = calloc(pl->njobs, sizeof *pl->blank_end);
            if (!pl->pre_of || !pl->blank_end)
                kdc_oom();
            for (size_t j = 0; j < pl->njobs; j++)
                pl->pre_of[j] = -1;
        }
        plan_run(pl, jobs, u, g, e, -1, 0, 1, note);
        g = e;
    }
    for (size_t i = 0; i < nu; i++) {
        directives_free(&u[i].dirs);
        free(u[i].key);
    }
    free(u);
    return pl;
}

void kdc_preamble_remove_files(const kdc_preamble_plan_t *pl) {
    if (!pl)
        return;
    int fd = open(pl->dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
    if (fd >= 0) {
        remove_within(fd, &(const struct removal){1, NULL});
        close(fd);
    }
    rmdir(pl->dir);
}

void kdc_preamble_plan_free(kdc_preamble_plan_t *pl) {
    if (!pl)
        return;
    kdc_preamble_remove_files(pl);
    if (pl->owner_fd >= 0)
        close(pl->owner_fd);
    for (size_t i = 0; i < pl->pre.n; i++) {
        preamble_t *p = &pl->pre.v[i];
        free(p->header);
        free(p->text);
        free(p->pch);
        for (size_t k = 0; k < p->deps.n; k++)
            free(p->deps.v[k]);
        free(p->deps.v);
    }
    free(pl->pre.v);
    free(pl->install_dir);
    free(pl->pre_of);
    free(pl->blank_end);
    free(pl->dir);
    free(pl);
}

size_t kdc_preamble_count(const kdc_preamble_plan_t *pl) {
    return pl ? pl->pre.n : 0;
}

unsigned long long kdc_preamble_disk_bytes(const kdc_preamble_plan_t *pl) {
    unsigned long long total = 0;
    DIR *d = pl ? opendir(pl->dir) : NULL;
    if (!d)
        return 0;
    struct dirent *de;
    struct stat st;
    while ((de = readdir(d)))
        if (fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) == 0 && S_ISREG(st.st_mode))
            total += (unsigned long long)st.st_size;
    closedir(d);
    return total;
}

/* ---------- building a preamble, once for all processes ---------- */

/* The directory libclang's driver takes for its own installation, for C++ preambles: the
 * LLVM installation's bin/ next to the lib/ libclang is in (/usr/lib/llvm-14/bin). Without
 * it the driver has none ("") and finds GCC's libstdc++ through
 * "/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12", which a precompiled header
 * would record as "/include/c++/12" (kdc_parse_save_pch refuses such a header); with it,
 * through /usr/lib/gcc, whose ".." lead where they say. NULL when libclang's file is not
 * known. */
static const char *install_dir(kdc_preamble_plan_t *pl) {
    if (!pl->install_known) {
        pl->install_known = 1;
        char *lib = kdc_libclang_file();
        char *slash = lib ? strrchr(lib, '/') : NULL;
        if (slash) {
            *slash = '\0';
            char *up = strrchr(lib, '/');
            if (up) {
                *up = '\0';
                pl->install_dir = kdc_xasprintf("%s/bin", *lib ? lib : "");
            }
        }
        free(lib);
    }
    return pl->install_dir;
}

/* Appends what a C++ preamble's parses (its build and its units') add to the units' own
 * arguments: the same for both, or the precompiled header would not match. */
static void install_args(kdc_preamble_plan_t *pl, const preamble_t *p, argv_t *v) {
    const char *dir = strcmp(p->lang, "c++-header") ? NULL : install_dir(pl);
    if (dir) {
        KDC_VEC_PUSH(*v, "-ccc-install-dir");
        KDC_VEC_PUSH(*v, dir);
    }
}

typedef struct deps_ctx {
    const char *skip_dir; /* the plan's own files are not the unit's */
    size_t skip_len;
    kdc_buf_t *out; /* paths, each ended by a newline */
} deps_ctx_t;

static void collect_dep(void *arg, const char *path) {
    deps_ctx_t *c = arg;
    if (!strncmp(path, c->skip_dir, c->skip_len) && path[c->skip_len] == '/')
        return;
    if (strchr(path, '\n'))
        return; /* cannot be listed; the unit's own parse would name it */
    kdc_buf_put(c->out, path, strlen(path));
    kdc_buf_put(c->out, "\n", 1);
}

static void load_deps(preamble_t *p, const char *path) {
    size_t len = 0;
    char *why = NULL;
    char *all = kdc_read_regular(path, 0, &len, &why);
    free(why);
    if (!all) {
        p->state = -1;
        return;
    }
    for (char *s = all, *nl; (nl = strchr(s, '\n')); s = nl + 1) {
        char *dep = kdc_xasprintf("%.*s", (int)(nl - s), s);
        KDC_VEC_PUSH(p->deps, dep);
    }
    free(all);
    p->state = 1;
}

/* Makes p ready in this process: its precompiled header built by whichever process of the
 * run came first, under the lock; built here when none has. */
static void ensure(kdc_preamble_plan_t *pl, preamble_t *p, kdc_parser_t *ps,
                   kdc_preamble_use_t *use) {
    if (p->state)
        return;
    const preamble_t *parent = NULL;
    if (p->parent >= 0) {
        /* (pl->pre does not grow once planned: the pointers hold) */
        ensure(pl, &pl->pre.v[p->parent], ps, use);
        parent = &pl->pre.v[p->parent];
        if (parent->state != 1) {
            p->state = -1;
            return;
        }
    }
    char *lock = kdc_xasprintf("%s.lock", p->pch);
    char *failed = kdc_xasprintf("%s.failed", p->pch);
    char *deps = kdc_xasprintf("%s.deps", p->pch);
    int fd = open(lock, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
    while (fd >= 0 && flock(fd, LOCK_EX) != 0 && errno == EINTR)
        ;
    struct stat st;
    if (fd < 0) {
        p->state = -1;
    } else if (stat(p->pch, &st) == 0) {
        load_deps(p, deps);
    } else if (stat(failed, &st) == 0) {
        p->state = -1;
    } else {
        double t0 = kdc_now_seconds();
        argv_t argv = {0};
        for (int i = 0; i < p->first->argc; i++)
            KDC_VEC_PUSH(argv, p->first->argv[i]);
        install_args(pl, p, &argv);
        KDC_VEC_PUSH(argv, "-x");
        KDC_VEC_PUSH(argv, p->lang);
        if (parent) {
            KDC_VEC_PUSH(argv, "-include-pch");
            KDC_VEC_PUSH(argv, parent->pch);
        }
        char *tmp = kdc_xasprintf("%s.tmp.%ld", p->pch, (long)getpid());
        kdc_buf_t list = {0};
        for (size_t k = 0; parent && k < parent->deps.n; k++) { /* what the chain holds too */
            kdc_buf_put(&list, parent->deps.v[k], strlen(parent->deps.v[k]));
            kdc_buf_put(&list, "\n", 1);
        }
        deps_ctx_t dc = {pl->dir, strlen(pl->dir), &list};
        char *err = NULL;
        int rc =
            kdc_parse_save_pch(ps, p->header, argv.v, (int)argv.n, tmp, collect_dep, &dc, &err);
        char *tmpdeps = kdc_xasprintf("%s.tmp.%ld", deps, (long)getpid());
        if (rc == 0 && write_file(tmpdeps, (const char *)list.v, list.n) == 0 &&
            rename(tmpdeps, deps) == 0 && rename(tmp, p->pch) == 0) {
            load_deps(p, deps);
            use->built++;
        } else {
            unlink(tmp);
            unlink(tmpdeps);
            if (write_file(failed, err ? err : "", err ? strlen(err) : 0) != 0) {
                /* the state below holds in this process; another one tries again */
            }
            p->state = -1;
        }
        use->build_s += kdc_now_seconds() - t0;
        free(tmpdeps);
        free(err);
        kdc_buf_free(&list);
        free(tmp);
        free(argv.v);
    }
    if (fd >= 0)
        close(fd); /* and the lock with it */
    free(lock);
    free(failed);
    free(deps);
}

int kdc_preamble_parse(kdc_preamble_plan_t *pl, size_t job, kdc_parser_t *ps, kdc_program_t *p,
                       const kdc_tu_job_t *tu, kdc_parse_file_fn file_fn, void *arg, char **err,
                       kdc_preamble_use_t *use) {
    memset(use, 0, sizeof *use);
    int ix = pl && job < pl->njobs ? pl->pre_of[job] : -1;
    if (ix < 0)
        return kdc_parse_tu_files(ps, p, tu->file, (const char *const *)tu->argv, tu->argc, file_fn,
                                  arg, err);
    preamble_t *pre = &pl->pre.v[ix];
    ensure(pl, pre, ps, use);
    size_t len = 0;
    char *why = NULL;
    char *src = pre->state == 1 ? kdc_read_regular(tu->file, 0, &len, &why) : NULL;
    free(why);
    /* the prefix read now must be the one planned (the file may have changed since) */
    size_t end = pl->blank_end[job];
    int same = 0;
    if (src && end < len) {
        directives_t d = {0};
        scan(src, end + 1, &d);
        same = d.n >= pre->ndirectives && d.v[pre->ndirectives - 1].end == end;
        if (same) {
            kdc_buf_t now = {0};
            for (size_t m = 0; m < pre->ndirectives; m++) {
                kdc_buf_put(&now, d.v[m].text, strlen(d.v[m].text));
                kdc_buf_put(&now, "\n", 1);
            }
            same = now.n == strlen(pre->text) && !memcmp(now.v, pre->text, now.n);
            kdc_buf_free(&now);
        }
        directives_free(&d);
    }
    if (same) {
        for (size_t i = 0; i < end; i++)
            if (src[i] != '\n')
                src[i] = ' ';
        argv_t argv = {0};
        for (int i = 0; i < tu->argc; i++)
            KDC_VEC_PUSH(argv, tu->argv[i]);
        install_args(pl, pre, &argv);
        KDC_VEC_PUSH(argv, "-include-pch");
        KDC_VEC_PUSH(argv, pre->pch);
        int rc =
            kdc_parse_tu_contents(ps, p, tu->file, argv.v, (int)argv.n, src, len, pre->pch,
                                  (const char *const *)pre->deps.v, pre->deps.n, file_fn, arg, err);
        free(argv.v);
        if (rc == 0) {
            free(src);
            use->with_preamble = 1;
            for (size_t k = 0; file_fn && k < pre->deps.n; k++)
                file_fn(arg, pre->deps.v[k]);
            return 0;
        }
        /* a compile error, or no parse at all: the unit's own parse says what it says */
        if (rc < 0) {
            free(*err);
            *err = NULL;
        }
        use->fell_back = 1;
    }
    free(src);
    return kdc_parse_tu_files(ps, p, tu->file, (const char *const *)tu->argv, tu->argc, file_fn,
                              arg, err);
}
