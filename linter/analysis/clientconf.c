/*
 * Configurations, clients and topics: what each configuration object sets and
 * registers, which configurations each client handle may be created with,
 * which clients each topic handle belongs to.
 *
 * A property set inside a helper (`set_prop(conf, "acks", "1")`) is resolved
 * at the helper's call sites, up to KDC_CONTEXT_DEPTH calls out, so each call
 * site's key and value are paired with the configuration that call passes (in
 * the instance of a factory that call selects). Registrations of callbacks
 * are resolved the same way (`if (cb) rd_kafka_conf_set_rebalance_cb(conf,
 * cb)` registers nothing for a caller passing NULL). A table of key/value
 * pairs applied in a loop gives one setting per row (2-D and struct tables, a
 * flat NULL-terminated list, a helper's variadic arguments).
 */
#define _GNU_SOURCE
#include "api.h"
#include "facts_int.h"
#include "paths.h"
#include "results.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <xxhash.h>

/* kdc_facts_clients_at's answers, kept once the facts are complete: the rules ask the same
 * question of the same call for every client of the program (is this flush on client k?),
 * and each answer walks the function's assignments again. Keyed by (f, call, e); the
 * answer is the clients' indices (few) and the unknown flag. */
typedef struct clients_answer {
    const void *f, *call, *e;
    uint32_t *idx; /* malloc'd; NULL when n is 0 */
    uint32_t n;
    int unknown;
} clients_answer_t;

struct clients_memo {
    clients_answer_t *slots;
    size_t cap, n; /* cap: a power of two */
};

#define KDC_CONTEXT_DEPTH 8
#define KDC_MAX_CONTEXTS 4096

/* ---------- call-site contexts ---------- */

/* What a configuration call does. */
typedef enum {
    CALL_SET,       /* sets a property (C++ dr_cb, rebalance_cb, default_topic_conf included) */
    CALL_DR,        /* registers a delivery-report callback */
    CALL_EVENTS,    /* rd_kafka_conf_set_events(conf, flags) */
    CALL_REBALANCE, /* registers a rebalance callback */
    CALL_LINK,      /* attaches a default topic configuration */
    CALL_ESCAPE     /* hands the configuration to code outside the analysis */
} call_kind_t;

typedef struct set_call {
    const kdc_func_t *f;
    const kdc_expr_t *call;
    call_kind_t kind;
    const kdc_expr_t *conf, *key, *value; /* in f; key NULL when the kind has none */
} set_call_t;

/* An expression of the call, followed out through the chain of call sites
 * while it is a parameter: chain[i] is the call of the function at level i
 * (level 0: sc->f; level i: chain[i-1].f). */
typedef struct resolved {
    const kdc_func_t *f;
    const kdc_expr_t *e;
    int level; /* the level of f */
    int used;  /* the outermost level consulted (a condition's parameter included) */
    int open;  /* a parameter at the top of the chain still decides it */
} resolved_t;

static int is_param(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->ref == KDC_REF_PARAM;
}

/* The parameter a condition tests (`p`, `!p`, `p == NULL`, `p != NULL`);
 * *negate when the condition is true for a null or false p. */
static const kdc_expr_t *cond_param(const kdc_expr_t *c, int *negate) {
    c = kdc_expr_strip(c);
    *negate = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        *negate = !*negate;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (c && c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2) {
        const kdc_expr_t *other = kdc_expr_is_null(c->kids[1]) ? c->kids[0]
                                  : kdc_expr_is_null(c->kids[0]) ? c->kids[1]
                                                                 : NULL;
        *negate ^= c->op == KDC_OP_EQ;
        c = kdc_expr_strip(other);
    }
    return c && c->kind == KDC_E_REF && c->ref == KDC_REF_PARAM && c->param_index >= 0 ? c : NULL;
}

/* 1 true, 0 false (null), -1 unknown: a literal a caller passes. */
static int literal_truth(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return -1;
    if (kdc_expr_is_null(e))
        return 0;
    if (e->has_ival)
        return e->ival != 0;
    if (e->kind == KDC_E_STRING || (e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR))
        return 1;
    return -1;
}

/* Is the variable written only by `v += k`, `v++`, `++v` (a pointer walking
 * forward: `for (; *kv; kv += 2)`), apart from at most `inits` plain
 * assignments (a local's initialisation)? */
typedef struct advance_scan {
    const char *usr;
    int advanced, other, assigned;
} advance_scan_t;

static int scan_advance(const kdc_expr_t *e, void *arg) {
    advance_scan_t *a = arg;
    const kdc_expr_t *k = e->nkids ? kdc_expr_strip(e->kids[0]) : NULL;
    if (!k || k->kind != KDC_E_REF || k->usr != a->usr)
        return 0;
    if ((e->kind == KDC_E_UNARY && (e->op == KDC_OP_PREINC || e->op == KDC_OP_POSTINC)) ||
        (e->kind == KDC_E_BINARY && e->op == KDC_OP_COMPOUND_ASSIGN && e->nkids == 2 &&
         e->kids[1]->has_ival && e->kids[1]->ival > 0))
        a->advanced = 1;
    else if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN)
        a->assigned++;
    else if ((e->kind == KDC_E_BINARY && e->op == KDC_OP_COMPOUND_ASSIGN) ||
             (e->kind == KDC_E_UNARY && (e->op == KDC_OP_ADDR || e->op == KDC_OP_PREDEC ||
                                         e->op == KDC_OP_POSTDEC)))
        a->other = 1;
    return 0;
}

static int only_advanced(const kdc_func_t *f, const char *usr, int inits) {
    advance_scan_t a = {usr, 0, 0, 0};
    kdc_func_walk_exprs(f, scan_advance, &a);
    return a.advanced && !a.other && a.assigned <= inits;
}

/* C++: the std::string (a library class) a `const char *` or literal is
 * converted to on its way to a parameter holds the same string. */
static const kdc_expr_t *strip_string_ctor(const kdc_expr_t *e) {
    e = kdc_expr_strip_copy(e);
    for (int d = 0; e && e->kind == KDC_E_CALL && e->is_ctor && e->callee_system && e->nkids >= 1 &&
                    d < 8;
         d++)
        e = kdc_expr_strip_copy(e->kids[0]);
    return e;
}

/* Follows r out through the chain while it is a parameter, and chooses the
 * branch of a `p ? a : b` whose parameter a caller passes as a literal. */
static resolved_t resolve_from(kdc_facts_t *fx, const frame_t *chain, int n, resolved_t r) {
    for (int guard = 0; guard < 16; guard++) {
        const kdc_expr_t *s = strip_string_ctor(r.e);
        if (!s)
            break;
        if (s->kind == KDC_E_REF && s->ref == KDC_REF_PARAM && s->param_index >= 0 &&
            kdc__param_fixed(fx, r.f, s->param_index)) {
            if (r.level >= n) {
                r.open = 1;
                break;
            }
            const kdc_expr_t *arg = kdc_call_arg(chain[r.level].call, (unsigned)s->param_index);
            if (!arg)
                break;
            r.e = arg;
            r.f = chain[r.level].f;
            r.level++;
            if (r.level > r.used)
                r.used = r.level;
            continue;
        }
        int neg;
        const kdc_expr_t *p = s->kind == KDC_E_COND && s->nkids == 3 ? cond_param(s->kids[0], &neg)
                                                                     : NULL;
        if (!p)
            break;
        resolved_t c = {r.f, p, r.level, r.level, 0};
        c = resolve_from(fx, chain, n, c);
        if (c.used > r.used)
            r.used = c.used;
        int t = c.open ? -1 : literal_truth(c.e);
        if (c.open)
            r.open = 1;
        if (t < 0)
            break;
        r.e = s->kids[(t ^ neg) ? 1 : 2];
    }
    return r;
}

static resolved_t resolve(kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain, int n,
                          const kdc_expr_t *e) {
    resolved_t r = {sc->f, e, 0, 0, 0};
    return resolve_from(fx, chain, n, r);
}

static const kdc_func_t *func_at(const set_call_t *sc, const frame_t *chain, int level) {
    return level ? chain[level - 1].f : sc->f;
}

/* The call at a level that leads to the configuration call (the call itself at level 0). */
static const kdc_expr_t *call_at(const set_call_t *sc, const frame_t *chain, int level) {
    return level ? chain[level - 1].call : sc->call;
}

/* The instance of the function at `level` (a factory analysed per chain of
 * calls) that the calls above it select; NULL when it is not a factory, or the
 * chain stops before the calls that select one (then: every instance). */
static const char *instance_at(const kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain,
                               int n, int level) {
    const kdc_func_t *f = func_at(sc, chain, level);
    if (level >= n || !kdc_pts_is_factory(fx->pts, f))
        return NULL;
    const char *up = instance_at(fx, sc, chain, n, level + 1);
    if (!up && kdc_pts_is_factory(fx->pts, chain[level].f))
        return NULL;
    return kdc_pts_context_of_call(fx->pts, f, up, chain[level].call);
}

/* The array at the root of a table cell: T in T[i], T[i + 1], T[i][k], T[i].field. */
static const kdc_expr_t *table_root(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    while (e && (e->kind == KDC_E_INDEX || (e->kind == KDC_E_MEMBER && e->nkids == 1 && !e->arrow)))
        e = kdc_expr_strip(e->kids[0]);
    return e && e->kind == KDC_E_REF ? e : NULL;
}

/* A local variable of f assigned only from a va_list: `while ((k = va_arg(ap,
 * const char *)))` (the model keeps the va_list of a va_arg). */
static int from_varargs(const kdc_func_t *f, const kdc_expr_t *e);

typedef void (*context_fn)(kdc_facts_t *fx, const frame_t *chain, int n, void *arg);

/* How far out an expression of the call is decided (its level, one more for
 * a table or variadic arguments its caller passes), and whether that is still
 * open at the top of the chain. */
