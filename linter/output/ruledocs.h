/* The rule docs (rules/<name>.md), embedded at build time by
 * linter/output/ruledocs.cmake so that reports can carry them (SARIF help). */
#ifndef KDC_RULEDOCS_H
#define KDC_RULEDOCS_H

#include <stddef.h>

typedef struct kdc_rule_doc {
    const char *name;     /* rule name: the doc's file name without .md */
    const char *markdown; /* the whole doc, NUL-terminated */
} kdc_rule_doc_t;

extern const kdc_rule_doc_t kdc_rule_docs[]; /* sorted by name */
extern const size_t kdc_nrule_docs;

/* The markdown of rule `name`'s doc, or NULL when it has none. */
const char *kdc_rule_doc(const char *name);

#endif
