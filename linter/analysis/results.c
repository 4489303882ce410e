#define _GNU_SOURCE /* strcasestr */
#include "results.h"
#include "pts.h"

#include <string.h>

/* ---------- use ---------- */

typedef struct use_ctx {
    const kdc_expr_t *call;
    int discarded;
} use_ctx_t;

static void find_discard(const kdc_stmt_t *s, void *arg) {
    use_ctx_t *u = arg;
    if (s->kind == KDC_S_EXPR && kdc_expr_strip(s->expr) == u->call)
        u->discarded = 1;
    if (s->kind == KDC_S_FOR && s->inc && kdc_expr_strip(s->inc) == u->call)
        u->discarded = 1;
}

typedef struct store_ctx {
    kdc_program_t *p;
    const kdc_expr_t *call;
    const char *key;        /* variable the call is stored in */
    const kdc_expr_t *lhs;  /* its lvalue in that assignment */
    int reads;
} store_ctx_t;

static int find_store(const kdc_expr_t *e, void *arg) {
    store_ctx_t *s = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        kdc_expr_strip(e->kids[1]) == s->call) {
        s->key = kdc_pts_lvalue_key(s->p, e->kids[0]);
        s->lhs = e->kids[0];
        return 1;
    }
    return 0;
}

/* Assignment left-hand sides are writes, not reads. */
static int count_reads(const kdc_expr_t *e, void *arg) {
    store_ctx_t *s = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        kdc_expr_walk(e->kids[1], count_reads, arg);
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind != KDC_E_REF) /* a->f = x reads a */
            for (unsigned i = 0; i < l->nkids; i++)
                kdc_expr_walk(l->kids[i], count_reads, arg);
        return 1; /* handled: do not descend again */
    }
    if ((e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) && e != s->lhs &&
        kdc_pts_lvalue_key(s->p, e) == s->key)
        s->reads++;
    return 0;
}

static void reads_in_stmt(const kdc_stmt_t *st, void *arg) {
    store_ctx_t *s = arg;
    const kdc_expr_t *es[2] = {st->expr, st->inc};
    for (int i = 0; i < 2; i++) {
        if (!es[i])
            continue;
        /* walk manually so that an assignment does not end the walk */
        const kdc_expr_t *stack[256];
        int n = 0;
        stack[n++] = es[i];
        while (n) {
            const kdc_expr_t *e = stack[--n];
            if (count_reads(e, s))
                continue;
            if (e->recv && n < 256)
                stack[n++] = e->recv;
            if (e->callee_expr && n < 256)
                stack[n++] = e->callee_expr;
            for (unsigned k = 0; k < e->nkids && n < 256; k++)
                stack[n++] = e->kids[k];
        }
    }
}

kdc_use_t kdc_result_use(kdc_program_t *p, const kdc_func_t *f, const kdc_expr_t *call) {
    use_ctx_t u = {call, 0};
    kdc_stmt_walk(f->body, find_discard, &u);
    if (u.discarded)
        return KDC_USE_DISCARDED;
    store_ctx_t s = {p, call, NULL, NULL, 0};
    kdc_func_walk_exprs(f, find_store, &s);
    if (!s.key)
        return KDC_USE_USED;
    const kdc_expr_t *l = kdc_expr_strip(s.lhs);
    if (!l || l->kind != KDC_E_REF || l->ref != KDC_REF_LOCAL)
        return KDC_USE_USED; /* stored in a field, global or through a pointer: kept */
    kdc_stmt_walk(f->body, reads_in_stmt, &s);
    return s.reads ? KDC_USE_USED : KDC_USE_STORED_UNREAD;
}

/* ---------- outcome ---------- */

int kdc_result_error_truthy(const kdc_expr_t *call) {
    const char *t = call->type ? call->type : "";
    if (strstr(t, "bool") || strstr(t, "_Bool"))
        return 0;
    if (strchr(t, '*'))
        return strcasestr(t, "error") != NULL; /* rd_kafka_error_t *, RdKafka::Error *: NULL is success */
    return 1; /* int, rd_kafka_resp_err_t, ssize_t, ErrorCode: 0 is success */
}

/* The value a call returns on success when it is not 0: sqlite3_step() of a
 * statement that returns no rows gives SQLITE_DONE (101; SQLITE_ROW is a row
 * of a query, not a completed write). */
