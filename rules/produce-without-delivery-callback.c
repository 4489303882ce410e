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
 * handle or configuration that cannot be followed is not reported.
 */
#include "api.h"
#include "rule.h"

static void check(kdc_rule_ctx_t *ctx) {
    const kdc_facts_t *fx = ctx->facts;
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !(api->roles & KDC_API_PRODUCE))
                continue;
            const kdc_expr_t *handle = api->handle != KDC_ARG_NONE ? kdc_api_arg(call, api->handle)
                                                                   : kdc_api_arg(call, api->topic);
            kdc_bits_t clients;
            int unknown = 0;
            kdc_facts_clients_of(fx, f, handle, &clients, &unknown);
            int report = !unknown;
            kdc_related_t rel[4];
            size_t nrel = 0;
            for (size_t k = 0; report && k < clients.nwords * 64; k++) {
                if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(fx, k) == 1)
                    continue; /* a consumer sharing the variable cannot produce */
                if (kdc_facts_client_has_dr(fx, k) != KDC_TRI_NO)
                    report = 0;
                else if (nrel < 4) {
                    rel[nrel].loc = kdc_facts_obj(fx, k)->site->loc;
                    rel[nrel].message = "producer created here; its configuration registers no "
                                        "delivery-report callback";
                    nrel++;
                }
            }
            kdc_bits_free(&clients);
            if (!report)
                continue;
            kdc_rule_report(ctx, f, &call->loc, rel, nrel,
                            "%s on a producer without a delivery-report callback: broker-side "
                            "delivery failures are discarded and flush() still returns 0; register "
                            "one with rd_kafka_conf_set_dr_msg_cb() before rd_kafka_new()",
                            call->is_method ? call->name + 9 : call->name);
        }
    }
}

const kdc_rule_t kdc_rule_produce_without_delivery_callback = {
    "produce-without-delivery-callback",
    "produce on a producer whose configuration never registers a delivery report",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
