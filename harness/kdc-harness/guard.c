/* The services' cgroup and its guard (see internal.h, "guard.c").
 *
 * A daemon a service starts with setsid leaves the service's process group and,
 * once its parent is gone, is handed to kdc-harness (the child subreaper), which
 * kills it at the service's next stop. When kdc-harness itself is killed (SIGKILL:
 * no handler runs) the services die with it (PR_SET_PDEATHSIG), but such a daemon
 * goes to init and runs on. The kernel keeps the one record of every process a
 * service started, however it detached: its cgroup. So each service process joins
 * a cgroup of the run's own before exec, and a guard process, started before any
 * service, waits on a pipe whose only writer is kdc-harness: when the pipe ends
 * (kdc-harness ended, however) the guard kills everything in the cgroup
 * (cgroup.kill, Linux >= 5.14; else SIGKILL to each process it lists, until none is
 * left), removes the cgroup and exits.
 *
 * Needs a writable cgroup v2 hierarchy (root, or a delegated subtree); without one,
 * kdc-harness runs as before and says so once. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

static char group[4096];  /* the run's cgroup directory, "" when there is none */
static int procs_fd = -1; /* its cgroup.procs, open for writing */
static int guard_fd = -1; /* the write end of the guard's pipe */
static pid_t guard = -1;

static void nap_ms(long ms) {
        struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
                ;
}

/* The mount point of the cgroup v2 hierarchy and its root (from
 * /proc/self/mountinfo); 0, or -1 when none is mounted. */
static int cgroup2_mount(char *mnt, size_t mlen, char *root, size_t rlen) {
        FILE *f = fopen("/proc/self/mountinfo", "re");
        char *line = NULL;
        size_t cap = 0;
        int found = -1;

        while (f && found != 0 && getline(&line, &cap, f) > 0) {
                /* "ID PARENT MAJ:MIN ROOT MOUNTPOINT OPTS... - FSTYPE SOURCE SUPER" */
                char r[1024], m[1024];
                const char *sep = strstr(line, " - ");
                if (!sep || strncmp(sep + 3, "cgroup2 ", 8) != 0)
                        continue;
                if (sscanf(line, "%*s %*s %*s %1023s %1023s", r, m) == 2 &&
                    (size_t)snprintf(mnt, mlen, "%s", m) < mlen &&
                    (size_t)snprintf(root, rlen, "%s", r) < rlen)
                        found = 0;
        }
        free(line);
        if (f)
                fclose(f);
        return found;
}

/* This process's cgroup v2 path ("0::PATH" in /proc/self/cgroup). */
static int own_cgroup(char *path, size_t len) {
        FILE *f = fopen("/proc/self/cgroup", "re");
        char *line = NULL;
        size_t cap = 0;
        int found = -1;

        while (f && found != 0 && getline(&line, &cap, f) > 0)
                if (!strncmp(line, "0::", 3)) {
                        line[strcspn(line, "\n")] = '\0';
                        if ((size_t)snprintf(path, len, "%s", line + 3) < len)
                                found = 0;
                }
        free(line);
        if (f)
                fclose(f);
        return found;
}

static int write_file(const char *dir, const char *name, const char *text) {
        char path[4200];
        snprintf(path, sizeof path, "%s/%s", dir, name);
        int fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -1;
        ssize_t n = write(fd, text, strlen(text));
        int err = errno;
        close(fd);
        errno = err;
        return n == (ssize_t)strlen(text) ? 0 : -1;
}

/* How many processes the cgroup lists (0: empty), each sent SIGKILL when kill_them. */
static int listed(const char *dir, int kill_them) {
        char path[4200];
        snprintf(path, sizeof path, "%s/cgroup.procs", dir);
        FILE *f = fopen(path, "re");
        long pid;
        int n = 0;

        while (f && fscanf(f, "%ld", &pid) == 1) {
                if (kill_them)
                        kill((pid_t)pid, SIGKILL);
                n++;
        }
        if (f)
                fclose(f);
        return n;
}

/* The guard: waits for the end of the pipe on fd 3, then empties and removes the
 * cgroup. Never returns. */
static void guard_main(void) {
        char b;
        ssize_t n;

        while ((n = read(3, &b, 1)) > 0 || (n < 0 && errno == EINTR))
                ;
        int have_kill = write_file(group, "cgroup.kill", "1") == 0;
        /* a process leaves the cgroup when it exits (a zombie is no longer listed);
         * without cgroup.kill, a fork between listing and killing is listed next time */
        for (int i = 0; i < 250; i++) { /* 5 s */
                if (listed(group, !have_kill) == 0)
                        break;
                nap_ms(20);
        }
        for (int i = 0; i < 50 && rmdir(group) != 0 && errno == EBUSY; i++)
                nap_ms(20);
        _exit(0);
}

