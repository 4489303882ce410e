/*
 * idempotence-disabled: a producer that sets enable.idempotence=false while
 * retries stay on (librdkafka retries by default), so a retried batch can be
 * written twice or reordered behind a later one. Strict profile: also a
 * non-transactional producer in a consume-process-produce service that does
 * not set enable.idempotence=true.
 *
 * Confidence: medium. Not reported for transactional producers (a
 * transactional.id set on every path implies idempotence) or when retries
 * may be 0 (set to 0 on some path, or to a value kdc-lint cannot read).
 */
#include "common/config_common.h"

#include <strings.h>
#include <string.h>

static int is_false(const char *v) {
    return v && (!strcasecmp(v, "false") || !strcasecmp(v, "f") || !strcmp(v, "0"));
}

static int is_true(const char *v) {
    return v && (!strcasecmp(v, "true") || !strcasecmp(v, "t") || !strcmp(v, "1"));
}

/* May retries be off: retries / message.send.max.retries set to 0 on some path,
 * or to a value kdc-lint cannot read? Then "retries stay on" is not certain and
 * nothing is reported (a conditional retries=0 in a factory, a table row, a
 * helper call in an error chain). */
static int retries_may_be_off(kdc_rule_ctx_t *ctx, size_t client) {
    static const char *const keys[] = {"retries", "message.send.max.retries"};
    for (size_t k = 0; k < 2; k++) {
        kdc_config_values_t vals;
        kdc_config_values(ctx, client, keys[k], &vals);
        if (vals.unknown)
            return 1;
        for (size_t i = 0; i < vals.n; i++)
            if (!vals.v[i]->value || !strcmp(vals.v[i]->value, "0"))
                return 1;
    }
    return 0;
}

static void check_producer(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    (void)arg;
    kdc_config_values_t txn, idem;
    kdc_config_values(ctx, client, "transactional.id", &txn);
    for (size_t i = 0; i < txn.n; i++)
        if (!txn.v[i]->conditional)
            return; /* transactional: idempotent by definition */
    /* transactional on some paths only: on the others it is a plain producer (and
     * librdkafka refuses enable.idempotence=false together with a transactional.id) */
    kdc_config_values(ctx, client, "enable.idempotence", &idem);
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_config_client_loc(ctx, client), "producer created here");
    int explicit_on = 0, unverified = idem.unknown;
    for (size_t i = 0; i < idem.n; i++) {
        const kdc_setting_t *s = idem.v[i];
        if (!s->value)
            unverified = 1;
        else if (is_true(s->value) && !s->conditional)
            explicit_on = 1;
        else if (is_false(s->value) && !retries_may_be_off(ctx, client))
            kdc_rule_report(ctx, s->func, &s->loc, notes.v, notes.n,
                            "enable.idempotence=%s while retries stay on: a retried batch can be "
                            "written twice or land behind a later one; keep enable.idempotence=true",
                            s->value);
    }
    if (!ctx->opts->strict || explicit_on || !kdc_config_in_delivery_path(ctx, client))
        return;
    if (unverified)
        kdc_rule_note(ctx, kdc_config_client_func(ctx, client), kdc_config_client_loc(ctx, client),
                      NULL, 0, "cannot verify enable.idempotence for this producer: its "
                      "configuration is not fully visible");
    else if (!idem.n)
        kdc_rule_report(ctx, kdc_config_client_func(ctx, client), kdc_config_client_loc(ctx, client),
                        NULL, 0, "producer of a consume-process-produce service without "
                        "enable.idempotence=true (strict profile): set it, or use a transactional "
                        "producer");
}

static void check(kdc_rule_ctx_t *ctx) { kdc_config_each_client(ctx, 0, check_producer, NULL); }

const kdc_rule_t kdc_rule_idempotence_disabled = {
    "idempotence-disabled",
    "producer with enable.idempotence=false and retries on (strict: not set to true)",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
