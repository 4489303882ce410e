/*
 * Configurations, clients and topics: what each configuration object sets and
 * registers, which configurations each client handle may be created with,
 * which clients each topic handle belongs to.
 *
 * A property set inside a helper (`set_prop(conf, "acks", "1")`) is resolved
 * at the helper's call sites, up to KDC_CONTEXT_DEPTH calls out, so each call
 * site's key and value are paired with the configuration that call passes.
 * A table of key/value pairs applied in a loop gives one setting per row.
 */
#define _GNU_SOURCE
#include "api.h"
#include "facts_int.h"
#include "paths.h"
#include "results.h"

#include <stdlib.h>
#include <string.h>

#define KDC_CONTEXT_DEPTH 3
#define KDC_MAX_CONTEXTS 64

/* ---------- call-site contexts ---------- */

/* e in f, followed out through the call sites chain[0..n): while e is a
 * parameter, continue with the argument at the call site. Returns how many
 * frames were used. */
static int resolve(const kdc_func_t **f, const kdc_expr_t **e, const frame_t *chain, int n) {
    int used = 0;
    for (int i = 0; i < n; i++) {
        const kdc_expr_t *s = kdc_expr_strip(*e);
        if (!s || s->kind != KDC_E_REF || s->ref != KDC_REF_PARAM || s->param_index < 0)
            break;
        const kdc_expr_t *arg = kdc_call_arg(chain[i].call, (unsigned)s->param_index);
        if (!arg)
            break;
        *e = arg;
        *f = chain[i].f;
        used = i + 1;
    }
    return used;
}

static int is_param(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->ref == KDC_REF_PARAM;
}

typedef void (*context_fn)(kdc_facts_t *fx, const frame_t *chain, int n, void *arg);

/* Calls fn for each chain of call sites leading to f (up to the depth, or
 * until a function nobody calls); a chain of length 0 when f has no callers. */
static void each_context(kdc_facts_t *fx, const kdc_func_t *f, frame_t *chain, int n, int *budget,
                         context_fn fn, void *arg) {
    const kdc_func_t *cur = n ? chain[n - 1].f : f;
    const frame_vec_t *callers = &fx->callers[cur->index];
    if (n == KDC_CONTEXT_DEPTH || !callers->n) {
        if ((*budget)-- > 0)
            fn(fx, chain, n, arg);
        return;
    }
    for (size_t i = 0; i < callers->n && *budget > 0; i++) {
        int cycle = 0;
        for (int k = 0; k < n; k++)
            cycle |= chain[k].f == callers->v[i].f;
        if (cycle) {
            if ((*budget)-- > 0)
                fn(fx, chain, n, arg);
            continue;
        }
        chain[n] = callers->v[i];
        each_context(fx, f, chain, n + 1, budget, fn, arg);
    }
}

/* Is this call on every path through its function, apart from paths where a
 * property failed to set (the configuration is then abandoned)? */
static int find_conf_set(const kdc_expr_t *e, void *arg) {
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api && (api->roles & KDC_API_CONF_SET)) {
        *(const kdc_expr_t **)arg = e;
        return 1;
    }
    return 0;
}

typedef struct must_ctx {
    int avoid, found;
    kdc_program_t *p;
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
    (void)st;
    const kdc_node_t *nd = &g->nodes[n];
    const kdc_expr_t *set = NULL;
    if (nd->kind != KDC_N_COND || !kdc_expr_walk(nd->expr, find_conf_set, &set))
        return 1;
    kdc_outcome_t o = {0};
    o.p = ((must_ctx_t *)ctx)->p;
    o.call = set;
    o.error_truthy = 1; /* rd_kafka_conf_res_t: RD_KAFKA_CONF_OK is 0 */
    return kdc_outcome_failure_edge(&o, nd->expr) != (int)i;
}

/* Where the paths of a configuration begin in f: at the call that creates it when
 * that is in f (a path that returns before the configuration exists, `if (load()
 * != 0) return 1;`, is not one of its paths), else at f's entry. */
