/* Service instances under test: a command started as a child process in a
 * process group of its own (so SIGKILL, SIGSTOP and SIGTERM reach a wrapper
 * script and the service behind it alike), or a loop function run in a
 * thread. Either way an instance that exits while it is wanted is started
 * again, as an orchestrator would restart a halted service.
 *
 * A command dies with the thread that started it (PR_SET_PDEATHSIG: a
 * SIGKILLed kdc-harness leaves no service behind), and what escapes its
 * process group (a daemon started with setsid, a double fork) is collected
 * when kdc-harness is the child subreaper (tk_services_collect_strays()), and
 * by the guard of the services' cgroup when kdc-harness is killed (guard.c). */
/* execvpe(), close_range() (glibc >= 2.34) */
#define _GNU_SOURCE
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

extern char **environ;

#define TK_RESTART_MIN_MS 300
#define TK_RESTART_MAX_MS 4000

static void ilog(struct tk_instance *in, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static void ilog(struct tk_instance *in, const char *fmt, ...) {
        va_list ap;

        if (!in->log)
                return;
        fprintf(in->log, "kdc-harness: +%.2fs instance %d ", (tk_now_ms() - in->t0) / 1000.0,
                in->index + 1);
        va_start(ap, fmt);
        vfprintf(in->log, fmt, ap);
        va_end(ap);
        fputc('\n', in->log);
        fflush(in->log);
}

static char *env_entry(const char *name, const char *value) {
        size_t n = strlen(name) + strlen(value) + 2;
        char *e = malloc(n);

        if (e)
                snprintf(e, n, "%s=%s", name, value);
        return e;
}

/* environ without our names, then ours. */
static char **build_envp(const kdc_testkit_env_t *env) {
        static const char *const names[] = {
            KDC_TESTKIT_ENV_BOOTSTRAP, KDC_TESTKIT_ENV_INPUT,    KDC_TESTKIT_ENV_OUTPUT,
            KDC_TESTKIT_ENV_DLQ,       KDC_TESTKIT_ENV_GROUP,    KDC_TESTKIT_ENV_SESSION_TIMEOUT,
            KDC_TESTKIT_ENV_HEARTBEAT, KDC_TESTKIT_ENV_MAX_POLL, KDC_TESTKIT_ENV_MESSAGE_TIMEOUT,
            KDC_TESTKIT_ENV_SCENARIO,  KDC_TESTKIT_ENV_INSTANCE, KDC_TESTKIT_ENV_SINK};
        const size_t nnames = sizeof names / sizeof names[0];
        size_t n = 0, k = 0;
        char num[4][16], inst[16];
        const char *values[sizeof names / sizeof names[0]];

        for (char **e = environ; e && *e; e++)
                n++;
        char **envp = calloc(n + nnames + 1, sizeof *envp);
        if (!envp)
                return NULL;
        for (char **e = environ; e && *e; e++) {
                int ours = 0;
                for (size_t i = 0; i < nnames && !ours; i++) {
                        size_t l = strlen(names[i]);
                        ours = strncmp(*e, names[i], l) == 0 && (*e)[l] == '=';
                }
                if (!ours && !(envp[k++] = strdup(*e)))
                        goto fail;
        }
        snprintf(num[0], sizeof num[0], "%d", env->session_timeout_ms);
        snprintf(num[1], sizeof num[1], "%d", env->heartbeat_interval_ms);
        snprintf(num[2], sizeof num[2], "%d", env->max_poll_interval_ms);
        snprintf(num[3], sizeof num[3], "%d", env->message_timeout_ms);
        snprintf(inst, sizeof inst, "%d", env->instance);
        values[0] = env->bootstrap_servers;
        values[1] = env->input_topic;
        values[2] = env->output_topic;
        values[3] = env->dlq_topic;
        values[4] = env->group;
        values[5] = env->session_timeout_ms ? num[0] : NULL;
        values[6] = env->heartbeat_interval_ms ? num[1] : NULL;
        values[7] = env->max_poll_interval_ms ? num[2] : NULL;
        values[8] = env->message_timeout_ms ? num[3] : NULL;
        values[9] = env->scenario;
        values[10] = inst;
        values[11] = env->sink;
        for (size_t i = 0; i < nnames; i++)
                if (values[i] && !(envp[k++] = env_entry(names[i], values[i])))
                        goto fail;
        return envp;
fail:
        for (size_t i = 0; i < k; i++)
                free(envp[i]);
        free(envp);
        return NULL;
}

/* Loop instances alive in this process, for kdc_testkit_stopping(): a loop
 * may ask with the env it was given or with a copy of it (a service that
 * keeps its settings by value), never with memory the testkit must guess
 * at. A copy is recognised by its bootstrap_servers pointer (the run's
 * cluster owns that string) and its instance number. */
#define TK_LIVE_MAX 16
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static struct tk_instance *live[TK_LIVE_MAX];

static int live_add(struct tk_instance *in) {
        int rc = KDC_ERR_INVALID; /* more loops than TK_LIVE_MAX: not one run at a time */

        pthread_mutex_lock(&live_lock);
        for (int i = 0; i < TK_LIVE_MAX; i++)
                if (!live[i]) {
                        live[i] = in;
                        rc = 0;
                        break;
                }
        pthread_mutex_unlock(&live_lock);
        return rc;
}

static void live_remove(struct tk_instance *in) {
        pthread_mutex_lock(&live_lock);
        for (int i = 0; i < TK_LIVE_MAX; i++)
                if (live[i] == in)
                        live[i] = NULL;
        pthread_mutex_unlock(&live_lock);
}

/* Process groups of the command services alive in this process, for
 * kdc_testkit_services_kill() (a signal handler): plain loads and stores of
 * pid_t slots, no lock. */
static pid_t children[TK_LIVE_MAX];

static void child_add(pid_t pid) {
        for (int i = 0; i < TK_LIVE_MAX; i++) {
                pid_t none = 0;
                if (__atomic_compare_exchange_n(&children[i], &none, pid, 0, __ATOMIC_SEQ_CST,
                                                __ATOMIC_SEQ_CST))
                        return;
        }
}

static void child_remove(pid_t pid) {
        for (int i = 0; i < TK_LIVE_MAX; i++) {
                pid_t p = pid;
                __atomic_compare_exchange_n(&children[i], &p, 0, 0, __ATOMIC_SEQ_CST,
                                            __ATOMIC_SEQ_CST);
        }
}

void kdc_testkit_services_kill(void) {
        for (int i = 0; i < TK_LIVE_MAX; i++) {
                pid_t pid = __atomic_load_n(&children[i], __ATOMIC_SEQ_CST);
                if (pid > 0)
                        kill(-pid, SIGKILL);
        }
        tk_sink_remove_interrupted();
}

static int child_known(pid_t pid) {
        for (int i = 0; i < TK_LIVE_MAX; i++)
                if (__atomic_load_n(&children[i], __ATOMIC_SEQ_CST) == pid)
                        return 1;
        return 0;
}

/* The parent of process pid (from /proc/PID/stat), or -1. */
static pid_t parent_of(const char *pid) {
        char path[64], buf[512];
        int fd, n;

        snprintf(path, sizeof path, "/proc/%s/stat", pid);
        if ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
                return -1;
        n = (int)read(fd, buf, sizeof buf - 1);
        close(fd);
        if (n <= 0)
                return -1;
        buf[n] = '\0';
        /* "pid (comm) state ppid ...": comm may hold spaces and parentheses */
        char *end = strrchr(buf, ')');
        long ppid;
        char state;
        if (!end || sscanf(end + 1, " %c %ld", &state, &ppid) != 2)
                return -1;
        return (pid_t)ppid;
}

int tk_services_collect_strays(void) {
        int subreaper = 0, collected = 0;
        pid_t self = getpid();

        if (prctl(PR_GET_CHILD_SUBREAPER, &subreaper) != 0 || !subreaper)
                return 0; /* our children are not only services' leftovers */
        /* Killing one may hand its own children to us: again until none. */
        for (int round = 0, found = 1; found && round < 16; round++) {
                DIR *d = opendir("/proc");
                struct dirent *e;

                found = 0;
                while (d && (e = readdir(d))) {
                        char *endp;
                        long pid = strtol(e->d_name, &endp, 10);

                        if (*endp || pid <= 0 || child_known((pid_t)pid) ||
                            (pid_t)pid == tk_guard_pid() || (pid_t)pid == tk_pg_server_pid() ||
                            parent_of(e->d_name) != self)
                                continue;
                        kill((pid_t)pid, SIGKILL);
                        waitpid((pid_t)pid, NULL, 0);
                        found++;
                }
                if (d)
                        closedir(d);
                collected += found;
        }
        return collected;
}

/* Wait for the (signalled) child and forget it; then collect what it left
 * outside its process group. */
static void child_reap(struct tk_instance *in, int *status) {
        waitpid(in->pid, status, 0);
        child_remove(in->pid);
        in->pid = -1;
        if (tk_services_collect_strays())
                ilog(in, "killed processes it left outside its process group");
}

int tk_instance_init(struct tk_instance *in, int index, const kdc_testkit_env_t *env,
                     char *const *argv, kdc_testkit_loop_t *loop, void *opaque, int out_fd,
                     FILE *log, int64_t t0) {
        memset(in, 0, sizeof *in);
        in->index = index;
        in->env = *env;
        in->env.instance = index + 1;
        in->argv = argv;
        in->loop = loop;
        in->opaque = opaque;
        in->out_fd = out_fd;
        in->log = log;
        in->t0 = t0;
        in->pid = -1;
        if (argv && !(in->envp = build_envp(&in->env)))
                return KDC_ERR_NOMEM;
        if (loop) {
                if (live_add(in) != 0)
                        return KDC_ERR_INVALID;
                in->live = 1;
        }
        return 0;
}

static void *loop_main(void *arg) {
        struct tk_instance *in = arg;

        in->loop_status = in->loop(&in->env, in->opaque);
        __atomic_store_n(&in->finished, 1, __ATOMIC_RELEASE);
        return NULL;
}

int kdc_testkit_stopping(const kdc_testkit_env_t *env) {
        const struct tk_instance *in = NULL;
        int stopping = 1; /* an env no live loop was given: stop */

        if (!env)
                return 1;
        pthread_mutex_lock(&live_lock);
        for (int i = 0; i < TK_LIVE_MAX && !in; i++)
                if (live[i] && &live[i]->env == env)
                        in = live[i];
        for (int i = 0; i < TK_LIVE_MAX && !in; i++)
                if (live[i] && live[i]->env.bootstrap_servers == env->bootstrap_servers &&
                    live[i]->env.instance == env->instance)
                        in = live[i];
        if (in)
                stopping = __atomic_load_n(&in->stopping, __ATOMIC_ACQUIRE) != 0;
        pthread_mutex_unlock(&live_lock);
        return stopping;
}

/* The wait before the next start: TK_RESTART_MIN_MS after the first exit
 * (or failed start), twice as long after each further one, at most
 * TK_RESTART_MAX_MS. */
static int backoff_ms(const struct tk_instance *in) {
        int backoff = TK_RESTART_MIN_MS;

        for (int i = 1; i < in->exits + in->failed_starts && backoff < TK_RESTART_MAX_MS; i++)
                backoff *= 2;
        return backoff < TK_RESTART_MAX_MS ? backoff : TK_RESTART_MAX_MS;
}

/* The child's side of spawn(), between fork() and exec: async-signal-safe
 * calls only (the harness has librdkafka's threads). */
static void spawn_child(const struct tk_instance *in, pid_t parent, int report) {
        struct sigaction dfl;
        sigset_t none;
        int err;

        /* Into the run's cgroup, where every process it starts stays
         * (guard.c): they die with the run, however kdc-harness ends. */
        if (tk_guard_procs_fd() >= 0)
                (void)!write(tk_guard_procs_fd(), "0", 1);
        /* Own process group: signals reach wrappers and the service. */
        setpgid(0, 0);
        /* Dies with the thread that started it, even by SIGKILL. */
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent)
                _exit(127); /* it died before the line above */
        memset(&dfl, 0, sizeof dfl);
        dfl.sa_handler = SIG_DFL;
        for (int sig = 1; sig < NSIG; sig++)
                sigaction(sig, &dfl, NULL);
        sigemptyset(&none);
        sigprocmask(SIG_SETMASK, &none, NULL);
        /* Keep the harness's stdout for its report. */
        if (in->out_fd >= 0) {
                dup2(in->out_fd, 1);
                dup2(in->out_fd, 2);
        } else {
                dup2(2, 1);
        }
        if (report != 3) {
                dup2(report, 3);
                fcntl(3, F_SETFD, FD_CLOEXEC);
        }
        /* Nothing else: librdkafka 2.0.2's mock accepts connections without
         * close-on-exec, and a child holding a copy of an accepted socket
         * would keep that connection open after the mock closed it (a
         * broker "down" that clients never see). */
        close_range(4, ~0U, 0);
        execvpe(in->argv[0], in->argv, in->envp);
        err = errno;
        (void)!write(3, &err, sizeof err);
        _exit(127);
}