int tk_guard_start(char *why, size_t len) {
        char mnt[1024], root[1024], own[2048];
        int p[2];

        if (guard > 0)
                return 0;
        if (cgroup2_mount(mnt, sizeof mnt, root, sizeof root) != 0) {
                snprintf(why, len, "no cgroup v2 hierarchy is mounted");
                return KDC_ERR_NOENT;
        }
        if (own_cgroup(own, sizeof own) != 0) {
                snprintf(why, len, "/proc/self/cgroup names no cgroup v2 path");
                return KDC_ERR_NOENT;
        }
        /* own is relative to the hierarchy's root; the mount shows root at mnt */
        size_t rl = strcmp(root, "/") ? strlen(root) : 0;
        if (rl && strncmp(own, root, rl) != 0) {
                snprintf(why, len, "this process's cgroup %s is outside the mounted %s", own, root);
                return KDC_ERR_NOENT;
        }
        if ((size_t)snprintf(group, sizeof group, "%s%s/kdc-harness-%ld", mnt,
                             strcmp(own + rl, "/") ? own + rl : "",
                             (long)getpid()) >= sizeof group) {
                group[0] = '\0';
                snprintf(why, len, "the cgroup path is too long");
                return KDC_ERR_NOENT;
        }
        if (mkdir(group, 0755) != 0 &&
            !(errno == EEXIST && rmdir(group) == 0 && mkdir(group, 0755) == 0)) {
                snprintf(why, len, "cannot create %s: %s", group, strerror(errno));
                group[0] = '\0';
                return KDC_ERR_NOENT;
        }
        char path[4200];
        snprintf(path, sizeof path, "%s/cgroup.procs", group);
        if ((procs_fd = open(path, O_WRONLY | O_CLOEXEC)) < 0) {
                snprintf(why, len, "cannot open %s: %s", path, strerror(errno));
                rmdir(group);
                group[0] = '\0';
                return KDC_ERR_NOENT;
        }
        /* A process joins as a service will, to learn that it can (a domain cgroup
         * with controllers enabled takes no process: EBUSY, EOPNOTSUPP). */
        pid_t probe = fork();
        if (probe == 0)
                _exit(write(procs_fd, "0", 1) == 1 ? 0 : errno & 0x7f);
        int status = 0;
        while (probe > 0 && waitpid(probe, &status, 0) < 0 && errno == EINTR)
                ;
        if (probe < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
                snprintf(why, len, "a process cannot join %s: %s", group,
                         probe < 0           ? strerror(errno)
                         : WIFEXITED(status) ? strerror(WEXITSTATUS(status))
                                             : "the probe process died");
                goto undo;
        }
        if (pipe2(p, O_CLOEXEC) != 0) {
                snprintf(why, len, "pipe: %s", strerror(errno));
                goto undo;
        }
        fflush(NULL);
        if ((guard = fork()) < 0) {
                snprintf(why, len, "fork: %s", strerror(errno));
                close(p[0]);
                close(p[1]);
                goto undo;
        }
        if (guard == 0) {
                /* Outlives kdc-harness: a session of its own (no terminal's SIGINT),
                 * the interrupts ignored, nothing of kdc-harness's open but the pipe. */
                setsid();
                static const int ignored[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT, SIGPIPE};
                for (size_t i = 0; i < sizeof ignored / sizeof ignored[0]; i++)
                        signal(ignored[i], SIG_IGN);
                int null = open("/dev/null", O_RDWR);
                if (null < 0 || dup2(p[0], 3) < 0)
                        _exit(1);
                dup2(null, 0);
                dup2(null, 1);
                dup2(null, 2);
                close_range(4, ~0U, 0);
                guard_main();
        }
        close(p[0]);
        guard_fd = p[1];
        return 0;
undo:
        close(procs_fd);
        procs_fd = -1;
        rmdir(group);
        group[0] = '\0';
        return KDC_ERR_NOENT;
}

int tk_guard_procs_fd(void) {
        return procs_fd;
}

pid_t tk_guard_pid(void) {
        return guard;
}

const char *tk_guard_cgroup(void) {
        return group;
}

void tk_guard_end(void) {
        if (guard <= 0)
                return;
        close(guard_fd);
        guard_fd = -1;
        while (waitpid(guard, NULL, 0) < 0 && errno == EINTR)
                ;
        guard = -1;
        close(procs_fd);
        procs_fd = -1;
        group[0] = '\0';
}

int kdc_testkit_services_contain(char *why, size_t len) {
        return tk_guard_start(why, len);
}

void kdc_testkit_services_release(void) {
        tk_guard_end();
}