static int level_used(kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain, int n,
                      const kdc_expr_t *e, int *open) {
    resolved_t r = resolve(fx, sc, chain, n, e);
    const kdc_expr_t *t = table_root(r.e);
    int more = (t && t != kdc_expr_strip(r.e) && is_param(t)) || from_varargs(r.f, r.e);
    if (r.open || (r.level == n && more))
        *open = 1;
    return (r.used > r.level + more ? r.used : r.level + more);
}

/* Is a longer chain needed: something still depends on the caller, or it was
 * followed into callers and the function at the top is a factory (whose
 * instance the next call out selects)? */
/* ---------- conditions on parameters ---------- */

/* The `if (c)` statements a call is under in its function, and which branch
 * (then: 1); kept per call. */
typedef struct guard {
    const kdc_expr_t *cond;
    int branch;
} guard_t;
typedef KDC_VEC(guard_t) guard_vec_t;

typedef struct guard_find {
    const kdc_expr_t *call;
    guard_vec_t stack, found;
    int done;
} guard_find_t;

static int is_the_call(const kdc_expr_t *e, void *arg) { return e == arg; }

static void find_guards(guard_find_t *g, const kdc_stmt_t *s) {
    if (!s || g->done)
        return;
    if (kdc_expr_walk(s->expr, is_the_call, (void *)g->call) ||
        kdc_expr_walk(s->inc, is_the_call, (void *)g->call)) {
        for (size_t i = 0; i < g->stack.n; i++)
            KDC_VEC_PUSH(g->found, g->stack.v[i]);
        g->done = 1;
        return;
    }
    find_guards(g, s->init);
    if (s->kind == KDC_S_IF && s->expr) {
        guard_t gd = {s->expr, 1};
        KDC_VEC_PUSH(g->stack, gd);
        find_guards(g, s->body);
        g->stack.v[g->stack.n - 1].branch = 0;
        find_guards(g, s->els);
        g->stack.n--;
    } else {
        find_guards(g, s->body);
        find_guards(g, s->els);
    }
    for (unsigned i = 0; i < s->nkids && !g->done; i++)
        find_guards(g, s->kids[i]);
}

/* The conditions on a parameter of f a call is under (`if (cb)`, `if (!conf)`). */
static const guard_vec_t *param_guards(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    guard_vec_t *v = kdc_strmap_get(&fx->call_guards, (const char *)call);
    if (v)
        return v;
    guard_find_t g = {call, {0}, {0}, 0};
    find_guards(&g, f->body);
    free(g.stack.v);
    v = calloc(1, sizeof *v);
    if (!v)
        kdc_oom();
    for (size_t i = 0; i < g.found.n; i++) {
        int neg;
        if (cond_param(g.found.v[i].cond, &neg))
            KDC_VEC_PUSH(*v, g.found.v[i]);
    }
    free(g.found.v);
    kdc_strmap_put(&fx->call_guards, (const char *)call, v);
    return v;
}

/* Over the levels of the chain: is the configuration call ruled out by a
 * condition on a parameter its callers pass as a constant (1), still open
 * at the top of the chain (*open), and how far out were they followed? */
static int ruled_out_by_guards(kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain, int n,
                               int *open, int *used) {
    for (int l = 0; l <= n; l++) {
        const kdc_func_t *f = func_at(sc, chain, l);
        const guard_vec_t *gv = param_guards(fx, f, call_at(sc, chain, l));
        for (size_t i = 0; i < gv->n; i++) {
            int neg;
            const kdc_expr_t *p = cond_param(gv->v[i].cond, &neg);
            resolved_t r = {f, p, l, l, 0};
            r = resolve_from(fx, chain, n, r);
            if (r.used > *used)
                *used = r.used;
            if (r.open) {
                *open = 1;
                continue;
            }
            int t = literal_truth(r.e);
            if (t >= 0 && ((t ^ neg) != 0) != (gv->v[i].branch != 0))
                return 1;
        }
    }
    return 0;
}

static int needs_caller(kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain, int n) {
    const kdc_expr_t *const es[3] = {sc->conf, sc->key, sc->value};
    int open = 0, used = 0;
    for (int i = 0; i < 3; i++)
        if (es[i] && level_used(fx, sc, chain, n, es[i], &open) > 0)
            used = 1;
    int gused = 0;
    if (ruled_out_by_guards(fx, sc, chain, n, &open, &gused))
        return 0; /* nothing to apply in this chain */
    used |= gused > 0;
    return open || (used && kdc_pts_is_factory(fx->pts, func_at(sc, chain, n)));
}

/* Calls fn for each chain of call sites leading to sc's call that decides its
 * configuration, name and value (up to KDC_CONTEXT_DEPTH calls out, until a
 * function nobody calls, or a cycle); a chain of length 0 when nothing depends
 * on a caller. */
static void each_context(kdc_facts_t *fx, const set_call_t *sc, frame_t *chain, int n,
                         int *budget, context_fn fn, void *arg) {
    const kdc_func_t *cur = func_at(sc, chain, n);
    const frame_vec_t *callers = &fx->callers[cur->index];
    if (n == KDC_CONTEXT_DEPTH || !callers->n || !needs_caller(fx, sc, chain, n)) {
        if ((*budget)-- > 0)
            fn(fx, chain, n, arg);
        return;
    }
    for (size_t i = 0; i < callers->n && *budget > 0; i++) {
        int cycle = callers->v[i].f == sc->f;
        for (int k = 0; k < n; k++)
            cycle |= chain[k].f == callers->v[i].f;
        if (cycle) {
            if ((*budget)-- > 0)
                fn(fx, chain, n, arg);
            continue;
        }
        chain[n] = callers->v[i];
        each_context(fx, sc, chain, n + 1, budget, fn, arg);
    }
}

/* Is this call on every path through its function, apart from paths where a
 * property failed to set (the configuration is then abandoned)? */
typedef struct must_ctx {
    int avoid, found;
    kdc_program_t *p;
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    const kdc_expr_t *set;   /* the configuration call a condition tests */
    int helper;              /* ... a helper of the program that makes one, returning bool */
    const frame_t *site;     /* the call of f whose constant arguments decide conditions, or NULL */
} must_ctx_t;

/* A helper of the program returning bool that sets a property
 * (`static bool apply(Conf &c, const char *k, ..) { return c.set(k, ..) == CONF_OK; }`):
 * false is its failure. */
static int bool_conf_helper(const must_ctx_t *m, const kdc_expr_t *call) {
    if (!call->type || (strcmp(call->type, "bool") && strcmp(call->type, "_Bool")))
        return 0;
    const kdc_func_t *h = kdc__callee_func(m->fx, m->f, call);
    for (unsigned c = 0; h && c < h->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(h->calls[c]);
        if (api && (api->roles & KDC_API_CONF_SET))
            return 1;
    }
    return 0;
}

static int find_conf_set(const kdc_expr_t *e, void *arg) {
    must_ctx_t *m = arg;
    if (e->kind != KDC_E_CALL)
        return 0;
    const kdc_api_t *api = kdc_api_lookup(e);
    if ((api && (api->roles & KDC_API_CONF_SET)) || bool_conf_helper(m, e)) {
        m->set = e;
        m->helper = !api;
        return 1;
    }
    return 0;
}

static int must_visit(void *ctx, const kdc_cfg_t *g, int n, int st) {
    must_ctx_t *m = ctx;
    if (n == m->avoid)
        return -1;
    if (n == g->exit)
        m->found = 1;
    return st;
}

static int must_edge(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    const kdc_node_t *nd = &g->nodes[n];
    must_ctx_t *m = ctx;
    if (nd->kind != KDC_N_COND)
        return 1;
    int bound =
        m->site ? kdc_facts_bound_cond(m->fx, m->site->f, m->site->call, m->f, nd->expr) : -1;
    if (bound >= 0) /* `if (store) set(conf, .., store)` for a caller passing "false" */
        return i == (unsigned)(bound ? 0 : 1);
    if (!kdc_expr_walk(nd->expr, find_conf_set, m))
        return 1;
    kdc_outcome_t o = {0};
    o.p = m->p;
    o.call = m->set;
    o.error_truthy = !m->helper; /* rd_kafka_conf_res_t: RD_KAFKA_CONF_OK is 0; a helper: false */
    return kdc_outcome_failure_edge(&o, nd->expr) != (int)i;
}

/* Where the paths of a configuration begin in f: at the call that creates it when
 * that is in f, or at the call of the factory that does (a path that returns
 * before the configuration exists, `if (load() != 0) return 1;`, is not one of
 * its paths), else at f's entry. */
static int conf_start(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *conf) {
    const kdc_cfg_t *g = f->cfg;
    if (!conf)
        return g->entry;
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, conf, &b);
    int start = -1, n = 0;
    for (size_t i = kdc_bits_next(&b, 0); i < kdc_pts_nobjs(fx->pts);
         i = kdc_bits_next(&b, i + 1)) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        n++;
        /* created here, or by the call of a factory here */
        int at = o->kind != KDC_OBJ_CONF ? -1
                 : o->func == f          ? kdc_cfg_node_of_call(g, o->site)
                                         : kdc_cfg_node_of_call(g, o->via);
        if (at < 0 || (start >= 0 && start != at)) {
            start = -1;
            break;
        }
        start = at;
    }
    kdc_bits_free(&b);
    return n && start >= 0 ? start : g->entry;
}

static int on_every_path(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_expr_t *conf, const frame_t *site) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return 0;
    must_ctx_t m = {g->call_node[call->call_id], 0, fx->p, fx, f, NULL, 0, site};
    kdc_search_t s = {must_visit, must_edge, &m, 1};
    kdc_cfg_search(g, conf_start(fx, f, conf), 0, &s);
    return !m.found;
}

/* The loop conditions of the loops the node is in (on a cycle with it). */
typedef KDC_VEC(int) int_vec_t;

static int in_vec(const int_vec_t *v, int n) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == n)
            return 1;
    return 0;
}

static int avoid_in_vec(void *arg, int n) { return in_vec(arg, n); }

typedef struct avoid2 {
    const int_vec_t *set;
    int node;
} avoid2_t;

