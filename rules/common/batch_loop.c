#include "batch_loop.h"
#include "consumer_common.h"
#include "pts.h"

#include <string.h>

void kdc_keyset_add(kdc_keyset_t *s, const char *key) {
    if (!key || kdc_keyset_has(s, key))
        return;
    if (s->n < KDC_KEYSET_MAX)
        s->v[s->n++] = key;
}

int kdc_keyset_has(const kdc_keyset_t *s, const char *key) {
    for (size_t i = 0; key && i < s->n; i++)
        if (s->v[i] == key)
            return 1;
    return 0;
}

typedef struct mention {
    kdc_program_t *p;
    const kdc_keyset_t *s;
} mention_t;

static int mention_visit(const kdc_expr_t *e, void *arg) {
    mention_t *m = arg;
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER)
        return 0;
    return kdc_keyset_has(m->s, kdc_pts_lvalue_key(m->p, e));
}

int kdc_keyset_mentioned(kdc_program_t *p, const kdc_expr_t *e, const kdc_keyset_t *s) {
    mention_t m = {p, s};
    return s->n && e && kdc_expr_walk(e, mention_visit, &m);
}

static const char *base_name(const char *name) {
    const char *b = name ? strrchr(name, ':') : NULL;
    return b ? b + 1 : name ? name : "";
}

/* An array of messages, or a pointer to its first element: rd_kafka_message_t *[64],
 * rd_kafka_message_t ** (the model gives no type to a[i] itself). */
static int is_message_array(const char *type) {
    return kdc_type_is_message(type) && (strchr(type, '[') || strstr(type, "**") ||
                                         strstr(type, "* *"));
}

int kdc_batch_elem(const kdc_expr_t *e, const kdc_expr_t **batch, const kdc_expr_t **index) {
    if (e->kind == KDC_E_INDEX && e->nkids == 2 && is_message_array(e->kids[0]->type) &&
        !kdc_type_is_message(e->kids[1]->type)) {
        *batch = e->kids[0];
        *index = e->kids[1];
        return 1;
    }
    if (e->kind != KDC_E_CALL || !e->is_method)
        return 0;
    const char *b = base_name(e->name);
    if (!strcmp(b, "operator[]") && e->nkids == 2 && kdc_type_is_message(e->kids[0]->type)) {
        *batch = e->kids[0];
        *index = e->kids[1];
        return 1;
    }
    if (!strcmp(b, "at") && e->recv && e->nkids == 1 && kdc_type_is_message(e->recv->type)) {
        *batch = e->recv;
        *index = e->kids[0];
        return 1;
    }
    return 0;
}

/* ---------- the loop's batch, index and bound ---------- */

typedef struct scan {
    kdc_program_t *p;
    kdc_batch_loop_t *bl;
    const kdc_expr_t *written[KDC_KEYSET_MAX]; /* batch[n++] = m: elements the loop fills */
    size_t nwritten;
} scan_t;

/* batch[i] read, with i written in the loop: the loop walks the batch (a
 * loop that only fills it, batch[n++] = m, does not). */
static int find_elem(const kdc_expr_t *e, void *arg) {
    scan_t *s = arg;
    const kdc_expr_t *batch, *index;
    if (!kdc_batch_elem(e, &batch, &index) || !kdc_keyset_mentioned(s->p, index, &s->bl->assigned))
        return 0;
    for (size_t i = 0; i < s->nwritten; i++)
        if (s->written[i] == e)
            return 0;
    const char *key = kdc_pts_lvalue_key(s->p, batch);
    if (!key || (s->bl->batch && s->bl->batch != key))
        return 0;
    s->bl->batch = key;
    s->bl->batch_expr = batch;
    for (size_t i = 0; i < s->bl->assigned.n; i++) {
        kdc_keyset_t one = {{s->bl->assigned.v[i]}, 1};
        if (kdc_keyset_mentioned(s->p, index, &one))
            kdc_keyset_add(&s->bl->index, s->bl->assigned.v[i]);
    }
    return 0;
}

/* The range of a range-for: a container or array of messages. */
typedef struct range {
    kdc_program_t *p;
    const kdc_expr_t *found;
} range_t;

static void find_range(const kdc_stmt_t *st, void *arg) {
    range_t *r = arg;
    const kdc_expr_t *e = st->kind == KDC_S_EXPR ? kdc_expr_strip(st->expr) : NULL;
    /* the frontend writes the range as `var = range[..]` (the loop variable
     * holds its elements) */
    if (e && e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        const kdc_expr_t *elem = kdc_expr_strip(e->kids[1]);
        if (elem && elem->kind == KDC_E_INDEX && elem->nkids == 2 && elem->kids[1] &&
            elem->kids[1]->kind == KDC_E_OTHER)
            e = kdc_expr_strip(elem->kids[0]);
    }
    if (!r->found && e && (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) &&
        kdc_type_is_message(e->type) && kdc_pts_lvalue_key(r->p, e))
        r->found = e;
}

typedef struct bound {
    scan_t *s;
    int size_call;
} bound_t;

/* Keys of the count side of a bound test (n, w->n: the field, not w), and
 * batch.size() calls. */
static void collect_count(bound_t *b, const kdc_expr_t *e) {
    kdc_batch_loop_t *bl = b->s->bl;
    if (!e)
        return;
    if (e->kind == KDC_E_CALL && e->is_method && e->recv && !strcmp(base_name(e->name), "size") &&
        kdc_pts_lvalue_key(b->s->p, e->recv) == bl->batch) {
        b->size_call = 1;
        return;
    }
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) {
        const char *k = kdc_pts_lvalue_key(b->s->p, e);
        if (k && !kdc_keyset_has(&bl->index, k) && k != bl->batch)
            kdc_keyset_add(&bl->count, k);
        if (k)
            return;
    }
    collect_count(b, e->recv);
    for (unsigned i = 0; i < e->nkids; i++)
        collect_count(b, e->kids[i]);
}

