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
 * transactional step, a produce or a commit. A flag set to a constant on the
 * error path (failed = 1; break;) is followed into the conditions that test
 * it. When the error path returns, the failure is the caller's: each call of
 * the function (a wrapper such as commit_txn()) is followed the same way in
 * its caller, on the branches where the wrapper's result says it failed (all
 * branches when the result is ignored or the wrapper returns nothing), and
 * reported at that call. -1 timeouts are what librdkafka recommends and are
 * not a finding.
 */
#include "results.h"
#include "rule.h"

#include <string.h>

#define MAX_DEPTH 3

typedef KDC_VEC(const kdc_expr_t *) site_vec_t;

typedef struct txn_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_func_t *origin_f; /* the function the origin is in */
    const kdc_expr_t *origin; /* the librdkafka transactional call */
    const kdc_expr_t *call;   /* the call followed in f: origin, or a wrapper of it */
    int check_outcome;        /* follow only the branches where `call` failed */
    kdc_outcome_t outcome;
    const char *flag;         /* a variable set to a constant on the error path */
    long long flag_val;
    const kdc_expr_t *continued; /* the step the error path continues with */
    int exited;
} txn_walk_t;

/* Path states: ST_FLAG the flag holds flag_val; ST_FAILED a condition on the
 * error was passed (the path is known to be the error's). */
enum { ST_ANY = 0, ST_FLAG = 1, ST_FAILED = 2, NSTATES = 4 };

enum { DOES_ABORT = 1, DOES_STEP = 2, DOES_RETRY = 4 };

/* What a helper of the program does first on its paths (up to three calls
 * deep): abort the transaction, take a transactional step or produce, or
 * take the step being followed again (a retry helper). */
typedef struct first_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *g;
    const char *step; /* the transactional call being followed (its name) */
    int depth;
    unsigned found;
} first_walk_t;

static unsigned helper_first(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                             const char *step, int depth);

static int first_visit(void *arg, const kdc_cfg_t *cfg, int n, int st) {
    first_walk_t *fw = arg;
    const kdc_node_t *nd = &cfg->nodes[n];
    if (nd->kind != KDC_N_CALL)
        return st;
    const kdc_api_t *api = kdc_api_lookup(nd->expr);
    if (api && (api->roles & KDC_API_TXN_ABORT)) {
        fw->found |= DOES_ABORT;
        return -1;
    }
    if (api && (api->roles & (KDC_API_TXN | KDC_API_PRODUCE))) {
        fw->found |= nd->expr->name == fw->step ? DOES_RETRY : DOES_STEP;
        return -1;
    }
    if (!api && fw->depth < 3) {
        unsigned h = helper_first(fw->ctx, fw->g, nd->expr, fw->step, fw->depth + 1);
        if (h) {
            fw->found |= h;
            return -1;
        }
    }
    return st;
}

static unsigned helper_first(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                             const char *step, int depth) {
    unsigned r = 0;
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(ctx->facts), f, call, &callees);
    for (size_t k = 0; k < callees.n; k++) {
        const kdc_func_t *g = callees.v[k];
        const kdc_cfg_t *cfg = g->cfg;
        if (!cfg || g == f)
            continue;
        first_walk_t fw = {ctx, g, step, depth, 0};
        kdc_search_t s = {first_visit, NULL, &fw, 1};
        kdc_cfg_search(cfg, cfg->entry, 0, &s);
        r |= fw.found;
    }
    free(callees.v);
    return r;
}

static int is_int_constant(const kdc_expr_t *e, long long *v) {
    e = kdc_expr_strip(e);
    int neg = 0;
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_NEG && e->nkids == 1) {
        neg = 1;
        e = kdc_expr_strip(e->kids[0]);
    }
    if (!e || !(e->has_ival || e->kind == KDC_E_INT))
        return 0;
    *v = neg ? -e->ival : e->ival;
    return 1;
}

static const char *local_key(txn_walk_t *w, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e || e->kind != KDC_E_REF || e->ref != KDC_REF_LOCAL)
        return NULL;
    return kdc_pts_lvalue_key(w->ctx->program, e);
}

static int same_step(const txn_walk_t *w, const kdc_expr_t *c) {
    return c == w->call || (c->name && *c->name &&
                            (c->name == w->call->name || c->name == w->origin->name));
}

