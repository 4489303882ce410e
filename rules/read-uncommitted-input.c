/*
 * read-uncommitted-input: a consumer with isolation.level=read_uncommitted
 * that reads topics the same codebase produces transactionally. It sees the
 * records of transactions that are later aborted (and of open ones), so it
 * acts on output that never officially happened.
 *
 * Confidence: medium. Reported on the subscribe call. Topics are matched by
 * name (literals and constants reaching the subscription list and the produce
 * calls); subscriptions whose topics cannot be read are not reported. An
 * isolation.level that may be set from outside the program (docs/kdc-lint.md,
 * "Settings the program does not determine") keeps librdkafka's default,
 * read_committed: not reported (the strict profile notes it), unless the
 * program itself sets read_uncommitted before the outside settings.
 */
#include "common/config_common.h"

#include <string.h>

typedef struct names {
    const char *v[64];
    size_t n;
} names_t;

static void add_name(const char *s, void *arg) {
    names_t *n = arg;
    for (size_t i = 0; i < n->n; i++)
        if (!strcmp(n->v[i], s))
            return;
    if (n->n < sizeof n->v / sizeof n->v[0])
        n->v[n->n++] = s;
}

typedef struct txn_topics {
    names_t names;
    const kdc_expr_t *site[64]; /* a produce to each name */
} txn_topics_t;

/* Topics produced by transactional producers, with one produce site each. */
static void txn_topics(kdc_rule_ctx_t *ctx, txn_topics_t *out) {
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
            int unknown = 0, txn = 0;
            kdc_rule_clients(ctx, f, handle, 0, &clients, &unknown);
            for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64 && !txn;
                 k = kdc_bits_next(&clients, k + 1))
                txn = kdc_bits_get(&clients, k) && kdc_config_is_transactional(ctx, k);
            kdc_bits_free(&clients);
            if (!txn)
                continue;
            size_t before = out->names.n;
            kdc_facts_strings(ctx->facts, f, kdc_facts_produce_topic(call), add_name, &out->names,
                              NULL);
            for (size_t k = before; k < out->names.n; k++)
                out->site[k] = call;
        }
    }
}

/* Topics added to the subscription list (same variable, same function). With a
 * call site (site in g) of f, a topic that is a parameter of f is the argument
 * given there. */
static void subscribed_topics(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *list,
                              const kdc_func_t *g, const kdc_expr_t *site, names_t *out) {
    const char *key = kdc_pts_lvalue_key(ctx->program, list);
    if (!key)
        return;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (!api || !(api->roles & KDC_API_LIST_ADD))
            continue;
        if (kdc_pts_lvalue_key(ctx->program, kdc_api_arg(f->calls[c], api->list)) != key)
            continue;
        const kdc_expr_t *topic = kdc_expr_strip(kdc_api_arg(f->calls[c], api->topic));
        if (site && topic && topic->kind == KDC_E_REF && topic->ref == KDC_REF_PARAM &&
            topic->param_index >= 0)
            kdc_facts_strings(ctx->facts, g, kdc_call_arg(site, (unsigned)topic->param_index),
                              add_name, out, NULL);
        else
            kdc_facts_strings(ctx->facts, f, topic, add_name, out, NULL);
    }
}

/* The setting of isolation.level=read_uncommitted in effect on the consumer,
 * or NULL. */
static const kdc_setting_t *read_uncommitted(kdc_rule_ctx_t *ctx, size_t client, kdc_value_t *v) {
    kdc_facts_client_value(ctx->facts, client, "isolation.level", "read_committed", 0, v);
    for (size_t i = 0; i < v->nset; i++) {
        const char *val = v->set[i]->value ? v->set[i]->value : v->set[i]->fallback;
        if (val && !strcmp(val, "read_uncommitted"))
            return v->set[i];
    }
    return NULL;
}

/* isolation.level that may be set from outside the program (kept at
 * librdkafka's default, read_committed: not reported), or set differently on
 * different paths. */
static int isolation_unknown(kdc_rule_ctx_t *ctx, size_t client) {
    kdc_value_t v;
    kdc_facts_client_value(ctx->facts, client, "isolation.level", "read_committed", 0, &v);
    return v.source == KDC_VALUE_OUTSIDE || v.source == KDC_VALUE_VARIES;
}

