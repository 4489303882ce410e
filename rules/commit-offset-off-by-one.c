/*
 * commit-offset-off-by-one: an offset list built from a message's own offset
 * (msg->offset) and then committed, stored (rd_kafka_offsets_store) or sent
 * to a transaction. Kafka stores the NEXT offset to read: committing
 * msg->offset re-delivers the last processed message after every restart or
 * rebalance (and the inverse mistake, subtracting one on read-back, skips
 * one).
 *
 * Confidence: high. A partition offset written from a message's own offset
 * (C: rd_kafka_topic_partition_t.offset, rd_kafka_topic_partition_list_set_offset();
 * C++: TopicPartition::create(..., msg->offset()) or set_offset(msg->offset())),
 * directly or through variables and struct fields that only ever hold it, is
 * reported when that list reaches a commit, an offset store or a transaction:
 * on a path of the same function, or in the caller the list is returned to or
 * came from. A helper that writes its offset parameter into a committed list is
 * reported at the call that passes it msg->offset. Not reported: offset + 1,
 * rd_kafka_offset_store(rkt, p, msg->offset) and rd_kafka_commit_message()
 * (they add 1 themselves), rd_kafka_position(), lists only used to seek,
 * assign or pause.
 */
#include "rule.h"

#include <string.h>

/* Sets of interned keys (variables, fields): hash maps to a non-NULL marker. */
typedef kdc_strmap_t keyset_t;

static int has_key(const keyset_t *s, const char *k) {
    return k && s->cap && kdc_strmap_get(s, k) != NULL;
}

static void add_key(keyset_t *s, const char *k) {
    if (k && !has_key(s, k))
        kdc_strmap_put(s, k, (void *)1);
}

static void clear_keys(keyset_t *s) {
    kdc_strmap_free(s);
    kdc_strmap_init(s);
}

/* rd_kafka_message_t.offset, or C++ Message::offset() */
static int is_message_offset(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return 0;
    if (e->kind == KDC_E_MEMBER)
        return e->usr && strstr(e->usr, "@S@rd_kafka_message_s@FI@offset");
    return e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "RdKafka::Message::offset");
}

static int is_partition_offset_field(const char *usr) {
    return usr && strstr(usr, "@S@rd_kafka_topic_partition_s@FI@offset");
}

static int is_partition_offset(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_MEMBER && e->usr &&
           strstr(e->usr, "@S@rd_kafka_topic_partition_s@FI@offset");
}

static int is_call(const kdc_expr_t *e, const char *name) {
    return e && e->kind == KDC_E_CALL && e->name && !strcmp(e->name, name);
}

typedef struct obo {
    kdc_rule_ctx_t *ctx;
    keyset_t own;    /* variables and fields that only ever hold a message's own offset */
    keyset_t cand;   /* this round: assigned a message's own offset somewhere */
    keyset_t poison; /* this round: also assigned something else (offset + 1, ...) */
    keyset_t filled; /* C++ reference parameters their function stores values into */
    /* per function and parameter: the parameter reaches a committed partition offset */
    unsigned char **sink_param;
    /* reporting */
    const kdc_func_t *f;
    const char *seed; /* parameter being followed (sink_param), or NULL: messages */
    keyset_t local;   /* keys holding the seed in f */
    int hit;
} obo_t;

static const char *key_of(obo_t *o, const kdc_expr_t *e) {
    return kdc_pts_lvalue_key(o->ctx->program, e);
}

/* ---------- containers (std::vector, std::map, ..) ---------- */

static const char *method_base(const kdc_expr_t *call) {
    const char *b = call->name ? strrchr(call->name, ':') : NULL;
    return b ? b + 1 : call->name;
}

/* The container a method call acts on: the object, or an operator's first operand. */
static const kdc_expr_t *container_of(const kdc_expr_t *call) {
    if (call->recv)
        return call->recv;
    return call->is_method && call->nkids ? call->kids[0] : NULL;
}

