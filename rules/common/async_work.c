#include "async_work.h"
#include "consumer_common.h"
#include "pts.h"
#include "threads.h"

#include <string.h>

/* ---------- is a call executed repeatedly? ---------- */

int kdc_call_repeats(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call, int depth) {
    return kdc_call_in_loop(f, call) || kdc_facts_func_runs_repeatedly(ctx->facts, f, depth);
}

/* ---------- entries ---------- */

static void add_entry(kdc_async_vec_t *out, const kdc_func_t *func, const kdc_func_t *caller,
                      const kdc_expr_t *site, int repeated, kdc_async_kind_t kind) {
    for (size_t i = 0; i < out->n; i++) {
        kdc_async_entry_t *e = &out->v[i];
        if (e->func == func && e->kind == kind) {
            if (e->nsites < KDC_ASYNC_SITES) {
                e->callers[e->nsites] = caller;
                e->sites[e->nsites] = site;
            }
            e->nsites++;
            e->pool = 1;
            return;
        }
    }
    kdc_async_entry_t e = {.func = func, .caller = caller, .site = site, .nsites = 1,
                           .callers = {caller}, .sites = {site}, .pool = repeated, .kind = kind};
    KDC_VEC_PUSH(*out, e);
}

/* The function an argument names directly: fn, &fn, a lambda. */
static const kdc_func_t *named_func(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                    const kdc_expr_t *fn) {
    const kdc_expr_t *s = kdc_expr_strip(fn);
    /* a lambda or function converted to a std::function parameter */
    while (s && s->kind == KDC_E_CALL && s->is_ctor && s->nkids == 1)
        s = kdc_expr_strip(s->kids[0]);
    if (s && s->kind == KDC_E_UNARY && s->op == KDC_OP_ADDR && s->nkids == 1)
        s = kdc_expr_strip(s->kids[0]);
    if (s && s->kind == KDC_E_REF && s->ref == KDC_REF_FUNCTION && s->usr)
        return kdc_program_find_callee(ctx->program, s->usr, f->tu);
    if (s && s->kind == KDC_E_OTHER)
        return kdc_lambda_at(ctx, s);
    return NULL;
}

static void thread_entry(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_expr_t *fn, kdc_async_vec_t *out) {
    int repeated = kdc_call_repeats(ctx, f, call, 2);
    const kdc_func_t *entry = named_func(ctx, f, fn);
    if (entry) {
        add_entry(out, entry, f, call, repeated, KDC_ASYNC_THREAD);
        return;
    }
    kdc_bits_t b;
    kdc_pts_expr(kdc_facts_pts_of(ctx->facts), f, fn, &b);
    for (size_t k = kdc_bits_next(&b, 0); k < b.nwords * 64; k = kdc_bits_next(&b, k + 1)) {
        if (!kdc_bits_get(&b, k) || kdc_facts_obj(ctx->facts, k)->kind != KDC_OBJ_FUNC)
            continue;
        entry = kdc_program_find_func(ctx->program, kdc_facts_obj(ctx->facts, k)->str);
        if (entry)
            add_entry(out, entry, f, call, repeated, KDC_ASYNC_THREAD);
    }
    kdc_bits_free(&b);
}

/* An asynchronous API of code outside the program, by its name: the callback
 * runs later (a timer, a work queue, a request's completion). */
static int is_async_api(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call) {
    static const char *const words[] = {"async",  "timer",   "timeout", "defer",    "deferred",
                                        "later",  "schedule", "submit", "post",     "enqueue",
                                        "queue",  "dispatch", "then",   "idle",     "pool",
                                        "thread", "spawn",    NULL};
    /* iterations and searches run their callback before they return (g_queue_foreach) */
    static const char *const sync_words[] = {"each",  "foreach", "sort",   "find",   "search",
                                             "walk",  "iterate", "apply",  "map",    "visit",
                                             "filter", "reduce", "for",    "all",    NULL};
    if (!call->name || !*call->name || kdc_api_lookup(call) || kdc_api_is_librdkafka(call) ||
        (call->usr && !call->callee_system &&
         kdc_program_find_callee(ctx->program, call->usr, f->tu)))
        return 0;
    return kdc_name_has_word(call->name, words, NULL) &&
           !kdc_name_has_word(call->name, sync_words, NULL);
}

