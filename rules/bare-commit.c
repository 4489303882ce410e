/*
 * bare-commit: a commit without an offset list commits the *stored* offsets
 * of every assigned partition. With enable.auto.offset.store=true (the
 * default) librdkafka stores an offset when it hands the message to the
 * application, before its effect is confirmed, so the commit also covers
 * messages whose processing failed or has not happened yet.
 *
 * Confidence: high. Default profile: reported unless every configuration of
 * the consumer sets enable.auto.offset.store=false (offsets are then stored
 * explicitly, after the effect). A setting that may come from outside the
 * program (docs/kdc-lint.md, "Settings the program does not determine")
 * keeps the value the program gives it, librdkafka's default (true) when it
 * gives none: reported, with a note where the outside settings enter. Strict
 * profile: every bare commit.
 */
#include "api.h"
#include "rule.h"

#include <string.h>

static int is_bare_commit(const kdc_expr_t *call, const kdc_api_t *api) {
    if (!(api->roles & KDC_API_COMMIT))
        return 0;
    if (!call->is_method) {
        if (strcmp(api->name, "rd_kafka_commit") && strcmp(api->name, "rd_kafka_commit_queue"))
            return 0;
        const kdc_expr_t *list = kdc_api_arg(call, api->list);
        return list && kdc_expr_is_null(list);
    }
    /* C++: commitSync(), commitAsync(), commitSync(OffsetCommitCb *) */
    if (call->nkids == 0)
        return 1;
    return call->nkids == 1 && call->str && strstr(call->str, "OffsetCommitCb");
}

static void check_commit(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_api_t *api) {
    if (!is_bare_commit(call, api))
        return;
    kdc_bits_t clients;
    int unknown = 0;
    kdc_rule_clients(ctx, f, kdc_api_arg(call, api->handle), 1, &clients, &unknown);
    int report = ctx->opts->strict || unknown;
    kdc_notes_t notes = {0};
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k))
            continue;
        const kdc_loc_t *site = kdc_facts_client_loc(ctx->facts, k);
        kdc_value_t v;
        kdc_facts_client_value(ctx->facts, k, "enable.auto.offset.store", "true",
                               KDC_VALUE_BOOL | KDC_VALUE_GLOBAL, &v);
        char note[256];
        if (v.source == KDC_VALUE_VARIES) {
            report = 1;
            kdc_notes_add(&notes, site,
                          "consumer created here; enable.auto.offset.store is set differently on "
                          "different paths");
        } else if (!strcmp(v.value, "true")) {
            report = 1;
            kdc_notes_add(&notes, site,
                          v.source == KDC_VALUE_SET
                              ? "consumer created here with enable.auto.offset.store=true"
                              : "consumer created here with enable.auto.offset.store=true (the "
                                "default)");
        } else if (ctx->opts->strict) {
            kdc_notes_add(&notes, site, "consumer created here with enable.auto.offset.store=false");
        }
        if (report || ctx->opts->strict)
            kdc_notes_add_settings(&notes, ctx->program, &call->loc, &v,
                                   "enable.auto.offset.store");
        if ((report || ctx->opts->strict) && v.outside)
            kdc_notes_add(&notes, v.outside,
                          kdc_intern(ctx->program, kdc_value_note(&v, "enable.auto.offset.store",
                                                                  note, sizeof note)));
    }
    kdc_bits_free(&clients);
    if (report)
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "%s without an offset list commits the stored offsets of every assigned "
                        "partition, including messages whose effect is not confirmed; commit the "
                        "processed message instead (rd_kafka_commit_message, or a one-partition "
                        "list with offset+1)",
                        kdc_api_display_name(call));
}

static void check(kdc_rule_ctx_t *ctx) { kdc_rule_for_each_api_call(ctx, KDC_API_COMMIT, check_commit); }

const kdc_rule_t kdc_rule_bare_commit = {
    "bare-commit",
    "commit without an offset list on a consumer whose offsets may be stored before the effect",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