static int is_one_of(const char *s, const char *const *names) {
    for (size_t i = 0; s && names[i]; i++)
        if (!strcmp(s, names[i]))
            return 1;
    return 0;
}

/* A call reading an element of a container (c[k], c.at(k), c.back(), an
 * iterator from c.find(k)): the container's key, or NULL. */
static const char *container_read(obo_t *o, const kdc_expr_t *e) {
    static const char *const reads[] = {"operator[]", "at", "back", "front", "find",
                                        "begin", "rbegin", "lower_bound", "upper_bound", NULL};
    if (!e || e->kind != KDC_E_CALL || !e->is_method || !is_one_of(method_base(e), reads))
        return NULL;
    const kdc_expr_t *c = container_of(e);
    return c ? key_of(o, c) : NULL;
}

/* A call storing a value into a container (c.push_back(v), c.emplace(k, v),
 * c.insert({k, v}), ..): the container's key, and the value (*value). */
static const char *container_write(obo_t *o, const kdc_expr_t *e, const kdc_expr_t **value) {
    static const char *const writes[] = {"push_back", "emplace_back", "push", "emplace",
                                         "insert", "insert_or_assign", "try_emplace",
                                         "push_front", "emplace_front", NULL};
    if (!e || e->kind != KDC_E_CALL || !e->is_method || !e->recv || !e->nkids ||
        !is_one_of(method_base(e), writes))
        return NULL;
    const kdc_expr_t *v = kdc_expr_strip(e->kids[e->nkids - 1]);
    /* insert({k, v}), insert(std::make_pair(k, v)), emplace_back(p, offset): a pair's
     * value (a struct's fields are followed field by field) */
    while (v && v->nkids >= 2 &&
           ((v->kind == KDC_E_INIT && !v->fields) ||
            (v->kind == KDC_E_CALL && (v->is_ctor || (v->name && strstr(v->name, "make_pair"))))))
        v = kdc_expr_strip(v->kids[v->nkids - 1]);
    *value = v;
    return key_of(o, e->recv);
}

static int is_constant(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_NEG && e->nkids == 1)
        e = kdc_expr_strip(e->kids[0]);
    return e && (e->has_ival || e->kind == KDC_E_INT);
}

/* Does e evaluate to the value being followed (no arithmetic on it)? */
static int holds(obo_t *o, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return 0;
    if (e->kind == KDC_E_COND && e->nkids == 3)
        return holds(o, e->kids[1]) || holds(o, e->kids[2]);
    /* an element of a container: kv.second, it->second, pairs[i].second */
    if (e->kind == KDC_E_MEMBER && e->name && !strcmp(e->name, "second") && e->nkids == 1 &&
        (!e->usr || strstr(e->usr, "pair")))
        return holds(o, e->kids[0]);
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1 &&
        container_read(o, kdc_expr_strip(e->kids[0])))
        return holds(o, e->kids[0]); /* *it */
    const char *ck = container_read(o, e);
    if (ck && !o->seed)
        return has_key(&o->own, ck);
    if (e->kind == KDC_E_CALL && e->is_method && e->name &&
        (!strcmp(method_base(e), "operator->") || !strcmp(method_base(e), "operator*")))
        return holds(o, container_of(e)); /* it->second, *it: the iterator's element */
    if (e->kind == KDC_E_CALL && e->is_ctor && e->callee_system && e->nkids == 1)
        return holds(o, e->kids[0]); /* a copy: auto it = c.find(k) */
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER && e->kind != KDC_E_CALL &&
        !(e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF) && e->kind != KDC_E_INDEX)
        return 0;
    if (o->seed)
        return has_key(&o->local, key_of(o, e));
    if (is_message_offset(e))
        return 1;
    if (e->kind == KDC_E_CALL)
        return 0;
    return has_key(&o->own, key_of(o, e));
}

/* ---------- which variables and fields hold a message's own offset ---------- */

static int is_ref_type(const char *t) {
    return t && strchr(t, '&') && !strstr(t, "&&");
}

