/*
 * teardown-without-close: a consumer that commits offsets itself is destroyed
 * without rd_kafka_consumer_close() (or with RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE,
 * or C++ delete without close()). close() waits for outstanding commits and
 * leaves the group cleanly; without it in-flight (asynchronous) commits are
 * dropped and the group waits for the session timeout before rebalancing.
 *
 * Confidence: medium. Reported on the destroy call when the program never
 * closes that consumer, or when the destroy asks explicitly not to.
 */
#include "consumer_common.h"

#include <string.h>

static int closed_anywhere(kdc_rule_ctx_t *ctx, size_t client) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if (!api || !(api->roles & KDC_API_CLOSE))
                continue;
            kdc_bits_t clients;
            int unknown = 0;
            kdc_call_clients(ctx, f, f->calls[c], api, 1, &clients, &unknown);
            int hit = kdc_bits_get(&clients, client) || unknown;
            kdc_bits_free(&clients);
            if (hit)
                return 1;
        }
    }
    return 0;
}

static void check_destroy(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    const kdc_expr_t *flags = kdc_api_arg(call, api->value);
    int no_close = flags && flags->has_ival && (flags->ival & 0x8); /* RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE */
    if (kdc_expr_is_topic_handle(ctx, f, kdc_api_arg(call, api->handle)))
        return; /* delete topic: the client lives on */
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
    for (size_t k = 0; k < clients.nwords * 64; k++) {
        if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(ctx->facts, k) != 1 ||
            !kdc_consumer_commits_manually(ctx, k) || !kdc_consumer_is_group(ctx, k))
            continue;
        if (!no_close && closed_anywhere(ctx, k))
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k),
                      "consumer created here; it commits offsets itself");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "consumer destroyed %s: outstanding commits are dropped and the group "
                        "only rebalances after the session timeout; call "
                        "rd_kafka_consumer_close() (C++ close()) first",
                        no_close ? "with RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE"
                                 : "without rd_kafka_consumer_close()");
        break;
    }
    kdc_bits_free(&clients);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_DESTROY, check_destroy);
}

const kdc_rule_t kdc_rule_teardown_without_close = {
    "teardown-without-close",
    "consumer with manual commits destroyed without rd_kafka_consumer_close()",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
