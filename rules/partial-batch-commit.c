/*
 * partial-batch-commit: a loop over a batch of consumed messages that can
 * stop before the batch's last message (a break on a shutdown flag, an
 * error or a limit; a condition besides the bound; a goto out of it; a
 * helper that returns early), followed by a commit of the whole batch's
 * offsets: the batch's last message (batch[n - 1], batch.back(), a variable
 * holding it), an offset list built from it or from rd_kafka_position(), or
 * a commit of the stored offsets (NULL list, C++ commitSync()) while
 * enable.auto.offset.store=true stored every message of the batch when it
 * was handed out. The messages after the point where the loop stopped are
 * committed unprocessed and lost.
 *
 * Confidence: medium. Followed from each early exit, along paths that do
 * not go back into the loop, consume again, test where the loop stopped
 * (the index, a variable written in the loop, a flag or field its
 * conditions read, a helper's result; a flag the loop stopped on is
 * followed on the side it still takes), reset the batch or its count, or
 * hand the batch to processing code (the rest processed elsewhere) or enter
 * another pass over the batch (the loop was a scan), to the first commit.
 * A loop that only fills the batch is not a pass over it. Not reported: a
 * commit of the processed prefix (batch[i - 1], the last message
 * processed), a loop that cannot stop early; in the default profile, a
 * commit of the stored offsets whose consumer's auto offset store cannot be
 * determined (strict: a note).
 */
#include "common/batch_loop.h"
#include "common/consumer_common.h"
#include "common/offset_list.h"
#include "pts.h"
#include "results.h"

#include <string.h>

/* What a commit is compared with: the batch, its count, the keys that tell
 * how far the loop got, and the variables holding the batch's last message. */
typedef struct batch_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_batch_loop_t *bl; /* NULL for a helper call */
    const char *batch;
    kdc_keyset_t count;
    int size_bound;
    kdc_keyset_t progress; /* index, and what the loop or helper wrote */
    kdc_keyset_t whole;    /* variables holding the batch's last message */
    const kdc_expr_t *helper; /* the helper call that may return early */
    kdc_outcome_t outcome;    /* ... and what conditions say about its result */
} batch_ctx_t;

static const char *base_name(const char *name) {
    const char *b = name ? strrchr(name, ':') : NULL;
    return b ? b + 1 : name ? name : "";
}

typedef struct size_scan {
    kdc_program_t *p;
    const char *batch;
} size_scan_t;

static int is_size_call(const kdc_expr_t *e, void *arg) {
    size_scan_t *s = arg;
    return e->kind == KDC_E_CALL && e->is_method && e->recv &&
           !strcmp(base_name(e->name), "size") && kdc_pts_lvalue_key(s->p, e->recv) == s->batch;
}

/* The batch's last message: batch[n - 1] (an index from the count, not from
 * the loop's progress), batch.back(), or a variable holding one of them. */
static int whole_visit(const kdc_expr_t *e, void *arg) {
    batch_ctx_t *b = arg;
    kdc_program_t *p = b->ctx->program;
    const kdc_expr_t *batch, *index;
    if (kdc_batch_elem(e, &batch, &index)) {
        if (kdc_pts_lvalue_key(p, batch) != b->batch ||
            kdc_keyset_mentioned(p, index, &b->progress))
            return 0;
        size_scan_t s = {p, b->batch};
        return kdc_keyset_mentioned(p, index, &b->count) ||
               (b->size_bound && kdc_expr_walk(index, is_size_call, &s));
    }
    if (e->kind == KDC_E_CALL && e->is_method && e->recv && !e->nkids &&
        !strcmp(base_name(e->name), "back") && kdc_type_is_message(e->recv->type))
        return kdc_pts_lvalue_key(p, e->recv) == b->batch;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        return kdc_keyset_has(&b->whole, kdc_pts_lvalue_key(p, e));
    return 0;
}

static int mentions_whole(batch_ctx_t *b, const kdc_expr_t *e) {
    return e && kdc_expr_walk(e, whole_visit, b);
}

/* last = batch[n - 1], written nowhere from the loop's progress. */
typedef struct whole_vars {
    batch_ctx_t *b;
    int added;
} whole_vars_t;

static int collect_whole(const kdc_expr_t *e, void *arg) {
    whole_vars_t *w = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const char *k = kdc_pts_lvalue_key(w->b->ctx->program, e->kids[0]);
    if (k && !kdc_keyset_has(&w->b->whole, k) && !kdc_keyset_has(&w->b->progress, k) &&
        kdc_type_is_message(e->kids[0]->type) && mentions_whole(w->b, e->kids[1])) {
        kdc_keyset_add(&w->b->whole, k);
        w->added = 1;
    }
    return 0;
}