/* Start the command: 0, or the errno that kept it from running (fork, or
 * exec, reported through a close-on-exec pipe). */
static int spawn(struct tk_instance *in) {
        int pipefd[2], err = 0;
        pid_t parent = getpid();
        ssize_t n;

        if (pipe2(pipefd, O_CLOEXEC) != 0)
                return errno;
        if ((in->pid = fork()) < 0) {
                err = errno;
                close(pipefd[0]);
                close(pipefd[1]);
                return err;
        }
        if (in->pid == 0) {
                close(pipefd[0]);
                spawn_child(in, parent, pipefd[1]);
        }
        close(pipefd[1]);
        while ((n = read(pipefd[0], &err, sizeof err)) < 0 && errno == EINTR)
                ;
        close(pipefd[0]);
        if (n == (ssize_t)sizeof err) { /* exec failed: the child is gone */
                waitpid(in->pid, NULL, 0);
                return err;
        }
        return 0;
}

int tk_instance_start(struct tk_instance *in) {
        in->wanted = 1;
        if (in->running)
                return 0;
        if (in->argv) {
                int rc = spawn(in);
                if (rc == 0)
                        child_add(in->pid);
                if (rc != 0) {
                        in->pid = -1;
                        in->failed_starts++;
                        /* Try again later, as after an exit, not at every
                         * tick of the run. */
                        in->restart_at = tk_now_ms() + backoff_ms(in);
                        ilog(in, "could not start %s: %s", in->argv[0], strerror(rc));
                        return KDC_ERR_NOENT;
                }
        } else {
                __atomic_store_n(&in->stopping, 0, __ATOMIC_RELEASE);
                __atomic_store_n(&in->finished, 0, __ATOMIC_RELEASE);
                if (pthread_create(&in->thread, NULL, loop_main, in) != 0)
                        return KDC_ERR_NOMEM;
                in->thread_live = 1;
        }
        in->running = 1;
        in->paused = 0;
        in->started_at = tk_now_ms();
        in->starts++;
        ilog(in, "started (start %d)", in->starts);
        return 0;
}

