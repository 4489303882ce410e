/*
 * --shard=K/N: a deterministic split of a run's report for CI matrices, and
 * `kdc-lint merge`, which joins the N reports into the report of the whole run.
 *
 * Findings are whole-program, so every shard analyses every unit it needs
 * (parsed, or loaded from a shared cache) and reports only the findings whose
 * primary location is in one of its files: file F belongs to shard
 * 1 + XXH3-64(F relative to the repository root) mod N. Input errors,
 * incomplete units and notes are reported by every shard (each shard's exit
 * code tells of them). A shard's JSON report carries a "shard" object, a
 * SARIF report a run property "kdcShard": its index, the count, the run id and
 * each finding's position in the whole run's report. `kdc-lint merge` checks
 * that the N reports are the N shards of one run (the same tool version,
 * format, count, run id; every index once; everything but the findings equal)
 * and writes the report the unsharded run writes, byte for byte except the
 * JSON "seconds" (the longest shard's).
 *
 * The run id is an XXH3-128 over the tool version, the options that decide
 * findings and the translation units (path shown, compiler arguments,
 * contents of the main file), so shards of different commits, options or
 * trees do not merge.
 */
#ifndef KDC_SHARD_H
#define KDC_SHARD_H

#include "findings.h"

#include <stddef.h>
#include <stdio.h>

typedef struct kdc_shard {
    unsigned index, count; /* 1 <= index <= count */
    char run_id[33];       /* 32 hex digits */
    size_t *order;         /* per finding kept: its position in the whole run's list */
    size_t total;          /* findings of the whole run */
} kdc_shard_t;

/* The largest N of --shard=K/N (and of a report kdc-lint merge reads). */
#define KDC_SHARD_MAX 1000

/* Parses "K/N" (1 <= K <= N <= KDC_SHARD_MAX). Returns 0, or -1 with *err (malloc'd). */
int kdc_shard_parse(const char *spec, kdc_shard_t *sh, char **err);

/* The shard (1..count) a file belongs to, by its path relative to `root`. */
unsigned kdc_shard_of(const char *file, const char *root, unsigned count);

/* Keeps in fs (sorted) only the findings of shard sh->index; fills sh->order. */
void kdc_shard_select(kdc_shard_t *sh, kdc_findings_t *fs, const char *root);
void kdc_shard_free(kdc_shard_t *sh);

/* The run id of `n` strings that describe a run (see above), into out. */
void kdc_shard_run_id(const char *const *parts, size_t n, char out[33]);

#endif
