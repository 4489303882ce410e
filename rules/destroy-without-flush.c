/*
 * destroy-without-flush: a producer destroyed on a path where produced
 * messages may still be queued: no rd_kafka_flush() (or drain loop on
 * rd_kafka_outq_len()) between the produce and the destroy. rd_kafka_destroy()
 * purges what is still queued; those messages are never delivered and, when
 * their delivery reports were not required, nobody notices.
 *
 * Confidence: medium. Reported on the destroy (rd_kafka_destroy, C++ delete)
 * when the program never flushes that producer, or when a path in the same
 * function leads from a produce to the destroy without a flush. A flush whose
 * result is ignored still counts.
 */
#include "consumer_common.h"
#include "results.h"

static int flushes_anywhere(kdc_rule_ctx_t *ctx, size_t client) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if (!api || !(api->roles & (KDC_API_FLUSH | KDC_API_OUTQ | KDC_API_CONFIRM)))
                continue;
            kdc_bits_t clients;
            int unknown = 0;
            kdc_call_clients(ctx, f, f->calls[c], api, 0, &clients, &unknown);
            int hit = kdc_bits_get(&clients, client) || unknown;
            kdc_bits_free(&clients);
            if (hit)
                return 1;
        }
    }
    return 0;
}

typedef struct dwf_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *destroy;
    kdc_outcome_t outcome; /* of the produce: its failure edges queue nothing */
    const kdc_expr_t *drain[32]; /* conditions of drain loops (`while (run && outq_len(rk))`) */
    size_t ndrain;
    int reached;
} dwf_walk_t;

static int is_drain_call(const kdc_expr_t *e, void *arg) {
    (void)arg;
    const kdc_api_t *api = e->kind == KDC_E_CALL ? kdc_api_lookup(e) : NULL;
    return api && (api->roles & (KDC_API_FLUSH | KDC_API_OUTQ)) != 0;
}

static int add_drain_part(const kdc_expr_t *e, void *arg) {
    dwf_walk_t *w = arg;
    if (w->ndrain < 32)
        w->drain[w->ndrain++] = e;
    return 0;
}

/* A loop whose condition waits for the queue to drain is a drain loop on every
 * way out of it, also when a cancellation flag ends it early (the program
 * asked to stop waiting). */
static void find_drain_loops(const kdc_stmt_t *st, void *arg) {
    if ((st->kind == KDC_S_WHILE || st->kind == KDC_S_DO || st->kind == KDC_S_FOR) && st->expr &&
        kdc_expr_walk(st->expr, is_drain_call, NULL))
        kdc_expr_walk(st->expr, add_drain_part, arg);
}

static int in_drain_condition(const dwf_walk_t *w, const kdc_expr_t *e) {
    for (size_t i = 0; i < w->ndrain; i++)
        if (w->drain[i] == e)
            return 1;
    return 0;
}

static int dwf_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    dwf_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
    return fail < 0 || fail != (int)i;
}

static int dwf_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    dwf_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->reached)
        return -1;
    if (nd->kind == KDC_N_COND && in_drain_condition(w, nd->expr))
        return -1;
    if (nd->kind != KDC_N_CALL)
        return st;
    if (nd->expr == w->destroy) {
        w->reached = 1;
        return -1;
    }
    const kdc_api_t *api = kdc_api_lookup(nd->expr);
    if ((api && (api->roles & (KDC_API_FLUSH | KDC_API_OUTQ | KDC_API_CONFIRM))) ||
        kdc_facts_call_confirms(w->ctx->facts, w->f, nd->expr))
        return -1;
    return st;
}

/* A produce in f from which the destroy is reached without a flush. */
static const kdc_expr_t *unflushed_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                           const kdc_expr_t *destroy) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return NULL;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (!api || !(api->roles & KDC_API_PRODUCE) || g->call_node[c] < 0)
            continue;
        dwf_walk_t w = {.ctx = ctx, .f = f, .destroy = destroy};
        kdc_outcome_init(&w.outcome, ctx->program, f, f->calls[c]);
        kdc_stmt_walk(f->body, find_drain_loops, &w);
        kdc_search_t s = {dwf_visit, dwf_edge, &w, 1};
        kdc_cfg_search(g, g->call_node[c], 0, &s);
        if (w.reached)
            return f->calls[c];
    }
    return NULL;
}

static void check_destroy(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 0, &clients, &unknown);
    for (size_t k = 0; k < clients.nwords * 64; k++) {
        if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(ctx->facts, k) != 0 ||
            !kdc_facts_client_produces(ctx->facts, k, NULL))
            continue;
        const kdc_expr_t *produce = NULL;
        if (flushes_anywhere(ctx, k) && !(produce = unflushed_produce(ctx, f, call)))
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k), "producer created here");
        if (produce)
            kdc_notes_add(&notes, &produce->loc, "produced here, not flushed before the destroy");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "producer destroyed while produced messages may still be queued: "
                        "rd_kafka_destroy() purges them undelivered; call rd_kafka_flush() "
                        "(C++ flush()) first");
        break;
    }
    kdc_bits_free(&clients);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_DESTROY, check_destroy);
}

const kdc_rule_t kdc_rule_destroy_without_flush = {
    "destroy-without-flush",
    "producer destroyed where produced messages may still be queued (no flush first)",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
