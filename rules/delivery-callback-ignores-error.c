/*
 * delivery-callback-ignores-error: a registered delivery-report callback that
 * never looks at the outcome (m->err, rd_kafka_message_status(),
 * rd_kafka_message_errstr(), C++ message.err()/status()/errstr(); the err
 * parameter of a legacy dr_cb) and never hands the message on. Registering a
 * callback is then only a formality: failed deliveries are counted as
 * delivered, or not counted at all.
 *
 * Confidence: high. Reported on the callback's definition, with a note on
 * its registration. Not reported when no delivery can reach it: every client
 * created with a configuration registering it is known and none produces (nor
 * is handed to code outside the analysis). Dispatchers that pass the message itself to other code
 * (which may read the error) are not reported: code outside the analysed
 * program, a call through a function pointer, a copy of the message. A
 * helper of the analysed program the message is passed to is followed: it
 * must look at the outcome or hand the message on in turn. Passing only a
 * field of the message (m->payload, m->_private) is not handing it on.
 */
#include "common/consumer_common.h"

#include <string.h>

#define DCB_MAX_DEPTH 8

typedef struct dcb_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f; /* the function examined: the callback or a helper it hands the message to */
    const char *msg;     /* the message parameter of f (NULL: none) */
    const char *err;     /* the err parameter of a legacy dr_cb (NULL: none) */
    int depth;
    const kdc_func_t **stack; /* functions being examined (recursion guard) */
    int looks;
    const kdc_expr_t *discarded[16]; /* `(void)err;` statements: not a read */
    size_t ndiscarded;
} dcb_ctx_t;

static int examine(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const char *msg, const char *err,
                   int depth, const kdc_func_t **stack);

static void find_discarded(const kdc_stmt_t *s, void *arg) {
    dcb_ctx_t *d = arg;
    if (s->kind == KDC_S_EXPR && s->expr && s->expr->kind == KDC_E_REF && d->ndiscarded < 16)
        d->discarded[d->ndiscarded++] = s->expr;
}

static int discarded(const dcb_ctx_t *d, const kdc_expr_t *e) {
    for (size_t i = 0; i < d->ndiscarded; i++)
        if (d->discarded[i] == e)
            return 1;
    return 0;
}

/* The message itself (m, *m, &message, (void *)m), not one of its fields. */
static int is_msg(const kdc_expr_t *e, const char *msg) {
    e = kdc_expr_strip(e);
    while (e && e->kind == KDC_E_UNARY && (e->op == KDC_OP_DEREF || e->op == KDC_OP_ADDR) &&
           e->nkids == 1)
        e = kdc_expr_strip(e->kids[0]);
    return msg && e && e->kind == KDC_E_REF && e->usr == msg;
}