static void find_whole_vars(batch_ctx_t *b) {
    for (int round = 0; round < 3; round++) {
        whole_vars_t w = {b, 0};
        kdc_func_walk_exprs(b->f, collect_whole, &w);
        if (!w.added)
            break;
    }
}

/* ---------- does a commit cover the whole batch? ---------- */

typedef struct list_scan {
    batch_ctx_t *b;
    kdc_offset_list_t list;
    int hit;
} list_scan_t;

/* The list is filled from the batch's last message, or given to
 * rd_kafka_position() (the position after the last message handed out). */
static int scan_list(const kdc_expr_t *e, void *arg) {
    list_scan_t *ls = arg;
    if (kdc_offset_list_fills(&ls->list, e)) {
        for (unsigned i = 0; i < e->nkids; i++)
            ls->hit |= mentions_whole(ls->b, e->kids[i]);
    } else if (e->kind == KDC_E_BINARY &&
               (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) && e->nkids == 2 &&
               kdc_offset_list_is_lvalue(&ls->list, e->kids[0])) {
        ls->hit |= mentions_whole(ls->b, e->kids[1]);
    } else if (e->kind == KDC_E_CALL && e->name &&
               (!strcmp(e->name, "rd_kafka_position") ||
                (!strncmp(e->name, "RdKafka::", 9) && !strcmp(base_name(e->name), "position")))) {
        for (unsigned i = 0; i < e->nkids; i++)
            ls->hit |= kdc_root_var(e->kids[i]) == ls->list.list;
    }
    return ls->hit;
}

/* Does the commit without a list commit stored offsets that include the
 * whole batch (auto offset store on)? 1 yes, 0 no, -1 cannot tell. */
static int stored_offsets_cover(batch_ctx_t *b, const kdc_expr_t *call, const kdc_api_t *api,
                                kdc_notes_t *notes) {
    kdc_bits_t clients;
    int unknown = 0, yes = 0, no = 0;
    kdc_call_clients(b->ctx, b->f, call, api, 1, &clients, &unknown);
    for (size_t k = kdc_bits_next(&clients, 0); k < clients.nwords * 64;
         k = kdc_bits_next(&clients, k + 1)) {
        if (!kdc_bits_get(&clients, k))
            continue;
        switch (kdc_facts_client_bool(b->ctx->facts, k, "enable.auto.offset.store", 1)) {
        case KDC_TRI_YES:
            if (!yes)
                kdc_notes_add(notes, kdc_facts_client_loc(b->ctx->facts, k),
                              "consumer created here with enable.auto.offset.store=true (the "
                              "default): every message of the batch was stored when handed out");
            yes = 1;
            break;
        case KDC_TRI_NO:
            no = 1;
            break;
        default:
            unknown = 1;
        }
    }
    kdc_bits_free(&clients);
    if (no && !yes)
        return 0;
    return unknown || !yes ? -1 : 1;
}

/* 1: the commit covers the whole batch; 0: it does not; -1: cannot tell. */
static int commit_covers_batch(batch_ctx_t *b, const kdc_expr_t *call, kdc_notes_t *notes) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api && !strncmp(api->name, "kdc_watermark_", 14))
        return 0; /* a position the watermark computed */
    for (unsigned i = 0; i < call->nkids; i++)
        if (mentions_whole(b, call->kids[i]))
            return 1;
    if (!api) { /* a commit helper given the batch and its count */
        int batch = 0, count = 0;
        for (unsigned i = 0; i < call->nkids; i++) {
            if (kdc_keyset_mentioned(b->ctx->program, call->kids[i], &b->progress))
                return 0;
            batch |= kdc_root_var(call->kids[i]) && kdc_pts_lvalue_key(b->ctx->program,
                                                                       call->kids[i]) == b->batch;
            count |= kdc_keyset_mentioned(b->ctx->program, call->kids[i], &b->count);
        }
        return batch && count;
    }
    if (kdc_commit_message_of(call, api) || api->list == KDC_ARG_NONE)
        return 0; /* another message */
    const kdc_expr_t *list = kdc_api_arg(call, api->list);
    if (list && !kdc_expr_is_null(list)) {
        list_scan_t ls = {b, {0}, 0};
        kdc_offset_list_init(&ls.list, b->f, list);
        if (ls.list.list)
            kdc_func_walk_exprs(b->f, scan_list, &ls);
        return ls.hit;
    }
    if (call->is_method && call->nkids == 1 && !(call->str && strstr(call->str, "OffsetCommitCb")))
        return 0;
    return stored_offsets_cover(b, call, api, notes);
}

