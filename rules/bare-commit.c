/*
 * bare-commit: a commit without an offset list commits the *stored* offsets
 * of every assigned partition. With enable.auto.offset.store=true (the
 * default) librdkafka stores an offset when it hands the message to the
 * application, before its effect is confirmed, so the commit also covers
 * messages whose processing failed or has not happened yet.
 *
 * Confidence: high. Default profile: reported unless every configuration of
 * the consumer sets enable.auto.offset.store=false (offsets are then stored
 * explicitly, after the effect). Strict profile: every bare commit.
 */
#include "api.h"
#include "rule.h"

#include <string.h>

static int is_bare_commit(const kdc_expr_t *call, const kdc_api_t *api) {
    if (!(api->roles & KDC_API_COMMIT))
        return 0;
    if (!call->is_method) {
        if (strcmp(api->name, "rd_kafka_commit") && strcmp(api->name, "rd_kafka_commit_queue"))
            return 0;
        const kdc_expr_t *list = kdc_api_arg(call, api->list);
        return list && kdc_expr_is_null(list);
    }
    /* C++: commitSync(), commitAsync(), commitSync(OffsetCommitCb *) */
    if (call->nkids == 0)
        return 1;
    return call->nkids == 1 && call->str && strstr(call->str, "OffsetCommitCb");
}

static void check(kdc_rule_ctx_t *ctx) {
    const kdc_facts_t *fx = ctx->facts;
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !is_bare_commit(call, api))
                continue;
            kdc_related_t rel[4];
            size_t nrel = 0;
            int report = ctx->opts->strict;
            kdc_bits_t clients;
            int unknown = 0;
            kdc_facts_clients_of(fx, f, kdc_api_arg(call, api->handle), &clients, &unknown);
            report |= unknown;
            for (size_t k = 0; k < clients.nwords * 64; k++) {
                if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(fx, k) == 0)
                    continue; /* a producer sharing the variable does not commit */
                kdc_tri_t store = kdc_facts_client_bool(fx, k, "enable.auto.offset.store", 1);
                if (store != KDC_TRI_NO) {
                    report = 1;
                    if (nrel < 4) {
                        rel[nrel].loc = kdc_facts_obj(fx, k)->site->loc;
                        rel[nrel].message = store == KDC_TRI_YES
                                                ? "consumer created here with enable.auto.offset.store=true (the default)"
                                                : "consumer created here; enable.auto.offset.store cannot be determined";
                        nrel++;
                    }
                } else if (ctx->opts->strict && nrel < 4) {
                    rel[nrel].loc = kdc_facts_obj(fx, k)->site->loc;
                    rel[nrel].message = "consumer created here with enable.auto.offset.store=false";
                    nrel++;
                }
            }
            kdc_bits_free(&clients);
            if (!report)
                continue;
            kdc_rule_report(ctx, f, &call->loc, rel, nrel,
                            "%s without an offset list commits the stored offsets of every "
                            "assigned partition, including messages whose effect is not "
                            "confirmed; commit the processed message instead "
                            "(rd_kafka_commit_message, or a one-partition list with offset+1)",
                            call->is_method ? call->name + 9 : call->name);
        }
    }
}

const kdc_rule_t kdc_rule_bare_commit = {
    "bare-commit",
    "commit without an offset list on a consumer whose offsets may be stored before the effect",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
