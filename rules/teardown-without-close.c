/*
 * teardown-without-close: a consumer that commits offsets itself is destroyed
 * without rd_kafka_consumer_close() (or with RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
 * or C++ delete without close()). close() waits for outstanding commits and
 * leaves the group cleanly; without it in-flight (asynchronous) commits are
 * dropped and the group waits for the session timeout before rebalancing.
 *
 * Confidence: medium. Reported on the destroy call when the program never
 * closes that consumer (rd_kafka_consumer_close(), rd_kafka_consumer_close_queue(),
 * C++ close()), when a path leads from a commit of that consumer to the
 * destroy without a close (in the destroy's function, or, for a teardown
 * helper that does not close, in its callers up to the call of the helper),
 * or when the destroy's flags may ask not to close it and no close precedes
 * it on every path in its function. A destroy in the consumer's creating
 * function before anything was committed (a failed subscription) is not
 * reported.
 */
#include "common/consumer_common.h"
#include "pts.h"

#include <string.h>

#define TWC_MAX_DEPTH 4

/* rd_kafka_consumer_close_queue(rk, queue): the asynchronous close (its
 * completion is awaited with rd_kafka_consumer_closed()). */
static const kdc_api_t close_queue_api = {"rd_kafka_consumer_close_queue", KDC_API_CLOSE, 0,
                                          KDC_ARG_NONE, KDC_ARG_NONE, KDC_ARG_NONE,
                                          KDC_ARG_NONE, KDC_ARG_NONE, KDC_ARG_NONE,
                                          KDC_ARG_NONE, 0};

static const kdc_api_t *close_api(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_CLOSE) ? api : NULL;
    return call->name && !strcmp(call->name, "rd_kafka_consumer_close_queue") ? &close_queue_api
                                                                              : NULL;
}

/* A close of the client, directly or in a helper of the program (on some path in it). */
static int closes(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call, size_t client,
                  int depth) {
    const kdc_api_t *api = close_api(call);
    if (api)
        return kdc_call_on_client(ctx, f, call, api, 1, client);
    const kdc_func_t *g =
        depth < TWC_MAX_DEPTH ? kdc_call_helper_for_client(ctx, f, call, 1, client) : NULL;
    if (!g || g == f)
        return 0;
    for (unsigned c = 0; c < g->ncalls; c++)
        if (closes(ctx, g, g->calls[c], client, depth + 1))
            return 1;
    return 0;
}

/* A commit or offset store of the client, directly or in a helper (libkdc's
 * commit-by-message helpers included: they are manual commits too). */
static int commits(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                   size_t client, int depth) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & (KDC_API_COMMIT | KDC_API_STORE)) &&
               kdc_call_on_client(ctx, f, call, api, 1, client);
    const kdc_func_t *g =
        depth < TWC_MAX_DEPTH ? kdc_call_helper_for_client(ctx, f, call, 1, client) : NULL;
    if (!g || g == f)
        return 0;
    for (unsigned c = 0; c < g->ncalls; c++)
        if (commits(ctx, g, g->calls[c], client, depth + 1))
            return 1;
    return 0;
}

/* Which clients are closed anywhere in the program: every close's clients (all of them
 * when a close's handle cannot be followed), found in one pass and kept per client. */
static void find_closed(kdc_rule_ctx_t *ctx) {
    size_t nobjs = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts)),
           nf = kdc_program_nfuncs(ctx->program);
    kdc_bits_t closed;
    kdc_bits_init(&closed, nobjs);
    int all = 0;
    for (size_t i = 0; i < nf && !all; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls && !all; c++) {
            const kdc_api_t *api = close_api(f->calls[c]);
            if (!api)
                continue;
            kdc_bits_t clients;
            kdc_call_clients(ctx, f, f->calls[c], api, 1, &clients, &all);
            kdc_bits_or(&closed, &clients);
            kdc_bits_free(&clients);
        }
    }
    for (size_t k = 0; k < nobjs; k++)
        kdc_facts_client_memo_set(ctx->facts, KDC_MEMO_CLOSED, k, all || kdc_bits_get(&closed, k));
    kdc_bits_free(&closed);
}

/* Is the consumer closed anywhere in the program (asked at every destroy)? */
static int closed_anywhere(kdc_rule_ctx_t *ctx, size_t client) {
    if (kdc_facts_client_memo(ctx->facts, KDC_MEMO_CLOSED, client) < 0)
        find_closed(ctx);
    return kdc_facts_client_memo(ctx->facts, KDC_MEMO_CLOSED, client);
}

typedef struct twc_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    size_t client;
    const kdc_expr_t *destroy;
    int reached;
} twc_walk_t;

static int close_barrier(void *arg, const kdc_expr_t *call) {
    twc_walk_t *w = arg;
    return closes(w->ctx, w->f, call, w->client, 0);
}

/* Does the (non-loop) condition n only choose whether to close before the
 * destroy? */
static int guards_close(twc_walk_t *w, const kdc_cfg_t *g, int n) {
    return kdc_cfg_chooses_barrier(g, n, w->destroy, close_barrier, w);
}

