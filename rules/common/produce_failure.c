#include "produce_failure.h"
#include "consumer_common.h"
#include "results.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PF_MAX_DEPTH 3
#define PF_NFACTS 3

/* Path states: the produce failed on this path; the error is known not to be
 * the code; the loop moved on to another record; the error is known to be the
 * code; then two bits per tracked condition (known false, known true). */
enum { ST_FAILED = 1, ST_EXCL = 2, ST_ADV = 4, ST_KNOWN = 8, ST_FACT0 = 16 };
#define PF_NSTATES (ST_FACT0 << (2 * PF_NFACTS))

/* A condition whose value the walk remembers until a variable it reads is
 * assigned: a flag (`run`, `!stop`) or a comparison of variables and
 * constants (`i < n`, tested by a loop and again after it). */
typedef struct pf_fact {
    const char *key;     /* interned: the flag's lvalue key, or "op|a|b" */
    const char *vars[2]; /* USRs (comparison) or the lvalue key (flag) it reads */
    int flag;
    int op;              /* comparison: its operator */
    int const_side;      /* comparison of a variable and a constant: 1 left, 2 right, 0 none */
    long long cval;
} pf_fact_t;

typedef KDC_VEC(const char *) str_vec_t;
typedef KDC_VEC(const kdc_expr_t *) expr_vec_t;

static int has_str(const str_vec_t *v, const char *s) {
    for (size_t i = 0; s && i < v->n; i++)
        if (v->v[i] == s)
            return 1;
    return 0;
}

static int has_expr(const expr_vec_t *v, const kdc_expr_t *e) {
    for (size_t i = 0; i < v->n; i++)
        if (v->v[i] == e)
            return 1;
    return 0;
}

int kdc_is_single_produce(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    return api && (api->roles & KDC_API_PRODUCE) && kdc_api_is_librdkafka(call) &&
           strcmp(call->name, "rd_kafka_produce_batch") != 0;
}

int kdc_produce_blocks(const kdc_expr_t *produce) {
    const kdc_api_t *api = kdc_api_lookup(produce);
    if (!api || !(api->roles & KDC_API_PRODUCE))
        return 0;
    const kdc_expr_t *flags = NULL;
    if (api->varargs)
        flags = kdc_api_producev_arg(produce, 7 /* RD_KAFKA_VTYPE_MSGFLAGS */);
    else if (!strcmp(produce->name, "rd_kafka_produce") || produce->is_method)
        flags = kdc_call_arg(produce, 2); /* msgflags: C, and every C++ produce() */
    flags = kdc_expr_strip(flags);
    return flags && flags->has_ival && (flags->ival & 0x4); /* RD_KAFKA_MSG_F_BLOCK */
}

typedef struct pf_run {
    kdc_rule_ctx_t *ctx;
    const kdc_expr_t *produce;
    const kdc_func_t *produce_func;
    long long code, errno_code;
    kdc_loss_fn fn;
    void *arg;
    expr_vec_t reported; /* calls a loss was reported for */
    size_t count;
    const kdc_func_t *stack[PF_MAX_DEPTH + 1];
} pf_run_t;

typedef struct pf_walk {
    pf_run_t *run;
    const kdc_func_t *f;
    const kdc_cfg_t *g;
    const kdc_expr_t *start; /* the produce, or a call of a function returning its failure */
    int start_node;
    int use_outcome;
    kdc_outcome_t outcome;
    str_vec_t err_keys;   /* variables holding the error (err = producev(..), rd_kafka_last_error()) */
    str_vec_t vars;       /* variables (USRs) the start call's arguments read: the record */
    expr_vec_t inner;     /* calls evaluated as part of the start call */
    expr_vec_t loop_calls; /* calls in loop conditions (while (fgets(buf, ..))) */
    pf_fact_t facts[PF_NFACTS];
    size_t nfacts;
    str_vec_t cursors;    /* a loop's position that outlives the call (g->next < upto) */
    int exited;           /* the failure reaches the function's exit ... */
    int exited_moved;     /* ... with the position moved past the record (or no position) */
    int lost;
    kdc_loss_kind_t kind;
    const kdc_expr_t *at;
    int known;
    const kdc_expr_t *adv;
} pf_walk_t;

/* ---------- what the function holds ---------- */

static int collect_inner(const kdc_expr_t *e, void *arg) {
    pf_walk_t *w = arg;
    if (e != w->start && e->kind == KDC_E_CALL)
        KDC_VEC_PUSH(w->inner, e);
    return 0;
}

static int is_handle_type(const char *t) {
    return t && (strstr(t, "rd_kafka_t") || strstr(t, "rd_kafka_topic_t") ||
                 strstr(t, "RdKafka::Producer") || strstr(t, "RdKafka::Topic") ||
                 strstr(t, "RdKafka::Handle") || strstr(t, "rd_kafka_conf_t"));
}

static int collect_vars(const kdc_expr_t *e, void *arg) {
    pf_walk_t *w = arg;
    if (e->kind == KDC_E_REF && e->usr && (e->ref == KDC_REF_LOCAL || e->ref == KDC_REF_PARAM) &&
        !is_handle_type(e->type) && !has_str(&w->vars, e->usr))
        KDC_VEC_PUSH(w->vars, e->usr);
    return 0;
}

/* Does argument i of the start call carry the record (payload, key, opaque,
 * headers), rather than where it goes (handle, topic, partition, flags)? A
 * call of a helper: every argument but client and topic handles. */