/* One subscribe, seen from one context: the consumer handle `handle` evaluated
 * in hf; topics of the list in f (parameters resolved at `site` in g when given).
 * Findings and notes go to `at` in `af` (the subscribe, or the helper's call site). */
static void check_one(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_api_t *api, const kdc_func_t *hf, const kdc_expr_t *handle,
                      const kdc_func_t *g, const kdc_expr_t *site, const kdc_func_t *af,
                      const kdc_loc_t *at) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_rule_clients(ctx, hf, handle, 1, &clients, &unknown);
    const kdc_setting_t *setting = NULL;
    kdc_value_t value;
    size_t consumer = 0, unverified = (size_t)-1;
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64 && !setting;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k))
            continue;
        if ((setting = read_uncommitted(ctx, k, &value)))
            consumer = k;
        else if (unverified == (size_t)-1 && isolation_unknown(ctx, k))
            unverified = k;
    }
    kdc_bits_free(&clients);
    if (!setting && (unverified == (size_t)-1 || !ctx->opts->strict))
        return;
    names_t subscribed = {{0}, 0};
    subscribed_topics(ctx, f, kdc_api_arg(call, api->list), g, site, &subscribed);
    txn_topics_t txn = {{{0}, 0}, {0}};
    txn_topics(ctx, &txn);
    for (size_t i = 0; i < subscribed.n; i++)
        for (size_t k = 0; k < txn.names.n; k++) {
            if (strcmp(subscribed.v[i], txn.names.v[k]))
                continue;
            kdc_notes_t notes = {0};
            if (site)
                kdc_notes_add(&notes, &call->loc, "the helper subscribes here");
            if (!setting) {
                kdc_notes_add(&notes, &txn.site[k]->loc,
                              "the same topic is produced transactionally here");
                kdc_rule_note(ctx, af, at, notes.v, notes.n,
                              "cannot verify isolation.level of this consumer (its value is not "
                              "a literal kdc-lint can see), which reads \"%s\", produced here in "
                              "transactions; it must stay read_committed",
                              subscribed.v[i]);
                return;
            }
            kdc_notes_add(&notes, kdc_config_client_loc(ctx, consumer), "consumer created here");
            kdc_notes_add(&notes, &setting->loc, "isolation.level=read_uncommitted set here");
            kdc_notes_add(&notes, &txn.site[k]->loc,
                          "the same topic is produced transactionally here");
            char note[256];
            if (value.outside)
                kdc_notes_add(&notes, value.outside,
                              kdc_intern(ctx->program, kdc_value_note(&value, "isolation.level",
                                                                      note, sizeof note)));
            kdc_rule_report(ctx, af, at, notes.v, notes.n,
                            "consumer with isolation.level=read_uncommitted reads \"%s\", which "
                            "this codebase produces in transactions: it sees records of aborted "
                            "and open transactions; keep read_committed (the default)",
                            subscribed.v[i]);
            return;
        }
}

/* A subscribe in a helper given the consumer as a parameter (subscribe_to(c,
 * topic)) is checked at each of the helper's call sites, with that call's
 * consumer and topic, and reported there; other subscribes where they are. */
static void check_subscribe(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                            const kdc_api_t *api) {
    const kdc_expr_t *handle = kdc_expr_strip(kdc_api_arg(call, api->handle));
    int sites = 0;
    if (handle && handle->kind == KDC_E_REF && handle->ref == KDC_REF_PARAM &&
        handle->param_index >= 0) {
        size_t nf = kdc_program_nfuncs(ctx->program);
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *g = kdc_program_func(ctx->program, i);
            for (unsigned c = 0; c < g->ncalls; c++) {
                const kdc_expr_t *site = g->calls[c];
                if (!site->usr || kdc_program_find_callee(ctx->program, site->usr, g->tu) != f)
                    continue;
                const kdc_expr_t *arg = kdc_call_arg(site, (unsigned)handle->param_index);
                if (!arg)
                    continue;
                sites++;
                check_one(ctx, f, call, api, g, arg, g, site, g, &site->loc);
            }
        }
    }
    if (!sites)
        check_one(ctx, f, call, api, f, handle, NULL, NULL, f, &call->loc);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_SUBSCRIBE, check_subscribe);
}

const kdc_rule_t kdc_rule_read_uncommitted_input = {
    "read-uncommitted-input",
    "consumer with isolation.level=read_uncommitted reading topics produced transactionally here",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