static int conf_start(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *conf) {
    const kdc_cfg_t *g = f->cfg;
    if (!conf)
        return g->entry;
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, conf, &b);
    int start = -1, n = 0;
    for (size_t i = 0; i < kdc_pts_nobjs(fx->pts); i++) {
        if (!kdc_bits_get(&b, i))
            continue;
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        n++;
        if (o->kind != KDC_OBJ_CONF || o->func != f || !o->site || o->site->call_id < 0 ||
            g->call_node[o->site->call_id] < 0 || (start >= 0 && start != g->call_node[o->site->call_id])) {
            start = -1;
            break;
        }
        start = g->call_node[o->site->call_id];
    }
    kdc_bits_free(&b);
    return n && start >= 0 ? start : g->entry;
}

static int on_every_path(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_expr_t *conf) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return 0;
    must_ctx_t m = {g->call_node[call->call_id], 0, fx->p};
    kdc_search_t s = {must_visit, must_edge, &m, 1};
    kdc_cfg_search(g, conf_start(fx, f, conf), 0, &s);
    return !m.found;
}

/* ---------- tables of key/value pairs ---------- */

typedef struct pair {
    const char *key, *value;
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

/* T[i][k] → (T, k as column); T[i].field → (T, field). */
typedef struct cell {
    const kdc_expr_t *table; /* REF to the array */
    long long column;        /* -1 when a field */
    const char *field;
} cell_t;

static int as_cell(const kdc_expr_t *e, cell_t *c) {
    e = kdc_expr_strip(e);
    c->column = -1;
    c->field = NULL;
    if (e && e->kind == KDC_E_INDEX && e->kids[1]->has_ival) {
        c->column = e->kids[1]->ival;
        e = kdc_expr_strip(e->kids[0]);
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

/* Pairs of a {{"key", "value"}, ...} table read by the key and value expressions. */
static int table_pairs(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *key,
                       const kdc_expr_t *value, pair_vec_t *out) {
    cell_t kc, vc;
    if (!as_cell(key, &kc) || !as_cell(value, &vc) || kc.table->usr != vc.table->usr)
        return 0;
    const kdc_expr_t *init = kdc_expr_strip(initializer_of(fx, f, kc.table->usr));
    if (!init || init->kind != KDC_E_INIT)
        return 0;
    for (unsigned r = 0; r < init->nkids; r++) {
        pair_t p = {row_cell(init->kids[r], &kc), row_cell(init->kids[r], &vc)};
        if (p.key) /* {NULL, NULL} end markers have no key */
            KDC_VEC_PUSH(*out, p);
    }
    return 1;
}

/* ---------- scanning the configuration calls ---------- */

typedef struct apply_ctx {
    kdc_setting_t setting;
    int dr;        /* registers a delivery report */
    int rebalance; /* registers a rebalance callback */
} apply_ctx_t;

static void apply(kdc_facts_t *fx, size_t conf, void *arg) {
    apply_ctx_t *a = arg;
    objinfo_t *oi = &fx->info[conf];
    if (a->rebalance) {
        oi->rebalance = 1;
        return;
    }
    if (a->dr) {
        if (!oi->dr)
            oi->dr_loc = a->setting.loc;
        oi->dr = 1;
        return;
    }
    KDC_VEC_PUSH(oi->settings, a->setting);
}

static void mark_escaped(kdc_facts_t *fx, size_t conf, void *arg) {
    objinfo_t *oi = &fx->info[conf];
    if (!oi->escaped)
        oi->escaped_loc = *(const kdc_loc_t *)arg;
    oi->escaped = 1;
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

typedef struct link_ctx {
    kdc_bits_t tconfs;
} link_ctx_t;

static void add_bit(kdc_facts_t *fx, size_t i, void *arg) {
    (void)fx;
    kdc_bits_set((kdc_bits_t *)arg, i);
}

static void link_conf(kdc_facts_t *fx, size_t conf, void *arg) {
    kdc_bits_or(&fx->info[conf].linked, &((link_ctx_t *)arg)->tconfs);
}

/* rd_kafka_conf_set_default_topic_conf(conf, tconf) in f: each instance of the
 * conf (a factory analysed per call site) gets the topic configurations tconf
 * denotes in that same instance, not those of every caller. */
typedef struct link_call {
    const kdc_func_t *f;
    const kdc_expr_t *tconf;
} link_call_t;

static void link_in_instance(kdc_facts_t *fx, size_t conf, void *arg) {
    const link_call_t *lk = arg;
    link_ctx_t lc;
    kdc_bits_init(&lc.tconfs, kdc_pts_nobjs(fx->pts));
    kdc__for_each_obj_ctx(fx, lk->f, kdc_pts_obj(fx->pts, conf)->ctx, lk->tconf, KDC_OBJ_CONF,
                          add_bit, &lc.tconfs, NULL);
    link_conf(fx, conf, &lc);
    kdc_bits_free(&lc.tconfs);
}

typedef struct set_call {
    const kdc_func_t *f;
    const kdc_expr_t *call;
    const kdc_api_t *api;
} set_call_t;

/* One conf_set call in one context of call sites. */
static void apply_set_in_context(kdc_facts_t *fx, const frame_t *chain, int n, void *arg) {
    const set_call_t *sc = arg;
    const kdc_func_t *cf = sc->f, *kf = sc->f, *vf = sc->f;
    const kdc_expr_t *conf = kdc_api_arg(sc->call, sc->api->conf);
    const kdc_expr_t *key = kdc_api_arg(sc->call, sc->api->key);
    const kdc_expr_t *value = kdc_api_arg(sc->call, sc->api->value);
    int conf_level = resolve(&cf, &conf, chain, n);
    /* the factory instance the conf lives in: chosen by the call into its function */
    const char *cctx = conf_level < n ? kdc_pts_context_of_call(fx->pts, cf, chain[conf_level].call)
                                      : NULL;
    resolve(&kf, &key, chain, n);
    int used = resolve(&vf, &value, chain, n);

    apply_ctx_t a = {{0}, 0, 0};
    a.setting.func = used ? chain[used - 1].f : sc->f;
    a.setting.loc = used ? chain[used - 1].call->loc : sc->call->loc;
    a.setting.conditional =
        !on_every_path(fx, sc->f, sc->call, conf_level ? NULL : kdc_api_arg(sc->call, sc->api->conf));
    a.setting.from_outside = is_param(value) && !fx->callers[vf->index].n;
    for (int i = 0; i < used; i++)
        a.setting.conditional |=
            !on_every_path(fx, chain[i].f, chain[i].call, i + 1 == conf_level ? conf : NULL);

    pair_vec_t pairs = {0};
    if (!table_pairs(fx, vf, key, value, &pairs)) {
        pair_t p = {kdc__single_string(fx, kf, key), kdc__single_string(fx, vf, value)};
        KDC_VEC_PUSH(pairs, p);
    } else {
        a.setting.conditional = 1; /* a loop over the table: rows may be skipped */
    }
    for (size_t i = 0; i < pairs.n; i++) {
        a.setting.key = pairs.v[i].key;
        a.setting.value = pairs.v[i].value;
        a.dr = sc->call->is_method && a.setting.key && !strcmp(a.setting.key, "dr_cb");
        a.rebalance = sc->call->is_method && a.setting.key && !strcmp(a.setting.key, "rebalance_cb");
        if (sc->call->is_method && a.setting.key && !strcmp(a.setting.key, "default_topic_conf")) {
            link_ctx_t lc;
            kdc_bits_init(&lc.tconfs, kdc_pts_nobjs(fx->pts));
            kdc__for_each_obj(fx, vf, value, KDC_OBJ_CONF, add_bit, &lc.tconfs, NULL);
            kdc__for_each_obj_ctx(fx, cf, cctx, conf, KDC_OBJ_CONF, link_conf, &lc, NULL);
            kdc_bits_free(&lc.tconfs);
            continue;
        }
        kdc__for_each_obj_ctx(fx, cf, cctx, conf, KDC_OBJ_CONF, apply, &a, NULL);
    }
    free(pairs.v);
}

static void scan_set_call(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    set_call_t sc = {f, call, api};
    if (!is_param(kdc_api_arg(call, api->conf)) && !is_param(kdc_api_arg(call, api->key)) &&
        !is_param(kdc_api_arg(call, api->value))) {
        apply_set_in_context(fx, NULL, 0, &sc);
        return;
    }
    frame_t chain[KDC_CONTEXT_DEPTH];
    int budget = KDC_MAX_CONTEXTS;
    each_context(fx, f, chain, 0, &budget, apply_set_in_context, &sc);
}

static void scan_config_calls(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (api && (api->roles & KDC_API_CONF_SET)) {
                scan_set_call(fx, f, call, api);
            } else if (api && (api->roles & (KDC_API_DR_REGISTER | KDC_API_EVENTS_SET))) {
                const kdc_expr_t *v = kdc_api_arg(call, api->value);
                if ((api->roles & KDC_API_EVENTS_SET) && v && v->has_ival && (v->ival & 0x10)) {
                    /* RD_KAFKA_EVENT_REBALANCE: rebalances are served as events */
                    apply_ctx_t r = {{0}, 0, 1};
                    kdc__for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF, apply, &r,
                                      NULL);
                }
                if ((api->roles & KDC_API_EVENTS_SET) && v && v->has_ival && !(v->ival & 0x1))
                    continue; /* RD_KAFKA_EVENT_DR not among the flags */
                apply_ctx_t a = {{0}, 1, 0};
                a.setting.loc = call->loc;
                kdc__for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF, apply, &a,
                                  NULL);
                if (api->roles & KDC_API_DR_REGISTER)
                    kdc__for_each_obj(fx, f, v, KDC_OBJ_FUNC, collect_dr_callback, (void *)call,
                                      NULL);
            } else if (api && (api->roles & KDC_API_REBALANCE_CB)) {
                apply_ctx_t a = {{0}, 0, 1};
                kdc__for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF, apply, &a,
                                  NULL);
            } else if (api && (api->roles & KDC_API_CONF_LINK)) {
                link_call_t lk = {f, kdc_api_arg(call, api->value)};
                kdc__for_each_obj(fx, f, kdc_api_arg(call, api->conf), KDC_OBJ_CONF,
                                  link_in_instance, &lk, NULL);
            } else if (!api && !call->callee_system && !kdc_api_is_librdkafka(call) &&
                       !kdc__callee_func(fx, f, call) && !call->callee_expr) {
                /* Handed to code we cannot see: it may register or set anything. */
                for (unsigned k = 0; k < call->nkids; k++)
                    kdc__for_each_obj(fx, f, call->kids[k], KDC_OBJ_CONF, mark_escaped,
                                      (void *)&call->loc, NULL);
            }
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
                kdc__for_each_obj_ctx(fx, o->func, o->ctx, conf, KDC_OBJ_CONF, add_bit, &oi->confs,
                                      &unknown);
                oi->unknown_conf = (unsigned)unknown;
            }
        } else if (o->kind == KDC_OBJ_TOPIC) {
            const kdc_api_t *api = kdc_api_lookup(o->site);
            int unknown = 0;
            kdc__for_each_obj_ctx(fx, o->func, o->ctx, kdc_api_arg(o->site, api->handle),
                                  KDC_OBJ_CLIENT, add_bit, &oi->clients, &unknown);
            oi->unknown_client = (unsigned)unknown;
            oi->name_expr = kdc_api_arg(o->site, api->topic);
            oi->name_func = o->func;
            const kdc_expr_t *tconf = kdc_api_arg(o->site, api->conf);
            if (tconf && !kdc_expr_is_null(tconf))
                kdc__for_each_obj_ctx(fx, o->func, o->ctx, tconf, KDC_OBJ_CONF, add_bit, &oi->tconfs,
                                      NULL);
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
        for (size_t k = 0; k < clients.nwords * 64; k++)
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
    for (size_t k = 0; k < clients.nwords * 64; k++)
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
            int dlq = kdc_facts_is_dlq_produce(fx, f, call);
            for (size_t k = 0; k < clients.nwords * 64; k++)
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
    describe_objects(fx);
    scan_config_calls(fx);
    mark_producers(fx);
}

