/*
 * out-of-order-offset-store: offsets stored or committed from worker threads
 * (thread start routines given to pthread_create, thrd_create, std::thread)
 * that process messages a consumer thread handed them. Workers finish in any
 * order: a worker that stores offset 105 while another still works on 101
 * lets the commit pass 101, and a crash then loses it.
 *
 * Confidence: medium. Reported on each store/commit reachable from a thread
 * start routine that does not consume itself (a thread that runs its own
 * consume loop is ordered). The fix is a watermark that commits only the
 * contiguous confirmed prefix per partition (libkdc's watermark).
 */
#include "consumer_common.h"

#include <string.h>

typedef KDC_VEC(const kdc_func_t *) func_vec_t;

static int in_vec(const func_vec_t *v, const kdc_func_t *f) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == f)
            return 1;
    return 0;
}

/* Thread start routines: the function argument of a thread-creating call. */
static void thread_entries(kdc_rule_ctx_t *ctx, func_vec_t *out) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            int arg = -1;
            if (!strcmp(call->name, "pthread_create"))
                arg = 2;
            else if (!strcmp(call->name, "thrd_create"))
                arg = 1;
            else if (call->is_ctor && strstr(call->name, "std::thread"))
                arg = 0;
            const kdc_expr_t *fn = arg >= 0 ? kdc_call_arg(call, (unsigned)arg) : NULL;
            if (!fn)
                continue;
            kdc_bits_t b;
            kdc_pts_expr(pts, f, fn, &b);
            for (size_t k = 0; k < b.nwords * 64; k++) {
                if (!kdc_bits_get(&b, k) || kdc_facts_obj(ctx->facts, k)->kind != KDC_OBJ_FUNC)
                    continue;
                const kdc_func_t *entry =
                    kdc_program_find_func(ctx->program, kdc_facts_obj(ctx->facts, k)->str);
                if (entry && !in_vec(out, entry))
                    KDC_VEC_PUSH(*out, entry);
            }
            kdc_bits_free(&b);
        }
    }
}

/* Every function reachable from the entry. */
static void closure(kdc_rule_ctx_t *ctx, const kdc_func_t *entry, func_vec_t *out) {
    KDC_VEC_PUSH(*out, entry);
    for (size_t i = 0; i < out->n; i++) {
        const kdc_func_t *f = out->v[i];
        for (unsigned c = 0; c < f->ncalls; c++) {
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(kdc_facts_pts_of(ctx->facts), f, f->calls[c], &callees);
            for (size_t k = 0; k < callees.n; k++)
                if (!in_vec(out, callees.v[k]))
                    KDC_VEC_PUSH(*out, callees.v[k]);
            free(callees.v);
        }
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    func_vec_t entries = {0};
    thread_entries(ctx, &entries);
    for (size_t e = 0; e < entries.n; e++) {
        func_vec_t reach = {0};
        closure(ctx, entries.v[e], &reach);
        int consumes = 0;
        for (size_t i = 0; i < reach.n && !consumes; i++)
            for (unsigned c = 0; c < reach.v[i]->ncalls && !consumes; c++) {
                const kdc_api_t *api = kdc_api_lookup(reach.v[i]->calls[c]);
                consumes = api && (api->roles & KDC_API_CONSUME);
            }
        for (size_t i = 0; i < reach.n && !consumes; i++) {
            const kdc_func_t *f = reach.v[i];
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)))
                    continue;
                kdc_notes_t notes = {0};
                kdc_notes_add(&notes, &entries.v[e]->loc,
                              "thread start routine: messages are processed concurrently here");
                kdc_rule_report(ctx, f, &f->calls[c]->loc, notes.v, notes.n,
                                "offset stored or committed from a worker thread: workers finish "
                                "out of order, so a later offset can be committed while an "
                                "earlier message is still in flight and a crash loses it; commit "
                                "only the contiguous completed prefix per partition (a watermark)");
            }
        }
        free(reach.v);
    }
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