static int avoid_node_or_set(void *arg, int n) {
    const avoid2_t *a = arg;
    return n == a->node || in_vec(a->set, n);
}

static int avoid_node(void *arg, int n) { return n == *(const int *)arg; }

/* Is a call in a loop over rows (a table, a list, variadic arguments) made
 * for every row: the loop is on every path of f from the configuration's
 * start, and no iteration skips the call (`continue`, `break`, `return`
 * before it)? Outside a loop: on_every_path(). */
static int every_pass(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_expr_t *conf, const frame_t *site) {
    const kdc_cfg_t *g = f->cfg;
    int c = g ? kdc_cfg_node_of_call(g, call) : -1;
    if (c < 0)
        return 0;
    int_vec_t loop = {0};
    for (unsigned n = 0; n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_COND && g->nodes[n].loop_cond &&
            kdc_cfg_reaches_avoiding(g, (int)n, c, NULL, NULL) &&
            kdc_cfg_reaches_avoiding(g, c, (int)n, NULL, NULL))
            KDC_VEC_PUSH(loop, (int)n);
    if (!loop.n)
        return on_every_path(fx, f, call, conf, site);
    int every = !kdc_cfg_reaches_avoiding(g, conf_start(fx, f, conf), g->exit, avoid_in_vec, &loop);
    for (size_t i = 0; every && i < loop.n; i++) {
        const kdc_node_t *nd = &g->nodes[loop.v[i]];
        for (unsigned k = 0; every && k < nd->nsucc; k++) {
            int s = nd->succ[k];
            if (s == c || in_vec(&loop, s) || !kdc_cfg_reaches_avoiding(g, s, c, NULL, NULL))
                continue; /* the call, the rest of the condition, or the way out */
            avoid2_t a = {&loop, c};
            if (kdc_cfg_reaches_avoiding(g, s, loop.v[i], avoid_node, &c) ||
                kdc_cfg_reaches_avoiding(g, s, g->exit, avoid_node_or_set, &a))
                every = 0;
        }
    }
    free(loop.v);
    return every;
}

/* ---------- tables of key/value pairs ---------- */

typedef struct pair {
    const char *key, *value, *fallback;
} pair_t;
typedef KDC_VEC(pair_t) pair_vec_t;

typedef struct init_find {
    const char *usr;
    const kdc_expr_t *init;
} init_find_t;

static int find_local_init(const kdc_expr_t *e, void *arg) {
    init_find_t *fi = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        e->kids[0]->kind == KDC_E_REF && e->kids[0]->usr == fi->usr) {
        fi->init = e->kids[1];
        return 1;
    }
    return 0;
}

static const kdc_expr_t *initializer_of(const kdc_facts_t *fx, const kdc_func_t *f, const char *usr) {
    for (size_t i = 0; i < kdc_program_nglobal_inits(fx->p); i++) {
        const kdc_global_init_t *g = kdc_program_global_init(fx->p, i);
        if (g->usr == usr)
            return g->init;
    }
    init_find_t fi = {usr, NULL};
    kdc_func_walk_exprs(f, find_local_init, &fi);
    return fi.init;
}

/* T[i][k] → (T, k as column); T[i].field → (T, field); a flat list of
 * alternating names and values: T[i] → (T, FLAT_NAME), T[i + 1] → (T, FLAT_VALUE). */
#define FLAT_NAME (-2)
#define FLAT_VALUE (-3)
typedef struct cell {
    const kdc_expr_t *table; /* REF to the array */
    long long column;        /* -1 when a field */
    const char *field;
} cell_t;

static int is_var_plus_one(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_BINARY && e->op == KDC_OP_ADD && e->nkids == 2 &&
           !e->kids[0]->has_ival && e->kids[1]->has_ival && e->kids[1]->ival == 1;
}

static int as_cell(const kdc_expr_t *e, cell_t *c) {
    e = kdc_expr_strip(e);
    c->column = -1;
    c->field = NULL;
    if (e && e->kind == KDC_E_INDEX && !e->kids[1]->has_ival) {
        const kdc_expr_t *t = kdc_expr_strip(e->kids[0]);
        if (t && t->kind == KDC_E_REF && t->usr && (!t->type || !strstr(t->type, "[2]"))) {
            c->column = is_var_plus_one(e->kids[1]) ? FLAT_VALUE : FLAT_NAME;
            c->table = t;
            return 1;
        }
    }
    if (e && e->kind == KDC_E_INDEX && e->kids[1]->has_ival) {
        c->column = e->kids[1]->ival;
        e = kdc_expr_strip(e->kids[0]);
        /* a pointer walking a flat list: `for (; *kv; kv += 2) set(c, kv[0], kv[1])` */
        if (e && e->kind == KDC_E_REF && e->usr && e->type && strstr(e->type, "**") &&
            (c->column == 0 || c->column == 1)) {
            c->column = c->column ? FLAT_VALUE : FLAT_NAME;
            c->table = e;
            return 1;
        }
    } else if (e && e->kind == KDC_E_MEMBER && e->nkids == 1 && e->usr) {
        c->field = e->usr;
        e = kdc_expr_strip(e->kids[0]);
    } else {
        return 0;
    }
    if (!e || e->kind != KDC_E_INDEX || e->kids[1]->has_ival)
        return 0; /* the row must be chosen by a loop variable */
    c->table = kdc_expr_strip(e->kids[0]);
    return c->table && c->table->kind == KDC_E_REF && c->table->usr;
}

static const char *row_cell(const kdc_expr_t *row, const cell_t *c) {
    row = kdc_expr_strip(row);
    if (!row || row->kind != KDC_E_INIT)
        return NULL;
    const kdc_expr_t *v = NULL;
    if (c->column >= 0 && (unsigned long long)c->column < row->nkids)
        v = row->kids[c->column];
    for (unsigned i = 0; c->field && row->fields && i < row->nkids; i++)
        if (row->fields[i] == c->field)
            v = row->kids[i];
    v = kdc__literal(v);
    return v ? v->str : NULL;
}

/* Pairs of a table read by the key and value expressions (key.e and value.e
 * cells of one table in one function). A table that is a parameter is the
 * array the caller passes (followed out through the chain). */
static int table_pairs(kdc_facts_t *fx, const frame_t *chain, int n, resolved_t key,
                       resolved_t value, pair_vec_t *out) {
    cell_t kc, vc;
    if (key.f != value.f || !as_cell(key.e, &kc) || !as_cell(value.e, &vc) ||
        kc.table->usr != vc.table->usr)
        return 0;
    int flat = kc.column == FLAT_NAME;
    if ((kc.column <= FLAT_NAME || vc.column <= FLAT_NAME) && (!flat || vc.column != FLAT_VALUE))
        return 0;
    resolved_t t = {key.f, kc.table, key.level, key.level, 0};
    const kdc_expr_t *walker = kdc_expr_strip(kc.table);
    if (flat && walker->ref == KDC_REF_PARAM && walker->param_index >= 0 &&
        only_advanced(key.f, walker->usr, 0) && key.level < n) {
        /* a parameter that only walks forward (`kv += 2`) starts at what the caller passes */
        const kdc_expr_t *arg = kdc_call_arg(chain[key.level].call, (unsigned)walker->param_index);
        if (!arg)
            return 0;
        t.e = arg;
        t.f = chain[key.level].f;
        t.level = t.used = key.level + 1;
    } else if (flat && walker->ref == KDC_REF_LOCAL && only_advanced(key.f, walker->usr, 1)) {
        const kdc_expr_t *start = kdc_expr_strip(initializer_of(fx, key.f, walker->usr));
        if (start && start->kind == KDC_E_REF) /* const char **kv = pairs; */
            t.e = start;
    }
    t = resolve_from(fx, chain, n, t);
    const kdc_expr_t *root = kdc_expr_strip(t.e);
    if (!root || root->kind != KDC_E_REF || !root->usr || root->ref == KDC_REF_PARAM)
        return 0;
    const kdc_expr_t *init = kdc_expr_strip(initializer_of(fx, t.f, root->usr));
    if (!init || init->kind != KDC_E_INIT)
        return 0;
    if (flat) { /* {"name", "value", .., NULL} */
        for (unsigned r = 0; r + 1 < init->nkids; r += 2) {
            const kdc_expr_t *k = kdc__literal(init->kids[r]), *v = kdc__literal(init->kids[r + 1]);
            if (!k)
                break;
            pair_t p = {k->str, v ? v->str : NULL, NULL};
            KDC_VEC_PUSH(*out, p);
        }
        return 1;
    }
    for (unsigned r = 0; r < init->nkids; r++) {
        pair_t p = {row_cell(init->kids[r], &kc), row_cell(init->kids[r], &vc), NULL};
        if (p.key) /* {NULL, NULL} end markers have no key */
            KDC_VEC_PUSH(*out, p);
    }
    return 1;
}

/* ---------- variadic name/value pairs ---------- */

typedef struct va_find {
    const char *usr;
    int from_va, other;
} va_find_t;

static int is_va_list(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->type &&
           (strstr(e->type, "va_list") || strstr(e->type, "__va_list_tag"));
}

static int find_va_assign(const kdc_expr_t *e, void *arg) {
    va_find_t *v = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_REF && l->usr == v->usr) {
            if (is_va_list(e->kids[1]))
                v->from_va = 1;
            else
                v->other = 1;
        }
    }
    return 0;
}

static int from_varargs(const kdc_func_t *f, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!f || !e || e->kind != KDC_E_REF || e->ref != KDC_REF_LOCAL || !e->usr)
        return 0;
    va_find_t v = {e->usr, 0, 0};
    kdc_func_walk_exprs(f, find_va_assign, &v);
    return v.from_va && !v.other;
}

/* ---------- scanning the configuration calls ---------- */