/* A store into k in o->f: when k is one of o->f's reference parameters, the
 * function fills its caller's container. */
static void note_filled(obo_t *o, const char *k) {
    const kdc_func_t *f = o->f;
    for (unsigned a = 0; k && f && f->param_usrs && f->param_types && a < f->nparams; a++)
        if (f->param_usrs[a] && !strcmp(f->param_usrs[a], k) && is_ref_type(f->param_types[a]))
            add_key(&o->filled, k);
}

/* C++: a reference parameter is the container its callers pass
 * (`commit_done(c, topic, last_done)` with `std::map<..> &last_done`): own when
 * every caller passes an own one, or when the function fills it with own
 * values only (`remember(last, *msg)` storing `last[m.partition()] =
 * m.offset()`): then the caller's container is own too. */
static void collect_ref_params(obo_t *o, const kdc_expr_t *call) {
    const kdc_func_t *g = call->usr && !call->callee_system
                              ? kdc_program_find_callee(o->ctx->program, call->usr, o->f->tu)
                              : NULL;
    for (unsigned a = 0; g && g->param_usrs && g->param_types && a < call->nkids && a < g->nparams;
         a++) {
        if (!g->param_usrs[a] || !is_ref_type(g->param_types[a]))
            continue;
        const char *k = key_of(o, call->kids[a]);
        if (k && has_key(&o->own, k))
            add_key(&o->cand, g->param_usrs[a]);
        else if (!has_key(&o->filled, g->param_usrs[a]))
            add_key(&o->poison, g->param_usrs[a]);
        if (k && has_key(&o->own, g->param_usrs[a]) && has_key(&o->filled, g->param_usrs[a]))
            add_key(&o->cand, k);
    }
}

/* The container a C++ range-for's reference variable walks (`for (auto &kv : c)`,
 * written `kv = c[..]` by the frontend), or NULL. */
static const char *ref_loop_container(obo_t *o, const kdc_expr_t *e, const char **var) {
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return NULL;
    const kdc_expr_t *l = kdc_expr_strip(e->kids[0]), *r = kdc_expr_strip(e->kids[1]);
    if (!l || l->kind != KDC_E_REF || !l->type || !strchr(l->type, '&') || !strncmp(l->type, "const ", 6) ||
        !r || r->kind != KDC_E_INDEX || r->nkids != 2 || !r->kids[1] || r->kids[1]->kind != KDC_E_OTHER)
        return NULL;
    *var = l->usr;
    return key_of(o, r->kids[0]);
}

/* Changes made through a reference loop variable (`kv.second += 1`, `++kv.second`,
 * `kv.second = x`) change the container. */
typedef struct alias_scan {
    obo_t *o;
    const char *var, *container;
} alias_scan_t;

static int through_alias(const kdc_expr_t *e, void *arg) {
    alias_scan_t *a = arg;
    const kdc_expr_t *lv = kdc_expr_assigned(e);
    for (const kdc_expr_t *x = kdc_expr_strip(lv); x; x = x->nkids ? kdc_expr_strip(x->kids[0]) : NULL) {
        if (x->kind == KDC_E_REF) {
            if (x->usr == a->var && e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN &&
                x == kdc_expr_strip(lv))
                break; /* the loop's own `kv = c[..]` */
            if (x->usr == a->var)
                add_key(&a->o->poison, a->container);
            break;
        }
        if (x->kind != KDC_E_MEMBER)
            break;
    }
    return 0;
}

