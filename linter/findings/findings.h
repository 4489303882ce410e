/* Findings collected from the rules, deduplicated and sorted for output. */
#ifndef KDC_FINDINGS_H
#define KDC_FINDINGS_H

#include "model.h"
#include <stddef.h>

typedef enum { KDC_SEV_NOTE, KDC_SEV_WARNING, KDC_SEV_ERROR } kdc_severity_t;

const char *kdc_severity_name(kdc_severity_t s);

typedef struct kdc_related {
    kdc_loc_t loc;
    const char *message;
} kdc_related_t;

typedef struct kdc_finding {
    const char *rule;
    kdc_severity_t severity;
    char *message;           /* owned */
    kdc_loc_t loc;
    const char *function;
    kdc_related_t *related;  /* owned array; messages owned */
    size_t nrelated;
    /* owned: the reason of the suppression comment that matched the finding, for the
     * reports that show suppressed findings (SARIF); NULL: not suppressed, shown */
    char *suppressed;
} kdc_finding_t;

typedef struct kdc_findings {
    kdc_finding_t *v;
    size_t n, cap;
    /* kdc_findings_add's index of v[0..indexed) by rule, file, line and column (a hash
     * table of positions + 1, 0 empty; nslots a power of two). Code that reorders or
     * drops entries of v need not keep it: it is rebuilt whenever n is not `indexed`
     * or the list was sorted. */
    size_t *slots, nslots, indexed;
} kdc_findings_t;

/* Takes ownership of f's message and related array. Drops exact duplicates
 * (same rule and location), e.g. a header analysed through two units. */
void kdc_findings_add(kdc_findings_t *fs, kdc_finding_t *f);
void kdc_findings_sort(kdc_findings_t *fs);
void kdc_findings_free(kdc_findings_t *fs);

/* Frees what one finding owns (its message, related locations, suppression reason). */
void kdc_finding_free(kdc_finding_t *f);

/* The findings of fs that are not suppressed: what a run reports as problems. */
size_t kdc_findings_nshown(const kdc_findings_t *fs);

#endif
