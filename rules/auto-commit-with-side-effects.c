/*
 * auto-commit-with-side-effects: a group consumer that leaves both automatic
 * commits and automatic offset stores on (librdkafka's defaults) while its
 * loop performs side effects. Offsets are stored when a message is handed
 * over and committed in the background every auto.commit.interval.ms, also
 * on close: whatever the effect's outcome. Setting auto.commit.enable or
 * enable.auto.commit on a *topic* configuration does not count: the
 * high-level consumer only honours the global property (librdkafka#472).
 *
 * Confidence: medium. Reported on the rd_kafka_subscribe() call. Side
 * effects: the functions that consume from this consumer (or that they call)
 * write, send, produce, call a database client, a configured effect function,
 * or commit/store offsets themselves (at-least-once intent), after they
 * consume (set-up before the first message, such as seeding test data, does
 * not count). Print-only
 * consumers are not reported; neither is enable.auto.offset.store=false.
 * Settings that may come from outside the program (a config file, argv, a
 * user's key=value list; docs/kdc-lint.md, "Settings the program does not
 * determine") keep the value the program gives them, librdkafka's default
 * (on) when it gives none: reported, with a note where they enter.
 */
#include "common/consumer_common.h"

#include <string.h>

/* Functions that consume from this client. */
static int consumes_from(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client) {
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (!api || !(api->roles & KDC_API_CONSUME))
            continue;
        kdc_bits_t clients;
        int unknown = 0;
        kdc_call_clients(ctx, f, f->calls[c], api, 1, &clients, &unknown);
        int hit = kdc_bits_get(&clients, client);
        kdc_bits_free(&clients);
        if (hit)
            return 1;
    }
    return 0;
}

/* Is the call reached from a call of f that consumes from the client (an API
 * consume on it, or a helper that consumes)? Effects before the first message
 * is consumed (seeding test data, set-up) are not the loop's. */
static int after_consume(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                         const kdc_expr_t *call) {
    const kdc_cfg_t *g = f->cfg;
    int to = g ? kdc_cfg_node_of_call(g, call) : -1;
    if (to < 0)
        return 1;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *k = f->calls[c];
        const kdc_api_t *api = kdc_api_lookup(k);
        int consumes = 0;
        if (api && (api->roles & KDC_API_CONSUME)) {
            kdc_bits_t clients;
            int unknown = 0;
            kdc_call_clients(ctx, f, k, api, 1, &clients, &unknown);
            consumes = kdc_bits_get(&clients, client) || unknown;
            kdc_bits_free(&clients);
        } else if (!api) {
            consumes = kdc_facts_call_roles(ctx->facts, f, k).consumes;
        }
        int from = consumes ? kdc_cfg_node_of_call(g, k) : -1;
        if (from >= 0 && (from == to || kdc_cfg_reaches_avoiding(g, from, to, NULL, NULL)))
            return 1;
    }
    return 0;
}

/* Does the call hand `var` (a message, in f) to processing code outside the
 * analysed program, directly or through helpers of the program it passes it
 * to (three calls deep): `enqMsg(inst, rkmessage)` calling
 * `MsgSetRawMsg(pMsg, rkmessage->payload, ..)`? */
static int hands_out(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                     const char *var, int depth) {
    int mentions = 0;
    for (unsigned a = 0; a < call->nkids && !mentions; a++)
        mentions = kdc_mentions(call->kids[a], var);
    if (!mentions)
        return 0;
    if (kdc_call_outside_processing(ctx, f, call))
        return 1;
    const kdc_func_t *g = call->usr && !kdc_api_lookup(call) && !kdc_api_is_librdkafka(call)
                              ? kdc_program_find_callee(ctx->program, call->usr, f->tu)
                              : NULL;
    if (!g || g == f || depth >= 3 || kdc_is_logging_name(g->name))
        return 0;
    /* a member operator called as `sink << m`, `sink(m)`: its object is the first
     * argument, its parameters start at the second */
    unsigned skip = call->is_method && !call->recv && g->class_usr ? 1 : 0;
    for (unsigned a = skip; a < call->nkids && a - skip < g->nparams; a++) {
        const char *param = g->param_usrs ? g->param_usrs[a - skip] : NULL;
        if (!kdc_mentions(call->kids[a], var) || !param)
            continue;
        for (unsigned c = 0; c < g->ncalls; c++)
            if (hands_out(ctx, g, g->calls[c], param, depth + 1))
                return 1;
    }
    return 0;
}

/* A side effect in a consuming function (or its callees) after it consumes,
 * or a commit or store on this consumer (the author expects at-least-once). */
static const kdc_expr_t *side_effect(kdc_rule_ctx_t *ctx, size_t client) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    int manual = kdc_consumer_commits_manually(ctx, client);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        if (!consumes_from(ctx, f, client))
            continue;
        const char *msgs[8];
        size_t nmsgs = kdc_consumed_vars(ctx, f, client, msgs, 8);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if ((kdc_facts_call_effect(ctx->facts, f, call) ||
                 (manual && kdc_facts_call_roles(ctx->facts, f, call).commits)) &&
                after_consume(ctx, f, client, call))
                return call;
            /* the message handed to processing code outside the analysed program,
             * directly or through a helper */
            for (size_t k = 0; k < nmsgs; k++)
                if (hands_out(ctx, f, call, msgs[k], 0))
                    return call;
        }
    }
    return NULL;
}

static void check_subscribe(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                            const kdc_api_t *api) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k))
            continue;
        /* the global configurations' values: a default topic configuration
         * cannot turn them off */
        kdc_value_t commit, store;
        kdc_facts_client_value(ctx->facts, k, "enable.auto.commit", "true",
                               KDC_VALUE_BOOL | KDC_VALUE_GLOBAL, &commit);
        kdc_facts_client_value(ctx->facts, k, "enable.auto.offset.store", "true",
                               KDC_VALUE_BOOL | KDC_VALUE_GLOBAL, &store);
        if (!commit.value || strcmp(commit.value, "true") || !store.value ||
            strcmp(store.value, "true"))
            continue;
        const kdc_expr_t *effect = side_effect(ctx, k);
        if (!effect)
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k),
                      "consumer created here with enable.auto.commit and enable.auto.offset.store "
                      "on (a topic-level setting does not turn them off)");
        kdc_notes_add(&notes, &effect->loc, "side effect (or manual commit) in its consume loop");
        kdc_notes_add_settings(&notes, ctx->program, &call->loc, &commit, "enable.auto.commit");
        kdc_notes_add_settings(&notes, ctx->program, &call->loc, &store,
                               "enable.auto.offset.store");
        const kdc_value_t *outside = commit.outside ? &commit : store.outside ? &store : NULL;
        char note[256];
        if (outside && outside->outside)
            kdc_notes_add(&notes, outside->outside,
                          kdc_intern(ctx->program,
                                     kdc_value_note(outside, outside == &commit
                                                                 ? "enable.auto.commit"
                                                                 : "enable.auto.offset.store",
                                                    note, sizeof note)));
        kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                        "group consumer with automatic commits and offset stores on while its loop "
                        "performs side effects: offsets are committed in the background whatever "
                        "the effects' outcome; set enable.auto.offset.store=false and store each "
                        "offset after its effect (or enable.auto.commit=false and commit by message)");
        break;
    }
    kdc_bits_free(&clients);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_SUBSCRIBE, check_subscribe);
}

const kdc_rule_t kdc_rule_auto_commit_with_side_effects = {
    "auto-commit-with-side-effects",
    "group consumer with auto commit and auto offset store on whose loop has side effects",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
