/* Handle tracking: a whole-program inclusion analysis (see pts.h). */
#include "pts.h"
#include "api.h"
#include "cfg.h"

#include <stdio.h>
#include <string.h>

typedef struct copy {
    int dst, src;
} copy_t;
typedef struct alloc {
    int dst, obj;
} alloc_t;

/* A value source: a storage location or an object. */
typedef struct src {
    int is_obj;
    int idx;
} src_t;
typedef KDC_VEC(src_t) srcvec_t;

struct kdc_pts {
    kdc_program_t *p;
    KDC_VEC(kdc_obj_t) objs;
    kdc_strmap_t obj_by_site; /* site expr / interned string / function USR → index + 1 */
    kdc_strmap_t loc_index;   /* location key → index + 1 */
    size_t nlocs;
    size_t nlocs_solved;      /* locations with a solution in pts */
    int frozen;               /* after the final solve: queries create nothing */
    kdc_bits_t *pts;          /* per location, after solving */
    KDC_VEC(copy_t) copies;
    KDC_VEC(alloc_t) allocs;
    kdc_strmap_t ncallers;    /* function USR → count (as pointer-sized int) */
    kdc_strmap_t factories;   /* function id → instance_vec_t*: analysed once per call chain */
    kdc_strmap_t instances;   /* context → instance_t* */
    kdc_strmap_t base;        /* a key qualified by an instance → the key of all instances */
    struct pair_slot {        /* (key, ctx) → qualified key; (key, NULL) → "D:" key */
        const void *a, *b;
        const char *r;
    } *pairs;
    size_t npairs, pairs_cap;
    const kdc_func_t *cur;    /* function whose constraints are being generated */
    const char *ctx;          /* ... and its instance (NULL: not a factory) */
    kdc_strmap_t callees;     /* frozen: indirect call → callees_t*, as kdc_pts_callees found */
};

/* The functions an indirect call may reach, in object order (kdc_pts_callees). */
typedef struct callees {
    const kdc_func_t *f; /* the function the call was evaluated in */
    size_t n;
    kdc_func_t *v[];
} callees_t;

/* One instance of a factory: the chain of calls that selects it. */
typedef struct instance {
    const char *ctx;         /* "#<call>" per call of the chain, outermost first (interned) */
    const char *caller_ctx;  /* the instance of the calling function; NULL when it has one */
    const kdc_expr_t *call;  /* the call selecting it (the last of the chain) */
    const kdc_expr_t *outer; /* the first call of the chain, in code that is not a factory */
    const kdc_func_t *caller; /* the function holding `call` */
} instance_t;
typedef KDC_VEC(instance_t) instance_vec_t;

/* ---------- objects and locations ---------- */

typedef enum { TRUTH_UNKNOWN, TRUTH_FALSE, TRUTH_TRUE } truth_t;

/* What a condition testing one parameter is in the factory instance ctx. */
static truth_t cond_truth_in(kdc_pts_t *t, const char *ctx, const kdc_expr_t *c);

static int obj_for(kdc_pts_t *t, kdc_obj_kind_t kind, const void *key, const kdc_func_t *f,
                   const kdc_expr_t *site, const char *str);

/* ---------- factory instances ---------- */

/* The instance of callee that `call`, evaluated in the caller's instance
 * caller_ctx (NULL: the caller has one), selects. Contexts are call strings:
 * "#<call>" per call of the chain, outermost first. */
static const char *ctx_string(kdc_pts_t *t, const char *caller_ctx, const kdc_expr_t *call) {
    char buf[512];
    snprintf(buf, sizeof buf, "%s#%p", caller_ctx ? caller_ctx : "", (const void *)call);
    return kdc_intern(t->p, buf);
}

static const instance_vec_t *factory_instances(const kdc_pts_t *t, const kdc_func_t *f) {
    return f ? kdc_strmap_get(&t->factories, f->id) : NULL;
}

static const instance_t *instance_of(const kdc_pts_t *t, const char *ctx) {
    return ctx ? kdc_strmap_get(&t->instances, ctx) : NULL;
}

/* The instance of callee a call selects, the caller being in its instance
 * caller_ctx (NULL when callee is not a factory, or the call does not select
 * one from there). */
static const char *select_instance(kdc_pts_t *t, const kdc_func_t *callee, const char *caller_ctx,
                                   const kdc_expr_t *call) {
    if (!factory_instances(t, callee))
        return NULL;
    const char *ctx = ctx_string(t, caller_ctx, call);
    return instance_of(t, ctx) ? ctx : NULL;
}

/* ... from the instance being analysed (t->ctx). */
static const char *callee_ctx(kdc_pts_t *t, const kdc_func_t *callee, const kdc_expr_t *call) {
    return select_instance(t, callee, t->ctx, call);
}

/* A small cache of derived keys: queries build the same ones again and again. */
static size_t pair_slot(const kdc_pts_t *t, const void *a, const void *b) {
    uintptr_t h = ((uintptr_t)a * 0x9E3779B97F4A7C15u) ^ ((uintptr_t)b * 0xC2B2AE3D27D4EB4Fu);
    return (size_t)(h ^ (h >> 29)) & (t->pairs_cap - 1);
}

static const char *pair_get(const kdc_pts_t *t, const void *a, const void *b) {
    if (!t->pairs_cap)
        return NULL;
    for (size_t k = pair_slot(t, a, b); t->pairs[k].a; k = (k + 1) & (t->pairs_cap - 1))
        if (t->pairs[k].a == a && t->pairs[k].b == b)
            return t->pairs[k].r;
    return NULL;
}

static void pair_put(kdc_pts_t *t, const void *a, const void *b, const char *r) {
    if (2 * (t->npairs + 1) > t->pairs_cap) {
        size_t cap = t->pairs_cap ? 2 * t->pairs_cap : 1024;
        struct pair_slot *old = t->pairs;
        size_t oldcap = t->pairs_cap;
        t->pairs = calloc(cap, sizeof *t->pairs);
        if (!t->pairs)
            kdc_oom();
        t->pairs_cap = cap;
        for (size_t i = 0; i < oldcap; i++)
            if (old[i].a) {
                size_t k = pair_slot(t, old[i].a, old[i].b);
                while (t->pairs[k].a)
                    k = (k + 1) & (cap - 1);
                t->pairs[k] = old[i];
            }
        free(old);
    }
    size_t k = pair_slot(t, a, b);
    while (t->pairs[k].a)
        k = (k + 1) & (t->pairs_cap - 1);
    t->pairs[k].a = a;
    t->pairs[k].b = b;
    t->pairs[k].r = r;
    t->npairs++;
}

/* The key of one instance; the key itself stands for all of them (it
 * receives what every instance's holds: a query that does not say which
 * instance reads it). */
static const char *with_ctx(kdc_pts_t *t, const char *key, const char *ctx) {
    if (!key || !ctx)
        return key;
    const char *r = pair_get(t, key, ctx);
    if (r)
        return r;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", key, ctx);
    r = kdc_intern(t->p, buf);
    pair_put(t, key, ctx, r);
    if (r != key)
        kdc_strmap_put(&t->base, r, (void *)key);
    return r;
}

static int has_alloc_site(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (api && (api->roles & (KDC_API_CONF_NEW | KDC_API_CONF_DUP | KDC_API_CLIENT_NEW |
                                  KDC_API_TOPIC_NEW)))
            return 1;
    }
    return 0;
}

static int note_address_taken(const kdc_expr_t *e, void *arg) {
    kdc_strmap_t *taken = arg;
    if (e->kind == KDC_E_REF && e->ref == KDC_REF_FUNCTION && e->usr)
        kdc_strmap_put(taken, e->usr, (void *)1);
    return 0;
}

/* Limits of the cloning: instances of one function, calls in one chain, and
 * instances in the whole program. A function beyond them is analysed once. */
#define KDC_MAX_INSTANCES 2048
#define KDC_MAX_CHAIN 8
#define KDC_MAX_ALL_INSTANCES 60000

typedef struct site {
    const kdc_func_t *caller;
    const kdc_expr_t *call;
} site_t;
typedef KDC_VEC(site_t) site_vec_t;

