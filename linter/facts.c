#define _GNU_SOURCE
/* Program-wide facts (see facts.h). */
#include "facts.h"
#include "api.h"
#include "util.h"

#include <ctype.h>
#include <fnmatch.h>
#include <string.h>

const char *const kdc_default_dlq_topic_patterns[] = {"*dlq*", "*.DLT", "*dead*letter*",
                                                      "*.deadletter", NULL};
const char *const kdc_default_dlq_name_patterns[] = {"*dlq*", "*dead*letter*", NULL};

typedef struct setting {
    const char *key;   /* NULL: a property whose name is not a literal */
    const char *value; /* NULL: not a literal */
    int conditional;   /* the call is not on every path through its function */
} setting_t;

typedef struct objinfo {
    /* CONF */
    unsigned dr : 1, escaped : 1;
    KDC_VEC(setting_t) settings;
    /* CLIENT */
    int type; /* 0 producer, 1 consumer, -1 unknown */
    unsigned null_conf : 1, unknown_conf : 1;
    kdc_bits_t confs;
    /* TOPIC */
    kdc_bits_t clients;
    unsigned unknown_client : 1;
    const kdc_expr_t *name_expr;
    const kdc_func_t *name_func;
} objinfo_t;

struct kdc_facts {
    kdc_program_t *p;
    kdc_options_t opts;
    kdc_pts_t *pts;
    objinfo_t *info;      /* per object */
    kdc_summary_t *sum;   /* per function index */
    kdc_strmap_t dr_state; /* keys written by delivery-report callbacks → (void*)1 */
    kdc_strmap_t dr_funcs; /* id → function, delivery-report callbacks and their callees */
    const kdc_func_t *building; /* function whose CFG is being built */
};

/* ---------- small helpers ---------- */

static int match_any(const char *const *pats, const char *s) {
    if (!s || !*s || !pats)
        return 0;
    for (size_t i = 0; pats[i]; i++)
        if (fnmatch(pats[i], s, FNM_CASEFOLD) == 0)
            return 1;
    return 0;
}

int kdc_options_has_role(const kdc_options_t *o, const kdc_expr_t *call, kdc_role_t role) {
    return call->kind == KDC_E_CALL && match_any(o->functions[role], call->name);
}

static const kdc_func_t *callee_func(const kdc_facts_t *fx, const kdc_func_t *caller,
                                     const kdc_expr_t *call) {
    return kdc_program_find_callee(fx->p, call->usr, caller ? caller->tu : -1);
}

static const kdc_summary_t *callee_summary(const kdc_facts_t *fx, const kdc_func_t *f,
                                           const kdc_expr_t *call, kdc_summary_t *merged) {
    /* Direct callee, or the union over function-pointer targets. */
    memset(merged, 0, sizeof *merged);
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(fx->pts, f, call, &callees);
    if (!callees.n) {
        free(callees.v);
        return NULL;
    }
    merged->confirms = 1;
    merged->noreturn = 1;
    for (size_t i = 0; i < callees.n; i++) {
        const kdc_summary_t *s = &fx->sum[callees.v[i]->index];
        merged->commits |= s->commits;
        merged->serves_dr |= s->serves_dr;
        merged->confirms &= s->confirms;
        merged->noreturn &= s->noreturn;
        merged->pending_produce |= s->pending_produce;
        if (s->pending_dlq && !merged->pending_dlq) {
            merged->pending_func = s->pending_func;
            merged->pending_site = s->pending_site;
        }
        merged->pending_dlq |= s->pending_dlq;
        if (s->pending_produce && !merged->pending_site) {
            merged->pending_func = s->pending_func;
            merged->pending_site = s->pending_site;
        }
    }
    free(callees.v);
    return merged;
}

/* What a call does, from the API table or the callee's summary. */
typedef struct call_effects {
    unsigned produces : 1;  /* enqueues a message (or returns with one unconfirmed) */
    unsigned commits : 1;   /* commits or stores offsets */
    unsigned serves_dr : 1; /* serves delivery reports */
    unsigned confirms : 1;  /* waits for delivery reports on every path */
    const kdc_summary_t *callee; /* merged callee summary, when not an API call */
} call_effects_t;