/* Non-blocking: has the running instance ended? Reaps it. When a service
 * process ends, what is left of its process group (a worker that ignored
 * SIGTERM, a child a wrapper script left behind) is killed, as an
 * orchestrator ends a container with its main process: it must not keep
 * consuming and committing beside the next instance, or after the run.
 * The process is reaped only after that (WNOWAIT), so that its process
 * group id cannot have been reused. */
static int reap(struct tk_instance *in, int *status) {
        if (in->argv) {
                siginfo_t si;
                memset(&si, 0, sizeof si);
                if (waitid(P_PID, (id_t)in->pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 ||
                    si.si_pid != in->pid)
                        return 0;
                kill(-in->pid, SIGKILL);
                child_reap(in, status);
                return 1;
        }
        if (!__atomic_load_n(&in->finished, __ATOMIC_ACQUIRE))
                return 0;
        pthread_join(in->thread, NULL);
        in->thread_live = 0;
        *status = in->loop_status;
        return 1;
}

static void describe_status(struct tk_instance *in, int status) {
        if (!in->argv)
                ilog(in, "loop returned %d", status);
        else if (WIFSIGNALED(status))
                ilog(in, "exited on signal %d", WTERMSIG(status));
        else
                ilog(in, "exited with status %d", WEXITSTATUS(status));
}

void tk_instance_check(struct tk_instance *in, int64_t now) {
        int status = 0;

        if (in->running && reap(in, &status)) {
                in->running = 0;
                in->exits++;
                describe_status(in, status);
                if (in->wanted)
                        in->restart_at = now + backoff_ms(in);
        }
        if (!in->running && in->wanted && now >= in->restart_at)
                tk_instance_start(in);
}

void tk_instance_kill(struct tk_instance *in, int restart_delay_ms) {
        int status;

        if (!in->running || !in->argv)
                return;
        kill(-in->pid, SIGKILL);
        child_reap(in, &status);
        in->running = 0;
        in->kills++;
        in->restart_at = tk_now_ms() + restart_delay_ms;
}

void tk_instance_pause(struct tk_instance *in, int pause) {
        if (!in->running || !in->argv || in->paused == pause)
                return;
        kill(-in->pid, pause ? SIGSTOP : SIGCONT);
        in->paused = pause;
}

void tk_instance_stop(struct tk_instance *in, int grace_ms) {
        int64_t deadline = tk_now_ms() + grace_ms;
        int status = 0;

        in->wanted = 0;
        if (!in->running)
                return;
        if (in->argv) {
                if (in->paused)
                        kill(-in->pid, SIGCONT);
                kill(-in->pid, SIGTERM);
        } else {
                __atomic_store_n(&in->stopping, 1, __ATOMIC_RELEASE);
        }
        while (!reap(in, &status)) {
                if (tk_now_ms() >= deadline) {
                        in->stuck++;
                        ilog(in, "did not stop within %d ms", grace_ms);
                        if (in->argv) {
                                kill(-in->pid, SIGKILL);
                                child_reap(in, &status);
                                break;
                        }
                        /* A thread cannot be killed: wait for it. */
                        pthread_join(in->thread, NULL);
                        in->thread_live = 0;
                        break;
                }
                struct timespec ts = {0, 10 * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        in->running = 0;
        in->paused = 0;
        ilog(in, "stopped");
}

void tk_instance_redeploy(struct tk_instance *in, int grace_ms, int restart_delay_ms) {
        if (!in->running)
                return;
        tk_instance_stop(in, grace_ms);
        in->wanted = 1;
        in->restart_at = tk_now_ms() + restart_delay_ms;
}

void tk_instance_destroy(struct tk_instance *in) {
        if (in->running)
                tk_instance_stop(in, 0);
        if (in->live)
                live_remove(in);
        in->live = 0;
        if (in->envp) {
                for (char **e = in->envp; *e; e++)
                        free(*e);
                free(in->envp);
        }
        in->envp = NULL;
}
