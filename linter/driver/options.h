/*
 * kdc-lint's command line: every option in one struct, read and checked
 * before anything else happens.
 */
#ifndef KDC_DRIVER_OPTIONS_H
#define KDC_DRIVER_OPTIONS_H

#include "filter.h"
#include "shard.h"
#include "util.h"

#include <stddef.h>

typedef KDC_VEC(const char *) kdc_strvec_t;

/* The default budget of one translation unit's parse (jobs.h). Far above a real unit: the
 * whole of librdkafka's tree parses in 11 s with -j2, its process tree peaking at 303 MiB
 * RSS (docs/performance.md); what stops at these limits is generated or hostile input (a
 * 100,000-long else-if chain took 393 s). */
#define KDC_UNIT_TIME_LIMIT_S 300
#define KDC_UNIT_MEMORY_LIMIT_MIB 8192

typedef struct kdc_lint_opts {
    const char *db_dir;         /* -p DIR, or NULL */
    const char *format;         /* --format: text, json, sarif, github */
    const char *out_path;       /* -o FILE; NULL: standard output */
    const char *profile;        /* --profile as given, or NULL */
    const char *color_when;     /* --color: auto, always, never */
    const char *changed_since;  /* --changed-since=REV, or NULL */
    const char *cache_dir;      /* --cache-dir, or NULL: the default one */
    const char *shard_spec;     /* --shard=K/N as given, or NULL */
    const char *progress_when;  /* --progress: auto, always, never */
    const char *explain_config; /* --explain-config=FILE:LINE, or NULL */
    const char *dump_config;    /* --dump-config=PATH, or NULL */
    unsigned njobs;             /* -j N; 0: the CPUs this process may run on */
    unsigned long unit_time_s;  /* --unit-time-limit (seconds, 0: none) */
    unsigned long unit_memory_mib; /* --unit-memory-limit (MiB, 0: none) */
    int no_cache, no_prefilter, no_preambles, want_stats, dump_model, fail_incomplete;
    int dashdash;               /* `--` given: its arguments, no compilation database searched */
    kdc_shard_t shard;          /* --shard, parsed (count 0: none) */
    kdc_filter_opts_t filter;   /* --config, --profile, rules on and off, suppressions, baseline */
    int *rule_on;               /* per registry index: -1 as configured, 0 --disable, 1 --enable */
    kdc_strvec_t extra;         /* --extra-arg and `-- ARGS` */
    kdc_strvec_t enables, disables, paths;
} kdc_lint_opts_t;

/* Reads argv (from argv[1]) into *o. Returns -1 when a run is to be made;
 * otherwise kdc-lint's exit status: 0 after --version, --help or --list-rules
 * (printed to standard output), 2 after a usage error (named on stderr).
 * Free *o with kdc_lint_opts_free either way. */
int kdc_lint_opts_parse(int argc, char **argv, kdc_lint_opts_t *o);
void kdc_lint_opts_free(kdc_lint_opts_t *o);

#endif
