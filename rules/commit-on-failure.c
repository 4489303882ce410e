/*
 * commit-on-failure: a commit or offset store reachable on a path where the
 * processing of the message (a helper, a downstream write, the output
 * produce) reported failure. Transient failures (a database or broker down)
 * then delete data: the offset moves past a message whose effect never
 * happened. Contract rule 2: on a transient failure, do not commit.
 *
 * A processing call is given the message (or its fields), or a handle a
 * library call stored the message's data into (sqlite3_step(stmt) after
 * sqlite3_bind_text(stmt, 1, m->key, ..): kdc_facts_handle_carries_input);
 * streams and loggers are not such handles.
 *
 * Confidence: medium. From a processing call whose result a condition tests,
 * only the branches on which it failed are followed, to the first commit of
 * the same message (by message, through a commit helper given it, a list
 * built from it after the failure, or a bare commit when offsets are stored
 * on hand-over). A test of one error code (rc == STORE_POISON) leaves the
 * other failures on both branches unless every failure code of the
 * service's enumeration is tested. The path ends where the message is
 * routed to a dead-letter queue (the poison path: unconfirmed-dlq-routing
 * checks that), where the processing is retried (the call again), or where
 * the next message is consumed; after i++, batch[i] is another message.
 * libkdc's confirmed calls given the message (kdc_dlq_route,
 * kdc_produce_confirmed) are processing too: their error means the DLQ or
 * output write was not confirmed.
 * Classification calls (parse, validate, decode, is_*, a configured
 * poison-classifier) are not processing: poison may be committed and skipped.
 */
#include "common/batch_loop.h"
#include "common/consumer_common.h"
#include "common/offset_list.h"
#include "pts.h"
#include "results.h"

#include <string.h>

typedef struct cof_walk {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *proc;
    kdc_outcome_t outcome;
    const char *msgs[8];
    size_t nmsgs;
    const kdc_expr_t *commit;
    int codes_exhaustive; /* every failure code of the result's enumeration is tested */
    const char *index_vars[8]; /* i in process(batch[i]): after i++ batch[i] is another message */
    size_t nindex;
} cof_walk_t;

/* Walk states (bits). */
enum { COF_LIST_BUILT = 1, COF_INDEX_MOVED = 2 };

static int mentions_index_var(cof_walk_t *w, const kdc_expr_t *e) {
    for (size_t i = 0; i < w->nindex; i++)
        if (kdc_mentions(e, w->index_vars[i]))
            return 1;
    return 0;
}

static int is_msg(cof_walk_t *w, const char *usr) {
    for (size_t i = 0; usr && i < w->nmsgs; i++)
        if (w->msgs[i] == usr)
            return 1;
    return 0;
}

/* The processing call itself, or a variable holding its outcome. */
static int is_outcome(const kdc_expr_t *e, void *arg) {
    cof_walk_t *w = arg;
    if (e == w->proc)
        return 1;
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER)
        return 0;
    const char *k = kdc_pts_lvalue_key(w->ctx->program, e);
    for (size_t i = 0; k && i < w->outcome.nvars; i++)
        if (w->outcome.vars[i].key == k)
            return 1;
    return 0;
}

/* Does a CFG node build an offset list from the failed message (list_add or
 * set_offset given its fields, `p->offset = m->offset + 1`, `l = offsets_of(m)`)?
 * A list built before the failure (in an earlier iteration) is another message's. */
static int mentions_msg(cof_walk_t *w, const kdc_expr_t *e) {
    for (size_t k = 0; k < w->nmsgs; k++)
        if (kdc_mentions(e, w->msgs[k]))
            return 1;
    return 0;
}

static int fills_list_from_msg(cof_walk_t *w, const kdc_node_t *nd) {
    const kdc_expr_t *e = nd->expr;
    if (nd->kind == KDC_N_CALL && e->name) {
        const char *base = strrchr(e->name, ':');
        base = base ? base + 1 : e->name;
        const kdc_api_t *api = kdc_api_lookup(e);
        int fills = (api && (api->roles & KDC_API_MARK_DONE)) || /* kdc_watermark_done */
                    !strncmp(e->name, "rd_kafka_topic_partition_list_", 30) ||
                    !strcmp(e->name, "RdKafka::TopicPartition::create") ||
                    (e->is_method && (!strcmp(base, "push_back") || !strcmp(base, "emplace_back")));
        for (unsigned i = 0; fills && i < e->nkids; i++)
            if (mentions_msg(w, e->kids[i]))
                return 1;
        return 0;
    }
    if (nd->kind != KDC_N_ASSIGN || e->nkids != 2)
        return 0;
    const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
    int list_lhs = (l->type && strstr(l->type, "rd_kafka_topic_partition")) ||
                   (l->kind == KDC_E_MEMBER && l->usr && strstr(l->usr, "rd_kafka_topic_partition_s"));
    return list_lhs && mentions_msg(w, e->kids[1]);
}

