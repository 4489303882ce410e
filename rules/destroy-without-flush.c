/*
 * destroy-without-flush: a producer destroyed on a path where produced
 * messages may still be queued: no rd_kafka_flush() (or drain loop on
 * rd_kafka_outq_len(), or wait for delivery reports) between the produce and
 * the destroy. rd_kafka_destroy() purges what is still queued; those
 * messages are never delivered and, when their delivery reports were not
 * required, nobody notices.
 *
 * Confidence: medium. Reported on the destroy (rd_kafka_destroy, C++ delete)
 * when the program never flushes that producer, or when a path leads from a
 * produce of that producer (directly or in a helper that returns without
 * flushing) to the destroy without a flush: in the destroy's function, or,
 * for a teardown helper that does not flush, in its callers up to the call
 * of the helper. A flush whose result is ignored still counts, and so does a
 * flush in a helper, or under a condition right before the destroy.
 */
#include "common/config_common.h"
#include "common/consumer_common.h"
#include "pts.h"
#include "results.h"

#include <stdlib.h>
#include <string.h>

#define DWF_MAX_DEPTH 4
#define DWF_BARRIER (KDC_API_FLUSH | KDC_API_OUTQ | KDC_API_CONFIRM | KDC_API_TXN_ABORT)

/* A flush, an outq_len drain, a confirming wait or abort_transaction (which
 * purges and waits) of the client. */
static int is_barrier_api(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          size_t client) {
    const kdc_api_t *api = kdc_api_lookup(call);
    return api && (api->roles & DWF_BARRIER) && kdc_call_on_client(ctx, f, call, api, 0, client);
}

/* A helper of the program that flushes (drains, waits for) the client: a
 * shutdown helper called before the destroy (on some path in it, as a close). */
static int helper_flushes(kdc_rule_ctx_t *ctx, const kdc_func_t *g, size_t client, int depth) {
    for (unsigned c = 0; c < g->ncalls; c++) {
        if (is_barrier_api(ctx, g, g->calls[c], client))
            return 1;
        const kdc_func_t *h = depth < DWF_MAX_DEPTH
                                  ? kdc_call_helper_for_client(ctx, g, g->calls[c], 0, client)
                                  : NULL;
        if (h && h != g && helper_flushes(ctx, h, client, depth + 1))
            return 1;
    }
    return 0;
}

typedef struct wait_loop {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    size_t client;
    int serves, found;
} wait_loop_t;

static int serves_client(const kdc_expr_t *e, void *arg) {
    wait_loop_t *w = arg;
    const kdc_api_t *api = e->kind == KDC_E_CALL ? kdc_api_lookup(e) : NULL;
    if (api && (api->roles & KDC_API_SERVE_DR) &&
        kdc_call_on_client(w->ctx, w->f, e, api, 0, w->client))
        w->serves = 1;
    return w->serves;
}

static void body_serves(const kdc_stmt_t *st, void *arg) {
    wait_loop_t *w = arg;
    if (st->expr)
        kdc_expr_walk(st->expr, serves_client, w);
}

/* while (status == RD_KAFKA_RESP_ERR__IN_PROGRESS) rd_kafka_poll(rk, 100);
 * a loop that waits for delivery state (written by the delivery callback)
 * while serving the client's delivery reports. */
static void find_wait_loop(const kdc_stmt_t *st, void *arg) {
    wait_loop_t *w = arg;
    if ((st->kind != KDC_S_WHILE && st->kind != KDC_S_DO && st->kind != KDC_S_FOR) || !st->expr ||
        w->found || !kdc_facts_reads_delivery_state(w->ctx->facts, st->expr))
        return;
    w->serves = 0;
    kdc_expr_walk(st->expr, serves_client, w);
    kdc_stmt_walk(st->body, body_serves, w);
    w->found = w->serves;
}

static int flushes_somewhere(kdc_rule_ctx_t *ctx, size_t client) {
    size_t napi, nf = kdc_program_nfuncs(ctx->program);
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++)
        if ((apis[j].api->roles & DWF_BARRIER) &&
            kdc_call_on_client(ctx, apis[j].f, apis[j].call, apis[j].api, 0, client))
            return 1;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        wait_loop_t w = {ctx, f, client, 0, 0};
        kdc_stmt_walk(f->body, find_wait_loop, &w);
        if (w.found)
            return 1;
    }
    return 0;
}