static int twc_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    twc_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->reached || n == g->exit)
        return -1;
    if (nd->kind == KDC_N_COND && !nd->loop_cond && guards_close(w, g, n))
        return -1;
    if (nd->kind != KDC_N_CALL)
        return st;
    if (nd->expr == w->destroy) {
        w->reached = 1;
        return -1;
    }
    return closes(w->ctx, w->f, nd->expr, w->client, 0) ? -1 : st;
}

/* Is the destroy reached from `start` (a node of f) without a close of the client? */
static int reached_unclosed(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                            const kdc_expr_t *destroy, int start) {
    twc_walk_t w = {ctx, f, client, destroy, 0};
    kdc_search_t s = {twc_visit, NULL, &w, 1};
    kdc_cfg_search(f->cfg, start, 0, &s);
    return w.reached;
}

/* A commit of the client in f from which the destroy is reached without a close. */
static const kdc_expr_t *unclosed_commit(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                                         const kdc_expr_t *destroy) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return NULL;
    for (unsigned c = 0; c < f->ncalls; c++)
        if (g->call_node[c] >= 0 && commits(ctx, f, f->calls[c], client, 0) &&
            reached_unclosed(ctx, f, client, destroy, g->call_node[c]))
            return f->calls[c];
    return NULL;
}

typedef struct twc_commit_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    size_t client;
    const kdc_expr_t *destroy;
    int reached;
} twc_commit_walk_t;

/* State 1: a commit of the client was passed. */
static int twc_commit_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    twc_commit_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->reached || n == g->exit)
        return -1;
    if (nd->kind != KDC_N_CALL)
        return st;
    if (nd->expr == w->destroy) {
        w->reached |= st == 1;
        return -1;
    }
    return st || commits(w->ctx, w->f, nd->expr, w->client, 0);
}

/* Is the destroy in the function that creates the consumer, with no commit
 * of it on any path from the creation to the destroy (a setup failure:
 * nothing was committed, nothing is in flight)? */
static int before_any_commit(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                             const kdc_expr_t *destroy) {
    const kdc_obj_t *o = kdc_facts_obj(ctx->facts, client);
    const kdc_cfg_t *g = f->cfg;
    if (!o || o->func != f || !o->site || !g || o->site->call_id < 0 ||
        g->call_node[o->site->call_id] < 0)
        return 0;
    twc_commit_walk_t w = {ctx, f, client, destroy, 0};
    kdc_search_t s = {twc_commit_visit, NULL, &w, 2};
    kdc_cfg_search(g, g->call_node[o->site->call_id], 0, &s);
    return !w.reached;
}

/* The destroy is in a helper (a teardown function) that does not close first:
 * a commit in a caller from which the call of the helper is reached without
 * a close. */
static const kdc_expr_t *unclosed_at_caller(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                            size_t client, const kdc_expr_t *destroy) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || !reached_unclosed(ctx, f, client, destroy, g->entry))
        return NULL;
    return kdc_at_helper_calls(ctx, f, 1, client, unclosed_commit);
}

static int has_no_close_bit(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return e->has_ival && (e->ival & 0x8); /* RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE */
}

static void check_destroy(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    const kdc_expr_t *flags = kdc_api_arg(call, api->value);
    /* the flags may ask not to close: a constant with the bit, or one of the values
     * of `fast ? RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE : 0` */
    int no_close = flags && kdc_expr_walk(flags, has_no_close_bit, NULL);
    if (kdc_expr_is_topic_handle(ctx, f, kdc_api_arg(call, api->handle)))
        return; /* delete topic: the client lives on */
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(ctx->facts, k) != 1 ||
            !kdc_consumer_commits_manually_or_with_libkdc(ctx, k) || !kdc_consumer_is_group(ctx, k) ||
            before_any_commit(ctx, f, k, call))
            continue;
        const kdc_expr_t *commit = NULL;
        if (no_close) {
            /* already closed on every path to it: the flag changes nothing */
            const kdc_cfg_t *g = f->cfg;
            if (!g || g->call_node[call->call_id] < 0 ||
                !reached_unclosed(ctx, f, k, call, g->entry))
                continue;
        } else if (closed_anywhere(ctx, k) && !(commit = unclosed_commit(ctx, f, k, call)) &&
                   !(commit = unclosed_at_caller(ctx, f, k, call))) {
            continue;
        }
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k),
                      "consumer created here; it commits offsets itself");
        if (commit)
            kdc_notes_add(&notes, &commit->loc, "committed here, not closed before the destroy");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "consumer destroyed %s: outstanding commits are dropped and the group "
                        "only rebalances after the session timeout; call "
                        "rd_kafka_consumer_close() (C++ close()) first",
                        no_close ? "with RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE"
                                 : "without rd_kafka_consumer_close()");
        break;
    }
    kdc_bits_free(&clients);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_DESTROY, check_destroy);
}

const kdc_rule_t kdc_rule_teardown_without_close = {
    "teardown-without-close",
    "consumer with manual commits destroyed without rd_kafka_consumer_close()",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
