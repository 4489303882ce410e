/*
 * One run of kdc-lint: its steps, in order, and what they hand each other.
 *
 *   open_filter      configuration (--config), baseline; --dump-config ends here
 *   open_cache       .kdc-cache or --cache-dir (a default one that cannot be used: a note)
 *   collect_inputs   translation units from the paths or the compilation database;
 *                    the report file, never one of them
 *   select_units     not those of broken configurations, nor those the prefilter skips
 *   analyse          the stored analysis when it applies, else parse (jobs.h), build the
 *                    facts and run the planned rules (and store what they found)
 *   select_findings  configuration, suppressions, baseline; --changed-since; --shard
 *   write_report     the chosen format, to -o or standard output
 *   then summary.h:  notes, incomplete units and input errors on stderr, --stats
 */
#ifndef KDC_DRIVER_RUN_H
#define KDC_DRIVER_RUN_H

#include "cache.h"
#include "changed.h"
#include "filter.h"
#include "inputs.h"
#include "jobs.h"
#include "options.h"
#include "prefilter.h"

#include <stdio.h>

typedef struct kdc_lint_run {
    const kdc_lint_opts_t *o;
    double t0, t_prefilter, t_parsed, t_analysed; /* kdc_now_seconds() at each step */
    char *cwd;
    const char *db_dir; /* -p DIR, or the directory of the database found, or NULL */
    char *db_found;     /* ... found without -p (kdc_compdb_find), or NULL */
    kdc_filter_t *filter;
    kdc_changed_t changed;      /* --changed-since */
    kdc_cache_t *cache;         /* NULL: none */
    kdc_inputs_t inputs;
    FILE *out;                  /* the report: -o FILE or standard output */
    size_t *todo, ntodo;        /* the units to analyse (indices of inputs.jobs) */
    size_t nunits;              /* ... before the prefilter */
    kdc_prefilter_result_t pre;
    kdc_program_t *prog;
    kdc_jobs_stats_t js;
    long rss_parsed_kib;        /* resident once the models were merged */
    int analysis_cached;        /* the rules' findings came from the cache */
    int models_skipped;         /* ... with no model loaded */
    kdc_options_t opts;         /* the analysis options of the analysed files */
    kdc_files_t files;
    kdc_rule_plan_t plan;
    kdc_findings_t runs[2];     /* what the rules found, per profile */
    kdc_findings_t findings;    /* what is reported */
    size_t run_findings;        /* ... of the whole run, before --shard */
    kdc_shard_t shard;          /* --shard (count 0: none), with the findings it keeps */
    size_t unchanged_findings;  /* not shown: in files unchanged since --changed-since */
    int write_failed;           /* the report could not be written */
} kdc_lint_run_t;

/* Runs kdc-lint with the options read from its command line; returns its exit
 * status: 0 no findings, 1 findings, 2 usage, input or configuration error. */
int kdc_lint_run(const kdc_lint_opts_t *o);

#endif
