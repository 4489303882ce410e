/*
 * shared-transactional-id: transactional.id set from a string literal or a
 * constant alone. Every instance of the service then uses the same id; each
 * new instance fences the previous one (its transactions abort with
 * PRODUCER_FENCED), so instances kill each other's work instead of sharing it.
 *
 * Confidence: high. Ids built from an instance, host, partition or
 * configuration value (snprintf into a buffer, getenv, a config field) are
 * not reported, nor is a constant id followed on every path by another
 * setting of transactional.id. A constant set before settings that may come
 * from outside the program (docs/kdc-lint.md, "Settings the program does not
 * determine") is reported, with a note where they enter. In the strict
 * profile, an id that is a parameter of a function no analysed code calls (a
 * plugin entry point) gets a "cannot verify" note.
 */
#include "common/config_common.h"

static void check_client(kdc_rule_ctx_t *ctx, size_t client, void *arg) {
    (void)arg;
    kdc_value_t v;
    kdc_facts_client_value(ctx->facts, client, "transactional.id", NULL, 0, &v);
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, kdc_config_client_loc(ctx, client), "transactional producer created here");
    char note[256];
    if (v.source == KDC_VALUE_OUTSIDE && v.outside && v.nset)
        kdc_notes_add(&notes, v.outside,
                      kdc_intern(ctx->program,
                                 kdc_value_note(&v, "transactional.id", note, sizeof note)));
    for (size_t i = 0; i < v.nset; i++) {
        const kdc_setting_t *s = v.set[i];
        if (s->value)
            kdc_rule_report(ctx, s->func, &s->loc, notes.v, notes.n,
                            "transactional.id is the constant \"%s\": every instance of the "
                            "service shares it and each new one fences the others; build it "
                            "from the instance, host or partition it serves",
                            s->value);
    }
    /* an id the program takes from outside: from its callers (a plugin entry
     * point), the environment or a file */
    kdc_config_values_t vals;
    kdc_config_values(ctx, client, "transactional.id", &vals);
    for (size_t i = 0; i < vals.n && ctx->opts->strict; i++) {
        const kdc_setting_t *s = vals.v[i];
        if (!s->value && s->from_outside)
            kdc_rule_note(ctx, kdc_config_client_func(ctx, client),
                          kdc_config_client_loc(ctx, client), NULL, 0,
                          "cannot verify transactional.id for this producer: it is a parameter "
                          "of %s, which no analysed code calls; make sure its callers give each "
                          "instance its own id",
                          s->func ? s->func->name : "a function");
    }
}

static void check(kdc_rule_ctx_t *ctx) { kdc_config_each_client(ctx, -1, check_client, NULL); }

const kdc_rule_t kdc_rule_shared_transactional_id = {
    "shared-transactional-id",
    "transactional.id set from a constant, shared by every instance of the service",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
