/*
 * idempotence-disabled: a producer that sets enable.idempotence=false while
 * retries stay on (librdkafka retries by default), so a retried batch can be
 * written twice or reordered behind a later one. Strict profile: also a
 * non-transactional producer in a consume-process-produce service that does
 * not set enable.idempotence=true.
 *
 * Confidence: medium. Not reported for transactional producers (a
 * transactional.id set on every path implies idempotence) or when retries
 * may be 0 (set to 0 on some path). A "false" followed on every path by
 * another setting of enable.idempotence does not count. Settings that may
 * come from outside the program (docs/kdc-lint.md, "Settings the program does
 * not determine") keep the value the program gives them, librdkafka's
 * default when it gives none (retries on): reported, with a note where they
 * enter.
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

/* May retries be off: retries / message.send.max.retries set to 0 on some
 * path? Then "retries stay on" is not certain and nothing is
 * reported (a conditional retries=0 in a factory, a table row, a helper call
 * in an error chain). A value from outside the program keeps the one the
 * program gives it, librdkafka's default (on) when it gives none. */
static int retries_may_be_off(kdc_rule_ctx_t *ctx, size_t client, kdc_value_t *v) {
    kdc_facts_client_value(ctx->facts, client, "retries", "2147483647", 0, v);
    if (v->value && !strcmp(v->value, "0"))
        return 1;
    for (size_t i = 0; i < v->nset; i++) {
        const char *val = v->set[i]->value ? v->set[i]->value : v->set[i]->fallback;
        if (val && !strcmp(val, "0"))
            return 1;
    }
    return 0;
}

static void check_producer(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    (void)arg;
    kdc_value_t txn, idem, retries;
    kdc_facts_client_value(ctx->facts, client, "transactional.id", NULL, 0, &txn);
    for (size_t i = 0; i < txn.nset; i++)
        if (!txn.set[i]->conditional)
            return; /* transactional: idempotent by definition */
    /* transactional on some paths only: on the others it is a plain producer (and
     * librdkafka refuses enable.idempotence=false together with a transactional.id) */
    kdc_facts_client_value(ctx->facts, client, "enable.idempotence", "false", KDC_VALUE_BOOL, &idem);
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_config_client_loc(ctx, client), "producer created here");
    char note[256];
    int explicit_on = 0;
    int retries_off = -1;
    for (size_t i = 0; i < idem.nset; i++) {
        const kdc_setting_t *s = idem.set[i];
        const char *val = s->value ? s->value : s->fallback;
        if (is_true(s->value) && !s->conditional)
            explicit_on = 1; /* not a fallback: the strict profile cannot verify that one */
        if (!is_false(val))
            continue;
        if (retries_off < 0) {
            retries_off = retries_may_be_off(ctx, client, &retries);
            const kdc_value_t *out = idem.source == KDC_VALUE_OUTSIDE      ? &idem
                                     : retries.source == KDC_VALUE_OUTSIDE ? &retries
                                                                           : NULL;
            if (out && out->outside)
                kdc_notes_add(&notes, out->outside,
                              kdc_intern(ctx->program,
                                         kdc_value_note(out, out == &idem ? "enable.idempotence"
                                                                          : "retries",
                                                        note, sizeof note)));
        }
        if (!retries_off)
            kdc_rule_report(ctx, s->func, &s->loc, notes.v, notes.n,
                            "enable.idempotence=%s while retries stay on: a retried batch can be "
                            "written twice or land behind a later one; keep enable.idempotence=true",
                            val);
    }
    if (!ctx->opts->strict || explicit_on || !kdc_config_in_delivery_path(ctx, client))
        return;
    if (idem.source == KDC_VALUE_OUTSIDE || idem.source == KDC_VALUE_VARIES)
        kdc_rule_note(ctx, kdc_config_client_func(ctx, client), kdc_config_client_loc(ctx, client),
                      NULL, 0, "cannot verify enable.idempotence for this producer: its "
                      "configuration is not fully visible");
    else if (!idem.nset)
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