/* The conditions a call is under: `if (c)` statements and which branch. */
typedef struct guard {
    const kdc_expr_t *cond;
    int branch; /* 1 then, 0 else */
} guard_t;
typedef KDC_VEC(guard_t) guard_vec_t;

typedef struct choose {
    kdc_pts_t *t;
    site_vec_t *sites;        /* per function index: its direct call sites */
    unsigned char *cand;      /* gives its caller objects it creates, or a factory's */
    unsigned char *state;     /* 0 new, 1 on the stack, 2 done */
    unsigned char *cyclic;    /* on a cycle of calls among candidates */
    size_t *depth;
    kdc_strmap_t guards;      /* call → guard_vec_t* (calls of candidates) */
    KDC_VEC(guard_vec_t *) all_guards;
    KDC_VEC(const kdc_func_t *) order; /* candidates, callers first */
    KDC_VEC(const kdc_func_t *) stack;
} choose_t;

static void order_callers_first(choose_t *c, const kdc_func_t *f) {
    c->state[f->index] = 1;
    KDC_VEC_PUSH(c->stack, f);
    const site_vec_t *sv = &c->sites[f->index];
    for (size_t i = 0; i < sv->n; i++) {
        const kdc_func_t *g = sv->v[i].caller;
        if (!c->cand[g->index])
            continue;
        if (c->state[g->index] == 1) { /* g .. f on the stack call each other */
            for (size_t k = c->stack.n; k-- > 0;) {
                c->cyclic[c->stack.v[k]->index] = 1;
                if (c->stack.v[k] == g)
                    break;
            }
        } else if (!c->state[g->index]) {
            order_callers_first(c, g);
        }
    }
    c->stack.n--;
    c->state[f->index] = 2;
    KDC_VEC_PUSH(c->order, f);
}

/* Does the type spelling name a configuration, client or topic handle? */
static int names_handle(const char *ty) {
    static const char *const names[] = {"rd_kafka_t", "rd_kafka_conf_t", "rd_kafka_topic_conf_t",
                                        "rd_kafka_topic_t", "RdKafka::"};
    if (!ty)
        return 0;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        for (const char *p = strstr(ty, names[i]); p; p = strstr(p + 1, names[i]))
            if (names[i][n - 1] == ':' || !(p[n] == '_' || (p[n] >= 'a' && p[n] <= 'z') ||
                                             (p[n] >= 'A' && p[n] <= 'Z') ||
                                             (p[n] >= '0' && p[n] <= '9')))
                return 1;
    }
    return 0;
}

static void find_handle_return(const kdc_stmt_t *s, void *arg) {
    if (s->kind != KDC_S_RETURN || !s->expr)
        return;
    const kdc_expr_t *e = kdc_expr_strip(s->expr);
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1)
        e = kdc_expr_strip(e->kids[0]);
    if (e && names_handle(e->type))
        *(int *)arg = 1;
}

/* Can f give its caller a handle: return one, or write one through a
 * pointer-to-pointer or reference parameter (`rd_kafka_conf_t **out`,
 * `RdKafka::Conf *&out`)? Only then do its callers need objects of their own. */
static int gives_handles(const kdc_func_t *f) {
    for (unsigned i = 0; f->param_types && i < f->nparams; i++) {
        const char *ty = f->param_types[i];
        if (ty && names_handle(ty) && (strstr(ty, "**") || strstr(ty, "*&") || strstr(ty, "* &")))
            return 1;
    }
    int found = 0;
    kdc_stmt_walk(f->body, find_handle_return, &found);
    return found;
}

/* Records the guards of each call of a candidate in the statements below s. */
typedef struct guard_walk {
    choose_t *c;
    const kdc_func_t *f;
    guard_vec_t stack;
} guard_walk_t;

static int note_guarded_call(const kdc_expr_t *e, void *arg) {
    guard_walk_t *w = arg;
    if (e->kind != KDC_E_CALL || e->callee_expr)
        return 0;
    const kdc_func_t *callee = kdc_program_find_callee(w->c->t->p, e->usr, w->f->tu);
    if (!callee || !w->c->cand[callee->index] || !w->stack.n)
        return 0;
    guard_vec_t *g = calloc(1, sizeof *g);
    if (!g)
        kdc_oom();
    for (size_t i = 0; i < w->stack.n; i++)
        KDC_VEC_PUSH(*g, w->stack.v[i]);
    kdc_strmap_put(&w->c->guards, (const char *)e, g);
    KDC_VEC_PUSH(w->c->all_guards, g);
    return 0;
}

static void walk_guards(guard_walk_t *w, const kdc_stmt_t *s) {
    if (!s)
        return;
    kdc_expr_walk(s->expr, note_guarded_call, w);
    kdc_expr_walk(s->inc, note_guarded_call, w);
    walk_guards(w, s->init);
    if (s->kind == KDC_S_IF && s->expr) {
        guard_t g = {s->expr, 1};
        KDC_VEC_PUSH(w->stack, g);
        walk_guards(w, s->body);
        w->stack.v[w->stack.n - 1].branch = 0;
        walk_guards(w, s->els);
        w->stack.n--;
    } else {
        walk_guards(w, s->body);
        walk_guards(w, s->els);
    }
    for (unsigned i = 0; i < s->nkids; i++)
        walk_guards(w, s->kids[i]);
}

/* Is the call (a call of a candidate) ruled out in the caller's instance ctx
 * by the arguments that instance gets (`if (!conf) conf = make_conf();` for
 * a caller that passes a configuration)? */
static int ruled_out(choose_t *c, const kdc_expr_t *call, const char *ctx) {
    const guard_vec_t *g = ctx ? kdc_strmap_get(&c->guards, (const char *)call) : NULL;
    for (size_t i = 0; g && i < g->n; i++) {
        truth_t v = cond_truth_in(c->t, ctx, g->v[i].cond);
        if (v != TRUTH_UNKNOWN && (v == TRUTH_TRUE) != g->v[i].branch)
            return 1;
    }
    return 0;
}

/* Does f call a candidate under a condition on its parameters, which the
 * arguments of an instance may rule out? */
static int has_guarded_calls(choose_t *c, const kdc_func_t *f) {
    for (unsigned k = 0; k < f->ncalls; k++)
        if (kdc_strmap_get(&c->guards, (const char *)f->calls[k]))
            return 1;
    return 0;
}

/* Factories: functions that give their caller handles they create (or a
 * factory creates for them), reached by at least two chains of calls (or by
 * one, when a condition on its parameters chooses what it calls), never
 * through a pointer. Each chain (call string) from code that is not a factory
 * gets an instance of its own, so the objects `make_consumer(list)` creates
 * for one caller are not those it creates for another, also when it creates
 * them through helpers of its own (a test helper calling a conf helper calling
 * rd_kafka_conf_new()). A chain whose arguments rule out the call
 * (`if (!conf) test_conf_init(&conf, ..)` when the caller passes one) gets
 * none. */