static long long success_value(const kdc_expr_t *call) {
    return call && call->name && !strcmp(call->name, "sqlite3_step") ? 101 : 0;
}

static int is_the_call(const kdc_outcome_t *o, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2)
        e = kdc_expr_strip(e->kids[1]);
    return e == o->call;
}

static int polarity(const kdc_outcome_t *o, const kdc_expr_t *e, int depth) {
    e = kdc_expr_strip(e);
    if (!e || depth > 16)
        return 0;
    if (is_the_call(o, e))
        return o->error_truthy ? -1 : 1;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER) {
        const char *k = kdc_pts_lvalue_key(o->p, e);
        for (size_t i = 0; k && i < o->nvars; i++)
            if (o->vars[i].key == k)
                return o->vars[i].polarity;
        return 0;
    }
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2)
        return polarity(o, e->kids[1], depth + 1);
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1)
        return -polarity(o, e->kids[0], depth + 1);
    if (e->kind != KDC_E_BINARY || e->nkids != 2)
        return 0;
    const kdc_expr_t *a = e->kids[0], *b = e->kids[1];
    if (e->op == KDC_OP_LAND || e->op == KDC_OP_LOR) {
        int pa = polarity(o, a, depth + 1), pb = polarity(o, b, depth + 1);
        if (e->op == KDC_OP_LAND) /* true ⇒ both true */
            return pa ? pa : pb;
        return pa && pa == pb ? pa : 0; /* true ⇒ one of them */
    }
    if (kdc_expr_strip(a)->has_ival && !kdc_expr_strip(b)->has_ival) {
        const kdc_expr_t *t = a;
        a = b;
        b = t;
    }
    b = kdc_expr_strip(b);
    int null_b = kdc_expr_is_null(b);
    if (!b->has_ival && !null_b)
        return 0;
    long long k = b->has_ival ? b->ival : 0;
    int pa = polarity(o, a, depth + 1);
    if (!pa)
        return 0;
    long long ok = o->error_truthy ? success_value(o->call) : 0;
    switch (e->op) {
    case KDC_OP_EQ:
        if (k == ok)
            return -pa;
        /* == a specific error code (or -1) */
        return pa == -1 ? -1 : 0;
    case KDC_OP_NE:
        return k == ok ? pa : 0;
    case KDC_OP_LT: /* r < 0 */
        return k <= 0 && pa == -1 ? -1 : 0;
    case KDC_OP_GE: /* r >= 0 */
        return k == 0 && pa == -1 ? 1 : 0;
    default:
        return 0;
    }
}

typedef struct vars_ctx {
    kdc_outcome_t *o;
    int added;
} vars_ctx_t;

static int find_vars(const kdc_expr_t *e, void *arg) {
    vars_ctx_t *v = arg;
    kdc_outcome_t *o = v->o;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const char *key = kdc_pts_lvalue_key(o->p, e->kids[0]);
    if (!key)
        return 0;
    for (size_t i = 0; i < o->nvars; i++)
        if (o->vars[i].key == key)
            return 0;
    int pol = polarity(o, e->kids[1], 0);
    if (pol && o->nvars < sizeof o->vars / sizeof o->vars[0]) {
        o->vars[o->nvars].key = key;
        o->vars[o->nvars].polarity = pol;
        o->nvars++;
        v->added = 1;
    }
    return 0;
}

void kdc_outcome_init(kdc_outcome_t *o, kdc_program_t *p, const kdc_func_t *f,
                      const kdc_expr_t *call) {
    memset(o, 0, sizeof *o);
    o->p = p;
    o->call = call;
    o->error_truthy = kdc_result_error_truthy(call);
    /* rc = f(); ok = rc == 0; ...: a few rounds reach derived flags */
    for (int round = 0; round < 3; round++) {
        vars_ctx_t v = {o, 0};
        kdc_func_walk_exprs(f, find_vars, &v);
        if (!v.added)
            break;
    }
}

int kdc_outcome_polarity(const kdc_outcome_t *o, const kdc_expr_t *cond) {
    return polarity(o, cond, 0);
}

int kdc_outcome_failure_edge(const kdc_outcome_t *o, const kdc_expr_t *cond) {
    int p = polarity(o, cond, 0);
    return p < 0 ? 0 : p > 0 ? 1 : -1;
}
