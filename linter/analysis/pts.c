/* Handle tracking: a whole-program inclusion analysis (see pts.h). */
#include "pts.h"
#include "api.h"

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
    kdc_strmap_t factories;   /* function id → callsite_vec_t*: analysed once per call site */
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

typedef KDC_VEC(const kdc_expr_t *) callsite_vec_t;

/* ---------- objects and locations ---------- */

static int obj_for(kdc_pts_t *t, kdc_obj_kind_t kind, const void *key, const kdc_func_t *f,
                   const kdc_expr_t *site, const char *str);

/* ---------- factory instances ---------- */

static const char *ctx_of_site(kdc_pts_t *t, const kdc_expr_t *call) {
    char buf[64];
    snprintf(buf, sizeof buf, "#%p", (const void *)call);
    return kdc_intern(t->p, buf);
}

static const callsite_vec_t *factory_sites(const kdc_pts_t *t, const kdc_func_t *f) {
    return f ? kdc_strmap_get(&t->factories, f->id) : NULL;
}

/* The instance of callee a call selects (NULL when callee is not a factory). */
static const char *callee_ctx(kdc_pts_t *t, const kdc_func_t *callee, const kdc_expr_t *call) {
    return factory_sites(t, callee) ? ctx_of_site(t, call) : NULL;
}

static const char *with_ctx(kdc_pts_t *t, const char *key, const char *ctx) {
    if (!key || !ctx)
        return key;
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", key, ctx);
    return kdc_intern(t->p, buf);
}

static int has_alloc_site(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (api && (api->roles & (KDC_API_CONF_NEW | KDC_API_CLIENT_NEW | KDC_API_TOPIC_NEW)))
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

/* Factories: functions with an allocation site, called directly from 2 to 16
 * places, never through a pointer. */
static void choose_factories(kdc_pts_t *t) {
    size_t nf = kdc_program_nfuncs(t->p);
    kdc_strmap_t taken;
    kdc_strmap_init(&taken);
    for (size_t i = 0; i < nf; i++)
        kdc_func_walk_exprs(kdc_program_func(t->p, i), note_address_taken, &taken);
    kdc_strmap_t sites;
    kdc_strmap_init(&sites);
    KDC_VEC(callsite_vec_t *) all = {0};
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(t->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (call->callee_expr)
                continue;
            const kdc_func_t *callee = kdc_program_find_callee(t->p, call->usr, f->tu);
            if (!callee || kdc_strmap_get(&taken, callee->usr) || !has_alloc_site(callee))
                continue;
            callsite_vec_t *v = kdc_strmap_get(&sites, callee->id);
            if (!v) {
                v = calloc(1, sizeof *v);
                if (!v)
                    kdc_oom();
                kdc_strmap_put(&sites, callee->id, v);
                KDC_VEC_PUSH(all, v);
            }
            KDC_VEC_PUSH(*v, call);
        }
    }
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(t->p, i);
        callsite_vec_t *v = kdc_strmap_get(&sites, f->id);
        if (v && v->n >= 2 && v->n <= 16)
            kdc_strmap_put(&t->factories, f->id, v);
    }
    /* the vectors of functions that did not qualify are dropped */
    for (size_t i = 0; i < all.n; i++) {
        int kept = 0;
        for (size_t k = 0; k < nf && !kept; k++)
            kept = kdc_strmap_get(&t->factories, kdc_program_func(t->p, k)->id) == all.v[i];
        if (!kept) {
            free(all.v[i]->v);
            free(all.v[i]);
        }
    }
    free(all.v);
    kdc_strmap_free(&sites);
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
        o.ctx = t->ctx;
        const callsite_vec_t *v = factory_sites(t, f);
        for (size_t i = 0; v && i < v->n; i++)
            if (ctx_of_site(t, v->v[i]) == t->ctx)
                o.via = v->v[i];
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
    return idx;
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
    return with_ctx(t, prefixed(t->p, "R:", f->id), ctx);
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
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1) {
        const char *k = lkey(t, e->kids[0]);
        return k ? prefixed(t->p, "D:", k) : NULL;
    }
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