/* May e (in f, any instance) denote a configuration? */
static int may_be_conf(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    int found = 0;
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    for (size_t i = 0; i < kdc_pts_nobjs(fx->pts) && !found; i++)
        found = kdc_bits_get(&b, i) && kdc_pts_obj(fx->pts, i)->kind == KDC_OBJ_CONF;
    kdc_bits_free(&b);
    return found;
}


typedef struct apply_ctx {
    kdc_setting_t setting;
    call_kind_t kind;
    const kdc_func_t *vf;  /* the registered callback's function and instance (CALL_DR) */
    const char *vctx;
    const kdc_expr_t *value;
    kdc_bits_t *tconfs;    /* CALL_LINK and C++ default_topic_conf */
} apply_ctx_t;

static void add_bit(kdc_facts_t *fx, size_t i, void *arg) {
    (void)fx;
    kdc_bits_set((kdc_bits_t *)arg, i);
}

static void collect_dr_callback(kdc_facts_t *fx, size_t obj, void *arg) {
    const kdc_func_t *cb = kdc_program_find_func(fx->p, kdc_pts_obj(fx->pts, obj)->str);
    if (!cb)
        return;
    kdc__add_dr_func(fx, cb);
    for (size_t i = 0; i < fx->dr_callbacks.n; i++)
        if (fx->dr_callbacks.v[i] == cb)
            return;
    KDC_VEC_PUSH(fx->dr_callbacks, cb);
    KDC_VEC_PUSH(fx->dr_sites, (const kdc_expr_t *)arg);
}

static void apply(kdc_facts_t *fx, size_t conf, void *arg) {
    apply_ctx_t *a = arg;
    objinfo_t *oi = &fx->info[conf];
    switch (a->kind) {
    case CALL_REBALANCE:
        oi->rebalance = 1;
        return;
    case CALL_DR:
        if (!oi->dr)
            oi->dr_loc = a->setting.loc;
        oi->dr = 1;
        if (a->vf)
            kdc__for_each_obj_ctx(fx, a->vf, a->vctx, a->value, KDC_OBJ_FUNC, add_bit, &oi->drcbs,
                                  NULL);
        else
            oi->dr_unseen = 1; /* C++ DeliveryReportCb objects, event queues */
        return;
    case CALL_LINK:
        kdc_bits_or(&oi->linked, a->tconfs);
        return;
    case CALL_ESCAPE:
        if (!oi->escaped)
            oi->escaped_loc = a->setting.loc;
        oi->escaped = 1;
        break;
    default:
        break;
    }
    KDC_VEC_PUSH(oi->settings, a->setting);
}

/* The literals a string expression may hold (in f's instance ctx), at most
 * max; *outside: it may also hold a value from outside (getenv, a buffer, a
 * parameter nobody passes). Returns how many, or max + 1 when more. */
static size_t string_values(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                            const kdc_expr_t *e, const char **out, size_t max, int *outside) {
    *outside = 0;
    const kdc_expr_t *s = kdc__literal(e);
    if (s) {
        out[0] = s->str;
        return 1;
    }
    if (!e) {
        *outside = 1;
        return 0;
    }
    kdc_bits_t b;
    kdc_pts_expr_ctx(fx->pts, f, ctx, e, &b);
    size_t count = 0, n = kdc_pts_nobjs(fx->pts);
    *outside = kdc_bits_empty(&b);
    for (size_t i = kdc_bits_next(&b, 0); i < n; i = kdc_bits_next(&b, i + 1)) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind != KDC_OBJ_STRING)
            *outside = 1;
        else if (count < max)
            out[count++] = o->str;
        else
            count = max + 1;
    }
    kdc_bits_free(&b);
    return count;
}

/* The one literal a string expression holds, or NULL; *fallback: the one
 * literal it holds besides values from outside. */
static const char *string_value(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                                const kdc_expr_t *e, const char **fallback) {
    const char *v[2];
    int outside;
    size_t n = string_values(fx, f, ctx, e, v, 2, &outside);
    *fallback = n == 1 && outside ? v[0] : NULL;
    return n == 1 && !outside ? v[0] : NULL;
}

/* The name/value pairs the call sets in this context. Returns 1 when they
 * come from a table or variadic arguments (a loop over them), 2 when they are
 * one of several literals (each holds on some paths only). */
static int pairs_of(kdc_facts_t *fx, const set_call_t *sc, const frame_t *chain, int n,
                    resolved_t key, resolved_t value, pair_vec_t *pairs) {
    if (table_pairs(fx, chain, n, key, value, pairs))
        return 1;
    if (key.f == value.f && key.level == value.level && key.level < n &&
        from_varargs(key.f, key.e) && from_varargs(value.f, value.e)) {
        /* helper(.., "name", "value", .., NULL): the caller's variadic arguments */
        const kdc_expr_t *site = chain[key.level].call;
        const kdc_func_t *g = chain[key.level].f;
        const char *gctx = instance_at(fx, sc, chain, n, key.level + 1);
        for (unsigned i = key.f->nparams; i + 1 < site->nkids; i += 2) {
            if (kdc_expr_is_null(site->kids[i]))
                break;
            const char *fb = NULL;
            pair_t p = {string_value(fx, g, gctx, site->kids[i], &fb), NULL, NULL};
            p.value = string_value(fx, g, gctx, site->kids[i + 1], &p.fallback);
            KDC_VEC_PUSH(*pairs, p);
        }
        return 1;
    }
    pair_t p = {NULL, NULL, NULL};
    const char *fb, *vals[4];
    int outside;
    if (key.e)
        p.key = string_value(fx, key.f, instance_at(fx, sc, chain, n, key.level), key.e, &fb);
    size_t nv = string_values(fx, value.f, instance_at(fx, sc, chain, n, value.level), value.e,
                              vals, 4, &outside);
    if (nv >= 2 && nv <= 4 && !outside) { /* one of several literals (`ssl ? "all" : "1"`) */
        for (size_t i = 0; i < nv; i++) {
            p.value = vals[i];
            KDC_VEC_PUSH(*pairs, p);
        }
        return 2;
    }
    if (nv == 1)
        *(outside ? &p.fallback : &p.value) = vals[0];
    KDC_VEC_PUSH(*pairs, p);
    return 0;
}

/* One configuration call in one context of call sites. */
static void apply_in_context(kdc_facts_t *fx, const frame_t *chain, int n, void *arg) {
    const set_call_t *sc = arg;
    int gopen = 0, gused = 0;
    if (ruled_out_by_guards(fx, sc, chain, n, &gopen, &gused))
        return; /* `if (cb) set_cb(conf, cb)` for a caller passing NULL */
    resolved_t conf = resolve(fx, sc, chain, n, sc->conf);
    resolved_t key = resolve(fx, sc, chain, n, sc->key);
    resolved_t value = resolve(fx, sc, chain, n, sc->value);
    /* the factory instance the configuration lives in, as the chain selects it */
    const char *cctx = instance_at(fx, sc, chain, n, conf.level);
    const kdc_expr_t *conf_call = call_at(sc, chain, conf.level);
    int used = key.used > value.used ? key.used : value.used;
    if (used > n)
        used = n;

    apply_ctx_t a = {.kind = sc->kind};
    a.setting.func = used ? chain[used - 1].f : sc->f;
    a.setting.loc = used ? chain[used - 1].call->loc : sc->call->loc;
    a.setting.escape = sc->kind == CALL_ESCAPE;
    a.setting.from_outside = is_param(value.e) && !fx->callers[value.f->index].n;
    a.setting.npath = (unsigned)(n + 1 < KDC_SETTING_PATH ? n + 1 : KDC_SETTING_PATH);
    a.setting.path = kdc_alloc(fx->p, a.setting.npath * sizeof *a.setting.path);
    a.setting.pathf = kdc_alloc(fx->p, a.setting.npath * sizeof *a.setting.pathf);
    for (unsigned i = 0; i < a.setting.npath; i++) {
        a.setting.path[i] = call_at(sc, chain, (int)i);
        a.setting.pathf[i] = func_at(sc, chain, (int)i);
    }

    if (sc->kind != CALL_SET && sc->kind != CALL_ESCAPE) {
        /* a registration: of nothing when the caller passes NULL (`if (cb) set_cb(conf, cb)`) */
        if (value.e && kdc_expr_is_null(value.e))
            return;
        if (sc->kind == CALL_EVENTS) {
            const kdc_expr_t *v = kdc_expr_strip(value.e);
            if (v && v->has_ival && (v->ival & 0x10)) { /* RD_KAFKA_EVENT_REBALANCE */
                apply_ctx_t r = a;
                r.kind = CALL_REBALANCE;
                kdc__for_each_obj_at(fx, conf.f, cctx, conf_call, conf.e, KDC_OBJ_CONF, apply, &r,
                                     NULL);
            }
            if (v && v->has_ival && !(v->ival & 0x1))
                return; /* RD_KAFKA_EVENT_DR not among the flags */
            a.kind = CALL_DR;
        }
        if (a.kind == CALL_DR && sc->value && sc->kind == CALL_DR) {
            a.vf = value.f;
            a.vctx = instance_at(fx, sc, chain, n, value.level);
            a.value = value.e;
            kdc__for_each_obj_ctx(fx, a.vf, a.vctx, a.value, KDC_OBJ_FUNC, collect_dr_callback,
                                  (void *)sc->call, NULL);
        }
        kdc_bits_t tconfs;
        kdc_bits_init(&tconfs, kdc_pts_nobjs(fx->pts));
        if (a.kind == CALL_LINK) {
            kdc__for_each_obj_ctx(fx, value.f, instance_at(fx, sc, chain, n, value.level), value.e,
                                  KDC_OBJ_CONF, add_bit, &tconfs, NULL);
            a.tconfs = &tconfs;
        }
        kdc__for_each_obj_at(fx, conf.f, cctx, conf_call, conf.e, KDC_OBJ_CONF, apply, &a, NULL);
        kdc_bits_free(&tconfs);
        return;
    }

    if (sc->kind == CALL_SET && value.e && kdc_expr_is_null(value.e))
        return; /* a property reset, or set by a caller passing NULL (`if (v) set(conf, k, v)`) */
    pair_vec_t pairs = {0};
    int from = sc->kind == CALL_SET ? pairs_of(fx, sc, chain, n, key, value, &pairs) : 0;
    /* made on every path: at each level out to the one deciding the value; the
     * loop over a table's rows (or a helper's variadic pairs) on every row. Not
     * above the level where the configuration is created: a call there that
     * leads to the creation makes the setting with it (`if (x)
     * run(make_consumer("g", "false"))`). */
    for (int l = 0; l <= used && l <= conf.level; l++) {
        const kdc_expr_t *cf = l == conf.level ? (l ? conf.e : sc->conf) : NULL;
        const frame_t *site = l < n ? &chain[l] : NULL; /* the call of the function at level l */
        if (from == 1 && l == key.level)
            a.setting.conditional |=
                !every_pass(fx, func_at(sc, chain, l), call_at(sc, chain, l), cf, site);
        else
            a.setting.conditional |=
                !on_every_path(fx, func_at(sc, chain, l), call_at(sc, chain, l), cf, site);
    }
    if (from == 2)
        a.setting.conditional = 1; /* one of several values */
    if (sc->kind == CALL_ESCAPE) {
        pair_t none = {NULL, NULL, NULL};
        KDC_VEC_PUSH(pairs, none);
    }
    for (size_t i = 0; i < pairs.n; i++) {
        a.setting.key = pairs.v[i].key;
        a.setting.value = pairs.v[i].value;
        a.setting.fallback = pairs.v[i].fallback;
        a.kind = sc->kind;
        if (sc->kind == CALL_SET && sc->call->is_method && a.setting.key) {
            /* C++ conf->set("dr_cb", &cb) and friends: registrations, not properties */
            if (!strcmp(a.setting.key, "dr_cb"))
                a.kind = CALL_DR;
            else if (!strcmp(a.setting.key, "rebalance_cb"))
                a.kind = CALL_REBALANCE;
            else if (!strcmp(a.setting.key, "default_topic_conf"))
                a.kind = CALL_LINK;
        }
        if (a.kind == CALL_DR && value.e && kdc_expr_is_null(value.e))
            continue;
        kdc_bits_t tconfs;
        kdc_bits_init(&tconfs, kdc_pts_nobjs(fx->pts));
        if (a.kind == CALL_LINK) {
            kdc__for_each_obj_ctx(fx, value.f, instance_at(fx, sc, chain, n, value.level), value.e,
                                  KDC_OBJ_CONF, add_bit, &tconfs, NULL);
            a.tconfs = &tconfs;
        }
        kdc__for_each_obj_at(fx, conf.f, cctx, conf_call, conf.e, KDC_OBJ_CONF, apply, &a, NULL);
        kdc_bits_free(&tconfs);
    }
    free(pairs.v);
}

