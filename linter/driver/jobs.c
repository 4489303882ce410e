/* Parsing the translation units of a run, in parallel (see jobs.h). */
#define _GNU_SOURCE
#include "jobs.h"
#include "escape.h"
#include "libclang_lazy.h"
#include "paths.h"
#include "parse.h"
#include "preamble.h"
#include "regfile.h"
#include "termsig.h"
#include "unitio.h"
#include "util.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

unsigned kdc_jobs_cpus(void) {
    cpu_set_t set;
    if (sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0)
        return (unsigned)CPU_COUNT(&set);
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n > 0 ? (unsigned)n : 1;
}

/* What became of one unit. */
typedef struct result {
    int done;
    int from_cache;
    char *error; /* libclang could not parse it (an input error) */
    char *note;  /* for stderr: a damaged cache entry, a cache write that failed */
    kdc_buf_t model;
    kdc_preamble_use_t pre; /* whether it was parsed against a shared preamble */
} result_t;

typedef struct run {
    const kdc_jobs_opts_t *o;
    kdc_inputs_t *inputs;
    const size_t *todo;
    size_t ntodo;
    kdc_parser_t *parser; /* of this process, created on first use */
    kdc_preamble_plan_t *preambles; /* the run's shared preambles (preamble.h), or NULL */
    /* A cache write failed (a full disk, the directory deleted): no further writes are
     * tried, in this process or any other of the run, and only the first failure is
     * noted. Points at own_store_failed, or into the workers' shared memory. */
    _Atomic int *store_failed;
    _Atomic int own_store_failed;
    XXH3_state_t *program; /* the models merged so far (kdc_jobs_stats_t.program) */
    const size_t *parse;   /* positions in todo whose model the cache does not have */
    size_t nparse;
} run_t;

static void collect_file(void *arg, const char *path) {
    KDC_VEC(char *) *files = arg;
    char *copy = kdc_xstrdup(path);
    KDC_VEC_PUSH(*files, copy);
}

enum {
    UNIT_STORE = 1, /* store the model parsed */
    UNIT_WHOLE = 2, /* convert every definition, also those converted for an earlier unit */
};

/* Parses one unit into r (r->note, a note already there, is kept). Definitions this
 * process converted for an earlier unit (shared headers) are left out of the model unless
 * UNIT_WHOLE: units are taken in input order, so the unit that had them is merged first
 * (kdc_unit_merge checks, and KDC_UNIT_INCOMPLETE has the unit parsed again). */
static void process_unit(run_t *run, const kdc_tu_job_t *job, result_t *r, int how) {
    kdc_cache_t *cache = run->o->cache;
    if (!(how & UNIT_STORE))
        cache = NULL;
    if (!run->parser)
        run->parser = kdc_parser_new();
    kdc_parser_omit_seen(run->parser, !(how & UNIT_WHOLE));
    kdc_program_t *unit = kdc_program_new();
    if (!unit)
        kdc_oom();
    KDC_VEC(char *) files = {0};
    char *err = NULL;
    /* the inputs look at a source's first 8 KiB (inputs.c); a NUL byte further on makes it
     * binary too, checked here where it is parsed (a cached model's file was checked then) */
    if (kdc_regular_has_nul(job->file) == 1) {
        r->error = kdc_xstrdup("binary file, not C or C++ source: not analysed");
    } else if (kdc_preamble_parse(run->preambles, (size_t)(job - run->inputs->jobs), run->parser,
                                  unit, job, cache ? collect_file : NULL, &files, &err, &r->pre)) {
        r->error = err ? err : kdc_xstrdup("libclang could not parse this file");
    } else {
        kdc_unit_encode(unit, &r->model);
        /* A unit with compile errors may be missing a header that appears later. */
        if (cache && kdc_program_tu(unit, 0)->nerrors == 0 && !atomic_load(run->store_failed)) {
            char *serr = NULL;
            int rc = kdc_cache_store(cache, job, (const char *const *)files.v, files.n,
                                     r->model.v, r->model.n, &serr);
            /* -2: this entry's place is taken (noted; the other entries are written) */
            if (rc == -2 || (rc && atomic_exchange(run->store_failed, 1) == 0)) {
                char *note = kdc_xasprintf("%s%s%s%s", r->note ? r->note : "",
                                           r->note ? "; " : "", serr,
                                           rc == -2 ? "" : " (no further cache writes are tried)");
                free(r->note);
                r->note = note;
            }
            free(serr);
        }
    }
    for (size_t i = 0; i < files.n; i++)
        free(files.v[i]);
    free(files.v);
    kdc_program_free(unit);
}