static call_effects_t effects_of(const kdc_facts_t *fx, const kdc_func_t *f,
                                 const kdc_expr_t *call, kdc_summary_t *merged) {
    call_effects_t e = {0};
    const kdc_options_t *o = &fx->opts;
    /* Roles given in the configuration win over what the code shows. */
    e.produces = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_PRODUCE);
    e.commits = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_COMMIT);
    e.confirms = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_CONFIRM);
    if (e.produces || e.commits || e.confirms)
        return e;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api) {
        e.produces = (api->roles & KDC_API_PRODUCE) != 0;
        e.commits = (api->roles & (KDC_API_COMMIT | KDC_API_STORE)) != 0;
        e.serves_dr = (api->roles & KDC_API_SERVE_DR) != 0;
        e.confirms = (api->roles & KDC_API_CONFIRM) != 0;
        return e;
    }
    const kdc_summary_t *s = callee_summary(fx, f, call, merged);
    if (s) {
        e.produces = s->pending_produce;
        e.commits = s->commits;
        e.serves_dr = s->serves_dr;
        e.confirms = s->confirms;
        e.callee = s;
    }
    return e;
}

static const char *lkey(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return kdc_pts_lvalue_key(fx->p, e);
}

/* ---------- configuration, clients, topics ---------- */

static void for_each_obj(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                         kdc_obj_kind_t kind, void (*fn)(kdc_facts_t *, size_t, void *), void *arg,
                         int *unknown) {
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    size_t n = kdc_pts_nobjs(fx->pts), hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (!kdc_bits_get(&b, i))
            continue;
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_UNKNOWN && unknown)
            *unknown = 1;
        if (o->kind == kind) {
            hits++;
            if (fn)
                fn((kdc_facts_t *)fx, i, arg);
        }
    }
    if (!hits && unknown)
        *unknown = 1;
    kdc_bits_free(&b);
}

/* A string literal seen through std::string construction, or NULL. */
static const kdc_expr_t *literal(const kdc_expr_t *e) {
    for (int depth = 0; e && depth < 8; depth++) {
        e = kdc_expr_strip(e);
        if (e->kind == KDC_E_STRING)
            return e;
        if (e->kind == KDC_E_CALL && e->is_ctor && e->callee_system && e->nkids >= 1)
            e = e->kids[0];
        else
            return NULL;
    }
    return NULL;
}

static const char *single_string(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    const kdc_expr_t *s = literal(e);
    if (s)
        return s->str;
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    const char *r = NULL;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        if (!kdc_bits_get(&b, i))
            continue;
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind != KDC_OBJ_STRING || (r && r != o->str)) {
            r = NULL;
            break;
        }
        r = o->str;
    }
    kdc_bits_free(&b);
    return r;
}

typedef struct set_ctx {
    const char *key, *value;
    int dr, conditional;
} set_ctx_t;

static void apply_setting(kdc_facts_t *fx, size_t conf, void *arg) {
    set_ctx_t *c = arg;
    objinfo_t *oi = &fx->info[conf];
    if (c->dr) {
        oi->dr = 1;
        return;
    }
    setting_t s = {c->key, c->value, c->conditional};
    KDC_VEC_PUSH(oi->settings, s);
}

static void mark_escaped(kdc_facts_t *fx, size_t conf, void *arg) {
    (void)arg;
    fx->info[conf].escaped = 1;
}

static void add_dr_func(kdc_facts_t *fx, const kdc_func_t *f) {
    if (f && !kdc_strmap_get(&fx->dr_funcs, f->id))
        kdc_strmap_put(&fx->dr_funcs, f->id, (void *)f);
}

static void collect_dr_callback(kdc_facts_t *fx, size_t obj, void *arg) {
    (void)arg;
    const kdc_obj_t *o = kdc_pts_obj(fx->pts, obj);
    add_dr_func(fx, kdc_program_find_func(fx->p, o->str));
}

static int is_cxx_conf_set_dr(const kdc_expr_t *call, const char *key) {
    return key && !strcmp(key, "dr_cb") && call->is_method;
}

static int failure_edge_of(const kdc_expr_t *cond,
                           int (*is_result)(const kdc_expr_t *side, void *arg), void *arg);