static void scan_call(kdc_facts_t *fx, const set_call_t *sc) {
    frame_t chain[KDC_CONTEXT_DEPTH];
    int budget = KDC_MAX_CONTEXTS;
    each_context(fx, sc, chain, 0, &budget, apply_in_context, (void *)sc);
}

static void scan_config_calls(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            set_call_t sc = {f, call, CALL_SET, NULL, NULL, NULL};
            if (api && (api->roles & KDC_API_CONF_SET)) {
                sc.key = kdc_api_arg(call, api->key);
                sc.value = kdc_api_arg(call, api->value);
            } else if (api && (api->roles & KDC_API_DR_REGISTER)) {
                sc.kind = CALL_DR;
                sc.value = kdc_api_arg(call, api->value);
            } else if (api && (api->roles & KDC_API_EVENTS_SET)) {
                sc.kind = CALL_EVENTS;
                sc.value = kdc_api_arg(call, api->value);
            } else if (api && (api->roles & KDC_API_REBALANCE_CB)) {
                sc.kind = CALL_REBALANCE;
                sc.value = kdc_api_arg(call, api->value);
            } else if (api && (api->roles & KDC_API_CONF_LINK)) {
                sc.kind = CALL_LINK;
                sc.value = kdc_api_arg(call, api->value);
            } else if (!api && !call->callee_system && !kdc_api_is_librdkafka(call) &&
                       !kdc__callee_func(fx, f, call) && !call->callee_expr) {
                /* Handed to code we cannot see: it may register or set anything. */
                sc.kind = CALL_ESCAPE;
                for (unsigned k = 0; k < call->nkids; k++) {
                    sc.conf = call->kids[k];
                    if (may_be_conf(fx, f, sc.conf))
                        scan_call(fx, &sc);
                }
                continue;
            } else {
                continue;
            }
            sc.conf = kdc_api_arg(call, api->conf);
            scan_call(fx, &sc);
        }
    }
}

/* ---------- clients and topics ---------- */

static void describe_objects(kdc_facts_t *fx) {
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        objinfo_t *oi = &fx->info[i];
        kdc_bits_init(&oi->confs, n);
        kdc_bits_init(&oi->clients, n);
        kdc_bits_init(&oi->linked, n);
        kdc_bits_init(&oi->tconfs, n);
        kdc_bits_init(&oi->drcbs, n);
        kdc_bits_init(&oi->parents, n);
        oi->type = -1;
        if (o->kind == KDC_OBJ_CONF) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            if (api && (api->roles & KDC_API_CONF_DUP)) /* a copy: of what it copies there */
                kdc__for_each_obj_at(fx, o->func, o->ctx, o->site, kdc_api_arg(o->site, api->conf),
                                     KDC_OBJ_CONF, add_bit, &oi->parents, NULL);
        } else if (o->kind == KDC_OBJ_CLIENT) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            if (api->client_type == KDC_CLIENT_PRODUCER_FIXED)
                oi->type = 0;
            else if (api->client_type == KDC_CLIENT_CONSUMER_FIXED)
                oi->type = 1;
            else {
                /* a constant, or the one a factory's caller passes for it */
                const kdc_expr_t *t = kdc_expr_strip(kdc_api_arg(o->site, api->client_type));
                const char *ctx = o->ctx;
                const kdc_func_t *tf = o->func;
                for (int d = 0; d < 8 && t && t->kind == KDC_E_REF && t->ref == KDC_REF_PARAM &&
                                t->param_index >= 0 && ctx;
                     d++)
                    t = kdc_expr_strip(
                        kdc_pts_instance_arg(fx->pts, ctx, (unsigned)t->param_index, &tf, &ctx));
                if (t && t->has_ival && (t->ival == 0 || t->ival == 1))
                    oi->type = (int)t->ival;
            }
            const kdc_expr_t *conf = kdc_api_arg(o->site, api->conf);
            if (!conf || kdc_expr_is_null(conf)) {
                oi->null_conf = 1;
            } else {
                int unknown = 0;
                kdc__for_each_obj_at(fx, o->func, o->ctx, o->site, conf, KDC_OBJ_CONF, add_bit,
                                     &oi->confs, &unknown);
                oi->unknown_conf = (unsigned)unknown;
            }
        } else if (o->kind == KDC_OBJ_TOPIC) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            int unknown = 0;
            kdc__for_each_obj_at(fx, o->func, o->ctx, o->site, kdc_api_arg(o->site, api->handle),
                                 KDC_OBJ_CLIENT, add_bit, &oi->clients, &unknown);
            oi->unknown_client = (unsigned)unknown;
            oi->name_expr = kdc_api_arg(o->site, api->topic);
            oi->name_func = o->func;
            const kdc_expr_t *tconf = kdc_api_arg(o->site, api->conf);
            if (tconf && !kdc_expr_is_null(tconf))
                kdc__for_each_obj_at(fx, o->func, o->ctx, o->site, tconf, KDC_OBJ_CONF, add_bit,
                                     &oi->tconfs, NULL);
        }
    }
}

typedef struct idbuf {
    char *buf;
    size_t size, n; /* n < size: what is written, always terminated */
} idbuf_t;

static void id_put(idbuf_t *b, const char *s, size_t len) {
    if (len > b->size - 1 - b->n)
        len = b->size - 1 - b->n;
    memcpy(b->buf + b->n, s, len);
    b->n += len;
    b->buf[b->n] = 0;
}

static void id_str(idbuf_t *b, const char *s) {
    s = s ? s : "\x01";
    id_put(b, s, strlen(s));
}

/* "|0x" and the pointer in lowercase hex, as glibc's %p writes it */
static void id_ptr(idbuf_t *b, const void *p) {
    char hex[2 + 2 * sizeof(uintptr_t) + 1], *end = hex + sizeof hex, *at = end;
    uintptr_t v = (uintptr_t)p;
    do
        *--at = "0123456789abcdef"[v & 15];
    while (v >>= 4);
    *--at = 'x';
    *--at = '0';
    *--at = '|';
    id_put(b, at, (size_t)(end - at));
}

/* The same setting reaching a copy from several of the configurations it may
 * copy: the same chain of calls, property, value and guards. Its key, value,
 * fallback, flags and chain of calls, cut at size - 1 bytes; written by hand,
 * as it is built for every inherited setting of every copy (snprintf was
 * 1.4 % of the analysis of librdkafka's test suite). */
static const char *setting_id(const kdc_setting_t *st, char *buf, size_t size) {
    idbuf_t b = {buf, size, 0};
    char flags[] = {'|', (char)('0' + st->conditional), (char)('0' + st->escape),
                    (char)('0' + st->from_outside)};
    buf[0] = 0;
    id_str(&b, st->key);
    id_put(&b, "|", 1);
    id_str(&b, st->value);
    id_put(&b, "|", 1);
    id_str(&b, st->fallback);
    id_put(&b, flags, sizeof flags);
    for (unsigned i = 0; i < st->npath; i++)
        id_ptr(&b, st->path[i]);
    return buf;
}

/* A copy (rd_kafka_conf_dup) starts with what the configuration it copies
 * sets and registers: its settings come first (`inherited`), so a setting of
 * the copy overrides them. A setting inherited through several of the
 * configurations it may copy is kept once. */
