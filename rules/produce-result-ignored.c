/*
 * produce-result-ignored: the return value of a produce call is dropped, so a
 * message that was never enqueued (local queue full, message too large,
 * unknown partition, fatal producer error) silently vanishes. Also a
 * rd_kafka_producev()/produceva() whose error is read through
 * rd_kafka_last_error(), which only the legacy rd_kafka_produce() sets.
 *
 * Confidence: high. Any use of the result counts as checking it: a test, a
 * variable that is read, a return, an argument, a retry loop on
 * RD_KAFKA_RESP_ERR__QUEUE_FULL. The legacy rd_kafka_produce() followed by
 * rd_kafka_last_error() in the same function is checked, and so is a helper
 * that drops the legacy call's result when every caller of the helper reads
 * rd_kafka_last_error(). A variable that is only cast to void (`(void)err;`,
 * the idiom that silences -Wunused) is not read. A wrapper that returns the
 * produce's result (`return rd_kafka_producev(..)`, `return e;`, `return
 * rd_kafka_producev(..) ? -1 : 0`) hands the check to its callers: a call of
 * it whose result is dropped is reported at that call. A wrapper that tests
 * the result itself (an if, a retry loop) has checked it, whatever it
 * returns.
 */
#include "results.h"
#include "rule.h"

#include <stdlib.h>
#include <string.h>

static int calls_last_error(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++)
        if (!strcmp(f->calls[c]->name, "rd_kafka_last_error"))
            return 1;
    return 0;
}

/* Does every caller of f read rd_kafka_last_error() (and is there one)? A
 * helper around the legacy rd_kafka_produce() leaves the check to them:
 * `send_line(rkt, l); if (rd_kafka_last_error() == ..QUEUE_FULL)`. */
static int callers_read_last_error(kdc_rule_ctx_t *ctx, const kdc_func_t *f) {
    size_t nf = kdc_program_nfuncs(ctx->program), callers = 0;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *g = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < g->ncalls; c++) {
            if (g->calls[c]->usr != f->usr ||
                kdc_program_find_callee(ctx->program, g->calls[c]->usr, g->tu) != f)
                continue;
            if (!calls_last_error(g))
                return 0;
            callers++;
            break;
        }
    }
    return callers > 0;
}

/* ---------- a variable whose only reads are `(void)var;` ---------- */

typedef struct reads {
    const char *usr;  /* the local variable */
    unsigned reads;   /* reads other than `(void)var;` statements */
    unsigned voids;   /* `(void)var;` statements */
} reads_t;

static void count_reads(const kdc_expr_t *e, reads_t *r, int depth) {
    if (!e || depth > 64)
        return;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        count_reads(e->kids[1], r, depth + 1);
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind != KDC_E_REF) /* a->f = x, a[i] = x read a */
            for (unsigned i = 0; i < l->nkids; i++)
                count_reads(l->kids[i], r, depth + 1);
        return;
    }
    if (e->kind == KDC_E_REF && e->usr == r->usr)
        r->reads++;
    if (e->recv)
        count_reads(e->recv, r, depth + 1);
    if (e->callee_expr)
        count_reads(e->callee_expr, r, depth + 1);
    for (unsigned i = 0; i < e->nkids; i++)
        count_reads(e->kids[i], r, depth + 1);
}

static void reads_in_stmt(const kdc_stmt_t *s, void *arg) {
    reads_t *r = arg;
    const kdc_expr_t *e = kdc_expr_strip(s->expr);
    if (s->kind == KDC_S_EXPR && e && e->kind == KDC_E_REF && e->usr == r->usr) {
        r->voids++; /* `(void)err;`: evaluated and thrown away */
        return;
    }
    count_reads(s->expr, r, 0);
    count_reads(s->inc, r, 0);
}

typedef struct store {
    const kdc_expr_t *call;
    const char *usr; /* local the call's value is assigned to */
} store_t;

static int find_store(const kdc_expr_t *e, void *arg) {
    store_t *s = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        kdc_expr_strip(e->kids[1]) == s->call) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_REF && l->ref == KDC_REF_LOCAL && l->usr)
            s->usr = l->usr;
        return 1;
    }
    return 0;
}

/* How the call's value is used, where a local that is only cast to void
 * counts as never read. */
