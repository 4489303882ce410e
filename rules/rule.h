/*
 * A kdc-lint rule: one descriptor in rules/<name>.c, documented in
 * rules/<name>.md, exercised by fixtures/<name>/. Rules read facts and
 * report findings; they never walk the AST, print, or depend on each other.
 */
#ifndef KDC_RULE_H
#define KDC_RULE_H

#include "facts.h"
#include "findings.h"

typedef struct kdc_rule kdc_rule_t;

typedef struct kdc_rule_ctx {
    const kdc_facts_t *facts;
    kdc_program_t *program;
    const kdc_options_t *opts;
    kdc_findings_t *out;
    const kdc_rule_t *rule;
} kdc_rule_ctx_t;

struct kdc_rule {
    const char *name;       /* kebab-case, as in RULES.md */
    const char *summary;    /* one line */
    kdc_severity_t severity;
    const char *confidence; /* "high" / "medium" */
    int in_default;         /* enabled by the default profile */
    void (*check)(kdc_rule_ctx_t *ctx);
};

/* The registry: every rule, in a stable order. */
extern const kdc_rule_t *const kdc_rules[];
extern const size_t kdc_nrules;
const kdc_rule_t *kdc_rule_find(const char *name);

/* Reports a finding of ctx->rule at `loc` inside f (message printf-style). */
void kdc_rule_report(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_loc_t *loc,
                     const kdc_related_t *related, size_t nrelated, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