static int collect_own(const kdc_expr_t *e, void *arg) {
    obo_t *o = arg;
    const char *alias = NULL, *container = o->f ? ref_loop_container(o, e, &alias) : NULL;
    if (container && alias) {
        alias_scan_t a = {o, alias, container};
        kdc_func_walk_exprs(o->f, through_alias, &a);
    }
    if (e->kind == KDC_E_CALL && o->f)
        collect_ref_params(o, e);
    if (e->kind == KDC_E_INIT && e->fields) { /* {.partition = p, .offset = m->offset} */
        for (unsigned i = 0; i < e->nkids; i++) {
            if (!e->fields[i] || is_partition_offset_field(e->fields[i]))
                continue;
            if (holds(o, e->kids[i]))
                add_key(&o->cand, e->fields[i]);
            else if (!is_constant(e->kids[i]))
                add_key(&o->poison, e->fields[i]);
        }
        return 0;
    }
    const kdc_expr_t *stored = NULL;
    const char *ck = container_write(o, e, &stored);
    if (ck) { /* c.push_back(msg->offset()), c.emplace(p, msg->offset()) */
        note_filled(o, ck);
        if (holds(o, stored))
            add_key(&o->cand, ck);
        else if (!is_constant(stored))
            add_key(&o->poison, ck);
        return 0;
    }
    if (e->kind == KDC_E_BINARY && e->nkids == 2 &&
        (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN)) {
        const kdc_expr_t *lhs = kdc_expr_strip(e->kids[0]);
        const char *k = lhs && lhs->kind == KDC_E_CALL ? container_read(o, lhs) /* c[k] = .. */
                                                         : key_of(o, e->kids[0]);
        if (!k || is_partition_offset(e->kids[0]))
            return 0;
        if (lhs && lhs->kind == KDC_E_CALL)
            note_filled(o, k);
        const kdc_expr_t *r = kdc_expr_strip(e->kids[1]);
        if (e->op == KDC_OP_ASSIGN && holds(o, e->kids[1]))
            add_key(&o->cand, k);
        else if (e->op == KDC_OP_ASSIGN && r && r->kind == KDC_E_CALL && r->is_ctor && !r->nkids)
            ; /* std::map<int, int64_t> last; an empty container */
        else if (e->op == KDC_OP_COMPOUND_ASSIGN || !is_constant(e->kids[1]))
            add_key(&o->poison, k);
    } else if (e->kind == KDC_E_UNARY && e->nkids == 1 &&
               (e->op == KDC_OP_PREINC || e->op == KDC_OP_POSTINC || e->op == KDC_OP_PREDEC ||
                e->op == KDC_OP_POSTDEC)) {
        const kdc_expr_t *t = kdc_expr_strip(e->kids[0]);
        const char *rk = t && t->kind == KDC_E_CALL ? container_read(o, t) : NULL; /* c[k]++ */
        add_key(&o->poison, rk ? rk : key_of(o, e->kids[0]));
    }
    return 0;
}

static void compute_own(obo_t *o) {
    size_t nf = kdc_program_nfuncs(o->ctx->program);
    for (int round = 0; round < 8; round++) {
        size_t filled_before = o->filled.n;
        clear_keys(&o->cand);
        clear_keys(&o->poison);
        for (size_t i = 0; i < nf; i++) {
            o->f = kdc_program_func(o->ctx->program, i);
            kdc_func_walk_exprs(o->f, collect_own, o);
        }
        o->f = NULL;
        keyset_t next;
        kdc_strmap_init(&next);
        for (size_t i = 0; i < o->cand.cap; i++)
            if (o->cand.keys[i] && !has_key(&o->poison, o->cand.keys[i]))
                add_key(&next, o->cand.keys[i]);
        int same = next.n == o->own.n && o->filled.n == filled_before;
        for (size_t i = 0; same && i < next.cap; i++)
            same = !next.keys[i] || has_key(&o->own, next.keys[i]);
        kdc_strmap_free(&o->own);
        o->own = next;
        if (same)
            break;
    }
}

/* Keys of f holding parameter `seed` (copies without arithmetic). */
static int collect_local(const kdc_expr_t *e, void *arg) {
    obo_t *o = arg;
    if (e->kind == KDC_E_BINARY && e->nkids == 2 && e->op == KDC_OP_ASSIGN &&
        !is_partition_offset(e->kids[0]) && holds(o, e->kids[1])) {
        const char *k = key_of(o, e->kids[0]);
        if (k && !has_key(&o->local, k)) {
            add_key(&o->local, k);
            o->hit = 1;
        }
    }
    return 0;
}

