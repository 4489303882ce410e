/* CFG construction from the model, and the path search rules use. */
#include "cfg.h"
#include "util.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct tnode {
    kdc_node_kind_t kind;
    unsigned loop_cond;
    int loop; /* innermost loop around it, -1 none */
    const kdc_expr_t *expr;
    KDC_VEC(int) succ;
} tnode_t;

typedef struct label {
    const char *name;
    int node;
} label_t;

typedef struct bld {
    KDC_VEC(tnode_t) nodes;
    KDC_VEC(label_t) labels;
    KDC_VEC(int) indirect_gotos;
    int brk, cont, exit;
    int sw_dispatch, sw_has_default;
    KDC_VEC(kdc_loop_t) loops;
    int cur_loop; /* the loop being emitted, -1 none */
    int *call_node;
    kdc_noreturn_fn noreturn;
    void *arg;
} bld_t;

static int node(bld_t *b, kdc_node_kind_t kind, const kdc_expr_t *e) {
    tnode_t t = {0};
    t.kind = kind;
    t.expr = e;
    t.loop = b->cur_loop;
    KDC_VEC_PUSH(b->nodes, t);
    return (int)b->nodes.n - 1;
}

static void edge(bld_t *b, int from, int to) {
    if (from < 0 || to < 0)
        return;
    KDC_VEC_PUSH(b->nodes.v[from].succ, to);
}

static int join(bld_t *b, int x, int y) {
    if (x < 0)
        return y;
    if (y < 0 || x == y)
        return x;
    int j = node(b, KDC_N_NOP, NULL);
    edge(b, x, j);
    edge(b, y, j);
    return j;
}

static int label_node(bld_t *b, const char *name) {
    for (size_t i = 0; i < b->labels.n; i++)
        if (b->labels.v[i].name == name)
            return b->labels.v[i].node;
    label_t l = {name, node(b, KDC_N_NOP, NULL)};
    KDC_VEC_PUSH(b->labels, l);
    return l.node;
}

static int emit_expr(bld_t *b, const kdc_expr_t *e, int cur);

static void emit_cond(bld_t *b, const kdc_expr_t *e, int cur, int *t, int *f) {
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1 && !e->has_ival) {
        emit_cond(b, e->kids[0], cur, f, t);
        return;
    }
    if (e->kind == KDC_E_BINARY && e->nkids == 2 && !e->has_ival) {
        int lt, lf, rt, rf;
        switch (e->op) {
        case KDC_OP_LAND:
            emit_cond(b, e->kids[0], cur, &lt, &lf);
            emit_cond(b, e->kids[1], lt, &rt, &rf);
            *t = rt;
            *f = join(b, lf, rf);
            return;
        case KDC_OP_LOR:
            emit_cond(b, e->kids[0], cur, &lt, &lf);
            emit_cond(b, e->kids[1], lf, &rt, &rf);
            *t = join(b, lt, rt);
            *f = rf;
            return;
        case KDC_OP_COMMA:
            emit_cond(b, e->kids[1], emit_expr(b, e->kids[0], cur), t, f);
            return;
        default:
            break;
        }
    }
    if (e->has_ival) { /* constant condition: only one way out */
        if (e->ival) {
            *t = cur;
            *f = -1;
        } else {
            *t = -1;
            *f = cur;
        }
        return;
    }
    cur = emit_expr(b, e, cur);
    int c = node(b, KDC_N_COND, e);
    edge(b, cur, c);
    int tn = node(b, KDC_N_NOP, NULL), fn = node(b, KDC_N_NOP, NULL);
    edge(b, c, tn); /* succ[0]: true */
    edge(b, c, fn); /* succ[1]: false */
    *t = tn;
    *f = fn;
}