/* ---------- the walk from an early exit ---------- */

typedef struct walk {
    batch_ctx_t *b;
    int start;     /* the node the early exit leaves */
    unsigned succ; /* ... by this successor */
    const int *passes; /* heads of other loops that process the same batch */
    size_t npasses;
    const char *flag;  /* the flag the loop stopped on (`if (!running) break`), or NULL */
    int flag_val;      /* ... and its value on this path */
    const kdc_expr_t *commit;
    int covers;
    kdc_notes_t notes;
} walk_t;

/* Does a helper of the program do something with what it is given: a side
 * effect, or a call to processing code outside the program (three levels
 * down)? Releasing the messages (rd_kafka_message_destroy, free) does not. */
static int helper_processes(kdc_rule_ctx_t *ctx, const kdc_func_t *g, int depth) {
    for (unsigned c = 0; c < g->ncalls; c++) {
        const kdc_expr_t *call = g->calls[c];
        if (kdc_facts_call_effect(ctx->facts, g, call) || kdc_call_outside_processing(ctx, g, call))
            return 1;
        const kdc_func_t *h = call->usr && !kdc_api_lookup(call) && !call->callee_system
                                  ? kdc_program_find_callee(ctx->program, call->usr, g->tu)
                                  : NULL;
        if (h && h != g && depth > 0 && helper_processes(ctx, h, depth - 1))
            return 1;
    }
    return 0;
}

/* Code after the loop given the batch (the rest handed on, retried, routed):
 * processing code outside the program, or a helper that processes; not
 * logging, librdkafka (message destroy), the C library or a helper that only
 * releases the messages. */
static int hands_batch_on(batch_ctx_t *b, const kdc_expr_t *call) {
    if (kdc_api_lookup(call) || kdc_api_is_librdkafka(call) || call->callee_system ||
        !call->name || kdc_is_logging_name(call->name) || !strcmp(call->name, "<delete>"))
        return 0;
    const kdc_func_t *g =
        call->usr ? kdc_program_find_callee(b->ctx->program, call->usr, b->f->tu) : NULL;
    if (g && !helper_processes(b->ctx, g, 3))
        return 0;
    kdc_keyset_t one = {{b->batch}, 1};
    if (kdc_keyset_mentioned(b->ctx->program, call->recv, &one))
        return 1;
    for (unsigned i = 0; i < call->nkids; i++)
        if (kdc_keyset_mentioned(b->ctx->program, call->kids[i], &one))
            return 1;
    return 0;
}

/* The flag a condition reads as a whole: a global or a field (running,
 * w->stop), also through an atomic load (atomic_load(&running),
 * running.load(), an std::atomic<bool> converted to bool). */
static const char *flag_of(kdc_program_t *p, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return NULL;
    if ((e->kind == KDC_E_REF && e->ref == KDC_REF_GLOBAL) || e->kind == KDC_E_MEMBER)
        return kdc_pts_lvalue_key(p, e);
    if (e->kind != KDC_E_CALL || !e->name)
        return NULL;
    if (strstr(e->name, "atomic_load") && e->nkids) {
        const kdc_expr_t *a = kdc_expr_strip(e->kids[0]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1)
            return flag_of(p, a->kids[0]);
        return NULL;
    }
    const kdc_expr_t *obj = e->recv ? e->recv : e->nkids == 1 ? e->kids[0] : NULL;
    if (e->is_method && obj && obj->type && strstr(obj->type, "atomic") &&
        (strstr(e->name, "load") || strstr(e->name, "operator ")))
        return flag_of(p, obj);
    return NULL;
}

/* On the way out through successor `succ` of node `from`: the flag the
 * nearest condition before it tested, and the value that took this way. */