/* Flags and fields a condition of the loop reads (globals, struct fields). */
static int collect_flags(const kdc_expr_t *e, void *arg) {
    scan_t *s = arg;
    if ((e->kind == KDC_E_REF && e->ref == KDC_REF_GLOBAL) || e->kind == KDC_E_MEMBER)
        kdc_keyset_add(&s->bl->guard, kdc_pts_lvalue_key(s->p, e));
    return 0;
}

static int own_loop_cond(const kdc_cfg_t *g, unsigned n, int l) {
    return g->nodes[n].kind == KDC_N_COND && g->nodes[n].loop_cond && g->node_loop[n] == l;
}

int kdc_batch_loop_of(kdc_program_t *p, const kdc_func_t *f, int l, kdc_batch_loop_t *bl) {
    const kdc_cfg_t *g = f->cfg;
    *bl = (kdc_batch_loop_t){.loop = l};
    scan_t s = {.p = p, .bl = bl};
    for (unsigned n = 0; n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_ASSIGN && kdc_cfg_in_loop(g, (int)n, l)) {
            const kdc_expr_t *lhs = kdc_expr_strip(kdc_expr_assigned(g->nodes[n].expr));
            kdc_keyset_add(&bl->assigned, kdc_pts_lvalue_key(p, lhs));
            if (lhs && s.nwritten < KDC_KEYSET_MAX)
                s.written[s.nwritten++] = lhs;
        }
    const kdc_stmt_t *st = g->loops[l].stmt;
    if (st->kind == KDC_S_FOR && st->unknown_cond && st->init) {
        range_t r = {p, NULL};
        kdc_stmt_walk(st->init, find_range, &r);
        if (!r.found)
            return 0;
        bl->batch = kdc_pts_lvalue_key(p, r.found);
        bl->batch_expr = r.found;
        bl->size_bound = 1;
    } else {
        for (unsigned n = 0; n < g->n; n++)
            if (g->nodes[n].expr && kdc_cfg_in_loop(g, (int)n, l))
                kdc_expr_walk(g->nodes[n].expr, find_elem, &s);
        if (!bl->batch || !bl->index.n)
            return 0;
        int bounded = 0;
        for (unsigned n = 0; n < g->n; n++) {
            if (!own_loop_cond(g, n, l) || !kdc_keyset_mentioned(p, g->nodes[n].expr, &bl->index))
                continue;
            bound_t b = {&s, 0};
            collect_count(&b, g->nodes[n].expr);
            bl->size_bound |= b.size_call;
            bounded = 1;
        }
        if (!bounded || (!bl->count.n && !bl->size_bound))
            return 0;
    }
    for (size_t i = 0; i < bl->assigned.n; i++)
        kdc_keyset_add(&bl->guard, bl->assigned.v[i]);
    for (unsigned n = 0; n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_COND && kdc_cfg_in_loop(g, (int)n, l))
            kdc_expr_walk(g->nodes[n].expr, collect_flags, &s);
    /* the batch and its count say nothing about where the loop stopped */
    size_t kept = 0;
    for (size_t i = 0; i < bl->guard.n; i++)
        if (bl->guard.v[i] != bl->batch && !kdc_keyset_has(&bl->count, bl->guard.v[i]))
            bl->guard.v[kept++] = bl->guard.v[i];
    bl->guard.n = kept;
    return 1;
}

/* ---------- early exits ---------- */

static int is_bound_test(kdc_program_t *p, const kdc_cfg_t *g, unsigned n,
                         const kdc_batch_loop_t *bl) {
    return bl->index.n && kdc_keyset_mentioned(p, g->nodes[n].expr, &bl->index);
}

size_t kdc_batch_loop_early_exits(kdc_program_t *p, const kdc_func_t *f,
                                  const kdc_batch_loop_t *bl, kdc_early_exit_t *out, size_t max) {
    const kdc_cfg_t *g = f->cfg;
    const kdc_loop_t *lp = &g->loops[bl->loop];
    size_t n = 0;
    for (unsigned u = 0; u < g->n && n < max; u++) {
        if (!kdc_cfg_in_loop(g, (int)u, bl->loop))
            continue;
        const kdc_node_t *nd = &g->nodes[u];
        for (unsigned i = 0; i < nd->nsucc && n < max; i++) {
            int v = nd->succ[i];
            if (own_loop_cond(g, u, bl->loop)) {
                /* a condition of the loop besides the bound: `i < n && running` */
                if (is_bound_test(p, g, u, bl) || !kdc_cfg_leaves_loop(g, v, bl->loop))
                    continue;
                out[n++] = (kdc_early_exit_t){(int)u, i};
                continue;
            }
            if (kdc_cfg_in_loop(g, v, bl->loop) || v == lp->after || v == g->exit)
                continue; /* inside, the condition's way out, or a return */
            out[n++] = (kdc_early_exit_t){(int)u, i}; /* a break, or a goto out */
        }
    }
    return n;
}

const kdc_loc_t *kdc_cfg_node_loc(const kdc_func_t *f, int n) {
    const kdc_cfg_t *g = f->cfg;
    int cur = n;
    for (int steps = 0; steps < 16 && cur >= 0; steps++) {
        if (g->nodes[cur].expr)
            return &g->nodes[cur].expr->loc;
        int pred = -1;
        for (unsigned m = 0; m < g->n && pred < 0; m++)
            for (unsigned i = 0; i < g->nodes[m].nsucc; i++)
                if (g->nodes[m].succ[i] == cur) {
                    pred = (int)m;
                    break;
                }
        cur = pred;
    }
    return &f->loc;
}