static int emit_expr(bld_t *b, const kdc_expr_t *e, int cur) {
    if (!e)
        return cur;
    switch (e->kind) {
    case KDC_E_CALL: {
        if (e->callee_expr)
            cur = emit_expr(b, e->callee_expr, cur);
        if (e->recv)
            cur = emit_expr(b, e->recv, cur);
        for (unsigned i = 0; i < e->nkids; i++)
            cur = emit_expr(b, e->kids[i], cur);
        int n = node(b, KDC_N_CALL, e);
        edge(b, cur, n);
        if (e->call_id >= 0)
            b->call_node[e->call_id] = n;
        if (b->noreturn && b->noreturn(e, b->arg))
            return -1;
        return n;
    }
    case KDC_E_BINARY:
        if (e->nkids != 2)
            break;
        if (e->op == KDC_OP_LAND || e->op == KDC_OP_LOR) {
            int t, f;
            emit_cond(b, e, cur, &t, &f);
            return join(b, t, f);
        }
        if (e->op == KDC_OP_COMMA)
            return emit_expr(b, e->kids[1], emit_expr(b, e->kids[0], cur));
        if (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) {
            cur = emit_expr(b, e->kids[1], cur);
            cur = emit_expr(b, e->kids[0], cur);
            int n = node(b, KDC_N_ASSIGN, e);
            edge(b, cur, n);
            return n;
        }
        break;
    case KDC_E_COND: {
        int t, f;
        emit_cond(b, e->kids[0], cur, &t, &f);
        int a = t >= 0 ? emit_expr(b, e->kids[1], t) : -1;
        int c = f >= 0 ? emit_expr(b, e->kids[2], f) : -1;
        return join(b, a, c);
    }
    case KDC_E_UNARY:
        if (e->nkids == 1 && (e->op == KDC_OP_PREINC || e->op == KDC_OP_PREDEC ||
                              e->op == KDC_OP_POSTINC || e->op == KDC_OP_POSTDEC)) {
            cur = emit_expr(b, e->kids[0], cur);
            int n = node(b, KDC_N_ASSIGN, e);
            edge(b, cur, n);
            return n;
        }
        break;
    default:
        break;
    }
    for (unsigned i = 0; i < e->nkids; i++)
        cur = emit_expr(b, e->kids[i], cur);
    return cur;
}

static void mark_loop_conds(bld_t *b, size_t from) {
    for (size_t i = from; i < b->nodes.n; i++)
        if (b->nodes.v[i].kind == KDC_N_COND)
            b->nodes.v[i].loop_cond = 1;
}

static int emit_stmt(bld_t *b, const kdc_stmt_t *s, int cur);

/* Starts loop statement s: its `after` and `brk` nodes belong to the
 * enclosing loop, every node made until loop_end (from `head` on) to s. */
static int loop_begin(bld_t *b, const kdc_stmt_t *s) {
    kdc_loop_t l = {s, -1, -1, -1, b->cur_loop};
    l.after = node(b, KDC_N_NOP, NULL);
    l.brk = node(b, KDC_N_NOP, NULL);
    edge(b, l.brk, l.after);
    KDC_VEC_PUSH(b->loops, l);
    b->cur_loop = (int)b->loops.n - 1;
    b->loops.v[b->cur_loop].head = node(b, KDC_N_NOP, NULL);
    return b->cur_loop;
}

static void loop_end(bld_t *b, int l) {
    b->cur_loop = b->loops.v[l].parent;
}

static int emit_loop_body(bld_t *b, const kdc_stmt_t *body, int start, int brk, int cont) {
    int ob = b->brk, oc = b->cont;
    b->brk = brk;
    b->cont = cont;
    int end = emit_stmt(b, body, start);
    b->brk = ob;
    b->cont = oc;
    return end;
}