static int is_record_arg(const kdc_expr_t *call, unsigned i) {
    const kdc_api_t *api = kdc_api_lookup(call);
    const kdc_expr_t *a = kdc_expr_strip(call->kids[i]);
    if (!api)
        return !a || !is_handle_type(a->type);
    if (api->varargs) { /* rd_kafka_producev: RD_KAFKA_V_<type>, its values */
        static const int nvals[] = {0, 1, 1, 1, 2, 2, 1, 1, 1, 3, 1};
        unsigned k = api->varargs;
        while (k < call->nkids) {
            const kdc_expr_t *m = call->kids[k];
            if (!m->has_ival || m->ival <= 0 || m->ival >= (long long)(sizeof nvals / sizeof nvals[0]))
                return 0;
            unsigned next = k + 1 + (unsigned)nvals[m->ival];
            if (i > k && i < next)
                return m->ival == 4 || m->ival == 5 || m->ival == 6 || m->ival >= 8;
            k = next;
        }
        return 0;
    }
    if (!strcmp(call->name, "rd_kafka_produceva"))
        return i > 0;
    if (!strcmp(call->name, "kdc_tracker_produceva"))
        return i == 4; /* (t, rk, timeout_ms, errp, vus, cnt) */
    if (!strcmp(call->name, "kdc_dlq_produce"))
        return i == 2; /* (dlq, t, msg, ..): the input message itself */
    return i >= 3; /* rd_kafka_produce(rkt, partition, flags, payload, ..), C++ produce() */
}

static int is_errno(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (e && e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF && e->nkids == 1)
        e = kdc_expr_strip(e->kids[0]);
    return e && e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "__errno_location");
}

static int is_error_call(const kdc_expr_t *e) {
    return e && e->kind == KDC_E_CALL && e->name &&
           (!strcmp(e->name, "rd_kafka_last_error") || !strcmp(e->name, "rd_kafka_errno2err"));
}

/* The value of e, through an assignment ((err = producev(..)) == ..). */
static const kdc_expr_t *value_of(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    for (int d = 0; e && d < 4 && e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2;
         d++)
        e = kdc_expr_strip(e->kids[1]);
    return e;
}

static int collect_err_keys(const kdc_expr_t *e, void *arg) {
    pf_walk_t *w = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const kdc_expr_t *v = value_of(e->kids[1]);
    if (v != w->start && !is_error_call(v) && !is_errno(v))
        return 0;
    const char *k = kdc_pts_lvalue_key(w->run->ctx->program, e->kids[0]);
    if (k && !has_str(&w->err_keys, k))
        KDC_VEC_PUSH(w->err_keys, k);
    return 0;
}

static int collect_loop_call(const kdc_expr_t *e, void *arg) {
    pf_walk_t *w = arg;
    if (e->kind == KDC_E_CALL)
        KDC_VEC_PUSH(w->loop_calls, e);
    return 0;
}

static void collect_loop_calls(const kdc_stmt_t *st, void *arg) {
    if (st->kind == KDC_S_WHILE || st->kind == KDC_S_DO || st->kind == KDC_S_FOR) {
        kdc_expr_walk(st->expr, collect_loop_call, arg);
        kdc_expr_walk(st->inc, collect_loop_call, arg);
    }
}

static const kdc_expr_t *strip_not(const kdc_expr_t *cond, int *neg) {
    const kdc_expr_t *c = kdc_expr_strip(cond);
    *neg = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        *neg ^= 1;
        c = kdc_expr_strip(c->kids[0]);
    }
    return c;
}

static int error_source(pf_walk_t *w, const kdc_expr_t *e);

/* One side of a remembered comparison: a variable (its USR) or a constant. */
static const char *cmp_side(const kdc_expr_t *e, char *buf, size_t len) {
    e = kdc_expr_strip(e);
    if (!e)
        return NULL;
    if (e->has_ival) {
        snprintf(buf, len, "#%lld", e->ival);
        return buf;
    }
    return e->kind == KDC_E_REF && e->usr && e->ref != KDC_REF_FUNCTION ? e->usr : NULL;
}

/* The fact a condition states, or 0: a variable tested alone (`run`,
 * `!stop`), or a comparison of variables and constants (`i < n`); never the
 * error, the record or the call's outcome. */
static int fact_of(pf_walk_t *w, const kdc_expr_t *cond, pf_fact_t *out, int *neg) {
    const kdc_expr_t *c = strip_not(cond, neg);
    memset(out, 0, sizeof *out);
    if (!c || (w->use_outcome && kdc_outcome_polarity(&w->outcome, c)) || error_source(w, c))
        return 0;
    kdc_program_t *p = w->run->ctx->program;
    if (c->kind == KDC_E_REF || c->kind == KDC_E_MEMBER) {
        if (c->usr && has_str(&w->vars, c->usr))
            return 0;
        const char *k = kdc_pts_lvalue_key(p, c);
        if (!k || has_str(&w->err_keys, k))
            return 0;
        out->key = out->vars[0] = k;
        out->flag = 1;
        return 1;
    }
    if (c->kind != KDC_E_BINARY || c->nkids != 2 || c->op < KDC_OP_EQ || c->op > KDC_OP_GE ||
        error_source(w, c->kids[0]) || error_source(w, c->kids[1]))
        return 0;
    char a[32], b[32];
    const char *l = cmp_side(c->kids[0], a, sizeof a), *r = cmp_side(c->kids[1], b, sizeof b);
    if (!l || !r || (l == a && r == b))
        return 0;
    char key[1024];
    snprintf(key, sizeof key, "%d|%s|%s", (int)c->op, l, r);
    out->key = kdc_intern(p, key);
    out->vars[0] = l == a ? NULL : l;
    out->vars[1] = r == b ? NULL : r;
    out->op = c->op;
    out->const_side = l == a ? 1 : r == b ? 2 : 0;
    if (out->const_side)
        out->cval = kdc_expr_strip(c->kids[out->const_side - 1])->ival;
    return 1;
}

