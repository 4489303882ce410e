/*
 * queue-full-dropped: RD_KAFKA_RESP_ERR__QUEUE_FULL from a produce treated
 * as final. The local queue is full (queue.buffering.max.messages or
 * .kbytes reached) because delivery reports were not served fast enough: the
 * cure is to serve them (rd_kafka_poll) and produce the same record again.
 * Code that logs the failure and goes on to the next record, or commits the
 * input, drops the record (confluent-kafka-python#235).
 *
 * Confidence: medium. From each librdkafka produce (rd_kafka_produce,
 * producev, produceva, C++ produce; not one that blocks on a full queue,
 * RD_KAFKA_MSG_F_BLOCK), the paths where its result says it failed and the
 * error may be QUEUE_FULL are followed (rules/common/produce_failure.h): the
 * finding is where such a path goes on to another record, or commits or
 * stores the input's offset. Not reported: a retry (the path comes back to
 * the same produce without moving on, with or without a poll), a failure
 * handed to other code (a retry queue, a dead-letter produce), a seek back,
 * a failure that ends the program or leaves the loop, a comparison that
 * takes QUEUE_FULL out (`if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL) {
 * rd_kafka_poll(rk, 100); goto retry; }`), and a failure returned to a
 * caller that stops, retries or cannot be followed. A dropped result is
 * produce-result-ignored's.
 */
#include "common/produce_failure.h"

static void report(kdc_rule_ctx_t *ctx, const kdc_produce_loss_t *l, void *arg) {
    (void)arg;
    kdc_notes_t notes = {0};
    if (l->call != l->produce)
        kdc_notes_add(&notes, &l->produce->loc, "the produce whose failure is not retried");
    if (l->at)
        kdc_notes_add(&notes, &l->at->loc,
                      l->kind == KDC_LOSS_COMMIT ? "the input is committed here"
                                                 : "the next record is taken here");
    const char *what = l->kind == KDC_LOSS_COMMIT
                           ? "the input's offset is committed past the dropped record"
                           : "the loop goes on to the next record";
    const char *callee = l->call->name && *l->call->name ? l->call->name : "the called function";
    const char *how = l->known ? "is handled as final" : "is handled like any other error";
    if (l->call == l->produce)
        kdc_rule_report(ctx, l->func, &l->call->loc, notes.v, notes.n,
                        "RD_KAFKA_RESP_ERR__QUEUE_FULL from %s (the local queue is full: delivery "
                        "reports are not served fast enough) %s: the record is dropped and %s; "
                        "serve delivery reports (rd_kafka_poll) and produce the same record again",
                        kdc_api_display_name(l->produce), how, what);
    else if (l->swallowed)
        kdc_rule_report(ctx, l->func, &l->call->loc, notes.v, notes.n,
                        "%s does not tell its caller that %s failed, so on "
                        "RD_KAFKA_RESP_ERR__QUEUE_FULL (the local queue is full) the record is "
                        "dropped and %s; retry in %s: serve delivery reports (rd_kafka_poll) and "
                        "produce the same record again",
                        callee, kdc_api_display_name(l->produce), what, callee);
    else
        kdc_rule_report(ctx, l->func, &l->call->loc, notes.v, notes.n,
                        "%s returns the failure of %s, and on RD_KAFKA_RESP_ERR__QUEUE_FULL (the "
                        "local queue is full) this caller drops the record: %s; serve delivery "
                        "reports (rd_kafka_poll) and produce the same record again",
                        callee, kdc_api_display_name(l->produce), what);
}

static void check_produce(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_api_t *api) {
    (void)api;
    if (!kdc_is_single_produce(call) || kdc_produce_blocks(call))
        return;
    kdc_produce_failure_losses(ctx, f, call, KDC_ERR_QUEUE_FULL, KDC_ERRNO_ENOBUFS, report, NULL);
}

static void check(kdc_rule_ctx_t *ctx) {
    kdc_rule_for_each_api_call(ctx, KDC_API_PRODUCE, check_produce);
}

const kdc_rule_t kdc_rule_queue_full_dropped = {
    .name = "queue-full-dropped",
    .summary = "RD_KAFKA_RESP_ERR__QUEUE_FULL from a produce treated as final: the record dropped "
               "instead of served reports and a retry",
    .severity = KDC_SEV_WARNING,
    .confidence = "medium",
    .in_default = 1,
    .check = check,
};
