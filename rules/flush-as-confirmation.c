/*
 * flush-as-confirmation: a commit or checkpoint gated only by
 * rd_kafka_flush() == 0, or by an rd_kafka_outq_len() drain loop, with no
 * delivery-report outcome consulted. flush() returns 0 when the local queue
 * drained, also when deliveries failed (verified on the mock cluster: 0 while
 * the report carried TOPIC_AUTHORIZATION_FAILED), so the checkpoint advances
 * over messages that never arrived.
 *
 * Confidence: medium. From the flush's success edge (or the drain loop's
 * exit, or the "queue empty" edge of an outq_len() test) the path is followed
 * to a checkpoint as the facts define it (kdc_facts_call_checkpoints: a commit
 * or offset store, a configured commit/ack/effect function, a durable write,
 * program state that outlives the function, a helper that does one of these;
 * never a name). A flush whose result is not even checked is followed from
 * the call. Reading
 * delivery-report state on the way (a status, a tracker counter; in a loop
 * over per-message statuses, or in a helper such as batch_delivered()) or
 * waiting for reports ends the path.
 *
 * Wrappers count as the flush: a function that returns the flush's result
 * (`return rd_kafka_flush(rk, t);`, `return rd_kafka_flush(rk, t) == 0;`) is
 * followed from its callers' tests, and a function that flushes or drains
 * without looking at the outcome (`void drain(rk) { rd_kafka_flush(rk, t); }`)
 * from its call.
 */
#include "results.h"
#include "rule.h"

#include <stdlib.h>
#include <string.h>

/* What kdc-lint knows about each function of the program. */
enum {
    W_NONE = 0,
    W_ERROR = 1,   /* returns the flush's result: true (non-zero) means it failed */
    W_SUCCESS = 2, /* returns "flushed": true means rd_kafka_flush() returned 0 */
    W_DRAIN = 3    /* flushes or drains, ignores the outcome, returns */
};

typedef struct fac {
    kdc_rule_ctx_t *ctx;
    unsigned char *wrapper;      /* per function index: W_* */
    const kdc_expr_t **inner;    /* per function index: the flush/outq call inside */
    signed char *consults;       /* per function index: -1 unknown, 0/1 reads report state */
} fac_t;

static const kdc_func_t *callee_of(const fac_t *x, const kdc_func_t *f, const kdc_expr_t *call) {
    if (kdc_api_lookup(call) || kdc_api_is_librdkafka(call) || call->callee_system)
        return NULL;
    return kdc_program_find_callee(x->ctx->program, call->usr, f->tu);
}

static int is_flush_api(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    return api && (api->roles & KDC_API_FLUSH) && !(api->roles & KDC_API_TXN);
}

/* A flush of f that can stand for confirmation: not one after an rd_kafka_purge() in f,
 * which serves the purged messages' reports (__PURGE_QUEUE, __PURGE_INFLIGHT) and so
 * discards rather than confirms (a teardown: purge, flush, destroy). */
static int confirming_flush(const kdc_func_t *f, const kdc_expr_t *call) {
    const kdc_cfg_t *cfg = f->cfg;
    if (!is_flush_api(call))
        return 0;
    for (unsigned c = 0; cfg && c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        int node = cfg->call_node[c];
        if (api && (api->roles & KDC_API_PURGE) && node >= 0 && kdc_cfg_leads_to(cfg, node, call))
            return 0;
    }
    return 1;
}

typedef struct api_query {
    unsigned roles;
    const kdc_expr_t *found;
} api_query_t;

static int find_api(const kdc_expr_t *e, void *arg) {
    api_query_t *q = arg;
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api && (api->roles & q->roles)) {
        q->found = e;
        return 1;
    }
    return 0;
}

/* The first call with one of `roles` in e, or NULL. */
static const kdc_expr_t *call_in(const kdc_expr_t *e, unsigned roles) {
    api_query_t q = {roles, NULL};
    kdc_expr_walk(e, find_api, &q);
    return q.found;
}

/* ---------- does a helper read delivery-report state? ---------- */

typedef struct consult_q {
    fac_t *x;
    const kdc_func_t *f;
    int depth;
    int hit;
} consult_q_t;

static int func_consults(fac_t *x, const kdc_func_t *g, int depth);

