/* A fuzz target's private temporary directory (see fuzz_tmp.h). */
#define _GNU_SOURCE
#include "fuzz_tmp.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *dir;

static void remove_dir(void) {
    char *cmd = NULL;
    if (dir && asprintf(&cmd, "rm -rf '%s'", dir) > 0 && system(cmd) != 0)
        fprintf(stderr, "fuzz: cannot remove %s\n", dir);
    free(cmd);
}

const char *kdc_fuzz_dir(void) {
    if (dir)
        return dir;
    const char *tmp = getenv("TMPDIR");
    if (asprintf(&dir, "%s/kdc-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp") < 0 || !mkdtemp(dir)) {
        perror("fuzz: mkdtemp");
        abort();
    }
    atexit(remove_dir);
    return dir;
}

char *kdc_fuzz_write(const char *name, const void *data, size_t len) {
    char *path = NULL;
    if (asprintf(&path, "%s/%s", kdc_fuzz_dir(), name) < 0)
        abort();
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    if (fd < 0) {
        perror(path);
        abort();
    }
    for (size_t done = 0; done < len;) {
        ssize_t n = write(fd, (const char *)data + done, len - done);
        if (n <= 0) {
            perror(path);
            abort();
        }
        done += (size_t)n;
    }
    close(fd);
    return path;
}
