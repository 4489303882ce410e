#include "config_common.h"

void kdc_config_each_client(kdc_rule_ctx_t *ctx, int type,
                            void (*fn)(kdc_rule_ctx_t *ctx, size_t client, void *arg), void *arg) {
    size_t n = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts));
    for (size_t i = 0; i < n; i++) {
        const kdc_obj_t *o = kdc_facts_obj(ctx->facts, i);
        if (o->kind != KDC_OBJ_CLIENT)
            continue;
        int t = kdc_facts_client_type(ctx->facts, i);
        if (type < 0 || t < 0 || t == type)
            fn(ctx, i, arg);
    }
}

const kdc_loc_t *kdc_config_client_loc(const kdc_rule_ctx_t *ctx, size_t client) {
    return kdc_facts_client_loc(ctx->facts, client);
}

const kdc_func_t *kdc_config_client_func(const kdc_rule_ctx_t *ctx, size_t client) {
    const kdc_obj_t *o = kdc_facts_obj(ctx->facts, client);
    if (o->via) { /* the function that called the factory */
        size_t nf = kdc_program_nfuncs(ctx->program);
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(ctx->program, i);
            for (unsigned c = 0; c < f->ncalls; c++)
                if (f->calls[c] == o->via)
                    return f;
        }
    }
    return o->func;
}

int kdc_config_in_delivery_path(const kdc_rule_ctx_t *ctx, size_t client) {
    int dlq = 0;
    if (!kdc_facts_client_produces(ctx->facts, client, &dlq))
        return 0;
    return dlq || kdc_facts_func_program_consumes(ctx->facts, kdc_config_client_func(ctx, client));
}

static void collect(const kdc_setting_t *s, void *arg) {
    kdc_config_values_t *v = arg;
    if (v->n < sizeof v->v / sizeof v->v[0])
        v->v[v->n++] = s;
}

void kdc_config_values(const kdc_rule_ctx_t *ctx, size_t client, const char *key,
                       kdc_config_values_t *out) {
    out->n = 0;
    out->unknown = 0;
    kdc_facts_client_settings(ctx->facts, client, key, collect, out, &out->unknown);
}

int kdc_config_is_transactional(const kdc_rule_ctx_t *ctx, size_t client) {
    kdc_config_values_t v;
    kdc_config_values(ctx, client, "transactional.id", &v);
    return v.n > 0;
}
