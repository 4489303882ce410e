/*
 * Calls that never return, and the control-flow graphs that end paths there.
 *
 * A call never returns when its callee
 *   - is declared so: GNU `__attribute__((noreturn))`, C11 `_Noreturn`,
 *     C++ `[[noreturn]]` (parse.c: callee_noreturn), which covers glibc's
 *     exit, abort, __assert_fail, thrd_exit, pthread_exit and longjmp;
 *   - is one of the C library's functions that never return
 *     (kdc_api_is_noreturn_name: for code parsed without its headers);
 *   - is a function of the program whose exit no path reaches;
 *   - or, at this call site, is a function of the program whose exit no path
 *     reaches once the call's constant arguments are bound to its parameters:
 *     a test framework's `fail(file, line, fail_now, fmt, ..)` returns when
 *     fail_now is 0 and ends the program otherwise, and its FAIL macro passes
 *     1. Conditions on a bound parameter take one branch; calls inside pass
 *     their bound arguments on (three calls deep).
 * Macros need nothing of their own: the model is the expanded code.
 *
 * Every CFG is built with such calls ending their paths; as a callee's graph
 * loses paths, its callers' calls may become calls that never return, so the
 * graphs are built again until nothing changes.
 */
#include "api.h"
#include "facts_int.h"

#include <string.h>

#define NR_DEPTH 3  /* calls followed with bound arguments */
#define NR_ROUNDS 8 /* rebuilds of every CFG at most */

enum { PV_UNKNOWN, PV_INT, PV_NONZERO };

/* What a parameter is known to hold at a call site. */
typedef struct pval {
    int kind;    /* PV_*: PV_NONZERO is a pointer known not to be NULL */
    long long v; /* PV_INT */
} pval_t;

typedef struct nr_ctx {
    kdc_facts_t *fx;
    unsigned char *stops;       /* per function: some path ends in a call that never returns
                                   (here or in a function it calls) */
    size_t hits, bound_hits;    /* calls cut in the graphs built last; of those, calls cut
                                   for their constant arguments */
} nr_ctx_t;

/* ---------- parameters a function writes ---------- */

/* (`if (!conf) conf_init(&conf, ..)`: conf is not the caller's argument.) */
static int note_written(const kdc_expr_t *e, void *arg) {
    uint64_t *mask = arg;
    const kdc_expr_t *w = kdc_expr_assigned(e);
    if (!w && e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1)
        w = e->kids[0];
    w = kdc_expr_strip(w);
    if (w && w->kind == KDC_E_REF && w->ref == KDC_REF_PARAM && w->param_index >= 0 &&
        w->param_index < 64)
        *mask |= 1ull << w->param_index;
    return 0;
}

static void find_param_writes(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    fx->param_writes = calloc(nf ? nf : 1, sizeof *fx->param_writes);
    if (!fx->param_writes)
        kdc_oom();
    for (size_t i = 0; i < nf; i++)
        kdc_func_walk_exprs(kdc_program_func(fx->p, i), note_written, &fx->param_writes[i]);
}

int kdc__param_fixed(const kdc_facts_t *fx, const kdc_func_t *g, int i) {
    if (i < 0 || i >= 64 || (unsigned)i >= g->nparams)
        return 0;
    return !(fx->param_writes[g->index] >> i & 1);
}

/* ---------- values and conditions ---------- */

/* The value of e (in g, whose parameters hold vals; vals NULL: none known). */
static pval_t value_of(const kdc_facts_t *fx, const kdc_func_t *g, const pval_t *vals,
                       const kdc_expr_t *e) {
    pval_t r = {PV_UNKNOWN, 0};
    e = kdc_expr_strip(e);
    if (!e)
        return r;
    if (e->has_ival) {
        r.kind = PV_INT;
        r.v = e->ival;
    } else if (e->kind == KDC_E_NULL) {
        r.kind = PV_INT;
    } else if (e->kind == KDC_E_STRING ||
               (e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1)) {
        r.kind = PV_NONZERO;
    } else if (vals && e->kind == KDC_E_REF && e->ref == KDC_REF_PARAM &&
               kdc__param_fixed(fx, g, e->param_index)) {
        r = vals[e->param_index];
    } else if (e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1) {
        pval_t k = value_of(fx, g, vals, e->kids[0]);
        if (k.kind != PV_UNKNOWN) {
            r.kind = PV_INT;
            r.v = k.kind == PV_INT ? k.v == 0 : 0;
        }
    }
    return r;
}