/* ---------- where the partition offset goes ---------- */

/* The list (its key) a partition belongs to: rd_kafka_topic_partition_list_add(l, ..),
 * l->elems[i], or a variable assigned one of those in f; NULL when unknown. */
typedef struct list_find {
    obo_t *o;
    const char *var;
    const char *list;
    int other;
} list_find_t;

static const char *list_of_partition(obo_t *o, const kdc_expr_t *part, int depth);

static int find_part_assign(const kdc_expr_t *e, void *arg) {
    list_find_t *lf = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2 ||
        key_of(lf->o, e->kids[0]) != lf->var)
        return 0;
    const kdc_expr_t *r = kdc_expr_strip(e->kids[1]);
    if (r && r->kind == KDC_E_UNARY && r->op == KDC_OP_ADDR && r->nkids == 1)
        r = kdc_expr_strip(r->kids[0]);
    const char *l = list_of_partition(lf->o, r, 1);
    if (!l || (lf->list && lf->list != l))
        lf->other = 1;
    else
        lf->list = l;
    return 0;
}

static const char *list_of_partition(obo_t *o, const kdc_expr_t *part, int depth) {
    part = kdc_expr_strip(part);
    if (!part)
        return NULL;
    if (is_call(part, "rd_kafka_topic_partition_list_add") ||
        is_call(part, "rd_kafka_topic_partition_list_find"))
        return key_of(o, kdc_call_arg(part, 0));
    if (part->kind == KDC_E_INDEX && part->nkids == 2) {
        const kdc_expr_t *arr = kdc_expr_strip(part->kids[0]);
        if (arr && arr->kind == KDC_E_MEMBER && arr->name && !strcmp(arr->name, "elems") &&
            arr->nkids)
            return key_of(o, arr->kids[0]);
        return NULL;
    }
    if (part->kind == KDC_E_UNARY && part->op == KDC_OP_DEREF && part->nkids == 1)
        return list_of_partition(o, part->kids[0], depth);
    if (part->kind == KDC_E_REF && part->ref == KDC_REF_LOCAL && !depth) {
        list_find_t lf = {o, key_of(o, part), NULL, 0};
        kdc_func_walk_exprs(o->f, find_part_assign, &lf);
        return lf.other ? NULL : lf.list;
    }
    return NULL;
}

/* A commit, an offset store or a transaction step taking an offset list. */
static const kdc_expr_t *committed_list(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api || api->list == KDC_ARG_NONE ||
        !(api->roles & (KDC_API_COMMIT | KDC_API_STORE | KDC_API_TXN)))
        return NULL;
    const kdc_expr_t *list = kdc_api_arg(call, api->list);
    if (!list || kdc_expr_is_null(list))
        return NULL;
    const kdc_expr_t *s = kdc_expr_strip(list);
    const char *type = s && s->type ? s->type : list->type;
    if (call->is_method && !(type && (strstr(type, "vector") || strstr(type, "TopicPartition"))))
        return NULL; /* C++ commitSync(Message *) adds 1 itself */
    return list;
}

/* Does f hand an offset list to a commit, an offset store or a transaction? */
static int uses_offset_list(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++)
        if (committed_list(f->calls[c]))
            return 1;
    return 0;
}

static int commits_key(obo_t *o, const kdc_func_t *f, const char *list, int depth);

/* Does the call commit the list `list` of f: directly, or through a helper of
 * the program the list is passed to (up to three calls deep)? */