static int is_conf_set_call(const kdc_expr_t *side, void *arg) {
    (void)arg;
    const kdc_api_t *api = kdc_api_lookup(side);
    return api && (api->roles & KDC_API_CONF_SET);
}

typedef struct must_ctx {
    int avoid, found;
} must_ctx_t;

static int must_visit(void *ctx, const kdc_cfg_t *g, int n, int st) {
    must_ctx_t *m = ctx;
    if (n == m->avoid)
        return -1;
    if (n == g->exit)
        m->found = 1;
    return st;
}

static int must_edge(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)ctx;
    (void)st;
    const kdc_node_t *nd = &g->nodes[n];
    return nd->kind != KDC_N_COND || failure_edge_of(nd->expr, is_conf_set_call, NULL) != (int)i;
}

/* Is the property set on every path through f, apart from paths where a
 * property failed to set (the configuration is then abandoned)? */
static int set_on_every_path(const kdc_func_t *f, unsigned call_id) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || g->call_node[call_id] < 0)
        return 0;
    must_ctx_t m = {g->call_node[call_id], 0};
    kdc_search_t s = {must_visit, must_edge, &m, 1};
    kdc_cfg_search(g, g->entry, 0, &s);
    return !m.found;
}

static void scan_config_calls(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (api && (api->roles & KDC_API_CONF_SET)) {
                set_ctx_t sc = {single_string(fx, f, kdc_api_arg(call, api->key)),
                                single_string(fx, f, kdc_api_arg(call, api->value)), 0, 0};
                sc.dr = is_cxx_conf_set_dr(call, sc.key);
                sc.conditional = !set_on_every_path(f, c);
                for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF, apply_setting, &sc,
                             NULL);
            } else if (api && (api->roles & (KDC_API_DR_REGISTER | KDC_API_EVENTS_SET))) {
                const kdc_expr_t *v = kdc_api_arg(call, api->value);
                if ((api->roles & KDC_API_EVENTS_SET) && v && v->has_ival && !(v->ival & 0x1))
                    continue; /* RD_KAFKA_EVENT_DR not among the flags */
                set_ctx_t sc = {NULL, NULL, 1, 0};
                for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF, apply_setting, &sc,
                             NULL);
                if (api->roles & KDC_API_DR_REGISTER)
                    for_each_obj(fx, f, v, KDC_OBJ_FUNC, collect_dr_callback, NULL, NULL);
            } else if (!api && !call->callee_system && !kdc_api_is_librdkafka(call) &&
                       !callee_func(fx, f, call) && !call->callee_expr) {
                /* Handed to code we cannot see: it may register anything. */
                for (unsigned a = 0; a < call->nkids; a++)
                    for_each_obj(fx, f, call->kids[a], KDC_OBJ_CONF, mark_escaped, NULL, NULL);
            }
        }
    }
}

typedef struct conf_ctx {
    kdc_bits_t *confs;
} conf_ctx_t;

static void add_conf(kdc_facts_t *fx, size_t conf, void *arg) {
    (void)fx;
    kdc_bits_set(((conf_ctx_t *)arg)->confs, conf);
}

static void add_client(kdc_facts_t *fx, size_t client, void *arg) {
    (void)fx;
    kdc_bits_set((kdc_bits_t *)arg, client);
}

static void describe_objects(kdc_facts_t *fx) {
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        objinfo_t *oi = &fx->info[i];
        kdc_bits_init(&oi->confs, n);
        kdc_bits_init(&oi->clients, n);
        oi->type = -1;
        if (o->kind == KDC_OBJ_CLIENT) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            if (api->client_type == KDC_CLIENT_PRODUCER_FIXED)
                oi->type = 0;
            else if (api->client_type == KDC_CLIENT_CONSUMER_FIXED)
                oi->type = 1;
            else {
                const kdc_expr_t *t = kdc_api_arg(o->site, api->client_type);
                if (t && t->has_ival && (t->ival == 0 || t->ival == 1))
                    oi->type = (int)t->ival;
            }
            const kdc_expr_t *conf = kdc_api_arg(o->site, api->conf);
            if (!conf || kdc_expr_is_null(conf)) {
                oi->null_conf = 1;
            } else {
                int unknown = 0;
                conf_ctx_t cc = {&oi->confs};
                for_each_obj(fx, o->func, conf, KDC_OBJ_CONF, add_conf, &cc, &unknown);
                oi->unknown_conf = (unsigned)unknown;
            }
        } else if (o->kind == KDC_OBJ_TOPIC) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            int unknown = 0;
            for_each_obj(fx, o->func, kdc_api_arg(o->site, api->handle), KDC_OBJ_CLIENT, add_client,
                         &oi->clients, &unknown);
            oi->unknown_client = (unsigned)unknown;
            oi->name_expr = kdc_api_arg(o->site, api->topic);
            oi->name_func = o->func;
        }
    }
}