static void call_srcs(kdc_pts_t *t, const kdc_expr_t *e, srcvec_t *out) {
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api) {
        if (api->roles & KDC_API_CONF_NEW)
            push_obj(obj_for(t, KDC_OBJ_CONF, site_key(t, e), t->cur, e, NULL), out);
        else if (api->roles & KDC_API_CLIENT_NEW)
            push_obj(obj_for(t, KDC_OBJ_CLIENT, site_key(t, e), t->cur, e, NULL), out);
        else if (api->roles & KDC_API_TOPIC_NEW)
            push_obj(obj_for(t, KDC_OBJ_TOPIC, site_key(t, e), t->cur, e, NULL), out);
        else if (api->roles & KDC_API_CONF_DUP)
            srcs(t, kdc_api_arg(e, api->conf), out);
        else
            push_obj(0, out);
        return;
    }
    kdc_func_t *f = kdc_program_find_callee(t->p, e->usr, t->cur ? t->cur->tu : -1);
    if (f) {
        const callsite_vec_t *sites = factory_sites(t, f);
        if (sites && t->frozen && !kdc_strmap_get(&t->loc_index, ret_key(t, f, callee_ctx(t, f, e))))
            for (size_t i = 0; i < sites->n; i++) /* a query outside the call's own instance */
                push_loc(t, ret_key(t, f, ctx_of_site(t, sites->v[i])), out);
        else
            push_loc(t, ret_key(t, f, callee_ctx(t, f, e)), out);
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
    case KDC_E_CALL:
        call_srcs(t, e, out);
        return;
    case KDC_E_UNARY:
        if (e->op == KDC_OP_DEREF || e->op == KDC_OP_UNKNOWN)
            push_loc(t, lkey(t, e), out);
        if (e->op == KDC_OP_ADDR && e->nkids == 1) {
            const kdc_expr_t *k = kdc_expr_strip(e->kids[0]);
            if (k && k->kind == KDC_E_REF && k->ref == KDC_REF_FUNCTION)
                srcs(t, k, out);
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

static void bind_args(kdc_pts_t *t, const kdc_expr_t *call, const kdc_func_t *callee) {
    count_caller(t, callee);
    const char *cctx = callee_ctx(t, callee, call);
    for (unsigned i = 0; i < call->nkids && i < callee->nparams; i++) {
        const char *param = with_ctx(t, callee->param_usrs[i], cctx);
        flow(t, param, call->kids[i]);
        const kdc_expr_t *a = kdc_expr_strip(call->kids[i]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1) {
            const char *k = lkey(t, a->kids[0]);
            if (k)
                flow_both(t, prefixed(t->p, "D:", param), k);
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

static void gen_returns(const kdc_stmt_t *s, void *arg) {
    kdc_pts_t *t = arg;
    if (s->kind == KDC_S_RETURN && s->expr)
        flow(t, ret_key(t, t->cur, t->ctx), s->expr);
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

static void bind_callback_registration(kdc_pts_t *t, const kdc_expr_t *call) {
    if (!is_callback_registration(call))
        return;
    kdc_bits_t confs, cbs;
    kdc_bits_init(&confs, t->objs.n);
    kdc_bits_init(&cbs, t->objs.n);
    eval(t, t->cur, call->kids[0], &confs);
    eval(t, t->cur, call->kids[1], &cbs);
    size_t nobjs = t->objs.n;
    for (size_t k = 0; k < nobjs; k++) {
        if (!kdc_bits_get(&cbs, k) || t->objs.v[k].kind != KDC_OBJ_FUNC)
            continue;
        kdc_func_t *cb = kdc_program_find_func(t->p, t->objs.v[k].str);
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

kdc_pts_t *kdc_pts_build(kdc_program_t *p) {
    kdc_pts_t *t = calloc(1, sizeof *t);
    if (!t)
        kdc_oom();
    t->p = p;
    kdc_strmap_init(&t->obj_by_site);
    kdc_strmap_init(&t->loc_index);
    kdc_strmap_init(&t->ncallers);
    kdc_strmap_init(&t->factories);
    obj_for(t, KDC_OBJ_UNKNOWN, NULL, NULL, NULL, NULL); /* index 0 */

    choose_factories(t);
    size_t nf = kdc_program_nfuncs(p);
    for (size_t i = 0; i < nf; i++) {
        t->cur = kdc_program_func(p, i);
        const callsite_vec_t *sites = factory_sites(t, t->cur);
        for (size_t k = 0; k < (sites ? sites->n : 1); k++) {
            t->ctx = sites ? ctx_of_site(t, sites->v[k]) : NULL;
            kdc_func_walk_exprs(t->cur, gen_expr, t);
            kdc_stmt_walk(t->cur->body, gen_returns, t);
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
        for (unsigned c = 0; c < t->cur->ncalls; c++) {
            const kdc_expr_t *call = t->cur->calls[c];
            if (!call->callee_expr)
                continue;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(t, t->cur, call, &callees);
            for (size_t k = 0; k < callees.n; k++)
                bind_args(t, call, callees.v[k]);
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
        callsite_vec_t *v = kdc_strmap_get(&t->factories, kdc_program_func(t->p, i)->id);
        if (v) {
            free(v->v);
            free(v);
        }
    }
    kdc_strmap_free(&t->factories);
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
    const callsite_vec_t *sites = factory_sites(t, f);
    if (ctx || !sites) {
        eval_one(t, f, ctx, e, out);
        return;
    }
    for (size_t i = 0; i < sites->n; i++)
        eval_one(t, f, ctx_of_site((kdc_pts_t *)t, sites->v[i]), e, out);
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

const char *kdc_pts_context_of_call(const kdc_pts_t *t, const kdc_func_t *f,
                                    const kdc_expr_t *call) {
    const callsite_vec_t *sites = factory_sites(t, f);
    for (size_t i = 0; sites && i < sites->n; i++)
        if (sites->v[i] == call)
            return ctx_of_site((kdc_pts_t *)t, call);
    return NULL;
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