/* The value of a variable-and-constant comparison once the variable holds v. */
static int fact_value(const pf_fact_t *f, long long v) {
    long long a = f->const_side == 2 ? v : f->cval, b = f->const_side == 2 ? f->cval : v;
    switch (f->op) {
    case KDC_OP_EQ: return a == b;
    case KDC_OP_NE: return a != b;
    case KDC_OP_LT: return a < b;
    case KDC_OP_GT: return a > b;
    case KDC_OP_LE: return a <= b;
    default: return a >= b;
    }
}

static int fact_index(const pf_walk_t *w, const pf_fact_t *f) {
    for (size_t j = 0; j < w->nfacts; j++)
        if (w->facts[j].key == f->key)
            return (int)j;
    return -1;
}

typedef struct fact_count {
    pf_fact_t fact;
    unsigned conds, assigned_const;
} fact_count_t;

/* Which facts to remember: those tested more than once, and flags the
 * function sets to a constant (run = 0), loop conditions first. */
static int fact_at_start(pf_walk_t *w, const pf_fact_t *f);

static void collect_facts(pf_walk_t *w, int *seed) {
    fact_count_t cand[32];
    size_t n = 0;
    for (int pass = 0; pass < 2; pass++)
        for (unsigned v = 0; v < w->g->n; v++) {
            const kdc_node_t *nd = &w->g->nodes[v];
            pf_fact_t f;
            int neg;
            if (nd->kind != KDC_N_COND || (int)nd->loop_cond != !pass || !fact_of(w, nd->expr, &f, &neg))
                continue;
            size_t j = 0;
            while (j < n && cand[j].fact.key != f.key)
                j++;
            if (j == n && n < 32)
                cand[n++] = (fact_count_t){f, 0, 0};
            if (j < n)
                cand[j].conds++;
        }
    for (unsigned v = 0; v < w->g->n; v++) {
        const kdc_node_t *nd = &w->g->nodes[v];
        const kdc_expr_t *e = nd->expr;
        if (nd->kind != KDC_N_ASSIGN || !e || e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN ||
            e->nkids != 2 || !kdc_expr_strip(e->kids[1])->has_ival)
            continue;
        const char *k = kdc_pts_lvalue_key(w->run->ctx->program, e->kids[0]);
        const char *root = kdc_root_var(e->kids[0]);
        for (size_t j = 0; j < n; j++)
            if ((cand[j].fact.flag && k && cand[j].fact.key == k) ||
                (cand[j].fact.const_side && root &&
                 root == cand[j].fact.vars[2 - cand[j].fact.const_side]))
                cand[j].assigned_const++; /* run = 0; rc = -1 with `rc == 0` tested */
    }
    /* facts known where the walk starts first, then the rest */
    int known[32];
    for (size_t j = 0; j < n; j++)
        known[j] = cand[j].conds > 1 || cand[j].assigned_const ? fact_at_start(w, &cand[j].fact) : -1;
    for (int pass = 0; pass < 2; pass++)
        for (size_t j = 0; j < n && w->nfacts < PF_NFACTS; j++) {
            if ((pass == 0) != (known[j] >= 0) || !(cand[j].conds > 1 || cand[j].assigned_const))
                continue;
            int kf = ST_FACT0 << (2 * w->nfacts), kt = kf << 1;
            if (known[j] >= 0)
                *seed |= known[j] ? kt : kf;
            w->facts[w->nfacts++] = cand[j].fact;
        }
}

/* Is `to` reachable from `from` without taking edge (skip_n, skip_i) (-1: no
 * edge skipped), without entering node `avoid` (-1: none)? With `via` set,
 * only paths that pass a node for which via(w, node) holds count. */
static int reaches(const pf_walk_t *w, int from, int to, int skip_n, int skip_i, int avoid,
                   int (*via)(const pf_walk_t *, int, size_t), size_t arg) {
    const kdc_cfg_t *g = w->g;
    unsigned char *seen = calloc((size_t)g->n * 2, 1);
    int *stack = malloc((size_t)g->n * 2 * 2 * sizeof *stack);
    if (!seen || !stack)
        kdc_oom();
    size_t sp = 0;
    int found = 0, p0 = via && via(w, from, arg);
    seen[(size_t)from * 2 + (size_t)p0] = 1;
    stack[sp++] = from;
    stack[sp++] = p0;
    while (sp && !found) {
        int passed = stack[--sp], v = stack[--sp];
        if (v == to && (!via || passed)) {
            found = 1;
            break;
        }
        const kdc_node_t *nd = &g->nodes[v];
        for (unsigned i = 0; i < nd->nsucc; i++) {
            int m = nd->succ[i];
            if (m < 0 || m == avoid || (v == skip_n && (int)i == skip_i))
                continue;
            int pm = passed || (via && via(w, m, arg));
            if (!seen[(size_t)m * 2 + (size_t)pm]) {
                seen[(size_t)m * 2 + (size_t)pm] = 1;
                stack[sp++] = m;
                stack[sp++] = pm;
            }
        }
    }
    free(seen);
    free(stack);
    return found;
}

