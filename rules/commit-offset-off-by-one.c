/*
 * commit-offset-off-by-one: an offset list built from a message's own offset
 * (msg->offset) and then committed, stored (rd_kafka_offsets_store) or sent
 * to a transaction. Kafka stores the NEXT offset to read: committing
 * msg->offset re-delivers the last processed message after every restart or
 * rebalance (and the inverse mistake, subtracting one on read-back, skips
 * one).
 *
 * Confidence: high. Reported on the msg->offset expression assigned to a
 * partition's offset (C: rd_kafka_topic_partition_t.offset; C++:
 * TopicPartition::create(..., msg->offset()) or set_offset(msg->offset())) in
 * a function that commits, stores or sends an offset list. Not reported:
 * offset + 1, rd_kafka_offset_store(rkt, p, msg->offset) and
 * rd_kafka_commit_message() (they add 1 themselves), rd_kafka_position().
 */
#include "rule.h"

#include <string.h>

/* rd_kafka_message_t.offset, or C++ Message::offset() */
static int is_message_offset(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return 0;
    if (e->kind == KDC_E_MEMBER)
        return e->usr && strstr(e->usr, "@S@rd_kafka_message_s@FI@offset");
    return e->kind == KDC_E_CALL && e->name && !strcmp(e->name, "RdKafka::Message::offset");
}

static int is_partition_offset(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && e->kind == KDC_E_MEMBER && e->usr &&
           strstr(e->usr, "@S@rd_kafka_topic_partition_s@FI@offset");
}

/* Does f hand an offset list to a commit, an offset store or a transaction? */
static int uses_offset_list(const kdc_func_t *f) {
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
        if (!api || api->list == KDC_ARG_NONE ||
            !(api->roles & (KDC_API_COMMIT | KDC_API_STORE | KDC_API_TXN)))
            continue;
        const kdc_expr_t *list = kdc_api_arg(f->calls[c], api->list);
        if (list && !kdc_expr_is_null(list))
            return 1;
        if (f->calls[c]->is_method && f->calls[c]->nkids) /* C++ commitSync(vector) */
            return 1;
    }
    return 0;
}

typedef struct obo_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
} obo_ctx_t;

static void report(obo_ctx_t *o, const kdc_expr_t *offset) {
    kdc_rule_report(o->ctx, o->f, &offset->loc, NULL, 0,
                    "the committed offset is the message's own offset: Kafka stores the next "
                    "offset to read, so this message is delivered again after a restart or "
                    "rebalance; use offset + 1 (or rd_kafka_commit_message)");
}

static int visit(const kdc_expr_t *e, void *arg) {
    obo_ctx_t *o = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        is_partition_offset(e->kids[0]) && is_message_offset(e->kids[1]))
        report(o, kdc_expr_strip(e->kids[1]));
    if (e->kind == KDC_E_CALL && e->name) {
        if (!strcmp(e->name, "RdKafka::TopicPartition::create") && e->nkids >= 3 &&
            is_message_offset(e->kids[2]))
            report(o, kdc_expr_strip(e->kids[2]));
        if (!strcmp(e->name, "RdKafka::TopicPartition::set_offset") && e->nkids >= 1 &&
            is_message_offset(e->kids[0]))
            report(o, kdc_expr_strip(e->kids[0]));
    }
    return 0;
}

static void check(kdc_rule_ctx_t *ctx) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        if (!uses_offset_list(f))
            continue;
        obo_ctx_t o = {ctx, f};
        kdc_func_walk_exprs(f, visit, &o);
    }
}

const kdc_rule_t kdc_rule_commit_offset_off_by_one = {
    "commit-offset-off-by-one",
    "offset list built from msg->offset (without + 1) and committed or stored",
    KDC_SEV_WARNING,
    "high",
    1,
    check,
};
