/*
 * producer-acks-weakened: a producer in a consume-process-produce or DLQ path
 * with acks (request.required.acks) set to 0 or 1. With acks=1 the partition
 * leader acknowledges before the write is replicated, with acks=0 nobody
 * acknowledges at all: the delivery report says success, the input is
 * committed, and a leader failure loses the message.
 *
 * Confidence: high. Reported on the setting (the conf_set call, the helper
 * call that passes the value, or the loop over a table of properties). A
 * setting followed on every path by another setting of acks does not count.
 * Settings that may come from outside the program (getenv, configuration
 * files; docs/kdc-lint.md, "Settings the program does not determine") leave
 * librdkafka's default, all, which is not reported (the strict profile notes
 * it); a 0 or 1 the program sets before them, or as the fallback of an
 * outside value, is reported with a note where they enter.
 */
#include "common/config_common.h"

#include <string.h>

static void check_producer(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    (void)arg;
    if (!kdc_config_in_delivery_path(ctx, client))
        return;
    /* acks and its alias request.required.acks; a setting followed on every
     * path by another one does not count */
    kdc_value_t v;
    kdc_facts_client_value(ctx->facts, client, "acks", "all", 0, &v);
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_config_client_loc(ctx, client),
                  "producer created here; it produces in a consume-process-produce or "
                  "dead-letter path");
    char note[256];
    if (v.source == KDC_VALUE_OUTSIDE && v.outside)
        kdc_notes_add(&notes, v.outside,
                      kdc_intern(ctx->program, kdc_value_note(&v, "acks", note, sizeof note)));
    int reported = 0;
    for (size_t i = 0; i < v.nset; i++) {
        const kdc_setting_t *s = v.set[i];
        const char *val = s->value ? s->value : s->fallback;
        if (!val || (strcmp(val, "0") && strcmp(val, "1")))
            continue;
        reported = 1;
        kdc_rule_report(ctx, s->func, &s->loc, notes.v, notes.n,
                        "%s=%s: the broker acknowledges %s, so a delivery report can say "
                        "success for a message a leader failure then loses, after the input "
                        "was committed; use acks=all (librdkafka's default)",
                        s->key, val, !strcmp(val, "0") ? "nothing" : "before the write is replicated");
    }
    if (!reported && v.source == KDC_VALUE_OUTSIDE && ctx->opts->strict)
        kdc_rule_note(ctx, kdc_config_client_func(ctx, client), kdc_config_client_loc(ctx, client),
                      notes.v + 1, notes.n - 1,
                      "cannot verify acks for this producer: it may be set from outside the "
                      "program (assumed librdkafka's default, all)");
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
