/*
 * out-of-order-offset-store: offsets stored or committed in the order
 * concurrent work finishes: from worker threads (thread start routines
 * given to pthread_create, thrd_create, std::thread, std::jthread,
 * std::async, or a std::vector<std::thread> emplace_back) that process
 * messages a consumer thread handed them, from the completion callbacks of
 * asynchronous requests, and from delivery reports of outputs spread over
 * several partitions. Work finishes in any order: a worker that stores
 * offset 105 while another still works on 101 lets the commit pass 101, and
 * a crash then loses it.
 *
 * Confidence: medium. Reported on each store/commit of a message's own
 * position reachable from the start routine of a worker pool (the routine is
 * started at several places, in a loop, or by a function called several
 * times or in a loop), from a completion callback registered repeatedly, or
 * from a delivery-report callback when some produce that carries a
 * per-message opaque leaves the partition to the partitioner (or takes it
 * from elsewhere than the input), or comes from a producer whose retries can
 * reorder one partition (not idempotent, retries on, several requests in
 * flight): commit_message / offset_store / C++
 * commitSync(msg), or an offset list whose offsets come from a message's
 * offset. Not reported: a thread that runs its own consume loop (its offsets
 * are ordered); a single dedicated thread (one writer fed in order); a
 * commit of the stored offsets (NULL list) from a periodic committer thread;
 * a watermark that stores a position it computed itself (libkdc's
 * kdc_watermark_*, or a contiguous-prefix tracker); delivery reports of
 * outputs pinned to the input's partition (strict: a note). The fix is a
 * watermark that commits only the contiguous confirmed prefix per partition.
 */
#include "common/async_work.h"
#include "common/config_common.h"
#include "common/consumer_common.h"
#include "pts.h"

#include <string.h>

/* ---------- how delivery reports are ordered ---------- */

typedef KDC_VEC(const char *) key_vec_t;

typedef struct part_keys {
    kdc_program_t *p;
    key_vec_t keys; /* variables and fields holding an input message's partition */
    int added;
} part_keys_t;

static int has_key(const key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return 1;
    return 0;
}

static int input_partition_visit(const kdc_expr_t *e, void *arg) {
    part_keys_t *pk = arg;
    if (e->kind == KDC_E_MEMBER && e->usr && strstr(e->usr, "@S@rd_kafka_message_s@FI@partition"))
        return 1;
    if (e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "RdKafka::Message::partition"))
        return 1;
    return (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) &&
           has_key(&pk->keys, kdc_pts_lvalue_key(pk->p, e));
}

static int collect_part_keys(const kdc_expr_t *e, void *arg) {
    part_keys_t *pk = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const char *k = kdc_pts_lvalue_key(pk->p, e->kids[0]);
    if (k && !has_key(&pk->keys, k) && kdc_expr_walk(e->kids[1], input_partition_visit, pk)) {
        KDC_VEC_PUSH(pk->keys, k);
        pk->added = 1;
    }
    return 0;
}

/* Does the produce send each input partition to one output partition: a
 * constant partition, or one taken from the input message's partition? */
static int pinned(part_keys_t *pk, const kdc_expr_t *partition) {
    const kdc_expr_t *e = kdc_expr_strip(partition);
    if (!e)
        return 0; /* producev without RD_KAFKA_V_PARTITION: the partitioner */
    if (e->has_ival)
        return e->ival >= 0; /* RD_KAFKA_PARTITION_UA is -1 */
    return kdc_expr_walk(e, input_partition_visit, pk);
}

/* Can a retry put a producer's output behind a later one of the same
 * partition: not idempotent (nor transactional), retries on and more than
 * one request in flight (librdkafka's defaults)? 1 yes, 0 no, -1 cannot tell. */