static void inherit(kdc_facts_t *fx, size_t conf) {
    objinfo_t *oi = &fx->info[conf];
    if (oi->copied)
        return;
    oi->copied = 1;
    setting_vec_t own = oi->settings;
    oi->settings = (setting_vec_t){0};
    kdc_strset_t seen;
    kdc_strset_init(&seen);
    char id[1024];
    for (size_t p = kdc_bits_next(&oi->parents, 0); p < oi->parents.nwords * 64;
         p = kdc_bits_next(&oi->parents, p + 1)) {
        if (!kdc_bits_get(&oi->parents, p) || p == conf)
            continue;
        inherit(fx, p);
        const objinfo_t *pi = &fx->info[p];
        if (pi->copied == 1)
            continue; /* a cycle of copies */
        for (size_t i = 0; i < pi->settings.n; i++) {
            kdc_setting_t st = pi->settings.v[i];
            size_t before = seen.n;
            setting_id(&st, id, sizeof id);
            kdc_strset_add(&seen, id, strlen(id));
            if (seen.n == before)
                continue; /* kept once */
            st.inherited = 1;
            KDC_VEC_PUSH(oi->settings, st);
        }
        if (pi->dr && !oi->dr)
            oi->dr_loc = pi->dr_loc;
        if (pi->escaped && !oi->escaped)
            oi->escaped_loc = pi->escaped_loc;
        oi->dr |= pi->dr;
        oi->dr_unseen |= pi->dr_unseen;
        oi->escaped |= pi->escaped;
        oi->rebalance |= pi->rebalance;
        kdc_bits_or(&oi->drcbs, &pi->drcbs);
        kdc_bits_or(&oi->linked, &pi->linked);
    }
    kdc_strset_free(&seen);
    for (size_t i = 0; i < own.n; i++)
        KDC_VEC_PUSH(oi->settings, own.v[i]);
    free(own.v);
    /* Copies of copies hold most settings of a program (a test suite's base configuration,
     * duplicated by every test): no room is kept for more. */
    if (oi->settings.n && oi->settings.n < oi->settings.cap) {
        oi->settings.v = kdc_xrealloc(oi->settings.v, oi->settings.n * sizeof *oi->settings.v);
        oi->settings.cap = oi->settings.n;
    }
    oi->copied = 2;
}

static void inherit_copies(kdc_facts_t *fx) {
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++)
        if (kdc_pts_obj(fx->pts, i)->kind == KDC_OBJ_CONF)
            inherit(fx, i);
}

/* Client handles given to code outside the analysis (it may produce with them). */
static void mark_handed_out(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (kdc_api_lookup(call) || call->callee_system || kdc_api_is_librdkafka(call) ||
                kdc__callee_func(fx, f, call) || call->callee_expr)
                continue;
            for (unsigned k = 0; k < call->nkids; k++) {
                const kdc_expr_t *a = kdc_expr_strip(call->kids[k]);
                if (!a || (a->kind != KDC_E_REF && a->kind != KDC_E_MEMBER) || !a->type ||
                    !strchr(a->type, '*'))
                    continue;
                kdc_bits_t clients;
                int unknown = 0;
                kdc_facts_clients_of(fx, f, a, &clients, &unknown);
                for (size_t m = kdc_bits_next(&clients, 0); m < clients.nwords * 64;
                     m = kdc_bits_next(&clients, m + 1))
                    if (kdc_bits_get(&clients, m))
                        fx->info[m].handed_out = 1;
                kdc_bits_free(&clients);
            }
        }
    }
}

/* A send helper given both the producer and the topic (ship(rk, topic, ..)):
 * which producer sends to a dead-letter destination is decided per call of the
 * helper, pairing that call's producer with that call's topic. Returns 0 when the
 * produce is not of that form (or the helper has no callers). */
static int mark_per_call_site(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                              const kdc_api_t *api, const kdc_expr_t *handle) {
    const kdc_expr_t *h = kdc_expr_strip(handle);
    const kdc_expr_t *t = kdc_expr_strip(kdc_facts_produce_topic(call));
    const frame_vec_t *callers = &fx->callers[f->index];
    if (!h || !t || !is_param(h) || !is_param(t) || h->param_index < 0 || t->param_index < 0 ||
        !callers->n || api->handle == KDC_ARG_NONE)
        return 0;
    for (size_t i = 0; i < callers->n; i++) {
        const frame_t *fr = &callers->v[i];
        const kdc_expr_t *harg = kdc_call_arg(fr->call, (unsigned)h->param_index);
        const kdc_expr_t *targ = kdc_call_arg(fr->call, (unsigned)t->param_index);
        kdc_bits_t clients;
        int unknown = 0;
        kdc_facts_clients_of(fx, fr->f, harg, &clients, &unknown);
        int dlq = kdc__expr_names_dlq(fx, fr->f, targ);
        for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
             k = kdc_bits_next(&clients, k + 1))
            if (kdc_bits_get(&clients, k)) {
                fx->info[k].produces = 1;
                fx->info[k].produces_dlq |= (unsigned)dlq;
            }
        kdc_bits_free(&clients);
    }
    return 1;
}

static void mark_clients(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *handle, int dlq) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_facts_clients_of(fx, f, handle, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1))
        if (kdc_bits_get(&clients, k)) {
            fx->info[k].produces = 1;
            fx->info[k].produces_dlq |= (unsigned)dlq;
        }
    kdc_bits_free(&clients);
}

/* producev(ok ? out : dlq, RD_KAFKA_V_TOPIC(ok ? "out" : "out.dlq"), ..): the
 * producer and the topic are chosen by the same condition (one variable), so
 * each producer goes with its own branch's topic. */
static int mark_paired_choice(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                              const kdc_expr_t *handle) {
    const kdc_expr_t *h = kdc_expr_strip(handle);
    const kdc_expr_t *t = kdc_expr_strip(kdc_facts_produce_topic(call));
    if (!h || !t || h->kind != KDC_E_COND || t->kind != KDC_E_COND || h->nkids != 3 ||
        t->nkids != 3)
        return 0;
    const kdc_expr_t *hc = kdc_expr_strip(h->kids[0]), *tc = kdc_expr_strip(t->kids[0]);
    if (!hc || !tc || hc->kind != KDC_E_REF || tc->kind != KDC_E_REF || !hc->usr ||
        hc->usr != tc->usr)
        return 0;
    for (unsigned b = 1; b <= 2; b++)
        mark_clients(fx, f, h->kids[b], kdc__expr_names_dlq(fx, f, t->kids[b]));
    return 1;
}

/* Does e hold a value from outside the analysis (and nothing else)? A
 * handle from outside is none of the program's clients unless one is handed
 * out (handed_out). */
static int from_outside(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    int outside = kdc_bits_get(&b, 0);
    kdc_bits_free(&b);
    return outside;
}

/* Which clients produce, and to dead-letter destinations. */
static void mark_producers(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !(api->roles & KDC_API_PRODUCE))
                continue;
            const kdc_expr_t *handle = api->handle != KDC_ARG_NONE ? kdc_api_arg(call, api->handle)
                                                                   : kdc_api_arg(call, api->topic);
            if (mark_per_call_site(fx, f, call, api, handle) ||
                mark_paired_choice(fx, f, call, handle))
                continue;
            kdc_bits_t clients;
            int unknown = 0;
            kdc_facts_clients_of(fx, f, handle, &clients, &unknown);
            if (unknown && kdc_bits_empty(&clients) && !from_outside(fx, f, handle) &&
                !(handle && kdc_expr_is_null(handle)))
                fx->unknown_produce = 1; /* a handle that cannot be followed: any client */
            int dlq = kdc_facts_is_dlq_produce(fx, f, call);
            for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
                 k = kdc_bits_next(&clients, k + 1))
                if (kdc_bits_get(&clients, k)) {
                    fx->info[k].produces = 1;
                    fx->info[k].produces_dlq |= (unsigned)dlq;
                }
            kdc_bits_free(&clients);
        }
    }
}

void kdc__describe_clients(kdc_facts_t *fx) {
    size_t nobjs = kdc_pts_nobjs(fx->pts);
    fx->info = calloc(nobjs ? nobjs : 1, sizeof *fx->info);
    if (!fx->info)
        kdc_oom();
    kdc_strmap_init(&fx->call_guards);
    describe_objects(fx);
    scan_config_calls(fx);
    inherit_copies(fx);
    kdc__settings_mark_overridden(fx);
    mark_producers(fx);
    mark_handed_out(fx);
}

void kdc__free_clients(kdc_facts_t *fx) {
    for (unsigned q = 0; q < KDC_FACTS_CLIENT_MEMOS; q++)
        free(fx->client_memo[q]);
    if (fx->clients_memo) {
        for (size_t i = 0; i < fx->clients_memo->cap; i++)
            free(fx->clients_memo->slots[i].idx);
        free(fx->clients_memo->slots);
        free(fx->clients_memo);
        fx->clients_memo = NULL;
    }
    if (fx->props.slots)
        kdc_strset_free(&fx->props);
    for (size_t i = 0; fx->call_guards.keys && i < fx->call_guards.cap; i++)
        if (fx->call_guards.keys[i]) {
            guard_vec_t *v = fx->call_guards.vals[i];
            free(v->v);
            free(v);
        }
    kdc_strmap_free(&fx->call_guards);
    size_t n = fx->pts ? kdc_pts_nobjs(fx->pts) : 0;
    for (size_t i = 0; fx->info && i < n; i++) {
        free(fx->info[i].settings.v);
        free(fx->info[i].by_prop);
        kdc_bits_free(&fx->info[i].confs);
        kdc_bits_free(&fx->info[i].clients);
        kdc_bits_free(&fx->info[i].linked);
        kdc_bits_free(&fx->info[i].tconfs);
        kdc_bits_free(&fx->info[i].drcbs);
        kdc_bits_free(&fx->info[i].parents);
    }
    free(fx->info);
    fx->info = NULL;
}

/* ---------- queries ---------- */