/* batch[i - k] (k > 0) with i an index of the failed batch[i]: an earlier
 * message, whose commit (offset + 1) stops at the failed one. */
static int earlier_elem(const kdc_expr_t *e, void *arg) {
    cof_walk_t *w = arg;
    const kdc_expr_t *batch, *index;
    if (!kdc_batch_elem(e, &batch, &index))
        return 0;
    index = kdc_expr_strip(index);
    return index && index->kind == KDC_E_BINARY && index->op == KDC_OP_SUB && index->nkids == 2 &&
           index->kids[1]->has_ival && index->kids[1]->ival > 0 &&
           mentions_index_var(w, index->kids[0]);
}

/* Does the commit cover the message whose processing failed? `list_built`:
 * an offset list was built from it on the path since the failure. */
static int commit_matches(cof_walk_t *w, const kdc_expr_t *call, int st) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if ((st & COF_INDEX_MOVED) && mentions_index_var(w, call))
        return 0; /* batch[i] after i moved on: another message */
    if (!api) { /* a helper that commits: when given the message (and not the outcome,
                 * finish(rk, m, rc): then the helper decides) */
        for (unsigned i = 0; i < call->nkids; i++)
            if (kdc_expr_walk(call->kids[i], is_outcome, w))
                return 0;
        for (unsigned i = 0; i < call->nkids; i++)
            for (size_t k = 0; k < w->nmsgs; k++)
                if (kdc_mentions(call->kids[i], w->msgs[k]))
                    return 1;
        return 0;
    }
    const kdc_expr_t *cm = kdc_commit_message_of(call, api);
    const char *m = kdc_root_var(cm);
    if (m && kdc_expr_walk(cm, earlier_elem, w))
        return 0; /* batch[i - 1] after batch[i] failed: commits up to the failed one */
    if (m)
        return is_msg(w, m);
    const kdc_expr_t *list = api->list != KDC_ARG_NONE ? kdc_api_arg(call, api->list) : NULL;
    if (list && !kdc_expr_is_null(list)) {
        /* a list: when it is built from the failed message's fields */
        const char *built[8];
        size_t n = (st & COF_LIST_BUILT) ? kdc_offset_list_messages(w->f, list, built, 8) : 0;
        for (size_t i = 0; i < n; i++)
            if (is_msg(w, built[i]))
                return 1;
        return 0;
    }
    /* a bare commit covers the failed message when offsets are stored on hand-over */
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(w->ctx, w->f, call, api, 1, &clients, &unknown);
    int covers = unknown;
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64 && !covers;
         k = kdc_bits_next(&clients, k + 1))
        covers = kdc_bits_get(&clients, k) &&
                 kdc_facts_client_bool(w->ctx->facts, k, "enable.auto.offset.store", 1) != KDC_TRI_NO;
    kdc_bits_free(&clients);
    return covers;
}

static int cof_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    cof_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->commit)
        return -1;
    if ((nd->kind == KDC_N_CALL || nd->kind == KDC_N_ASSIGN) && fills_list_from_msg(w, nd))
        st |= COF_LIST_BUILT;
    if (nd->kind == KDC_N_ASSIGN && nd->expr->nkids) {
        const char *v = kdc_root_var(nd->expr->kids[0]);
        for (size_t i = 0; v && i < w->nindex; i++)
            if (w->index_vars[i] == v)
                st |= COF_INDEX_MOVED;
    }
    if (nd->kind != KDC_N_CALL)
        return st;
    const kdc_expr_t *c = nd->expr;
    if (c == w->proc)
        return -1; /* processed again: a retry */
    const kdc_api_t *api = kdc_api_lookup(c);
    if (api && (api->roles & KDC_API_CONSUME))
        return -1;
    kdc_call_roles_t roles = kdc_facts_call_roles(w->ctx->facts, w->f, c);
    if (roles.routes_dlq || roles.confirms ||
        kdc_options_has_role(w->ctx->opts, c, KDC_ROLE_CLASSIFIER))
        return -1; /* the poison path */
    if (roles.commits && commit_matches(w, c, st)) {
        w->commit = c;
        return -1;
    }
    return st;
}

/* `rc == STORE_POISON`, `e == RD_KAFKA_RESP_ERR__QUEUE_FULL`: true means that
 * failure, false means success or any other failure (0 and -1 stand for
 * success and the only failure). Returns the constant, or NULL. */
