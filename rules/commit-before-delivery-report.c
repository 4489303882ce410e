/*
 * commit-before-delivery-report: consume-process-produce where the input's
 * commit or offset store (or a configured "ack" of the input upstream)
 * follows the output produce on some path with no confirmation of that
 * produce in between. If the output's delivery then fails, the input is
 * already committed: the event is gone from both sides.
 *
 * Confidence: high. The same path walk as unconfirmed-dlq-routing, for
 * produces that are not dead-letter routing. Confirmation: a wait on the
 * message's delivery report (loop on delivery state or on the produce's
 * opaque, a check of that state after poll/flush, kdc_tracker_wait, a helper
 * that confirms on every path). Transactional offsets
 * (send_offsets_to_transaction + commit_transaction) are not commits here.
 * A program that does not consume from Kafka (a relay reading a socket, a
 * queue, a database log) is checked for the configured ack/commit functions
 * of its upstream input only.
 */
#include "rule.h"

typedef struct cbd_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_expr_t *produce;
    int consumes; /* the program of the function consumes from Kafka */
} cbd_ctx_t;

static void on_commit(void *arg, const kdc_func_t *f, const kdc_expr_t *commit) {
    cbd_ctx_t *c = arg;
    /* A program that does not consume from Kafka has no input offsets; its
     * input is acknowledged upstream: by a configured ack (or commit) function,
     * directly or in a helper, or by what a framework's callback returns or
     * calls (a log shipper's output plugin: acknowledge in the configuration,
     * and the rsyslog, syslog-ng and fluent-bit presets). */
    if (!c->consumes && kdc_api_lookup(commit))
        return;
    /* an output of another origin (test data seeded before the consumer reads,
     * another sub-test's producer) says nothing about this input */
    if (!kdc_facts_output_tied_to_input(c->ctx->facts, f, c->produce, commit))
        return;
    kdc_notes_t notes = {0};
    kdc_notes_add(&notes, &c->produce->loc,
                  kdc_api_lookup(c->produce) ? "output produced here"
                                             : "output produced through this call");
    int ack = commit->kind != KDC_E_CALL || kdc_options_has_role(c->ctx->opts, commit, KDC_ROLE_ACK) ||
              kdc_facts_call_acks(c->ctx->facts, commit);
    kdc_rule_report(c->ctx, f, &commit->loc, notes.v, notes.n,
                    "input %s after producing its output without waiting for that "
                    "output's delivery report; if the delivery fails the event is lost on both "
                    "sides: confirm the delivery (per-message status + poll loop, "
                    "kdc_tracker_wait, kdc_produce_confirmed) before committing",
                    ack ? "acknowledged upstream" : "committed");
}

static void check(kdc_rule_ctx_t *ctx) {
    int consumes = kdc_facts_program_consumes(ctx->facts);
    if (!consumes && !ctx->opts->functions[KDC_ROLE_ACK] && !ctx->opts->functions[KDC_ROLE_COMMIT] &&
        !ctx->opts->ack_returns && !ctx->opts->ack_calls)
        return;
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        const kdc_summary_t *s = NULL;
        int f_consumes = consumes && kdc_facts_func_program_consumes(ctx->facts, f);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            int produce = api && (api->roles & KDC_API_PRODUCE);
            if (!api && !kdc_options_has_role(ctx->opts, call, KDC_ROLE_PRODUCE)) {
                const kdc_func_t *callee = kdc_program_find_callee(ctx->program, call->usr, f->tu);
                s = callee ? kdc_facts_summary(ctx->facts, callee) : NULL;
                produce = s && s->pending_produce;
            } else if (!api) {
                produce = 1;
            }
            if (!produce || kdc_facts_is_dlq_produce(ctx->facts, f, call))
                continue; /* dead-letter routing: unconfirmed-dlq-routing's case */
            cbd_ctx_t cc = {ctx, call, f_consumes};
            kdc_facts_walk_unconfirmed(ctx->facts, f, call, on_commit, &cc);
        }
    }
}

const kdc_rule_t kdc_rule_commit_before_delivery_report = {
    "commit-before-delivery-report",
    "input committed after its output produce with no confirmation of that delivery",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
