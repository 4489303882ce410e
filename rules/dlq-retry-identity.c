/*
 * dlq-retry-identity: a dead-letter envelope keyed (message key or a header)
 * on a freshly generated id: a UUID, a random number, the current time. Every
 * re-routing of the same event then gets a new identity, so retry counters
 * keyed on it never reach their limit and duplicates cannot be recognised
 * (decision record rule 7: the identity is the original event's, e.g. a hash
 * of topic + key + value, or headers carrying the original coordinates).
 *
 * Confidence: medium. Reported on the dead-letter produce when its key or a
 * header value comes from the uuid_ functions, rand/random/
 * arc4random, time/clock_gettime/gettimeofday, directly or through a
 * variable or snprintf buffer filled from them in the same function.
 */
#include "consumer_common.h"

#include <ctype.h>
#include <string.h>

static int fresh_call(const kdc_expr_t *e) {
    static const char *const names[] = {"rand", "random", "arc4random", "lrand48", "drand48",
                                        "time", "clock", "clock_gettime", "gettimeofday",
                                        "rand_r", "getrandom", NULL};
    if (e->kind != KDC_E_CALL || !e->name)
        return 0;
    if (!strncmp(e->name, "uuid_", 5))
        return 1;
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(e->name, names[i]))
            return 1;
    return 0;
}

static int has_fresh_call(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return fresh_call(e);
}

typedef struct fresh_ctx {
    const char *vars[16];
    size_t n;
    int added;
} fresh_ctx_t;

static int known(const fresh_ctx_t *c, const char *usr) {
    for (size_t i = 0; i < c->n; i++)
        if (c->vars[i] == usr)
            return 1;
    return 0;
}

static int mentions_fresh(const fresh_ctx_t *c, const kdc_expr_t *e) {
    if (kdc_expr_walk(e, has_fresh_call, NULL))
        return 1;
    for (size_t i = 0; i < c->n; i++)
        if (kdc_mentions(e, c->vars[i]))
            return 1;
    return 0;
}

static void add(fresh_ctx_t *c, const char *usr) {
    if (usr && !known(c, usr) && c->n < 16) {
        c->vars[c->n++] = usr;
        c->added = 1;
    }
}

/* Variables filled with a fresh id: x = rand(); uuid_generate(u);
 * uuid_unparse(u, s); snprintf(s, .., "%ld", time(NULL)). */
static int find_fresh(const kdc_expr_t *e, void *arg) {
    fresh_ctx_t *c = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        mentions_fresh(c, e->kids[1]))
        add(c, kdc_root_var(e->kids[0]));
    if (e->kind == KDC_E_CALL && e->name && !strncmp(e->name, "uuid_", 5))
        for (unsigned i = 0; i < e->nkids; i++)
            add(c, kdc_root_var(e->kids[i]));
    if (e->kind == KDC_E_CALL && e->name &&
        (!strcmp(e->name, "snprintf") || !strcmp(e->name, "sprintf")) && e->nkids >= 2) {
        int fresh = 0;
        for (unsigned i = 1; i < e->nkids && !fresh; i++)
            fresh = mentions_fresh(c, e->kids[i]);
        if (fresh)
            add(c, kdc_root_var(e->kids[0]));
    }
    return 0;
}

/* A header that identifies the event (a literal name with id, key, uuid,
 * identity, dedup or retry in it, or a name kdc-lint cannot read); a
 * "failed_at" timestamp header is not its identity. */
static int identity_header(const kdc_expr_t *name) {
    static const char *const words[] = {"id", "key", "uuid", "identity", "dedup", "retry", NULL};
    while (name && name->kind == KDC_E_OTHER && name->nkids == 1)
        name = name->kids[0];
    if (!name || name->kind != KDC_E_STRING || !name->str)
        return 1;
    char w[64];
    size_t n = 0;
    for (const char *c = name->str;; c++) {
        if (!isalnum((unsigned char)*c) || (n && isupper((unsigned char)*c) &&
                                            !isupper((unsigned char)c[-1]))) {
            w[n] = 0;
            for (size_t i = 0; n && words[i]; i++)
                if (!strcmp(w, words[i]))
                    return 1;
            n = 0;
        }
        if (!*c)
            return 0;
        if (isalnum((unsigned char)*c) && n + 1 < sizeof w)
            w[n++] = (char)tolower((unsigned char)*c);
    }
}

static void check_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    if (!kdc_facts_is_dlq_produce(ctx->facts, f, call))
        return;
    const kdc_expr_t *ids[8];
    size_t nids = 0;
    if (api->varargs) {
        /* RD_KAFKA_V_KEY(key, len) and each RD_KAFKA_V_HEADER(name, value, size) */
        for (unsigned i = 1; i + 1 < call->nkids && nids < 8; i++) {
            const kdc_expr_t *m = call->kids[i];
            if (m->has_ival && m->ival == 5 /* KEY */)
                ids[nids++] = call->kids[i + 1];
            else if (m->has_ival && m->ival == 9 /* HEADER */ && i + 2 < call->nkids &&
                     identity_header(call->kids[i + 1]))
                ids[nids++] = call->kids[i + 2];
        }
    } else if (!strcmp(api->name, "rd_kafka_produce") && call->nkids >= 6) {
        ids[nids++] = call->kids[5];
    }
    if (!nids)
        return;
    fresh_ctx_t fc = {{0}, 0, 0};
    for (int round = 0; round < 3; round++) {
        fc.added = 0;
        kdc_func_walk_exprs(f, find_fresh, &fc);
        if (!fc.added)
            break;
    }
    for (size_t i = 0; i < nids; i++) {
        if (!mentions_fresh(&fc, ids[i]))
            continue;
        kdc_rule_report(ctx, f, &call->loc, NULL, 0,
                        "dead-letter message keyed on a freshly generated id (uuid, random, time): "
                        "each re-routing of the same event gets a new identity, so retry limits "
                        "and duplicate detection never match; key it on the original event "
                        "(hash of topic + key + value, or its topic/partition/offset headers)");
        return;
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_PRODUCE, check_produce);
}

const kdc_rule_t kdc_rule_dlq_retry_identity = {
    "dlq-retry-identity",
    "dead-letter envelope keyed on a freshly generated id instead of the original event",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
