#define _GNU_SOURCE
/* The rule registry: the one list of rules. A test checks that it agrees with
 * the rule docs (rules/NAME.md) and fixture folders. */
#include "rule.h"
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

extern const kdc_rule_t kdc_rule_bare_commit;
extern const kdc_rule_t kdc_rule_produce_without_delivery_callback;
extern const kdc_rule_t kdc_rule_unconfirmed_dlq_routing;
extern const kdc_rule_t kdc_rule_producer_acks_weakened;
extern const kdc_rule_t kdc_rule_idempotence_disabled;
extern const kdc_rule_t kdc_rule_shared_transactional_id;
extern const kdc_rule_t kdc_rule_read_uncommitted_input;
extern const kdc_rule_t kdc_rule_produce_result_ignored;
extern const kdc_rule_t kdc_rule_flush_as_confirmation;
extern const kdc_rule_t kdc_rule_commit_before_delivery_report;
extern const kdc_rule_t kdc_rule_commit_offset_off_by_one;
extern const kdc_rule_t kdc_rule_txn_error_not_aborted;
extern const kdc_rule_t kdc_rule_commit_on_failure;
extern const kdc_rule_t kdc_rule_commit_before_effect;
extern const kdc_rule_t kdc_rule_auto_commit_with_side_effects;
extern const kdc_rule_t kdc_rule_delivery_callback_ignores_error;
extern const kdc_rule_t kdc_rule_missing_rebalance_callback;
extern const kdc_rule_t kdc_rule_teardown_without_close;
extern const kdc_rule_t kdc_rule_destroy_without_flush;
extern const kdc_rule_t kdc_rule_out_of_order_offset_store;
extern const kdc_rule_t kdc_rule_dlq_retry_identity;
extern const kdc_rule_t kdc_rule_queue_full_dropped;
extern const kdc_rule_t kdc_rule_delivery_reports_not_served;
extern const kdc_rule_t kdc_rule_fatal_error_ignored;
extern const kdc_rule_t kdc_rule_partial_batch_commit;
extern const kdc_rule_t kdc_rule_offset_store_after_revoke;

const kdc_rule_t *const kdc_rules[] = {
    &kdc_rule_bare_commit,
    &kdc_rule_produce_without_delivery_callback,
    &kdc_rule_unconfirmed_dlq_routing,
    &kdc_rule_producer_acks_weakened,
    &kdc_rule_idempotence_disabled,
    &kdc_rule_shared_transactional_id,
    &kdc_rule_read_uncommitted_input,
    &kdc_rule_produce_result_ignored,
    &kdc_rule_flush_as_confirmation,
    &kdc_rule_commit_before_delivery_report,
    &kdc_rule_commit_offset_off_by_one,
    &kdc_rule_txn_error_not_aborted,
    &kdc_rule_commit_on_failure,
    &kdc_rule_commit_before_effect,
    &kdc_rule_auto_commit_with_side_effects,
    &kdc_rule_delivery_callback_ignores_error,
    &kdc_rule_missing_rebalance_callback,
    &kdc_rule_teardown_without_close,
    &kdc_rule_destroy_without_flush,
    &kdc_rule_out_of_order_offset_store,
    &kdc_rule_dlq_retry_identity,
    &kdc_rule_queue_full_dropped,
    &kdc_rule_delivery_reports_not_served,
    &kdc_rule_fatal_error_ignored,
    &kdc_rule_partial_batch_commit,
    &kdc_rule_offset_store_after_revoke,
};
const size_t kdc_nrules = sizeof kdc_rules / sizeof kdc_rules[0];

const kdc_rule_t *kdc_rule_find(const char *name) {
    for (size_t i = 0; i < kdc_nrules; i++)
        if (!strcmp(kdc_rules[i]->name, name))
            return kdc_rules[i];
    return NULL;
}

static void vreport(kdc_rule_ctx_t *ctx, kdc_severity_t sev, const kdc_func_t *f,
                    const kdc_loc_t *loc, const kdc_related_t *related, size_t nrelated,
                    const char *fmt, va_list ap) {
    kdc_finding_t fd = {0};
    if (vasprintf(&fd.message, fmt, ap) < 0)
        kdc_oom();
    fd.rule = ctx->rule->name;
    fd.severity = sev;
    fd.loc = *loc;
    fd.function = f ? f->name : NULL;
    if (nrelated) {
        fd.related = kdc_xrealloc(NULL, nrelated * sizeof *fd.related);
        for (size_t i = 0; i < nrelated; i++) {
            fd.related[i].loc = related[i].loc;
            fd.related[i].message = kdc_xstrdup(related[i].message);
        }
        fd.nrelated = nrelated;
    }
    kdc_findings_add(ctx->out, &fd);
}

void kdc_rule_report(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_loc_t *loc,
                     const kdc_related_t *related, size_t nrelated, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, ctx->rule->severity, f, loc, related, nrelated, fmt, ap);
    va_end(ap);
}

void kdc_rule_note(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_loc_t *loc,
                   const kdc_related_t *related, size_t nrelated, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vreport(ctx, KDC_SEV_NOTE, f, loc, related, nrelated, fmt, ap);
    va_end(ap);
}

void kdc_rule_for_each_api_call(kdc_rule_ctx_t *ctx, unsigned roles, kdc_api_call_fn fn) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (api && (api->roles & roles))
            fn(ctx, f, call, api);
    }
}

void kdc_notes_add(kdc_notes_t *notes, const kdc_loc_t *loc, const char *message) {
    if (notes->n < sizeof notes->v / sizeof notes->v[0]) {
        notes->v[notes->n].loc = *loc;
        notes->v[notes->n].message = message;
        notes->n++;
    }
}

static int same_file(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

void kdc_notes_add_settings(kdc_notes_t *notes, kdc_program_t *p, const kdc_loc_t *at,
                            const kdc_value_t *v, const char *key) {
    for (size_t i = 0; i < v->nset; i++) {
        const kdc_setting_t *s = v->set[i];
        if (!s->value || !s->loc.file || same_file(s->loc.file, at->file))
            continue;
        int named = 0;
        for (size_t k = 0; k < notes->n && !named; k++)
            named = same_file(notes->v[k].loc.file, s->loc.file);
        if (!named) {
            char *msg = kdc_xasprintf("%s=%s set here", key, s->value);
            kdc_notes_add(notes, &s->loc, kdc_intern(p, msg));
            free(msg);
        }
    }
}

void kdc_rule_clients(const kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *handle,
                      int type, kdc_bits_t *clients, int *unknown) {
    kdc_rule_clients_at(ctx, f, NULL, handle, type, clients, unknown);
}

void kdc_rule_clients_at(const kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_expr_t *handle, int type, kdc_bits_t *clients, int *unknown) {
    kdc_facts_clients_at(ctx->facts, f, call, handle, clients, unknown);
    size_t kept = 0;
    for (size_t k = kdc_bits_next(clients, 0); k < clients->nwords * 64;
         k = kdc_bits_next(clients, k + 1)) {
        if (!kdc_bits_get(clients, k))
            continue;
        int t = kdc_facts_client_type(ctx->facts, k);
        if (t >= 0 && t != type)
            clients->w[k >> 6] &= ~((uint64_t)1 << (k & 63)); /* shares the variable only */
        else
            kept++;
    }
    if (!kept)
        *unknown = 1;
}