static void consult_stmt(const kdc_stmt_t *s, void *arg) {
    consult_q_t *q = arg;
    if (q->hit || !s->expr || call_in(s->expr, KDC_API_PRODUCE))
        return; /* a produce passing its status as the opaque is no check of it */
    if ((s->kind == KDC_S_IF || s->kind == KDC_S_WHILE || s->kind == KDC_S_DO ||
         s->kind == KDC_S_FOR || s->kind == KDC_S_SWITCH || s->kind == KDC_S_RETURN) &&
        kdc_facts_reads_delivery_state(q->x->ctx->facts, s->expr))
        q->hit = 1;
}

/* A helper whose conditions or return values read what the delivery-report
 * callbacks write (`return b->failed == 0;`, a loop over per-message
 * statuses), itself or in a helper it calls (two levels). */
static int func_consults(fac_t *x, const kdc_func_t *g, int depth) {
    if (!g || !g->body || depth > 2)
        return 0;
    if (x->consults[g->index] >= 0)
        return x->consults[g->index];
    x->consults[g->index] = 0; /* recursion */
    consult_q_t q = {x, g, depth, 0};
    kdc_stmt_walk(g->body, consult_stmt, &q);
    for (unsigned c = 0; c < g->ncalls && !q.hit; c++)
        q.hit = func_consults(x, callee_of(x, g, g->calls[c]), depth + 1);
    x->consults[g->index] = (signed char)q.hit;
    return q.hit;
}

/* ---------- the walk from a flush to a checkpoint ---------- */

typedef struct fwalk {
    fac_t *x;
    const kdc_func_t *f;
    const kdc_expr_t *checkpoint; /* the first one reached */
    int exit_reached;
} fwalk_t;

typedef struct loop_q {
    fwalk_t *w;
    int head;     /* the loop condition */
    int target;   /* node searched for (back to the head) */
    int found;
    int consult;  /* a node of the body reads report state */
} loop_q_t;

static int reaches_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    loop_q_t *q = arg;
    (void)g;
    if (n == q->target) {
        q->found = 1;
        return -1;
    }
    return q->found ? -1 : st;
}

static int node_consults(fwalk_t *w, const kdc_cfg_t *g, int n) {
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind == KDC_N_COND)
        return kdc_facts_reads_delivery_state(w->x->ctx->facts, nd->expr);
    if (nd->kind == KDC_N_CALL)
        return func_consults(w->x, callee_of(w->x, w->f, nd->expr), 0);
    return 0;
}

static int body_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    loop_q_t *q = arg;
    if (n == q->head || n == g->exit || q->consult)
        return -1;
    if (node_consults(q->w, g, n)) {
        /* only a node the loop comes back from is part of the loop */
        loop_q_t back = {q->w, q->head, q->head, 0, 0};
        kdc_search_t s = {reaches_visit, NULL, &back, 1};
        kdc_cfg_search(g, n, 0, &s);
        if (back.found) {
            q->consult = 1;
            return -1;
        }
    }
    return st;
}

/* Does the body of the loop whose condition is node n read report state
 * (`for (i = 0; i < n; i++) if (st[i].err) return;`)? Its exit edge is then
 * taken after the outcome was consulted. */
static int loop_consults(fwalk_t *w, const kdc_cfg_t *g, int n) {
    const kdc_node_t *nd = &g->nodes[n];
    loop_q_t q = {w, n, -1, 0, 0};
    kdc_search_t s = {body_visit, NULL, &q, 1};
    if (!nd->nsucc || nd->succ[0] == g->exit)
        return 0;
    int body = nd->succ[0]; /* the true edge enters the body */
    if (body_visit(&q, g, body, 0) >= 0)
        kdc_cfg_search(g, body, 0, &s);
    return q.consult;
}

static int fwalk_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    fwalk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->checkpoint)
        return -1;
    if (n == g->exit) {
        w->exit_reached = 1;
        return -1;
    }
    if (nd->kind == KDC_N_COND) {
        if (kdc_facts_reads_delivery_state(w->x->ctx->facts, nd->expr))
            return -1; /* the outcome of the reports is consulted */
        if (nd->loop_cond && loop_consults(w, g, n))
            return -1; /* ... in a loop over per-message statuses */
    }
    if (nd->kind == KDC_N_CALL) {
        const kdc_expr_t *call = nd->expr;
        kdc_call_roles_t roles = kdc_facts_call_roles(w->x->ctx->facts, w->f, call);
        if (roles.confirms)
            return -1;
        if (func_consults(w->x, callee_of(w->x, w->f, call), 0))
            return -1; /* a helper that checks the recorded outcomes */
        if (roles.produces)
            return -1; /* a new batch: what follows is gated by what follows it */
        if (kdc_facts_call_checkpoints(w->x->ctx->facts, w->f, call))
            w->checkpoint = call;
    } else if (nd->kind == KDC_N_ASSIGN &&
               kdc_facts_assign_checkpoints(w->x->ctx->facts, w->f, nd->expr)) {
        w->checkpoint = nd->expr;
    }
    return w->checkpoint ? -1 : st;
}