static int retries_may_reorder(kdc_rule_ctx_t *ctx, size_t producer) {
    switch (kdc_facts_client_bool(ctx->facts, producer, "enable.idempotence", 0)) {
    case KDC_TRI_YES:
        return 0;
    case KDC_TRI_UNKNOWN:
        return -1;
    default:
        break;
    }
    if (kdc_config_is_transactional(ctx, producer))
        return 0;
    static const char *const keys[] = {"retries", "message.send.max.retries",
                                       "max.in.flight.requests.per.connection", "max.in.flight"};
    for (size_t k = 0; k < 4; k++) {
        kdc_config_values_t vals;
        kdc_config_values(ctx, producer, keys[k], &vals);
        if (vals.unknown)
            return -1;
        for (size_t i = 0; i < vals.n; i++)
            if (!vals.v[i]->value || !strcmp(vals.v[i]->value, k < 2 ? "0" : "1"))
                return vals.v[i]->value ? 0 : -1;
    }
    return 1;
}

/* How the delivery reports that carry the input are ordered. */
typedef enum {
    REPORTS_UNSEEN = -1,  /* no produce carries a per-message opaque */
    REPORTS_IN_ORDER = 0, /* one output partition per input partition, in order */
    REPORTS_SPREAD = 1,   /* the outputs of one input partition go to several partitions */
    REPORTS_RETRIED = 2   /* one output partition, but a retry can reorder them */
} reports_order_t;

/* *where: a produce whose reports can arrive out of input order. */
static reports_order_t reports_order(kdc_rule_ctx_t *ctx, const kdc_loc_t **where) {
    part_keys_t pk = {ctx->program, {0}, 0};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (int round = 0; round < 3; round++) {
        pk.added = 0;
        for (size_t i = 0; i < nf; i++)
            kdc_func_walk_exprs(kdc_program_func(ctx->program, i), collect_part_keys, &pk);
        if (!pk.added)
            break;
    }
    reports_order_t result = REPORTS_UNSEEN;
    for (size_t i = 0; i < nf && result < REPORTS_SPREAD; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls && result < REPORTS_SPREAD; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !(api->roles & KDC_API_PRODUCE) || !strncmp(api->name, "kdc_", 4))
                continue;
            const kdc_expr_t *opaque, *partition;
            if (api->varargs) {
                opaque = kdc_api_producev_arg(call, 6);   /* RD_KAFKA_V_OPAQUE */
                partition = kdc_api_producev_arg(call, 3); /* RD_KAFKA_V_PARTITION */
            } else if (!strcmp(api->name, "rd_kafka_produceva")) {
                continue; /* an array of rd_kafka_vu_t: not followed */
            } else {
                opaque = api->opaque >= 0 ? kdc_api_arg(call, api->opaque) : call;
                partition = kdc_call_arg(call, 1);
            }
            if (!opaque || kdc_expr_is_null(opaque))
                continue; /* its report carries nothing of the input */
            *where = &call->loc;
            if (!pinned(&pk, partition)) {
                result = REPORTS_SPREAD;
                continue;
            }
            kdc_bits_t producers;
            int unknown = 0, retried = 0;
            kdc_call_clients(ctx, f, call, api, 0, &producers, &unknown);
            for (size_t k = kdc_bits_next(&producers, 0); k < producers.nwords * 64 && !retried;
                 k = kdc_bits_next(&producers, k + 1))
                retried = kdc_bits_get(&producers, k) && retries_may_reorder(ctx, k) == 1;
            kdc_bits_free(&producers);
            result = retried ? REPORTS_RETRIED : REPORTS_IN_ORDER;
        }
    }
    free(pk.keys.v);
    return result;
}

/* ---------- the rule ---------- */

typedef KDC_VEC(const kdc_expr_t *) expr_vec_t;

static int seen_before(expr_vec_t *seen, const kdc_expr_t *c) {
    for (size_t k = 0; k < seen->n; k++)
        if (seen->v[k] == c)
            return 1;
    KDC_VEC_PUSH(*seen, c);
    return 0;
}