void kdc_async_entries(kdc_rule_ctx_t *ctx, kdc_async_vec_t *out) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_expr_t *fn = kdc_thread_fn_arg(call);
            if (fn) {
                thread_entry(ctx, f, call, fn, out);
                continue;
            }
            if (!is_async_api(ctx, f, call))
                continue;
            for (unsigned k = 0; k < call->nkids; k++) {
                const kdc_func_t *cb = named_func(ctx, f, call->kids[k]);
                if (cb && cb != f)
                    add_entry(out, cb, f, call, kdc_call_repeats(ctx, f, call, 2),
                              KDC_ASYNC_CALLBACK);
            }
        }
    }
    const kdc_func_t **funcs;
    const kdc_expr_t **sites;
    size_t n = kdc_facts_dr_callbacks(ctx->facts, &funcs, &sites);
    for (size_t i = 0; i < n; i++)
        add_entry(out, funcs[i], NULL, sites[i], 1, KDC_ASYNC_DR);
}

static int in_list(const kdc_func_list_t *v, const kdc_func_t *f) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == f)
            return 1;
    return 0;
}

void kdc_async_closure(kdc_rule_ctx_t *ctx, const kdc_func_t *entry, kdc_func_list_t *out) {
    KDC_VEC_PUSH(*out, entry);
    for (size_t i = 0; i < out->n; i++) {
        const kdc_func_t *f = out->v[i];
        for (unsigned c = 0; c < f->ncalls; c++) {
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(kdc_facts_pts_of(ctx->facts), f, f->calls[c], &callees);
            for (size_t k = 0; k < callees.n; k++)
                if (!in_list(out, callees.v[k]))
                    KDC_VEC_PUSH(*out, callees.v[k]);
            free(callees.v);
        }
    }
}

/* Hands consumed messages to the application (RdKafka::Queue::consume, a
 * partition queue's consume, is not in the API table). */
static int consumes_call(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_CONSUME) != 0;
    return call->name && !strcmp(call->name, "RdKafka::Queue::consume");
}

int kdc_async_consumes(const kdc_func_list_t *funcs) {
    for (size_t i = 0; i < funcs->n; i++)
        for (unsigned c = 0; c < funcs->v[i]->ncalls; c++)
            if (consumes_call(funcs->v[i]->calls[c]))
                return 1;
    return 0;
}

/* ---------- is the store for a message's own position? ---------- */

typedef KDC_VEC(const char *) key_vec_t;

struct kdc_offset_vars {
    kdc_program_t *program;
    key_vec_t keys; /* variables (per function) and fields holding a message's offset */
    int added;
};

static int has_key(const key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return 1;
    return 0;
}

static int is_message_offset(const kdc_expr_t *e) {
    if (e->kind == KDC_E_MEMBER)
        return e->usr && strstr(e->usr, "@S@rd_kafka_message_s@FI@offset");
    return e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "RdKafka::Message::offset");
}

static int mentions_visit(const kdc_expr_t *e, void *arg) {
    const kdc_offset_vars_t *d = arg;
    if (is_message_offset(e))
        return 1;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        return has_key(&d->keys, kdc_pts_lvalue_key(d->program, e));
    return 0;
}

static int derived(const kdc_offset_vars_t *d, const kdc_expr_t *e) {
    return e && kdc_expr_walk(e, mentions_visit, (void *)d);
}

