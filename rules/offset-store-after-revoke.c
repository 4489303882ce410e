/*
 * offset-store-after-revoke: an offset stored or committed from work that can
 * finish after a rebalance revoked the message's partition: a worker thread
 * handed the message, a callback an asynchronous API runs later, a delivery
 * report of the output produced for it. Rebalances are served inside the
 * consumer's poll; unless the rebalance callback waits for that work, or the
 * work checks that its partition is still assigned in the same epoch, it
 * stores the offset after the partition went to another consumer (the stale
 * commit moves the group's offset under the new owner; the new owner
 * reprocesses the message, or skips what the stale offset passes).
 *
 * Confidence: medium. Reported on each store or commit of a message's own
 * position (kdc_stores_message_position) reachable from such work, for a
 * subscribed consumer (the only consumer when the store names no handle).
 * Not reported: work that runs its own consume loop; work that checks the
 * assignment (rd_kafka_assignment(), kdc_assignment_check(), a
 * kdc_commit_message() given the assignment, a condition on state the
 * rebalance callback writes: an epoch or generation); a rebalance callback
 * that waits for in-flight work (joins, waits, drains: a call named so, or a
 * loop on state the work writes; for delivery reports a flush or a
 * confirmation wait); threads joined (or their futures' get()) before the
 * thread that started them consumes again, a joining loop taken to run at
 * least once; delivery reports of produces flushed or confirmed before the
 * next consume. Consumers whose rebalance handling cannot be seen (events,
 * a callback outside the program) are not reported.
 */
#include "common/async_work.h"
#include "common/consumer_common.h"
#include "pts.h"

#include <string.h>

/* ---------- the program's rebalance callbacks ---------- */

typedef struct rebalance {
    kdc_func_list_t funcs;  /* the callbacks and what they reach */
    int unseen;             /* a callback without a body in the program */
    kdc_func_list_t cbs;    /* the callbacks themselves */
    const kdc_loc_t *where; /* for notes: a callback, or where libkdc's was registered */
} rebalance_t;

typedef KDC_VEC(const kdc_expr_t *) expr_vec_t;

static void add_func(kdc_func_list_t *l, const kdc_func_t *f) {
    for (size_t i = 0; i < l->n; i++)
        if (l->v[i] == f)
            return;
    KDC_VEC_PUSH(*l, f);
}

/* e, or x for &x. */
static const kdc_expr_t *strip_addr(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1)
        return kdc_expr_strip(e->kids[0]);
    return e;
}

static void rebalance_callbacks(kdc_rule_ctx_t *ctx, rebalance_t *rb) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        const char *b = f->name ? strrchr(f->name, ':') : NULL;
        if (f->class_usr && b && !strcmp(b + 1, "rebalance_cb"))
            add_func(&rb->cbs, f); /* C++ RebalanceCb::rebalance_cb */
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if (!api || !(api->roles & KDC_API_REBALANCE_CB))
                continue;
            const kdc_expr_t *v = strip_addr(kdc_api_arg(f->calls[c], api->value));
            const kdc_func_t *cb = v && v->kind == KDC_E_REF && v->ref == KDC_REF_FUNCTION && v->usr
                                       ? kdc_program_find_callee(ctx->program, v->usr, f->tu)
                                       : NULL;
            if (cb && cb->body)
                add_func(&rb->cbs, cb);
            else if (v && v->kind == KDC_E_REF && v->name &&
                     !strcmp(v->name, "kdc_assignment_rebalance_cb"))
                rb->where = &f->calls[c]->loc; /* libkdc's: epochs, no wait */
            else
                rb->unseen = 1;
        }
    }
    /* libkdc's rebalance hook runs inside the rebalance: kdc_assignment_new(&a, hook, ..) */
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_expr_t *h = call->name && !strcmp(call->name, "kdc_assignment_new")
                                      ? strip_addr(kdc_call_arg(call, 1))
                                      : NULL;
            const kdc_func_t *hook = h && h->kind == KDC_E_REF && h->ref == KDC_REF_FUNCTION && h->usr
                                         ? kdc_program_find_callee(ctx->program, h->usr, f->tu)
                                         : NULL;
            if (hook && hook->body)
                add_func(&rb->cbs, hook);
        }
    }
    if (rb->cbs.n)
        rb->where = &rb->cbs.v[0]->loc;
    for (size_t i = 0; i < rb->cbs.n; i++) {
        kdc_func_list_t reach = {0};
        kdc_async_closure(ctx, rb->cbs.v[i], &reach);
        for (size_t k = 0; k < reach.n; k++)
            add_func(&rb->funcs, reach.v[k]);
        free(reach.v);
    }
}