void kdc__free_clients(kdc_facts_t *fx) {
    size_t n = fx->pts ? kdc_pts_nobjs(fx->pts) : 0;
    for (size_t i = 0; fx->info && i < n; i++) {
        free(fx->info[i].settings.v);
        kdc_bits_free(&fx->info[i].confs);
        kdc_bits_free(&fx->info[i].clients);
        kdc_bits_free(&fx->info[i].linked);
        kdc_bits_free(&fx->info[i].tconfs);
    }
    free(fx->info);
    fx->info = NULL;
}

/* ---------- queries ---------- */

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

const kdc_loc_t *kdc_facts_client_loc(const kdc_facts_t *fx, size_t client) {
    const kdc_obj_t *o = kdc_pts_obj(fx->pts, client);
    return o->via ? &o->via->loc : &o->site->loc;
}

int kdc_facts_client_produces(const kdc_facts_t *fx, size_t client, int *dlq) {
    if (dlq)
        *dlq = fx->info[client].produces_dlq;
    return fx->info[client].produces;
}

/* The client's configurations and, one level down, their default topic configurations. */
static void client_confs(const kdc_facts_t *fx, size_t client, kdc_bits_t *out) {
    kdc_bits_init(out, kdc_pts_nobjs(fx->pts));
    kdc_bits_or(out, &fx->info[client].confs);
    for (size_t i = 0; i < out->nwords * 64; i++)
        if (kdc_bits_get(&fx->info[client].confs, i))
            kdc_bits_or(out, &fx->info[i].linked);
}

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