/* Does node n assign a variable the fact (a pf_fact_t *) reads? */
static int invalidates(const pf_walk_t *w, int n, size_t arg) {
    const kdc_node_t *nd = &w->g->nodes[n];
    const kdc_expr_t *lv = nd->kind == KDC_N_ASSIGN && nd->expr ? kdc_expr_assigned(nd->expr) : NULL;
    if (!lv)
        return 0;
    const pf_fact_t *f = (const pf_fact_t *)(uintptr_t)arg;
    if (f->flag)
        return kdc_pts_lvalue_key(w->run->ctx->program, lv) == f->key;
    const char *root = kdc_root_var(lv);
    return root && (root == f->vars[0] || root == f->vars[1]);
}


/* What the walk knows about a fact when it starts: 1 or 0 when every path
 * to the start call passes one of its conditions on the same edge, with
 * nothing assigned since (`while (i < n && publish(..) == 0) i++;`: i < n
 * holds when publish fails); -1 otherwise. */
static int fact_at_start(pf_walk_t *w, const pf_fact_t *f) {
    const kdc_cfg_t *g = w->g;
    int value = -1;
    for (unsigned c = 0; c < g->n; c++) {
        const kdc_node_t *nd = &g->nodes[c];
        pf_fact_t cf;
        int neg;
        if (nd->kind != KDC_N_COND || nd->nsucc != 2 || !fact_of(w, nd->expr, &cf, &neg) ||
            cf.key != f->key)
            continue;
        for (unsigned e = 0; e < 2; e++) {
            if (nd->succ[e] < 0 ||
                reaches(w, g->entry, w->start_node, (int)c, (int)e, -1, NULL, 0) ||
                reaches(w, nd->succ[e], w->start_node, -1, -1, (int)c, invalidates,
                        (size_t)(uintptr_t)f))
                continue;
            value = (e == 0) ^ neg;
        }
    }
    return value;
}

/* ---------- conditions ---------- */

/* Does e hold the error: 1 a librdkafka error code, 2 an errno value, 0 no. */
static int error_source(pf_walk_t *w, const kdc_expr_t *e) {
    if (is_errno(e))
        return 2;
    e = value_of(e);
    if (!e)
        return 0;
    if (e == w->start || is_error_call(e))
        return 1;
    /* rd_kafka_error_code(error), C++ error->code(): the code of an error object */
    if (e->kind == KDC_E_CALL && e->name &&
        (!strcmp(e->name, "rd_kafka_error_code") || !strcmp(e->name, "RdKafka::Error::code")))
        return error_source(w, e->is_method ? e->recv : kdc_call_arg(e, 0)) ? 1 : 0;
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        return has_str(&w->err_keys, kdc_pts_lvalue_key(w->run->ctx->program, e)) ? 1 : 0;
    return 0;
}

/* Which edge of the condition is taken when the start call failed: 0, 1, or
 * -1 when the condition says nothing about it (outcome, error variables,
 * rd_kafka_last_error(), legacy `!= -1`). */
static int failure_edge(pf_walk_t *w, const kdc_expr_t *cond) {
    if (w->use_outcome) {
        int fe = kdc_outcome_failure_edge(&w->outcome, cond);
        if (fe >= 0)
            return fe;
    }
    const kdc_expr_t *c = kdc_expr_strip(cond);
    int neg = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        neg ^= 1;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (!c)
        return -1;
    int pol = 0; /* -1: true means failed */
    if (error_source(w, c) == 1 && c->kind != KDC_E_BINARY)
        pol = -1;
    else if (c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2) {
        const kdc_expr_t *a = c->kids[0], *b = kdc_expr_strip(c->kids[1]);
        if (b && !b->has_ival) {
            a = c->kids[1];
            b = kdc_expr_strip(c->kids[0]);
        }
        if (b && b->has_ival && error_source(w, a)) {
            if (b->ival == 0)
                pol = c->op == KDC_OP_EQ ? 1 : -1;
            else if (b->ival == -1 && value_of(a) == w->start)
                pol = c->op == KDC_OP_EQ ? -1 : 1; /* legacy rd_kafka_produce() != -1 */
        }
    }
    if (!pol)
        return -1;
    if (neg)
        pol = -pol;
    return pol < 0 ? 0 : 1;
}

/* State after taking edge i of condition node n, or -1 (the edge cannot be
 * taken on a failure path of this kind). */
