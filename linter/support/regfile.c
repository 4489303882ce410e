/* Regular files only (see regfile.h). */
#define _GNU_SOURCE
#include "regfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char *kdc_file_kind(mode_t mode) {
    switch (mode & S_IFMT) {
    case S_IFDIR:
        return "a directory";
    case S_IFIFO:
        return "a FIFO";
    case S_IFCHR:
        return "a character device";
    case S_IFBLK:
        return "a block device";
    case S_IFSOCK:
        return "a socket";
    case S_IFLNK:
        return "a symbolic link";
    default:
        return "not a regular file";
    }
}

int kdc_open_regular(const char *path, char **why) {
    *why = NULL;
    /* O_NONBLOCK: opening a FIFO does not wait for a writer; O_NOCTTY: a terminal
     * does not become ours. Neither matters for a regular file, which is all we keep. */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
    if (fd < 0) {
        *why = kdc_xstrdup(strerror(errno));
        return -1;
    }
    struct stat st;
    if (fstat(fd, &st) != 0) {
        *why = kdc_xstrdup(strerror(errno));
        close(fd);
        return -1;
    }
    if (!S_ISREG(st.st_mode)) {
        *why = kdc_xasprintf("%s, not a regular file", kdc_file_kind(st.st_mode));
        close(fd);
        errno = EINVAL;
        return -1;
    }
    int fl = fcntl(fd, F_GETFL);
    if (fl >= 0)
        fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
    return fd;
}

FILE *kdc_fopen_regular(const char *path) {
    char *why = NULL;
    int fd = kdc_open_regular(path, &why);
    free(why);
    if (fd < 0)
        return NULL;
    FILE *f = fdopen(fd, "r");
    if (!f)
        close(fd);
    return f;
}

char *kdc_read_regular(const char *path, size_t max, size_t *len, char **why) {
    int fd = kdc_open_regular(path, why);
    if (fd < 0)
        return NULL;
    struct stat st;
    size_t cap = fstat(fd, &st) == 0 && st.st_size > 0 ? (size_t)st.st_size + 1 : 4096;
    if (max && cap > max + 1)
        cap = max + 1;
    char *buf = kdc_xrealloc(NULL, cap);
    size_t n = 0;
    for (;;) {
        if (n + 1 >= cap) {
            if (max && n > max)
                break;
            buf = kdc_xrealloc(buf, cap *= 2);
        }
        ssize_t r = read(fd, buf + n, cap - 1 - n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            *why = kdc_xstrdup(strerror(errno));
            free(buf);
            close(fd);
            return NULL;
        }
        if (r == 0)
            break;
        n += (size_t)r;
    }
    close(fd);
    if (max && n > max) {
        *why = kdc_xasprintf("larger than %zu bytes", max);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    *len = n;
    return buf;
}

int kdc_regular_has_nul(const char *path) {
    char *why = NULL;
    int fd = kdc_open_regular(path, &why);
    free(why);
    if (fd < 0)
        return -1;
    char buf[65536];
    ssize_t n;
    int nul = 0;
    while (!nul && ((n = read(fd, buf, sizeof buf)) > 0 || (n < 0 && errno == EINTR)))
        nul = n > 0 && memchr(buf, 0, (size_t)n) != NULL;
    close(fd);
    return n < 0 && !nul ? -1 : nul;
}

char *kdc_replaceable_target(const char *path, char **why) {
    *why = NULL;
    struct stat st;
    if (lstat(path, &st) != 0) {
        if (errno == ENOENT)
            return kdc_xstrdup(path); /* a new file */
        *why = kdc_xstrdup(strerror(errno));
        return NULL;
    }
    if (S_ISREG(st.st_mode))
        return kdc_xstrdup(path);
    if (!S_ISLNK(st.st_mode)) {
        *why = kdc_xasprintf("%s, not a regular file: not replacing it", kdc_file_kind(st.st_mode));
        return NULL;
    }
    /* a link: what it names, followed to the end (replacing the link itself would turn
     * a link the user made into a file; a link that names nothing is refused, so that a
     * planted link cannot make kdc-lint create a file anywhere on disk) */
    char *real = realpath(path, NULL);
    if (!real) {
        *why = errno == ENOENT ? kdc_xstrdup("a symbolic link that names nothing: not "
                                             "following it")
                               : kdc_xstrdup(strerror(errno));
        return NULL;
    }
    if (stat(real, &st) != 0 || !S_ISREG(st.st_mode)) {
        *why = kdc_xasprintf("a symbolic link to %s, not a regular file: not replacing it",
                             kdc_file_kind(stat(real, &st) == 0 ? st.st_mode : 0));
        free(real);
        return NULL;
    }
    return real;
}