static const kdc_expr_t *tested_code(const kdc_expr_t *cond) {
    cond = kdc_expr_strip(cond);
    if (!cond || cond->kind != KDC_E_BINARY || cond->op != KDC_OP_EQ || cond->nkids != 2)
        return NULL;
    for (unsigned i = 0; i < 2; i++) {
        const kdc_expr_t *k = kdc_expr_strip(cond->kids[i]);
        if (k && k->has_ival && !kdc_expr_strip(cond->kids[1 - i])->has_ival)
            return k->ival != 0 && k->ival != -1 ? k : NULL;
    }
    return NULL;
}

/* The failure codes of a service's own enumeration (enum store_rc {STORE_OK,
 * STORE_POISON, STORE_UNAVAILABLE}) that the program names anywhere. */
typedef struct enum_codes {
    const char *prefix; /* enumerator USR up to its last '@' */
    size_t plen;
    long long vals[8];
    size_t n;
    int overflow;
} enum_codes_t;

static void add_code(enum_codes_t *c, long long v) {
    for (size_t i = 0; i < c->n; i++)
        if (c->vals[i] == v)
            return;
    if (c->n < 8)
        c->vals[c->n++] = v;
    else
        c->overflow = 1;
}

static int enum_prefix(const kdc_expr_t *k, size_t *plen) {
    if (k->kind != KDC_E_REF || k->ref != KDC_REF_ENUMERATOR || !k->usr || !k->name ||
        !strncmp(k->name, "RD_KAFKA_", 9) || !strncmp(k->name, "ERR_", 4) || strstr(k->usr, "RdKafka"))
        return 0; /* librdkafka's error codes are never all handled */
    const char *at = strrchr(k->usr, '@');
    if (!at)
        return 0;
    *plen = (size_t)(at - k->usr) + 1;
    return 1;
}

static int collect_codes(const kdc_expr_t *e, void *arg) {
    enum_codes_t *c = arg;
    if (e->kind == KDC_E_REF && e->ref == KDC_REF_ENUMERATOR && e->usr && e->has_ival &&
        e->ival != 0 && !strncmp(e->usr, c->prefix, c->plen) && !strchr(e->usr + c->plen, '@'))
        add_code(c, e->ival);
    return 0;
}

/* Do the conditions of f compare the call's result with every failure code of
 * its enumeration (`if (rc == STORE_UNAVAILABLE) ..; if (rc == STORE_POISON) ..`)?
 * Then a false edge of one of them is not "some other failure". */
static int codes_exhaustive(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_outcome_t *o) {
    const kdc_cfg_t *g = f->cfg;
    enum_codes_t tested = {0};
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_expr_t *k;
        size_t plen;
        if (g->nodes[n].kind != KDC_N_COND || !(k = tested_code(g->nodes[n].expr)) ||
            !kdc_outcome_polarity(o, g->nodes[n].expr))
            continue;
        if (!enum_prefix(k, &plen) ||
            (tested.prefix && (plen != tested.plen || strncmp(tested.prefix, k->usr, plen))))
            return 0; /* a plain number, librdkafka's codes, or two enumerations */
        tested.prefix = k->usr;
        tested.plen = plen;
        add_code(&tested, k->ival);
    }
    if (!tested.n)
        return 0;
    enum_codes_t all = {tested.prefix, tested.plen, {0}, 0, 0};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++)
        kdc_func_walk_exprs(kdc_program_func(ctx->program, i), collect_codes, &all);
    if (all.overflow)
        return 0;
    for (size_t i = 0; i < all.n; i++) {
        size_t j = 0;
        while (j < tested.n && tested.vals[j] != all.vals[i])
            j++;
        if (j == tested.n)
            return 0;
    }
    return 1;
}

static int cof_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    cof_walk_t *w = arg;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return 1;
    int fail = kdc_outcome_failure_edge(&w->outcome, nd->expr);
    return fail < 0 || fail == (int)i || (!w->codes_exhaustive && tested_code(nd->expr));
}

/* Classification is not processing: a message found poison by parse(),
 * validate(), is_valid() may be logged, committed and skipped (decision
 * record rule 2), or routed to a dead-letter queue. */
static int is_classifier_name(const char *name) {
    static const char *const words[] = {"parse",    "validate", "valid",  "decode", "deserialize",
                                        "classify", "check",    "schema", "poison", "acceptable",
                                        NULL};
    static const char *const first[] = {"is", "has", "can", "should", NULL};
    return kdc_name_has_word(name, words, first);
}

static int message_typed(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) && kdc_type_is_message(e->type);
}

/* Is the call given a handle that holds the message's data (sqlite3_step(stmt)
 * after sqlite3_bind_text(stmt, 1, m->key, ..): kdc_facts_handle_carries_input)? */
