/*
 * Baselines: the findings a codebase already has, so that only new ones are
 * reported and fail the run. Findings are keyed by their fingerprint
 * (fingerprint.h: rule, path, function, normalised source line, occurrence),
 * which survives lines inserted or removed above them.
 *
 * The file is one JSON document (jansson), version 1:
 *
 *   {"version": 1, "tool": "kdc-lint 0.1.0",
 *    "findings": [{"fingerprint": "<32 hex digits>", "rule": "...", "file": "...",
 *                  "function": "...", "line": 42, "message": "..."}]}
 *
 * Only "version" and each entry's "fingerprint" are read; the other fields are
 * there for the people reviewing the file.
 */
#ifndef KDC_BASELINE_H
#define KDC_BASELINE_H

#include "fingerprint.h"
#include <stddef.h>

#define KDC_BASELINE_VERSION 1

typedef struct kdc_baseline kdc_baseline_t;

/* Reads and validates a baseline. NULL with *err (malloc'd, naming the file,
 * and the line and column or the entry) when it is missing or malformed. */
kdc_baseline_t *kdc_baseline_read(const char *path, char **err);
/* The same for a baseline whose contents are text[0..len) (it need not end in a NUL),
 * named path in messages: for tests and the fuzz target (fuzz/). */
kdc_baseline_t *kdc_baseline_parse(const char *path, const char *text, size_t len, char **err);
void kdc_baseline_free(kdc_baseline_t *b);

/* Is this fingerprint in the baseline? Each entry matches one finding. */
int kdc_baseline_take(kdc_baseline_t *b, const char *fingerprint);
/* Entries no finding matched (fixed since the baseline was written) in files
 * the run analysed (analysed(file, arg), file as the entry names it; NULL:
 * every file); *elsewhere (optional): unmatched entries of other files (a run
 * over a few files, as a pre-commit hook makes, cannot tell of those). */
size_t kdc_baseline_unmatched(const kdc_baseline_t *b, int (*analysed)(const char *, void *),
                              void *arg, size_t *elsewhere);

/* Writes the baseline of fs (fps[i] is the fingerprint of fs->v[i]; paths
 * shown relative to cwd) to path, replacing it atomically. 0, or -1 with *err. */
int kdc_baseline_write(const char *path, const kdc_findings_t *fs,
                       char (*fps)[KDC_FINGERPRINT_LEN + 1], const char *cwd, char **err);

#endif