static int emit_stmt(bld_t *b, const kdc_stmt_t *s, int cur) {
    if (!s)
        return cur;
    switch (s->kind) {
    case KDC_S_COMPOUND:
        for (unsigned i = 0; i < s->nkids; i++)
            cur = emit_stmt(b, s->kids[i], cur);
        return cur;
    case KDC_S_EXPR:
        return emit_expr(b, s->expr, cur);
    case KDC_S_IF: {
        cur = emit_stmt(b, s->init, cur);
        int t, f;
        if (s->expr)
            emit_cond(b, s->expr, cur, &t, &f);
        else
            t = f = cur;
        int a = emit_stmt(b, s->body, t);
        int c = s->els ? emit_stmt(b, s->els, f) : f;
        return join(b, a, c);
    }
    case KDC_S_WHILE: {
        /* `while (T *m = pop())`: the condition variable is set again on every pass */
        int l = loop_begin(b, s);
        int head = b->loops.v[l].head, after = b->loops.v[l].after, brk = b->loops.v[l].brk;
        edge(b, cur, head);
        int init = emit_stmt(b, s->init, head);
        int t = init, f = -1;
        size_t mark = b->nodes.n;
        if (s->expr)
            emit_cond(b, s->expr, init, &t, &f);
        mark_loop_conds(b, mark);
        edge(b, f, after);
        edge(b, emit_loop_body(b, s->body, t, brk, head), head);
        loop_end(b, l);
        return after;
    }
    case KDC_S_DO: {
        int l = loop_begin(b, s);
        int head = b->loops.v[l].head, after = b->loops.v[l].after, brk = b->loops.v[l].brk;
        int cond = node(b, KDC_N_NOP, NULL);
        edge(b, cur, head);
        edge(b, emit_loop_body(b, s->body, head, brk, cond), cond);
        int t = cond, f = -1;
        size_t mark = b->nodes.n;
        if (s->expr)
            emit_cond(b, s->expr, cond, &t, &f);
        mark_loop_conds(b, mark);
        edge(b, t, head);
        edge(b, f, after);
        loop_end(b, l);
        return after;
    }
    case KDC_S_FOR: {
        cur = emit_stmt(b, s->init, cur);
        int l = loop_begin(b, s);
        int head = b->loops.v[l].head, after = b->loops.v[l].after, brk = b->loops.v[l].brk;
        int inc = node(b, KDC_N_NOP, NULL);
        edge(b, cur, head);
        int t = head, f = -1;
        size_t mark = b->nodes.n;
        if (s->expr)
            emit_cond(b, s->expr, head, &t, &f);
        else if (s->unknown_cond) /* range-for, or a header we could not read */
            f = head;
        mark_loop_conds(b, mark);
        edge(b, f, after);
        edge(b, emit_loop_body(b, s->body, t, brk, inc), inc);
        edge(b, emit_expr(b, s->inc, inc), head);
        loop_end(b, l);
        return after;
    }
    case KDC_S_SWITCH: {
        cur = emit_stmt(b, s->init, cur);
        cur = emit_expr(b, s->expr, cur);
        int dispatch = node(b, KDC_N_NOP, NULL), after = node(b, KDC_N_NOP, NULL);
        edge(b, cur, dispatch);
        int od = b->sw_dispatch, oh = b->sw_has_default, ob = b->brk;
        b->sw_dispatch = dispatch;
        b->sw_has_default = 0;
        b->brk = after;
        edge(b, emit_stmt(b, s->body, -1), after);
        if (!b->sw_has_default)
            edge(b, dispatch, after);
        b->sw_dispatch = od;
        b->sw_has_default = oh;
        b->brk = ob;
        return after;
    }
    case KDC_S_CASE:
    case KDC_S_DEFAULT: {
        int n = node(b, KDC_N_NOP, NULL);
        edge(b, cur, n);
        edge(b, b->sw_dispatch, n);
        if (s->kind == KDC_S_DEFAULT)
            b->sw_has_default = 1;
        return emit_stmt(b, s->body, n);
    }
    case KDC_S_BREAK:
        edge(b, cur, b->brk);
        return -1;
    case KDC_S_CONTINUE:
        edge(b, cur, b->cont);
        return -1;
    case KDC_S_RETURN: {
        int v = emit_expr(b, s->expr, cur);
        if (s->expr && v >= 0) { /* what is returned: a framework's acknowledgement (facts.h) */
            int n = node(b, KDC_N_RETURN, s->expr);
            edge(b, v, n);
            v = n;
        }
        edge(b, v, b->exit);
        return -1;
    }
    case KDC_S_GOTO:
        if (s->label)
            edge(b, cur, label_node(b, s->label));
        else if (cur >= 0)
            KDC_VEC_PUSH(b->indirect_gotos, cur);
        return -1;
    case KDC_S_LABEL: {
        int n = label_node(b, s->label);
        b->nodes.v[n].loop = b->cur_loop; /* made where a goto named it first */
        edge(b, cur, n);
        return emit_stmt(b, s->body, n);
    }
    case KDC_S_TRY: {
        int entry = node(b, KDC_N_NOP, NULL);
        edge(b, cur, entry);
        int end = emit_stmt(b, s->body, entry);
        for (unsigned i = 0; i < s->nkids; i++)
            end = join(b, end, emit_stmt(b, s->kids[i], entry));
        return end;
    }
    case KDC_S_NULL:
        return cur;
    }
    return cur;
}