/* Is e one client handle, the same as h (in hf)? The same variable or field
 * when both are in the function of the origin, else one object both may only
 * denote. */
static int same_handle(txn_walk_t *w, const kdc_func_t *hf, const kdc_expr_t *h,
                       const kdc_expr_t *e) {
    h = kdc_expr_strip(h);
    e = kdc_expr_strip(e);
    if (!h || !e)
        return 0;
    if (hf == w->f) {
        const char *kh = kdc_pts_lvalue_key(w->ctx->program, h);
        return kh && kh == kdc_pts_lvalue_key(w->ctx->program, e);
    }
    const kdc_pts_t *pts = kdc_facts_pts_of(w->ctx->facts);
    kdc_bits_t a, b;
    kdc_pts_expr(pts, hf, h, &a);
    kdc_pts_expr(pts, w->f, e, &b);
    size_t na = 0, nb = 0, oa = 0, ob = 0;
    for (size_t i = 0; i < kdc_pts_nobjs(pts); i++) {
        if (kdc_bits_get(&a, i) && na++ == 0)
            oa = i;
        if (kdc_bits_get(&b, i) && nb++ == 0)
            ob = i;
    }
    kdc_bits_free(&a);
    kdc_bits_free(&b);
    return na == 1 && nb == 1 && oa == ob &&
           kdc_pts_obj(pts, oa)->kind == KDC_OBJ_CLIENT;
}

/* Does the call destroy the producer the transactional call was made on?
 * Then the transaction cannot go on: destroying the producer is how a fatal
 * error is handled, and a later transactional step is on another producer. */
static int destroys_producer(txn_walk_t *w, const kdc_expr_t *c, const kdc_api_t *api) {
    const kdc_api_t *oapi = kdc_api_lookup(w->origin);
    if (!api || !(api->roles & KDC_API_DESTROY) || !oapi)
        return 0;
    return same_handle(w, w->origin_f, kdc_api_arg(w->origin, oapi->handle),
                       kdc_api_arg(c, api->handle));
}

static int txn_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    txn_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->continued)
        return -1;
    if (n == g->exit) {
        if (st & ST_FAILED)
            w->exited = 1;
        return -1; /* returned: the caller gets the failure */
    }
    if (nd->kind == KDC_N_COND) {
        if (w->check_outcome && kdc_outcome_failure_edge(&w->outcome, nd->expr) >= 0)
            return st | ST_FAILED; /* only the failure edge is followed */
        return st;
    }
    if (nd->kind == KDC_N_ASSIGN && nd->expr && nd->expr->kind == KDC_E_BINARY &&
        nd->expr->op == KDC_OP_ASSIGN && nd->expr->nkids == 2) {
        const char *k = local_key(w, nd->expr->kids[0]);
        long long v;
        if (k && (!w->flag || w->flag == k)) {
            if (is_int_constant(nd->expr->kids[1], &v) && (!w->flag || w->flag_val == v)) {
                w->flag = k;
                w->flag_val = v;
                return st | ST_FLAG;
            }
            if (w->flag == k)
                return st & ~ST_FLAG;
        }
        return st;
    }
    if (nd->kind != KDC_N_CALL)
        return st;
    const kdc_expr_t *c = nd->expr;
    if (same_step(w, c))
        return -1; /* retried */
    const kdc_api_t *api = kdc_api_lookup(c);
    if (api && (api->roles & KDC_API_TXN_ABORT))
        return -1;
    if (destroys_producer(w, c, api))
        return -1;
    if ((api && (api->roles & (KDC_API_TXN | KDC_API_PRODUCE | KDC_API_COMMIT | KDC_API_STORE))) ||
        kdc_facts_call_roles(w->ctx->facts, w->f, c).commits) {
        w->continued = c;
        return -1;
    }
    if (!api) {
        unsigned h = helper_first(w->ctx, w->f, c, w->origin->name, 0);
        if (h & (DOES_ABORT | DOES_RETRY))
            return -1; /* a helper that may abort (or retry) before anything else */
        if (h & DOES_STEP) { /* a helper that goes on with the transaction */
            w->continued = c;
            return -1;
        }
    }
    return st;
}

/* The value of a condition on the flag, given that it holds flag_val: 1, 0,
 * or -1 when the condition is not about the flag. */
