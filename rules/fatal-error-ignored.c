/*
 * fatal-error-ignored: an idempotent (enable.idempotence=true) or
 * transactional (transactional.id set) producer that goes on producing after
 * RD_KAFKA_RESP_ERR__FATAL. A fatal error (the idempotence guarantees cannot
 * be kept) purges the producer's queue and fails every later produce; only
 * the application can end it, by stopping or recreating the producer. An
 * error callback that only logs, or a produce loop that skips failed
 * records, keeps "running" while everything is lost.
 *
 * Confidence: medium. For each such producer that produces, the places that
 * consult its fatal state are gathered: in its error callbacks
 * (rd_kafka_conf_set_error_cb on its configuration, C++ event_cb), in the
 * functions that produce on it or call rd_kafka_fatal_error() on it, and
 * wherever rd_kafka_error_is_fatal()/rd_kafka_event_error_is_fatal()/C++
 * Error::is_fatal()/Event::fatal() is tested: a comparison with
 * RD_KAFKA_RESP_ERR__FATAL (or errno ECANCELED), a test of
 * rd_kafka_fatal_error()'s result or of a fatal predicate. Reported:
 *   - when every such place only logs on its fatal branch (no exit or abort,
 *     no flag another function tests, no return of the failure from a
 *     producing function, no destroy or re-creation, no call of a handler
 *     of the program): on the first place;
 *   - when there is none, and a produce of the producer goes on after a
 *     failure (its result dropped in a loop, or the failure path takes the
 *     next record or commits: rules/common/produce_failure.h with
 *     RD_KAFKA_RESP_ERR__FATAL): on that produce. A transactional producer
 *     whose commit_transaction() result is checked is left to
 *     txn-error-not-aborted (the transaction API reports fatal errors).
 * Not reported: producers that are neither idempotent nor transactional, or
 * whose enable.idempotence cannot be read (strict profile: a note).
 */
#include "common/config_common.h"
#include "common/consumer_common.h"
#include "common/produce_failure.h"
#include "common/threads.h"
#include "results.h"

#include <stdlib.h>
#include <string.h>

typedef KDC_VEC(const kdc_func_t *) fvec_t;
typedef KDC_VEC(const char *) keyvec_t;

typedef struct fatal_ctx {
    kdc_rule_ctx_t *ctx;
    size_t client;
    fvec_t callbacks; /* error callbacks of the client (C: error_cb, C++: event_cb) */
    fvec_t relevant;  /* functions whose checks count for the client */
    const keyvec_t *cond_keys; /* variables and fields read by conditions anywhere */
    const struct fatal_calls *calls;
} fatal_ctx_t;

/* A call of the program that may call functions of it (not an API call), with them. */
typedef struct calling {
    const kdc_func_t *f;
    kdc_funcvec_t callees;
} calling_t;

/* What every producer's check looks at, found once for the rule's check (in program
 * order, as the program's calls are): the program is walked once, not per producer. */
typedef struct fatal_calls {
    int found;
    KDC_VEC(kdc_api_call_t) acting;    /* API calls and fatal-error queries */
    KDC_VEC(kdc_api_call_t) error_cbs; /* rd_kafka_conf_set_error_cb(conf, cb) */
    KDC_VEC(calling_t) calling;
} fatal_calls_t;

/* The rule's run: what is computed once, and the findings made. */
typedef struct fatal_run {
    KDC_VEC(const kdc_loc_t *) reported;
    keyvec_t cond_keys;
    fatal_calls_t calls;
} fatal_run_t;

static int fvec_has(const fvec_t *v, const kdc_func_t *f) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == f)
            return 1;
    return 0;
}

static void fvec_add(fvec_t *v, const kdc_func_t *f) {
    if (f && !fvec_has(v, f))
        KDC_VEC_PUSH(*v, f);
}

static int name_is(const kdc_expr_t *call, const char *name) {
    return call->name && !strcmp(call->name, name);
}

static int name_ends(const kdc_expr_t *call, const char *suffix) {
    size_t n = call->name ? strlen(call->name) : 0, k = strlen(suffix);
    return n >= k && !strcmp(call->name + n - k, suffix);
}

/* ---------- where the client's fatal state is consulted ---------- */