kdc_tri_t kdc_facts_client_has_rebalance_cb(const kdc_facts_t *fx, size_t client) {
    const objinfo_t *ci = &fx->info[client];
    if (ci->unknown_conf)
        return KDC_TRI_UNKNOWN;
    kdc_tri_t r = KDC_TRI_NO;
    for (size_t i = 0; i < ci->confs.nwords * 64; i++) {
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
    for (size_t i = 0; i < confs.nwords * 64; i++) {
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
    kdc_bits_t confs;
    client_confs(fx, client, &confs);
    int seen = -1; /* the value every configuration agrees on so far */
    kdc_tri_t r = KDC_TRI_NO;
    for (size_t i = 0; i < confs.nwords * 64 && r != KDC_TRI_UNKNOWN; i++) {
        if (!kdc_bits_get(&confs, i))
            continue;
        const objinfo_t *conf = &fx->info[i];
        int v = dflt, set = 0;
        for (size_t s = 0; s < conf->settings.n && r != KDC_TRI_UNKNOWN; s++) {
            const kdc_setting_t *st = &conf->settings.v[s];
            int b;
            if (!st->key)
                r = KDC_TRI_UNKNOWN; /* a property set by a name that is not a literal */
            else if (strcmp(st->key, key))
                continue;
            else if (!st->value || !parse_bool(st->value, &b))
                r = KDC_TRI_UNKNOWN;
            else if (st->conditional && b != dflt)
                r = KDC_TRI_UNKNOWN; /* set on some paths only: the default may hold */
            else if (set && b != v)
                r = KDC_TRI_UNKNOWN; /* set both ways */
            else {
                v = b;
                set = 1;
            }
        }
        if (conf->escaped && !set)
            r = KDC_TRI_UNKNOWN;
        if (!kdc_bits_get(&ci->confs, i))
            continue; /* a default topic configuration only adds settings */
        if (seen >= 0 && seen != v)
            r = KDC_TRI_UNKNOWN;
        seen = v;
    }
    kdc_bits_free(&confs);
    if (r == KDC_TRI_UNKNOWN)
        return r;
    if (seen < 0)
        seen = dflt;
    return seen ? KDC_TRI_YES : KDC_TRI_NO;
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
        fprintf(out, "    %s = %s%s  (%s:%u:%u%s%s)\n", st->key ? st->key : "<name not a literal>",
                st->value ? st->value : "<value not a literal>",
                st->conditional ? ", on some paths only" : "",
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
    for (size_t i = 0; i < ci->linked.nwords * 64; i++)
        if (kdc_bits_get(&ci->linked, i))
            explain_conf(fx, i, "default topic configuration", out, cwd);
}

size_t kdc_facts_explain(const kdc_facts_t *fx, const char *file, unsigned line, FILE *out,
                         const char *cwd) {
    char *want = realpath(file, NULL);
    size_t n = kdc_pts_nobjs(fx->pts), found = 0;
    for (size_t i = 0; i < n; i++) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind != KDC_OBJ_CLIENT || o->site->loc.line != line || !o->site->loc.file ||
            strcmp(o->site->loc.file, want ? want : file))
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
        for (size_t k = 0; k < ci->confs.nwords * 64; k++)
            if (kdc_bits_get(&ci->confs, k))
                explain_conf(fx, k, "configuration", out, cwd);
        if (ci->produces)
            fprintf(out, "  used by produce calls%s\n", ci->produces_dlq ? ", to a dead-letter queue" : "");
    }
    free(want);
    return found;
}
