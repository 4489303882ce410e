/* Output formats: one file each. The driver alone chooses and writes them. */
#ifndef KDC_OUTPUT_H
#define KDC_OUTPUT_H

#include "findings.h"
#include "inputs.h"
#include "model.h"
#include "paths.h"

#include <stdio.h>

typedef struct kdc_run {
    const kdc_findings_t *findings;
    const kdc_inputs_t *inputs;    /* errors and notes about inputs */
    const kdc_program_t *program;  /* translation units (incomplete ones) */
    double seconds;
    const char *cwd;
    int color;                     /* text: ANSI colours (the driver decides: --color) */
    size_t skipped;                /* translation units the prefilter did not parse */
    const struct kdc_shard *shard; /* --shard=K/N (shard.h), or NULL */
} kdc_run_t;

/* A shard's description for its JSON or SARIF report ("shard", "kdcShard"). */
struct json_t;
struct json_t *kdc_output_shard_json(const kdc_run_t *run);

typedef int (*kdc_output_fn)(FILE *o, const kdc_run_t *run);

/* The writer of --format=NAME (text, json, sarif, github), or NULL. Each
 * returns 0, or -1 when the report could not be written. */
kdc_output_fn kdc_output_format(const char *name);

int kdc_output_text(FILE *o, const kdc_run_t *run);
int kdc_output_json(FILE *o, const kdc_run_t *run);
int kdc_output_sarif(FILE *o, const kdc_run_t *run);  /* SARIF 2.1.0 */
int kdc_output_github(FILE *o, const kdc_run_t *run); /* GitHub Actions workflow commands */

#endif