static int bits_intersect(const kdc_bits_t *a, const kdc_bits_t *b) {
    size_t n = a->nwords < b->nwords ? a->nwords : b->nwords;
    for (size_t i = 0; a->w && b->w && i < n; i++)
        if (a->w[i] & b->w[i])
            return 1;
    return 0;
}

typedef struct event_cbs {
    fatal_ctx_t *fc;
    int unresolved;
} event_cbs_t;

/* C++ conf->set("event_cb", &cb, errstr): the event_cb of cb's class. */
static void add_event_cb(const kdc_setting_t *st, void *arg) {
    event_cbs_t *ev = arg;
    kdc_rule_ctx_t *ctx = ev->fc->ctx;
    const kdc_expr_t *value = NULL;
    for (unsigned c = 0; st->func && c < st->func->ncalls && !value; c++) {
        const kdc_expr_t *call = st->func->calls[c];
        if (call->loc.file == st->loc.file && call->loc.line == st->loc.line &&
            call->loc.col == st->loc.col && call->nkids >= 2)
            value = kdc_expr_strip(call->kids[1]);
    }
    char cls[256];
    size_t n = 0;
    for (const char *t = value && value->type ? value->type : ""; *t && n + 1 < sizeof cls; t++)
        if (*t != '*' && *t != '&' && *t != ' ')
            cls[n++] = *t;
    cls[n] = 0;
    if (n >= 5 && !memcmp(cls, "const", 5))
        memmove(cls, cls + 5, strlen(cls + 5) + 1);
    int found = 0;
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; n && i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        size_t len = strlen(cls);
        if (f->class_usr && !strncmp(f->name, cls, len) && !strcmp(f->name + len, "::event_cb")) {
            fvec_add(&ev->fc->callbacks, f);
            found = 1;
        }
    }
    if (!found)
        ev->unresolved = 1;
}

/* The functions rd_kafka_conf_set_error_cb() registers on a configuration the
 * client is created with; C++: every EventCb::event_cb when the client's
 * configuration sets "event_cb". */
static void error_callbacks(fatal_ctx_t *fc) {
    kdc_rule_ctx_t *ctx = fc->ctx;
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    const kdc_obj_t *o = kdc_facts_obj(ctx->facts, fc->client);
    const kdc_api_t *api = kdc_api_lookup(o->site);
    kdc_bits_t confs;
    kdc_pts_expr_ctx(pts, o->func, o->ctx, api ? kdc_api_arg(o->site, api->conf) : NULL, &confs);
    for (size_t i = 0; i < fc->calls->error_cbs.n; i++) {
        const kdc_func_t *f = fc->calls->error_cbs.v[i].f;
        const kdc_expr_t *call = fc->calls->error_cbs.v[i].call;
        kdc_bits_t b, fns;
        kdc_pts_expr(pts, f, call->kids[0], &b);
        if (bits_intersect(&b, &confs)) {
            kdc_pts_expr(pts, f, call->kids[1], &fns);
            for (size_t k = kdc_bits_next(&fns, 0); k < fns.nwords * 64;
                 k = kdc_bits_next(&fns, k + 1))
                if (kdc_pts_obj(pts, k)->kind == KDC_OBJ_FUNC)
                    fvec_add(&fc->callbacks,
                             kdc_program_find_func(ctx->program, kdc_pts_obj(pts, k)->str));
            kdc_bits_free(&fns);
        }
        kdc_bits_free(&b);
    }
    kdc_bits_free(&confs);
    size_t nf = kdc_program_nfuncs(ctx->program);
    int unknown = 0;
    event_cbs_t ev = {fc, 0};
    kdc_facts_client_settings(ctx->facts, fc->client, "event_cb", add_event_cb, &ev, &unknown);
    if (ev.unresolved) /* the object's class cannot be read: every event_cb */
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(ctx->program, i);
            size_t n = strlen(f->name);
            if (f->class_usr && n > 10 && !strcmp(f->name + n - 10, "::event_cb"))
                fvec_add(&fc->callbacks, f);
        }
}

static int is_fatal_predicate(const kdc_expr_t *call) {
    return name_is(call, "rd_kafka_error_is_fatal") ||
           name_is(call, "rd_kafka_event_error_is_fatal") ||
           name_is(call, "RdKafka::Error::is_fatal") || name_is(call, "RdKafka::Event::fatal");
}