static int pf_edge(pf_walk_t *w, const kdc_node_t *nd, unsigned i, int st) {
    const kdc_expr_t *c = kdc_expr_strip(nd->expr);
    int neg = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        neg ^= 1;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (!c)
        return st;
    /* err ? SOME_CODE, an operator the model could not read (a macro's): the error
     * is compared with a code, which way cannot be told: taken as handled */
    if (c->kind == KDC_E_BINARY && c->op == KDC_OP_UNKNOWN && c->nkids == 2 &&
        (error_source(w, c->kids[0]) || error_source(w, c->kids[1])))
        return st | ST_EXCL;
    /* err == SOME_CODE */
    if (c->kind == KDC_E_BINARY && (c->op == KDC_OP_EQ || c->op == KDC_OP_NE) && c->nkids == 2) {
        const kdc_expr_t *a = c->kids[0], *b = kdc_expr_strip(c->kids[1]);
        if (b && !b->has_ival) {
            a = c->kids[1];
            b = kdc_expr_strip(c->kids[0]);
        }
        int ns = b && b->has_ival && b->ival != 0 && b->ival != -1 ? error_source(w, a) : 0;
        const kdc_expr_t *k0 = kdc_expr_strip(c->kids[0]), *k1 = kdc_expr_strip(c->kids[1]);
        int es0 = error_source(w, k0) != 0, es1 = error_source(w, k1) != 0;
        const kdc_expr_t *other = es0 ? k1 : k0;
        if (es0 != es1 && other && !other->has_ival && !kdc_expr_is_null(other)) {
            /* err != sizes[i].expected: an error the program expects (a test) */
            unsigned eq_edge = ((c->op == KDC_OP_EQ) ^ neg) ? 0 : 1;
            return i == eq_edge ? st | ST_EXCL : st;
        }
        if (ns) {
            int target = ns == 1 ? b->ival == w->run->code : b->ival == w->run->errno_code;
            unsigned eq_edge = ((c->op == KDC_OP_EQ) ^ neg) ? 0 : 1;
            if (i == eq_edge) {
                if (target)
                    return (st & ST_EXCL) ? -1 : st | ST_FAILED | ST_KNOWN;
                return (st & ST_KNOWN) ? -1 : st | ST_FAILED | ST_EXCL;
            }
            if (target)
                return (st & ST_KNOWN) ? -1 : st | ST_EXCL;
            return st;
        }
    }
    int fe = failure_edge(w, nd->expr);
    if (fe >= 0)
        return (int)i == fe ? st | ST_FAILED : -1;
    int fneg;
    pf_fact_t f;
    int j = fact_of(w, nd->expr, &f, &fneg) ? fact_index(w, &f) : -1;
    if (j >= 0) {
        int kf = ST_FACT0 << (2 * j), kt = kf << 1;
        int truth = (i == 0) ^ fneg;
        if ((truth && (st & kf)) || (!truth && (st & kt)))
            return -1;
        return (st & ~(kf | kt)) | (truth ? kt : kf);
    }
    return st;
}

/* The value of e on a path where the start call failed: 1, 0, or -1 unknown.
 * `stop = forward(p, m) != 0 || ..` is 1 there; `ok = err == 0` is 0. */
static int value_when_failed(pf_walk_t *w, const kdc_expr_t *e, int depth) {
    e = kdc_expr_strip(e);
    if (!e || depth > 8)
        return -1;
    if (e->has_ival)
        return e->ival != 0;
    if (e->kind == KDC_E_UNARY && e->op == KDC_OP_NOT && e->nkids == 1) {
        int v = value_when_failed(w, e->kids[0], depth + 1);
        return v < 0 ? -1 : !v;
    }
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_LOR || e->op == KDC_OP_LAND) && e->nkids == 2) {
        int a = value_when_failed(w, e->kids[0], depth + 1);
        int b = value_when_failed(w, e->kids[1], depth + 1);
        if (e->op == KDC_OP_LOR)
            return a == 1 || b == 1 ? 1 : a == 0 && b == 0 ? 0 : -1;
        return a == 0 || b == 0 ? 0 : a == 1 && b == 1 ? 1 : -1;
    }
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_EQ || e->op == KDC_OP_NE) && e->nkids == 2) {
        const kdc_expr_t *a = kdc_expr_strip(e->kids[0]), *b = kdc_expr_strip(e->kids[1]);
        const kdc_expr_t *k = a && a->has_ival ? a : b;
        if (k && k->has_ival && k->ival != 0 && !(k->ival == -1 && value_of(a == k ? b : a) == w->start))
            return -1; /* a test of one error code says nothing about the others */
    }
    int fe = failure_edge(w, e);
    return fe < 0 ? -1 : fe == 0;
}

/* ---------- calls and assignments on the path ---------- */

static int is_var_ref(pf_walk_t *w, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_REF && e->usr && has_str(&w->vars, e->usr);
}

static int is_var_addr(pf_walk_t *w, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1 &&
           is_var_ref(w, e->kids[0]);
}

static int mentions_var(const kdc_expr_t *e, void *arg) {
    pf_walk_t *w = arg;
    return e->kind == KDC_E_REF && e->usr && has_str(&w->vars, e->usr);
}

static int given_record(pf_walk_t *w, const kdc_expr_t *call) {
    for (unsigned i = 0; i < call->nkids; i++)
        if (kdc_expr_walk(call->kids[i], mentions_var, w))
            return 1;
    return 0;
}

/* Does the call read another record into a variable the start call reads? */
static int moves_on(pf_walk_t *w, const kdc_expr_t *call) {
    static const char *const first[] = {"fgets", "fread", "memcpy", "memmove", "strcpy",
                                        "strncpy", "strcat", "strncat", "snprintf", "sprintf",
                                        "vsnprintf", "vsprintf", "memset", "strlcpy", NULL};
    static const char *const second[] = {"read", "recv", "recvfrom", "pread", NULL};
    for (unsigned i = 0; i < call->nkids; i++)
        if (is_var_addr(w, call->kids[i]))
            return 1;
    if (has_expr(&w->loop_calls, call) && given_record(w, call))
        return 1;
    const char *n = call->name ? call->name : "";
    size_t len = strlen(n);
    if (len >= 7 && !strcmp(n + len - 7, "getline") && given_record(w, call))
        return 1;
    for (size_t i = 0; first[i]; i++)
        if (!strcmp(n, first[i]) && call->nkids > 0 && is_var_ref(w, call->kids[0]))
            return 1;
    for (size_t i = 0; second[i]; i++)
        if (!strcmp(n, second[i]) && call->nkids > 1 && is_var_ref(w, call->kids[1]))
            return 1;
    return 0;
}

