/*
 * produce-without-delivery-callback: a produce on a producer whose
 * configuration never registers a delivery report. Broker-side failures
 * (timeouts, authorization, message too large) are then discarded while
 * rd_kafka_poll()/rd_kafka_flush() serve them, and rd_kafka_flush() still
 * returns RD_KAFKA_RESP_ERR_NO_ERROR: nobody can confirm the message.
 *
 * Confidence: high. The producer handle is followed through variables, struct
 * fields, parameters, return values and files to the rd_kafka_new() calls
 * that create it; any of the four registration forms on any configuration it
 * may be created with (may-registration, flow-insensitive) is enough. A
 * handle or configuration that cannot be followed is not reported, nor, in
 * the default profile, a transactional producer: every produce of one is in a
 * transaction, and rd_kafka_commit_transaction() fails the transaction when a
 * delivery failed (what becomes of that error is txn-error-not-aborted's).
 */
#include "api.h"
#include "common/config_common.h"
#include "rule.h"

static void check_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    const kdc_expr_t *handle = api->handle != KDC_ARG_NONE ? kdc_api_arg(call, api->handle)
                                                           : kdc_api_arg(call, api->topic);
    kdc_bits_t clients;
    int unknown = 0;
    kdc_rule_clients(ctx, f, handle, 0, &clients, &unknown);
    int report = !unknown;
    kdc_notes_t notes = {0};
    for (size_t k = kdc_bits_next(&clients, 0); report && k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k))
            continue;
        if (kdc_facts_client_has_dr(ctx->facts, k) != KDC_TRI_NO ||
            (!ctx->opts->strict && kdc_config_is_transactional(ctx, k)))
            report = 0;
        else
            kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k),
                          "producer created here; its configuration registers no delivery-report "
                          "callback");
    }
    kdc_bits_free(&clients);
    if (report)
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "%s on a producer without a delivery-report callback: broker-side "
                        "delivery failures are discarded and flush() still returns 0; register "
                        "one with rd_kafka_conf_set_dr_msg_cb() before rd_kafka_new()",
                        kdc_api_display_name(call));
}

static void check(kdc_rule_ctx_t *ctx) { kdc_rule_for_each_api_call(ctx, KDC_API_PRODUCE, check_produce); }

const kdc_rule_t kdc_rule_produce_without_delivery_callback = {
    "produce-without-delivery-callback",
    "produce on a producer whose configuration never registers a delivery report",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
