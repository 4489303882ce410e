/*
 * What the driver reports: the rules' findings, filtered through the
 * configuration of each finding's file (rules on or off, severity, excludes),
 * suppression comments and the baseline. Rules never see any of this: the
 * driver runs them here, once per profile in force, and keeps from each run
 * the findings in files of that profile.
 */
#ifndef KDC_FILTER_H
#define KDC_FILTER_H

#include "config.h"
#include "facts.h"
#include "findings.h"
#include "inputs.h"
#include "model.h"

#include <stdio.h>

typedef struct kdc_filter_opts {
    kdc_overrides_t overrides;
    const char *baseline;       /* --baseline FILE, or NULL */
    const char *write_baseline; /* --write-baseline FILE, or NULL */
    int keep_suppressed;        /* findings suppressed by comments stay in the report,
                                 * marked (kdc_finding_t.suppressed): SARIF shows them */
} kdc_filter_opts_t;

typedef struct kdc_filter kdc_filter_t;

/* Loads --config (if any) and --baseline; `cwd` NULL: the working directory. NULL with *err (malloc'd) when the
 * baseline cannot be used: the run stops there (exit 2). Errors in
 * configuration files do not stop the run (kdc_filter_run reports them). */
kdc_filter_t *kdc_filter_new(const kdc_filter_opts_t *o, const char *cwd, char **err);
void kdc_filter_free(kdc_filter_t *fl);

/* --dump-config PATH: prints the effective configuration of PATH (a file or
 * directory) as JSON to `out`. Returns the exit code: 0, or 2 after naming
 * the configuration's errors on stderr. */
int kdc_filter_dump_config(kdc_filter_t *fl, const char *path, FILE *out);

/* The configurations of this run (discovery and cache). */
kdc_configs_t *kdc_filter_configs(kdc_filter_t *fl);

/* Is `file` governed by a configuration with errors? Such files are not
 * analysed, and nothing is reported about them. */
int kdc_filter_skips(kdc_filter_t *fl, const char *file);


/* The analysis options of the run: DLQ patterns and function roles are the
 * union over the configurations governing the analysed files (the
 * translation units and the files defining functions) and `more` (living as
 * long as fl): the files of units the prefilter skipped, so that skipping a
 * unit changes no option; strict when every one of those files is strict. */
void kdc_filter_options_with(kdc_filter_t *fl, const kdc_files_t *files,
                             const char *const *more, size_t nmore, kdc_options_t *opts);

/* Which rules run in each profile (need[0] default, need[1] strict; indices of
 * kdc_rules): those on in the configuration of some analysed file. */
typedef struct kdc_rule_plan {
    unsigned char *need[2];
} kdc_rule_plan_t;
void kdc_filter_plan(kdc_filter_t *fl, const kdc_files_t *files, kdc_rule_plan_t *plan);
void kdc_rule_plan_free(kdc_rule_plan_t *plan);

/* Runs the planned rules on `facts`: what each profile's rules report, before
 * any configuration, suppression or baseline applies, appended to runs[0]
 * (default) and runs[1] (strict). A function of the program, the analysis
 * options and the plan only (the analysis cache, cache.h, keeps it). */
void kdc_filter_check(const kdc_rule_plan_t *plan, const kdc_facts_t *facts, kdc_program_t *prog,
                      kdc_findings_t runs[2]);

/* The program's units with compile errors: suppressions in their main files are
 * never reported unused (a unit parsed with the wrong flags misses findings). */
void kdc_filter_set_incomplete(kdc_filter_t *fl, const kdc_program_t *prog);

/* Puts what is to be reported of the rules' findings `runs` (taken; left
 * empty) in `out`, sorted: findings of rules enabled for their file, not
 * excluded, not suppressed, not in the baseline, with the file's severity;
 * plus invalid-suppression and unused-suppression diagnostics (suppression
 * comments are read in the analysed files and the files with a finding).
 * With keep_suppressed, the findings suppressed by comments are in `out` too,
 * each with its suppression's reason (never baselined, never written to a
 * baseline). Writes --write-baseline. Configuration errors and a baseline that
 * cannot be written become errors in `in`. */

void kdc_filter_run(kdc_filter_t *fl, const kdc_rule_plan_t *plan, kdc_findings_t runs[2],
                    const kdc_files_t *files, kdc_inputs_t *in, kdc_findings_t *out);

/* A line for stderr about findings not shown (suppressed, in the baseline) and
 * the baseline written, when there is anything to say. analysed(file, arg):
 * did the run analyse that file (a path as the baseline names it); only
 * baseline entries of analysed files are called stale, and rewriting the
 * baseline is advised only when the run analysed all of its files (NULL:
 * every file). */
void kdc_filter_summary(const kdc_filter_t *fl, FILE *err, int (*analysed)(const char *, void *),
                        void *arg);

#endif