void kdc_facts_clients_of(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                          kdc_bits_t *clients, int *unknown) {
    size_t n = kdc_pts_nobjs(fx->pts);
    kdc_bits_init(clients, n);
    *unknown = 0;
    if (!e) {
        *unknown = 1;
        return;
    }
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    size_t hits = 0;
    for (size_t i = 0; i < n; i++) {
        if (!kdc_bits_get(&b, i))
            continue;
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
    kdc_bits_free(&b);
}

int kdc_facts_client_type(const kdc_facts_t *fx, size_t client) { return fx->info[client].type; }

kdc_tri_t kdc_facts_client_has_dr(const kdc_facts_t *fx, size_t client) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf)
        return KDC_TRI_UNKNOWN;
    kdc_tri_t r = KDC_TRI_NO;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        if (!kdc_bits_get(&ci->confs, i))
            continue;
        if (fx->info[i].dr)
            return KDC_TRI_YES;
        if (fx->info[i].escaped)
            r = KDC_TRI_UNKNOWN;
    }
    return r;
}

static int parse_bool(const char *v, int *out) {
    if (!strcasecmp(v, "true") || !strcasecmp(v, "t") || !strcmp(v, "1")) {
        *out = 1;
        return 1;
    }
    if (!strcasecmp(v, "false") || !strcasecmp(v, "f") || !strcmp(v, "0")) {
        *out = 0;
        return 1;
    }
    return 0;
}

kdc_tri_t kdc_facts_client_bool(const kdc_facts_t *fx, size_t client, const char *key, int dflt) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf)
        return KDC_TRI_UNKNOWN;
    if (ci->null_conf)
        return dflt ? KDC_TRI_YES : KDC_TRI_NO;
    int seen = -1; /* -1: nothing decided yet */
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        if (!kdc_bits_get(&ci->confs, i))
            continue;
        const objinfo_t *conf = &fx->info[i];
        int v = dflt, set = 0;
        for (size_t s = 0; s < conf->settings.n; s++) {
            const setting_t *st = &conf->settings.v[s];
            if (!st->key)
                return KDC_TRI_UNKNOWN; /* a property set from a variable name */
            if (strcmp(st->key, key))
                continue;
            int b;
            if (!st->value || !parse_bool(st->value, &b))
                return KDC_TRI_UNKNOWN;
            if (st->conditional && b != dflt)
                return KDC_TRI_UNKNOWN; /* set on some paths only: the default may hold */
            if (set && b != v)
                return KDC_TRI_UNKNOWN; /* set both ways: depends on the path */
            v = b;
            set = 1;
        }
        if (conf->escaped && !set)
            return KDC_TRI_UNKNOWN;
        if (seen >= 0 && seen != v)
            return KDC_TRI_UNKNOWN;
        seen = v;
    }
    if (seen < 0)
        return dflt ? KDC_TRI_YES : KDC_TRI_NO;
    return seen ? KDC_TRI_YES : KDC_TRI_NO;
}

const kdc_obj_t *kdc_facts_obj(const kdc_facts_t *fx, size_t i) { return kdc_pts_obj(fx->pts, i); }

/* ---------- delivery-report callbacks and the state they write ---------- */

