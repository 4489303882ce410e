/* open() for libclang (see openguard.h). */
#define _GNU_SOURCE
#include "openguard.h"
#include "regfile.h"
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static int guarding;
static char *refused; /* the first refusal of the current guard */

static int sys_open(const char *path, int flags, mode_t mode) {
    return (int)syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}

void kdc_openguard_begin(void) {
    free(refused);
    refused = NULL;
    guarding = 1;
}

char *kdc_openguard_end(void) {
    guarding = 0;
    char *r = refused;
    refused = NULL;
    return r;
}

/* The guarded read: regular files and directories only. */
static int guarded_open(const char *path, int flags) {
    int fd = sys_open(path, flags | O_NONBLOCK | O_NOCTTY, 0);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0) {
        int e = errno;
        close(fd);
        errno = e;
        return -1;
    }
    if (S_ISREG(st.st_mode) || S_ISDIR(st.st_mode)) {
        if (!(flags & O_NONBLOCK))
            fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK);
        return fd;
    }
    close(fd);
    if (!refused)
        refused = kdc_xasprintf("%s: %s, not a regular file", path, kdc_file_kind(st.st_mode));
    errno = EACCES;
    return -1;
}

int open(const char *path, int flags, ...) {
    mode_t mode = 0;
    if (flags & (O_CREAT | __O_TMPFILE)) {
        va_list ap;
        va_start(ap, flags);
        mode = va_arg(ap, mode_t);
        va_end(ap);
    }
    if (guarding && (flags & O_ACCMODE) == O_RDONLY && !(flags & (O_CREAT | __O_TMPFILE)))
        return guarded_open(path, flags);
    return sys_open(path, flags, mode);
}

/* The same entry under its large-file name (one function on 64-bit glibc). */
int open64(const char *path, int flags, ...) __attribute__((alias("open")));
