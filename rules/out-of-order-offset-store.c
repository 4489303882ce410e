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
#include "common/async_work.h"
#include "common/consumer_common.h"

#include <string.h>

static void check(kdc_rule_ctx_t *ctx) {
    kdc_async_vec_t entries = {0};
    kdc_async_entries(ctx, &entries);
    kdc_offset_vars_t *vars = kdc_offset_vars_new(ctx);
    KDC_VEC(const kdc_expr_t *) seen = {0};
    for (size_t e = 0; e < entries.n; e++) {
        const kdc_async_entry_t *en = &entries.v[e];
        if (en->kind != KDC_ASYNC_THREAD || !en->pool)
            continue; /* one dedicated thread processes in order */
        kdc_func_list_t reach = {0};
        kdc_async_closure(ctx, en->func, &reach);
        int consumes = kdc_async_consumes(&reach);
        for (size_t i = 0; i < reach.n && !consumes; i++) {
            const kdc_func_t *f = reach.v[i];
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)) ||
                    !kdc_stores_message_position(vars, f, f->calls[c], api))
                    continue;
                int dup = 0;
                for (size_t k = 0; k < seen.n; k++)
                    dup |= seen.v[k] == f->calls[c];
                if (dup)
                    continue;
                KDC_VEC_PUSH(seen, f->calls[c]);
                kdc_notes_t notes = {0};
                kdc_notes_add(&notes, &en->func->loc,
                              "thread start routine: messages are processed concurrently here");
                kdc_notes_add(&notes, &en->site->loc, "the worker threads are started here");
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
    kdc_offset_vars_free(vars);
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