static void result_free(result_t *r) {
    free(r->error);
    free(r->note);
    kdc_buf_free(&r->model);
}

/* "kdc-lint: note: ..." on stderr, control characters escaped (escape.h). */
static void note_line(const char *note) {
    fputs("kdc-lint: note: ", stderr);
    kdc_fputs_shown(note, stderr);
    fputc('\n', stderr);
}

/* ---------- progress ---------- */

typedef struct progress {
    int mode;     /* as kdc_jobs_opts_t.progress */
    double start; /* in mode 1, the line appears only once the run has taken a second */
    int shown;
    size_t done;
} progress_t;

static void progress_step(progress_t *p, const run_t *run, size_t k) {
    p->done++;
    if (!p->mode)
        return;
    const char *path = kdc_display_path(run->o->cwd, run->inputs->jobs[run->todo[k]].file);
    if (p->mode == 2) {
        fprintf(stderr, "[%zu/%zu] ", p->done, run->ntodo);
        kdc_fputs_shown(path, stderr); /* escape.h */
        fputc('\n', stderr);
    } else if (p->shown || p->mode == 3 || kdc_now_seconds() - p->start >= 1.0) {
        fprintf(stderr, "\r[%zu/%zu] ", p->done, run->ntodo);
        kdc_fputs_shown(path, stderr);
        fputs("\033[K", stderr);
        p->shown = 1;
    }
    fflush(stderr);
}

static void progress_end(progress_t *p) {
    if (p->shown) {
        fputs("\r\033[K", stderr);
        fflush(stderr);
    }
}

/* ---------- merging, in input order ---------- */

/* Merges one model into prog, and into the digest of the program: 0, or as
 * kdc_unit_merge. */
static int merge_model(run_t *run, kdc_program_t *prog, const kdc_buf_t *model, char **err) {
    int rc = kdc_unit_merge(prog, model->v, model->n, err);
    if (rc)
        return rc;
    uint64_t len = model->n;
    XXH3_128bits_update(run->program, &len, sizeof len);
    XXH3_128bits_update(run->program, model->v, model->n);
    return 0;
}

static void merge_one(run_t *run, result_t *r, size_t k, kdc_program_t *prog,
                      kdc_jobs_stats_t *st) {
    const kdc_tu_job_t *job = &run->inputs->jobs[run->todo[k]];
    if (r->note)
        note_line(r->note);
    if (r->error) {
        kdc_inputs_add_error(run->inputs, job->file, "%s", r->error);
        st->failed++;
        return;
    }
    st->preamble_units += (size_t)r->pre.with_preamble;
    st->preamble_fallbacks += (size_t)r->pre.fell_back;
    st->preambles_built += (size_t)r->pre.built;
    st->preamble_build_s += r->pre.build_s;
    char *err = NULL;
    int rc = merge_model(run, prog, &r->model, &err);
    if (rc == 0) {
        if (r->from_cache)
            st->from_cache++;
        else
            st->parsed++;
        return;
    }
    result_t again = {0};
    if (rc == KDC_UNIT_INCOMPLETE) {
        /* a model that leaves out shared definitions no earlier unit of this run provided
         * (a cache entry written in a run with other units): parsed again in full, stored */
        free(err);
        process_unit(run, job, &again, UNIT_STORE | UNIT_WHOLE);
    } else {
        /* Only a cache entry can get here (a fresh model always decodes): parse it again. */
        fprintf(stderr,
                "kdc-lint: note: the cached model of %s is damaged (%s); parsing it again\n",
                kdc_display_path(run->o->cwd, job->file), err);
        free(err);
        process_unit(run, job, &again, UNIT_WHOLE);
    }
    if (again.note)
        note_line(again.note);
    if (again.error) {
        kdc_inputs_add_error(run->inputs, job->file, "%s", again.error);
        st->failed++;
    } else if (merge_model(run, prog, &again.model, &err) == 0) {
        st->parsed++;
    } else {
        kdc_inputs_add_error(run->inputs, job->file, "internal error: model not readable: %s",
                             err);
        free(err);
        st->failed++;
    }
    result_free(&again);
}