static void index_writes(kdc_program_t *p, const kdc_func_t *f, kdc_cfg_t *g);
static void index_stable_tests(const kdc_func_t *f, kdc_cfg_t *g);

kdc_cfg_t *kdc_cfg_build(kdc_program_t *p, kdc_func_t *f, kdc_noreturn_fn noreturn, void *arg) {
    bld_t b = {0};
    b.brk = b.cont = b.sw_dispatch = b.cur_loop = -1;
    b.noreturn = noreturn;
    b.arg = arg;
    b.call_node = kdc_alloc(p, (f->ncalls + 1) * sizeof *b.call_node);
    for (unsigned i = 0; i < f->ncalls; i++)
        b.call_node[i] = -1;
    int entry = node(&b, KDC_N_ENTRY, NULL);
    b.exit = node(&b, KDC_N_EXIT, NULL);
    edge(&b, emit_stmt(&b, f->body, entry), b.exit);
    for (size_t i = 0; i < b.indirect_gotos.n; i++)
        for (size_t j = 0; j < b.labels.n; j++)
            edge(&b, b.indirect_gotos.v[i], b.labels.v[j].node);

    kdc_cfg_t *g = kdc_alloc(p, sizeof *g);
    g->n = (unsigned)b.nodes.n;
    g->nodes = kdc_alloc(p, g->n * sizeof *g->nodes);
    g->entry = entry;
    g->exit = b.exit;
    g->call_node = b.call_node;
    g->nloops = (unsigned)b.loops.n;
    g->loops = g->nloops ? kdc_alloc(p, g->nloops * sizeof *g->loops) : NULL;
    if (g->nloops)
        memcpy(g->loops, b.loops.v, g->nloops * sizeof *g->loops);
    g->node_loop = kdc_alloc(p, (g->n ? g->n : 1) * sizeof *g->node_loop);
    /* every node's successors in one array (most nodes have one or two) */
    size_t nedges = 0;
    for (unsigned i = 0; i < g->n; i++)
        nedges += b.nodes.v[i].succ.n;
    int *succ = nedges ? kdc_alloc(p, nedges * sizeof *succ) : NULL;
    for (unsigned i = 0; i < g->n; i++) {
        tnode_t *t = &b.nodes.v[i];
        kdc_node_t *n = &g->nodes[i];
        n->kind = t->kind;
        n->loop_cond = t->loop_cond;
        g->node_loop[i] = t->loop;
        n->expr = t->expr;
        n->nsucc = (unsigned)t->succ.n;
        if (n->nsucc) {
            memcpy(succ, t->succ.v, n->nsucc * sizeof *succ);
            n->succ = succ;
            succ += n->nsucc;
        }
        free(t->succ.v);
    }
    free(b.nodes.v);
    free(b.loops.v);
    free(b.labels.v);
    free(b.indirect_gotos.v);
    index_writes(p, f, g);
    index_stable_tests(f, g);
    f->cfg = g;
    return g;
}

void kdc_cfg_search(const kdc_cfg_t *g, int start, int start_state, const kdc_search_t *s) {
    kdc_cfg_search_edges(g, start, start_state, s, NULL);
}

void kdc_cfg_search_edges(const kdc_cfg_t *g, int start, int start_state, const kdc_search_t *s,
                          kdc_edge_state_fn edge_state) {
    int ns = s->nstates > 0 ? s->nstates : 1;
    size_t total = (size_t)g->n * (size_t)ns;
    unsigned char *seen = calloc(total, 1);
    int *queue = malloc(total * 2 * sizeof *queue);
    if (!seen || !queue)
        kdc_oom();
    size_t head = 0, tail = 0;
#define KDC_PUSH_SUCCS(n, st)                                                                   \
    for (unsigned i_ = 0; i_ < g->nodes[n].nsucc; i_++) {                                      \
        int m_ = g->nodes[n].succ[i_], st_ = (st);                                             \
        if (edge_state) {                                                                      \
            if ((st_ = edge_state(s->ctx, g, n, i_, st_)) < 0)                                 \
                continue;                                                                      \
            if (st_ >= ns)                                                                     \
                st_ = ns - 1;                                                                  \
        } else if (s->edge && !s->edge(s->ctx, g, n, i_, st_)) {                               \
            continue;                                                                          \
        }                                                                                      \
        size_t k_ = (size_t)m_ * (size_t)ns + (size_t)st_;                                     \
        if (seen[k_])                                                                          \
            continue;                                                                          \
        seen[k_] = 1;                                                                          \
        queue[tail++] = m_;                                                                    \
        queue[tail++] = st_;                                                                   \
    }
    KDC_PUSH_SUCCS(start, start_state)
    while (head < tail) {
        int n = queue[head++], st = queue[head++];
        int next = s->visit ? s->visit(s->ctx, g, n, st) : st;
        if (next < 0)
            continue;
        if (next >= ns)
            next = ns - 1;
        KDC_PUSH_SUCCS(n, next)
    }
#undef KDC_PUSH_SUCCS
    free(seen);
    free(queue);
}

