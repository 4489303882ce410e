/*
 * commit-before-effect: a message is committed (or its offset stored) and
 * only afterwards handed to the code that performs its effect (appending it
 * to a pipeline, writing it to a database, producing it on). A crash or a
 * failure in between loses the message: the group will not deliver it again.
 *
 * Confidence: medium. From a commit of a message m, the path is followed
 * (until m is reassigned) to a call that is given m or its fields and is a
 * side effect, a helper of the analysed code, or a function outside it
 * (logging functions excepted). Commits after the effect are not reported.
 */
#include "consumer_common.h"
#include "results.h"

#include <ctype.h>
#include <string.h>

typedef struct cbe_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const char *msg;
    const char *index_vars[8]; /* i in batch[i]: a new i is another message */
    size_t nindex;
    const kdc_expr_t *effect;
} cbe_walk_t;

static int collect_index_vars(const kdc_expr_t *e, void *arg) {
    cbe_walk_t *w = arg;
    const char *v = e->kind == KDC_E_INDEX && e->nkids == 2 ? kdc_root_var(e->kids[1]) : NULL;
    if (v && w->nindex < 8)
        w->index_vars[w->nindex++] = v;
    return 0;
}

/* Does a helper of the analysed program do something that may be the
 * message's effect: a known side effect, or a call to processing code outside
 * the program, in it or in the helpers it calls? Bookkeeping helpers (kcat's
 * stop_partition(m): rd_kafka_consume_stop and counters) do not. */
static int helper_has_effect(kdc_rule_ctx_t *ctx, const kdc_func_t *f, int depth) {
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (kdc_facts_call_effect(ctx->facts, f, call) || kdc_call_outside_processing(ctx, f, call))
            return 1;
        const kdc_func_t *callee =
            call->usr && !kdc_api_lookup(call) && !call->callee_system
                ? kdc_program_find_callee(ctx->program, call->usr, f->tu)
                : NULL;
        if (callee && callee != f && depth > 0 && helper_has_effect(ctx, callee, depth - 1))
            return 1;
    }
    return 0;
}

static int is_effect_on(cbe_walk_t *w, const kdc_expr_t *call) {
    int given = kdc_mentions(call->recv, w->msg);
    for (unsigned i = 0; i < call->nkids && !given; i++)
        given = kdc_mentions(call->kids[i], w->msg);
    if (!given || kdc_is_logging_name(call->name))
        return 0;
    if (kdc_facts_call_effect(w->ctx->facts, w->f, call))
        return 1;
    if (kdc_facts_call_commits(w->ctx->facts, w->f, call))
        return 0; /* committing it again (a commit helper) is not its effect */
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api || kdc_api_is_librdkafka(call) || call->callee_system)
        return 0;
    const kdc_func_t *callee =
        call->usr ? kdc_program_find_callee(w->ctx->program, call->usr, w->f->tu) : NULL;
    if (!callee)
        return 1; /* processing code outside the analysed program */
    /* a helper that does an effect, or reports the outcome of its processing (a
     * result the caller tests: pipeline_append(m) != 0); bookkeeping returns nothing */
    return helper_has_effect(w->ctx, callee, 4) ||
           kdc_result_use(w->ctx->program, w->f, call) == KDC_USE_USED;
}

static int cbe_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    cbe_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->effect)
        return -1;
    if (nd->kind == KDC_N_ASSIGN && nd->expr->nkids &&
        kdc_root_var(nd->expr->kids[0]) == w->msg && kdc_expr_strip(nd->expr->kids[0])->kind == KDC_E_REF)
        return -1; /* another message */
    for (size_t i = 0; nd->kind == KDC_N_ASSIGN && nd->expr->nkids && i < w->nindex; i++)
        if (kdc_root_var(nd->expr->kids[0]) == w->index_vars[i])
            return -1; /* batch[i] with another i */
    if (nd->kind == KDC_N_CALL) {
        const kdc_api_t *api = kdc_api_lookup(nd->expr);
        if (api && (api->roles & KDC_API_CONSUME))
            return -1; /* the next message */
        if (is_effect_on(w, nd->expr)) {
            w->effect = nd->expr;
            return -1;
        }
    }
    return st;
}

static void check_commit(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_api_t *api) {
    const char *msg = kdc_root_var(kdc_commit_message_of(call, api));
    const kdc_cfg_t *g = f->cfg;
    if (!msg || !g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return;
    cbe_walk_t w = {.ctx = ctx, .f = f, .msg = msg};
    kdc_expr_walk(kdc_commit_message_of(call, api), collect_index_vars, &w);
    kdc_search_t s = {cbe_visit, NULL, &w, 1};
    kdc_cfg_search(g, g->call_node[call->call_id], 0, &s);
    if (!w.effect)
        return;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &w.effect->loc, "the message's effect happens here, after the commit");
    kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                    "the message is committed before its effect: if the process dies or the "
                    "effect fails after this point, the message is not delivered again; commit "
                    "after the effect succeeded");
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_COMMIT | KDC_API_STORE, check_commit);
}

const kdc_rule_t kdc_rule_commit_before_effect = {
    "commit-before-effect",
    "a message committed (or its offset stored) before the side effect it is for",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
