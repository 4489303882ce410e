/*
 * Suppression comments, read from the source text (no libclang needed):
 *
 *   // kdc-lint: ignore[rule-a, rule-b] reason      (or the same in a block comment)
 *       after code: that line; on a line of its own: that line and the next
 *       (a finding is matched on any line from its start to its end);
 *   // kdc-lint: ignore-begin[rule] reason  ...  // kdc-lint: ignore-end
 *       every line from the begin comment to the end comment.
 *
 * A comment whose text starts with "kdc-lint:" followed by a word and '[', or
 * by a word starting with "ignore", is a directive. A directive without a rule
 * name or a reason, naming an unknown rule, or an unbalanced ignore-begin /
 * ignore-end suppresses nothing and is itself reported (invalid-suppression).
 */
#ifndef KDC_SUPPRESS_H
#define KDC_SUPPRESS_H

#include "findings.h"

/* Rule names of the driver's own diagnostics about suppressions. */
extern const char kdc_rule_invalid_suppression[];  /* "invalid-suppression" */
extern const char kdc_rule_unused_suppression[];   /* "unused-suppression" */

typedef struct kdc_suppressions kdc_suppressions_t;

kdc_suppressions_t *kdc_suppressions_new(void);
void kdc_suppressions_free(kdc_suppressions_t *s);

/* Reads the suppression comments of `file` (once; later calls do nothing).
 * The pointer is kept (findings about it point to it): it must outlive them. */
void kdc_suppressions_scan(kdc_suppressions_t *s, const char *file);

/* The same for a file whose contents are text[0..len) (copied; it need not end in a
 * NUL), without reading the file: for tests and the fuzz target (fuzz/). The file is
 * recorded as scanned; `file` is kept as kdc_suppressions_scan keeps it. */
void kdc_suppressions_scan_text(kdc_suppressions_t *s, const char *file, const char *text,
                                size_t len);

/* Is f suppressed by a valid suppression in its file (scanned before)? Returns
 * the reason written in the first suppression that matches (one line; owned by
 * s), or NULL. Every matching suppression is then marked used for f's rule.
 * Files are compared by pointer first, then by name. */
const char *kdc_suppressions_match(kdc_suppressions_t *s, const kdc_finding_t *f);

/* Adds the diagnostics to `out`: every invalid suppression, and every rule of
 * a valid suppression that matched no finding when unused(ctx, file, rule)
 * says unused ones are wanted there (NULL: never). */
void kdc_suppressions_report(const kdc_suppressions_t *s, kdc_findings_t *out,
                             int (*unused)(void *ctx, const char *file, const char *rule),
                             void *ctx);

#endif