/* Is the record handed to other code (a retry queue, a dead-letter produce)? */
static int hands_on(pf_walk_t *w, const kdc_expr_t *call) {
    if (has_expr(&w->loop_calls, call) || !given_record(w, call))
        return 0;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_PRODUCE) != 0;
    if (kdc_options_has_role(kdc_facts_options(w->run->ctx->facts), call, KDC_ROLE_PRODUCE))
        return 1;
    return call->name && *call->name && !call->callee_system && !kdc_api_is_librdkafka(call) &&
           !kdc_is_logging_name(call->name);
}

/* Is the error given to a function of the program (check_err(err, expected),
 * a classifier) that decides what happens next? */
static int error_handled_by_helper(pf_walk_t *w, const kdc_expr_t *call) {
    if (kdc_api_lookup(call) || !call->name || !*call->name || call->callee_system ||
        kdc_api_is_librdkafka(call) || kdc_is_logging_name(call->name))
        return 0;
    for (unsigned i = 0; i < call->nkids; i++)
        if (error_source(w, call->kids[i]))
            return 1;
    return 0;
}

/* A commit of a message that is not the record (the last one that succeeded)? */
static int commits_other_message(pf_walk_t *w, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    const kdc_expr_t *m = api ? kdc_commit_message_of(call, api) : NULL;
    const char *root = m ? kdc_root_var(m) : NULL;
    return root && !has_str(&w->vars, root);
}

static int is_seek(const kdc_expr_t *call) {
    const char *n = call->name ? call->name : "";
    return !strncmp(n, "rd_kafka_seek", 13) || (!strncmp(n, "RdKafka::", 9) && strstr(n, "::seek"));
}

static void lose(pf_walk_t *w, kdc_loss_kind_t kind, const kdc_expr_t *at, int st) {
    if (w->lost)
        return;
    w->lost = 1;
    w->kind = kind;
    w->at = at;
    w->known = (st & ST_KNOWN) != 0;
}

/* Does the lvalue live in a local variable of the function (d.err, vu[0].type),
 * rather than behind a pointer or in a global (s->state[i])? */
static int is_local_value(pf_walk_t *w, const kdc_expr_t *lv) {
    (void)w;
    for (const kdc_expr_t *e = kdc_expr_strip(lv); e;) {
        if (e->kind == KDC_E_REF)
            return e->ref == KDC_REF_LOCAL && e->type && !strchr(e->type, '*');
        if (e->kind == KDC_E_MEMBER && !e->arrow && e->nkids)
            e = kdc_expr_strip(e->kids[0]);
        else if (e->kind == KDC_E_INDEX && e->nkids)
            e = kdc_expr_strip(e->kids[0]);
        else
            return 0;
    }
    return 0;
}

static int pf_visit(pf_walk_t *w, int n, int st) {
    const kdc_node_t *nd = &w->g->nodes[n];
    int failed = (st & ST_FAILED) && !(st & ST_EXCL);
    if (n == w->g->exit) {
        if (failed) {
            w->exited = 1;
            if (!w->cursors.n || (st & ST_ADV))
                w->exited_moved = 1;
        }
        return -1;
    }
    if (nd->kind == KDC_N_ASSIGN && nd->expr) {
        const kdc_expr_t *lv = kdc_expr_assigned(nd->expr);
        if (!lv)
            return st;
        const char *k = kdc_pts_lvalue_key(w->run->ctx->program, lv);
        int plain = nd->expr->kind == KDC_E_BINARY && nd->expr->op == KDC_OP_ASSIGN &&
                    nd->expr->nkids == 2;
        const char *root = kdc_root_var(lv);
        for (size_t j = 0; j < w->nfacts; j++) {
            const pf_fact_t *f = &w->facts[j];
            int kf = ST_FACT0 << (2 * j), kt = kf << 1;
            if (f->flag && k == f->key) {
                int v = plain && (st & ST_FAILED) ? value_when_failed(w, nd->expr->kids[1], 0)
                        : plain && kdc_expr_strip(nd->expr->kids[1])->has_ival
                            ? kdc_expr_strip(nd->expr->kids[1])->ival != 0
                            : -1;
                st &= ~(kf | kt);
                if (v >= 0)
                    st |= v ? kt : kf; /* stop = 1; run = 0; stop = failed || .. */
            } else if (!f->flag && root && (root == f->vars[0] || root == f->vars[1])) {
                st &= ~(kf | kt); /* i++: i < n must be tested again */
                const kdc_expr_t *r = plain ? kdc_expr_strip(nd->expr->kids[1]) : NULL;
                if (f->const_side && r && r->has_ival && kdc_expr_strip(lv)->kind == KDC_E_REF)
                    st |= fact_value(f, r->ival) ? kt : kf; /* rc = -1 with `rc == 0` */
            }
        }
        const kdc_expr_t *l = kdc_expr_strip(lv);
        if (failed && !(st & ST_ADV) && plain && l &&
            (l->kind == KDC_E_INDEX || l->kind == KDC_E_MEMBER || l->kind == KDC_E_UNARY)) {
            const kdc_expr_t *r = kdc_expr_strip(nd->expr->kids[1]);
            if (is_var_ref(w, r))
                return -1; /* stored for later: retry[n++] = m */
            if (root && has_str(&w->vars, root) && r && (r->has_ival || error_source(w, r)) &&
                !is_local_value(w, lv))
                return -1; /* marked failed where it outlives the loop: s->state[i] = FAILED */
        }
        /* the record moves on: its position advances (g->next++), or, in a loop without
         * one that outlives the call, a variable the record is read from changes */
        if (w->cursors.n ? k && has_str(&w->cursors, k) : root && has_str(&w->vars, root)) {
            if (!(st & ST_ADV) && !w->adv)
                w->adv = nd->expr;
            st |= ST_ADV;
        }
        return st;
    }
    if (nd->kind != KDC_N_CALL)
        return st;
    const kdc_expr_t *c = nd->expr;
    if (n == w->start_node) {
        if (failed && (st & ST_ADV))
            lose(w, KDC_LOSS_NEXT_RECORD, w->adv, st);
        return -1; /* otherwise: produced again (a retry), or not a failure path */
    }
    if (has_expr(&w->inner, c))
        return st;
    if (failed) {
        if (kdc_facts_call_roles(w->run->ctx->facts, w->f, c).commits &&
            !commits_other_message(w, c)) {
            lose(w, KDC_LOSS_COMMIT, c, st);
            return -1;
        }
        if (is_seek(c) || (!(st & ST_ADV) && hands_on(w, c)) || error_handled_by_helper(w, c))
            return -1;
    }
    if (!w->cursors.n && moves_on(w, c)) {
        if (!(st & ST_ADV) && !w->adv)
            w->adv = c;
        st |= ST_ADV;
    }
    return st;
}