static int collect_written(const kdc_expr_t *e, void *arg) {
    kdc_facts_t *fx = arg;
    const kdc_expr_t *target = NULL;
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN))
        target = e->kids[0];
    else if (e->kind == KDC_E_UNARY && (e->op == KDC_OP_PREINC || e->op == KDC_OP_PREDEC ||
                                        e->op == KDC_OP_POSTINC || e->op == KDC_OP_POSTDEC))
        target = e->kids[0];
    else if (e->kind == KDC_E_CALL && e->name &&
             (strstr(e->name, "atomic") || strstr(e->name, "__sync_") ||
              strstr(e->name, "fetch_")) && e->nkids) {
        /* atomic_fetch_sub(&t->pending, 1), __atomic_store_n(&st->done, 1, ...) */
        const kdc_expr_t *a = kdc_expr_strip(e->kids[0]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR)
            target = a->kids[0];
    }
    const char *k = target ? lkey(fx, target) : NULL;
    if (k)
        kdc_strmap_put(&fx->dr_state, k, (void *)1);
    return 0;
}

static void compute_dr_state(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    /* C++: DeliveryReportCb::dr_cb overrides are delivery-report callbacks. */
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        size_t len = strlen(f->name);
        if (f->class_usr && len >= 7 && !strcmp(f->name + len - 7, "::dr_cb"))
            add_dr_func(fx, f);
    }
    /* Close over the functions they call. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(fx->p, i);
            if (!kdc_strmap_get(&fx->dr_funcs, f->id))
                continue;
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_func_t *g = callee_func(fx, f, f->calls[c]);
                if (g && !kdc_strmap_get(&fx->dr_funcs, g->id)) {
                    add_dr_func(fx, g);
                    changed = 1;
                }
            }
        }
    }
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        if (kdc_strmap_get(&fx->dr_funcs, f->id))
            kdc_func_walk_exprs(f, collect_written, fx);
    }
}

/* ---------- produces, commits, confirmations ---------- */

static const kdc_expr_t *produce_opaque(const kdc_expr_t *call, const kdc_api_t *api) {
    if (api->varargs)
        return kdc_api_producev_arg(call, 6 /* RD_KAFKA_VTYPE_OPAQUE */);
    if (call->is_method && call->nkids)
        return call->kids[call->nkids - 1]; /* C++ produce(): msg_opaque is last */
    return kdc_api_arg(call, api->opaque);
}

static const char *opaque_key(const kdc_facts_t *fx, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api || !(api->roles & KDC_API_PRODUCE))
        return NULL;
    const kdc_expr_t *o = kdc_expr_strip(produce_opaque(call, api));
    if (!o || kdc_expr_is_null(o))
        return NULL;
    if (o->kind == KDC_E_UNARY && o->op == KDC_OP_ADDR && o->nkids == 1)
        return lkey(fx, o->kids[0]);
    return lkey(fx, o);
}

static int name_is_dlq(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return match_any(fx->opts.dlq_name_patterns, kdc_expr_root_name(e));
}

static int strings_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    if (!e)
        return 0;
    const kdc_expr_t *s = literal(e);
    if (s)
        return match_any(fx->opts.dlq_topic_patterns, s->str);
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    int r = 0;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n && !r; i++) {
        if (!kdc_bits_get(&b, i))
            continue;
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_STRING)
            r = match_any(fx->opts.dlq_topic_patterns, o->str);
        else if (o->kind == KDC_OBJ_TOPIC) {
            const objinfo_t *ti = &fx->info[i];
            r = ti->name_expr && (strings_dlq(fx, ti->name_func, ti->name_expr) ||
                                  name_is_dlq(fx, ti->name_expr));
        }
    }
    kdc_bits_free(&b);
    return r;
}

static int direct_dlq_produce(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                              const kdc_api_t *api) {
    const kdc_expr_t *topic =
        api->varargs ? kdc_api_producev_arg(call, 1 /* RD_KAFKA_VTYPE_TOPIC */)
                     : kdc_api_arg(call, api->topic);
    const kdc_expr_t *rkt = api->varargs ? kdc_api_producev_arg(call, 2 /* RKT */) : NULL;
    const kdc_expr_t *handle = kdc_api_arg(call, api->handle);
    return strings_dlq(fx, f, topic) || strings_dlq(fx, f, rkt) || name_is_dlq(fx, topic) ||
           name_is_dlq(fx, rkt) || name_is_dlq(fx, handle);
}