static int flag_cond(const txn_walk_t *w, const kdc_expr_t *cond) {
    cond = kdc_expr_strip(cond);
    if (!cond || !w->flag)
        return -1;
    if (cond->kind == KDC_E_REF)
        return local_key((txn_walk_t *)w, cond) == w->flag ? w->flag_val != 0 : -1;
    if (cond->kind != KDC_E_BINARY || cond->nkids != 2)
        return -1;
    long long c, v = w->flag_val;
    int flag_left = local_key((txn_walk_t *)w, cond->kids[0]) == w->flag;
    int flag_right = local_key((txn_walk_t *)w, cond->kids[1]) == w->flag;
    if (!((flag_left && is_int_constant(cond->kids[1], &c)) ||
          (flag_right && is_int_constant(cond->kids[0], &c))))
        return -1;
    long long a = flag_left ? v : c, b = flag_left ? c : v;
    switch (cond->op) {
    case KDC_OP_EQ: return a == b;
    case KDC_OP_NE: return a != b;
    case KDC_OP_LT: return a < b;
    case KDC_OP_GT: return a > b;
    case KDC_OP_LE: return a <= b;
    case KDC_OP_GE: return a >= b;
    default: return -1;
    }
}

static int txn_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    txn_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    if (w->check_outcome) {
        int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
        if (fail >= 0)
            return fail == (int)i; /* follow only the branches with the error set */
    }
    if (st & ST_FLAG) {
        int v = flag_cond(w, nd->expr);
        if (v >= 0)
            return (unsigned)(v ? 0 : 1) == i;
    }
    return 1;
}

static void report(kdc_rule_ctx_t *ctx, site_vec_t *seen, const kdc_func_t *f,
                   const kdc_expr_t *at, const kdc_expr_t *origin, const kdc_expr_t *continued) {
    for (size_t i = 0; i < seen->n; i++)
        if (seen->v[i] == at)
            return;
    KDC_VEC_PUSH(*seen, at);
    kdc_notes_t notes = {0};
    if (at != origin)
        kdc_notes_add(&notes, &origin->loc, "the error comes from this transactional call");
    kdc_notes_add(&notes, &continued->loc, "the transaction goes on here with the error unhandled");
    const char *n = origin->name;
    if (at == origin)
        kdc_rule_report(ctx, f, &at->loc, notes.v, notes.n,
                        "an error of %s can reach the next transactional step without an abort, "
                        "a retry or a hard failure: handle rd_kafka_error_txn_requires_abort() "
                        "(abort), rd_kafka_error_is_retriable() (retry) and treat every other "
                        "error as fatal",
                        origin->is_method ? n + 9 : n);
    else
        kdc_rule_report(ctx, f, &at->loc, notes.v, notes.n,
                        "%s leaves an error of %s to its caller (it returns), and on this path "
                        "the caller goes on with the transaction without an abort, a retry or a "
                        "hard failure: handle "
                        "rd_kafka_error_txn_requires_abort() (abort), "
                        "rd_kafka_error_is_retriable() (retry) and treat every other error as "
                        "fatal",
                        at->name && *at->name ? at->name : "this call",
                        origin->is_method ? n + 9 : n);
}

typedef struct ret_find {
    const kdc_expr_t *call;
    int returned;
} ret_find_t;

static void find_return(const kdc_stmt_t *st, void *arg) {
    ret_find_t *rf = arg;
    if (st->kind == KDC_S_RETURN && st->expr && kdc_expr_strip(st->expr) == rf->call)
        rf->returned = 1;
}

typedef struct result_find {
    kdc_rule_ctx_t *ctx;
    const kdc_outcome_t *o;
    int returned;
} result_find_t;

static void find_returned_result(const kdc_stmt_t *st, void *arg) {
    result_find_t *rf = arg;
    if (st->kind != KDC_S_RETURN || !st->expr)
        return;
    const kdc_expr_t *e = kdc_expr_strip(st->expr);
    if (e == rf->o->call) {
        rf->returned = 1;
        return;
    }
    const char *k = kdc_pts_lvalue_key(rf->ctx->program, e);
    for (size_t i = 0; k && i < rf->o->nvars; i++)
        if (rf->o->vars[i].key == k)
            rf->returned = 1;
}