/* ---------- state written and read ---------- */

typedef KDC_VEC(const char *) key_vec_t;

static void add_key(key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return;
    if (k)
        KDC_VEC_PUSH(*v, k);
}

static int has_key(const key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return 1;
    return 0;
}

/* Global variables and fields the functions write: assignments, ++/--,
 * C11 atomic_* and GCC __atomic/__sync calls, std::atomic methods. */
static void written_keys(kdc_rule_ctx_t *ctx, const kdc_func_list_t *funcs, key_vec_t *out) {
    for (size_t i = 0; i < funcs->n; i++) {
        const kdc_cfg_t *g = funcs->v[i]->cfg;
        for (unsigned n = 0; g && n < g->n; n++) {
            const kdc_node_t *nd = &g->nodes[n];
            if (nd->kind == KDC_N_ASSIGN) {
                const kdc_expr_t *l = kdc_expr_strip(kdc_expr_assigned(nd->expr));
                if (l && !(l->kind == KDC_E_REF && l->ref != KDC_REF_GLOBAL))
                    add_key(out, kdc_pts_lvalue_key(ctx->program, l));
            } else if (nd->kind == KDC_N_CALL && nd->expr->name) {
                const kdc_expr_t *c = nd->expr;
                if ((!strncmp(c->name, "atomic_", 7) || !strncmp(c->name, "__atomic_", 9) ||
                     !strncmp(c->name, "__c11_atomic_", 13) || !strncmp(c->name, "__sync_", 7)) &&
                    !strstr(c->name, "load") && c->nkids)
                    add_key(out, kdc_pts_lvalue_key(ctx->program, strip_addr(c->kids[0])));
                else if (c->is_method && !strstr(c->name, "load") && !strstr(c->name, "operator ")) {
                    /* std::atomic: g.store(..), g.fetch_add(..), ++g (the object is kid 0) */
                    const kdc_expr_t *obj = c->recv ? c->recv : c->nkids ? c->kids[0] : NULL;
                    if (obj && obj->type && strstr(obj->type, "atomic"))
                        add_key(out, kdc_pts_lvalue_key(ctx->program, obj));
                }
            }
        }
    }
}

typedef struct reads {
    kdc_program_t *p;
    const key_vec_t *keys;
} reads_t;

static int reads_visit(const kdc_expr_t *e, void *arg) {
    reads_t *r = arg;
    return (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) &&
           has_key(r->keys, kdc_pts_lvalue_key(r->p, e));
}

/* Does a condition (loop conditions only: `loops`) of the functions read one
 * of the keys? */
static int tests_keys(kdc_rule_ctx_t *ctx, const kdc_func_list_t *funcs, const key_vec_t *keys,
                      int loops) {
    reads_t r = {ctx->program, keys};
    for (size_t i = 0; keys->n && i < funcs->n; i++) {
        const kdc_cfg_t *g = funcs->v[i]->cfg;
        for (unsigned n = 0; g && n < g->n; n++)
            if (g->nodes[n].kind == KDC_N_COND && (!loops || g->nodes[n].loop_cond) &&
                kdc_expr_walk(g->nodes[n].expr, reads_visit, &r))
                return 1;
    }
    return 0;
}

/* ---------- waits ---------- */

static int is_wait_call(const kdc_expr_t *c) {
    static const char *const words[] = {"join", "wait", "timedwait", "drain", "quiesce", NULL};
    if (!c->name || !*c->name)
        return 0;
    if (kdc_name_has_word(c->name, words, NULL))
        return 1;
    /* std::future::get() waits for the std::async task */
    const char *b = strrchr(c->name, ':');
    return c->is_method && b && !strcmp(b + 1, "get") && c->recv && c->recv->type &&
           strstr(c->recv->type, "future");
}