static kdc_use_t result_use(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                            int *voided) {
    kdc_use_t use = kdc_result_use(ctx->program, f, call);
    *voided = 0;
    if (use != KDC_USE_USED)
        return use;
    store_t s = {call, NULL};
    kdc_func_walk_exprs(f, find_store, &s);
    if (!s.usr)
        return use;
    reads_t r = {s.usr, 0, 0};
    kdc_stmt_walk(f->body, reads_in_stmt, &r);
    *voided = r.voids && !r.reads;
    return *voided ? KDC_USE_STORED_UNREAD : use;
}

/* ---------- wrappers that return a produce's result ---------- */

typedef struct carriers {
    kdc_rule_ctx_t *ctx;
    const char **api; /* per function index: the produce API whose result it returns */
    const kdc_func_t *f;
    const char *found;
} carriers_t;

static const char *carried(carriers_t *c, const kdc_expr_t *e, int depth);

typedef struct assigned {
    carriers_t *c;
    const char *usr;
    int depth;
    const char *found;
} assigned_t;

static int find_assigned(const kdc_expr_t *e, void *arg) {
    assigned_t *a = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_REF && l->usr == a->usr && !a->found)
            a->found = carried(a->c, e->kids[1], a->depth + 1);
    }
    return a->found != NULL;
}

/* The produce API whose result the value of e is (or is computed from, by
 * operators: `== 0`, `? -1 : 0`, `!`), directly or through a local variable
 * or a wrapper; NULL when none. An argument of another call is not its value. */
static const char *carried(carriers_t *c, const kdc_expr_t *e, int depth) {
    e = kdc_expr_strip(e);
    if (!e || depth > 8)
        return NULL;
    switch (e->kind) {
    case KDC_E_CALL: {
        const kdc_api_t *api = kdc_api_lookup(e);
        if (api)
            return (api->roles & KDC_API_PRODUCE) ? e->name : NULL;
        const kdc_func_t *g = kdc_program_find_callee(c->ctx->program, e->usr, c->f->tu);
        return g ? c->api[g->index] : NULL;
    }
    case KDC_E_REF: {
        if (e->ref != KDC_REF_LOCAL || !e->usr)
            return NULL;
        assigned_t a = {c, e->usr, depth, NULL};
        kdc_func_walk_exprs(c->f, find_assigned, &a);
        return a.found;
    }
    case KDC_E_BINARY:
        if (e->op == KDC_OP_ASSIGN && e->nkids == 2)
            return carried(c, e->kids[1], depth + 1);
        if (e->op == KDC_OP_COMPOUND_ASSIGN || e->op == KDC_OP_COMMA)
            return NULL;
        /* fall through */
    case KDC_E_UNARY:
    case KDC_E_COND:
        for (unsigned i = 0; i < e->nkids; i++) {
            const char *a = carried(c, e->kids[i], depth + 1);
            if (a)
                return a;
        }
        return NULL;
    default:
        return NULL;
    }
}

static void find_return(const kdc_stmt_t *s, void *arg) {
    carriers_t *c = arg;
    if (s->kind == KDC_S_RETURN && s->expr && !c->found)
        c->found = carried(c, s->expr, 0);
}

/* Is a produce's result tested by an if/loop/switch condition of c->f (a
 * retry loop on QUEUE_FULL, `if (e) log(..)`)? Then the wrapper checked it. */
static void find_test(const kdc_stmt_t *s, void *arg) {
    carriers_t *c = arg;
    if (c->found || !s->expr)
        return;
    if (s->kind == KDC_S_IF || s->kind == KDC_S_WHILE || s->kind == KDC_S_DO ||
        s->kind == KDC_S_FOR || s->kind == KDC_S_SWITCH)
        c->found = carried(c, s->expr, 0);
}

/* Can f's value carry a produce's result now? Only through a call in it of a
 * produce API or of a function already marked (carried()'s only sources). */
static int may_carry(const carriers_t *c, const kdc_func_t *f, const unsigned char *produces,
                     const size_t *callee_at, const size_t *callees) {
    if (produces[f->index])
        return 1;
    for (size_t k = callee_at[f->index]; k < callee_at[f->index + 1]; k++)
        if (c->api[callees[k]])
            return 1;
    return 0;
}

/* Marks every function that returns a produce's result (through wrappers too).
 * The rounds visit every function in order; a function that cannot carry a
 * result yet is passed over without walking it, as the walk would find none. */