static int on_client(fatal_ctx_t *fc, const kdc_func_t *f, const kdc_expr_t *h) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_facts_clients_of(fc->ctx->facts, f, h, &clients, &unknown);
    int hit = kdc_bits_get(&clients, fc->client) || unknown;
    kdc_bits_free(&clients);
    return hit;
}

/* rd_kafka_fatal_error(rk, ..), C++ handle->fatal_error(errstr) on the client. */
static int is_fatal_query(fatal_ctx_t *fc, const kdc_func_t *f, const kdc_expr_t *call) {
    if (name_is(call, "rd_kafka_fatal_error"))
        return on_client(fc, f, kdc_call_arg(call, 0));
    if (call->is_method && name_ends(call, "::fatal_error") && !strncmp(call->name, "RdKafka::", 9))
        return on_client(fc, f, call->recv);
    return 0;
}

static int acts_on_client(fatal_ctx_t *fc, const kdc_func_t *f, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    return api && (api->roles & (KDC_API_PRODUCE | KDC_API_TXN)) &&
           kdc_call_on_client(fc->ctx, f, call, api, 0, fc->client);
}

/* Error callbacks, functions that produce on the client or take a
 * transactional step on it, functions that query its fatal error, and the
 * direct callers and callees of the producing ones. */
static void relevant_functions(fatal_ctx_t *fc) {
    for (size_t i = 0; i < fc->callbacks.n; i++)
        fvec_add(&fc->relevant, fc->callbacks.v[i]);
    fvec_t producing = {0};
    for (size_t i = 0; i < fc->calls->acting.n; i++) {
        const kdc_func_t *f = fc->calls->acting.v[i].f;
        const kdc_expr_t *call = fc->calls->acting.v[i].call;
        if (acts_on_client(fc, f, call))
            fvec_add(&producing, f);
        if (acts_on_client(fc, f, call) || is_fatal_query(fc, f, call))
            fvec_add(&fc->relevant, f);
    }
    /* their direct callers (`if (send(..) == RD_KAFKA_RESP_ERR__FATAL)`) and the
     * helpers they hand an error to (check_txn_error(error)) */
    fvec_t more = {0};
    for (size_t i = 0; i < fc->calls->calling.n; i++) {
        const kdc_func_t *f = fc->calls->calling.v[i].f;
        const kdc_funcvec_t *callees = &fc->calls->calling.v[i].callees;
        for (size_t k = 0; k < callees->n; k++) {
            if (fvec_has(&producing, callees->v[k]))
                fvec_add(&more, f);
            if (fvec_has(&producing, f))
                fvec_add(&more, callees->v[k]);
        }
    }
    for (size_t i = 0; i < more.n; i++)
        fvec_add(&fc->relevant, more.v[i]);
    free(more.v);
    free(producing.v);
}

typedef struct key_collect {
    kdc_program_t *p;
    keyvec_t *keys;
} key_collect_t;

static int collect_cond_keys(const kdc_expr_t *e, void *arg) {
    key_collect_t *kc = arg;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) {
        const char *k = kdc_pts_lvalue_key(kc->p, e);
        for (size_t i = 0; k && i < kc->keys->n; i++)
            if (kc->keys->v[i] == k)
                return 0;
        if (k)
            KDC_VEC_PUSH(*kc->keys, k);
    }
    return 0;
}

/* Variables and fields that conditions read (a stop flag is one of them). */
static void condition_keys(kdc_rule_ctx_t *ctx, keyvec_t *keys) {
    key_collect_t kc = {ctx->program, keys};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_cfg_t *g = kdc_program_func(ctx->program, i)->cfg;
        for (unsigned n = 0; g && n < g->n; n++)
            if (g->nodes[n].kind == KDC_N_COND)
                kdc_expr_walk(g->nodes[n].expr, collect_cond_keys, &kc);
    }
}

static int key_is_tested(const fatal_ctx_t *fc, const char *k) {
    for (size_t i = 0; k && i < fc->cond_keys->n; i++)
        if (fc->cond_keys->v[i] == k)
            return 1;
    return 0;
}

