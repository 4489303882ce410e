/*
 * unconfirmed-dlq-routing: a message is produced to a dead-letter queue and
 * the input offset is committed (or stored) on a path where nothing waited
 * for that DLQ message's delivery report. If the DLQ produce then fails, the
 * input is committed and the message exists nowhere.
 *
 * Confidence: high. Confirmation is a wait on the message's own delivery
 * report: a loop on state the delivery-report callback writes or on the
 * produce's opaque, a check of that state after rd_kafka_poll()/flush(), a
 * tracker wait (kdc_tracker_wait) or a synchronous confirmed-produce helper.
 * rd_kafka_flush() == 0 alone is not a confirmation. Helpers are followed:
 * one that produces to the DLQ and returns unconfirmed acts as the produce at
 * its call sites; one that commits acts as the commit.
 */
#include "api.h"
#include "rule.h"

typedef struct dlq_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    const kdc_expr_t *produce;
} dlq_ctx_t;

static void on_commit(void *arg, const kdc_func_t *f, const kdc_expr_t *commit) {
    dlq_ctx_t *d = arg;
    const kdc_facts_t *fx = d->ctx->facts;
    kdc_related_t rel[2];
    size_t nrel = 0;
    rel[nrel].loc = d->produce->loc;
    rel[nrel].message = kdc_api_lookup(d->produce)
                            ? "message produced to the dead-letter queue here"
                            : "message routed to the dead-letter queue through this call";
    nrel++;
    if (!kdc_api_lookup(d->produce)) {
        kdc_summary_t dummy = {0};
        const kdc_func_t *callee = kdc_program_find_callee(d->ctx->program, d->produce->usr, d->f->tu);
        const kdc_summary_t *s = callee ? kdc_facts_summary(fx, callee) : &dummy;
        if (s->pending_site) {
            rel[nrel].loc = s->pending_site->loc;
            rel[nrel].message = "the helper produces to the dead-letter queue here and returns "
                                "without waiting for the delivery report";
            nrel++;
        }
    }
    kdc_rule_report(d->ctx, f, &commit->loc, rel, nrel,
                    "input offset committed after routing a message to the dead-letter queue "
                    "without waiting for that message's delivery report; if the DLQ produce "
                    "fails the message is lost: wait for its report (opaque status + poll loop, "
                    "kdc_tracker_wait, kdc_produce_confirmed) before committing");
}

static void check(kdc_rule_ctx_t *ctx) {
    const kdc_facts_t *fx = ctx->facts;
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (!kdc_facts_is_dlq_produce(fx, f, call))
                continue;
            dlq_ctx_t d = {ctx, f, call};
            kdc_facts_walk_unconfirmed(fx, f, call, on_commit, &d);
        }
    }
}

const kdc_rule_t kdc_rule_unconfirmed_dlq_routing = {
    "unconfirmed-dlq-routing",
    "input committed after a dead-letter produce whose delivery was not confirmed",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