/* From successor `edge` of node n: does a checkpoint follow, unconfirmed?
 * *exit (optional) is set when the function's exit is reached that way. */
static const kdc_expr_t *checkpoint_after(fac_t *x, const kdc_func_t *f, const kdc_cfg_t *g,
                                          int n, unsigned edge, int *exit) {
    if (edge >= g->nodes[n].nsucc)
        return NULL;
    fwalk_t w = {x, f, NULL, 0};
    kdc_search_t s = {fwalk_visit, NULL, &w, 1};
    int start = g->nodes[n].succ[edge];
    if (fwalk_visit(&w, g, start, 0) >= 0)
        kdc_cfg_search(g, start, 0, &s);
    if (exit)
        *exit = w.exit_reached;
    return w.checkpoint;
}

/* ---------- which edge of a test means "flushed" / "queue empty" ---------- */

/* The successor of a condition on rd_kafka_outq_len() taken when the queue is
 * empty (0 true, 1 false), or -1 when the test is not "is it empty" (a
 * back-pressure threshold such as `> 10000` is not a drain). */
static int empty_edge(const kdc_expr_t *cond, const kdc_expr_t *outq) {
    const kdc_expr_t *e = kdc_expr_strip(cond);
    if (e == outq)
        return 1; /* while (rd_kafka_outq_len(rk)) */
    if (!e || e->kind != KDC_E_BINARY || e->nkids != 2)
        return -1;
    const kdc_expr_t *a = kdc_expr_strip(e->kids[0]), *b = kdc_expr_strip(e->kids[1]);
    kdc_op_t op = e->op;
    if (b == outq) { /* 0 < rd_kafka_outq_len(rk): mirror */
        const kdc_expr_t *t = a;
        a = b;
        b = t;
        op = op == KDC_OP_LT ? KDC_OP_GT : op == KDC_OP_GT ? KDC_OP_LT
           : op == KDC_OP_LE ? KDC_OP_GE : op == KDC_OP_GE ? KDC_OP_LE : op;
    }
    if (a != outq || !b || !b->has_ival)
        return -1;
    long long k = b->ival;
    switch (op) {
    case KDC_OP_EQ: return k == 0 ? 0 : -1;
    case KDC_OP_NE: return k == 0 ? 1 : -1;
    case KDC_OP_GT: return k == 0 ? 1 : -1;
    case KDC_OP_GE: return k == 1 ? 1 : -1;
    case KDC_OP_LT: return k == 1 ? 0 : -1;
    case KDC_OP_LE: return k == 0 ? 0 : -1;
    default: return -1;
    }
}

/* The successor of cond taken when `call` (a flush, or a wrapper of one)
 * failed, or -1 when cond says nothing about it. */
static int failure_edge(fac_t *x, const kdc_func_t *f, const kdc_expr_t *call, const kdc_expr_t *cond,
                        int kind) {
    kdc_outcome_t o;
    kdc_outcome_init(&o, x->ctx->program, f, call);
    int edge = kdc_outcome_failure_edge(&o, cond);
    /* outcome reads the call's type: an int wrapper returning `flush() == 0`
     * says "true = flushed" although its type says "true = error" */
    if (edge >= 0 && kind == W_SUCCESS && o.error_truthy)
        edge = 1 - edge;
    else if (edge >= 0 && kind == W_ERROR && !o.error_truthy)
        edge = 1 - edge;
    return edge;
}

/* ---------- wrappers ---------- */

typedef struct ret_q {
    fac_t *x;
    const kdc_func_t *f;
    const kdc_expr_t *call; /* the flush (or wrapper) call whose result is returned */
    int kind;               /* its W_ERROR / W_SUCCESS */
    int pol;                /* what the function returns: W_ERROR / W_SUCCESS, -1 mixed */
} ret_q_t;