/* Is the client flushed (drained, waited for) anywhere in the program? Asked at every
 * destroy for each client it may be: each answer is kept for the rule's check
 * (ctx->state: per client, 0 not asked yet, 1 no, 2 yes). */
static int flushes_anywhere(kdc_rule_ctx_t *ctx, size_t client) {
    unsigned char *known = ctx->state;
    if (!known[client])
        known[client] = (unsigned char)(1 + flushes_somewhere(ctx, client));
    return known[client] == 2;
}

typedef struct dwf_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    size_t client;
    const kdc_expr_t *destroy; /* the target; NULL: the function's exit */
    const kdc_expr_t *produce; /* where the walk starts */
    int depth;
    kdc_outcome_t outcome; /* of the produce: its failure edges queue nothing */
    const kdc_func_t *site_f;    /* f is a helper called here (site, in site_f), with its */
    const kdc_expr_t *site;      /* constant arguments bound; NULL: any call */
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

/* A loop whose condition waits for the queue to drain (or for delivery
 * reports: a status cell or a pending counter the delivery callback writes)
 * is a drain loop on every way out of it, also when a cancellation flag ends
 * it early (the program asked to stop waiting). */
static void find_drain_loops(const kdc_stmt_t *st, void *arg) {
    dwf_walk_t *w = arg;
    if ((st->kind == KDC_S_WHILE || st->kind == KDC_S_DO || st->kind == KDC_S_FOR) && st->expr &&
        (kdc_expr_walk(st->expr, is_drain_call, NULL) ||
         kdc_facts_reads_delivery_state(w->ctx->facts, st->expr)))
        kdc_expr_walk(st->expr, add_drain_part, arg);
}

static int in_drain_condition(const dwf_walk_t *w, const kdc_expr_t *e) {
    for (size_t i = 0; i < w->ndrain; i++)
        if (w->drain[i] == e)
            return 1;
    return 0;
}

/* State 0: right after the produce, whose failure queued nothing; state 1:
 * the produce ran again (a loop): the message of the earlier round is queued
 * whatever the later one does. */
static int dwf_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    dwf_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int bound =
        w->site ? kdc_facts_bound_cond(w->ctx->facts, w->site_f, w->site, w->f, nd->expr) : -1;
    if (bound >= 0 && i != (unsigned)(bound ? 0 : 1))
        return 0; /* `if (expect_fail)` in a helper called with expect_fail = 1 */
    if (st)
        return 1;
    int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
    return fail < 0 || fail != (int)i;
}

/* A call that flushes the client: flush, drain, confirming wait, or a helper doing one. */
static int flushes(dwf_walk_t *w, const kdc_expr_t *call) {
    const kdc_func_t *h = kdc_call_helper_for_client(w->ctx, w->f, call, 0, w->client);
    return is_barrier_api(w->ctx, w->f, call, w->client) ||
           kdc_facts_call_roles(w->ctx->facts, w->f, call).confirms ||
           (h && helper_flushes(w->ctx, h, w->client, w->depth + 1));
}

static int flush_barrier(void *arg, const kdc_expr_t *call) {
    return flushes(arg, call);
}

/* Does the (non-loop) condition n only choose whether to flush before the
 * destroy (or the exit of a helper)? */
static int guards_flush(dwf_walk_t *w, const kdc_cfg_t *g, int n) {
    return kdc_cfg_chooses_barrier(g, n, w->destroy, flush_barrier, w);
}

static int dwf_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    dwf_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->reached)
        return -1;
    if (n == g->exit) {
        w->reached = !w->destroy;
        return -1;
    }
    if (nd->kind == KDC_N_COND &&
        (in_drain_condition(w, nd->expr) || (!nd->loop_cond && guards_flush(w, g, n))))
        return -1;
    if (nd->kind != KDC_N_CALL)
        return st;
    if (w->destroy && nd->expr == w->destroy) {
        w->reached = 1;
        return -1;
    }
    if (nd->expr == w->produce)
        return 1;
    return flushes(w, nd->expr) ? -1 : st;
}

static const kdc_expr_t *pending_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                                         const kdc_expr_t *destroy, int depth,
                                         const kdc_func_t *site_f, const kdc_expr_t *site);