static void choose_factories(kdc_pts_t *t) {
    size_t nf = kdc_program_nfuncs(t->p);
    kdc_strmap_t taken;
    kdc_strmap_init(&taken);
    for (size_t i = 0; i < nf; i++)
        kdc_func_walk_exprs(kdc_program_func(t->p, i), note_address_taken, &taken);
    choose_t c = {.t = t};
    kdc_strmap_init(&c.guards);
    c.sites = calloc(nf ? nf : 1, sizeof *c.sites);
    c.cand = calloc(nf ? nf : 1, 1);
    c.state = calloc(nf ? nf : 1, 1);
    c.cyclic = calloc(nf ? nf : 1, 1);
    c.depth = calloc(nf ? nf : 1, sizeof *c.depth);
    if (!c.sites || !c.cand || !c.state || !c.cyclic || !c.depth)
        kdc_oom();
    unsigned char *gives = calloc(nf ? nf : 1, 1);
    if (!gives)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(t->p, i);
        gives[i] = !kdc_strmap_get(&taken, f->usr) && gives_handles(f);
        c.cand[i] = gives[i] && has_alloc_site(f);
        for (unsigned k = 0; k < f->ncalls; k++) {
            const kdc_expr_t *call = f->calls[k];
            if (call->callee_expr)
                continue;
            const kdc_func_t *callee = kdc_program_find_callee(t->p, call->usr, f->tu);
            if (!callee || kdc_strmap_get(&taken, callee->usr))
                continue;
            site_t s = {f, call};
            KDC_VEC_PUSH(c.sites[callee->index], s);
        }
    }
    for (int changed = 1; changed;) { /* callers of candidates giving handles too */
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            if (!c.cand[i])
                continue;
            for (size_t k = 0; k < c.sites[i].n; k++) {
                const kdc_func_t *g = c.sites[i].v[k].caller;
                if (!c.cand[g->index] && gives[g->index]) {
                    c.cand[g->index] = 1;
                    changed = 1;
                }
            }
        }
    }
    for (size_t i = 0; i < nf; i++)
        if (c.cand[i]) {
            guard_walk_t w = {&c, kdc_program_func(t->p, i), {0}};
            walk_guards(&w, w.f->body);
            free(w.stack.v);
        }
    for (size_t i = 0; i < nf; i++)
        if (c.cand[i] && !c.state[i])
            order_callers_first(&c, kdc_program_func(t->p, i));
    size_t all = 0;
    for (size_t i = 0; i < c.order.n; i++) {
        const kdc_func_t *f = c.order.v[i];
        if (c.cyclic[f->index])
            continue;
        instance_vec_t *v = calloc(1, sizeof *v);
        if (!v)
            kdc_oom();
        size_t depth = 0;
        for (size_t k = 0; k < c.sites[f->index].n && v->n <= KDC_MAX_INSTANCES; k++) {
            const site_t *s = &c.sites[f->index].v[k];
            const instance_vec_t *outer = factory_instances(t, s->caller);
            for (size_t j = 0; j < (outer ? outer->n : 1) && v->n <= KDC_MAX_INSTANCES; j++) {
                instance_t in = {NULL, outer ? outer->v[j].ctx : NULL, s->call,
                                 outer ? outer->v[j].outer : s->call, s->caller};
                if (ruled_out(&c, s->call, in.caller_ctx))
                    continue;
                in.ctx = ctx_string(t, in.caller_ctx, s->call);
                KDC_VEC_PUSH(*v, in);
                size_t d = outer ? c.depth[s->caller->index] + 1 : 1;
                if (d > depth)
                    depth = d;
            }
        }
        if ((v->n < 2 && !(v->n == 1 && has_guarded_calls(&c, f))) || v->n > KDC_MAX_INSTANCES ||
            depth > KDC_MAX_CHAIN || all + v->n > KDC_MAX_ALL_INSTANCES) {
            free(v->v);
            free(v);
            continue;
        }
        c.depth[f->index] = depth;
        all += v->n;
        kdc_strmap_put(&t->factories, f->id, v);
        for (size_t k = 0; k < v->n; k++)
            kdc_strmap_put(&t->instances, v->v[k].ctx, &v->v[k]);
    }
    for (size_t i = 0; i < nf; i++)
        free(c.sites[i].v);
    for (size_t i = 0; i < c.all_guards.n; i++) {
        free(c.all_guards.v[i]->v);
        free(c.all_guards.v[i]);
    }
    free(c.all_guards.v);
    kdc_strmap_free(&c.guards);
    free(c.sites);
    free(c.cand);
    free(gives);
    free(c.state);
    free(c.cyclic);
    free(c.depth);
    free(c.order.v);
    free(c.stack.v);
    kdc_strmap_free(&taken);
}

static int obj_for(kdc_pts_t *t, kdc_obj_kind_t kind, const void *key, const kdc_func_t *f,
                   const kdc_expr_t *site, const char *str) {
    if (key) {
        uintptr_t v = (uintptr_t)kdc_strmap_get(&t->obj_by_site, key);
        if (v)
            return (int)v - 1;
    }
    if (t->frozen)
        return -1;
    kdc_obj_t o = {kind, f, site, str, NULL, NULL};
    if (site && t->ctx) {
        const instance_t *in = instance_of(t, t->ctx);
        o.ctx = t->ctx;
        o.via = in ? in->outer : NULL;
    }
    KDC_VEC_PUSH(t->objs, o);
    int idx = (int)t->objs.n - 1;
    if (key)
        kdc_strmap_put(&t->obj_by_site, key, (void *)(uintptr_t)(idx + 1));
    return idx;
}

static int loc_for(kdc_pts_t *t, const char *key) {
    uintptr_t v = (uintptr_t)kdc_strmap_get(&t->loc_index, key);
    if (v)
        return (int)v - 1;
    if (t->frozen)
        return -1;
    int idx = (int)t->nlocs++;
    kdc_strmap_put(&t->loc_index, key, (void *)(uintptr_t)(idx + 1));
    const char *all = kdc_strmap_get(&t->base, key);
    if (all) { /* an instance's location flows into the one of all instances */
        copy_t c = {loc_for(t, all), idx};
        KDC_VEC_PUSH(t->copies, c);
    }
    return idx;
}

/* "D:" + key: what the pointer stored at key points to. */
static const char *deref_key(kdc_pts_t *t, const char *k) {
    if (!k)
        return NULL;
    const char *r = pair_get(t, k, "D:");
    if (r)
        return r;
    char buf[4096];
    snprintf(buf, sizeof buf, "D:%s", k);
    r = kdc_intern(t->p, buf);
    pair_put(t, k, "D:", r);
    const char *all = kdc_strmap_get(&t->base, k);
    if (all)
        kdc_strmap_put(&t->base, r, (void *)deref_key(t, all));
    return r;
}

static const char *prefixed(kdc_program_t *p, const char *prefix, const char *s) {
    char buf[2048];
    snprintf(buf, sizeof buf, "%s%s", prefix, s);
    return kdc_intern(p, buf);
}

const char *kdc_pts_lvalue_key(kdc_program_t *p, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return NULL;
    switch (e->kind) {
    case KDC_E_REF:
        if (e->ref == KDC_REF_FUNCTION || e->ref == KDC_REF_ENUMERATOR || !e->usr)
            return NULL;
        return e->usr;
    case KDC_E_MEMBER:
        if (e->usr && *e->usr)
            return e->usr;
        return e->name ? prefixed(p, "F:", e->name) : NULL;
    case KDC_E_UNARY:
        if (e->op == KDC_OP_DEREF && e->nkids == 1) {
            const char *k = kdc_pts_lvalue_key(p, e->kids[0]);
            return k ? prefixed(p, "D:", k) : NULL;
        }
        return NULL;
    case KDC_E_INDEX:
        return kdc_pts_lvalue_key(p, e->kids[0]);
    default:
        return NULL;
    }
}

static const char *ret_key(kdc_pts_t *t, const kdc_func_t *f, const char *ctx) {
    const char *r = pair_get(t, f, "R:");
    if (!r) {
        r = prefixed(t->p, "R:", f->id);
        pair_put(t, f, "R:", r);
    }
    return with_ctx(t, r, ctx);
}

/* The lvalue key, qualified by the current instance when it names a local or
 * parameter of a factory being analysed per call site. */
static const char *lkey(kdc_pts_t *t, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return NULL;
    if (t->ctx && e->kind == KDC_E_REF && (e->ref == KDC_REF_LOCAL || e->ref == KDC_REF_PARAM) &&
        e->usr)
        return with_ctx(t, e->usr, t->ctx);
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1)
        return deref_key(t, lkey(t, e->kids[0]));
    if (e->kind == KDC_E_INDEX)
        return lkey(t, e->kids[0]);
    return kdc_pts_lvalue_key(t->p, e);
}

/* Allocation objects of a factory instance are keyed by site and instance. */
static const void *site_key(kdc_pts_t *t, const kdc_expr_t *site) {
    if (!t->ctx)
        return site;
    char buf[128];
    snprintf(buf, sizeof buf, "O:%p%s", (const void *)site, t->ctx);
    return kdc_intern(t->p, buf);
}

/* ---------- value sources ---------- */

static void srcs(kdc_pts_t *t, const kdc_expr_t *e, srcvec_t *out);

static void push_loc(kdc_pts_t *t, const char *key, srcvec_t *out) {
    if (!key)
        return;
    src_t s = {0, loc_for(t, key)};
    if (s.idx >= 0)
        KDC_VEC_PUSH(*out, s);
}