static void exit_flag(kdc_program_t *p, const kdc_cfg_t *g, int from, unsigned succ,
                      const char **flag, int *val) {
    int cur = from, next = g->nodes[from].succ[succ];
    for (int steps = 0; steps < 16 && cur >= 0; steps++) {
        const kdc_node_t *nd = &g->nodes[cur];
        if (nd->kind == KDC_N_COND) {
            *flag = flag_of(p, nd->expr);
            *val = nd->succ[0] == next;
            return;
        }
        if (nd->kind != KDC_N_NOP)
            return;
        int pred = -1, npred = 0;
        for (unsigned m = 0; m < g->n; m++)
            for (unsigned i = 0; i < g->nodes[m].nsucc; i++)
                if (g->nodes[m].succ[i] == cur) {
                    pred = (int)m;
                    npred++;
                }
        if (npred != 1)
            return;
        next = cur;
        cur = pred;
    }
}

static int is_helper_call(const kdc_expr_t *e, void *arg) {
    return e == ((batch_ctx_t *)arg)->helper;
}

static int walk_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    walk_t *w = arg;
    batch_ctx_t *b = w->b;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit || w->commit)
        return -1;
    if (b->bl && (n == g->loops[b->bl->loop].head ||
                  (nd->kind != KDC_N_NOP && kdc_cfg_in_loop(g, n, b->bl->loop))))
        return -1; /* back into the loop */
    for (size_t i = 0; i < w->npasses; i++)
        if (n == w->passes[i])
            return -1; /* another pass over the batch: the loop was a scan */
    switch (nd->kind) {
    case KDC_N_COND:
        if (w->flag && flag_of(b->ctx->program, nd->expr) == w->flag)
            return st; /* the flag still has the value it stopped the loop with (walk_edge) */
        if (kdc_keyset_mentioned(b->ctx->program, nd->expr, &b->progress) ||
            (b->helper && (kdc_expr_walk(nd->expr, is_helper_call, b) ||
                           kdc_outcome_polarity(&b->outcome, nd->expr))))
            return -1; /* tests where the loop stopped, or what the helper said */
        return st;
    case KDC_N_ASSIGN: {
        const char *k = kdc_pts_lvalue_key(b->ctx->program, kdc_expr_assigned(nd->expr));
        return k && (k == b->batch || kdc_keyset_has(&b->count, k)) ? -1 : st;
    }
    case KDC_N_CALL:
        break;
    default:
        return st;
    }
    const kdc_expr_t *c = nd->expr;
    const kdc_api_t *api = kdc_api_lookup(c);
    if (c == b->helper || (api && (api->roles & KDC_API_CONSUME)) ||
        kdc_facts_call_roles(b->ctx->facts, b->f, c).consumes)
        return -1; /* the batch again, or the next one */
    if ((api && (api->roles & (KDC_API_COMMIT | KDC_API_STORE))) ||
        (!api && kdc_facts_call_roles(b->ctx->facts, b->f, c).commits)) {
        w->commit = c;
        w->covers = commit_covers_batch(b, c, &w->notes);
        return -1;
    }
    return hands_batch_on(b, c) ? -1 : st;
}

static int walk_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)st;
    walk_t *w = arg;
    if (n == w->start)
        return i == w->succ;
    if (w->flag && g->nodes[n].kind == KDC_N_COND &&
        flag_of(w->b->ctx->program, g->nodes[n].expr) == w->flag)
        return (int)i == (w->flag_val ? 0 : 1);
    return 1;
}

typedef KDC_VEC(const kdc_expr_t *) expr_vec_t;

static int seen_before(expr_vec_t *seen, const kdc_expr_t *c) {
    for (size_t i = 0; i < seen->n; i++)
        if (seen->v[i] == c)
            return 1;
    KDC_VEC_PUSH(*seen, c);
    return 0;
}

static void report(batch_ctx_t *b, walk_t *w, const kdc_loc_t *stop, const kdc_loc_t *loop,
                   expr_vec_t *seen) {
    if (!w->commit || !w->covers || seen_before(seen, w->commit))
        return;
    kdc_rule_ctx_t *ctx = b->ctx;
    kdc_notes_t notes = {0}; /* the path: consumer, loop, where it stops, then the commit */
    for (size_t i = 0; i < w->notes.n; i++)
        kdc_notes_add(&notes, &w->notes.v[i].loc, w->notes.v[i].message);
    if (loop)
        kdc_notes_add(&notes, loop, "loop over the consumed batch");
    kdc_notes_add(&notes, stop,
                  b->helper ? "this helper can return before the batch's last message"
                            : "the loop over the batch can stop here, before its last message");
    if (w->covers < 0) {
        if (ctx->opts->strict)
            kdc_rule_note(ctx, b->f, &w->commit->loc, notes.v, notes.n,
                          "commit of the stored offsets after a loop over the batch that can stop "
                          "early; whether every message of the batch was stored (auto offset "
                          "store) cannot be determined");
        return;
    }
    kdc_rule_report(ctx, b->f, &w->commit->loc, notes.v, notes.n,
                    "commit of the whole batch's offsets after %s that can stop before the batch's "
                    "last message: the messages after the point where it stopped are committed "
                    "unprocessed and lost; commit only the processed prefix (the last message "
                    "processed, batch[i - 1])",
                    b->helper ? "a helper" : "a loop over the batch");
}