int kdc_facts_is_dlq_produce(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    if (kdc_options_has_role(&fx->opts, call, KDC_ROLE_PRODUCE)) {
        /* a configured produce wrapper: any argument naming a dead-letter destination */
        for (unsigned i = 0; i < call->nkids; i++)
            if (strings_dlq(fx, f, call->kids[i]) || name_is_dlq(fx, call->kids[i]))
                return 1;
        return 0;
    }
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_PRODUCE) && direct_dlq_produce(fx, f, call, api);
    kdc_summary_t m;
    const kdc_summary_t *s = callee_summary(fx, f, call, &m);
    return s && s->pending_dlq;
}


typedef struct reads_ctx {
    const kdc_facts_t *fx;
    const char *opaque;
    int hit;
} reads_ctx_t;

static int reads_visit(const kdc_expr_t *e, void *arg) {
    reads_ctx_t *r = arg;
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER)
        return 0;
    const char *k = lkey(r->fx, e);
    if (k && ((r->opaque && k == r->opaque) || kdc_strmap_get(&r->fx->dr_state, k))) {
        r->hit = 1;
        return 1;
    }
    return 0;
}

/* Does the condition read delivery-report state (or the produce's opaque)? */
static int reads_dr_state(const kdc_facts_t *fx, const kdc_expr_t *cond, const char *opaque) {
    reads_ctx_t r = {fx, opaque, 0};
    kdc_expr_walk(cond, reads_visit, &r);
    return r.hit;
}

/* Which edge of a condition means "the call whose result it tests failed"?
 * -1: none. `is_result` recognises the call (or a variable holding its
 * result). librdkafka's produce and conf_set calls return 0 on success. */
static int failure_edge_of(const kdc_expr_t *cond,
                           int (*is_result)(const kdc_expr_t *side, void *arg), void *arg) {
    const kdc_expr_t *c = kdc_expr_strip(cond);
    const kdc_expr_t *side = c, *other = NULL;
    if (c->kind == KDC_E_BINARY && c->nkids == 2 &&
        (c->op == KDC_OP_EQ || c->op == KDC_OP_NE || c->op == KDC_OP_LT)) {
        side = c->kids[0];
        other = c->kids[1];
        if (side->has_ival && !other->has_ival) {
            const kdc_expr_t *t = side;
            side = other;
            other = t;
        }
        if (!other->has_ival)
            return -1;
    }
    side = kdc_expr_strip(side);
    if (side->kind == KDC_E_BINARY && side->op == KDC_OP_ASSIGN && side->nkids == 2)
        side = kdc_expr_strip(side->kids[1]);
    if (!is_result(side, arg))
        return -1;
    if (!other)
        return 0; /* non-zero result = error: the true edge */
    long long k = other->ival;
    switch (c->op) {
    case KDC_OP_EQ: return k == 0 ? 1 : 0;
    case KDC_OP_NE: return k == 0 ? 0 : -1;
    case KDC_OP_LT: return k <= 0 ? 0 : -1;
    default: return -1;
    }
}

typedef struct produce_result {
    const kdc_facts_t *fx;
    const kdc_expr_t *produce;
    const char *result_var;
} produce_result_t;

static int is_produce_result(const kdc_expr_t *side, void *arg) {
    produce_result_t *r = arg;
    return side == r->produce || (r->result_var && lkey(r->fx, side) == r->result_var);
}

/* Which edge of a condition means "the produce call failed to enqueue"? -1: none. */
static int failure_edge(const kdc_facts_t *fx, const kdc_expr_t *cond, const kdc_expr_t *produce,
                        const char *result_var) {
    produce_result_t r = {fx, produce, result_var};
    return failure_edge_of(cond, is_produce_result, &r);
}

/* A walk along paths on which a message is not (yet) confirmed: from a
 * produce to the commits it reaches (rules, pending-at-exit summaries), or
 * from a function's entry (does every path confirm?). */
typedef struct walk {
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    const kdc_expr_t *produce;  /* NULL when walking from the entry */
    const char *opaque;
    const char *result_var;
    int prune_failure;          /* ignore paths where the produce itself failed */
    int stop_at_commit;
    int exit_reached;
    kdc_reached_fn reached;
    void *ctx;
} walk_t;