static void push_obj(int obj, srcvec_t *out) {
    if (obj < 0)
        return;
    src_t s = {1, obj};
    KDC_VEC_PUSH(*out, s);
}

static int is_smart_pointer_access(const kdc_expr_t *call) {
    const char *n = call->name;
    size_t len = strlen(n);
    return call->is_method &&
           ((len >= 10 && !strcmp(n + len - 10, "operator->")) ||
            (len >= 9 && !strcmp(n + len - 9, "operator*")) ||
            (len >= 5 && !strcmp(n + len - 5, "::get")));
}

/* The object a creating call makes: in the instance being analysed, or, for
 * a query that names no instance of a factory, in each of them. */
static void push_site_obj(kdc_pts_t *t, kdc_obj_kind_t kind, const kdc_expr_t *e, srcvec_t *out) {
    const instance_vec_t *inst = !t->ctx && t->frozen ? factory_instances(t, t->cur) : NULL;
    if (!inst) {
        push_obj(obj_for(t, kind, site_key(t, e), t->cur, e, NULL), out);
        return;
    }
    for (size_t i = 0; i < inst->n; i++) {
        t->ctx = inst->v[i].ctx;
        push_obj(obj_for(t, kind, site_key(t, e), t->cur, e, NULL), out);
    }
    t->ctx = NULL;
}

static void call_srcs(kdc_pts_t *t, const kdc_expr_t *e, srcvec_t *out) {
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api) {
        if (api->roles & (KDC_API_CONF_NEW | KDC_API_CONF_DUP)) /* a copy is an object of its own */
            push_site_obj(t, KDC_OBJ_CONF, e, out);
        else if (api->roles & KDC_API_CLIENT_NEW)
            push_site_obj(t, KDC_OBJ_CLIENT, e, out);
        else if (api->roles & KDC_API_TOPIC_NEW)
            push_site_obj(t, KDC_OBJ_TOPIC, e, out);
        else
            push_obj(0, out);
        return;
    }
    kdc_func_t *f = kdc_program_find_callee(t->p, e->usr, t->cur ? t->cur->tu : -1);
    if (f) {
        const instance_vec_t *inst = factory_instances(t, f);
        const char *cctx = callee_ctx(t, f, e);
        if (inst && !cctx) { /* a query outside the caller's own instances: each the call selects */
            for (size_t i = 0; i < inst->n; i++)
                if (inst->v[i].call == e)
                    push_loc(t, ret_key(t, f, inst->v[i].ctx), out);
        } else {
            push_loc(t, ret_key(t, f, cctx), out);
        }
        return;
    }
    if (is_smart_pointer_access(e)) {
        srcs(t, e->recv ? e->recv : kdc_call_arg(e, 0), out);
        return;
    }
    if (e->is_ctor && e->nkids >= 1 && e->callee_system) {
        srcs(t, e->kids[0], out); /* std::string(const char *), unique_ptr<T>(T *) */
        return;
    }
    if (e->callee_expr) {
        kdc_funcvec_t callees = {0};
        kdc_pts_callees(t, t->cur, e, &callees);
        for (size_t i = 0; i < callees.n; i++)
            push_loc(t, ret_key(t, callees.v[i], NULL), out);
        free(callees.v);
    }
    push_obj(0, out);
}

/* The type spelling without trailing blanks and qualifiers ("T * const" → "T *"). */
static size_t type_len(const char *ty) {
    size_t n = strlen(ty);
    for (;;) {
        while (n && ty[n - 1] == ' ')
            n--;
        if (n >= 5 && !strncmp(ty + n - 5, "const", 5))
            n -= 5;
        else if (n >= 8 && !strncmp(ty + n - 8, "volatile", 8))
            n -= 8;
        else
            return n;
    }
}

/* Is e a pointer to something that is not a pointer (`RdKafka::Conf *`)? Its
 * dereference is the object a handle pointer denotes. */
static int points_to_object(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e || !e->type)
        return 0;
    size_t n = type_len(e->type);
    if (!n || e->type[n - 1] != '*')
        return 0;
    char inner[256];
    if (n - 1 >= sizeof inner)
        return 0;
    memcpy(inner, e->type, n - 1);
    inner[n - 1] = 0;
    size_t m = type_len(inner);
    return m && inner[m - 1] != '*' && inner[m - 1] != ')';
}

/* Is e an lvalue of a C++ class type that is not a pointer (a reference
 * variable `RdKafka::Conf &conf`, a call returning one)? Its address is the
 * object a handle pointer denotes. */
static int is_object(const kdc_expr_t *e) {
    if (!e->type || (e->kind != KDC_E_REF && e->kind != KDC_E_CALL && e->kind != KDC_E_MEMBER))
        return 0;
    size_t n = type_len(e->type);
    return n && e->type[n - 1] != '*' && e->type[n - 1] != ')' && e->type[n - 1] != ']' &&
           strstr(e->type, "::") != NULL;
}

/* A parameter of reference-to-pointer type (`RdKafka::Conf *&conf`): what the
 * callee assigns to it, the caller's variable holds. */
static int is_pointer_reference(const char *ty) {
    if (!ty)
        return 0;
    size_t n = type_len(ty);
    if (n < 2 || ty[n - 1] != '&' || ty[n - 2] == '&')
        return 0;
    n--;
    while (n && ty[n - 1] == ' ')
        n--;
    return n && ty[n - 1] == '*';
}

static void srcs(kdc_pts_t *t, const kdc_expr_t *e, srcvec_t *out) {
    e = kdc_expr_strip(e);
    if (!e)
        return;
    switch (e->kind) {
    case KDC_E_REF:
        if (e->ref == KDC_REF_FUNCTION && e->usr) {
            const kdc_func_t *fn = kdc_program_find_callee(t->p, e->usr, t->cur ? t->cur->tu : -1);
            const char *id = fn ? fn->id : e->usr;
            push_obj(obj_for(t, KDC_OBJ_FUNC, id, NULL, NULL, id), out);
        }
        else if (e->ref != KDC_REF_ENUMERATOR)
            push_loc(t, lkey(t, e), out);
        return;
    case KDC_E_MEMBER:
        push_loc(t, lkey(t, e), out);
        return;
    case KDC_E_STRING:
        push_obj(obj_for(t, KDC_OBJ_STRING, e->str, NULL, NULL, e->str), out);
        return;
    case KDC_E_CALL: {
        /* C++: a std::string (any library class) built from a literal holds it */
        const kdc_expr_t *k = e;
        for (int d = 0; k && k->kind == KDC_E_CALL && k->is_ctor && k->callee_system &&
                        k->nkids >= 1 && d < 8;
             d++)
            k = kdc_expr_strip_copy(k->kids[0]);
        if (k && k != e && k->kind == KDC_E_STRING) {
            push_obj(obj_for(t, KDC_OBJ_STRING, k->str, NULL, NULL, k->str), out);
            return;
        }
        call_srcs(t, e, out);
        return;
    }
    case KDC_E_UNARY:
        if (e->op == KDC_OP_DEREF || e->op == KDC_OP_UNKNOWN)
            push_loc(t, lkey(t, e), out);
        if (e->op == KDC_OP_DEREF && e->nkids == 1 && points_to_object(e->kids[0]))
            srcs(t, e->kids[0], out); /* C++ `return *conf;` as a reference: the object itself */
        if (e->op == KDC_OP_ADDR && e->nkids == 1) {
            const kdc_expr_t *k = kdc_expr_strip(e->kids[0]);
            if (k && ((k->kind == KDC_E_REF && k->ref == KDC_REF_FUNCTION) || is_object(k)))
                srcs(t, k, out); /* &fn; C++ &conf of a reference, &make_conf() */
        }
        return;
    case KDC_E_INDEX:
        srcs(t, e->kids[0], out);
        return;
    case KDC_E_COND:
        srcs(t, e->kids[1], out);
        srcs(t, e->kids[2], out);
        return;
    case KDC_E_BINARY:
        if (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMMA)
            srcs(t, e->kids[1], out);
        else if (e->op == KDC_OP_ADD || e->op == KDC_OP_SUB)
            srcs(t, e->kids[0], out);
        return;
    case KDC_E_OTHER:
    case KDC_E_INIT: /* arrays of handles: {rk1, rk2} */
        if (e->fields)
            return;
        for (unsigned i = 0; i < e->nkids; i++)
            srcs(t, e->kids[i], out);
        return;
    default:
        return;
    }
}

