/*
 * commit-on-failure: a commit or offset store reachable on a path where the
 * processing of the message (a helper, a downstream write, the output
 * produce) reported failure. Transient failures (a database or broker down)
 * then delete data: the offset moves past a message whose effect never
 * happened. Contract rule 2: on a transient failure, do not commit.
 *
 * Confidence: medium. From a processing call whose result a condition tests,
 * only the branches on which it failed are followed, to the first commit of
 * the same message (or a commit without a message: a bare or list commit).
 * The path ends where the message is routed to a dead-letter queue (the
 * poison path: unconfirmed-dlq-routing checks that), where the processing is
 * retried (the call again), or where the next message is consumed.
 * Classification calls (parse, validate, decode, is_*, a configured
 * poison-classifier) are not processing: poison may be committed and skipped.
 */
#include "consumer_common.h"
#include "results.h"

#include <ctype.h>
#include <string.h>

typedef struct cof_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *proc;
    kdc_outcome_t outcome;
    const char *msgs[8];
    size_t nmsgs;
    const kdc_expr_t *commit;
} cof_walk_t;

static int is_msg(cof_walk_t *w, const char *usr) {
    for (size_t i = 0; usr && i < w->nmsgs; i++)
        if (w->msgs[i] == usr)
            return 1;
    return 0;
}

/* Does the commit cover the message whose processing failed? */
static int commit_matches(cof_walk_t *w, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api) { /* a helper that commits: when given the message */
        for (unsigned i = 0; i < call->nkids; i++)
            for (size_t k = 0; k < w->nmsgs; k++)
                if (kdc_mentions(call->kids[i], w->msgs[k]))
                    return 1;
        return 0;
    }
    const char *m = kdc_root_var(kdc_commit_message_of(call, api));
    if (m)
        return is_msg(w, m);
    const kdc_expr_t *list = kdc_api_arg(call, api->list);
    if (list && !kdc_expr_is_null(list))
        return 0; /* a list: built for some message, not known to be this one */
    /* a bare commit covers the failed message when offsets are stored on hand-over */
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(w->ctx, w->f, call, api, 1, &clients, &unknown);
    int covers = unknown;
    for (size_t k = 0; k < clients.nwords * 64 && !covers; k++)
        covers = kdc_bits_get(&clients, k) &&
                 kdc_facts_client_bool(w->ctx->facts, k, "enable.auto.offset.store", 1) != KDC_TRI_NO;
    kdc_bits_free(&clients);
    return covers;
}

static int cof_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    cof_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->commit || nd->kind != KDC_N_CALL)
        return n == g->exit || w->commit ? -1 : st;
    const kdc_expr_t *c = nd->expr;
    if (c == w->proc)
        return -1; /* processed again: a retry */
    const kdc_api_t *api = kdc_api_lookup(c);
    if (api && (api->roles & KDC_API_CONSUME))
        return -1;
    if (kdc_facts_call_routes_dlq(w->ctx->facts, w->f, c) ||
        kdc_facts_call_confirms(w->ctx->facts, w->f, c) ||
        kdc_options_has_role(w->ctx->opts, c, KDC_ROLE_CLASSIFIER))
        return -1; /* the poison path */
    if (kdc_facts_call_commits(w->ctx->facts, w->f, c) && commit_matches(w, c)) {
        w->commit = c;
        return -1;
    }
    return st;
}

static int cof_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    cof_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
    return fail < 0 || fail == (int)i;
}

/* Classification is not processing: a message found poison by parse(),
 * validate(), is_valid() may be logged, committed and skipped (decision
 * record rule 2), or routed to a dead-letter queue. */
static int is_classifier_name(const char *name) {
    static const char *const words[] = {"parse",    "validate", "valid",  "decode", "deserialize",
                                        "classify", "check",    "schema", "poison", "acceptable",
                                        NULL};
    static const char *const first[] = {"is", "has", "can", "should", NULL};
    const char *base = strrchr(name, ':');
    base = base ? base + 1 : name;
    char w[64];
    size_t n = 0, index = 0;
    for (const char *c = base;; c++) {
        if ((!*c || *c == '_' || (n && isupper((unsigned char)*c))) && n) {
            w[n] = 0;
            for (size_t i = 0; words[i]; i++)
                if (!strcmp(w, words[i]))
                    return 1;
            for (size_t i = 0; index == 0 && first[i]; i++)
                if (!strcmp(w, first[i]))
                    return 1;
            n = 0;
            index++;
        }
        if (!*c)
            return 0;
        if (*c != '_' && n + 1 < sizeof w)
            w[n++] = (char)tolower((unsigned char)*c);
    }
}

static int message_typed(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) && e->type &&
           (strstr(e->type, "rd_kafka_message_t") || strstr(e->type, "RdKafka::Message"));
}

/* Calls whose failure means "the message's effect did not happen": given a
 * consumed message (or its fields), and a produce, a side effect or code of
 * the analysed program (or outside it). */
static int is_processing(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call) {
    int given = 0;
    for (unsigned i = 0; i < call->nkids && !given; i++)
        given = kdc_expr_walk(call->kids[i], message_typed, NULL);
    if (!given)
        return 0;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_PRODUCE) != 0;
    if (kdc_facts_call_effect(ctx->facts, f, call))
        return 1;
    if (kdc_api_is_librdkafka(call) || call->callee_system || !*call->name ||
        is_classifier_name(call->name))
        return 0;
    return !kdc_facts_call_commits(ctx->facts, f, call) &&
           !kdc_facts_call_routes_dlq(ctx->facts, f, call) &&
           !kdc_options_has_role(ctx->opts, call, KDC_ROLE_CLASSIFIER);
}

static void check_func(kdc_rule_ctx_t *ctx, const kdc_func_t *f) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (g->call_node[c] < 0 || !is_processing(ctx, f, call))
            continue;
        cof_walk_t w = {ctx, f, call, {0}, {0}, 0, NULL};
        kdc_outcome_init(&w.outcome, ctx->program, f, call);
        if (!w.outcome.nvars && kdc_result_use(ctx->program, f, call) != KDC_USE_USED)
            continue; /* nobody looks at its outcome: nothing to follow */
        for (unsigned k = 0; k < call->nkids && w.nmsgs < 8; k++) {
            const char *m = kdc_root_var(call->kids[k]);
            if (m && kdc_expr_walk(call->kids[k], message_typed, NULL))
                w.msgs[w.nmsgs++] = m;
        }
        kdc_search_t s = {cof_visit, cof_edge, &w, 1};
        kdc_cfg_search(g, g->call_node[c], 0, &s);
        if (!w.commit)
            continue;
        /* only when some condition really separates failure from success */
        int tested = 0;
        for (unsigned n = 0; n < g->n && !tested; n++)
            tested = g->nodes[n].kind == KDC_N_COND &&
                     kdc_outcome_failure_edge(&w.outcome, g->nodes[n].expr) >= 0;
        if (!tested)
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, &call->loc, "processing reported failure here");
        kdc_rule_report(ctx, f, &w.commit->loc, notes.v, notes.n,
                        "committed on a path where processing failed: a transient failure "
                        "(database, broker, downstream service down) deletes the message; do not "
                        "commit (halt or retry so the offset stays), or route a poison message to "
                        "a dead-letter queue with confirmation first");
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++)
        check_func(ctx, kdc_program_func(ctx->program, i));
}

const kdc_rule_t kdc_rule_commit_on_failure = {
    "commit-on-failure",
    "commit or offset store reachable after the message's processing reported failure",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