static void report(kdc_rule_ctx_t *ctx, const kdc_async_entry_t *en, const kdc_func_t *f,
                   const kdc_expr_t *call, reports_order_t order, const kdc_loc_t *order_at) {
    kdc_notes_t notes = {0};
    switch (en->kind) {
    case KDC_ASYNC_THREAD:
        kdc_notes_add(&notes, &en->func->loc,
                      "thread start routine: messages are processed concurrently here");
        kdc_notes_add(&notes, &en->site->loc, "the worker threads are started here");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "offset stored or committed from a worker thread: workers finish "
                        "out of order, so a later offset can be committed while an "
                        "earlier message is still in flight and a crash loses it; commit "
                        "only the contiguous completed prefix per partition (a watermark)");
        return;
    case KDC_ASYNC_CALLBACK:
        kdc_notes_add(&notes, &en->func->loc, "completion callback");
        kdc_notes_add(&notes, &en->site->loc,
                      "asynchronous requests started here, one after another");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "offset stored or committed from the completion callback of an "
                        "asynchronous request: requests complete in any order, so a later "
                        "offset can be committed while an earlier message's request is still "
                        "in flight and a crash or its failure loses it; commit only the "
                        "contiguous completed prefix per partition (a watermark)");
        return;
    case KDC_ASYNC_DR:
        kdc_notes_add(&notes, &en->func->loc, "delivery-report callback");
        if (en->site)
            kdc_notes_add(&notes, &en->site->loc, "registered here");
        if (order == REPORTS_SPREAD || order == REPORTS_RETRIED) {
            kdc_notes_add(&notes, order_at,
                          order == REPORTS_SPREAD
                              ? "outputs produced here go to several partitions (the partitioner, "
                                "or a partition not taken from the input)"
                              : "outputs produced here by a producer that is not idempotent, with "
                                "retries on: a retried output lands behind a later one");
            kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                            "input offset stored or committed from a delivery report, in the "
                            "order reports arrive: %s, so a later offset can be committed while "
                            "an earlier message's output is undelivered and a crash or its failed "
                            "delivery loses it; advance a contiguous watermark of delivered inputs "
                            "per partition (kdc_watermark_done, kdc_watermark_commit)",
                            order == REPORTS_SPREAD
                                ? "the outputs go to several partitions, whose reports arrive in "
                                  "any order relative to the input"
                                : "a retried output is delivered (and reported) after later ones");
        } else if (ctx->opts->strict) {
            kdc_rule_note(ctx, f, &call->loc, notes.v, notes.n,
                          "input offset stored or committed from a delivery report, in the "
                          "order reports arrive: %s; a failed report followed by a delivered one "
                          "still commits past an undelivered message",
                          order == REPORTS_IN_ORDER
                              ? "each input partition goes to one output partition, so reports of "
                                "one input partition arrive in order"
                              : "how the outputs are partitioned cannot be determined");
        }
        return;
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_async_vec_t entries = {0};
    kdc_async_entries(ctx, &entries);
    kdc_offset_vars_t *vars = kdc_offset_vars_new(ctx);
    const kdc_loc_t *order_at = NULL;
    reports_order_t order = REPORTS_UNSEEN;
    int ordered = 0; /* order computed (when a delivery report stores) */
    expr_vec_t seen = {0};
    for (size_t e = 0; e < entries.n; e++) {
        const kdc_async_entry_t *en = &entries.v[e];
        if (en->kind != KDC_ASYNC_DR && !en->pool)
            continue; /* one dedicated thread or request processes in order */
        kdc_func_list_t reach = {0};
        kdc_async_closure(ctx, en->func, &reach);
        int consumes = kdc_async_consumes(&reach);
        for (size_t i = 0; i < reach.n && !consumes; i++) {
            const kdc_func_t *f = reach.v[i];
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)) ||
                    !kdc_stores_message_position(vars, f, f->calls[c], api) ||
                    seen_before(&seen, f->calls[c]))
                    continue;
                if (en->kind == KDC_ASYNC_DR && !ordered) {
                    order = reports_order(ctx, &order_at);
                    ordered = 1;
                }
                report(ctx, en, f, f->calls[c], order, order_at);
            }
        }
        free(reach.v);
    }
    free(seen.v);
    kdc_offset_vars_free(vars);
    free(entries.v);
}

const kdc_rule_t kdc_rule_out_of_order_offset_store = {
    "out-of-order-offset-store",
    "offsets stored or committed in the order concurrent work finishes, without a watermark",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