static void find_carriers(carriers_t *c) {
    const kdc_program_t *p = c->ctx->program;
    size_t nf = kdc_program_nfuncs(p), ncallees = 0;
    unsigned char *produces = calloc(nf ? nf : 1, 1);
    size_t *callee_at = calloc(nf + 1, sizeof *callee_at);
    if (!produces || !callee_at)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(p, i);
        for (unsigned k = 0; f->body && k < f->ncalls; k++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[k]);
            if (api)
                produces[f->index] |= (api->roles & KDC_API_PRODUCE) != 0;
            else
                ncallees += kdc_program_find_callee(p, f->calls[k]->usr, f->tu) != NULL;
        }
    }
    size_t *callees = malloc((ncallees ? ncallees : 1) * sizeof *callees);
    if (!callees)
        kdc_oom();
    ncallees = 0;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(p, i);
        callee_at[f->index] = ncallees;
        for (unsigned k = 0; f->body && k < f->ncalls; k++) {
            if (kdc_api_lookup(f->calls[k]))
                continue;
            const kdc_func_t *g = kdc_program_find_callee(p, f->calls[k]->usr, f->tu);
            if (g)
                callees[ncallees++] = g->index;
        }
    }
    callee_at[nf] = ncallees;
    for (int round = 0, changed = 1; changed && round < 8; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(p, i);
            if (c->api[f->index] || !f->body || !may_carry(c, f, produces, callee_at, callees))
                continue;
            c->f = f;
            c->found = NULL;
            kdc_stmt_walk(f->body, find_return, c);
            const char *api = c->found;
            if (!api)
                continue;
            c->found = NULL;
            kdc_stmt_walk(f->body, find_test, c);
            if (c->found)
                continue; /* checked in the wrapper, in some form */
            c->api[f->index] = api;
            changed = 1;
        }
    }
    free(produces);
    free(callee_at);
    free(callees);
}

/* ---------- reports ---------- */

static void check_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    (void)api;
    int voided = 0;
    kdc_use_t use = result_use(ctx, f, call, &voided);
    if (use == KDC_USE_USED)
        return;
    int legacy = !strcmp(call->name, "rd_kafka_produce");
    int last_error = calls_last_error(f);
    if (legacy && (last_error || (use == KDC_USE_DISCARDED && callers_read_last_error(ctx, f))))
        return; /* rd_kafka_produce() sets rd_kafka_last_error() */
    const char *name = kdc_api_display_name(call);
    if (last_error)
        kdc_rule_report(ctx, f, &call->loc, NULL, 0,
                        "%s's error is dropped and read through rd_kafka_last_error(), which only "
                        "the legacy rd_kafka_produce() sets: a message that was not enqueued "
                        "vanishes; check the value %s returns",
                        name, name);
    else
        kdc_rule_report(ctx, f, &call->loc, NULL, 0,
                        "the result of %s is %s: a message that was not enqueued (queue full, too "
                        "large, fatal error) vanishes silently; check it (retry on "
                        "RD_KAFKA_RESP_ERR__QUEUE_FULL after rd_kafka_poll())",
                        name,
                        use == KDC_USE_DISCARDED ? "discarded"
                        : voided                 ? "stored and only cast to void"
                                                 : "stored but never read");
}

static void check_wrapper_call(kdc_rule_ctx_t *ctx, const carriers_t *c, const kdc_func_t *f,
                               const kdc_expr_t *call) {
    if (kdc_api_lookup(call))
        return;
    const kdc_func_t *g = kdc_program_find_callee(ctx->program, call->usr, f->tu);
    if (!g || !c->api[g->index])
        return;
    int voided = 0;
    kdc_use_t use = result_use(ctx, f, call, &voided);
    if (use == KDC_USE_USED)
        return;
    const char *api = c->api[g->index];
    if (!strncmp(api, "RdKafka::", 9))
        api += 9;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &g->loc, "this function returns the produce's result to its caller");
    kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n,
                    "the result of %s, which returns the result of %s, is %s: a message that was "
                    "not enqueued (queue full, too large, fatal error) vanishes silently; check it",
                    g->name, api,
                    use == KDC_USE_DISCARDED ? "discarded"
                    : voided                 ? "stored and only cast to void"
                                             : "stored but never read");
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_PRODUCE, check_produce);
    size_t nf = kdc_program_nfuncs(ctx->program);
    carriers_t c = {ctx, calloc(nf ? nf : 1, sizeof *c.api), NULL, NULL};
    if (!c.api)
        return;
    find_carriers(&c);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned k = 0; k < f->ncalls; k++)
            check_wrapper_call(ctx, &c, f, f->calls[k]);
    }
    free(c.api);
}

const kdc_rule_t kdc_rule_produce_result_ignored = {
    "produce-result-ignored",
    "return value of a produce call dropped, or producev errors read via rd_kafka_last_error()",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