/* ---------- check sites and their fatal branch ---------- */

typedef struct site {
    const kdc_func_t *f;
    int node;       /* the condition node, or the query call node */
    int edge;       /* the successor taken on a fatal error (-1: every successor) */
    const kdc_loc_t *loc;
} site_t;

typedef KDC_VEC(site_t) site_vec_t;

static const kdc_expr_t *strip_not(const kdc_expr_t *e, int *neg) {
    e = kdc_expr_strip(e);
    *neg = 0;
    while (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1) {
        *neg ^= 1;
        e = kdc_expr_strip(e->kids[0]);
    }
    return e;
}

static int is_errno(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1)
        e = kdc_expr_strip(e->kids[0]);
    return e && e->kind == KDC_E_CALL && name_is(e, "__errno_location");
}

/* `err == RD_KAFKA_RESP_ERR__FATAL` (or errno == ECANCELED): the edge taken
 * on a fatal error, or -1. */
static int fatal_compare_edge(const kdc_expr_t *cond) {
    int neg;
    const kdc_expr_t *c = strip_not(cond, &neg);
    if (!c || c->kind != KDC_E_BINARY || (c->op != KDC_OP_EQ && c->op != KDC_OP_NE) || c->nkids != 2)
        return -1;
    for (int side = 0; side < 2; side++) {
        const kdc_expr_t *k = kdc_expr_strip(c->kids[side]), *o = c->kids[1 - side];
        if (!k || !k->has_ival ||
            !(k->ival == KDC_ERR_FATAL || (k->ival == KDC_ERRNO_ECANCELED && is_errno(o))))
            continue;
        int eq_true = (c->op == KDC_OP_EQ) ^ neg;
        return eq_true ? 0 : 1;
    }
    return -1;
}

/* The edge of cond taken when `call` (a fatal query or predicate) says
 * fatal, or -1 when cond says nothing about it. */
static int query_edge(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_expr_t *cond) {
    kdc_outcome_t o;
    kdc_outcome_init(&o, ctx->program, f, call);
    int p = kdc_outcome_polarity(&o, cond);
    if (!p)
        return -1;
    /* error codes: a true (non-zero) value is the fatal error; predicates: true is fatal */
    int true_when = o.error_truthy ? -p : p; /* > 0: cond true when the call's value is true */
    return true_when > 0 ? 0 : 1;
}

/* The sites whose condition says "fatal" go to out, queries whose value
 * nobody tests to bare. */
static void find_sites(fatal_ctx_t *fc, site_vec_t *out, site_vec_t *bare) {
    kdc_rule_ctx_t *ctx = fc->ctx;
    for (size_t r = 0; r < fc->relevant.n; r++) {
        const kdc_func_t *f = fc->relevant.v[r];
        const kdc_cfg_t *g = f->cfg;
        if (!g)
            continue;
        /* queries and predicates whose value a condition tests; a query whose
         * value nobody tests is a site of its own (what follows it) */
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (g->call_node[c] < 0 || !(is_fatal_query(fc, f, call) || is_fatal_predicate(call)))
                continue;
            int tested = 0;
            for (unsigned n = 0; n < g->n; n++) {
                if (g->nodes[n].kind != KDC_N_COND)
                    continue;
                int e = query_edge(ctx, f, call, g->nodes[n].expr);
                if (e < 0)
                    continue;
                site_t s = {f, (int)n, e, &g->nodes[n].expr->loc};
                KDC_VEC_PUSH(*out, s);
                tested = 1;
            }
            if (!tested && kdc_result_use(ctx->program, f, call) != KDC_USE_USED) {
                site_t s = {f, g->call_node[c], -1, &call->loc};
                KDC_VEC_PUSH(*bare, s);
            }
        }
        for (unsigned n = 0; n < g->n; n++) {
            int e = g->nodes[n].kind == KDC_N_COND ? fatal_compare_edge(g->nodes[n].expr) : -1;
            if (e >= 0) {
                site_t s = {f, (int)n, e, &g->nodes[n].expr->loc};
                KDC_VEC_PUSH(*out, s);
            }
        }
    }
}

/* Does the call end or hand over the producer's work: never return, destroy
 * or create a client, or run a handler of the program (or of a library) that
 * is not a logging function? */