/* ---------- constraints ---------- */

static void flow(kdc_pts_t *t, const char *dst_key, const kdc_expr_t *from) {
    if (!dst_key || !from)
        return;
    const kdc_expr_t *init = kdc_expr_strip(from);
    if (init->kind == KDC_E_INIT && init->fields) {
        /* struct s v = {a, b}: field-based, so a flows into s.field0, b into s.field1 */
        for (unsigned i = 0; i < init->nkids; i++)
            flow(t, init->fields[i], init->kids[i]);
        return;
    }
    int dst = loc_for(t, dst_key);
    srcvec_t v = {0};
    srcs(t, from, &v);
    for (size_t i = 0; i < v.n; i++) {
        if (v.v[i].is_obj) {
            alloc_t a = {dst, v.v[i].idx};
            KDC_VEC_PUSH(t->allocs, a);
        } else if (v.v[i].idx != dst) {
            copy_t c = {dst, v.v[i].idx};
            KDC_VEC_PUSH(t->copies, c);
        }
    }
    free(v.v);
}

static void flow_both(kdc_pts_t *t, const char *a, const char *b) {
    copy_t c1 = {loc_for(t, a), loc_for(t, b)}, c2 = {c1.src, c1.dst};
    KDC_VEC_PUSH(t->copies, c1);
    KDC_VEC_PUSH(t->copies, c2);
}

static void count_caller(kdc_pts_t *t, const kdc_func_t *f) {
    uintptr_t n = (uintptr_t)kdc_strmap_get(&t->ncallers, f->id);
    kdc_strmap_put(&t->ncallers, f->id, (void *)(n + 1));
}

/* The values a local variable argument of a call may hold there: the
 * right-hand sides of the assignments of it that reach the call (a variable
 * reused for a second configuration passes only the one it holds at the
 * call). Returns how many were written to out; 0 when that cannot be told
 * (then the variable is taken as a whole). */
static int reaching_values(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *call,
                           const kdc_expr_t *arg, const kdc_expr_t **out, int max) {
    (void)t;
    const kdc_expr_t *a = kdc_expr_strip(arg);
    if (!f || !a || a->kind != KDC_E_REF || a->ref != KDC_REF_LOCAL || !a->usr || !f->cfg)
        return 0;
    int at = kdc_cfg_node_of_call(f->cfg, call);
    int n = at < 0 ? -1 : kdc_cfg_reaching_assignments(f, a->usr, at, out, max);
    return n > 0 ? n : 0;
}

static void flow_arg(kdc_pts_t *t, const char *param, const kdc_expr_t *call, const kdc_expr_t *arg) {
    const kdc_expr_t *vals[8];
    int n = reaching_values(t, t->cur, call, arg, vals, 8);
    if (!n) {
        flow(t, param, arg);
        return;
    }
    for (int k = 0; k < n; k++)
        flow(t, param, vals[k]);
}

static void bind_args(kdc_pts_t *t, const kdc_expr_t *call, const kdc_func_t *callee) {
    count_caller(t, callee);
    const char *cctx = callee_ctx(t, callee, call);
    for (unsigned i = 0; i < call->nkids && i < callee->nparams; i++) {
        const char *param = with_ctx(t, callee->param_usrs[i], cctx);
        flow_arg(t, param, call, call->kids[i]);
        const kdc_expr_t *a = kdc_expr_strip(call->kids[i]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1) {
            const char *k = lkey(t, a->kids[0]);
            if (k)
                flow_both(t, deref_key(t, param), k);
        } else if (a && callee->param_types && is_pointer_reference(callee->param_types[i])) {
            const char *k = lkey(t, a);
            if (k)
                flow_both(t, param, k);
        }
    }
}

static void out_params_unknown(kdc_pts_t *t, const kdc_expr_t *call) {
    for (unsigned i = 0; i < call->nkids; i++) {
        const kdc_expr_t *a = kdc_expr_strip(call->kids[i]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1) {
            const char *k = lkey(t, a->kids[0]);
            if (k) {
                alloc_t al = {loc_for(t, k), 0};
                KDC_VEC_PUSH(t->allocs, al);
            }
        }
    }
}

static int gen_expr(const kdc_expr_t *e, void *arg) {
    kdc_pts_t *t = arg;
    /* Every string and function value gets its object now, so that queries
     * after solving (which create nothing) can name them. */
    if (e->kind == KDC_E_STRING || (e->kind == KDC_E_REF && e->ref == KDC_REF_FUNCTION)) {
        srcvec_t v = {0};
        srcs(t, e, &v);
        free(v.v);
    }
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        flow(t, lkey(t, e->kids[0]), e->kids[1]);
    } else if (e->kind == KDC_E_CALL && !e->callee_expr) {
        kdc_func_t *callee = kdc_program_find_callee(t->p, e->usr, t->cur->tu);
        if (callee)
            bind_args(t, e, callee);
        else if (!e->callee_system && !kdc_api_is_librdkafka(e) && !kdc_api_lookup(e))
            out_params_unknown(t, e);
    }
    return 0;
}

/* ---------- constant arguments of factory instances ---------- */

static truth_t param_truth(kdc_pts_t *t, const char *ctx, int idx, int depth);

static truth_t arg_truth(kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                         const kdc_expr_t *call, const kdc_expr_t *a, int depth);

static int is_var_ref(const kdc_expr_t *e, const char *usr) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->usr == usr;
}

/* Does the atomic condition test the variable (`v`, `v == NULL`, `v != NULL`)?
 * *true_nonnull: its true edge means v is not null. */
static int tests_var(const kdc_expr_t *c, const char *usr, int *true_nonnull) {
    c = kdc_expr_strip(c);
    if (is_var_ref(c, usr)) {
        *true_nonnull = 1;
        return 1;
    }
    if (c && c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2 &&
        ((is_var_ref(c->kids[0], usr) && kdc_expr_is_null(c->kids[1])) ||
         (is_var_ref(c->kids[1], usr) && kdc_expr_is_null(c->kids[0])))) {
        *true_nonnull = c->op == KDC_OP_NE;
        return 1;
    }
    return 0;
}

/* A write of the variable at node n: 1 an assignment (*value its value), 2 its
 * address passed to a call (an out-parameter: taken as a non-null object). */
static int writes_var(const kdc_node_t *nd, const char *usr, const kdc_expr_t **value) {
    const kdc_expr_t *e = nd->expr;
    if (nd->kind == KDC_N_ASSIGN && e && e->kind == KDC_E_BINARY && e->nkids == 2 &&
        is_var_ref(e->kids[0], usr)) {
        *value = e->op == KDC_OP_ASSIGN ? e->kids[1] : NULL;
        return 1;
    }
    if (nd->kind == KDC_N_CALL && e)
        for (unsigned i = 0; i < e->nkids; i++) {
            const kdc_expr_t *a = kdc_expr_strip(e->kids[i]);
            if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1 &&
                is_var_ref(a->kids[0], usr))
                return 2;
            if (is_var_ref(a, usr) && e->str && (strstr(e->str, "*&") || strstr(e->str, "* &")))
                return 2; /* a C++ reference-to-pointer parameter */
        }
    return 0;
}

/* Is variable v (a local or parameter of f, in instance ctx) null or false
 * when `call` runs: over the paths to it, the value of the last write of it
 * (an out-parameter call gives an object), or what the caller passed for a
 * parameter no write precedes, a test of it on the way (`if (!conf)
 * conf_init(&conf);`) saying which? */
