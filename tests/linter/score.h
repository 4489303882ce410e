/*
 * Comparing kdc-lint findings with inline markers.
 *
 * Fixture scoring is strict in both directions: every expect marker must be
 * reported, and every reported (file, line, rule) must carry an expect marker
 * (a finding on an ok line, or on an unmarked line, is extra).
 *
 * Acceptance scoring follows ../shared/cases/README.md, restricted to the
 * rules kdc-lint lists: in NN-<name>.c only marked (line, rule) pairs of
 * those rules count; in NN-ok-*.c every finding is a false positive.
 */
#ifndef KDC_TEST_SCORE_H
#define KDC_TEST_SCORE_H

#include "lintrun.h"
#include "markers.h"

#include <stddef.h>

typedef struct kdc_problems {
    char **v;        /* one human-readable line per missing or extra finding */
    size_t n;
} kdc_problems_t;

void kdc_problems_add(kdc_problems_t *p, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
void kdc_problems_free(kdc_problems_t *p);

/* Path shown in messages: path relative to base when below it, else path. */
const char *kdc_display_path(const char *path, const char *base);

/*
 * Strict two-way comparison. Appends one problem per missing expect and per
 * extra finding (distinct (file, line, rule) triples) and returns their count.
 */
size_t kdc_score_fixture(const kdc_markers_t *ms, const kdc_finding_t *f, size_t nf,
                         const char *display_base, kdc_problems_t *out);

typedef struct kdc_score {
    size_t expected_total;   /* expect markers of scored rules */
    size_t expected_found;   /* ... of which kdc-lint reported */
    size_t false_positives;  /* reported ok lines, or anything reported in an -ok- file */
} kdc_score_t;

/*
 * Acceptance scoring of one case file; rules/nrules are the scored rules
 * (kdc-lint --list-rules). Adds to *s and appends problems to out.
 */
void kdc_score_acceptance(const kdc_markers_t *ms, const kdc_finding_t *f, size_t nf,
                          const char *const *rules, size_t nrules, int ok_file,
                          const char *display_base, kdc_score_t *s, kdc_problems_t *out);

/* Returns 1 when the case file name (basename) is a compliant-only NN-ok-*.c case. */
int kdc_case_is_ok_file(const char *path);

#endif