/* ---------- worker processes ---------- */

enum { MSG_UNIT = 1, MSG_DONE = 2 };

typedef struct msg_hdr {
    uint32_t kind;
    uint32_t from_cache;
    kdc_preamble_use_t pre;
    uint64_t index;     /* MSG_UNIT: position in todo; MSG_DONE: peak RSS in KiB */
    uint32_t error_len;
    uint32_t note_len;
    uint64_t model_len;
} msg_hdr_t;

typedef struct slot {
    _Atomic long current; /* the position in todo being parsed, or -1 */
    _Atomic double since; /* kdc_now_seconds() when its parse began */
} slot_t;

typedef struct shared {
    _Atomic size_t next;      /* the next position in run->parse to take */
    _Atomic int store_failed; /* run_t.store_failed of every process of the run */
    slot_t slot[];            /* per worker slot */
} shared_t;

typedef struct worker {
    pid_t pid;
    int fd;       /* read end of its pipe; -1 when gone */
    kdc_buf_t in; /* bytes received, not yet a whole message */
    double ended; /* kdc_now_seconds() when it was sent SIGTERM for its budget; 0: not */
    long ended_unit; /* ... the unit over the time limit */
} worker_t;

static int write_all(int fd, const void *data, size_t n) {
    const unsigned char *p = data;
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return -1;
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static void send_msg(int fd, const msg_hdr_t *h, const char *error, const char *note,
                     const kdc_buf_t *model) {
    kdc_buf_t b = {0};
    kdc_buf_put(&b, h, sizeof *h);
    if (h->error_len)
        kdc_buf_put(&b, error, h->error_len);
    if (h->note_len)
        kdc_buf_put(&b, note, h->note_len);
    if (h->model_len)
        kdc_buf_put(&b, model->v, h->model_len);
    if (write_all(fd, b.v, b.n))
        _exit(3); /* the driver is gone */
    kdc_buf_free(&b);
}

static _Noreturn void worker_main(run_t *run, shared_t *sh, int slot, int fd) {
    for (;;) {
        size_t i = atomic_fetch_add(&sh->next, 1);
        if (i >= run->nparse)
            break;
        size_t k = run->parse[i];
        atomic_store(&sh->slot[slot].since, kdc_now_seconds());
        atomic_store(&sh->slot[slot].current, (long)k);
        result_t r = {0};
        process_unit(run, &run->inputs->jobs[run->todo[k]], &r, UNIT_STORE);
        msg_hdr_t h = {MSG_UNIT,
                       (uint32_t)r.from_cache,
                       r.pre,
                       k,
                       r.error ? (uint32_t)strlen(r.error) : 0,
                       r.note ? (uint32_t)strlen(r.note) : 0,
                       r.error ? 0 : r.model.n};
        send_msg(fd, &h, r.error, r.note, &r.model);
        atomic_store(&sh->slot[slot].current, -1L);
        result_free(&r);
    }
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    msg_hdr_t h = {MSG_DONE, 0, {0}, (uint64_t)ru.ru_maxrss, 0, 0, 0};
    send_msg(fd, &h, NULL, NULL, NULL);
    _exit(0);
}

/* ---------- the workers a signal ends ----------
 *
 * The one state of this file outside a run: the worker processes of this process, for
 * the thread that ends kdc-lint on a signal (kdc_jobs_stop). A worker is listed from its
 * fork until just before it is reaped, never after (its pid could then name another
 * process). */
static pthread_mutex_t live_lock = PTHREAD_MUTEX_INITIALIZER;
static KDC_VEC(pid_t) live;
static const kdc_preamble_plan_t *live_preambles; /* the run's, until it removes them */

static void set_live_preambles(const kdc_preamble_plan_t *pl) {
    pthread_mutex_lock(&live_lock);
    live_preambles = pl;
    pthread_mutex_unlock(&live_lock);
}

/* Takes pid off the list, then waits for it (it has ended, or was sent a signal). */
static void reap(pid_t pid, int *status) {
    pthread_mutex_lock(&live_lock);
    for (size_t i = 0; i < live.n; i++)
        if (live.v[i] == pid)
            live.v[i] = live.v[--live.n];
    pthread_mutex_unlock(&live_lock);
    while (waitpid(pid, status, 0) < 0 && errno == EINTR) {
    }
}

void kdc_jobs_stop(void) {
    pthread_mutex_lock(&live_lock); /* never unlocked: no worker starts or is reaped after */
    for (size_t i = 0; i < live.n; i++)
        kill(live.v[i], SIGTERM); /* a worker in a cache write ends once it is written */
    double give_up = kdc_now_seconds() + 2.0;
    for (size_t i = 0; i < live.n; i++) {
        while (waitpid(live.v[i], NULL, WNOHANG) == 0) {
            if (kdc_now_seconds() > give_up) {
                kill(live.v[i], SIGKILL);
                waitpid(live.v[i], NULL, 0);
                break;
            }
            struct timespec nap = {0, 10 * 1000 * 1000};
            nanosleep(&nap, NULL);
        }
    }
    kdc_preamble_remove_files(live_preambles); /* no worker reads them any more */
}

/* The worker's address space may grow by mib MiB (0: no limit) beyond what it has when it
 * starts (kdc-lint and libclang themselves, about 530 MiB of mappings): an allocation past
 * it fails, and the unit with it (ASan reserves terabytes of address space: no limit). */
static void limit_memory(unsigned long mib) {
#if defined(__SANITIZE_ADDRESS__)
    (void)mib;
#else
    long pages = 0;
    FILE *f = fopen("/proc/self/statm", "r");
    if (!mib || !f || fscanf(f, "%ld", &pages) != 1)
        pages = -1;
    if (f)
        fclose(f);
    if (pages < 0)
        return;
    rlim_t base = (rlim_t)pages * (rlim_t)sysconf(_SC_PAGESIZE);
    struct rlimit rl;
    if (getrlimit(RLIMIT_AS, &rl) != 0)
        return;
    rlim_t want = base + ((rlim_t)mib << 20);
    if (rl.rlim_max == RLIM_INFINITY || want < rl.rlim_max) {
        rl.rlim_cur = want;
        setrlimit(RLIMIT_AS, &rl);
    }
#endif
}

static int spawn(run_t *run, shared_t *sh, worker_t *ws, unsigned nslots, unsigned slot) {
    int p[2];
    if (pipe(p) != 0)
        return -1;
    fflush(NULL); /* nothing buffered is written twice */
    /* before the fork: a worker that runs first has taken its unit when fork() returns
     * here, and a store after it hid that unit from the time limit (a hang under load) */
    atomic_store(&sh->slot[slot].current, -1L);
    pid_t driver = getpid();
    pthread_mutex_lock(&live_lock); /* listed before a signal's stop can look */
    pid_t pid = fork();
    if (pid < 0) {
        pthread_mutex_unlock(&live_lock);
        close(p[0]);
        close(p[1]);
        return -1;
    }
    if (pid == 0) {
        /* a worker dies with the driver (a signal to kdc-lint alone left it parsing for
         * 10-20 s); the thread that forked is the driver's run thread, which outlives
         * every worker it waits for */
        if (prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || getppid() != driver)
            _exit(1);
        close(p[0]);
        for (unsigned i = 0; i < nslots; i++)
            if (ws[i].fd >= 0)
                close(ws[i].fd);
        signal(SIGPIPE, SIG_DFL);
        limit_memory(run->o->unit_memory_mib);
        /* the driver's threads hold the termination signals (termsig.h); a worker takes
         * them as they come, except in a cache write */
        sigset_t term;
        kdc_termsig_set(&term);
        pthread_sigmask(SIG_UNBLOCK, &term, NULL);
        worker_main(run, sh, (int)slot, p[1]);
    }
    KDC_VEC_PUSH(live, pid);
    pthread_mutex_unlock(&live_lock);
    close(p[1]);
    ws[slot].pid = pid;
    ws[slot].fd = p[0];
    ws[slot].in.n = 0;
    ws[slot].ended = 0;
    return 0;
}

/* Takes the whole messages out of w->in. */
static void take_messages(worker_t *w, result_t *res, size_t ntodo, progress_t *pg, run_t *run,
                          kdc_jobs_stats_t *st) {
    size_t at = 0;
    for (;;) {
        msg_hdr_t h;
        if (w->in.n - at < sizeof h)
            break;
        memcpy(&h, w->in.v + at, sizeof h);
        size_t len = sizeof h + h.error_len + h.note_len + h.model_len;
        if (w->in.n - at < len)
            break;
        const char *body = (const char *)w->in.v + at + sizeof h;
        if (h.kind == MSG_DONE) {
            long kib = (long)h.index;
            st->worker_sum_rss_kib += kib;
            if (kib > st->worker_peak_rss_kib)
                st->worker_peak_rss_kib = kib;
        } else if (h.kind == MSG_UNIT && h.index < ntodo && !res[h.index].done) {
            result_t *r = &res[h.index];
            r->done = 1;
            r->from_cache = (int)h.from_cache;
            r->pre = h.pre;
            if (h.error_len)
                r->error = kdc_xasprintf("%.*s", (int)h.error_len, body);
            if (h.note_len) { /* after the driver's own (a damaged entry) */
                char *note = kdc_xasprintf("%s%s%.*s", r->note ? r->note : "",
                                           r->note ? "; " : "", (int)h.note_len,
                                           body + h.error_len);
                free(r->note);
                r->note = note;
            }
            kdc_buf_put(&r->model, body + h.error_len + h.note_len, h.model_len);
            progress_step(pg, run, h.index);
        }
        at += len;
    }
    memmove(w->in.v, w->in.v + at, w->in.n - at);
    w->in.n -= at;
}

/* Merges the units done, in order, from *merged on. */
static void merge_done(run_t *run, result_t *res, size_t *merged, kdc_program_t *prog,
                       kdc_jobs_stats_t *st) {
    while (*merged < run->ntodo && res[*merged].done) {
        merge_one(run, &res[*merged], *merged, prog, st);
        result_free(&res[*merged]);
        (*merged)++;
    }
}

/* Ends the workers still running (SIGKILL), without reading what they had not sent. */
static void stop_workers(worker_t *ws, unsigned nworkers) {
    for (unsigned i = 0; i < nworkers; i++) {
        if (ws[i].fd < 0)
            continue;
        kill(ws[i].pid, SIGKILL);
        close(ws[i].fd);
        ws[i].fd = -1;
        reap(ws[i].pid, NULL);
    }
}

/* The unit a worker was parsing when it ended: an input error saying why. */
static void unit_lost(run_t *run, result_t *r, const worker_t *w, int status) {
    r->done = 1;
    if (w->ended)
        r->error = kdc_xasprintf("over the time limit of %lu s per file (--unit-time-limit): "
                                 "not analysed",
                                 run->o->unit_time_s);
    else if (WIFSIGNALED(status))
        r->error = kdc_xasprintf("kdc-lint's parser process was killed by signal %d (%s) while "
                                 "parsing this file",
                                 WTERMSIG(status), strsignal(WTERMSIG(status)));
    else
        r->error = kdc_xasprintf("kdc-lint's parser process ended (exit status %d) while "
                                 "parsing this file",
                                 WEXITSTATUS(status));
    if (!w->ended && run->o->unit_memory_mib &&
        (WIFSIGNALED(status) ? WTERMSIG(status) == SIGABRT : WEXITSTATUS(status) == 2)) {
        /* libLLVM aborts, kdc-lint exits 2, when an allocation fails */
        char *more = kdc_xasprintf("%s; it may have reached the memory limit of %lu MiB per "
                                   "file (--unit-memory-limit)",
                                   r->error, run->o->unit_memory_mib);
        free(r->error);
        r->error = more;
    }
}

/* --unit-time-limit: ends the workers whose unit has taken longer (SIGTERM: a cache write
 * in progress is finished; SIGKILL 2 s later). Returns how long poll() may wait (ms). */
static int enforce_time_limit(run_t *run, shared_t *sh, worker_t *ws, unsigned nworkers) {
    if (!run->o->unit_time_s)
        return -1;
    double now = kdc_now_seconds(), limit = (double)run->o->unit_time_s, wait = 1.0;
    for (unsigned i = 0; i < nworkers; i++) {
        if (ws[i].fd < 0)
            continue;
        if (ws[i].ended) {
            if (now - ws[i].ended > 2.0)
                kill(ws[i].pid, SIGKILL);
            continue;
        }
        long cur = atomic_load(&sh->slot[i].current);
        if (cur < 0)
            continue;
        double left = atomic_load(&sh->slot[i].since) + limit - now;
        if (left <= 0) {
            ws[i].ended = now;
            ws[i].ended_unit = cur;
            kill(ws[i].pid, SIGTERM);
        } else if (left < wait) {
            wait = left;
        }
    }
    return (int)(wait * 1000) + 1;
}

/* Parses run->parse[] in nworkers worker processes, merging as units are done; what the
 * workers do not parse (none could be started, or they cannot be waited for) is parsed in
 * this process. On return every unit is merged (or an input error). */
static void run_workers(run_t *run, unsigned nworkers, result_t *res, size_t *merged_io,
                        progress_t *pg, kdc_program_t *prog, kdc_jobs_stats_t *st) {
    size_t shsize = sizeof(shared_t) + nworkers * sizeof(slot_t);
    shared_t *sh = mmap(NULL, shsize, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    worker_t *ws = calloc(nworkers, sizeof *ws);
    if (!ws)
        kdc_oom();
    for (unsigned i = 0; i < nworkers; i++)
        ws[i].fd = -1;
    size_t merged = *merged_io;
    if (sh == MAP_FAILED) {
        sh = NULL;
    } else {
        atomic_store(&sh->next, 0);
        atomic_store(&sh->store_failed, atomic_load(run->store_failed));
        run->store_failed = &sh->store_failed;
    }
    unsigned alive = 0, rounds = 0;
    int poll_failed = 0;
    size_t *left = calloc(run->ntodo ? run->ntodo : 1, sizeof *left);
    if (!left)
        kdc_oom();
    for (unsigned i = 0; sh && i < nworkers; i++)
        if (spawn(run, sh, ws, nworkers, i) == 0) {
            alive++;
            st->workers++;
        }
    struct pollfd *pfd = calloc(nworkers, sizeof *pfd);
    unsigned *slot_of = calloc(nworkers, sizeof *slot_of);
    if (!pfd || !slot_of)
        kdc_oom();
    for (;;) {
        merge_done(run, res, &merged, prog, st);
        if (merged == run->ntodo && !alive)
            break;
        if (!alive && sh && !poll_failed && rounds++ < 3) {
            /* Units no worker sent and none was parsing when it ended (taken by a worker
             * killed from outside before it began): to fresh workers, with their budget. */
            size_t nleft = 0;
            for (size_t i = merged; i < run->ntodo; i++)
                if (!res[i].done)
                    left[nleft++] = i;
            run->parse = left;
            run->nparse = nleft;
            atomic_store(&sh->next, 0);
            for (unsigned i = 0; i < nworkers && i < nleft; i++)
                if (spawn(run, sh, ws, nworkers, i) == 0) {
                    alive++;
                    st->workers++;
                }
        }
        if (!alive) {
            /* No worker left (fork failed, or the last one died): parse the rest here. */
            for (size_t i = merged; i < run->ntodo; i++)
                if (!res[i].done) {
                    process_unit(run, &run->inputs->jobs[run->todo[i]], &res[i], UNIT_STORE);
                    res[i].done = 1;
                    progress_step(pg, run, i);
                }
            continue;
        }
        unsigned n = 0;
        for (unsigned i = 0; i < nworkers; i++)
            if (ws[i].fd >= 0) {
                pfd[n] = (struct pollfd){ws[i].fd, POLLIN, 0};
                slot_of[n++] = i;
            }
        if (poll(pfd, n, enforce_time_limit(run, sh, ws, nworkers)) < 0) {
            if (errno == EINTR)
                continue;
            /* The workers cannot be waited for (EINVAL: the open-file limit was lowered
             * below their number; ENOMEM): stop them; the `!alive` step above parses
             * what they had not sent in this process. */
            fprintf(stderr,
                    "kdc-lint: note: waiting for the parser processes failed (poll: %s); "
                    "the files they had not parsed are parsed in this process\n",
                    strerror(errno));
            stop_workers(ws, nworkers);
            alive = 0;
            poll_failed = 1;
            continue;
        }
        for (unsigned j = 0; j < n; j++) {
            if (!(pfd[j].revents & (POLLIN | POLLHUP | POLLERR | POLLNVAL)))
                continue;
            worker_t *w = &ws[slot_of[j]];
            char buf[1 << 16];
            ssize_t got = read(w->fd, buf, sizeof buf);
            if (got < 0 && errno == EINTR)
                continue;
            if (got > 0) {
                kdc_buf_put(&w->in, buf, (size_t)got);
                take_messages(w, res, run->ntodo, pg, run, st);
                continue;
            }
            /* end of its pipe: the worker is done, or died */
            close(w->fd);
            w->fd = -1;
            alive--;
            int status = 0;
            reap(w->pid, &status);
            /* a unit it took after the one over the time limit is parsed again (below) */
            long cur = w->ended ? w->ended_unit : atomic_load(&sh->slot[slot_of[j]].current);
            if (cur >= 0 && (size_t)cur < run->ntodo && !res[cur].done) {
                unit_lost(run, &res[cur], w, status);
                progress_step(pg, run, (size_t)cur);
            }
            if (atomic_load(&sh->next) < run->nparse &&
                spawn(run, sh, ws, nworkers, slot_of[j]) == 0) {
                alive++;
                st->workers++;
            }
        }
    }
    for (unsigned i = 0; i < nworkers; i++)
        kdc_buf_free(&ws[i].in);
    free(pfd);
    free(slot_of);
    free(ws);
    free(left);
    if (sh) {
        atomic_store(&run->own_store_failed, atomic_load(&sh->store_failed));
        run->store_failed = &run->own_store_failed;
        munmap(sh, shsize);
    }
    *merged_io = merged;
}

void kdc_jobs_run(const kdc_jobs_opts_t *o, kdc_inputs_t *inputs, const size_t *todo,
                  size_t ntodo, kdc_program_t *prog, kdc_jobs_stats_t *stats) {
    run_t run = {
        .o = o, .inputs = inputs, .todo = todo, .ntodo = ntodo, .program = XXH3_createState()};
    run.store_failed = &run.own_store_failed;
    atomic_store(&run.own_store_failed, o->cache && !kdc_cache_writable(o->cache));
    progress_t pg = {o->progress, kdc_now_seconds(), 0, 0};
    memset(stats, 0, sizeof *stats);
    /* a unit with a budget is parsed in a worker, which can be ended (also with -j1) */
    int budget = o->unit_time_s || o->unit_memory_mib;
    if (!run.program)
        kdc_oom();
    XXH3_128bits_reset(run.program);
    result_t *res = calloc(ntodo ? ntodo : 1, sizeof *res);
    size_t *parse = calloc(ntodo ? ntodo : 1, sizeof *parse), nparse = 0, merged = 0;
    if (!res || !parse)
        kdc_oom();
    /* The cache first, in this process: only the units it does not have are parsed (with
     * -j1 and no budget here, else by workers, once the preambles they share are planned),
     * so a run that parses nothing never forks or loads libclang. */
    for (size_t k = 0; k < ntodo; k++) {
        const kdc_tu_job_t *job = &inputs->jobs[todo[k]];
        result_t *r = &res[k];
        if (o->cache && kdc_cache_lookup(o->cache, job, &r->model, &r->note)) {
            r->from_cache = 1;
        } else {
            parse[nparse++] = k;
            continue;
        }
        r->done = 1;
        progress_step(&pg, &run, k);
        merge_done(&run, res, &merged, prog, stats);
    }
    run.parse = parse;
    run.nparse = nparse;
    /* the include prefixes the units to parse share, each parsed once (preamble.h) */
    if (o->preambles && nparse >= 2) {
        size_t *idx = malloc(nparse * sizeof *idx);
        if (!idx)
            kdc_oom();
        for (size_t i = 0; i < nparse; i++)
            idx[i] = todo[parse[i]];
        char *note = NULL;
        run.preambles = kdc_preamble_plan(inputs->jobs, idx, nparse, &note);
        set_live_preambles(run.preambles);
        if (note)
            note_line(note);
        free(note);
        free(idx);
        stats->preambles = kdc_preamble_count(run.preambles);
    }
    unsigned nworkers = o->jobs < nparse ? o->jobs : (unsigned)nparse;
    if (nworkers > 1 || (nworkers == 1 && budget)) {
        kdc_libclang_load(); /* before the fork: the workers share it; a failure said once */
        run_workers(&run, nworkers, res, &merged, &pg, prog, stats);
    } else {
        for (size_t i = 0; i < nparse; i++) {
            size_t k = parse[i];
            process_unit(&run, &inputs->jobs[todo[k]], &res[k], UNIT_STORE);
            res[k].done = 1;
            progress_step(&pg, &run, k);
            merge_done(&run, res, &merged, prog, stats);
        }
    }
    /* Every unit ends merged or an input error; none is dropped without a word. */
    for (; merged < ntodo; merged++) {
        kdc_inputs_add_error(inputs, inputs->jobs[todo[merged]].file,
                             "internal error: kdc-lint did not parse this file");
        stats->failed++;
        result_free(&res[merged]);
    }
    progress_end(&pg);
    XXH128_canonical_t digest;
    XXH128_canonicalFromHash(&digest, XXH3_128bits_digest(run.program));
    memcpy(stats->program, digest.digest, sizeof stats->program);
    stats->cache_write_failed = atomic_load(run.store_failed);
    if (stats->cache_write_failed)
        kdc_cache_stop_writes(o->cache);
    XXH3_freeState(run.program);
    stats->preamble_disk_bytes = kdc_preamble_disk_bytes(run.preambles);
    set_live_preambles(NULL);
    kdc_preamble_plan_free(run.preambles);
    kdc_parser_free(run.parser);
    free(parse);
    free(res);
}
