/*
 * missing-rebalance-callback: a subscribed group consumer that commits or
 * stores offsets itself, or batches messages, and registers no rebalance
 * callback. When partitions are revoked, work in flight (a batch, messages
 * handed to workers) still commits offsets of partitions the consumer no
 * longer owns, or is silently dropped: without the callback the service
 * cannot finish or discard it at the right moment (seeds/000: epochs on
 * assign/revoke/lost).
 *
 * Confidence: medium. Reported on the rd_kafka_subscribe() call. Consumers
 * with a rebalance callback (rd_kafka_conf_set_rebalance_cb, C++
 * conf->set("rebalance_cb", ..)), eager or cooperative, are not reported;
 * neither are consumers whose configuration cannot be followed.
 */
#include "common/consumer_common.h"

static void check_subscribe(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                            const kdc_api_t *api) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k) ||
            kdc_facts_client_has_rebalance_cb(ctx->facts, k) != KDC_TRI_NO)
            continue;
        int commits = kdc_consumer_commits_manually(ctx, k);
        if (!commits && !kdc_consumer_batches(ctx, k))
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k),
                      "consumer created here; its configuration registers no rebalance callback");
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "group consumer that %s without a rebalance callback: on a revoke or a "
                        "lost assignment it keeps committing or working on partitions it no longer "
                        "owns; register one (rd_kafka_conf_set_rebalance_cb) and finish or drop "
                        "in-flight work there",
                        commits ? "commits offsets itself" : "batches messages");
        break;
    }
    kdc_bits_free(&clients);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_SUBSCRIBE, check_subscribe);
}

const kdc_rule_t kdc_rule_missing_rebalance_callback = {
    "missing-rebalance-callback",
    "subscribed consumer with manual commits or batching and no rebalance callback",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
