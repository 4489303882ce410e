/*
 * out-of-order-offset-store: offsets stored or committed from worker threads
 * (thread start routines given to pthread_create, thrd_create, std::thread,
 * std::jthread, std::async, or a std::vector<std::thread> emplace_back) that
 * process messages a consumer thread handed them. Workers finish in any
 * order: a worker that stores offset 105 while another still works on 101
 * lets the commit pass 101, and a crash then loses it.
 *
 * Confidence: medium. Reported on each store/commit of a message's own
 * position reachable from the start routine of a worker pool (the routine is
 * started at several places, in a loop, or by a function called several
 * times or in a loop): commit_message / offset_store / C++ commitSync(msg),
 * or an offset list whose offsets come from a message's offset. Not
 * reported: a thread that runs its own consume loop (its offsets are
 * ordered); a single dedicated thread (one writer fed in order); a commit of
 * the stored offsets (NULL list) from a periodic committer thread; a
 * watermark that stores a position it computed itself (libkdc's
 * kdc_watermark_*, or a contiguous-prefix tracker). The fix is a watermark
 * that commits only the contiguous confirmed prefix per partition.
 */
#include "common/consumer_common.h"
#include "common/threads.h"

#include <string.h>

typedef KDC_VEC(const char *) key_vec_t;

static int has_key(const key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return 1;
    return 0;
}

/* ---------- is the store for a message's own position? ---------- */

typedef struct derive {
    kdc_rule_ctx_t *ctx;
    key_vec_t keys; /* variables (per function) and fields holding a message's offset */
    int added;
} derive_t;

static int is_message_offset(const kdc_expr_t *e) {
    if (e->kind == KDC_E_MEMBER)
        return e->usr && strstr(e->usr, "@S@rd_kafka_message_s@FI@offset");
    return e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "RdKafka::Message::offset");
}

static int mentions_visit(const kdc_expr_t *e, void *arg) {
    derive_t *d = arg;
    if (is_message_offset(e))
        return 1;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        return has_key(&d->keys, kdc_pts_lvalue_key(d->ctx->program, e));
    return 0;
}

static int derived(derive_t *d, const kdc_expr_t *e) {
    return e && kdc_expr_walk(e, mentions_visit, d);
}

static int collect_derived(const kdc_expr_t *e, void *arg) {
    derive_t *d = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
    if (!l || (l->kind != KDC_E_REF && l->kind != KDC_E_MEMBER))
        return 0;
    const char *k = kdc_pts_lvalue_key(d->ctx->program, l);
    if (k && !has_key(&d->keys, k) && derived(d, e->kids[1])) {
        KDC_VEC_PUSH(d->keys, k);
        d->added = 1;
    }
    return 0;
}

typedef struct list_scan {
    derive_t *d;
    const char *list;
    int hit;
} list_scan_t;

/* In f: a partition offset written from a message's offset, or the list
 * assigned from a call that takes a message (offsets_for(m)). */
static int scan_list(const kdc_expr_t *e, void *arg) {
    list_scan_t *ls = arg;
    derive_t *d = ls->d;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_MEMBER && l->usr &&
            strstr(l->usr, "@S@rd_kafka_topic_partition_s@FI@offset") && derived(d, e->kids[1]))
            ls->hit = 1;
        const kdc_expr_t *r = kdc_expr_strip(e->kids[1]);
        if (ls->list && kdc_pts_lvalue_key(d->ctx->program, l) == ls->list && r &&
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

/* Does this store/commit pick a message's own position (rather than commit
 * the stored offsets, or a position a watermark computed)? */
static int stores_message_position(derive_t *d, const kdc_func_t *f, const kdc_expr_t *call,
                                   const kdc_api_t *api) {
    if (!strncmp(api->name, "kdc_watermark_", 14))
        return 0; /* commits the contiguous confirmed prefix */
    if (!strcmp(api->name, "rd_kafka_offset_store") || !strcmp(api->name, "RdKafka::Topic::offset_store"))
        return derived(d, kdc_call_arg(call, call->is_method ? 1 : 2));
    if (kdc_commit_message_of(call, api))
        return 1;
    if (api->list == KDC_ARG_NONE)
        return 1; /* kdc_commit_message and the like: by message */
    const kdc_expr_t *list = kdc_api_arg(call, api->list);
    if (!list || kdc_expr_is_null(list))
        return 0; /* commits the stored offsets */
    list_scan_t ls = {d, kdc_pts_lvalue_key(d->ctx->program, list), 0};
    kdc_func_walk_exprs(f, scan_list, &ls);
    return ls.hit;
}

/* Hands consumed messages to the application (RdKafka::Queue::consume, a
 * partition queue's consume, is not in the API table). */
static int consumes_call(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_CONSUME) != 0;
    return call->name && !strcmp(call->name, "RdKafka::Queue::consume");
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_thread_entry_vec_t entries = {0};
    kdc_thread_entries(ctx, &entries);
    derive_t d = {ctx, {0}, 0};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (int round = 0; round < 4; round++) {
        d.added = 0;
        for (size_t i = 0; i < nf; i++)
            kdc_func_walk_exprs(kdc_program_func(ctx->program, i), collect_derived, &d);
        if (!d.added)
            break;
    }
    KDC_VEC(const kdc_expr_t *) seen = {0};
    for (size_t e = 0; e < entries.n; e++) {
        if (!entries.v[e].pool)
            continue; /* one dedicated thread processes in order */
        kdc_func_vec_t reach = {0};
        kdc_func_closure(ctx, entries.v[e].func, &reach);
        int consumes = 0;
        for (size_t i = 0; i < reach.n && !consumes; i++)
            for (unsigned c = 0; c < reach.v[i]->ncalls && !consumes; c++)
                consumes = consumes_call(reach.v[i]->calls[c]);
        for (size_t i = 0; i < reach.n && !consumes; i++) {
            const kdc_func_t *f = reach.v[i];
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)) ||
                    !stores_message_position(&d, f, f->calls[c], api))
                    continue;
                int dup = 0;
                for (size_t k = 0; k < seen.n; k++)
                    dup |= seen.v[k] == f->calls[c];
                if (dup)
                    continue;
                KDC_VEC_PUSH(seen, f->calls[c]);
                kdc_notes_t notes = {0};
                kdc_notes_add(&notes, &entries.v[e].func->loc,
                              "thread start routine: messages are processed concurrently here");
                kdc_notes_add(&notes, &entries.v[e].site->loc, "the worker threads are started here");
                kdc_rule_report(ctx, f, &f->calls[c]->loc, notes.v, notes.n,
                                "offset stored or committed from a worker thread: workers finish "
                                "out of order, so a later offset can be committed while an "
                                "earlier message is still in flight and a crash loses it; commit "
                                "only the contiguous completed prefix per partition (a watermark)");
            }
        }
        free(reach.v);
    }
    free(seen.v);
    free(d.keys.v);
    free(entries.v);
}

const kdc_rule_t kdc_rule_out_of_order_offset_store = {
    "out-of-order-offset-store",
    "offsets stored or committed from concurrent worker threads without a watermark",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