static void find_ret(const kdc_stmt_t *s, void *arg) {
    ret_q_t *q = arg;
    if (s->kind != KDC_S_RETURN || !s->expr || q->pol < 0)
        return;
    kdc_outcome_t o;
    kdc_outcome_init(&o, q->x->ctx->program, q->f, q->call);
    int p = kdc_outcome_polarity(&o, s->expr); /* +1: true means the call succeeded */
    if (!p)
        return;
    int inverted = (q->kind == W_SUCCESS && o.error_truthy) ||
                   (q->kind == W_ERROR && !o.error_truthy);
    if (inverted)
        p = -p;
    int kind = p > 0 ? W_SUCCESS : W_ERROR;
    q->pol = q->pol && q->pol != kind ? -1 : kind;
}

typedef struct wfind {
    const kdc_expr_t *call;
    int stmt;
} wfind_t;

/* Is the flush call a statement of its own (its value dropped)? */
static void find_dropped(const kdc_stmt_t *s, void *arg) {
    wfind_t *q = arg;
    if (s->kind == KDC_S_EXPR && kdc_expr_strip(s->expr) == q->call)
        q->stmt = 1;
}

/* Classifies g: returns a flush's result (W_ERROR / W_SUCCESS), flushes or
 * drains and returns without a look at the outcome (W_DRAIN), or neither. */
static int classify(fac_t *x, const kdc_func_t *g, const kdc_expr_t **inner) {
    const kdc_cfg_t *cfg = g->cfg;
    if (!cfg || !g->body)
        return W_NONE;
    for (unsigned c = 0; c < g->ncalls; c++) {
        const kdc_expr_t *call = g->calls[c];
        if (cfg->call_node[c] < 0)
            continue;
        const kdc_func_t *h = callee_of(x, g, call);
        int kind = is_flush_api(call) ? (confirming_flush(g, call) ? W_ERROR : W_NONE)
                   : h                ? x->wrapper[h->index]
                                      : W_NONE;
        if (kind == W_ERROR || kind == W_SUCCESS) {
            ret_q_t q = {x, g, call, kind, 0};
            kdc_stmt_walk(g->body, find_ret, &q);
            if (q.pol > 0) {
                *inner = h ? x->inner[h->index] : call;
                return q.pol;
            }
        }
        int dropped = kind == W_DRAIN;
        if (kind == W_ERROR || kind == W_SUCCESS) {
            wfind_t q = {call, 0};
            kdc_stmt_walk(g->body, find_dropped, &q);
            dropped = q.stmt;
        }
        if (dropped) {
            int exit = 0;
            const kdc_expr_t *cp = checkpoint_after(x, g, cfg, cfg->call_node[c], 0, &exit);
            if (!cp && exit) {
                *inner = h ? x->inner[h->index] : call;
                return W_DRAIN;
            }
        }
    }
    /* void drain(rk) { while (rd_kafka_outq_len(rk) > 0) rd_kafka_poll(rk, 100); } */
    for (unsigned n = 0; n < cfg->n; n++) {
        const kdc_node_t *nd = &cfg->nodes[n];
        const kdc_expr_t *outq = nd->kind == KDC_N_COND ? call_in(nd->expr, KDC_API_OUTQ) : NULL;
        int e = outq && nd->loop_cond ? empty_edge(nd->expr, outq) : -1;
        if (e < 0)
            continue;
        int exit = 0;
        if (!checkpoint_after(x, g, cfg, (int)n, (unsigned)e, &exit) && exit) {
            *inner = outq;
            return W_DRAIN;
        }
    }
    return W_NONE;
}

static void find_wrappers(fac_t *x) {
    size_t nf = kdc_program_nfuncs(x->ctx->program);
    for (int round = 0, changed = 1; changed && round < 8; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *g = kdc_program_func(x->ctx->program, i);
            if (x->wrapper[g->index])
                continue;
            const kdc_expr_t *inner = NULL;
            int kind = classify(x, g, &inner);
            if (kind) {
                x->wrapper[g->index] = (unsigned char)kind;
                x->inner[g->index] = inner;
                changed = 1;
            }
        }
    }
}

/* ---------- reports ---------- */

typedef struct seen {
    const kdc_expr_t *v[64];
    size_t n;
} seen_t;

