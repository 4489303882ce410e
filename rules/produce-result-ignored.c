/*
 * produce-result-ignored: the return value of a produce call is dropped, so a
 * message that was never enqueued (local queue full, message too large,
 * unknown partition, fatal producer error) silently vanishes. Also a
 * rd_kafka_producev()/produceva() whose error is read through
 * rd_kafka_last_error(), which only the legacy rd_kafka_produce() sets.
 *
 * Confidence: high. Any use of the result counts as checking it: a test, a
 * variable that is read, a return, an argument, a retry loop on
 * RD_KAFKA_RESP_ERR__QUEUE_FULL. The legacy rd_kafka_produce() followed by
 * rd_kafka_last_error() in the same function is checked.
 */
#include "results.h"
#include "rule.h"

#include <string.h>

static int calls_last_error(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++)
        if (!strcmp(f->calls[c]->name, "rd_kafka_last_error"))
            return 1;
    return 0;
}

static void check_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    (void)api;
    kdc_use_t use = kdc_result_use(ctx->program, f, call);
    if (use == KDC_USE_USED)
        return;
    int legacy = !strcmp(call->name, "rd_kafka_produce");
    int last_error = calls_last_error(f);
    if (legacy && last_error)
        return; /* rd_kafka_produce() sets rd_kafka_last_error() */
    const char *name = call->is_method ? call->name + 9 : call->name;
    if (last_error)
        kdc_rule_report(ctx, f, &call->loc, NULL, 0,
                        "%s's error is dropped and read through rd_kafka_last_error(), which only "
                        "the legacy rd_kafka_produce() sets: a message that was not enqueued "
                        "vanishes; check the value %s returns",
                        name, name);
    else
        kdc_rule_report(ctx, f, &call->loc, NULL, 0,
                        "the result of %s is %s: a message that was not enqueued (queue full, too "
                        "large, fatal error) vanishes silently; check it (retry on "
                        "RD_KAFKA_RESP_ERR__QUEUE_FULL after rd_kafka_poll())",
                        name, use == KDC_USE_DISCARDED ? "discarded" : "stored but never read");
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_PRODUCE, check_produce);
}

const kdc_rule_t kdc_rule_produce_result_ignored = {
    "produce-result-ignored",
    "return value of a produce call dropped, or producev errors read via rd_kafka_last_error()",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
