/*
 * kdc-lint: the driver's entry point. `kdc-lint merge` joins shard reports
 * (merge.h); anything else is a run: its options are read (options.h), then
 * its steps run in order (run.h), on a thread with a large stack.
 */
#define _GNU_SOURCE
#include "jobs.h"
#include "merge.h"
#include "options.h"
#include "run.h"
#include "termsig.h"

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* kdc-lint reads nothing from standard input: it is /dev/null for it, its workers and
 * libclang, so that nothing a unit names (#include "/dev/stdin", -include /dev/stdin, a
 * response file @/dev/stdin, clang's "-") can wait for the user's pipe or terminal. The
 * open guard refuses such files anyway (openguard.h); this covers reads of descriptor 0
 * that open nothing. */
static void stdin_from_dev_null(void) {
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (fd > STDIN_FILENO) {
        dup2(fd, STDIN_FILENO); /* dup2 clears close-on-exec: git (--changed-since) gets it too */
        close(fd);
    }
}

/* What was printed on stdout (--help, --version, --list-rules, --dump-config, a report
 * without -o) must have reached it: a write error (a full disk, /dev/full, a closed pipe)
 * is exit 2 with a message, not a silent success. */
static int stdout_written(int rc) {
    errno = 0;
    if (fflush(stdout) == 0 && !ferror(stdout))
        return rc;
    if (rc == 2)
        return rc; /* said already ("cannot write the report"), or another error was */
    if (errno)
        fprintf(stderr, "kdc-lint: error: cannot write to standard output: %s\n", strerror(errno));
    else
        fputs("kdc-lint: error: cannot write to standard output\n", stderr);
    return 2;
}

static int run(int argc, char **argv) {
    stdin_from_dev_null();
    /* Informational output (--help is over 4 KiB) reaches stdout in one write at the end, so
     * stdout_written() sees that write's errno: a write failed earlier, when a smaller
     * buffer filled, leaves only the stream's error flag. A report's own writes are checked
     * where they are made. */
    static char out_buf[64 * 1024];
    setvbuf(stdout, out_buf, _IOFBF, sizeof out_buf);
    if (argc > 1 && !strcmp(argv[1], "merge"))
        return kdc_merge_main(argc - 1, argv + 1);
    kdc_lint_opts_t o;
    int rc = kdc_lint_opts_parse(argc, argv, &o);
    if (rc < 0)
        rc = kdc_lint_run(&o);
    kdc_lint_opts_free(&o);
    return stdout_written(rc);
}

/* Deeply nested code (generated else-if chains, huge expressions) recurses as
 * deep in libclang's parser as in the model. libclang parses on a thread of its
 * own with 8 MiB of stack, less than gcc gets away with: analyse on a thread
 * with a large stack instead (only the pages used are ever touched), and let
 * libclang parse on it (LIBCLANG_NOTHREADS; crash recovery stays on). */
#define KDC_STACK_SIZE ((size_t)256 << 20)

typedef struct main_args {
    int argc;
    char **argv;
    int rc;
    pthread_t main;   /* the thread that takes the termination signals */
    _Atomic int done; /* the run has ended: rc is its exit status */
} main_args_t;

static void *run_thread(void *arg) {
    main_args_t *a = arg;
    a->rc = run(a->argc, a->argv);
    atomic_store(&a->done, 1);
    pthread_kill(a->main, SIGTERM); /* wakes it (held, so it ends nothing) */
    return NULL;
}

/* The main thread, while the run goes on in its own: waits for a termination signal
 * (termsig.h). When one comes before the run ends, the run is ended cleanly: the cache or
 * baseline write in progress is finished (no temporary file stays), the worker processes
 * are ended and reaped, then kdc-lint ends with the same signal, as it would have without
 * the clean-up (exit status 128 + N in a shell). -o FILE keeps what was written. */
static int wait_for_run(main_args_t *a, pthread_t th) {
    sigset_t term;
    kdc_termsig_set(&term);
    for (;;) {
        int sig = 0;
        if (sigwait(&term, &sig) != 0)
            continue;
        if (atomic_load(&a->done)) {
            pthread_join(th, NULL);
            return a->rc;
        }
        kdc_termsig_stop();
        kdc_jobs_stop();
        fflush(stderr);
        signal(sig, SIG_DFL);
        sigset_t just;
        sigemptyset(&just);
        sigaddset(&just, sig);
        raise(sig);
        pthread_sigmask(SIG_UNBLOCK, &just, NULL); /* ends the process here */
        _exit(128 + sig);
    }
}

int main(int argc, char **argv) {
    main_args_t a = {argc, argv, 2, pthread_self(), 0};
    pthread_attr_t attr;
    pthread_t th;
    sigset_t term, before;
    kdc_termsig_set(&term);
    /* held in every thread (the run's inherits it); taken by wait_for_run */
    pthread_sigmask(SIG_BLOCK, &term, &before);
    if (pthread_attr_init(&attr) == 0) {
        int started = pthread_attr_setstacksize(&attr, KDC_STACK_SIZE) == 0 &&
                      setenv("LIBCLANG_NOTHREADS", "1", 1) == 0 &&
                      pthread_create(&th, &attr, run_thread, &a) == 0;
        pthread_attr_destroy(&attr);
        if (started)
            return wait_for_run(&a, th);
        unsetenv("LIBCLANG_NOTHREADS");
    }
    pthread_sigmask(SIG_SETMASK, &before, NULL);
    return run(argc, argv); /* no large stack to be had: libclang's own thread, as before */
}
