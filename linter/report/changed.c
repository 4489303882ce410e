/* --changed-since=REV: the files changed since a git revision; see changed.h. */
#define _GNU_SOURCE
#include "changed.h"
#include "termsig.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

extern char **environ;

typedef struct buf {
    char *p;
    size_t n, cap;
} buf_t;

static void buf_add(buf_t *b, const char *data, size_t n) {
    if (b->n + n + 1 > b->cap) {
        b->cap = (b->n + n + 1) * 2;
        b->p = kdc_xrealloc(b->p, b->cap);
    }
    memcpy(b->p + b->n, data, n);
    b->n += n;
    b->p[b->n] = 0;
}

/* Runs git with argv (argv[0] is "git"); its stdout in *out (NUL-terminated,
 * *outlen bytes), the first line of its stderr in *msg. Returns its exit
 * status, or -1 when it could not be started (*msg says why). */
static int run_git(char *const argv[], char **out, size_t *outlen, char **msg) {
    int po[2], pe[2];
    *out = NULL;
    *msg = NULL;
    if (pipe2(po, O_CLOEXEC) != 0)
        goto fail;
    if (pipe2(pe, O_CLOEXEC) != 0) {
        close(po[0]);
        close(po[1]);
        goto fail;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, po[1], STDOUT_FILENO);
    posix_spawn_file_actions_adddup2(&fa, pe[1], STDERR_FILENO);
    posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
    /* git takes the signals kdc-lint's threads hold (termsig.h) as it would anywhere */
    posix_spawnattr_t at;
    sigset_t none, term;
    sigemptyset(&none);
    kdc_termsig_set(&term);
    posix_spawnattr_init(&at);
    posix_spawnattr_setsigmask(&at, &none);
    posix_spawnattr_setsigdefault(&at, &term);
    posix_spawnattr_setflags(&at, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
    pid_t pid;
    int rc = posix_spawnp(&pid, "git", &fa, &at, argv, environ);
    posix_spawnattr_destroy(&at);
    posix_spawn_file_actions_destroy(&fa);
    close(po[1]);
    close(pe[1]);
    if (rc != 0) {
        close(po[0]);
        close(pe[0]);
        *msg = kdc_xasprintf("cannot run git: %s", strerror(rc));
        return -1;
    }
    buf_t bo = {0}, be = {0};
    struct pollfd fds[2] = {{po[0], POLLIN, 0}, {pe[0], POLLIN, 0}};
    int open_fds = 2;
    while (open_fds) {
        if (poll(fds, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[8192];
            ssize_t got = read(fds[i].fd, chunk, sizeof chunk);
            if (got > 0) {
                buf_add(i ? &be : &bo, chunk, (size_t)got);
            } else if (got == 0 || errno != EINTR) {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    for (int i = 0; i < 2; i++)
        if (fds[i].fd >= 0)
            close(fds[i].fd);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    buf_add(&bo, "", 0);
    buf_add(&be, "", 0);
    *out = bo.p;
    *outlen = bo.n;
    be.p[strcspn(be.p, "\n")] = 0;
    *msg = be.p;
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128;
fail:
    *msg = kdc_xasprintf("cannot run git: %s", strerror(errno));
    return -1;
}

int kdc_git_tracks_files_in(const char *dir) {
    char *const argv[] = {"git", "-C", (char *)dir, "ls-files", "-z", "--", ".", NULL};
    char *out = NULL, *msg = NULL;
    size_t len = 0;
    int rc = run_git(argv, &out, &len, &msg);
    int tracked = rc == 0 && out && out[0];
    free(out);
    free(msg);
    return tracked;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Adds the NUL-separated repository-relative paths of `list` (git -z output). */
static void add_paths(kdc_changed_t *c, size_t *cap, const char *top, const char *list,
                      size_t len) {
    for (size_t i = 0; i < len;) {
        const char *name = list + i;
        size_t n = strlen(name);
        i += n + 1;
        if (!n)
            continue;
        char *path = kdc_xasprintf("%s/%s", top, name);
        char *real = realpath(path, NULL);
        if (c->n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            c->files = kdc_xrealloc(c->files, *cap * sizeof *c->files);
        }
        c->files[c->n++] = real ? real : path;
        if (real)
            free(path);
    }
}

int kdc_changed_collect(const char *rev, const char *dir, kdc_changed_t *out, char **err) {
    memset(out, 0, sizeof *out);
    out->rev = kdc_xstrdup(rev);
    char *text = NULL, *msg = NULL, *top = NULL;
    size_t len = 0, cap = 0;
    int rc;

    char *const toplevel[] = {"git", "-C", (char *)dir, "rev-parse", "--show-toplevel", NULL};
    if ((rc = run_git(toplevel, &text, &len, &msg)) != 0) {
        char *real = realpath(dir, NULL);
        *err = rc < 0 ? kdc_xasprintf("%s", msg)
                      : kdc_xasprintf("%s is not in a git repository (git: %s)",
                                      real ? real : dir, msg);
        free(real);
        goto fail;
    }
    text[strcspn(text, "\n")] = 0;
    top = kdc_xstrdup(text);
    free(text);
    free(msg);

    /* the revision, never read as an option */
    char *spec = kdc_xasprintf("%s^{commit}", rev);
    char *const verify[] = {"git", "-C", top, "rev-parse", "--verify", "--quiet",
                            "--end-of-options", spec, NULL};
    rc = run_git(verify, &text, &len, &msg);
    free(spec);
    if (rc != 0) {
        *err = rc < 0 ? kdc_xasprintf("%s", msg)
                      : kdc_xasprintf("'%s' is not a commit in %s", rev, top);
        goto fail;
    }
    text[strcspn(text, "\n")] = 0;
    out->commit = kdc_xstrdup(text);
    free(text);
    free(msg);

    /* changed between the commit and the working tree; renames as delete + add */
    char *const diff[] = {"git", "-C", top, "diff", "--name-only", "-z", "--no-renames",
                          "--no-ext-diff", "--no-textconv", out->commit, "--", NULL};
    if ((rc = run_git(diff, &text, &len, &msg)) != 0) {
        *err = kdc_xasprintf("git diff %s: %s", rev, msg);
        goto fail;
    }
    add_paths(out, &cap, top, text, len);
    free(text);
    free(msg);

    /* new files not added yet */
    char *const others[] = {"git", "-C", top, "ls-files", "--others", "--exclude-standard", "-z",
                            NULL};
    if ((rc = run_git(others, &text, &len, &msg)) != 0) {
        *err = kdc_xasprintf("git ls-files: %s", msg);
        goto fail;
    }
    add_paths(out, &cap, top, text, len);
    free(text);
    free(msg);
    free(top);
    if (out->n)
        qsort(out->files, out->n, sizeof *out->files, cmp_str);
    return 0;

fail:
    free(text);
    free(msg);
    free(top);
    kdc_changed_free(out);
    return -1;
}

int kdc_changed_has(const kdc_changed_t *c, const char *file) {
    if (!file || !c->n)
        return 0;
    char *real = realpath(file, NULL);
    const char *key = real ? real : file;
    int found = bsearch(&key, c->files, c->n, sizeof *c->files, cmp_str) != NULL;
    free(real);
    return found;
}

static int in_changed_file(const kdc_changed_t *c, const kdc_finding_t *f) {
    if (kdc_changed_has(c, f->loc.file))
        return 1;
    for (size_t k = 0; k < f->nrelated; k++)
        if (kdc_changed_has(c, f->related[k].loc.file))
            return 1;
    return 0;
}

size_t kdc_changed_select(const kdc_changed_t *c, kdc_findings_t *fs) {
    kdc_findings_t dropped = {0};
    size_t kept = 0;
    for (size_t i = 0; i < fs->n; i++) {
        if (in_changed_file(c, &fs->v[i])) {
            fs->v[kept++] = fs->v[i];
            continue;
        }
        if (dropped.n == dropped.cap) {
            dropped.cap = dropped.cap ? dropped.cap * 2 : 16;
            dropped.v = kdc_xrealloc(dropped.v, dropped.cap * sizeof *dropped.v);
        }
        dropped.v[dropped.n++] = fs->v[i]; /* moved: freed below */
    }
    fs->n = kept;
    size_t n = kdc_findings_nshown(&dropped);
    kdc_findings_free(&dropped);
    return n;
}

void kdc_changed_free(kdc_changed_t *c) {
    for (size_t i = 0; i < c->n; i++)
        free(c->files[i]);
    free(c->files);
    free(c->rev);
    free(c->commit);
    memset(c, 0, sizeof *c);
}
