/*
 * producer-acks-weakened: a producer in a consume-process-produce or DLQ path
 * with acks (request.required.acks) set to 0 or 1. With acks=1 the partition
 * leader acknowledges before the write is replicated, with acks=0 nobody
 * acknowledges at all: the delivery report says success, the input is
 * committed, and a leader failure loses the message.
 *
 * Confidence: high. Reported on the setting (the conf_set call, the helper
 * call that passes the value, or the loop over a table of properties). Values
 * that cannot be determined (getenv, configuration files) are not reported;
 * the strict profile notes them.
 */
#include "common/config_common.h"

#include <string.h>

static const char *const keys[] = {"acks", "request.required.acks"};

static void check_producer(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    (void)arg;
    if (!kdc_config_in_delivery_path(ctx, client))
        return;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_config_client_loc(ctx, client),
                  "producer created here; it produces in a consume-process-produce or "
                  "dead-letter path");
    int unverified = 0;
    for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
        kdc_config_values_t vals;
        kdc_config_values(ctx, client, keys[k], &vals);
        unverified |= vals.unknown;
        for (size_t i = 0; i < vals.n; i++) {
            const kdc_setting_t *s = vals.v[i];
            if (!s->value) {
                unverified = 1;
                continue;
            }
            if (strcmp(s->value, "0") && strcmp(s->value, "1"))
                continue;
            kdc_rule_report(ctx, s->func, &s->loc, notes.v, notes.n,
                            "%s=%s: the broker acknowledges %s, so a delivery report can say "
                            "success for a message a leader failure then loses, after the input "
                            "was committed; use acks=all (librdkafka's default)",
                            keys[k], s->value,
                            !strcmp(s->value, "0") ? "nothing" : "before the write is replicated");
        }
    }
    if (unverified && ctx->opts->strict)
        kdc_rule_note(ctx, kdc_config_client_func(ctx, client), kdc_config_client_loc(ctx, client),
                      NULL, 0, "cannot verify acks for this producer: its configuration is not "
                      "fully visible (values from variables, files or code outside the analysis)");
}

static void check(kdc_rule_ctx_t *ctx) { kdc_config_each_client(ctx, 0, check_producer, NULL); }

const kdc_rule_t kdc_rule_producer_acks_weakened = {
    "producer-acks-weakened",
    "producer in a consume-process-produce or DLQ path with acks set to 0 or 1",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