static int is_outcome_call(const char *name) {
    static const char *const names[] = {"rd_kafka_message_status", "rd_kafka_message_errstr",
                                        "RdKafka::Message::err", "RdKafka::Message::status",
                                        "RdKafka::Message::errstr", NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

/* Does the call hand the message to code that may read its error? */
static int hands_on(dcb_ctx_t *d, const kdc_expr_t *e) {
    if (e->is_ctor)
        for (unsigned i = 0; i < e->nkids; i++)
            if (is_msg(e->kids[i], d->msg))
                return 1; /* wrapped in an object (RdKafka::MessageImpl msg(.., rkmessage, ..)) */
    if (!e->name || kdc_api_is_librdkafka(e) || kdc_api_lookup(e))
        return 0; /* librdkafka reads the message's headers, timestamp, ..: not its outcome */
    for (unsigned i = 0; i < e->nkids; i++) {
        if (!is_msg(e->kids[i], d->msg))
            continue;
        if (!*e->name || e->callee_expr)
            return 1; /* through a function pointer: code we cannot see */
        if (e->callee_system) {
            const char *base = strrchr(e->name, ':');
            base = base ? base + 1 : e->name;
            if (!strcmp(base, "operator()"))
                return 1; /* a std::function handler: code we cannot see */
            if (!strcmp(base, "memcpy") || !strcmp(base, "memmove") || strstr(base, "push") ||
                strstr(base, "emplace") || strstr(base, "insert"))
                return 1; /* a copy of the message (memcpy, a container), read later */
            continue;
        }
        const kdc_func_t *g =
            e->usr ? kdc_program_find_callee(d->ctx->program, e->usr, d->f->tu) : NULL;
        if (!g || !g->body || i >= g->nparams || d->depth >= DCB_MAX_DEPTH)
            return 1; /* outside the analysed program (a dispatcher) */
        int seen = 0;
        for (int k = 0; k <= d->depth; k++)
            seen |= d->stack[k] == g;
        if (!seen && examine(d->ctx, g, g->param_usrs[i], NULL, d->depth + 1, d->stack))
            return 1;
    }
    return 0;
}

static int visit(const kdc_expr_t *e, void *arg) {
    dcb_ctx_t *d = arg;
    if (d->looks)
        return 1;
    if (e->kind == KDC_E_MEMBER && e->name && !strcmp(e->name, "err") && e->usr &&
        strstr(e->usr, "rd_kafka_message_s"))
        d->looks = 1;
    else if (e->kind == KDC_E_CALL && e->name && is_outcome_call(e->name))
        d->looks = 1;
    else if (e->kind == KDC_E_REF && d->err && e->usr == d->err && !discarded(d, e))
        d->looks = 1; /* legacy dr_cb(rk, payload, len, err, opaque, msg_opaque) */
    else if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
             is_msg(e->kids[1], d->msg))
        d->looks = 1; /* copied or queued for later: whoever takes it may read the error */
    else if (e->kind == KDC_E_CALL && d->msg && hands_on(d, e))
        d->looks = 1;
    return d->looks;
}

static int examine(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const char *msg, const char *err,
                   int depth, const kdc_func_t **stack) {
    dcb_ctx_t d = {.ctx = ctx, .f = f, .msg = msg, .err = err, .depth = depth, .stack = stack};
    stack[depth] = f;
    kdc_stmt_walk(f->body, find_discarded, &d);
    kdc_func_walk_exprs(f, visit, &d);
    return d.looks;
}

static void check(kdc_rule_ctx_t *ctx) {
    const kdc_func_t **cbs;
    const kdc_expr_t **sites;
    size_t n = kdc_facts_dr_callbacks(ctx->facts, &cbs, &sites);
    for (size_t i = 0; i < n; i++) {
        const kdc_func_t *cb = cbs[i];
        const char *msg = NULL, *err = NULL;
        /* dr_msg_cb(rk, msg, opaque); C++ dr_cb(Message &);
         * legacy dr_cb(rk, payload, len, err, opaque, msg_opaque) */
        if (cb->class_usr && cb->nparams >= 1)
            msg = cb->param_usrs[0];
        else if (cb->nparams == 3)
            msg = cb->param_usrs[1];
        else if (cb->nparams == 6)
            err = cb->param_usrs[3];
        const kdc_func_t *stack[DCB_MAX_DEPTH + 1];
        if (!kdc_facts_dr_callback_reachable(ctx->facts, cb) || examine(ctx, cb, msg, err, 0, stack))
            continue; /* no delivery reaches it (its producers never produce), or it looks */
        kdc_notes_t notes = {0};
        if (sites[i])
            kdc_notes_add(&notes, &sites[i]->loc, "registered as the delivery-report callback here");
        kdc_rule_report(ctx, cb, &cb->loc, notes.v, notes.n,
                        "delivery-report callback %s never reads the delivery's outcome (m->err, "
                        "rd_kafka_message_status()): failed deliveries pass as delivered; check "
                        "the error and record it where the confirmation reads it",
                        cb->name);
    }
}

const kdc_rule_t kdc_rule_delivery_callback_ignores_error = {
    "delivery-callback-ignores-error",
    "delivery-report callback that never reads the delivery error or status",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