/* Does f return the call's result (the error object or status) as is? */
static int returns_result(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_outcome_t *o) {
    result_find_t rf = {ctx, o, 0};
    kdc_stmt_walk(f->body, find_returned_result, &rf);
    return rf.returned;
}

/* Can the walk follow what the caller does with a wrapper's result? Yes when
 * the result is ignored or returned as is, or some condition of the caller
 * says whether the call failed. */
static int caller_tests(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call) {
    if (kdc_result_use(ctx->program, f, call) != KDC_USE_USED)
        return 1;
    ret_find_t rf = {call, 0};
    kdc_stmt_walk(f->body, find_return, &rf);
    if (rf.returned)
        return 1;
    kdc_outcome_t o;
    kdc_outcome_init(&o, ctx->program, f, call);
    const kdc_cfg_t *g = f->cfg;
    for (unsigned n = 0; g && n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_COND && kdc_outcome_failure_edge(&o, g->nodes[n].expr) >= 0)
            return 1;
    return 0;
}

/* Follows the error of `call` (the origin, or a call of a function its error
 * path returns from) in f. Returns 1 when something was reported. */
static int follow(kdc_rule_ctx_t *ctx, site_vec_t *seen, const kdc_func_t *f,
                  const kdc_expr_t *call, const kdc_func_t *origin_f, const kdc_expr_t *origin,
                  int check_outcome, int depth, const kdc_func_t **stack) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return 0;
    if (depth > 0 && check_outcome && !caller_tests(ctx, f, call))
        return 0; /* the caller uses the result in a way the walk cannot follow: trust it */
    txn_walk_t w = {0};
    w.ctx = ctx;
    w.f = f;
    w.origin_f = origin_f;
    w.origin = origin;
    w.call = call;
    w.check_outcome = check_outcome;
    kdc_outcome_init(&w.outcome, ctx->program, f, call);
    if (!w.outcome.error_truthy && call->type && strchr(call->type, '*') &&
        strstr(call->type, "Error")) {
        /* RdKafka::Error *: NULL is success (results.c only knows rd_kafka_error_t *);
         * a pointer is only compared with NULL, so every derived flag flips too */
        w.outcome.error_truthy = 1;
        for (size_t i = 0; i < w.outcome.nvars; i++)
            w.outcome.vars[i].polarity = -w.outcome.vars[i].polarity;
    }
    kdc_search_t s = {txn_visit, txn_edge, &w, NSTATES};
    kdc_cfg_search(g, g->call_node[call->call_id], ST_ANY, &s);
    if (w.continued) {
        report(ctx, seen, f, call, origin, w.continued);
        return 1;
    }
    if (!(w.exited || returns_result(ctx, f, &w.outcome)) || depth >= MAX_DEPTH)
        return 0;
    for (int d = 0; d < depth; d++)
        if (stack[d] == f)
            return 0; /* recursion */
    stack[depth] = f;
    /* The failure goes to f's callers. */
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    size_t nf = kdc_program_nfuncs(ctx->program);
    int reported = 0;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *caller = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < caller->ncalls; c++) {
            const kdc_expr_t *cs = caller->calls[c];
            if (kdc_api_lookup(cs))
                continue;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(pts, caller, cs, &callees);
            int calls_f = 0;
            for (size_t k = 0; k < callees.n; k++)
                calls_f |= callees.v[k] == f;
            free(callees.v);
            if (!calls_f)
                continue;
            /* a wrapper returning nothing cannot tell its caller */
            int tells = cs->type && strcmp(cs->type, "void") != 0;
            reported |= follow(ctx, seen, caller, cs, origin_f, origin, tells, depth + 1, stack);
        }
    }
    return reported;
}

static void check(kdc_rule_ctx_t *ctx) {
    site_vec_t seen = {0};
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (!api || !(api->roles & KDC_API_TXN) ||
            (!strstr(call->name, "send_offsets_to_transaction") &&
             !strstr(call->name, "commit_transaction")))
            continue;
        const kdc_func_t *stack[MAX_DEPTH + 1];
        follow(ctx, &seen, f, call, f, call, 1, 0, stack);
    }
    free(seen.v);
}

const kdc_rule_t kdc_rule_txn_error_not_aborted = {
    "txn-error-not-aborted",
    "transaction error that neither aborts, retries nor fails hard",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