static int call_commits_key(obo_t *o, const kdc_func_t *f, const kdc_expr_t *call,
                            const char *list, int depth) {
    const kdc_expr_t *l = committed_list(call);
    if (l)
        return key_of(o, l) == list;
    if (depth >= 3 || kdc_api_lookup(call))
        return 0;
    int hit = 0;
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(o->ctx->facts), f, call, &callees);
    for (size_t k = 0; k < callees.n && !hit; k++) {
        const kdc_func_t *g = callees.v[k];
        for (unsigned a = 0; a < call->nkids && a < g->nparams && !hit; a++) {
            const kdc_expr_t *arg = kdc_expr_strip(call->kids[a]);
            if (arg && arg->kind == KDC_E_UNARY && arg->op == KDC_OP_ADDR && arg->nkids == 1)
                arg = arg->kids[0];
            if (key_of(o, arg) == list && g->param_usrs)
                hit = commits_key(o, g, g->param_usrs[a], depth + 1);
        }
    }
    free(callees.v);
    return hit;
}

static int commits_key(obo_t *o, const kdc_func_t *f, const char *list, int depth) {
    for (unsigned c = 0; list && c < f->ncalls; c++)
        if (call_commits_key(o, f, f->calls[c], list, depth))
            return 1;
    return 0;
}

typedef struct reach {
    obo_t *o;
    const char *list;
    const kdc_expr_t *start;
    int committed, exited;
} reach_t;

static int rewrites(reach_t *r, const kdc_node_t *nd) {
    const kdc_expr_t *e = nd->expr;
    if (!e || e == r->start)
        return 0;
    if (nd->kind == KDC_N_ASSIGN && e->kind == KDC_E_BINARY && e->nkids == 2 &&
        is_partition_offset(e->kids[0]) && e->kids[0]->nkids)
        return list_of_partition(r->o, e->kids[0]->kids[0], 0) == r->list;
    if (nd->kind == KDC_N_CALL && is_call(e, "rd_kafka_topic_partition_list_set_offset"))
        return key_of(r->o, kdc_call_arg(e, 0)) == r->list;
    return 0;
}

static int reach_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    reach_t *r = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit) {
        r->exited = 1;
        return -1;
    }
    if (nd->kind == KDC_N_CALL && call_commits_key(r->o, r->o->f, nd->expr, r->list, 0)) {
        r->committed = 1;
        return -1;
    }
    if (rewrites(r, nd))
        return -1; /* the offset is written again before any commit */
    return st;
}

typedef struct ret_find {
    obo_t *o;
    const char *list;
    int returned;
} ret_find_t;

static void find_return(const kdc_stmt_t *s, void *arg) {
    ret_find_t *rf = arg;
    if (s->kind == KDC_S_RETURN && s->expr && key_of(rf->o, s->expr) == rf->list)
        rf->returned = 1;
}

typedef struct caller_find {
    obo_t *o;
    const kdc_expr_t *call;
    const char *var;
} caller_find_t;

static int find_result_var(const kdc_expr_t *e, void *arg) {
    caller_find_t *cf = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        kdc_expr_strip(e->kids[1]) == cf->call)
        cf->var = key_of(cf->o, e->kids[0]);
    return 0;
}

/* The list leaves f (returned, or a parameter): does a caller commit it? */
static int caller_commits(obo_t *o, const kdc_func_t *f, const char *list) {
    int param = -1;
    for (unsigned i = 0; i < f->nparams; i++)
        if (f->param_usrs[i] == list)
            param = (int)i;
    ret_find_t rf = {o, list, 0};
    if (param < 0) {
        kdc_stmt_walk(f->body, find_return, &rf);
        if (!rf.returned)
            return 0;
    }
    const kdc_pts_t *pts = kdc_facts_pts_of(o->ctx->facts);
    size_t nf = kdc_program_nfuncs(o->ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *g = kdc_program_func(o->ctx->program, i);
        for (unsigned c = 0; c < g->ncalls; c++) {
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(pts, g, g->calls[c], &callees);
            int calls_f = 0;
            for (size_t k = 0; k < callees.n; k++)
                calls_f |= callees.v[k] == f;
            free(callees.v);
            if (!calls_f)
                continue;
            const char *var = NULL;
            if (param >= 0) {
                const kdc_expr_t *a = kdc_call_arg(g->calls[c], (unsigned)param);
                if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1)
                    a = a->kids[0];
                var = a ? key_of(o, a) : NULL;
            } else {
                caller_find_t cf = {o, g->calls[c], NULL};
                kdc_func_walk_exprs(g, find_result_var, &cf);
                var = cf.var;
            }
            if (var && commits_key(o, g, var, 0))
                return 1;
        }
    }
    return 0;
}