void kdc_facts_clients_of(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                          kdc_bits_t *clients, int *unknown) {
    kdc_facts_clients_at(fx, f, NULL, e, clients, unknown);
}

/* ---------- handle comparisons on the way to a call ---------- */

/* A callback registered for several clients, or a helper called with several,
 * may act for only some of them: `if (rk == c1) return; rd_kafka_commit(rk,
 * ..)` commits for every client but c1. A call on a handle parameter that f
 * never changes is on a client only when the call is reached from f's entry
 * with the comparisons of that parameter decided for that client. */

typedef struct guard_walk {
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    int param;  /* the handle parameter */
    size_t obj; /* the client it is taken to denote */
    int target; /* the call's node */
    int reached;
} guard_walk_t;

static int is_handle_param(const kdc_expr_t *e, int param) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->ref == KDC_REF_PARAM && e->param_index == param;
}

/* The node of `call` in f's graph, or -1 (unreachable, or not one of f's calls). */
static int node_in(const kdc_func_t *f, const kdc_expr_t *call) {
    return f && call && call->call_id >= 0 && (unsigned)call->call_id < f->ncalls &&
                   f->calls[call->call_id] == call
               ? kdc_cfg_node_of_call(f->cfg, call)
               : -1;
}

/* Does the call (in f) run at most once, as far as the program shows? */
static int call_runs_once(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    return node_in(f, call) >= 0 && !kdc_call_in_loop(f, call) &&
           !kdc_facts_func_runs_repeatedly(fx, f, 2);
}

/* Is the client object created at most once in a run (its creating call, and
 * each call of the factory chain that selects its instance, runs once)? */
static int single_instance(const kdc_facts_t *fx, size_t obj) {
    const kdc_obj_t *o = kdc_pts_obj(fx->pts, obj);
    const kdc_func_t *f = o->func;
    const kdc_expr_t *call = o->site;
    const char *ctx = o->ctx;
    for (int d = 0; d < 8 && ctx && f; d++) {
        if (!call || kdc_call_in_loop(f, call)) /* a factory runs once per call of it */
            return 0;
        call = kdc_pts_instance_call(fx->pts, ctx, &f, &ctx);
    }
    return f && !ctx && call_runs_once(fx, f, call);
}

/* What e (in f, compared with the handle) says of the handle denoting w->obj:
 * 0 it cannot be equal (e holds known clients, none of them obj), 1 it is
 * equal (e holds obj only, and obj has one instance), -1 unknown. */
static int compare_clients(const guard_walk_t *w, const kdc_expr_t *e) {
    kdc_bits_t b;
    kdc_pts_expr(w->fx->pts, w->f, e, &b);
    int known = !kdc_bits_empty(&b) && !kdc_bits_get(&b, 0), n = 0;
    for (size_t i = kdc_bits_next(&b, 0); known && i < b.nwords * 64; i = kdc_bits_next(&b, i + 1))
        if (kdc_bits_get(&b, i)) {
            known = kdc_pts_obj(w->fx->pts, i)->kind == KDC_OBJ_CLIENT;
            n++;
        }
    int r = -1;
    if (known && !kdc_bits_get(&b, w->obj))
        r = 0;
    else if (known && n == 1 && single_instance(w->fx, w->obj))
        r = 1;
    kdc_bits_free(&b);
    return r;
}

/* 1 or 0 when the condition is decided by the parameter denoting w->obj; -1 when not. */
static int handle_cond(const guard_walk_t *w, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return -1;
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1) {
        int v = handle_cond(w, e->kids[0]);
        return v < 0 ? -1 : !v;
    }
    if (e->kind != KDC_E_BINARY || e->nkids != 2)
        return -1;
    if (e->op == KDC_OP_LAND || e->op == KDC_OP_LOR) {
        int a = handle_cond(w, e->kids[0]), b = handle_cond(w, e->kids[1]);
        int dominant = e->op == KDC_OP_LOR; /* 1 decides ||, 0 decides && */
        if (a == dominant || b == dominant)
            return dominant;
        return a >= 0 && b >= 0 ? !dominant : -1;
    }
    if (e->op != KDC_OP_EQ && e->op != KDC_OP_NE)
        return -1;
    const kdc_expr_t *other = is_handle_param(e->kids[0], w->param)   ? e->kids[1]
                              : is_handle_param(e->kids[1], w->param) ? e->kids[0]
                                                                      : NULL;
    int eq = other ? compare_clients(w, other) : -1;
    return eq < 0 ? -1 : eq == (e->op == KDC_OP_EQ);
}

static int guard_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    guard_walk_t *w = arg;
    if (w->reached || n == g->exit)
        return -1;
    if (n == w->target) {
        w->reached = 1;
        return -1;
    }
    return st;
}

static int guard_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND || nd->nsucc != 2)
        return 1;
    int v = handle_cond(arg, nd->expr);
    return v < 0 || i == (unsigned)(v ? 0 : 1);
}

static int mentions_param(const kdc_expr_t *e, void *arg) {
    const int *param = arg;
    return e->kind == KDC_E_BINARY && (e->op == KDC_OP_EQ || e->op == KDC_OP_NE) && e->nkids == 2 &&
           (is_handle_param(e->kids[0], *param) || is_handle_param(e->kids[1], *param));
}

/* Drops the clients for which the call is not reached (see above). */
static void prune_by_handle_guards(const kdc_facts_t *fx, const kdc_func_t *f,
                                   const kdc_expr_t *call, const kdc_expr_t *e,
                                   kdc_bits_t *clients) {
    e = kdc_expr_strip(e);
    int target = node_in(f, call);
    if (!e || e->kind != KDC_E_REF || e->ref != KDC_REF_PARAM || target < 0)
        return;
    const kdc_cfg_t *g = f->cfg;
    int param = e->param_index, compared = 0;
    for (unsigned n = 0; n < g->n && !compared; n++)
        compared = g->nodes[n].kind == KDC_N_COND && g->nodes[n].expr &&
                   kdc_expr_walk(g->nodes[n].expr, mentions_param, &param);
    if (!compared || !kdc__param_fixed(fx, f, param))
        return;
    kdc_bits_t kept;
    kdc_bits_init(&kept, clients->nwords * 64);
    for (size_t k = kdc_bits_next(clients, 0); k < clients->nwords * 64;
         k = kdc_bits_next(clients, k + 1)) {
        if (!kdc_bits_get(clients, k))
            continue;
        guard_walk_t w = {fx, f, param, k, target, 0};
        kdc_search_t s = {guard_visit, guard_edge, &w, 1};
        kdc_cfg_search(g, g->entry, 0, &s);
        if (w.reached)
            kdc_bits_set(&kept, k);
    }
    if (!kdc_bits_empty(&kept)) { /* reached for none: keep what the handle may hold */
        kdc_bits_t all = *clients;
        *clients = kept;
        kept = all;
    }
    kdc_bits_free(&kept);
}

static void clients_at(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                       const kdc_expr_t *e, kdc_bits_t *clients, int *unknown) {
    size_t n = kdc_pts_nobjs(fx->pts);
    kdc_bits_init(clients, n);
    *unknown = 0;
    if (!e) {
        *unknown = 1;
        return;
    }
    kdc_bits_t b;
    kdc_pts_expr_at(fx->pts, f, NULL, call, e, &b);
    size_t hits = 0;
    for (size_t i = kdc_bits_next(&b, 0); i < n; i = kdc_bits_next(&b, i + 1)) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_CLIENT) {
            kdc_bits_set(clients, i);
            hits++;
        } else if (o->kind == KDC_OBJ_TOPIC) {
            kdc_bits_or(clients, &fx->info[i].clients);
            if (fx->info[i].unknown_client)
                *unknown = 1;
            hits++;
        } else if (o->kind == KDC_OBJ_UNKNOWN) {
            *unknown = 1;
        }
    }
    if (!hits || kdc_bits_empty(clients))
        *unknown = 1;
    else if (!*unknown)
        prune_by_handle_guards(fx, f, call, e, clients);
    kdc_bits_free(&b);
}

static size_t answer_slot(const struct clients_memo *m, const void *f, const void *call,
                          const void *e) {
    const void *key[3] = {f, call, e};
    size_t mask = m->cap - 1;
    size_t k = (size_t)XXH3_64bits(key, sizeof key) & mask;
    while (m->slots[k].e && !(m->slots[k].f == f && m->slots[k].call == call && m->slots[k].e == e))
        k = (k + 1) & mask;
    return k;
}

static void memo_grow(struct clients_memo *m) {
    struct clients_memo bigger = {calloc(m->cap ? 2 * m->cap : 1024, sizeof *m->slots),
                                  m->cap ? 2 * m->cap : 1024, m->n};
    if (!bigger.slots)
        kdc_oom();
    for (size_t i = 0; i < m->cap; i++)
        if (m->slots[i].e)
            bigger.slots[answer_slot(&bigger, m->slots[i].f, m->slots[i].call, m->slots[i].e)] =
                m->slots[i];
    free(m->slots);
    *m = bigger;
}

void kdc_facts_clients_at(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_expr_t *e, kdc_bits_t *clients, int *unknown) {
    if (!fx->complete || !e) {
        clients_at(fx, f, call, e, clients, unknown);
        return;
    }
    kdc_facts_t *w = (kdc_facts_t *)fx; /* a cache of answers, not a change of the facts */
    if (!w->clients_memo && !(w->clients_memo = calloc(1, sizeof *w->clients_memo)))
        kdc_oom();
    struct clients_memo *m = w->clients_memo;
    if (m->cap) {
        const clients_answer_t *a = &m->slots[answer_slot(m, f, call, e)];
        if (a->e) {
            kdc_bits_init(clients, kdc_pts_nobjs(fx->pts));
            for (uint32_t i = 0; i < a->n; i++)
                kdc_bits_set(clients, a->idx[i]);
            *unknown = a->unknown;
            return;
        }
    }
    clients_at(fx, f, call, e, clients, unknown); /* may ask (and add) answers itself */
    if (2 * (m->n + 1) > m->cap)
        memo_grow(m);
    clients_answer_t *a = &m->slots[answer_slot(m, f, call, e)];
    a->f = f;
    a->call = call;
    a->e = e;
    a->unknown = *unknown;
    for (size_t k = kdc_bits_next(clients, 0); clients->w && k < clients->nwords * 64;
         k = kdc_bits_next(clients, k + 1))
        if (kdc_bits_get(clients, k)) {
            if (!(a->n & (a->n - 1))) { /* 0, 1, 2, 4, ...: full */
                uint32_t *v = realloc(a->idx, (a->n ? 2 * a->n : 1) * sizeof *v);
                if (!v)
                    kdc_oom();
                a->idx = v;
            }
            a->idx[a->n++] = (uint32_t)k;
        }
    m->n++;
}