/* Path state bit 0: delivery reports were served since the walk started. */
static int walk_visit(void *ctx, const kdc_cfg_t *g, int n, int state) {
    walk_t *w = ctx;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit) {
        w->exit_reached = 1;
        return -1;
    }
    if (nd->kind == KDC_N_CALL) {
        kdc_summary_t m;
        call_effects_t e = effects_of(w->fx, w->f, nd->expr, &m);
        if (e.confirms)
            return -1;
        if (e.commits && w->stop_at_commit) {
            /* The first commit on the path is where the message is lost; later
             * commits on the same path are the same loss. */
            if (w->reached)
                w->reached(w->ctx, w->f, nd->expr);
            return -1;
        }
        if (e.serves_dr)
            state |= 1;
    } else if (nd->kind == KDC_N_COND) {
        /* a wait loop on the delivery's state, or a check of it once reports were served */
        if ((nd->loop_cond || (state & 1)) && reads_dr_state(w->fx, nd->expr, w->opaque))
            return -1;
    }
    return state;
}

static int walk_edge(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int state) {
    (void)state;
    walk_t *w = ctx;
    const kdc_node_t *nd = &g->nodes[n];
    if (!w->prune_failure || nd->kind != KDC_N_COND)
        return 1;
    return failure_edge(w->fx, nd->expr, w->produce, w->result_var) != (int)i;
}

typedef struct resvar_ctx {
    const kdc_facts_t *fx;
    const kdc_expr_t *produce;
    const char *key;
} resvar_ctx_t;

static int find_result_var(const kdc_expr_t *e, void *arg) {
    resvar_ctx_t *r = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        kdc_expr_strip(e->kids[1]) == r->produce) {
        r->key = lkey(r->fx, e->kids[0]);
        return 1;
    }
    return 0;
}

static int walk_from(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *produce,
                     int prune_failure, kdc_reached_fn reached, void *ctx) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || produce->call_id < 0 || g->call_node[produce->call_id] < 0)
        return 0;
    resvar_ctx_t rv = {fx, produce, NULL};
    kdc_func_walk_exprs(f, find_result_var, &rv);
    walk_t w = {fx, f, produce, opaque_key(fx, produce), rv.key, prune_failure, 1, 0, reached, ctx};
    kdc_search_t s = {walk_visit, walk_edge, &w, 2};
    kdc_cfg_search(g, g->call_node[produce->call_id], 0, &s);
    return w.exit_reached;
}

int kdc_facts_walk_unconfirmed(const kdc_facts_t *fx, const kdc_func_t *f,
                               const kdc_expr_t *produce, kdc_reached_fn reached, void *ctx) {
    return walk_from(fx, f, produce, 0, reached, ctx);
}

/* ---------- summaries ---------- */

/* Pass 1: may commit, may serve delivery reports (monotone in callees). */
static int summarize_effects(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    kdc_summary_t old = *s;
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (!g || g->call_node[c] < 0)
            continue;
        kdc_summary_t m;
        call_effects_t e = effects_of(fx, f, call, &m);
        s->commits |= e.commits;
        s->serves_dr |= e.serves_dr;
    }
    return memcmp(s, &old, sizeof *s) != 0;
}

/* Pass 2: every path to the exit passes a confirmation (monotone: more
 * confirming callees only add barriers). */
static int summarize_confirms(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    if (!f->cfg || s->noreturn || s->confirms)
        return 0;
    walk_t w = {fx, f, NULL, NULL, NULL, 0, 0, 0, NULL, NULL};
    kdc_search_t srch = {walk_visit, NULL, &w, 2};
    kdc_cfg_search(f->cfg, ((const kdc_cfg_t *)f->cfg)->entry, 0, &srch);
    s->confirms = !w.exit_reached;
    return s->confirms;
}