static int stops(fatal_ctx_t *fc, const kdc_func_t *f, const kdc_expr_t *call) {
    if (!call->name || !*call->name)
        return 1; /* a function pointer: a handler */
    if (kdc_api_is_noreturn_name(call->name))
        return 1;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & (KDC_API_DESTROY | KDC_API_CLIENT_NEW)) != 0; /* not an abort:
                                                                              it fails too */
    if (call->callee_system || kdc_api_is_librdkafka(call) || kdc_is_logging_name(call->name))
        return 0;
    (void)fc;
    (void)f;
    return 1;
}

static void find_value_return(const kdc_stmt_t *st, void *arg) {
    if (st->kind == KDC_S_RETURN && st->expr)
        *(int *)arg = 1;
}

/* Does f return a value (its callers can learn of the failure)? */
static int returns_value(const kdc_func_t *f) {
    int r = 0;
    kdc_stmt_walk(f->body, find_value_return, &r);
    return r;
}

/* Does the site's fatal branch stop or recreate the producer on every path
 * before the producer is used again? A path that is not stopped ends where
 * it produces (or takes a transactional step) again, or returns from a
 * callback or a function that returns nothing. */
static int site_handles(fatal_ctx_t *fc, const site_t *s) {
    const kdc_func_t *f = s->f;
    const kdc_cfg_t *g = f->cfg;
    /* returning from a callback goes back to librdkafka; from a function that
     * returns a value, the caller gets the failure (main: the program ends) */
    int returning_stops = !fvec_has(&fc->callbacks, f) && returns_value(f);
    unsigned char *seen = calloc(g->n ? g->n : 1, 1);
    int *stack = malloc((g->n + 1) * sizeof *stack);
    if (!seen || !stack)
        kdc_oom();
    size_t sp = 0;
    const kdc_node_t *sn = &g->nodes[s->node];
    for (unsigned i = 0; i < sn->nsucc; i++)
        if ((s->edge < 0 || (int)i == s->edge) && sn->succ[i] >= 0 && !seen[sn->succ[i]]) {
            seen[sn->succ[i]] = 1;
            stack[sp++] = sn->succ[i];
        }
    int unstopped = 0;
    while (sp && !unstopped) {
        int v = stack[--sp];
        const kdc_node_t *nd = &g->nodes[v];
        if (v == g->exit) {
            unstopped = !returning_stops;
            continue;
        }
        if (nd->kind == KDC_N_CALL) {
            if (acts_on_client(fc, f, nd->expr)) {
                unstopped = 1; /* goes on producing */
                break;
            }
            if (!is_fatal_query(fc, f, nd->expr) && !is_fatal_predicate(nd->expr) &&
                stops(fc, f, nd->expr))
                continue; /* this path stops here */
        } else if (nd->kind == KDC_N_ASSIGN && nd->expr) {
            const kdc_expr_t *lv = kdc_expr_strip(kdc_expr_assigned(nd->expr));
            int nonlocal = lv && !(lv->kind == KDC_E_REF && lv->ref == KDC_REF_LOCAL);
            if (nonlocal && key_is_tested(fc, kdc_pts_lvalue_key(fc->ctx->program, lv)))
                continue; /* run = 0; state->fatal = 1: a flag the program tests */
        }
        for (unsigned i = 0; i < nd->nsucc; i++)
            if (nd->succ[i] >= 0 && !seen[nd->succ[i]]) {
                seen[nd->succ[i]] = 1;
                stack[sp++] = nd->succ[i];
            }
    }
    free(seen);
    free(stack);
    return !unstopped;
}

/* ---------- never consulted: does a produce go on after a failure? ---------- */

typedef struct goes_on {
    int found;
    kdc_produce_loss_t loss;
} goes_on_t;

static void on_loss(kdc_rule_ctx_t *ctx, const kdc_produce_loss_t *l, void *arg) {
    (void)ctx;
    goes_on_t *g = arg;
    if (!g->found) {
        g->found = 1;
        g->loss = *l;
    }
}

/* A produce of the client that goes on after a failure: its result dropped
 * while it runs repeatedly, or its failure path takes the next record or
 * commits. */
