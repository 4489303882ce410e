/* Service instances under test: a command started as a child process in a
 * process group of its own (so SIGKILL, SIGSTOP and SIGTERM reach a wrapper
 * script and the service behind it alike), or a loop function run in a
 * thread. Either way an instance that exits while it is wanted is started
 * again, as an orchestrator would restart a halted service. */
/* posix_spawn_file_actions_addclosefrom_np() (glibc >= 2.34) */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
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
            KDC_TESTKIT_ENV_BOOTSTRAP,       KDC_TESTKIT_ENV_INPUT,   KDC_TESTKIT_ENV_OUTPUT,
            KDC_TESTKIT_ENV_DLQ,             KDC_TESTKIT_ENV_GROUP,   KDC_TESTKIT_ENV_SESSION_TIMEOUT,
            KDC_TESTKIT_ENV_HEARTBEAT,       KDC_TESTKIT_ENV_MAX_POLL, KDC_TESTKIT_ENV_MESSAGE_TIMEOUT,
            KDC_TESTKIT_ENV_SCENARIO,        KDC_TESTKIT_ENV_INSTANCE};
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
}

/* Wait for the (signalled) child and forget it. */
static void child_reap(struct tk_instance *in, int *status) {
        waitpid(in->pid, status, 0);
        child_remove(in->pid);
        in->pid = -1;
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

int tk_instance_start(struct tk_instance *in) {
        in->wanted = 1;
        if (in->running)
                return 0;
        if (in->argv) {
                posix_spawn_file_actions_t fa;
                posix_spawnattr_t attr;
                int rc;

                posix_spawn_file_actions_init(&fa);
                posix_spawnattr_init(&attr);
                /* Own process group: signals reach wrappers and the service. */
                posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                    POSIX_SPAWN_SETSIGDEF);
                posix_spawnattr_setpgroup(&attr, 0);
                sigset_t none, all;
                sigemptyset(&none);
                sigfillset(&all);
                posix_spawnattr_setsigmask(&attr, &none);
                posix_spawnattr_setsigdefault(&attr, &all);
                /* Keep the harness's stdout for its report. */
                if (in->out_fd >= 0) {
                        posix_spawn_file_actions_adddup2(&fa, in->out_fd, 1);
                        posix_spawn_file_actions_adddup2(&fa, in->out_fd, 2);
                } else {
                        posix_spawn_file_actions_adddup2(&fa, 2, 1);
                }
                /* Nothing else: librdkafka 2.0.2's mock accepts connections
                 * without close-on-exec, and a child holding a copy of an
                 * accepted socket would keep that connection open after the
                 * mock closed it (a broker "down" that clients never see). */
                posix_spawn_file_actions_addclosefrom_np(&fa, 3);
                rc = posix_spawnp(&in->pid, in->argv[0], &fa, &attr, in->argv, in->envp);
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&attr);
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
                waitpid(in->pid, status, 0);
                child_remove(in->pid);
                in->pid = -1;
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