/* 1 or 0 when the condition is decided by what g's parameters hold; -1 when not. */
static int cond_value(const kdc_facts_t *fx, const kdc_func_t *g, const pval_t *vals,
                      const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return -1;
    pval_t v = value_of(fx, g, vals, e);
    if (v.kind != PV_UNKNOWN)
        return v.kind == PV_NONZERO || v.v != 0;
    if (e->kind != KDC_E_BINARY || e->nkids != 2)
        return -1;
    if (e->op == KDC_OP_LAND || e->op == KDC_OP_LOR) {
        int a = cond_value(fx, g, vals, e->kids[0]), b = cond_value(fx, g, vals, e->kids[1]);
        int dominant = e->op == KDC_OP_LOR; /* 1 decides ||, 0 decides && */
        if (a == dominant || b == dominant)
            return dominant;
        return a >= 0 && b >= 0 ? !dominant : -1;
    }
    pval_t l = value_of(fx, g, vals, e->kids[0]), r = value_of(fx, g, vals, e->kids[1]);
    if (l.kind == PV_INT && r.kind == PV_INT) {
        switch (e->op) {
        case KDC_OP_EQ: return l.v == r.v;
        case KDC_OP_NE: return l.v != r.v;
        case KDC_OP_LT: return l.v < r.v;
        case KDC_OP_GT: return l.v > r.v;
        case KDC_OP_LE: return l.v <= r.v;
        case KDC_OP_GE: return l.v >= r.v;
        default: return -1;
        }
    }
    /* a pointer known not to be NULL, compared with NULL */
    if ((l.kind == PV_NONZERO && r.kind == PV_INT && r.v == 0) ||
        (r.kind == PV_NONZERO && l.kind == PV_INT && l.v == 0)) {
        if (e->op == KDC_OP_EQ)
            return 0;
        if (e->op == KDC_OP_NE)
            return 1;
    }
    return -1;
}

/* ---------- calls ---------- */

static int call_noreturn(nr_ctx_t *nc, const kdc_func_t *f, const pval_t *fvals,
                         const kdc_expr_t *call, int depth);

typedef struct bound_walk {
    nr_ctx_t *nc;
    const kdc_func_t *g;
    const pval_t *vals;
    int depth;
    int returns;
} bound_walk_t;

static int bound_visit(void *arg, const kdc_cfg_t *cfg, int n, int st) {
    bound_walk_t *bw = arg;
    if (bw->returns)
        return -1;
    if (n == cfg->exit) {
        bw->returns = 1;
        return -1;
    }
    const kdc_node_t *nd = &cfg->nodes[n];
    if (nd->kind == KDC_N_CALL && call_noreturn(bw->nc, bw->g, bw->vals, nd->expr, bw->depth))
        return -1;
    return st;
}

static int bound_edge(void *arg, const kdc_cfg_t *cfg, int n, unsigned i, int st) {
    (void)st;
    bound_walk_t *bw = arg;
    const kdc_node_t *nd = &cfg->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int v = cond_value(bw->nc->fx, bw->g, bw->vals, nd->expr);
    return v < 0 || i == (unsigned)(v ? 0 : 1);
}

/* Does g return at all once its parameters hold vals? */
static int returns_bound(nr_ctx_t *nc, const kdc_func_t *g, const pval_t *vals, int depth) {
    const kdc_cfg_t *cfg = g->cfg;
    bound_walk_t bw = {nc, g, vals, depth, 0};
    kdc_search_t s = {bound_visit, bound_edge, &bw, 1};
    kdc_cfg_search(cfg, cfg->entry, 0, &s);
    return bw.returns;
}

/* The function of the program a direct call reaches, or NULL. */
static const kdc_func_t *callee_of(const kdc_facts_t *fx, const kdc_func_t *f,
                                   const kdc_expr_t *call) {
    if (!call->usr || !*call->usr)
        return NULL;
    return kdc_program_find_callee(fx->p, call->usr, f ? f->tu : -1);
}

/* What g's parameters hold at this call (in f, whose own parameters hold
 * fvals; NULL: nothing known); returns how many are known. vals has room for
 * 64. */
static unsigned bind_args(const kdc_facts_t *fx, const kdc_func_t *f, const pval_t *fvals,
                          const kdc_expr_t *call, const kdc_func_t *g, pval_t *vals) {
    unsigned n = g->nparams < 64 ? g->nparams : 64, known = 0;
    for (unsigned i = 0; i < n; i++) {
        vals[i] = (pval_t){PV_UNKNOWN, 0};
        if (i < call->nkids && kdc__param_fixed(fx, g, (int)i))
            vals[i] = value_of(fx, f, fvals, call->kids[i]);
        known += vals[i].kind != PV_UNKNOWN;
    }
    return known;
}

/* Does this call (in f, whose parameters hold fvals; NULL: none known) never
 * return? *bound is set when only its constant arguments make it so. */
