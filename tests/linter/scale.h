/*
 * Shared by the scale tests (lint.parallel, lint.prefilter, lint.cache,
 * lint.shard): running kdc-lint in a scratch tree and comparing reports.
 */
#ifndef KDC_TEST_SCALE_H
#define KDC_TEST_SCALE_H

#include "lintrun.h"
#include "scratch.h"

/* The kdc-lint under test (KDC_LINT); the test fails when it is not set. */
const char *scale_lint_path(void);

/* Runs kdc-lint with the NULL-terminated arguments in cwd; returns its exit
 * code. A run that cannot start or times out fails the test. */
int scale_lint(kdc_run_t *r, const char *cwd, ...);
int scale_lintv(kdc_run_t *r, const char *cwd, const char *const *args);
#define LINT(r, cwd, ...) scale_lint((r), (cwd), __VA_ARGS__, (const char *)NULL)
/* The same as user nobody when the test runs as root (permission tests). */
int scale_lint_nobody(kdc_run_t *r, const char *cwd, ...);
#define LINT_AS_NOBODY(r, cwd, ...) scale_lint_nobody((r), (cwd), __VA_ARGS__, (const char *)NULL)
/* The same with another executable than KDC_LINT. */
int scale_lint_with(const char *lint, kdc_run_t *r, const char *cwd, ...);

/* The report with the value of every "seconds" key replaced by 0 (the only
 * part of a report that differs between identical runs); malloc'd. */
char *scale_without_seconds(const char *report);

/* Fails the test, showing both, unless a and b are byte-identical once
 * "seconds" is blanked. */
void scale_same_report(const char *what, const char *a, const char *b);

/* Prints a run (exit code, stdout, stderr) for a failure message. */
void scale_show(const kdc_run_t *r);

/* Fails unless the run exited with `code` and stderr contains each of the
 * NULL-terminated needles. */
void scale_expect_err(const kdc_run_t *r, int code, ...);
#define EXPECT_ERR(r, code, ...) scale_expect_err((r), (code), __VA_ARGS__, (const char *)NULL)

#endif
