#include "threads.h"

#include <string.h>

int kdc_func_vec_has(const kdc_func_vec_t *v, const kdc_func_t *f) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == f)
            return 1;
    return 0;
}

/* ---------- thread start routines ---------- */

const kdc_func_t *kdc_lambda_at(kdc_rule_ctx_t *ctx, const kdc_expr_t *e) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        if (f->name && strstr(f->name, "<lambda") && f->loc.file == e->loc.file &&
            f->loc.line == e->loc.line && f->loc.col == e->loc.col)
            return f;
    }
    return NULL;
}

/* The function argument of a thread-creating call, or NULL. */
const kdc_expr_t *kdc_thread_fn_arg(const kdc_expr_t *call) {
    const char *n = call->name;
    if (!strcmp(n, "pthread_create"))
        return kdc_call_arg(call, 2);
    if (!strcmp(n, "thrd_create"))
        return kdc_call_arg(call, 1);
    if (call->is_ctor && (strstr(n, "std::thread") || strstr(n, "std::jthread")))
        return kdc_call_arg(call, 0);
    if (!strcmp(n, "std::async")) {
        const kdc_expr_t *a = kdc_call_arg(call, 0);
        /* std::async(std::launch::async, fn, ..) or std::async(fn, ..) */
        if (a && a->type && strstr(a->type, "launch"))
            return kdc_call_arg(call, 1);
        return a;
    }
    if (call->is_method && call->recv && call->recv->type &&
        (strstr(n, "emplace_back") || strstr(n, "emplace")) &&
        (strstr(call->recv->type, "std::thread") || strstr(call->recv->type, "std::jthread")))
        return kdc_call_arg(call, 0);
    return NULL;
}

static void add_entry(kdc_thread_entry_vec_t *out, const kdc_func_t *entry, const kdc_func_t *f,
                      const kdc_expr_t *site, int repeated) {
    for (size_t i = 0; i < out->n; i++)
        if (out->v[i].func == entry) {
            if (out->v[i].nsites < 8) {
                out->v[i].sites[out->v[i].nsites] = site;
                out->v[i].site_funcs[out->v[i].nsites] = f;
            }
            out->v[i].nsites++;
            out->v[i].pool = 1;
            return;
        }
    kdc_thread_entry_t e = {entry, 1, repeated, site, {site}, {f}};
    KDC_VEC_PUSH(*out, e);
}

void kdc_thread_entries(kdc_rule_ctx_t *ctx, kdc_thread_entry_vec_t *out) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_expr_t *fn = kdc_thread_fn_arg(call);
            if (!fn)
                continue;
            int repeated =
                kdc_call_in_loop(f, call) || kdc_facts_func_runs_repeatedly(ctx->facts, f, 2);
            const kdc_expr_t *s = kdc_expr_strip(fn);
            if (s && s->kind == KDC_E_UNARY && s->op == KDC_OP_ADDR && s->nkids == 1)
                s = kdc_expr_strip(s->kids[0]);
            if (s && s->kind == KDC_E_REF && s->ref == KDC_REF_FUNCTION && s->usr) {
                const kdc_func_t *entry = kdc_program_find_callee(ctx->program, s->usr, f->tu);
                if (entry) {
                    add_entry(out, entry, f, call, repeated);
                    continue;
                }
            }
            if (s && s->kind == KDC_E_OTHER) {
                const kdc_func_t *entry = kdc_lambda_at(ctx, s);
                if (entry) {
                    add_entry(out, entry, f, call, repeated);
                    continue;
                }
            }
            kdc_bits_t b;
            kdc_pts_expr(pts, f, fn, &b);
            for (size_t k = kdc_bits_next(&b, 0); k < b.nwords * 64; k = kdc_bits_next(&b, k + 1)) {
                if (!kdc_bits_get(&b, k) || kdc_facts_obj(ctx->facts, k)->kind != KDC_OBJ_FUNC)
                    continue;
                const kdc_func_t *entry =
                    kdc_program_find_func(ctx->program, kdc_facts_obj(ctx->facts, k)->str);
                if (entry)
                    add_entry(out, entry, f, call, repeated);
            }
            kdc_bits_free(&b);
        }
    }
}

void kdc_func_closure(kdc_rule_ctx_t *ctx, const kdc_func_t *entry, kdc_func_vec_t *out) {
    if (!kdc_func_vec_has(out, entry))
        KDC_VEC_PUSH(*out, entry);
    for (size_t i = 0; i < out->n; i++) {
        const kdc_func_t *f = out->v[i];
        for (unsigned c = 0; c < f->ncalls; c++) {
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(kdc_facts_pts_of(ctx->facts), f, f->calls[c], &callees);
            for (size_t k = 0; k < callees.n; k++)
                if (!kdc_func_vec_has(out, callees.v[k]))
                    KDC_VEC_PUSH(*out, callees.v[k]);
            free(callees.v);
        }
    }
}