static int produce_goes_on(fatal_ctx_t *fc, goes_on_t *out) {
    kdc_rule_ctx_t *ctx = fc->ctx;
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (!kdc_is_single_produce(call) || !kdc_call_on_client(ctx, f, call, api, 0, fc->client))
            continue;
        kdc_bits_t clients;
        int unknown = 0;
        kdc_call_clients(ctx, f, call, api, 0, &clients, &unknown);
        int mine = kdc_bits_get(&clients, fc->client);
        kdc_bits_free(&clients);
        if (!mine)
            continue;
        if (kdc_result_use(ctx->program, f, call) != KDC_USE_USED &&
            (kdc_call_in_loop(f, call) || kdc_facts_func_runs_repeatedly(ctx->facts, f, 2))) {
            kdc_produce_loss_t l = {KDC_LOSS_NEXT_RECORD, f, call, call, f, NULL, 0, 0};
            out->found = 1;
            out->loss = l;
            return 1;
        }
        kdc_produce_failure_losses(ctx, f, call, KDC_ERR_FATAL, KDC_ERRNO_ECANCELED, on_loss, out);
        if (out->found)
            return 1;
    }
    return 0;
}

/* A transactional producer whose commit_transaction() result is used: the
 * transaction API reports the fatal error there. */
static int commit_checked(fatal_ctx_t *fc) {
    kdc_rule_ctx_t *ctx = fc->ctx;
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (api && (api->roles & KDC_API_TXN) && name_ends(call, "commit_transaction") &&
            kdc_call_on_client(ctx, f, call, api, 0, fc->client) &&
            kdc_result_use(ctx->program, f, call) == KDC_USE_USED)
            return 1;
    }
    return 0;
}

/* The calls every producer's check looks at (fatal_calls_t), in program order. */
static void find_calls(kdc_rule_ctx_t *ctx, fatal_calls_t *out) {
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    size_t nf = kdc_program_nfuncs(ctx->program);
    out->found = 1;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (name_is(call, "rd_kafka_conf_set_error_cb") && call->nkids == 2)
                KDC_VEC_PUSH(out->error_cbs, ((kdc_api_call_t){f, call, api}));
            if (api || name_is(call, "rd_kafka_fatal_error") ||
                (call->is_method && name_ends(call, "::fatal_error")))
                KDC_VEC_PUSH(out->acting, ((kdc_api_call_t){f, call, api}));
            if (api)
                continue;
            calling_t cl = {f, {0}};
            kdc_pts_callees(pts, f, call, &cl.callees);
            if (cl.callees.n)
                KDC_VEC_PUSH(out->calling, cl);
            else
                free(cl.callees.v);
        }
    }
}

/* ---------- the rule ---------- */