static void pf_search(pf_walk_t *w, int st0) {
    const kdc_cfg_t *g = w->g;
    size_t nst = PF_NSTATES;
    unsigned char *seen = calloc((size_t)g->n * nst, 1);
    int *queue = malloc((size_t)g->n * nst * 2 * sizeof *queue);
    if (!seen || !queue)
        kdc_oom();
    size_t head = 0, tail = 0;
    const kdc_node_t *sn = &g->nodes[w->start_node];
    for (unsigned i = 0; i < sn->nsucc; i++) {
        int m = sn->succ[i];
        if (m >= 0 && !seen[(size_t)m * nst + (size_t)st0]) {
            seen[(size_t)m * nst + (size_t)st0] = 1;
            queue[tail++] = m;
            queue[tail++] = st0;
        }
    }
    while (head < tail && !w->lost) {
        int n = queue[head++], st = queue[head++];
        st = pf_visit(w, n, st);
        if (st < 0)
            continue;
        const kdc_node_t *nd = &g->nodes[n];
        for (unsigned i = 0; i < nd->nsucc; i++) {
            int m = nd->succ[i];
            int st2 = nd->kind == KDC_N_COND ? pf_edge(w, nd, i, st) : st;
            if (m < 0 || st2 < 0 || seen[(size_t)m * nst + (size_t)st2])
                continue;
            seen[(size_t)m * nst + (size_t)st2] = 1;
            queue[tail++] = m;
            queue[tail++] = st2;
        }
    }
    free(seen);
    free(queue);
}

/* ---------- the position of a loop over stored records ---------- */

/* Is node n on a cycle through the start call? */
static int on_start_cycle(const pf_walk_t *w, int n) {
    return reaches(w, w->start_node, n, -1, -1, -1, NULL, 0) &&
           reaches(w, n, w->start_node, -1, -1, -1, NULL, 0);
}

/* Does an assignment on a cycle through the start call write the lvalue key k? */
static int advanced_in_loop(const pf_walk_t *w, const char *k) {
    const kdc_cfg_t *g = w->g;
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_node_t *nd = &g->nodes[n];
        const kdc_expr_t *lv = nd->kind == KDC_N_ASSIGN && nd->expr ? kdc_expr_assigned(nd->expr) : NULL;
        if (lv && kdc_pts_lvalue_key(w->run->ctx->program, lv) == k && on_start_cycle(w, (int)n))
            return 1;
    }
    return 0;
}

/* The loop's position, when it outlives the call: a field behind a pointer or
 * a global compared in the condition of a loop around the start call and
 * advanced in it (`while (g->next < upto) { ..; g->next++; }`). A failure path that leaves such a loop without
 * advancing it leaves the record where the next call starts: produced again,
 * not dropped; and the record moves on only when the position does. */
static void collect_cursors(pf_walk_t *w) {
    const kdc_cfg_t *g = w->g;
    for (unsigned n = 0; n < g->n; n++) {
        const kdc_node_t *nd = &g->nodes[n];
        const kdc_expr_t *c = kdc_expr_strip(nd->expr);
        if (nd->kind != KDC_N_COND || !nd->loop_cond || !c || c->kind != KDC_E_BINARY ||
            c->nkids != 2 || c->op < KDC_OP_EQ || c->op > KDC_OP_GE || !on_start_cycle(w, (int)n))
            continue;
        for (unsigned i = 0; i < 2; i++) {
            const kdc_expr_t *side = kdc_expr_strip(c->kids[i]);
            if (!side || (side->kind != KDC_E_MEMBER && side->kind != KDC_E_REF) ||
                (side->kind == KDC_E_REF && side->ref != KDC_REF_GLOBAL) ||
                is_local_value(w, side) || error_source(w, side))
                continue;
            const char *k = kdc_pts_lvalue_key(w->run->ctx->program, side);
            if (k && !has_str(&w->cursors, k) && advanced_in_loop(w, k))
                KDC_VEC_PUSH(w->cursors, k);
        }
    }
}

/* ---------- following the failure into callers ---------- */

