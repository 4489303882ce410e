/*
 * kdc-lint runs for the configuration, suppression and baseline tests: each
 * test writes a small tree of sources and .kdc-lint.yaml files into a
 * directory of its own, runs kdc-lint there (KDC_LINT), and asserts the exit
 * code and the findings of the JSON report. Failures go through cmocka's
 * fail_msg() with the command, exit code, stdout and stderr.
 */
#ifndef KDC_TEST_LINTCASE_H
#define KDC_TEST_LINTCASE_H

#include <jansson.h>
#include <stddef.h>

#include "lintrun.h"

typedef struct lc_res {
    kdc_run_t run; /* out, err */
    int code;      /* exit status; -1 when timed out */
    char *cmd;
    json_t *json;  /* the report, when stdout was a JSON document */
} lc_res_t;

/* Sets up the temporary root (once per test program); reads KDC_LINT. */
int lc_setup(void **state);
int lc_teardown(void **state);

/* A fresh directory for one test, below the temporary root; malloc'd. */
char *lc_dir(const char *name);
/* Writes text to dir/rel, creating directories. */
void lc_write(const char *dir, const char *rel, const char *text);
/* Contents of dir/rel, malloc'd (fails the test when it cannot be read). */
char *lc_read(const char *dir, const char *rel);

/* Runs kdc-lint in cwd with the NULL-terminated arguments. */
void lc_run(lc_res_t *r, const char *cwd, ...);
#define LC(r, cwd, ...) lc_run((r), (cwd), __VA_ARGS__, (const char *)NULL)
void lc_free(lc_res_t *r);

/* The exit code is `code` and no sanitizer reported anything. */
void lc_expect_exit(const lc_res_t *r, int code);
void lc_expect_err(const lc_res_t *r, const char *needle);
void lc_expect_no_err(const lc_res_t *r, const char *needle);
void lc_expect_out(const lc_res_t *r, const char *needle);
void lc_expect_no_out(const lc_res_t *r, const char *needle);

/* From the JSON report: the number of findings of `rule` (NULL: any). */
size_t lc_nfindings(const lc_res_t *r, const char *rule);
/* The finding of `rule` at file:line, or NULL. */
json_t *lc_finding(const lc_res_t *r, const char *rule, const char *file, long line);
/* The same, failing the test when it is absent. */
json_t *lc_need_finding(const lc_res_t *r, const char *rule, const char *file, long line);
/* A string member of a finding. */
const char *lc_str(json_t *finding, const char *key);

/* Occurrences of needle in text. */
size_t lc_count(const char *text, const char *needle);

#endif