static void check_client(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    fatal_run_t *run = arg;
    if (kdc_facts_client_type(ctx->facts, client) == 1 ||
        !kdc_facts_client_produces(ctx->facts, client, NULL))
        return;
    int transactional = kdc_config_is_transactional(ctx, client);
    kdc_tri_t idempotent =
        transactional ? KDC_TRI_YES
                      : kdc_facts_client_bool(ctx->facts, client, "enable.idempotence", 0);
    if (idempotent == KDC_TRI_NO && ctx->opts->strict) {
        /* off unless the outside turns it on (docs/kdc-lint.md, settings the program
         * does not determine): strict notes what it cannot verify */
        kdc_value_t v;
        kdc_facts_client_value(ctx->facts, client, "enable.idempotence", "false",
                               KDC_VALUE_BOOL | KDC_VALUE_GLOBAL, &v);
        if (v.source == KDC_VALUE_OUTSIDE)
            idempotent = KDC_TRI_UNKNOWN;
    }
    if (idempotent == KDC_TRI_NO || (idempotent == KDC_TRI_UNKNOWN && !ctx->opts->strict))
        return; /* cannot tell: quiet in the default profile, a note in strict */
    if (!run->calls.found)
        find_calls(ctx, &run->calls);
    fatal_ctx_t fc = {ctx, client, {0}, {0}, &run->cond_keys, &run->calls};
    error_callbacks(&fc);
    relevant_functions(&fc);
    site_vec_t sites = {0}, bare = {0};
    find_sites(&fc, &sites, &bare);
    for (size_t i = 0; i < bare.n; i++) /* conditions first: they are where a finding sits */
        KDC_VEC_PUSH(sites, bare.v[i]);
    free(bare.v);
    const char *what = transactional ? "transactional producer (transactional.id set)"
                       : idempotent == KDC_TRI_YES
                           ? "idempotent producer (enable.idempotence=true)"
                           : "producer, which may be idempotent (enable.idempotence cannot be "
                             "determined; strict profile),";
    void (*report)(kdc_rule_ctx_t *, const kdc_func_t *, const kdc_loc_t *, const kdc_related_t *,
                   size_t, const char *, ...) =
        idempotent == KDC_TRI_YES ? kdc_rule_report : kdc_rule_note;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, client), "producer created here");
    int handled = 0;
    for (size_t i = 0; i < sites.n && !handled; i++)
        handled = site_handles(&fc, &sites.v[i]);
    goes_on_t g = {0};
    if (handled || (!sites.n && transactional && commit_checked(&fc)) || !produce_goes_on(&fc, &g)) {
        /* handled; or a failed produce stops the producing path anyway */
    } else {
        const site_t *s = sites.n ? &sites.v[0] : NULL;
        const kdc_loc_t *at = s ? s->loc : &g.loss.call->loc;
        int dup = 0;
        for (size_t i = 0; i < run->reported.n; i++)
            dup |= run->reported.v[i] == at;
        if (!dup) {
            KDC_VEC_PUSH(run->reported, at);
            if (!s && fc.callbacks.n)
                kdc_notes_add(&notes, &fc.callbacks.v[0]->loc,
                              "its error callback never checks RD_KAFKA_RESP_ERR__FATAL");
            if (s)
                kdc_notes_add(&notes, &g.loss.call->loc,
                              "a failed produce does not stop the producing loop here");
            if (g.loss.at)
                kdc_notes_add(&notes, &g.loss.at->loc,
                              g.loss.kind == KDC_LOSS_COMMIT
                                  ? "the failure is followed by a commit of the input"
                                  : "the failure is followed by the next record");
            if (s)
                report(ctx, s->f, at, notes.v, notes.n,
                                "RD_KAFKA_RESP_ERR__FATAL of this %s is detected here but only "
                                "logged, and the producing loop goes on after failed produces: "
                                "after a fatal error librdkafka purges the queue and fails every "
                                "later produce, so all that is produced from then on is lost; "
                                "read rd_kafka_fatal_error(), then stop (exit, end the produce "
                                "loop) or recreate the producer",
                                what);
            else
                report(
                    ctx, g.loss.func, at, notes.v, notes.n,
                    "this %s goes on producing after a failed produce, and nothing consults "
                    "its fatal error (no error callback or produce path checks "
                    "RD_KAFKA_RESP_ERR__FATAL or calls rd_kafka_fatal_error()): after a fatal "
                    "error librdkafka purges the queue and fails every later produce, so "
                    "everything from then on is lost; register an error_cb that checks "
                    "RD_KAFKA_RESP_ERR__FATAL, reads rd_kafka_fatal_error() and stops or "
                    "recreates the producer",
                    what);
        }
    }
    free(sites.v);
    free(fc.callbacks.v);
    free(fc.relevant.v);
}

static void check(kdc_rule_ctx_t *ctx) {
    fatal_run_t run = {{0}, {0}, {0}};
    condition_keys(ctx, &run.cond_keys);
    kdc_config_each_client(ctx, 0, check_client, &run);
    for (size_t i = 0; i < run.calls.calling.n; i++)
        free(run.calls.calling.v[i].callees.v);
    free(run.calls.calling.v);
    free(run.calls.acting.v);
    free(run.calls.error_cbs.v);
    free(run.reported.v);
    free(run.cond_keys.v);
}

const kdc_rule_t kdc_rule_fatal_error_ignored = {
    .name = "fatal-error-ignored",
    .summary = "an idempotent or transactional producer goes on producing after "
               "RD_KAFKA_RESP_ERR__FATAL (no stop, no re-creation)",
    .severity = KDC_SEV_WARNING,
    .confidence = "medium",
    .in_default = 1,
    .check = check,
};