/* Is the partition offset written at node `start` (an assignment or set_offset
 * call) committed? */
static int sink_committed(obo_t *o, const kdc_expr_t *start, const char *list) {
    const kdc_func_t *f = o->f;
    if (!list)
        return uses_offset_list(f);
    const kdc_cfg_t *g = f->cfg;
    int node = -1;
    for (unsigned n = 0; g && n < g->n && node < 0; n++)
        if (g->nodes[n].expr == start)
            node = (int)n;
    if (node < 0)
        return commits_key(o, f, list, 0);
    reach_t r = {o, list, start, 0, 0};
    kdc_search_t s = {reach_visit, NULL, &r, 1};
    kdc_cfg_search(g, node, 0, &s);
    return r.committed || (r.exited && caller_commits(o, f, list));
}

/* ---------- the sinks ---------- */

typedef void (*sink_fn)(obo_t *o, const kdc_expr_t *value);

typedef struct sink_walk {
    obo_t *o;
    sink_fn fn;
} sink_walk_t;

static int visit_sinks(const kdc_expr_t *e, void *arg) {
    sink_walk_t *sw = arg;
    obo_t *o = sw->o;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        is_partition_offset(e->kids[0]) && holds(o, e->kids[1])) {
        const kdc_expr_t *lhs = kdc_expr_strip(e->kids[0]);
        const char *list = lhs->nkids ? list_of_partition(o, lhs->kids[0], 0) : NULL;
        if (sink_committed(o, e, list))
            sw->fn(o, kdc_expr_strip(e->kids[1]));
    }
    if (e->kind == KDC_E_CALL && e->name) {
        const kdc_expr_t *v = NULL, *list = NULL;
        int known = 0;
        if (!strcmp(e->name, "rd_kafka_topic_partition_list_set_offset") && e->nkids >= 4) {
            v = e->kids[3];
            list = e->kids[0];
            known = 1;
        } else if (!strcmp(e->name, "RdKafka::TopicPartition::create") && e->nkids >= 3) {
            v = e->kids[2];
        } else if (!strcmp(e->name, "RdKafka::TopicPartition::set_offset") && e->nkids >= 1) {
            v = e->kids[0];
        }
        if (v && holds(o, v) && sink_committed(o, e, known ? key_of(o, list) : NULL))
            sw->fn(o, kdc_expr_strip(v));
    }
    return 0;
}

static void mark_hit(obo_t *o, const kdc_expr_t *value) {
    (void)value;
    o->hit = 1;
}

/* Parameters of each function that reach a committed partition offset. */
static int param_reaches(obo_t *o, const kdc_func_t *f, unsigned p);

static int visit_param_calls(const kdc_expr_t *e, void *arg) {
    obo_t *o = arg;
    if (e->kind != KDC_E_CALL || o->hit)
        return 0;
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(o->ctx->facts), o->f, e, &callees);
    for (size_t k = 0; k < callees.n && !o->hit; k++) {
        unsigned char *sp = o->sink_param[callees.v[k]->index];
        for (unsigned a = 0; a < e->nkids && a < callees.v[k]->nparams; a++)
            if (sp && sp[a] == 1 && holds(o, e->kids[a]))
                o->hit = 1;
    }
    free(callees.v);
    return 0;
}

static int param_reaches(obo_t *o, const kdc_func_t *f, unsigned p) {
    if (!f->param_usrs || !f->param_usrs[p])
        return 0;
    o->f = f;
    o->seed = f->param_usrs[p];
    clear_keys(&o->local);
    add_key(&o->local, f->param_usrs[p]);
    for (int round = 0; round < 4; round++) {
        o->hit = 0;
        kdc_func_walk_exprs(f, collect_local, o);
        if (!o->hit)
            break;
    }
    o->hit = 0;
    sink_walk_t sw = {o, mark_hit};
    kdc_func_walk_exprs(f, visit_sinks, &sw);
    if (!o->hit)
        kdc_func_walk_exprs(f, visit_param_calls, o);
    int r = o->hit;
    o->seed = NULL;
    o->hit = 0;
    return r;
}