/* Does the call queue a message of the client that may still be queued when
 * it returns: a produce, or a helper that produces without flushing on some
 * path to its exit, with this call's constant arguments? */
static int queues(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call, size_t client,
                  int depth) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_PRODUCE) && kdc_call_on_client(ctx, f, call, api, 0, client);
    const kdc_func_t *h =
        depth < DWF_MAX_DEPTH ? kdc_call_helper_for_client(ctx, f, call, 0, client) : NULL;
    return h && h != f && pending_produce(ctx, h, client, NULL, depth + 1, f, call);
}

/* A produce (or producing helper call) in f from which the destroy (NULL: the
 * exit of f) is reached without a flush of the client; f called at site (in
 * site_f; NULL: any call). */
static const kdc_expr_t *pending_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                                         const kdc_expr_t *destroy, int depth,
                                         const kdc_func_t *site_f, const kdc_expr_t *site) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return NULL;
    for (unsigned c = 0; c < f->ncalls; c++) {
        if (g->call_node[c] < 0 || !queues(ctx, f, f->calls[c], client, depth))
            continue;
        dwf_walk_t w = {.ctx = ctx,
                        .f = f,
                        .client = client,
                        .destroy = destroy,
                        .produce = f->calls[c],
                        .depth = depth,
                        .site_f = site_f,
                        .site = site};
        kdc_outcome_init(&w.outcome, ctx->program, f, f->calls[c]);
        kdc_stmt_walk(f->body, find_drain_loops, &w);
        kdc_search_t s = {dwf_visit, dwf_edge, &w, 2};
        kdc_cfg_search(g, g->call_node[c], 0, &s);
        if (w.reached)
            return f->calls[c];
    }
    return NULL;
}

/* Is the destroy reached from the entry of f without a flush of the client? */
static int unflushed_from_entry(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                                const kdc_expr_t *destroy) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return 0;
    dwf_walk_t w = {.ctx = ctx, .f = f, .client = client, .destroy = destroy};
    kdc_stmt_walk(f->body, find_drain_loops, &w);
    kdc_search_t s = {dwf_visit, dwf_edge, &w, 2};
    kdc_cfg_search(g, g->entry, 1, &s); /* state 1: no produce outcome to prune by */
    return w.reached;
}

/* A produce in the caller from which the call of the teardown helper is
 * reached without a flush. */
static const kdc_expr_t *pending_before(kdc_rule_ctx_t *ctx, const kdc_func_t *caller,
                                        size_t client, const kdc_expr_t *call) {
    return pending_produce(ctx, caller, client, call, 0, NULL, NULL);
}

/* The destroy is in a helper (a teardown function) that does not flush first:
 * a produce in a caller from which the call of the helper is reached without a
 * flush. */
static const kdc_expr_t *pending_at_caller(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                                           const kdc_expr_t *destroy) {
    if (!unflushed_from_entry(ctx, f, client, destroy))
        return NULL;
    return kdc_at_helper_calls(ctx, f, 0, client, pending_before);
}

static void check_destroy(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    if (kdc_expr_is_topic_handle(ctx, f, kdc_api_arg(call, api->handle)))
        return; /* delete topic: the client lives on */
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 0, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        /* A transactional producer's messages are delivered by commit_transaction(),
         * which flushes; what an open transaction holds at destroy is aborted together
         * with its input offsets (they were never committed): nothing is lost. */
        if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(ctx->facts, k) != 0 ||
            !kdc_facts_client_produces(ctx->facts, k, NULL) || kdc_config_is_transactional(ctx, k))
            continue;
        const kdc_expr_t *produce = NULL;
        if (flushes_anywhere(ctx, k) &&
            !(produce = pending_produce(ctx, f, k, call, 0, NULL, NULL)) &&
            !(produce = pending_at_caller(ctx, f, k, call)))
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
    size_t n = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts));
    ctx->state = calloc(n ? n : 1, 1);
    if (!ctx->state)
        kdc_oom();
    kdc_rule_for_each_api_call(ctx, KDC_API_DESTROY, check_destroy);
    free(ctx->state);
    ctx->state = NULL;
}

const kdc_rule_t kdc_rule_destroy_without_flush = {
    "destroy-without-flush",
    "producer destroyed where produced messages may still be queued (no flush first)",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