static int is_delivery_wait(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *c) {
    const kdc_api_t *api = kdc_api_lookup(c);
    return (api && (api->roles & (KDC_API_FLUSH | KDC_API_CONFIRM))) ||
           kdc_options_has_role(ctx->opts, c, KDC_ROLE_CONFIRM) ||
           kdc_facts_call_roles(ctx->facts, f, c).confirms;
}

/* Does the rebalance handling wait for the work: a join/wait/drain call, a
 * loop on state the work writes, for delivery reports a flush, a
 * confirmation wait or an outq_len() loop? */
static int rebalance_waits(kdc_rule_ctx_t *ctx, const rebalance_t *rb, const key_vec_t *work_writes,
                           int deliveries) {
    for (size_t i = 0; i < rb->funcs.n; i++) {
        const kdc_func_t *f = rb->funcs.v[i];
        const kdc_cfg_t *g = f->cfg;
        for (unsigned c = 0; c < f->ncalls; c++)
            if (is_wait_call(f->calls[c]) ||
                (deliveries && is_delivery_wait(ctx, f, f->calls[c])))
                return 1;
        for (unsigned n = 0; deliveries && g && n < g->n; n++) {
            const kdc_api_t *api;
            if (g->nodes[n].kind == KDC_N_CALL && (api = kdc_api_lookup(g->nodes[n].expr)) &&
                (api->roles & KDC_API_OUTQ))
                return 1;
        }
    }
    return tests_keys(ctx, &rb->funcs, work_writes, 1);
}

/* Does the work check the assignment: rd_kafka_assignment(), libkdc's epoch
 * checks, a commit helper given the assignment, or a condition on state the
 * rebalance callback writes? */
static int work_checks_assignment(kdc_rule_ctx_t *ctx, const kdc_func_list_t *work,
                                  const key_vec_t *rebalance_writes) {
    static const char *const checks[] = {"rd_kafka_assignment", "rd_kafka_assignment_lost",
                                         "RdKafka::KafkaConsumer::assignment",
                                         "RdKafka::KafkaConsumer::assignment_lost",
                                         "kdc_assignment_check", "kdc_assignment_epoch", NULL};
    for (size_t i = 0; i < work->n; i++) {
        const kdc_func_t *f = work->v[i];
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            for (size_t k = 0; call->name && checks[k]; k++)
                if (!strcmp(call->name, checks[k]))
                    return 1;
            if (call->name && !strncmp(call->name, "kdc_commit_message", 18) &&
                call->nkids > 2 && !kdc_expr_is_null(call->kids[2]))
                return 1; /* libkdc refuses a stale epoch */
        }
    }
    return tests_keys(ctx, work, rebalance_writes, 0);
}

/* ---------- the thread that starts the work waits for it ---------- */

/* Does the call wait: a join/wait/drain call, or a helper of the program that
 * makes one (two levels down)? For deliveries: a flush or confirmation. */
static int call_waits(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *c,
                      int deliveries, int depth) {
    if (deliveries ? is_delivery_wait(ctx, f, c) : is_wait_call(c))
        return 1;
    const kdc_func_t *g = c->usr && !kdc_api_lookup(c) && !c->callee_system
                              ? kdc_program_find_callee(ctx->program, c->usr, f->tu)
                              : NULL;
    for (unsigned k = 0; g && g != f && depth > 0 && k < g->ncalls; k++)
        if (call_waits(ctx, g, g->calls[k], deliveries, depth - 1))
            return 1;
    return 0;
}

typedef struct before_poll {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    int deliveries; /* a flush or confirmation is the wait */
    int consumed, returned;
} before_poll_t;

static int before_poll_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    before_poll_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->consumed)
        return -1;
    if (n == g->exit) {
        w->returned = 1;
        return -1;
    }
    if (nd->kind != KDC_N_CALL)
        return st;
    if (call_waits(w->ctx, w->f, nd->expr, w->deliveries, 2))
        return -1;
    if (kdc_facts_call_roles(w->ctx->facts, w->f, nd->expr).consumes) {
        w->consumed = 1;
        return -1;
    }
    return st;
}

/* Does loop l of f wait (a join loop over the threads just started)? */
static int loop_waits(before_poll_t *w, const kdc_cfg_t *g, int l) {
    for (unsigned n = 0; n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_CALL && kdc_cfg_in_loop(g, (int)n, l) &&
            call_waits(w->ctx, w->f, g->nodes[n].expr, w->deliveries, 2))
            return 1;
    return 0;
}

