/*
 * A kdc-lint rule: one descriptor in rules/<name>.c, documented in
 * rules/<name>.md, exercised by fixtures/<name>/. Rules read facts and
 * report findings; they never walk the AST, print, or depend on each other.
 */
#ifndef KDC_RULE_H
#define KDC_RULE_H

#include "api.h"
#include "facts.h"
#include "findings.h"

typedef struct kdc_rule kdc_rule_t;

typedef struct kdc_rule_ctx {
    const kdc_facts_t *facts;
    kdc_program_t *program;
    const kdc_options_t *opts;
    kdc_findings_t *out;
    const kdc_rule_t *rule;
    void *state; /* the rule's own, for one check: answers it keeps (NULL until it sets it) */
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

/* Calls fn for every call in the program whose librdkafka/libkdc API entry has
 * one of `roles` (KDC_API_*). */
typedef void (*kdc_api_call_fn)(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                                const kdc_api_t *api);
void kdc_rule_for_each_api_call(kdc_rule_ctx_t *ctx, unsigned roles, kdc_api_call_fn fn);

/* Related locations of a finding (at most 4 are shown). */
typedef struct kdc_notes {
    kdc_related_t v[4];
    size_t n;
} kdc_notes_t;
void kdc_notes_add(kdc_notes_t *notes, const kdc_loc_t *loc, const char *message);

/* A note at each setting of `key` that decided the value v ("KEY=VALUE set here"), when
 * its file is neither the finding's (`at`) nor a note's: a finding names every file its
 * verdict depends on (a configuration helper in a file of its own), so that a change
 * there is a change to the finding for --changed-since, the baseline and the hooks. */
void kdc_notes_add_settings(kdc_notes_t *notes, kdc_program_t *p, const kdc_loc_t *at,
                            const kdc_value_t *v, const char *key);

/* Clients (KDC_OBJ_CLIENT indices) a handle expression in f may denote, of
 * the kind a rule cares about (`type`: 0 producers, 1 consumers; clients of
 * unknown kind are included). *unknown is set when some value cannot be
 * followed, or no client of that kind is found. Free with kdc_bits_free. */
void kdc_rule_clients(const kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *handle,
                      int type, kdc_bits_t *clients, int *unknown);

/* The same for a handle argument of `call` (in f), as it is at that call: a
 * local variable denotes what the assignments of it that reach the call give. */
void kdc_rule_clients_at(const kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_expr_t *handle, int type, kdc_bits_t *clients, int *unknown);

/* Reports a finding of ctx->rule at `loc` inside f (message printf-style). */
void kdc_rule_report(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_loc_t *loc,
                     const kdc_related_t *related, size_t nrelated, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

/* The same at note level: what the strict profile reports when a value
 * cannot be verified. */
void kdc_rule_note(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_loc_t *loc,
                   const kdc_related_t *related, size_t nrelated, const char *fmt, ...)
    __attribute__((format(printf, 6, 7)));

#endif