int kdc_cfg_node_of_call(const kdc_cfg_t *g, const kdc_expr_t *call) {
    if (!g || !call || call->kind != KDC_E_CALL || call->call_id < 0)
        return -1;
    int n = g->call_node[call->call_id];
    return n >= 0 && (unsigned)n < g->n && g->nodes[n].expr == call ? n : -1;
}

typedef struct avoid_walk {
    int to, found;
    int (*avoid)(void *arg, int node);
    void *arg;
} avoid_walk_t;

static int avoid_visit(void *ctx, const kdc_cfg_t *g, int n, int st) {
    (void)g;
    avoid_walk_t *w = ctx;
    if (w->found)
        return -1;
    if (n == w->to) {
        w->found = 1;
        return -1;
    }
    return w->avoid && w->avoid(w->arg, n) ? -1 : st;
}

int kdc_cfg_reaches_avoiding(const kdc_cfg_t *g, int from, int to,
                             int (*avoid)(void *arg, int node), void *arg) {
    if (!g || from < 0 || to < 0)
        return 0;
    avoid_walk_t w = {to, 0, avoid, arg};
    kdc_search_t s = {avoid_visit, NULL, &w, 1};
    kdc_cfg_search(g, from, 0, &s);
    return w.found;
}

typedef struct var_scan {
    const char *usr;
    int other; /* &var, var += .., ++var */
} var_scan_t;

static int is_var(const kdc_expr_t *e, const char *usr) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->usr == usr;
}

/* The variable an lvalue writes part of: v in v[i], v.f, v[i].f. */
static const kdc_expr_t *part_of(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e || (e->kind != KDC_E_INDEX && !(e->kind == KDC_E_MEMBER && !e->arrow)))
        return NULL;
    while (e && (e->kind == KDC_E_INDEX || (e->kind == KDC_E_MEMBER && !e->arrow)) && e->nkids)
        e = kdc_expr_strip(e->kids[0]);
    return e;
}

static int scan_var_writes(const kdc_expr_t *e, void *arg) {
    var_scan_t *v = arg;
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) &&
        e->nkids == 2 && is_var(part_of(e->kids[0]), v->usr))
        v->other = 1; /* an element or a field of it: out[5] = producer(c) */
    if (e->kind == KDC_E_CALL && e->str && (strstr(e->str, "*&") || strstr(e->str, "* &")))
        for (unsigned i = 0; i < e->nkids; i++)
            if (is_var(e->kids[i], v->usr))
                v->other = 1; /* given to a C++ reference-to-pointer parameter: it may set it */
    if (e->kind == KDC_E_UNARY && e->nkids == 1 && is_var(e->kids[0], v->usr) &&
        e->op != KDC_OP_DEREF && e->op != KDC_OP_NOT && e->op != KDC_OP_NEG &&
        e->op != KDC_OP_PLUS && e->op != KDC_OP_BITNOT)
        v->other = 1; /* &var, ++var, var-- */
    else if (e->kind == KDC_E_BINARY && e->op == KDC_OP_COMPOUND_ASSIGN && e->nkids == 2 &&
             is_var(e->kids[0], v->usr))
        v->other = 1;
    return v->other;
}

/* The variables scan_var_writes would find written, all in one walk of f. */
typedef KDC_VEC(const char *) usr_vec_t;

static void add_written(usr_vec_t *v, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_REF && e->usr)
        KDC_VEC_PUSH(*v, e->usr);
}

