/*
 * txn-error-not-aborted: an error from rd_kafka_send_offsets_to_transaction()
 * or rd_kafka_commit_transaction() on a path that neither aborts
 * (rd_kafka_error_txn_requires_abort → rd_kafka_abort_transaction), retries
 * (the same call again, for rd_kafka_error_is_retriable) nor fails hard
 * (is_fatal or any other error: exit, abort, return). Errors that are none of
 * abortable, retriable or fatal (CONCURRENT_TRANSACTIONS, librdkafka#3221)
 * then fall through and the transaction is committed without the input
 * offsets, or the next one is begun.
 *
 * Confidence: high. From the call, only the branches where its error is set
 * are followed; the error is unhandled when the path reaches another
 * transactional step, a produce or a commit. -1 timeouts are what librdkafka
 * recommends and are not a finding.
 */
#include "results.h"
#include "rule.h"

#include <string.h>

typedef struct txn_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *call;
    kdc_outcome_t outcome;
    const kdc_expr_t *continued; /* the step the error path continues with */
} txn_walk_t;

static int txn_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    txn_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->continued)
        return -1; /* returned: the caller gets the failure */
    if (nd->kind != KDC_N_CALL)
        return st;
    const kdc_expr_t *c = nd->expr;
    if (c == w->call)
        return -1; /* retried */
    const kdc_api_t *api = kdc_api_lookup(c);
    if (api && (api->roles & KDC_API_TXN_ABORT))
        return -1;
    if ((api && (api->roles & (KDC_API_TXN | KDC_API_PRODUCE | KDC_API_COMMIT | KDC_API_STORE))) ||
        kdc_facts_call_commits(w->ctx->facts, w->f, c)) {
        w->continued = c;
        return -1;
    }
    return st;
}

static int txn_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    txn_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
    return fail < 0 || fail == (int)i; /* follow only the branches with the error set */
}

static void check_txn(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_api_t *api) {
    (void)api;
    const char *n = call->name;
    if (!strstr(n, "send_offsets_to_transaction") && !strstr(n, "commit_transaction"))
        return;
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return;
    txn_walk_t w = {ctx, f, call, {0}, NULL};
    kdc_outcome_init(&w.outcome, ctx->program, f, call);
    kdc_search_t s = {txn_visit, txn_edge, &w, 1};
    kdc_cfg_search(g, g->call_node[call->call_id], 0, &s);
    if (!w.continued)
        return;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &w.continued->loc, "the transaction goes on here with the error unhandled");
    kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                    "an error of %s can reach the next transactional step without an abort, a "
                    "retry or a hard failure: handle rd_kafka_error_txn_requires_abort() (abort), "
                    "rd_kafka_error_is_retriable() (retry) and treat every other error as fatal",
                    call->is_method ? n + 9 : n);
}

static void check(kdc_rule_ctx_t *ctx) { kdc_rule_for_each_api_call(ctx, KDC_API_TXN, check_txn); }

const kdc_rule_t kdc_rule_txn_error_not_aborted = {
    "txn-error-not-aborted",
    "transaction error that neither aborts, retries nor fails hard",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