static truth_t var_truth_at(kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                            const kdc_expr_t *call, const kdc_expr_t *v, int depth) {
    const kdc_cfg_t *g = f->cfg;
    int at = g ? kdc_cfg_node_of_call(g, call) : -1;
    if (at < 0)
        return TRUTH_UNKNOWN;
    /* (node, state): 0 as on entry, 1 known non-null, 2 known null */
    unsigned char *seen = calloc((size_t)g->n * 3, 1);
    int *queue = malloc((size_t)g->n * 3 * 2 * sizeof *queue);
    if (!seen || !queue)
        kdc_oom();
    size_t head = 0, tail = 0;
    int got_true = 0, got_false = 0, got_unknown = 0;
    queue[tail++] = g->entry;
    queue[tail++] = 0;
    seen[(size_t)g->entry * 3] = 1;
    while (head < tail && !got_unknown) {
        int n = queue[head++], st = queue[head++];
        const kdc_node_t *nd = &g->nodes[n];
        if (n == at) {
            truth_t r = st == 1 ? TRUTH_TRUE
                        : st == 2 ? TRUTH_FALSE
                        : v->ref == KDC_REF_PARAM && v->param_index >= 0
                            ? param_truth(t, ctx, v->param_index, depth + 1)
                            : TRUTH_UNKNOWN;
            got_true |= r == TRUTH_TRUE;
            got_false |= r == TRUTH_FALSE;
            got_unknown |= r == TRUTH_UNKNOWN;
            continue;
        }
        const kdc_expr_t *value = NULL;
        int w = n == g->entry ? 0 : writes_var(nd, v->usr, &value);
        if (w == 2)
            st = 1;
        else if (w == 1) {
            truth_t r = value ? arg_truth(t, f, ctx, NULL, value, depth + 1) : TRUTH_UNKNOWN;
            st = r == TRUTH_TRUE ? 1 : r == TRUTH_FALSE ? 2 : 3;
        }
        int nonnull_true = 0, test = nd->kind == KDC_N_COND && tests_var(nd->expr, v->usr, &nonnull_true);
        for (unsigned i = 0; i < nd->nsucc; i++) {
            int m = nd->succ[i], ns = st;
            if (ns == 3) { /* a value that cannot be told: any path through it */
                got_unknown |= kdc_cfg_reaches_avoiding(g, n, at, NULL, NULL) || n == at;
                break;
            }
            if (test)
                ns = ((i == 0) == nonnull_true) ? 1 : 2;
            if (seen[(size_t)m * 3 + (size_t)ns])
                continue;
            seen[(size_t)m * 3 + (size_t)ns] = 1;
            queue[tail++] = m;
            queue[tail++] = ns;
        }
    }
    free(seen);
    free(queue);
    if (got_unknown || (got_true && got_false) || (!got_true && !got_false))
        return TRUTH_UNKNOWN;
    return got_true ? TRUTH_TRUE : TRUTH_FALSE;
}

/* Is the argument a (in f, instance ctx; evaluated at `call` when known) null
 * or false, non-null or true, or cannot that be told? */
static truth_t arg_truth(kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                         const kdc_expr_t *call, const kdc_expr_t *a, int depth) {
    a = kdc_expr_strip(a);
    if (!a || depth > KDC_MAX_CHAIN)
        return TRUTH_UNKNOWN;
    if (kdc_expr_is_null(a))
        return TRUTH_FALSE;
    if (a->has_ival)
        return a->ival ? TRUTH_TRUE : TRUTH_FALSE;
    if ((a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR) || a->kind == KDC_E_STRING)
        return TRUTH_TRUE;
    if (a->kind == KDC_E_CALL) {
        const kdc_api_t *api = kdc_api_lookup(a);
        return api && (api->roles & (KDC_API_CONF_NEW | KDC_API_CONF_DUP)) ? TRUTH_TRUE
                                                                          : TRUTH_UNKNOWN;
    }
    if (a->kind != KDC_E_REF || !a->usr || !call ||
        (a->ref != KDC_REF_PARAM && a->ref != KDC_REF_LOCAL))
        return TRUTH_UNKNOWN;
    return var_truth_at(t, f, ctx, call, a, depth);
}

/* The parameter idx of the factory instance ctx, as the call selecting it passes it. */
static truth_t param_truth(kdc_pts_t *t, const char *ctx, int idx, int depth) {
    const instance_t *in = instance_of(t, ctx);
    const kdc_expr_t *a = in ? kdc_call_arg(in->call, (unsigned)idx) : NULL;
    return a ? arg_truth(t, in->caller, in->caller_ctx, in->call, a, depth) : TRUTH_UNKNOWN;
}

/* What a condition testing one parameter (`p`, `!p`, `p == NULL`, `p != NULL`)
 * is in the instance being analysed. */
static truth_t cond_truth_in(kdc_pts_t *t, const char *ctx, const kdc_expr_t *c) {
    c = kdc_expr_strip(c);
    if (!c || !ctx)
        return TRUTH_UNKNOWN;
    int negate = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        negate = !negate;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (c && c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2) {
        const kdc_expr_t *other = kdc_expr_is_null(c->kids[1]) ? c->kids[0]
                                  : kdc_expr_is_null(c->kids[0]) ? c->kids[1]
                                                                 : NULL;
        if (!other)
            return TRUTH_UNKNOWN;
        negate ^= c->op == KDC_OP_EQ;
        c = kdc_expr_strip(other);
    }
    if (!c || c->kind != KDC_E_REF || c->ref != KDC_REF_PARAM || c->param_index < 0)
        return TRUTH_UNKNOWN;
    truth_t v = param_truth(t, ctx, c->param_index, 0);
    if (v == TRUTH_UNKNOWN || !negate)
        return v;
    return v == TRUTH_TRUE ? TRUTH_FALSE : TRUTH_TRUE;
}

static truth_t cond_truth(kdc_pts_t *t, const kdc_expr_t *c) { return cond_truth_in(t, t->ctx, c); }

/* Constraints of a statement; in a factory instance, a branch its arguments
 * rule out (`if (!conf) conf = default_conf();` when the caller passes one) is
 * left out. */
static void gen_stmt(kdc_pts_t *t, const kdc_stmt_t *s) {
    if (!s)
        return;
    kdc_expr_walk(s->expr, gen_expr, t);
    kdc_expr_walk(s->inc, gen_expr, t);
    if (s->kind == KDC_S_RETURN && s->expr)
        flow(t, ret_key(t, t->cur, t->ctx), s->expr);
    gen_stmt(t, s->init);
    truth_t c = s->kind == KDC_S_IF ? cond_truth(t, s->expr) : TRUTH_UNKNOWN;
    if (c != TRUTH_FALSE)
        gen_stmt(t, s->body);
    if (c != TRUTH_TRUE)
        gen_stmt(t, s->els);
    for (unsigned i = 0; i < s->nkids; i++)
        gen_stmt(t, s->kids[i]);
}

/* ---------- solving ---------- */

static void solve(kdc_pts_t *t) {
    if (t->pts) {
        for (size_t i = 0; i < t->nlocs_solved; i++)
            kdc_bits_free(&t->pts[i]);
        free(t->pts);
    }
    t->pts = calloc(t->nlocs ? t->nlocs : 1, sizeof *t->pts);
    if (!t->pts)
        kdc_oom();
    for (size_t i = 0; i < t->nlocs; i++)
        kdc_bits_init(&t->pts[i], t->objs.n);
    for (size_t i = 0; i < t->allocs.n; i++)
        kdc_bits_set(&t->pts[t->allocs.v[i].dst], (size_t)t->allocs.v[i].obj);
    t->nlocs_solved = t->nlocs;

    /* Worklist: a location's set flows along its copy edges again only when it
     * grew. (Sweeping every copy until nothing changes costs a sweep per step of
     * the longest chain against the sweep order: quadratic on long call chains.) */
    size_t n = t->nlocs, m = t->copies.n;
    if (!n || !m)
        return;
    size_t *first = calloc(n + 1, sizeof *first); /* copies from src: dst[first[src]..first[src+1]) */
    int *dst = malloc(m * sizeof *dst);
    size_t *fill = malloc(n * sizeof *fill), *queue = malloc(n * sizeof *queue);
    unsigned char *queued = malloc(n);
    if (!first || !dst || !fill || !queue || !queued)
        kdc_oom();
    for (size_t i = 0; i < m; i++)
        first[t->copies.v[i].src + 1]++;
    for (size_t i = 0; i < n; i++)
        first[i + 1] += first[i];
    memcpy(fill, first, n * sizeof *fill);
    for (size_t i = 0; i < m; i++)
        dst[fill[t->copies.v[i].src]++] = t->copies.v[i].dst;
    for (size_t i = 0; i < n; i++) {
        queue[i] = i;
        queued[i] = 1;
    }
    /* A ring of n slots: a location is queued at most once at a time. */
    for (size_t head = 0, len = n; len; len--, head = (head + 1) % n) {
        size_t src = queue[head];
        queued[src] = 0;
        for (size_t k = first[src]; k < first[src + 1]; k++) {
            size_t d = (size_t)dst[k];
            if (kdc_bits_or(&t->pts[d], &t->pts[src]) && !queued[d]) {
                queue[(head + len) % n] = d;
                queued[d] = 1;
                len++;
            }
        }
    }
    free(first);
    free(dst);
    free(fill);
    free(queue);
    free(queued);
}