static int collect_writes(const kdc_expr_t *e, void *arg) {
    usr_vec_t *v = arg;
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) &&
        e->nkids == 2)
        add_written(v, part_of(e->kids[0]));
    if (e->kind == KDC_E_CALL && e->str && (strstr(e->str, "*&") || strstr(e->str, "* &")))
        for (unsigned i = 0; i < e->nkids; i++)
            add_written(v, e->kids[i]);
    if (e->kind == KDC_E_UNARY && e->nkids == 1 && e->op != KDC_OP_DEREF && e->op != KDC_OP_NOT &&
        e->op != KDC_OP_NEG && e->op != KDC_OP_PLUS && e->op != KDC_OP_BITNOT)
        add_written(v, e->kids[0]);
    else if (e->kind == KDC_E_BINARY && e->op == KDC_OP_COMPOUND_ASSIGN && e->nkids == 2)
        add_written(v, e->kids[0]);
    return 0;
}

static int ptr_cmp(const void *a, const void *b) {
    uintptr_t x = (uintptr_t) * (const char *const *)a, y = (uintptr_t) * (const char *const *)b;
    return x < y ? -1 : x > y;
}

static void index_writes(kdc_program_t *p, const kdc_func_t *f, kdc_cfg_t *g) {
    usr_vec_t v = {0};
    kdc_func_walk_exprs(f, collect_writes, &v);
    if (v.n > 1)
        qsort(v.v, v.n, sizeof *v.v, ptr_cmp);
    size_t n = 0;
    for (size_t i = 0; i < v.n; i++)
        if (!n || v.v[i] != v.v[n - 1])
            v.v[n++] = v.v[i];
    g->written = n ? kdc_alloc(p, n * sizeof *g->written) : NULL;
    if (n)
        memcpy(g->written, v.v, n * sizeof *g->written);
    g->nwritten = (unsigned)n;
    free(v.v);
}

/* Is usr written in f other than by a plain assignment (scan_var_writes)? */
static int written_otherwise(const kdc_func_t *f, const char *usr) {
    const kdc_cfg_t *g = f->cfg;
    if (!g) {
        var_scan_t v = {usr, 0};
        kdc_func_walk_exprs(f, scan_var_writes, &v);
        return v.other;
    }
    return g->nwritten && bsearch(&usr, g->written, g->nwritten, sizeof *g->written, ptr_cmp);
}

static int is_assignment_of(const kdc_node_t *nd, const char *usr) {
    const kdc_expr_t *e = nd->expr;
    return nd->kind == KDC_N_ASSIGN && e && e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN &&
           e->nkids == 2 && is_var(e->kids[0], usr);
}

typedef struct other_def {
    const kdc_cfg_t *g;
    const char *usr;
} other_def_t;

static int avoid_assignment(void *arg, int n) {
    other_def_t *o = arg;
    return is_assignment_of(&o->g->nodes[n], o->usr);
}

/* ---------- correlated conditions ---------- */

/* The `if (c)` conditions (and branch: 1 then) on the statement path to the
 * statement holding expression e. */
typedef struct guard_path {
    const kdc_expr_t *e;
    const kdc_expr_t *cond[16];
    int branch[16], n, found;
    const kdc_expr_t *out_cond[16];
    int out_branch[16], nout;
} guard_path_t;

static int is_expr(const kdc_expr_t *x, void *arg) { return x == arg; }

static void guard_walk(guard_path_t *g, const kdc_stmt_t *s) {
    if (!s || g->found)
        return;
    if (kdc_expr_walk(s->expr, is_expr, (void *)g->e) || kdc_expr_walk(s->inc, is_expr, (void *)g->e)) {
        g->found = 1;
        g->nout = g->n;
        for (int i = 0; i < g->n; i++) {
            g->out_cond[i] = g->cond[i];
            g->out_branch[i] = g->branch[i];
        }
        return;
    }
    guard_walk(g, s->init);
    if (s->kind == KDC_S_IF && s->expr && g->n < 16) {
        g->cond[g->n] = s->expr;
        g->branch[g->n++] = 1;
        guard_walk(g, s->body);
        g->branch[g->n - 1] = 0;
        guard_walk(g, s->els);
        g->n--;
    } else {
        guard_walk(g, s->body);
        guard_walk(g, s->els);
    }
    for (unsigned i = 0; i < s->nkids && !g->found; i++)
        guard_walk(g, s->kids[i]);
}