static void walk_from(batch_ctx_t *b, int from, unsigned succ, const kdc_loc_t *stop,
                      const kdc_loc_t *loop, const int *passes, size_t npasses,
                      expr_vec_t *seen) {
    walk_t w = {.b = b, .start = from, .succ = succ, .passes = passes, .npasses = npasses};
    if (b->bl)
        exit_flag(b->ctx->program, b->f->cfg, from, succ, &w.flag, &w.flag_val);
    kdc_search_t s = {walk_visit, walk_edge, &w, 1};
    kdc_cfg_search(b->f->cfg, from, 0, &s);
    report(b, &w, stop, loop, seen);
}

/* ---------- loops over a batch in f ---------- */

/* Does loop l hand elements of the batch to code (an effect, processing; not
 * librdkafka's message destroy, not logging)? */
static int processes_batch(kdc_rule_ctx_t *ctx, const kdc_func_t *f, int l, const char *batch) {
    const kdc_cfg_t *g = f->cfg;
    kdc_keyset_t one = {{batch}, 1};
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_expr_t *c = g->nodes[n].expr;
        if (g->nodes[n].kind != KDC_N_CALL || !kdc_cfg_in_loop(g, (int)n, l) ||
            kdc_api_is_librdkafka(c) || kdc_api_lookup(c) || !c->name ||
            kdc_is_logging_name(c->name) || !strcmp(c->name, "<delete>"))
            continue;
        for (unsigned i = 0; i < c->nkids; i++)
            if (kdc_keyset_mentioned(ctx->program, c->kids[i], &one))
                return 1;
        if (kdc_keyset_mentioned(ctx->program, c->recv, &one))
            return 1;
    }
    return 0;
}

static void check_loop(kdc_rule_ctx_t *ctx, const kdc_func_t *f, int l, expr_vec_t *seen) {
    kdc_batch_loop_t bl;
    if (!kdc_batch_loop_of(ctx->program, f, l, &bl))
        return;
    kdc_early_exit_t exits[16];
    size_t nexits = kdc_batch_loop_early_exits(ctx->program, f, &bl, exits, 16);
    if (!nexits)
        return;
    batch_ctx_t b = {.ctx = ctx, .f = f, .bl = &bl, .batch = bl.batch, .count = bl.count,
                     .size_bound = bl.size_bound, .progress = bl.guard};
    find_whole_vars(&b);
    const kdc_cfg_t *g = f->cfg;
    int passes[16];
    size_t npasses = 0;
    for (unsigned l2 = 0; l2 < g->nloops && npasses < 16; l2++) {
        kdc_batch_loop_t other;
        if ((int)l2 != l && !kdc_cfg_in_loop(g, g->loops[l].head, (int)l2) &&
            kdc_batch_loop_of(ctx->program, f, (int)l2, &other) && other.batch == bl.batch &&
            processes_batch(ctx, f, (int)l2, bl.batch))
            passes[npasses++] = g->loops[l2].head;
    }
    for (size_t i = 0; i < nexits; i++)
        walk_from(&b, exits[i].from, exits[i].succ, kdc_cfg_node_loc(f, exits[i].from),
                  &g->loops[l].stmt->loc, passes, npasses, seen);
}

/* ---------- helpers that return before the end of a batch they are given ---------- */

typedef struct exit_walk {
    const kdc_batch_loop_t *bl;
    int start;
    unsigned succ;
    int returns;
} exit_walk_t;

static int exit_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    exit_walk_t *w = arg;
    if (n == g->exit) {
        w->returns = 1;
        return -1;
    }
    if (n == g->loops[w->bl->loop].head ||
        (g->nodes[n].kind != KDC_N_NOP && kdc_cfg_in_loop(g, n, w->bl->loop)))
        return -1;
    return st;
}

static int exit_edge(void *arg, const kdc_cfg_t *g, int n, unsigned i, int st) {
    (void)g;
    (void)st;
    exit_walk_t *w = arg;
    return n != w->start || i == w->succ;
}