static int seen_add(seen_t *s, const kdc_expr_t *e) {
    for (size_t i = 0; i < s->n; i++)
        if (s->v[i] == e)
            return 0;
    if (s->n < sizeof s->v / sizeof s->v[0])
        s->v[s->n++] = e;
    return 1;
}

static void report(fac_t *x, const kdc_func_t *f, const kdc_expr_t *at, const kdc_expr_t *inner,
                   const kdc_expr_t *checkpoint, int drain, int unchecked) {
    kdc_notes_t notes = {0};
    if (inner && inner != at)
        kdc_notes_add(&notes, &inner->loc,
                      drain ? "the queue is drained here" : "rd_kafka_flush() is called here");
    kdc_notes_add(&notes, &checkpoint->loc, "checkpoint advanced here without a delivery outcome");
    kdc_rule_report(x->ctx, f, &at->loc, notes.v, notes.n,
                    "%s%s is taken as confirmation%s: it also says \"done\" when deliveries "
                    "failed, so the checkpoint advances over messages that never arrived; confirm "
                    "from the delivery reports (a tracker wait, per-message status) before "
                    "advancing",
                    drain ? "an empty rd_kafka_outq_len() queue" : "rd_kafka_flush()",
                    drain || unchecked ? "" : " == 0",
                    unchecked ? " (its result is not even checked)" : "");
}

static void check_func(fac_t *x, const kdc_func_t *f) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return;
    seen_t seen = {{0}, 0};
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_node_t *nd = &g->nodes[n];
        if (nd->kind == KDC_N_CALL) {
            /* a flush (or a wrapper) whose outcome nobody looks at, or a drain helper */
            const kdc_expr_t *call = nd->expr;
            const kdc_func_t *h = callee_of(x, f, call);
            int kind = is_flush_api(call) ? (confirming_flush(f, call) ? W_ERROR : W_NONE)
                       : h                ? x->wrapper[h->index]
                                          : W_NONE;
            if (!kind)
                continue;
            if (kind != W_DRAIN && kdc_result_use(x->ctx->program, f, call) == KDC_USE_USED)
                continue;
            const kdc_expr_t *cp = checkpoint_after(x, f, g, (int)n, 0, NULL);
            const kdc_expr_t *inner = h ? x->inner[h->index] : NULL;
            int drain = inner && !is_flush_api(inner);
            if (cp && seen_add(&seen, call))
                report(x, f, call, inner, cp, drain, kind != W_DRAIN);
            continue;
        }
        if (nd->kind != KDC_N_COND)
            continue;
        const kdc_expr_t *outq = call_in(nd->expr, KDC_API_OUTQ);
        if (outq) {
            /* while (rd_kafka_outq_len(rk) > 0) poll(..): the exit means "queue empty" */
            int e = empty_edge(nd->expr, outq);
            const kdc_expr_t *cp = e >= 0 ? checkpoint_after(x, f, g, (int)n, (unsigned)e, NULL)
                                          : NULL;
            if (cp && seen_add(&seen, outq))
                report(x, f, outq, NULL, cp, 1, 0);
            continue;
        }
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_func_t *h = callee_of(x, f, call);
            int kind = is_flush_api(call) ? (confirming_flush(f, call) ? W_ERROR : W_NONE)
                       : h                ? x->wrapper[h->index]
                                          : W_NONE;
            if (kind != W_ERROR && kind != W_SUCCESS)
                continue;
            int edge = failure_edge(x, f, call, nd->expr, kind);
            if (edge < 0)
                continue;
            const kdc_expr_t *cp = checkpoint_after(x, f, g, (int)n, edge == 0 ? 1u : 0u, NULL);
            if (cp && seen_add(&seen, call))
                report(x, f, call, h ? x->inner[h->index] : NULL, cp, 0, 0);
            break;
        }
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    fac_t x = {ctx, calloc(nf + 1, 1), calloc(nf + 1, sizeof *x.inner), malloc(nf + 1)};
    if (x.wrapper && x.inner && x.consults) {
        memset(x.consults, -1, nf + 1);
        find_wrappers(&x);
        for (size_t i = 0; i < nf; i++)
            check_func(&x, kdc_program_func(ctx->program, i));
    }
    free(x.wrapper);
    free(x.inner);
    free(x.consults);
}

const kdc_rule_t kdc_rule_flush_as_confirmation = {
    "flush-as-confirmation",
    "checkpoint or commit gated only by rd_kafka_flush() == 0 or an outq_len drain loop",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