/* The variable a condition tests for null or zero (`v`, `!v`, `v == NULL`,
 * `v != NULL`); *true_nonnull: the condition is true for a non-null v. */
static const char *tested_var(const kdc_expr_t *c, int *true_nonnull) {
    c = kdc_expr_strip(c);
    *true_nonnull = 1;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        *true_nonnull = !*true_nonnull;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (c && c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2) {
        const kdc_expr_t *v = kdc_expr_is_null(c->kids[1]) ? c->kids[0]
                              : kdc_expr_is_null(c->kids[0]) ? c->kids[1]
                                                             : NULL;
        if (c->op == KDC_OP_EQ)
            *true_nonnull = !*true_nonnull;
        c = kdc_expr_strip(v);
    }
    return c && c->kind == KDC_E_REF && c->usr && c->ref == KDC_REF_PARAM ? c->usr : NULL;
}

/* A variable tested for null that f writes nowhere (but its initialisation)? */
static int stable_var(const kdc_func_t *f, const kdc_cfg_t *g, const char *va) {
    if (written_otherwise(f, va))
        return 0;
    for (unsigned n = 0; n < g->n; n++)
        if (is_assignment_of(&g->nodes[n], va))
            return 0;
    return 1;
}

typedef struct stable_scan {
    const kdc_func_t *f;
    const kdc_cfg_t *g;
    int found;
} stable_scan_t;

static void find_stable_test(const kdc_stmt_t *s, void *arg) {
    stable_scan_t *ss = arg;
    int nonnull;
    const char *va =
        !ss->found && s->kind == KDC_S_IF && s->expr ? tested_var(s->expr, &nonnull) : NULL;
    if (va && stable_var(ss->f, ss->g, va))
        ss->found = 1;
}

static void index_stable_tests(const kdc_func_t *f, kdc_cfg_t *g) {
    stable_scan_t ss = {f, g, 0};
    kdc_stmt_walk(f->body, find_stable_test, &ss);
    g->stable_tests = ss.found != 0;
}

/* Are a and b (expressions of f) under contradicting conditions on a
 * parameter f never changes (`if (!rk) x = create(); else x = rk; .. if (!rk)
 * destroy(x)`): no path runs both? */
static int contradicting_guards(const kdc_func_t *f, const kdc_expr_t *a, const kdc_expr_t *b) {
    if (f->cfg && !((const kdc_cfg_t *)f->cfg)->stable_tests)
        return 0; /* no if of f could be one of the two */
    guard_path_t ga = {.e = a}, gb = {.e = b};
    guard_walk(&ga, f->body);
    guard_walk(&gb, f->body);
    for (int i = 0; i < ga.nout; i++) {
        int pa, pb;
        const char *va = tested_var(ga.out_cond[i], &pa);
        if (!va)
            continue;
        for (int k = 0; k < gb.nout; k++) {
            const char *vb = tested_var(gb.out_cond[k], &pb);
            if (vb != va || ga.out_cond[i] == gb.out_cond[k])
                continue;
            var_scan_t v = {va, written_otherwise(f, va)};
            for (unsigned n = 0; !v.other && f->cfg && n < ((const kdc_cfg_t *)f->cfg)->n; n++)
                v.other = is_assignment_of(&((const kdc_cfg_t *)f->cfg)->nodes[n], va);
            /* a then-branch of a test true for non-null v, and an else ... */
            int nonnull_a = (ga.out_branch[i] != 0) == (pa != 0);
            int nonnull_b = (gb.out_branch[k] != 0) == (pb != 0);
            if (!v.other && nonnull_a != nonnull_b)
                return 1;
        }
    }
    return 0;
}

int kdc_cfg_in_loop(const kdc_cfg_t *g, int n, int l) {
    if (n < 0 || (unsigned)n >= g->n)
        return 0;
    for (int k = g->node_loop[n]; k >= 0; k = g->loops[k].parent)
        if (k == l)
            return 1;
    return 0;
}

int kdc_cfg_leaves_loop(const kdc_cfg_t *g, int n, int l) {
    int stack[16], seen[16], ns = 0, nseen = 0;
    stack[ns++] = n;
    while (ns) {
        int m = stack[--ns];
        if (!kdc_cfg_in_loop(g, m, l))
            return 1;
        if (g->nodes[m].kind != KDC_N_NOP || m == g->loops[l].head)
            continue;
        int dup = 0;
        for (int k = 0; k < nseen; k++)
            dup |= seen[k] == m;
        if (dup || nseen == 16)
            continue;
        seen[nseen++] = m;
        for (unsigned i = 0; i < g->nodes[m].nsucc && ns < 16; i++)
            stack[ns++] = g->nodes[m].succ[i];
    }
    return 0;
}