/* Does g loop over its parameter `param` (a batch) and return, on some path,
 * before the batch's last message (a return in the loop, or a break or
 * another early exit that leads to the function's exit)? *stop: where. */
static int stops_early_over(kdc_rule_ctx_t *ctx, const kdc_func_t *g, unsigned param,
                            const kdc_loc_t **stop) {
    const kdc_cfg_t *cfg = g->cfg;
    for (unsigned l = 0; cfg && l < cfg->nloops; l++) {
        kdc_batch_loop_t bl;
        if (!kdc_batch_loop_of(ctx->program, g, (int)l, &bl))
            continue;
        const kdc_expr_t *be = kdc_expr_strip(bl.batch_expr);
        if (!be || be->kind != KDC_E_REF || be->ref != KDC_REF_PARAM ||
            be->param_index != (int)param)
            continue;
        for (unsigned u = 0; u < cfg->n; u++)
            for (unsigned i = 0; kdc_cfg_in_loop(cfg, (int)u, (int)l) && i < cfg->nodes[u].nsucc;
                 i++)
                if (cfg->nodes[u].succ[i] == cfg->exit) {
                    *stop = kdc_cfg_node_loc(g, (int)u);
                    return 1;
                }
        kdc_early_exit_t exits[16];
        size_t n = kdc_batch_loop_early_exits(ctx->program, g, &bl, exits, 16);
        for (size_t i = 0; i < n; i++) {
            exit_walk_t w = {&bl, exits[i].from, exits[i].succ, 0};
            kdc_search_t s = {exit_visit, exit_edge, &w, 1};
            kdc_cfg_search(cfg, exits[i].from, 0, &s);
            if (w.returns) {
                *stop = kdc_cfg_node_loc(g, exits[i].from);
                return 1;
            }
        }
    }
    return 0;
}

static int collect_keys(const kdc_expr_t *e, void *arg) {
    batch_ctx_t *b = arg;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        kdc_keyset_add(&b->count, kdc_pts_lvalue_key(b->ctx->program, e));
    return 0;
}

static void check_helper_calls(kdc_rule_ctx_t *ctx, const kdc_func_t *f, expr_vec_t *seen) {
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (g->call_node[c] < 0 || kdc_api_lookup(call) || !call->usr || call->callee_system)
            continue;
        const kdc_func_t *callee = kdc_program_find_callee(ctx->program, call->usr, f->tu);
        if (!callee || callee == f || !callee->cfg)
            continue;
        for (unsigned k = 0; k < call->nkids; k++) {
            const kdc_expr_t *arg = kdc_expr_strip(call->kids[k]);
            const char *batch = arg && kdc_type_is_message(arg->type) &&
                                        (arg->kind == KDC_E_REF || arg->kind == KDC_E_MEMBER)
                                    ? kdc_pts_lvalue_key(ctx->program, arg)
                                    : NULL;
            const kdc_loc_t *stop = NULL;
            if (!batch || !stops_early_over(ctx, callee, k, &stop))
                continue;
            /* the count: what else the helper is given (n); batch.size() */
            batch_ctx_t b = {.ctx = ctx, .f = f, .batch = batch, .size_bound = 1, .helper = call};
            for (unsigned j = 0; j < call->nkids; j++)
                if (j != k)
                    kdc_expr_walk(call->kids[j], collect_keys, &b);
            kdc_outcome_init(&b.outcome, ctx->program, f, call);
            for (size_t i = 0; i < b.outcome.nvars; i++)
                kdc_keyset_add(&b.progress, b.outcome.vars[i].key);
            find_whole_vars(&b);
            int node = g->call_node[c];
            for (unsigned i = 0; i < g->nodes[node].nsucc; i++)
                walk_from(&b, node, i, stop, NULL, NULL, 0, seen);
            break;
        }
    }
}

static void check(kdc_rule_ctx_t *ctx) {
    expr_vec_t seen = {0};
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        const kdc_cfg_t *g = f->cfg;
        if (!g)
            continue;
        for (unsigned l = 0; l < g->nloops; l++)
            check_loop(ctx, f, (int)l, &seen);
        check_helper_calls(ctx, f, &seen);
    }
    free(seen.v);
}

const kdc_rule_t kdc_rule_partial_batch_commit = {
    .name = "partial-batch-commit",
    .summary = "whole batch committed after a loop over it that can stop early",
    .severity = KDC_SEV_WARNING,
    .confidence = "medium",
    .in_default = 1,
    .check = check,
};