static void compute_sink_params(obo_t *o) {
    size_t nf = kdc_program_nfuncs(o->ctx->program);
    o->sink_param = calloc(nf, sizeof *o->sink_param);
    if (!o->sink_param)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(o->ctx->program, i);
        if (f->nparams && (o->sink_param[f->index] = calloc(f->nparams, 1)) == NULL)
            kdc_oom();
    }
    for (int changed = 1, round = 0; changed && round < 4; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(o->ctx->program, i);
            for (unsigned p = 0; p < f->nparams; p++)
                if (!o->sink_param[f->index][p] && param_reaches(o, f, p)) {
                    o->sink_param[f->index][p] = 1;
                    changed = 1;
                }
        }
    }
}

/* ---------- reports ---------- */

static const char *const MESSAGE =
    "the committed offset is the message's own offset: Kafka stores the next offset to read, so "
    "this message is delivered again after a restart or rebalance; use offset + 1 (or "
    "rd_kafka_commit_message)";

static void report_sink(obo_t *o, const kdc_expr_t *value) {
    kdc_rule_report(o->ctx, o->f, &value->loc, NULL, 0, "%s", MESSAGE);
}

static int visit_calls(const kdc_expr_t *e, void *arg) {
    obo_t *o = arg;
    if (e->kind != KDC_E_CALL)
        return 0;
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(o->ctx->facts), o->f, e, &callees);
    int done = 0;
    for (size_t k = 0; k < callees.n && !done; k++) {
        const kdc_func_t *g = callees.v[k];
        unsigned char *sp = o->sink_param[g->index];
        for (unsigned a = 0; a < e->nkids && a < g->nparams && !done; a++) {
            if (!sp || sp[a] != 1 || !holds(o, e->kids[a]))
                continue;
            if (g->param_usrs && g->param_usrs[a] && has_key(&o->own, g->param_usrs[a]))
                continue; /* a container the callee holds as its own: reported inside */
            const kdc_expr_t *v = kdc_expr_strip(e->kids[a]);
            kdc_notes_t notes = {0};
            kdc_notes_add(&notes, &g->loc,
                          "this function writes the offset it is given into a committed list");
            kdc_rule_report(o->ctx, o->f, &v->loc, notes.v, notes.n, "%s", MESSAGE);
            done = 1;
        }
    }
    free(callees.v);
    return 0;
}

static void check(kdc_rule_ctx_t *ctx) {
    obo_t o = {0};
    o.ctx = ctx;
    kdc_strmap_init(&o.own);
    kdc_strmap_init(&o.cand);
    kdc_strmap_init(&o.poison);
    kdc_strmap_init(&o.filled);
    kdc_strmap_init(&o.local);
    compute_own(&o);
    compute_sink_params(&o);
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        o.f = kdc_program_func(ctx->program, i);
        sink_walk_t sw = {&o, report_sink};
        kdc_func_walk_exprs(o.f, visit_sinks, &sw);
        kdc_func_walk_exprs(o.f, visit_calls, &o);
    }
    for (size_t i = 0; i < nf; i++)
        free(o.sink_param[kdc_program_func(ctx->program, i)->index]);
    free(o.sink_param);
    kdc_strmap_free(&o.own);
    kdc_strmap_free(&o.cand);
    kdc_strmap_free(&o.poison);
    kdc_strmap_free(&o.filled);
    kdc_strmap_free(&o.local);
}

const kdc_rule_t kdc_rule_commit_offset_off_by_one = {
    "commit-offset-off-by-one",
    "offset list built from msg->offset (without + 1) and committed or stored",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