static int given_carrier(kdc_rule_ctx_t *ctx, const kdc_expr_t *call) {
    for (unsigned i = 0; i < call->nkids; i++)
        if (kdc_facts_handle_carries_input(ctx->facts, call->kids[i]))
            return 1;
    return 0;
}

typedef struct msg_vars {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    cof_walk_t *w;
} msg_vars_t;

static int add_msg_var(const kdc_expr_t *e, void *arg) {
    msg_vars_t *v = arg;
    cof_walk_t *w = v->w;
    if (e->kind == KDC_E_REF && (e->ref == KDC_REF_LOCAL || e->ref == KDC_REF_PARAM) && e->usr &&
        kdc_type_is_message(e->type) && !is_msg(w, e->usr) && w->nmsgs < 8 &&
        kdc_facts_derived_from_input(v->ctx->facts, v->f, e))
        w->msgs[w->nmsgs++] = e->usr;
    return 0;
}

/* Calls whose failure means "the message's effect did not happen": given a
 * consumed message (or its fields) or a handle holding its data, and a
 * produce, a side effect or code of the analysed program (or outside it). */
static int is_processing(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call) {
    int given = 0;
    for (unsigned i = 0; i < call->nkids && !given; i++)
        given = kdc_expr_walk(call->kids[i], message_typed, NULL);
    if (!given && !given_carrier(ctx, call))
        return 0;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api) /* a produce; or libkdc's confirmed produce or DLQ routing of the message,
              * whose error means nothing was confirmed (kdc_dlq_route() != 0) */
        return (api->roles & (KDC_API_PRODUCE | KDC_API_CONFIRM)) != 0;
    if (kdc_facts_call_effect(ctx->facts, f, call))
        return 1;
    if (kdc_api_is_librdkafka(call) || call->callee_system || !*call->name ||
        is_classifier_name(call->name))
        return 0;
    kdc_call_roles_t roles = kdc_facts_call_roles(ctx->facts, f, call);
    return !roles.commits && !roles.routes_dlq &&
           !kdc_options_has_role(ctx->opts, call, KDC_ROLE_CLASSIFIER);
}

static void check_func(kdc_rule_ctx_t *ctx, const kdc_func_t *f) {
    const kdc_cfg_t *g = f->cfg;
    if (!g)
        return;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (g->call_node[c] < 0 || !is_processing(ctx, f, call))
            continue;
        cof_walk_t w = {.ctx = ctx, .f = f, .proc = call};
        kdc_outcome_init(&w.outcome, ctx->program, f, call);
        if (!w.outcome.nvars && kdc_result_use(ctx->program, f, call) != KDC_USE_USED)
            continue; /* nobody looks at its outcome: nothing to follow */
        w.codes_exhaustive = codes_exhaustive(ctx, f, &w.outcome);
        for (unsigned k = 0; k < call->nkids && w.nmsgs < 8; k++) {
            const char *m = kdc_root_var(call->kids[k]);
            if (m && kdc_expr_walk(call->kids[k], message_typed, NULL)) {
                w.msgs[w.nmsgs++] = m;
                w.nindex = kdc_add_index_vars(call->kids[k], w.index_vars, w.nindex, 8);
            }
        }
        if (!w.nmsgs) { /* sqlite3_step(stmt): the consumed messages f handles */
            msg_vars_t v = {ctx, f, &w};
            kdc_func_walk_exprs(f, add_msg_var, &v);
        }
        kdc_search_t s = {cof_visit, cof_edge, &w, 4};
        kdc_cfg_search(g, g->call_node[c], 0, &s);
        if (!w.commit)
            continue;
        /* only when some condition really separates failure from success */
        int tested = 0;
        for (unsigned n = 0; n < g->n && !tested; n++)
            tested = g->nodes[n].kind == KDC_N_COND &&
                     kdc_outcome_failure_edge(&w.outcome, g->nodes[n].expr) >= 0;
        if (!tested)
            continue;
        kdc_notes_t notes = {0};
        kdc_notes_add(&notes, &call->loc, "processing reported failure here");
        kdc_rule_report(ctx, f, &w.commit->loc, notes.v, notes.n,
                        "committed on a path where processing failed: a transient failure "
                        "(database, broker, downstream service down) deletes the message; do not "
                        "commit (halt or retry so the offset stays), or route a poison message to "
                        "a dead-letter queue with confirmation first");
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++)
        check_func(ctx, kdc_program_func(ctx->program, i));
}

const kdc_rule_t kdc_rule_commit_on_failure = {
    "commit-on-failure",
    "commit or offset store reachable after the message's processing reported failure",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