int kdc_facts_client_memo(const kdc_facts_t *fx, unsigned q, size_t client) {
    return q < KDC_FACTS_CLIENT_MEMOS && fx->client_memo[q] ? fx->client_memo[q][client] - 1 : -1;
}

void kdc_facts_client_memo_set(const kdc_facts_t *fx, unsigned q, size_t client, int yes) {
    if (q >= KDC_FACTS_CLIENT_MEMOS)
        return;
    kdc_facts_t *w = (kdc_facts_t *)fx; /* a cache of answers, not a change of the facts */
    size_t n = kdc_pts_nobjs(fx->pts);
    if (!w->client_memo[q] && !(w->client_memo[q] = calloc(n ? n : 1, 1)))
        kdc_oom();
    w->client_memo[q][client] = (unsigned char)(yes ? 2 : 1);
}

int kdc_facts_client_type(const kdc_facts_t *fx, size_t client) { return fx->info[client].type; }

const kdc_loc_t *kdc_facts_client_loc(const kdc_facts_t *fx, size_t client) {
    const kdc_obj_t *o = kdc_pts_obj(fx->pts, client);
    return o->via ? &o->via->loc : &o->site->loc;
}

int kdc_facts_client_produces(const kdc_facts_t *fx, size_t client, int *dlq) {
    if (dlq)
        *dlq = fx->info[client].produces_dlq;
    return fx->info[client].produces;
}

int kdc_facts_dr_callback_reachable(const kdc_facts_t *fx, const kdc_func_t *cb) {
    if (cb->class_usr || fx->unknown_produce)
        return 1;
    size_t n = kdc_pts_nobjs(fx->pts), fobj = n;
    for (size_t i = 0; i < n && fobj == n; i++) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_FUNC && o->str == cb->id)
            fobj = i;
    }
    int registered = 0;
    for (size_t c = 0; fobj < n && c < n; c++) {
        const objinfo_t *ci = &fx->info[c];
        if (kdc_pts_obj(fx->pts, c)->kind != KDC_OBJ_CONF || !kdc_bits_get(&ci->drcbs, fobj))
            continue;
        registered = 1;
        if (ci->escaped)
            return 1;
        for (size_t k = 0; k < n; k++) {
            const objinfo_t *ki = &fx->info[k];
            if (kdc_pts_obj(fx->pts, k)->kind == KDC_OBJ_CLIENT && kdc_bits_get(&ki->confs, c) &&
                (ki->produces || ki->handed_out || ki->type != 0))
                return 1;
        }
    }
    return !registered;
}

/* The client's configurations and, one level down, their default topic configurations. */
static void client_confs(const kdc_facts_t *fx, size_t client, kdc_bits_t *out) {
    kdc_bits_init(out, kdc_pts_nobjs(fx->pts));
    kdc_bits_or(out, &fx->info[client].confs);
    const kdc_bits_t *confs = &fx->info[client].confs;
    for (size_t i = kdc_bits_next(confs, 0); i < confs->nwords * 64;
         i = kdc_bits_next(confs, i + 1))
        kdc_bits_or(out, &fx->info[i].linked);
}

kdc_tri_t kdc_facts_client_has_dr(const kdc_facts_t *fx, size_t client) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf)
        return KDC_TRI_UNKNOWN;
    kdc_tri_t r = KDC_TRI_NO;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = kdc_bits_next(&ci->confs, 0); i < n; i = kdc_bits_next(&ci->confs, i + 1)) {
        if (fx->info[i].dr)
            return KDC_TRI_YES;
        if (fx->info[i].escaped)
            r = KDC_TRI_UNKNOWN;
    }
    return r;
}

kdc_tri_t kdc_facts_client_has_rebalance_cb(const kdc_facts_t *fx, size_t client) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf)
        return KDC_TRI_UNKNOWN;
    kdc_tri_t r = KDC_TRI_NO;
    for (size_t i = kdc_bits_next(&ci->confs, 0); i < ci->confs.nwords * 64;
         i = kdc_bits_next(&ci->confs, i + 1)) {
        if (!kdc_bits_get(&ci->confs, i))
            continue;
        if (fx->info[i].rebalance)
            return KDC_TRI_YES;
        if (fx->info[i].escaped)
            r = KDC_TRI_UNKNOWN;
    }
    return r;
}

size_t kdc_facts_client_settings(const kdc_facts_t *fx, size_t client, const char *key,
                                 void (*fn)(const kdc_setting_t *s, void *arg), void *arg,
                                 int *unknown) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf && unknown)
        *unknown = 1;
    kdc_bits_t confs;
    client_confs(fx, client, &confs);
    size_t count = 0;
    for (size_t i = kdc_bits_next(&confs, 0); i < confs.nwords * 64;
         i = kdc_bits_next(&confs, i + 1)) {
        if (!kdc_bits_get(&confs, i))
            continue;
        const objinfo_t *conf = &fx->info[i];
        if (conf->escaped && unknown)
            *unknown = 1;
        for (size_t s = 0; s < conf->settings.n; s++) {
            const kdc_setting_t *st = &conf->settings.v[s];
            if (!st->key && unknown)
                *unknown = 1;
            if (key && (!st->key || strcmp(st->key, key)))
                continue;
            count++;
            if (fn)
                fn(st, arg);
        }
    }
    kdc_bits_free(&confs);
    return count;
}

/* ---------- explaining a client ---------- */

static void explain_conf(const kdc_facts_t *fx, size_t conf, const char *what, FILE *out,
                         const char *cwd) {
    const objinfo_t *ci = &fx->info[conf];
    const kdc_obj_t *o = kdc_pts_obj(fx->pts, conf);
    fprintf(out, "  %s created at %s:%u:%u (%s)\n", what, kdc_display_path(cwd, o->site->loc.file),
            o->site->loc.line, o->site->loc.col, o->site->name);
    for (size_t s = 0; s < ci->settings.n; s++) {
        const kdc_setting_t *st = &ci->settings.v[s];
        if (st->escape)
            continue;
        fprintf(out, "    %s = %s%s%s%s%s  (%s:%u:%u%s%s)\n", st->key ? st->key : "<name not a literal>",
                st->value ? st->value : "<value not a literal>",
                st->fallback ? ", else " : "", st->fallback ? st->fallback : "",
                st->conditional ? ", on some paths only" : "",
                st->inherited ? ", copied" : "",
                kdc_display_path(cwd, st->loc.file), st->loc.line, st->loc.col,
                st->func ? ", in " : "", st->func ? st->func->name : "");
    }
    if (ci->dr)
        fprintf(out, "    delivery-report callback registered  (%s:%u:%u)\n",
                kdc_display_path(cwd, ci->dr_loc.file), ci->dr_loc.line, ci->dr_loc.col);
    if (ci->escaped)
        fprintf(out, "    handed to code outside the analysis: may set anything  (%s:%u:%u)\n",
                kdc_display_path(cwd, ci->escaped_loc.file), ci->escaped_loc.line,
                ci->escaped_loc.col);
    for (size_t i = kdc_bits_next(&ci->linked, 0); i < ci->linked.nwords * 64;
         i = kdc_bits_next(&ci->linked, i + 1))
        if (kdc_bits_get(&ci->linked, i))
            explain_conf(fx, i, "default topic configuration", out, cwd);
}

size_t kdc_facts_explain(const kdc_facts_t *fx, const char *file, unsigned line, FILE *out,
                         const char *cwd) {
    char *want = realpath(file, NULL);
    size_t n = kdc_pts_nobjs(fx->pts), found = 0;
    for (size_t i = 0; i < n; i++) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        const kdc_loc_t *at = o->kind == KDC_OBJ_CLIENT && o->via && o->via->loc.line == line
                                  ? &o->via->loc
                                  : o->site ? &o->site->loc : NULL;
        if (o->kind != KDC_OBJ_CLIENT || !at || at->line != line || !at->file ||
            strcmp(at->file, want ? want : file))
            continue;
        const objinfo_t *ci = &fx->info[i];
        found++;
        fprintf(out, "%s:%u:%u: %s created by %s, in %s", kdc_display_path(cwd, o->site->loc.file),
                o->site->loc.line, o->site->loc.col,
                ci->type == 0 ? "producer" : ci->type == 1 ? "consumer" : "client", o->site->name,
                o->func ? o->func->name : "?");
        if (o->via)
            fprintf(out, " called at %s:%u:%u", kdc_display_path(cwd, o->via->loc.file),
                    o->via->loc.line, o->via->loc.col);
        fputc('\n', out);
        if (ci->null_conf)
            fprintf(out, "  default configuration (no conf passed)\n");
        if (ci->unknown_conf)
            fprintf(out, "  configuration from outside the analysis (not followed)\n");
        for (size_t k = kdc_bits_next(&ci->confs, 0); k < ci->confs.nwords * 64;
             k = kdc_bits_next(&ci->confs, k + 1))
            if (kdc_bits_get(&ci->confs, k))
                explain_conf(fx, k, "configuration", out, cwd);
        if (ci->produces)
            fprintf(out, "  used by produce calls%s\n", ci->produces_dlq ? ", to a dead-letter queue" : "");
    }
    free(want);
    return found;
}