static int is_callback_registration(const kdc_expr_t *call) {
    size_t n = strlen(call->name);
    return call->nkids == 2 && !call->is_method && !strncmp(call->name, "rd_kafka_conf_set_", 18) &&
           n > 21 && !strcmp(call->name + n - 3, "_cb");
}

static void eval(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *e, kdc_bits_t *out);
static void eval_ctx(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx, const kdc_expr_t *e,
                     kdc_bits_t *out);

/* C++: conf->set("rebalance_cb", obj, errstr) registers obj's
 * rebalance_cb(KafkaConsumer *, ..) override. The class is the value's static
 * type when it names one; through a RdKafka::RebalanceCb pointer, every
 * override of the program. Returns how many, at most max. */
static size_t cxx_rebalance_methods(const kdc_pts_t *t, const kdc_expr_t *call, kdc_func_t **out,
                                    size_t max) {
    if (!call->is_method || !call->name || strcmp(call->name, "RdKafka::Conf::set") ||
        call->nkids < 2)
        return 0;
    const kdc_expr_t *k = kdc_expr_strip(call->kids[0]);
    for (int d = 0; k && k->kind == KDC_E_CALL && k->is_ctor && k->nkids >= 1 && d < 4; d++)
        k = kdc_expr_strip(k->kids[0]); /* the std::string the literal becomes */
    if (!k || k->kind != KDC_E_STRING || strcmp(k->str, "rebalance_cb"))
        return 0;
    const char *type = call->kids[1]->type;
    char cls[256] = "";
    if (type) {
        size_t a = strncmp(type, "const ", 6) ? 0 : 6, b = strcspn(type + a, " *&");
        if (b < sizeof cls - 16)
            snprintf(cls, sizeof cls, "%.*s::rebalance_cb", (int)b, type + a);
    }
    int any = !cls[0] || !strcmp(cls, "RdKafka::RebalanceCb::rebalance_cb");
    size_t n = 0, nf = kdc_program_nfuncs(t->p);
    for (size_t i = 0; i < nf && n < max; i++) {
        kdc_func_t *f = kdc_program_func(t->p, i);
        size_t len = f->name ? strlen(f->name) : 0;
        if (!f->class_usr || f->nparams < 1 || len < 14 ||
            strcmp(f->name + len - 14, "::rebalance_cb") ||
            !(any ? 1 : !strcmp(f->name, cls)) ||
            !(f->param_types[0] && strstr(f->param_types[0], "KafkaConsumer")))
            continue;
        out[n++] = f;
    }
    return n;
}

/* One registration in one instance of its function (ctx; NULL: the only
 * one): a helper registering the callback its caller passes binds each
 * caller's callback to that caller's clients only. */
static void bind_callback_registration_in(kdc_pts_t *t, const kdc_expr_t *call, const char *ctx) {
    kdc_bits_t confs, cbs;
    kdc_bits_init(&confs, t->objs.n);
    kdc_bits_init(&cbs, t->objs.n);
    kdc_func_t *methods[16];
    size_t nmethods = cxx_rebalance_methods(t, call, methods, 16);
    eval_ctx(t, t->cur, ctx, nmethods ? call->recv : call->kids[0], &confs);
    if (!nmethods)
        eval_ctx(t, t->cur, ctx, call->kids[1], &cbs);
    size_t nobjs = t->objs.n;
    for (size_t k = 0; k < (nmethods ? nmethods : nobjs); k++) {
        kdc_func_t *cb;
        if (nmethods) {
            cb = methods[k];
        } else {
            if (!kdc_bits_get(&cbs, k) || t->objs.v[k].kind != KDC_OBJ_FUNC)
                continue;
            cb = kdc_program_find_func(t->p, t->objs.v[k].str);
        }
        if (!cb || !cb->nparams)
            continue;
        count_caller(t, cb);
        int bound = 0;
        for (size_t o = 0; o < nobjs; o++) {
            const kdc_obj_t *client = &t->objs.v[o];
            if (client->kind != KDC_OBJ_CLIENT)
                continue;
            const kdc_api_t *api = kdc_api_lookup(client->site);
            kdc_bits_t cc;
            kdc_bits_init(&cc, nobjs);
            eval_ctx(t, client->func, client->ctx, kdc_api_arg(client->site, api->conf), &cc);
            int shared = 0;
            for (size_t w = 0; cc.w && confs.w && w < cc.nwords; w++)
                shared |= (cc.w[w] & confs.w[w]) != 0;
            kdc_bits_free(&cc);
            if (shared) {
                alloc_t a = {loc_for(t, cb->param_usrs[0]), (int)o};
                KDC_VEC_PUSH(t->allocs, a);
                bound = 1;
            }
        }
        for (unsigned pi = bound ? 1 : 0; pi < cb->nparams; pi++) {
            alloc_t a = {loc_for(t, cb->param_usrs[pi]), 0};
            KDC_VEC_PUSH(t->allocs, a);
        }
    }
    kdc_bits_free(&confs);
    kdc_bits_free(&cbs);
}

static void bind_callback_registration(kdc_pts_t *t, const kdc_expr_t *call) {
    kdc_func_t *m[1];
    if (!is_callback_registration(call) && !cxx_rebalance_methods(t, call, m, 1))
        return;
    const instance_vec_t *inst = factory_instances(t, t->cur);
    for (size_t i = 0; i < (inst ? inst->n : 1); i++)
        bind_callback_registration_in(t, call, inst ? inst->v[i].ctx : NULL);
}

kdc_pts_t *kdc_pts_build(kdc_program_t *p) {
    kdc_pts_t *t = calloc(1, sizeof *t);
    if (!t)
        kdc_oom();
    t->p = p;
    kdc_strmap_init(&t->obj_by_site);
    kdc_strmap_init(&t->loc_index);
    kdc_strmap_init(&t->ncallers);
    kdc_strmap_init(&t->factories);
    kdc_strmap_init(&t->instances);
    kdc_strmap_init(&t->base);
    obj_for(t, KDC_OBJ_UNKNOWN, NULL, NULL, NULL, NULL); /* index 0 */

    choose_factories(t);
    size_t nf = kdc_program_nfuncs(p);
    for (size_t i = 0; i < nf; i++) {
        t->cur = kdc_program_func(p, i);
        const instance_vec_t *inst = factory_instances(t, t->cur);
        for (size_t k = 0; k < (inst ? inst->n : 1); k++) {
            t->ctx = inst ? inst->v[k].ctx : NULL;
            gen_stmt(t, t->cur->body);
        }
    }
    t->cur = NULL;
    t->ctx = NULL;
    for (size_t i = 0; i < kdc_program_nglobal_inits(p); i++) {
        const kdc_global_init_t *g = kdc_program_global_init(p, i);
        flow(t, g->usr, g->init);
    }
    solve(t);

    /* Indirect calls, now that function pointers are known. */
    for (size_t i = 0; i < nf; i++) {
        t->cur = kdc_program_func(p, i);
        const instance_vec_t *inst = factory_instances(t, t->cur);
        for (unsigned c = 0; c < t->cur->ncalls; c++) {
            const kdc_expr_t *call = t->cur->calls[c];
            if (!call->callee_expr)
                continue;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(t, t->cur, call, &callees);
            for (size_t j = 0; j < (inst ? inst->n : 1); j++) {
                t->ctx = inst ? inst->v[j].ctx : NULL;
                for (size_t k = 0; k < callees.n; k++)
                    bind_args(t, call, callees.v[k]);
            }
            t->ctx = NULL;
            free(callees.v);
        }
    }
    /* librdkafka calls the callbacks a configuration registers with the client
     * created from it as first argument: bind it, the rest comes from outside. */
    for (size_t i = 0; i < nf; i++) {
        t->cur = kdc_program_func(p, i);
        for (unsigned c = 0; c < t->cur->ncalls; c++)
            bind_callback_registration(t, t->cur->calls[c]);
    }
    /* Parameters of functions nobody in the analysed code calls come from outside. */
    for (size_t i = 0; i < nf; i++) {
        kdc_func_t *f = kdc_program_func(p, i);
        if (kdc_pts_ncallers(t, f))
            continue;
        for (unsigned k = 0; k < f->nparams; k++) {
            alloc_t a = {loc_for(t, f->param_usrs[k]), 0};
            KDC_VEC_PUSH(t->allocs, a);
        }
    }
    t->cur = NULL;
    solve(t);
    t->frozen = 1;
    return t;
}

