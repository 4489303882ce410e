/*
 * flush-as-confirmation: a commit or checkpoint gated only by
 * rd_kafka_flush() == 0, or by an rd_kafka_outq_len() drain loop, with no
 * delivery-report outcome consulted. flush() returns 0 when the local queue
 * drained, also when deliveries failed (verified on the mock cluster: 0 while
 * the report carried TOPIC_AUTHORIZATION_FAILED), so the checkpoint advances
 * over messages that never arrived.
 *
 * Confidence: medium. From the flush's success edge (or the drain loop's
 * exit) the path is followed to a checkpoint: a commit or offset store, a
 * configured commit/ack function, a helper that commits, or a call or
 * assignment whose name has a checkpoint word (checkpoint, commit, confirm,
 * ack, watermark, advance, lsn, position: confirm_position, saveCheckpoint). Reading delivery-report state on the
 * way (a status, a tracker counter) or waiting for reports ends the path.
 */
#include "results.h"
#include "rule.h"

#include <ctype.h>
#include <string.h>

/* Words that name a checkpoint, matched against the words of an identifier
 * (split at '_' and at lower-to-upper case changes): confirm_position,
 * saveCheckpoint, advance_lsn, but not kdc_tracker_destroy. */
static const char *const checkpoint_words[] = {
    "checkpoint", "checkpoints", "commit", "commits", "committed", "confirm", "confirmed",
    "ack", "acks", "acknowledge", "watermark", "advance", "lsn", "position", NULL};

static int checkpoint_name(const char *name) {
    if (!name || !*name)
        return 0;
    const char *base = strrchr(name, ':');
    base = base ? base + 1 : name;
    char word[64];
    size_t n = 0;
    for (const char *c = base;; c++) {
        int boundary = !*c || *c == '_' ||
                       (n && isupper((unsigned char)*c) && islower((unsigned char)c[-1]));
        if (boundary && n) {
            word[n] = 0;
            for (size_t i = 0; checkpoint_words[i]; i++)
                if (!strcmp(word, checkpoint_words[i]))
                    return 1;
            n = 0;
        }
        if (!*c)
            return 0;
        if (*c != '_' && n + 1 < sizeof word)
            word[n++] = (char)tolower((unsigned char)*c);
    }
}

typedef struct fwalk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *checkpoint; /* the first one reached */
} fwalk_t;

static int fwalk_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    fwalk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->checkpoint)
        return -1;
    if (nd->kind == KDC_N_COND && kdc_facts_reads_delivery_state(w->ctx->facts, nd->expr))
        return -1; /* the outcome of the reports is consulted */
    if (nd->kind == KDC_N_CALL) {
        const kdc_expr_t *call = nd->expr;
        if (kdc_facts_call_confirms(w->ctx->facts, w->f, call))
            return -1;
        const kdc_api_t *api = kdc_api_lookup(call);
        int library = (api || kdc_api_is_librdkafka(call) || call->callee_system) &&
                      !(api && (api->roles & (KDC_API_COMMIT | KDC_API_STORE)));
        if (kdc_facts_call_commits(w->ctx->facts, w->f, call) ||
            (!library && checkpoint_name(call->name)))
            w->checkpoint = call;
    } else if (nd->kind == KDC_N_ASSIGN && nd->expr->nkids) {
        const kdc_expr_t *lhs = kdc_expr_strip(nd->expr->kids[0]);
        int kept = lhs && (lhs->kind == KDC_E_MEMBER || (lhs->kind == KDC_E_REF &&
                                                           lhs->ref == KDC_REF_GLOBAL));
        if (kept && checkpoint_name(kdc_expr_root_name(lhs)))
            w->checkpoint = nd->expr;
    }
    return w->checkpoint ? -1 : st;
}

/* From successor `edge` of node n: does a checkpoint follow, unconfirmed? */
static const kdc_expr_t *checkpoint_after(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                          const kdc_cfg_t *g, int n, unsigned edge) {
    if (edge >= g->nodes[n].nsucc)
        return NULL;
    fwalk_t w = {ctx, f, NULL};
    kdc_search_t s = {fwalk_visit, NULL, &w, 1};
    int start = g->nodes[n].succ[edge];
    if (fwalk_visit(&w, g, start, 0) < 0)
        return w.checkpoint;
    kdc_cfg_search(g, start, 0, &s);
    return w.checkpoint;
}

typedef struct api_query {
    unsigned roles;
    const kdc_expr_t *found;
} api_query_t;

static int find_api(const kdc_expr_t *e, void *arg) {
    api_query_t *q = arg;
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api && (api->roles & q->roles)) {
        q->found = e;
        return 1;
    }
    return 0;
}

/* The first call with one of `roles` in e, or NULL. */
static const kdc_expr_t *call_in(const kdc_expr_t *e, unsigned roles) {
    api_query_t q = {roles, NULL};
    kdc_expr_walk(e, find_api, &q);
    return q.found;
}

static void report(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *at,
                   const kdc_expr_t *checkpoint, int drain) {
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &checkpoint->loc, "checkpoint advanced here without a delivery outcome");
    kdc_rule_report(ctx, f, &at->loc, notes.v, notes.n,
                    "%s is taken as confirmation: it also says \"done\" when deliveries failed, so "
                    "the checkpoint advances over messages that never arrived; confirm from the "
                    "delivery reports (a tracker wait, per-message status) before advancing",
                    drain ? "an empty rd_kafka_outq_len() queue" : "rd_kafka_flush() == 0");
}

static void check_func(kdc_rule_ctx_t *ctx, const kdc_func_t *f) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return;
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_node_t *nd = &g->nodes[n];
        if (nd->kind != KDC_N_COND)
            continue;
        const kdc_expr_t *flush = NULL, *outq = call_in(nd->expr, KDC_API_OUTQ);
        for (unsigned c = 0; c < f->ncalls && !flush && !outq; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if (!api || !(api->roles & KDC_API_FLUSH) || (api->roles & KDC_API_TXN))
                continue;
            kdc_outcome_t o;
            kdc_outcome_init(&o, ctx->program, f, f->calls[c]);
            int edge = kdc_outcome_failure_edge(&o, nd->expr);
            if (edge < 0)
                continue;
            const kdc_expr_t *cp = checkpoint_after(ctx, f, g, (int)n, edge == 0 ? 1u : 0u);
            if (cp)
                report(ctx, f, f->calls[c], cp, 0);
            flush = f->calls[c];
        }
        if (outq && nd->loop_cond) {
            /* while (rd_kafka_outq_len(rk) > 0) poll(..): the exit means "queue empty" */
            for (unsigned e = 0; e < nd->nsucc; e++) {
                const kdc_expr_t *cp = checkpoint_after(ctx, f, g, (int)n, e);
                if (cp && e == 1) {
                    report(ctx, f, outq, cp, 1);
                    break;
                }
            }
        }
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++)
        check_func(ctx, kdc_program_func(ctx->program, i));
}

const kdc_rule_t kdc_rule_flush_as_confirmation = {
    "flush-as-confirmation",
    "checkpoint or commit gated only by rd_kafka_flush() == 0 or an outq_len drain loop",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