/* A loop that waits runs at least once on these paths: it waits for the work
 * started before it (`for (i = 0; i < n; i++) pthread_join(t[i], NULL)` after
 * n threads were started; `for (auto &f : futures) f.get()`). */
static int before_poll_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    before_poll_t *w = arg;
    int l = g->node_loop[n];
    const kdc_node_t *nd = &g->nodes[n];
    if (l < 0 || !((nd->kind == KDC_N_COND && nd->loop_cond) || n == g->loops[l].head))
        return 1;
    return !kdc_cfg_leaves_loop(g, nd->succ[i], l) || !loop_waits(w, g, l);
}

/* From `call` in f, is every way to the next consume through a wait? Past
 * f's return, each caller goes on from its call (three levels up); code
 * nobody calls (a thread's routine, main) ends there. */
static int waited_before_poll(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                              int deliveries, int depth) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return 0;
    before_poll_t w = {ctx, f, deliveries, 0, 0};
    kdc_search_t s = {before_poll_visit, before_poll_edge, &w, 1};
    kdc_cfg_search(g, g->call_node[call->call_id], 0, &s);
    if (w.consumed)
        return 0;
    if (!w.returned)
        return 1;
    if (depth == 0)
        return 0;
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *caller = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; caller != f && c < caller->ncalls; c++) {
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(pts, caller, caller->calls[c], &callees);
            int hit = 0;
            for (size_t k = 0; k < callees.n; k++)
                hit |= callees.v[k] == f;
            free(callees.v);
            if (hit && !waited_before_poll(ctx, caller, caller->calls[c], deliveries, depth - 1))
                return 0;
        }
    }
    return 1;
}

/* Threads joined, wherever they are started, before the thread that started
 * them consumes again. */
static int threads_joined(kdc_rule_ctx_t *ctx, const kdc_async_entry_t *en) {
    if (en->nsites > KDC_ASYNC_SITES)
        return 0;
    for (unsigned i = 0; i < en->nsites; i++)
        if (!en->callers[i] || !en->sites[i] ||
            !waited_before_poll(ctx, en->callers[i], en->sites[i], 0, 3))
            return 0;
    return en->nsites > 0;
}

/* Delivery reports of produces that are flushed or confirmed before the next
 * consume. */
static int deliveries_waited(kdc_rule_ctx_t *ctx) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    int produces = 0;
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (!api || !(api->roles & KDC_API_PRODUCE))
            continue;
        produces = 1;
        if (!waited_before_poll(ctx, f, call, 1, 3))
            return 0;
    }
    return produces;
}

/* ---------- the consumer ---------- */

static size_t nconsumers(kdc_rule_ctx_t *ctx, size_t *only) {
    size_t n = 0, nobjs = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts));
    for (size_t i = 0; i < nobjs; i++)
        if (kdc_facts_obj(ctx->facts, i)->kind == KDC_OBJ_CLIENT &&
            kdc_facts_client_type(ctx->facts, i) == 1) {
            *only = i;
            n++;
        }
    return n;
}

static int subscribed(kdc_rule_ctx_t *ctx, size_t client) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (api && (api->roles & KDC_API_SUBSCRIBE) &&
            kdc_call_on_client(ctx, f, call, api, 1, client))
            return 1;
    }
    return 0;
}

/* The subscribed consumer the store acts on, or -1. */
static long store_consumer(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                           const kdc_api_t *api) {
    kdc_bits_t clients;
    int unknown = 0;
    long found = -1;
    kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64 && found < 0;
         k = kdc_bits_next(&clients, k + 1))
        if (kdc_bits_get(&clients, k) && kdc_facts_client_type(ctx->facts, k) == 1)
            found = (long)k;
    kdc_bits_free(&clients);
    size_t only;
    if (found < 0 && unknown && nconsumers(ctx, &only) == 1)
        found = (long)only; /* offset_store(m->rkt, ..): the program's one consumer */
    return found >= 0 && subscribed(ctx, (size_t)found) ? found : -1;
}

/* ---------- the rule ---------- */

static const char *work_kind(kdc_async_kind_t k) {
    switch (k) {
    case KDC_ASYNC_THREAD:
        return "a worker thread";
    case KDC_ASYNC_CALLBACK:
        return "a callback an asynchronous call runs later";
    default:
        return "a delivery report";
    }
}

