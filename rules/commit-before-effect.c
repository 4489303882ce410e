/*
 * commit-before-effect: a message is committed (or its offset stored) and
 * only afterwards handed to the code that performs its effect (appending it
 * to a pipeline, writing it to a database, producing it on). A crash or a
 * failure in between loses the message: the group will not deliver it again.
 *
 * Confidence: medium. From a commit of a message m (by message, an offset
 * list built from the current m, or a commit helper given m), the path is
 * followed (until m is reassigned, and not into branches where the commit
 * reported failure) to a call that is given m or its fields and is a side
 * effect, a helper of the analysed code that performs one or whose result
 * is tested, or a function outside it (logging functions excepted).
 * Commits after the effect are not reported.
 */
#include "common/consumer_common.h"
#include "common/offset_list.h"
#include "results.h"

typedef struct cbe_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const char *msg;
    const char *index_vars[8]; /* i in batch[i]: a new i is another message */
    size_t nindex;
    const kdc_expr_t *effect;
    kdc_outcome_t outcome; /* of the commit (or commit helper) call */
} cbe_walk_t;

/* Is the list filled from the current value of msg: is there a path from a
 * node that fills it from msg to the commit on which msg is not reassigned
 * (a list built in an earlier iteration is the previous message's)? */
typedef struct fill_walk {
    const char *msg;
    int commit_node;
    int found;
} fill_walk_t;

static int fill_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    fill_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (w->found || n == g->exit)
        return -1;
    if (n == w->commit_node) {
        w->found = 1;
        return -1;
    }
    if (nd->kind == KDC_N_ASSIGN && nd->expr->nkids &&
        kdc_expr_strip(nd->expr->kids[0])->kind == KDC_E_REF &&
        kdc_root_var(nd->expr->kids[0]) == w->msg)
        return -1;
    const kdc_api_t *api = nd->kind == KDC_N_CALL ? kdc_api_lookup(nd->expr) : NULL;
    if (api && (api->roles & KDC_API_CONSUME))
        return -1;
    return st;
}

static int node_fills(const kdc_offset_list_t *s, const kdc_node_t *nd) {
    const kdc_expr_t *e = nd->expr;
    if (nd->kind == KDC_N_CALL)
        return kdc_offset_list_fills(s, e) && kdc_mentions(e, s->msgs[0]);
    return nd->kind == KDC_N_ASSIGN && e->nkids == 2 && kdc_offset_list_is_lvalue(s, e->kids[0]) &&
           kdc_mentions(e->kids[1], s->msgs[0]);
}

static int list_of_current(const kdc_func_t *f, const kdc_expr_t *list, const char *msg,
                           int commit_node) {
    const kdc_cfg_t *g = f->cfg;
    kdc_offset_list_t s;
    kdc_offset_list_init(&s, f, list);
    s.msgs[0] = msg;
    s.nmsgs = 1;
    fill_walk_t w = {msg, commit_node, 0};
    kdc_search_t srch = {fill_visit, NULL, &w, 1};
    for (unsigned n = 0; n < g->n && !w.found; n++)
        if ((g->nodes[n].kind == KDC_N_CALL || g->nodes[n].kind == KDC_N_ASSIGN) &&
            node_fills(&s, &g->nodes[n]))
            kdc_cfg_search(g, (int)n, 0, &srch);
    return w.found;
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
    if (kdc_facts_call_roles(w->ctx->facts, w->f, call).commits)
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

/* Branches on which the commit (or the commit helper: write_and_commit(m) != 0,
 * then dead_letter(m)) failed did not commit: not followed. */
static int cbe_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    cbe_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    return nd->kind != KDC_N_COND || kdc_outcome_failure_edge(&w->outcome, nd->expr) != (int)i;
}

static const kdc_expr_t *effect_after(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                      const kdc_expr_t *call, const char *msg,
                                      const kdc_expr_t *msg_expr) {
    cbe_walk_t w = {.ctx = ctx, .f = f, .msg = msg};
    w.nindex = kdc_add_index_vars(msg_expr, w.index_vars, 0, 8);
    kdc_outcome_init(&w.outcome, ctx->program, f, call);
    kdc_search_t s = {cbe_visit, cbe_edge, &w, 1};
    kdc_cfg_search(f->cfg, ((const kdc_cfg_t *)f->cfg)->call_node[call->call_id], 0, &s);
    return w.effect;
}

static void report(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                   const kdc_expr_t *effect) {
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &effect->loc, "the message's effect happens here, after the commit");
    kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                    "the message is committed before its effect: if the process dies or the "
                    "effect fails after this point, the message is not delivered again; commit "
                    "after the effect succeeded");
}

static void check_commit(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_api_t *api) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return;
    const kdc_expr_t *m = kdc_commit_message_of(call, api);
    const char *msgs[8];
    size_t n = 0;
    if (m) {
        if ((msgs[0] = kdc_root_var(m)) != NULL)
            n = 1;
    } else {
        /* a list built from messages: rd_kafka_commit(rk, offs, ..),
         * rd_kafka_offsets_store(rk, offs), C++ commitSync(offsets) */
        const kdc_expr_t *list = api->list != KDC_ARG_NONE ? kdc_api_arg(call, api->list) : NULL;
        const kdc_expr_t *ls = kdc_expr_strip(list);
        if (ls && ls->kind == KDC_E_CALL && !kdc_root_var(ls)) {
            /* rd_kafka_commit(rk, next_offset_of(m), 0) */
            n = kdc_add_message_vars(ls, msgs, 0, 8);
        } else if (list && !kdc_expr_is_null(list)) {
            const char *built[8];
            size_t nb = kdc_offset_list_messages(f, list, built, 8);
            for (size_t i = 0; i < nb; i++)
                if (list_of_current(f, list, built[i], g->call_node[call->call_id]))
                    msgs[n++] = built[i];
        }
    }
    for (size_t i = 0; i < n; i++) {
        const kdc_expr_t *effect = effect_after(ctx, f, call, msgs[i], m);
        if (effect) {
            report(ctx, f, call, effect);
            return;
        }
    }
}

/* A helper of the analysed code (or a configured commit function) that
 * commits and is given the message: commit_input(rk, m); then write_row(m). */
static void check_commit_helpers(kdc_rule_ctx_t *ctx, const kdc_func_t *f) {
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; g && c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (g->call_node[c] < 0 || kdc_api_lookup(call) || kdc_api_is_librdkafka(call))
            continue;
        kdc_call_roles_t roles = kdc_facts_call_roles(ctx->facts, f, call);
        if (!roles.commits || roles.consumes)
            continue;
        for (unsigned a = 0; a < call->nkids; a++) {
            const kdc_expr_t *arg = kdc_expr_strip(call->kids[a]);
            const char *msg = kdc_root_var(arg);
            const char *first = NULL; /* the first message arg mentions */
            if (!msg || !kdc_add_message_vars(arg, &first, 0, 1) || first != msg)
                continue; /* not a message (or its field) */
            const kdc_expr_t *effect = effect_after(ctx, f, call, msg, arg);
            if (effect) {
                report(ctx, f, call, effect);
                break;
            }
        }
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_COMMIT | KDC_API_STORE, check_commit);
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++)
        check_commit_helpers(ctx, kdc_program_func(ctx->program, i));
}

const kdc_rule_t kdc_rule_commit_before_effect = {
    "commit-before-effect",
    "a message committed (or its offset stored) before the side effect it is for",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
