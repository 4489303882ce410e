/*
 * delivery-callback-ignores-error: a registered delivery-report callback that
 * never looks at the outcome (m->err, rd_kafka_message_status(), C++
 * message.err()/status(); the err parameter of a legacy dr_cb) and never
 * hands the message on. Registering a callback is then only a formality:
 * failed deliveries are counted as delivered, or not counted at all.
 *
 * Confidence: high. Reported on the callback's definition, with a note on
 * its registration. Dispatchers that pass the message to other code (which
 * may read the error) are not reported.
 */
#include "consumer_common.h"

#include <string.h>

typedef struct dcb_ctx {
    const kdc_func_t *cb;
    const char *msg; /* the message parameter */
    int looks;
    const kdc_expr_t *discarded[16]; /* `(void)err;` statements: not a read */
    size_t ndiscarded;
} dcb_ctx_t;

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

static int visit(const kdc_expr_t *e, void *arg) {
    dcb_ctx_t *d = arg;
    if (e->kind == KDC_E_MEMBER && e->name && !strcmp(e->name, "err") && e->usr &&
        strstr(e->usr, "rd_kafka_message_s"))
        d->looks = 1;
    else if (e->kind == KDC_E_CALL && e->name &&
             (!strcmp(e->name, "rd_kafka_message_status") ||
              !strcmp(e->name, "RdKafka::Message::err") ||
              !strcmp(e->name, "RdKafka::Message::status") ||
              !strcmp(e->name, "RdKafka::Message::errstr")))
        d->looks = 1;
    else if (e->kind == KDC_E_REF && e->ref == KDC_REF_PARAM && e->param_index == 3 &&
             d->cb->nparams == 6 && !discarded(d, e)) /* legacy dr_cb(rk, payload, len, err, opaque, msg_opaque) */
        d->looks = 1;
    else if (e->kind == KDC_E_CALL && d->msg && !e->callee_system &&
             !kdc_api_is_librdkafka(e) && *e->name) {
        for (unsigned i = 0; i < e->nkids && !d->looks; i++)
            d->looks = kdc_mentions(e->kids[i], d->msg); /* handed on */
    }
    return d->looks;
}

static void check(kdc_rule_ctx_t *ctx) {
    const kdc_func_t **cbs;
    const kdc_expr_t **sites;
    size_t n = kdc_facts_dr_callbacks(ctx->facts, &cbs, &sites);
    for (size_t i = 0; i < n; i++) {
        const kdc_func_t *cb = cbs[i];
        dcb_ctx_t d = {.cb = cb};
        kdc_stmt_walk(cb->body, find_discarded, &d);
        /* dr_msg_cb(rk, msg, opaque); C++ dr_cb(Message &) */
        if (cb->class_usr && cb->nparams >= 1)
            d.msg = cb->param_usrs[0];
        else if (cb->nparams == 3)
            d.msg = cb->param_usrs[1];
        kdc_func_walk_exprs(cb, visit, &d);
        if (d.looks)
            continue;
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
