/*
 * Parsing the translation units of a run, in parallel (-j N).
 *
 * Each unit is parsed into a model of its own (or loaded from the cache),
 * encoded (unitio.h), and merged into the run's program in the order of the
 * inputs: the program, and so every report, is the same for any N. A process
 * converts a shared header's function once (kdc_parser_omit_seen): a later
 * unit's model leaves it out and merges only after the unit that has it, which
 * comes first in input order; otherwise (a cached model used in a run without
 * that unit) the unit is parsed again in full.
 *
 * The driver takes the models the cache has first, itself; only the other
 * units are parsed. They are parsed in worker processes (fork), not threads:
 * libclang applies a unit's -working-directory (from a compilation database)
 * to the whole process (LLVM's real file system changes the process's current
 * directory), so two units of different directories cannot be parsed at once
 * in one process. Workers take the next unit from a shared counter, so a slow unit
 * does not hold up the others, and send each model back through a pipe. A
 * worker that dies (a crash libclang's own recovery did not catch, the OOM
 * killer) costs only the unit it was parsing, which becomes an input error;
 * another worker takes over the rest. When the workers cannot be waited for
 * (poll() fails), they are stopped and the units they had not sent are parsed in
 * the driver's process.
 *
 * A unit's parse has a budget (--unit-time-limit, --unit-memory-limit): a worker's address
 * space may grow by the memory limit only (RLIMIT_AS), and the driver ends a worker whose
 * unit has taken longer than the time limit (wall clock) with SIGTERM, SIGKILL 2 s later.
 * That unit becomes an input error naming the limit; a fresh worker takes the rest, and a
 * unit a worker had taken but not begun is parsed again. So units with a budget are parsed
 * in workers also with -j1 (one worker); with neither limit (both 0), -j1 or one unit to
 * parse has no worker: the driver's own process parses. Parses in the driver's process
 * (after poll() failed, a cached model parsed again in full) have no budget. The driver loads libclang
 * (libclang_lazy.h) before it forks workers, so they share its pages; a run
 * that parses nothing neither forks nor loads libclang.
 */
#ifndef KDC_JOBS_H
#define KDC_JOBS_H

#include "cache.h"
#include "inputs.h"
#include "model.h"

#include <stddef.h>

typedef struct kdc_jobs_opts {
    unsigned jobs;      /* -j: worker processes; 1 parses in this process */
    kdc_cache_t *cache; /* NULL: --no-cache */
    int progress;       /* 0 never; "\r[i/n] path" on a terminal: 1 once the run has taken
                           a second, 3 at once; 2 a line "[i/n] path" per unit */
    const char *cwd;    /* paths in progress lines are shown relative to it */
    unsigned long unit_time_s;     /* --unit-time-limit: seconds of one unit's parse; 0 none */
    unsigned long unit_memory_mib; /* --unit-memory-limit: MiB a unit's parse may add; 0 none */
    int preambles; /* share precompiled preambles among the units parsed (preamble.h);
                           0: --no-preambles */
} kdc_jobs_opts_t;

typedef struct kdc_jobs_stats {
    size_t parsed;        /* units libclang parsed */
    size_t from_cache;    /* units whose model came from the cache */
    size_t failed;        /* units that became input errors */
    unsigned workers;     /* worker processes started (0: parsed in this process) */
    long worker_peak_rss_kib; /* the largest peak resident set of one worker */
    long worker_sum_rss_kib;  /* the sum of the workers' peaks (an upper bound of their total) */
    int cache_write_failed;   /* a cache write failed (noted once): write nothing more */
    size_t preambles;         /* shared preambles planned (preamble.h) */
    size_t preambles_built;   /* ... built (by this process or a worker) */
    size_t preamble_units;    /* units parsed against one */
    size_t preamble_fallbacks; /* units whose parse against one had errors: parsed again */
    double preamble_build_s;   /* time spent building them */
    unsigned long long preamble_disk_bytes; /* the files they took, at the end of the run */
    unsigned char program[16]; /* XXH3-128 of the models merged, in order: the program is a
                                  function of these bytes (the analysis cache's key, cache.h) */
} kdc_jobs_stats_t;

/* The number of CPUs this process may run on (sched_getaffinity), at least 1. */
unsigned kdc_jobs_cpus(void);

/*
 * Parses inputs->jobs[todo[0..ntodo)] (or loads them from the cache) and
 * merges them into prog in that order. Every unit ends merged or an input
 * error, never dropped: a unit libclang cannot parse becomes an input error
 * (in the same order); notes (a damaged cache entry, a cache
 * that cannot be written) are printed to stderr, never into the report.
 */
void kdc_jobs_run(const kdc_jobs_opts_t *o, kdc_inputs_t *inputs, const size_t *todo,
                  size_t ntodo, kdc_program_t *prog, kdc_jobs_stats_t *stats);

/*
 * Ends this process's worker processes and reaps them (SIGTERM: a worker in a cache
 * write ends when the entry is written; SIGKILL after 2 s); no worker starts after it.
 * For the thread that ends kdc-lint on a signal (termsig.h), while the run goes on in
 * another: the run's own thread must not be the caller.
 */
void kdc_jobs_stop(void);

#endif