static void follow(pf_run_t *r, const kdc_func_t *f, const kdc_expr_t *start, int use_outcome,
                   int st0, int depth);

typedef struct ret_find {
    kdc_program_t *p;
    const kdc_expr_t *call;
    const kdc_outcome_t *o;
    int returned;
} ret_find_t;

static void find_return(const kdc_stmt_t *st, void *arg) {
    ret_find_t *rf = arg;
    if (st->kind != KDC_S_RETURN || !st->expr)
        return;
    const kdc_expr_t *e = kdc_expr_strip(st->expr);
    if (e == rf->call)
        rf->returned = 1;
    const char *k = kdc_pts_lvalue_key(rf->p, e);
    for (size_t i = 0; k && i < rf->o->nvars; i++)
        if (rf->o->vars[i].key == k)
            rf->returned = 1;
}

/* Does f return the start call's result as it is (return producev(..); return err;)? */
static int returns_result(pf_run_t *r, const kdc_func_t *f, const pf_walk_t *w) {
    kdc_outcome_t none = {0};
    ret_find_t rf = {r->ctx->program, w->start, w->use_outcome ? &w->outcome : &none, 0};
    kdc_stmt_walk(f->body, find_return, &rf);
    return rf.returned;
}

/* Can the walk tell, in the caller, where the call's result says it failed? */
static int caller_tests(kdc_program_t *p, const kdc_func_t *f, const kdc_expr_t *call) {
    kdc_outcome_t o;
    kdc_outcome_init(&o, p, f, call);
    ret_find_t rf = {p, call, &o, 0};
    kdc_stmt_walk(f->body, find_return, &rf);
    if (rf.returned)
        return 1;
    const kdc_cfg_t *g = f->cfg;
    for (unsigned n = 0; g && n < g->n; n++)
        if (g->nodes[n].kind == KDC_N_COND && kdc_outcome_failure_edge(&o, g->nodes[n].expr) >= 0)
            return 1;
    return 0;
}

static void follow_callers(pf_run_t *r, const kdc_func_t *f, int depth) {
    for (int d = 0; d < depth; d++)
        if (r->stack[d] == f)
            return; /* recursion */
    r->stack[depth] = f;
    const kdc_pts_t *pts = kdc_facts_pts_of(r->ctx->facts);
    size_t nf = kdc_program_nfuncs(r->ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *caller = kdc_program_func(r->ctx->program, i);
        for (unsigned c = 0; c < caller->ncalls; c++) {
            const kdc_expr_t *cs = caller->calls[c];
            if (kdc_api_lookup(cs))
                continue;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(pts, caller, cs, &callees);
            int calls_f = 0;
            for (size_t k = 0; k < callees.n; k++)
                calls_f |= callees.v[k] == f;
            free(callees.v);
            if (!calls_f)
                continue;
            int tells = cs->type && strcmp(cs->type, "void") != 0 &&
                        kdc_result_use(r->ctx->program, caller, cs) == KDC_USE_USED;
            if (tells && !caller_tests(r->ctx->program, caller, cs))
                continue; /* used in a way the walk cannot follow: trust it */
            follow(r, caller, cs, tells, tells ? 0 : ST_FAILED, depth + 1);
        }
    }
}

static void follow(pf_run_t *r, const kdc_func_t *f, const kdc_expr_t *start, int use_outcome,
                   int st0, int depth) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || start->call_id < 0 || g->call_node[start->call_id] < 0)
        return;
    pf_walk_t w = {0};
    w.run = r;
    w.f = f;
    w.g = g;
    w.start = start;
    w.start_node = g->call_node[start->call_id];
    w.use_outcome = use_outcome;
    if (use_outcome)
        kdc_outcome_init(&w.outcome, r->ctx->program, f, start);
    for (unsigned i = 0; i < start->nkids; i++) {
        kdc_expr_walk(start->kids[i], collect_inner, &w);
        if (is_record_arg(start, i))
            kdc_expr_walk(start->kids[i], collect_vars, &w);
    }
    kdc_func_walk_exprs(f, collect_err_keys, &w);
    kdc_stmt_walk(f->body, collect_loop_calls, &w);
    collect_cursors(&w);
    int seed = 0;
    collect_facts(&w, &seed);
    pf_search(&w, st0 | seed);
    if (w.lost && !has_expr(&r->reported, start)) {
        KDC_VEC_PUSH(r->reported, start);
        kdc_produce_loss_t loss = {w.kind, f,    start, r->produce, r->produce_func,
                                   w.at,   w.known, depth > 0 && !use_outcome};
        r->fn(r->ctx, &loss, r->arg);
        r->count++;
    } else if (!w.lost && depth < PF_MAX_DEPTH && (w.exited_moved || returns_result(r, f, &w))) {
        follow_callers(r, f, depth); /* the failure is the callers' */
    }
    free(w.err_keys.v);
    free(w.vars.v);
    free(w.inner.v);
    free(w.loop_calls.v);
    free(w.cursors.v);
}

size_t kdc_produce_failure_losses(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                  const kdc_expr_t *produce, long long code, long long errno_code,
                                  kdc_loss_fn fn, void *arg) {
    pf_run_t r = {0};
    r.ctx = ctx;
    r.produce = produce;
    r.produce_func = f;
    r.code = code;
    r.errno_code = errno_code;
    r.fn = fn;
    r.arg = arg;
    follow(&r, f, produce, 1, 0, 0);
    free(r.reported.v);
    return r.count;
}