void kdc_pts_free(kdc_pts_t *t) {
    if (!t)
        return;
    for (size_t i = 0; t->pts && i < t->nlocs_solved; i++)
        kdc_bits_free(&t->pts[i]);
    free(t->pts);
    free(t->objs.v);
    free(t->copies.v);
    free(t->allocs.v);
    kdc_strmap_free(&t->obj_by_site);
    kdc_strmap_free(&t->loc_index);
    kdc_strmap_free(&t->ncallers);
    for (size_t i = 0; i < kdc_program_nfuncs(t->p); i++) {
        instance_vec_t *v = kdc_strmap_get(&t->factories, kdc_program_func(t->p, i)->id);
        if (v) {
            free(v->v);
            free(v);
        }
    }
    kdc_strmap_free(&t->factories);
    kdc_strmap_free(&t->instances);
    kdc_strmap_free(&t->base);
    free(t->pairs);
    for (size_t i = 0; t->callees.keys && i < t->callees.cap; i++)
        if (t->callees.keys[i])
            free(t->callees.vals[i]);
    kdc_strmap_free(&t->callees);
    free(t);
}

size_t kdc_pts_nobjs(const kdc_pts_t *t) { return t->objs.n; }
const kdc_obj_t *kdc_pts_obj(const kdc_pts_t *t, size_t i) { return &t->objs.v[i]; }

unsigned kdc_pts_ncallers(const kdc_pts_t *t, const kdc_func_t *f) {
    return (unsigned)(uintptr_t)kdc_strmap_get(&t->ncallers, f->id);
}

/* Evaluate sources without creating anything new (queries run after solving),
 * in one instance of f (ctx) or, for a factory with ctx NULL, in all of them. */
static void eval_one(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx, const kdc_expr_t *e,
                     kdc_bits_t *out) {
    kdc_pts_t *mt = (kdc_pts_t *)t;
    const kdc_func_t *saved = mt->cur;
    const char *saved_ctx = mt->ctx;
    mt->cur = f;
    mt->ctx = ctx;
    size_t nobjs_before = t->objs.n;
    srcvec_t v = {0};
    srcs(mt, e, &v);
    for (size_t i = 0; i < v.n; i++) {
        if (v.v[i].is_obj) {
            if ((size_t)v.v[i].idx < nobjs_before)
                kdc_bits_set(out, (size_t)v.v[i].idx);
        } else if ((size_t)v.v[i].idx < t->nlocs_solved && t->pts) {
            const kdc_bits_t *b = &t->pts[v.v[i].idx];
            if (b->w && !kdc_bits_empty(b))
                kdc_bits_alloc(out);
            for (size_t w = 0; b->w && w < b->nwords && w < out->nwords; w++)
                out->w[w] |= b->w[w];
        }
    }
    free(v.v);
    mt->cur = saved;
    mt->ctx = saved_ctx;
}

static void eval_ctx(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx, const kdc_expr_t *e,
                     kdc_bits_t *out) {
    eval_one(t, f, ctx, e, out); /* ctx NULL in a factory: the locations of all instances */
}

static void eval(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *e, kdc_bits_t *out) {
    eval_ctx(t, f, NULL, e, out);
}

void kdc_pts_expr(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *e, kdc_bits_t *out) {
    kdc_bits_init(out, t->objs.n);
    eval(t, f, e, out);
}

void kdc_pts_expr_ctx(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                      const kdc_expr_t *e, kdc_bits_t *out) {
    kdc_bits_init(out, t->objs.n);
    eval_ctx(t, f, ctx, e, out);
}

void kdc_pts_expr_at(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                     const kdc_expr_t *call, const kdc_expr_t *e, kdc_bits_t *out) {
    const kdc_expr_t *vals[8];
    int n = call ? reaching_values(t, f, call, e, vals, 8) : 0;
    kdc_bits_init(out, t->objs.n);
    if (!n) {
        eval_ctx(t, f, ctx, e, out);
        return;
    }
    for (int k = 0; k < n; k++)
        eval_ctx(t, f, ctx, vals[k], out);
}

const char *kdc_pts_context_of_call(const kdc_pts_t *t, const kdc_func_t *f,
                                    const char *caller_ctx, const kdc_expr_t *call) {
    return select_instance((kdc_pts_t *)t, f, caller_ctx, call);
}

const kdc_expr_t *kdc_pts_instance_call(const kdc_pts_t *t, const char *ctx,
                                        const kdc_func_t **caller, const char **caller_ctx) {
    const instance_t *in = instance_of(t, ctx);
    if (!in)
        return NULL;
    *caller = in->caller;
    *caller_ctx = in->caller_ctx;
    return in->call;
}

const kdc_expr_t *kdc_pts_instance_arg(const kdc_pts_t *t, const char *ctx, unsigned idx,
                                       const kdc_func_t **caller, const char **caller_ctx) {
    const kdc_expr_t *call = kdc_pts_instance_call(t, ctx, caller, caller_ctx);
    return call ? kdc_call_arg(call, idx) : NULL;
}

int kdc_pts_is_factory(const kdc_pts_t *t, const kdc_func_t *f) {
    return factory_instances(t, f) != NULL;
}

void kdc_pts_callees(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *call,
                     kdc_funcvec_t *out) {
    if (!call->callee_expr) {
        kdc_func_t *callee = kdc_program_find_callee(t->p, call->usr, f ? f->tu : -1);
        if (callee)
            KDC_VEC_PUSH(*out, callee);
        return;
    }
    if (!t->pts)
        return;
    /* Once solved, an indirect call's callees never change: the rules ask for the same
     * calls again and again, so the answer is kept (the structure, not the solution). */
    kdc_pts_t *mt = (kdc_pts_t *)t;
    const callees_t *known =
        t->frozen && t->callees.keys ? kdc_strmap_get(&t->callees, (const char *)call) : NULL;
    if (known && known->f == f) {
        for (size_t i = 0; i < known->n; i++)
            KDC_VEC_PUSH(*out, known->v[i]);
        return;
    }
    size_t before = out->n;
    kdc_bits_t b;
    kdc_bits_init(&b, t->objs.n);
    eval(t, f, call->callee_expr, &b);
    for (size_t w = 0; b.w && w < b.nwords; w++)
        for (uint64_t bits = b.w[w]; bits; bits &= bits - 1) {
            size_t i = w * 64 + (size_t)__builtin_ctzll(bits);
            if (i >= t->objs.n || t->objs.v[i].kind != KDC_OBJ_FUNC)
                continue;
            kdc_func_t *callee = kdc_program_find_func(t->p, t->objs.v[i].str);
            if (callee)
                KDC_VEC_PUSH(*out, callee);
        }
    kdc_bits_free(&b);
    if (t->frozen && !known) {
        if (!mt->callees.keys)
            kdc_strmap_init(&mt->callees);
        size_t n = out->n - before;
        callees_t *c = malloc(sizeof *c + n * sizeof c->v[0]);
        if (!c)
            kdc_oom();
        c->f = f;
        c->n = n;
        if (n)
            memcpy(c->v, out->v + before, n * sizeof c->v[0]);
        kdc_strmap_put(&mt->callees, (const char *)call, c);
    }
}