static int call_noreturn_at(nr_ctx_t *nc, const kdc_func_t *f, const pval_t *fvals,
                            const kdc_expr_t *call, int depth, int *bound) {
    kdc_facts_t *fx = nc->fx;
    if (call->callee_noreturn || kdc_api_is_noreturn_name(call->name))
        return 1;
    const kdc_func_t *g = callee_of(fx, f, call);
    if (!g)
        return 0;
    if (fx->sum[g->index].noreturn)
        return 1;
    /* stops[] is set from built graphs only: g->cfg exists. A C++ operator
     * call's first argument is its object, not its first parameter. */
    if (depth >= NR_DEPTH || !g->nparams || !call->nkids || !nc->stops[g->index] ||
        (call->is_method && !call->recv))
        return 0;
    pval_t vals[64];
    if (!bind_args(nc->fx, f, fvals, call, g, vals) || returns_bound(nc, g, vals, depth + 1))
        return 0;
    if (bound)
        *bound = 1;
    return 1;
}

static int call_noreturn(nr_ctx_t *nc, const kdc_func_t *f, const pval_t *fvals,
                         const kdc_expr_t *call, int depth) {
    return call_noreturn_at(nc, f, fvals, call, depth, NULL);
}

static int noreturn_cb(const kdc_expr_t *call, void *arg) {
    nr_ctx_t *nc = arg;
    int bound = 0;
    int r = call_noreturn_at(nc, nc->fx->building, NULL, call, 0, &bound);
    nc->hits += (size_t)r;
    nc->bound_hits += (size_t)bound;
    return r;
}

int kdc_facts_bound_cond(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_func_t *g, const kdc_expr_t *cond) {
    pval_t vals[64];
    if (!g->nparams || !call->nkids || (call->is_method && !call->recv) ||
        !bind_args(fx, f, NULL, call, g, vals))
        return -1;
    return cond_value(fx, g, vals, cond);
}

/* ---------- the fixpoint ---------- */

static void build_all(kdc_facts_t *fx, nr_ctx_t *nc) {
    size_t nf = kdc_program_nfuncs(fx->p);
    nc->hits = nc->bound_hits = 0;
    for (size_t i = 0; i < nf; i++) {
        kdc_func_t *f = kdc_program_func(fx->p, i);
        fx->building = f;
        kdc_cfg_build(fx->p, f, noreturn_cb, nc);
    }
    fx->building = NULL;
}

/* Functions with a path that ends in a call that never returns, in them or in
 * a function they call (up to NR_DEPTH deep): only those can stop returning
 * for some arguments. Returns 1 when some call passes a constant to one of
 * them (a graph built before may then lose paths). */
static int find_stops(kdc_facts_t *fx, nr_ctx_t *nc) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_cfg_t *g = kdc_program_func(fx->p, i)->cfg;
        nc->stops[i] = 0;
        for (unsigned n = 0; g && n < g->n && !nc->stops[i]; n++)
            nc->stops[i] = g->nodes[n].kind == KDC_N_CALL && g->nodes[n].nsucc == 0;
    }
    for (int round = 0, changed = 1; changed && round < NR_DEPTH; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(fx->p, i);
            for (unsigned c = 0; c < f->ncalls && !nc->stops[i]; c++) {
                const kdc_func_t *g = callee_of(fx, f, f->calls[c]);
                if (g && g != f && nc->stops[g->index])
                    nc->stops[i] = changed = 1;
            }
        }
    }
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_func_t *g = callee_of(fx, f, call);
            pval_t vals[64];
            if (g && g->nparams && call->nkids && nc->stops[g->index] &&
                !(call->is_method && !call->recv) && bind_args(fx, f, NULL, call, g, vals))
                return 1;
        }
    }
    return 0;
}

void kdc__build_cfgs(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    nr_ctx_t nc = {0};
    nc.fx = fx;
    nc.stops = calloc(nf ? nf : 1, 1);
    if (!nc.stops)
        kdc_oom();
    find_param_writes(fx);
    build_all(fx, &nc); /* no call judged by its arguments yet: stops[] is empty */
    size_t last_hits = nc.hits;
    for (int round = 0; round < NR_ROUNDS; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++) {
            int nr = !kdc_cfg_exit_reachable(kdc_program_func(fx->p, i)->cfg);
            if (nr != (int)fx->sum[i].noreturn) {
                fx->sum[i].noreturn = (unsigned)nr;
                changed = 1;
            }
        }
        int candidates = find_stops(fx, &nc);
        /* The calls cut only grow from one build to the next, so the same count is
         * the same graphs. Without calls cut for their arguments, the graphs depend
         * only on the summaries. */
        if (round == 0 ? !changed && !candidates
                       : !changed && (!nc.bound_hits || nc.hits == last_hits))
            break;
        last_hits = nc.hits;
        build_all(fx, &nc);
    }
    free(nc.stops);
}