static void check_entry(kdc_rule_ctx_t *ctx, const kdc_async_entry_t *en, const rebalance_t *rb,
                        const kdc_offset_vars_t *vars, int *dr_waited, const key_vec_t *rb_writes,
                        expr_vec_t *seen) {
    kdc_func_list_t work = {0};
    kdc_async_closure(ctx, en->func, &work);
    key_vec_t work_writes = {0};
    if (kdc_async_consumes(&work) || work_checks_assignment(ctx, &work, rb_writes) ||
        (en->kind == KDC_ASYNC_THREAD && threads_joined(ctx, en)) ||
        (en->kind == KDC_ASYNC_DR &&
         (*dr_waited < 0 ? (*dr_waited = deliveries_waited(ctx)) : *dr_waited)))
        goto done;
    written_keys(ctx, &work, &work_writes);
    for (size_t i = 0; i < work.n; i++) {
        const kdc_func_t *f = work.v[i];
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)) ||
                !kdc_stores_message_position(vars, f, call, api))
                continue;
            long consumer = store_consumer(ctx, f, call, api);
            if (consumer < 0)
                continue;
            kdc_tri_t has_cb = kdc_facts_client_has_rebalance_cb(ctx->facts, (size_t)consumer);
            if (has_cb == KDC_TRI_UNKNOWN ||
                (has_cb == KDC_TRI_YES &&
                 (rb->unseen || !rb->where ||
                  rebalance_waits(ctx, rb, &work_writes, en->kind == KDC_ASYNC_DR))))
                continue;
            int dup = 0;
            for (size_t k = 0; k < seen->n; k++)
                dup |= seen->v[k] == call;
            if (dup)
                continue;
            KDC_VEC_PUSH(*seen, call);
            kdc_notes_t notes = {0};
            kdc_notes_add(&notes, &en->func->loc,
                          en->kind == KDC_ASYNC_DR ? "delivery-report callback"
                          : en->kind == KDC_ASYNC_THREAD
                              ? "thread start routine: runs while the consumer keeps polling"
                              : "callback run later by an asynchronous call");
            if (en->site)
                kdc_notes_add(&notes, &en->site->loc,
                              en->kind == KDC_ASYNC_DR ? "registered here" : "started here");
            if (has_cb == KDC_TRI_YES)
                kdc_notes_add(&notes, rb->where,
                              "rebalance callback: it neither waits for this work nor changes "
                              "state the work checks");
            else
                kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, (size_t)consumer),
                              "consumer created here without a rebalance callback");
            kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                            "offset stored or committed from %s, which can finish after a "
                            "rebalance revoked the message's partition: the stale offset moves "
                            "the group's position under the partition's new owner; check the "
                            "partition's assignment epoch first (kdc_assignment_check, a "
                            "generation the rebalance callback advances), or finish the "
                            "in-flight work in the rebalance callback",
                            work_kind(en->kind));
        }
    }
done:
    free(work_writes.v);
    free(work.v);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_async_vec_t entries = {0};
    kdc_async_entries(ctx, &entries);
    if (!entries.n) {
        free(entries.v);
        return;
    }
    rebalance_t rb = {0};
    rebalance_callbacks(ctx, &rb);
    key_vec_t rb_writes = {0};
    written_keys(ctx, &rb.funcs, &rb_writes);
    kdc_offset_vars_t *vars = kdc_offset_vars_new(ctx);
    int dr_waited = -1; /* deliveries_waited(), once a delivery report needs it */
    expr_vec_t seen = {0};
    for (size_t e = 0; e < entries.n; e++)
        check_entry(ctx, &entries.v[e], &rb, vars, &dr_waited, &rb_writes, &seen);
    free(seen.v);
    kdc_offset_vars_free(vars);
    free(rb_writes.v);
    free(rb.funcs.v);
    free(rb.cbs.v);
    free(entries.v);
}

const kdc_rule_t kdc_rule_offset_store_after_revoke = {
    .name = "offset-store-after-revoke",
    .summary = "offset stored from work that can finish after its partition was revoked",
    .severity = KDC_SEV_WARNING,
    .confidence = "medium",
    .in_default = 1,
    .check = check,
};
