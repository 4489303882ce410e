/* What a run of kdc-lint says on stderr once its report is written, and its exit status. */
#ifndef KDC_DRIVER_SUMMARY_H
#define KDC_DRIVER_SUMMARY_H

#include "run.h"

/* Prints the notes about inputs, the incomplete units, the input errors, the
 * summary lines (findings; not shown by --changed-since or --shard; skipped
 * by the prefilter; suppressed or in the baseline) and --stats, and returns
 * the exit status: 0 no findings, 1 findings, 2 when an input had an error,
 * the report could not be written, or --fail-on-incomplete met an incomplete
 * unit. */
int kdc_lint_summary(const kdc_lint_run_t *r);

#endif