static int collect_derived(const kdc_expr_t *e, void *arg) {
    kdc_offset_vars_t *d = arg;
    if (e->kind == KDC_E_INIT && e->fields) { /* (struct job){.offset = m->offset}, Job{.., m->offset()} */
        for (unsigned i = 0; i < e->nkids; i++)
            if (e->fields[i] && !has_key(&d->keys, e->fields[i]) && derived(d, e->kids[i])) {
                KDC_VEC_PUSH(d->keys, e->fields[i]);
                d->added = 1;
            }
        return 0;
    }
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
    if (!l || (l->kind != KDC_E_REF && l->kind != KDC_E_MEMBER))
        return 0;
    const char *k = kdc_pts_lvalue_key(d->program, l);
    if (k && !has_key(&d->keys, k) && derived(d, e->kids[1])) {
        KDC_VEC_PUSH(d->keys, k);
        d->added = 1;
    }
    return 0;
}

kdc_offset_vars_t *kdc_offset_vars_new(kdc_rule_ctx_t *ctx) {
    kdc_offset_vars_t *d = kdc_xrealloc(NULL, sizeof *d);
    *d = (kdc_offset_vars_t){ctx->program, {0}, 0};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (int round = 0; round < 4; round++) {
        d->added = 0;
        for (size_t i = 0; i < nf; i++)
            kdc_func_walk_exprs(kdc_program_func(ctx->program, i), collect_derived, d);
        if (!d->added)
            break;
    }
    return d;
}

void kdc_offset_vars_free(kdc_offset_vars_t *v) {
    if (v)
        free(v->keys.v);
    free(v);
}

typedef struct list_scan {
    const kdc_offset_vars_t *d;
    const char *list;
    int hit;
} list_scan_t;

/* In f: a partition offset written from a message's offset, or the list
 * assigned from a call that takes a message (offsets_for(m)). */
static int scan_list(const kdc_expr_t *e, void *arg) {
    list_scan_t *ls = arg;
    const kdc_offset_vars_t *d = ls->d;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_MEMBER && l->usr &&
            strstr(l->usr, "@S@rd_kafka_topic_partition_s@FI@offset") && derived(d, e->kids[1]))
            ls->hit = 1;
        const kdc_expr_t *r = kdc_expr_strip(e->kids[1]);
        if (ls->list && kdc_pts_lvalue_key(d->program, l) == ls->list && r &&
            r->kind == KDC_E_CALL)
            for (unsigned i = 0; i < r->nkids; i++)
                if (kdc_type_is_message(r->kids[i]->type))
                    ls->hit = 1;
    }
    if (e->kind == KDC_E_CALL && e->name) {
        if (!strcmp(e->name, "rd_kafka_topic_partition_list_set_offset") && e->nkids >= 4 &&
            derived(d, e->kids[3]))
            ls->hit = 1;
        if (!strcmp(e->name, "RdKafka::TopicPartition::create") && e->nkids >= 3 &&
            derived(d, e->kids[2]))
            ls->hit = 1;
        if (!strcmp(e->name, "RdKafka::TopicPartition::set_offset") && e->nkids >= 1 &&
            derived(d, e->kids[0]))
            ls->hit = 1;
    }
    return 0;
}

int kdc_stores_message_position(const kdc_offset_vars_t *d, const kdc_func_t *f,
                                const kdc_expr_t *call, const kdc_api_t *api) {
    if (!strncmp(api->name, "kdc_watermark_", 14))
        return 0; /* commits the contiguous confirmed prefix */
    if (!strcmp(api->name, "rd_kafka_offset_store") ||
        !strcmp(api->name, "RdKafka::Topic::offset_store"))
        return derived(d, kdc_call_arg(call, call->is_method ? 1 : 2));
    if (kdc_commit_message_of(call, api))
        return 1;
    if (api->list == KDC_ARG_NONE)
        return 1; /* kdc_commit_message and the like: by message */
    const kdc_expr_t *list = kdc_api_arg(call, api->list);
    if (!list || kdc_expr_is_null(list))
        return 0; /* commits the stored offsets */
    list_scan_t ls = {d, kdc_pts_lvalue_key(d->program, list), 0};
    kdc_func_walk_exprs(f, scan_list, &ls);
    return ls.hit;
}