int kdc_cfg_reaching_assignments(const kdc_func_t *f, const char *usr, int at,
                                 const kdc_expr_t **out, int max) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || !usr || at < 0)
        return -1;
    if (written_otherwise(f, usr))
        return -1;
    int n = 0;
    other_def_t o = {g, usr};
    for (unsigned d = 0; d < g->n; d++) {
        if (!is_assignment_of(&g->nodes[d], usr) || !kdc_cfg_reaches_avoiding(g, (int)d, at, avoid_assignment, &o))
            continue;
        if (g->nodes[at].expr && contradicting_guards(f, g->nodes[d].expr, g->nodes[at].expr))
            continue; /* the assignment and the use are on paths that exclude each other */
        if (n == max)
            return -1;
        out[n++] = g->nodes[d].expr->kids[1];
    }
    return n;
}

static int reach_visit(void *ctx, const kdc_cfg_t *g, int n, int st) {
    if (n == g->exit)
        *(int *)ctx = 1;
    return st;
}

int kdc_cfg_exit_reachable(const kdc_cfg_t *g) {
    int found = 0;
    kdc_search_t s = {reach_visit, NULL, &found, 1};
    kdc_cfg_search(g, g->entry, 0, &s);
    return found;
}

/* A depth-first walk of at most 64 nodes, for the two bounded searches
 * below: nodes pushed on a stack of 64, each visited once. */
typedef struct walk64 {
    int stack[64], seen[64], nstack, nseen;
} walk64_t;

/* The next node not visited yet; -1 when the stack is empty, -2 when a 65th
 * node would be visited (the search gives up). */
static int walk64_next(walk64_t *w) {
    while (w->nstack) {
        int m = w->stack[--w->nstack];
        int dup = 0;
        for (int k = 0; k < w->nseen; k++)
            dup |= w->seen[k] == m;
        if (dup)
            continue;
        if (w->nseen == 64)
            return -2;
        w->seen[w->nseen++] = m;
        return m;
    }
    return -1;
}

int kdc_cfg_leads_to(const kdc_cfg_t *g, int from, const kdc_expr_t *target) {
    walk64_t w = {.nstack = 1, .stack = {from}};
    int m;
    while ((m = walk64_next(&w)) >= 0) {
        const kdc_node_t *nd = &g->nodes[m];
        if (target ? nd->kind == KDC_N_CALL && nd->expr == target : m == g->exit)
            return 1;
        for (unsigned i = 0; i < nd->nsucc && w.nstack < 64; i++)
            w.stack[w.nstack++] = nd->succ[i];
    }
    return 0;
}

int kdc_cfg_chooses_barrier(const kdc_cfg_t *g, int n, const kdc_expr_t *target,
                            int (*is_barrier)(void *arg, const kdc_expr_t *call), void *arg) {
    walk64_t w = {.nstack = 0};
    int barrier = 0, m;
    for (unsigned i = 0; i < g->nodes[n].nsucc && w.nstack < 64; i++)
        w.stack[w.nstack++] = g->nodes[n].succ[i];
    while ((m = walk64_next(&w)) >= 0) {
        const kdc_node_t *nd = &g->nodes[m];
        if (m == g->exit) {
            if (target)
                return 0; /* returns without reaching the target */
            continue;
        }
        if (nd->kind == KDC_N_CALL) {
            if (is_barrier(arg, nd->expr)) {
                if (!kdc_cfg_leads_to(g, m, target))
                    return 0; /* a barrier before another target or return */
                barrier = 1;
            } else if (nd->expr != target)
                return 0;
            continue;
        }
        if (nd->kind == KDC_N_COND && nd->loop_cond)
            return 0; /* back into (or out of) a loop: not a choice before the target */
        for (unsigned i = 0; i < nd->nsucc; i++) {
            if (w.nstack == 64)
                return 0;
            w.stack[w.nstack++] = nd->succ[i];
        }
    }
    return m == -2 ? 0 : barrier;
}