/* Pass 3: a produced message may still be unconfirmed at the exit. */
static int summarize_pending(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    kdc_summary_t old = *s;
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; c < f->ncalls && !(s->pending_produce && s->pending_dlq); c++) {
        const kdc_expr_t *call = f->calls[c];
        if (!g || g->call_node[c] < 0)
            continue;
        kdc_summary_t m;
        call_effects_t e = effects_of(fx, f, call, &m);
        const kdc_summary_t *cs = e.callee;
        if (!e.produces || !walk_from(fx, f, call, 1, NULL, NULL))
            continue;
        int dlq = kdc_facts_is_dlq_produce(fx, f, call);
        if (s->pending_produce && !(dlq && !s->pending_dlq))
            continue;
        s->pending_func = cs ? cs->pending_func : f;
        s->pending_site = cs ? cs->pending_site : call;
        s->pending_produce = 1;
        s->pending_dlq |= (unsigned)dlq;
    }
    return memcmp(s, &old, sizeof *s) != 0;
}

static void summarize_all(kdc_facts_t *fx, int (*pass)(kdc_facts_t *, const kdc_func_t *)) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (int round = 0; round < 16; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++)
            changed |= pass(fx, kdc_program_func(fx->p, i));
        if (!changed)
            break;
    }
}

/* ---------- noreturn and CFGs ---------- */

static int noreturn_cb(const kdc_expr_t *call, void *arg) {
    kdc_facts_t *fx = arg;
    if (kdc_api_is_noreturn_name(call->name))
        return 1;
    const kdc_func_t *g = kdc_program_find_callee(fx->p, call->usr, fx->building ? fx->building->tu : -1);
    return g && fx->sum[g->index].noreturn;
}

static void build_cfgs(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        fx->building = kdc_program_func(fx->p, i);
        kdc_cfg_build(fx->p, kdc_program_func(fx->p, i), noreturn_cb, fx);
    }
    for (int round = 0; round < 8; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++) {
            kdc_func_t *f = kdc_program_func(fx->p, i);
            int nr = !kdc_cfg_exit_reachable(f->cfg);
            if (nr != (int)fx->sum[i].noreturn) {
                fx->sum[i].noreturn = (unsigned)nr;
                changed = 1;
            }
        }
        if (!changed)
            break;
        for (size_t i = 0; i < nf; i++) {
            fx->building = kdc_program_func(fx->p, i);
            kdc_cfg_build(fx->p, kdc_program_func(fx->p, i), noreturn_cb, fx);
        }
    }
    fx->building = NULL;
}

kdc_facts_t *kdc_facts_build(kdc_program_t *p, const kdc_options_t *opts) {
    kdc_facts_t *fx = calloc(1, sizeof *fx);
    if (!fx)
        kdc_oom();
    fx->p = p;
    fx->opts = *opts;
    if (!fx->opts.dlq_topic_patterns)
        fx->opts.dlq_topic_patterns = kdc_default_dlq_topic_patterns;
    if (!fx->opts.dlq_name_patterns)
        fx->opts.dlq_name_patterns = kdc_default_dlq_name_patterns;
    kdc_strmap_init(&fx->dr_state);
    kdc_strmap_init(&fx->dr_funcs);
    size_t nf = kdc_program_nfuncs(p);
    fx->sum = calloc(nf ? nf : 1, sizeof *fx->sum);
    if (!fx->sum)
        kdc_oom();

    build_cfgs(fx);
    fx->pts = kdc_pts_build(p);
    size_t nobjs = kdc_pts_nobjs(fx->pts);
    fx->info = calloc(nobjs ? nobjs : 1, sizeof *fx->info);
    if (!fx->info)
        kdc_oom();
    describe_objects(fx);
    scan_config_calls(fx);
    compute_dr_state(fx);
    summarize_all(fx, summarize_effects);
    summarize_all(fx, summarize_confirms);
    summarize_all(fx, summarize_pending);
    return fx;
}

void kdc_facts_free(kdc_facts_t *fx) {
    if (!fx)
        return;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n; i++) {
        free(fx->info[i].settings.v);
        kdc_bits_free(&fx->info[i].confs);
        kdc_bits_free(&fx->info[i].clients);
    }
    free(fx->info);
    free(fx->sum);
    kdc_pts_free(fx->pts);
    kdc_strmap_free(&fx->dr_state);
    kdc_strmap_free(&fx->dr_funcs);
    free(fx);
}

const kdc_options_t *kdc_facts_options(const kdc_facts_t *fx) { return &fx->opts; }
const kdc_summary_t *kdc_facts_summary(const kdc_facts_t *fx, const kdc_func_t *f) {
    return &fx->sum[f->index];
}
