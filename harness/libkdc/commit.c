/* Commit by message, never by position: kdc_commit_message() and
 * kdc_commit_message_async(); kdc_rewind_messages() for a batch that must
 * not be committed. */
#include <stdlib.h>
#include <string.h>

#include <kdc/commit.h>
#include <kdc/error.h>

#include "internal.h"

/* The result of one commit: the partition's error if the broker answered
 * for it, else the request's. */
static rd_kafka_resp_err_t partition_result(
    rd_kafka_resp_err_t err, const rd_kafka_topic_partition_list_t *offsets,
    const char *topic, int32_t partition) {
        for (int i = 0; offsets && i < offsets->cnt; i++) {
                const rd_kafka_topic_partition_t *p = &offsets->elems[i];

                if (p->partition == partition && strcmp(p->topic, topic) == 0)
                        return p->err ? p->err : err;
        }
        return err;
}

struct sync_result {
        const char *topic;
        int32_t partition;
        int served;
        rd_kafka_resp_err_t err;
};

static void sync_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                    rd_kafka_topic_partition_list_t *offsets, void *opaque) {
        struct sync_result *res = opaque;

        (void)rk;
        res->served = 1;
        res->err = partition_result(err, offsets, res->topic, res->partition);
}

/* Checks shared by both forms; builds the one-partition list. */
static int prepare(rd_kafka_t *consumer, const rd_kafka_message_t *msg,
                   const kdc_assignment_t *assignment, uint64_t epoch,
                   rd_kafka_topic_partition_list_t **listp,
                   rd_kafka_resp_err_t *errp) {
        const char *topic;

        *errp = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (!consumer || !msg || !msg->rkt)
                return KDC_ERR_INVALID;
        if (rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        /* An error event (e.g. __PARTITION_EOF) is not a processed message:
         * committing its offset + 1 could skip one. */
        if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR || msg->offset < 0)
                return KDC_ERR_INVALID;
        topic = rd_kafka_topic_name(msg->rkt);
        if (assignment &&
            kdc_assignment_check(assignment, topic, msg->partition, epoch)) {
                *errp = RD_KAFKA_RESP_ERR__STATE;
                return KDC_ERR_STALE;
        }
        *listp = rd_kafka_topic_partition_list_new(1);
        if (!*listp) {
                *errp = RD_KAFKA_RESP_ERR__FAIL;
                return KDC_ERR_NOMEM;
        }
        rd_kafka_topic_partition_list_add(*listp, topic, msg->partition)
            ->offset = msg->offset + 1;
        *errp = RD_KAFKA_RESP_ERR_NO_ERROR;
        return 0;
}

int kdc_commit_message(rd_kafka_t *consumer, const rd_kafka_message_t *msg,
                       const kdc_assignment_t *assignment, uint64_t epoch,
                       rd_kafka_resp_err_t *partition_err) {
        rd_kafka_topic_partition_list_t *list = NULL;
        struct sync_result res = {0};
        rd_kafka_resp_err_t err;
        int r;

        r = prepare(consumer, msg, assignment, epoch, &list, &err);
        if (r == 0) {
                res.topic = list->elems[0].topic;
                res.partition = list->elems[0].partition;
                /* NULL queue: served on a temporary queue inside the call. */
                err = rd_kafka_commit_queue(consumer, list, NULL, sync_cb,
                                            &res);
                if (res.served)
                        err = res.err;
                r = err == RD_KAFKA_RESP_ERR_NO_ERROR ? 0 : KDC_ERR_COMMIT;
                rd_kafka_topic_partition_list_destroy(list);
        }
        kdc__stats_commit(kdc__assignment_stats(assignment), r, err);
        if (partition_err)
                *partition_err = err;
        return r;
}

/* One scheduled asynchronous commit. */
struct async_ctx {
        kdc_stats_t *stats;
        kdc_commit_cb_t *cb;
        void *opaque;
        int32_t partition;
        int64_t offset;
        char topic[]; /* NUL-terminated */
};

static void async_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                     rd_kafka_topic_partition_list_t *offsets, void *opaque) {
        struct async_ctx *ctx = opaque;
        rd_kafka_resp_err_t perr =
            partition_result(err, offsets, ctx->topic, ctx->partition);

        kdc__stats_commit(ctx->stats, perr ? KDC_ERR_COMMIT : 0, perr);
        if (ctx->cb)
                ctx->cb(rk, ctx->topic, ctx->partition, ctx->offset, perr,
                        ctx->opaque);
        free(ctx);
}

int kdc_commit_message_async(rd_kafka_t *consumer,
                             const rd_kafka_message_t *msg,
                             const kdc_assignment_t *assignment,
                             uint64_t epoch, kdc_commit_cb_t *cb,
                             void *opaque) {
        rd_kafka_topic_partition_list_t *list = NULL;
        rd_kafka_queue_t *queue;
        struct async_ctx *ctx;
        rd_kafka_resp_err_t err;
        size_t tlen;
        int r;

        if ((r = prepare(consumer, msg, assignment, epoch, &list, &err))) {
                kdc__stats_commit(kdc__assignment_stats(assignment), r, err);
                return r;
        }
        tlen = strlen(list->elems[0].topic) + 1;
        ctx = malloc(sizeof(*ctx) + tlen);
        queue = rd_kafka_queue_get_consumer(consumer);
        if (!ctx || !queue) {
                r = ctx ? KDC_ERR_COMMIT : KDC_ERR_NOMEM; /* no group */
                free(ctx);
                if (queue)
                        rd_kafka_queue_destroy(queue);
                rd_kafka_topic_partition_list_destroy(list);
                return r;
        }
        ctx->stats = kdc__assignment_stats(assignment);
        ctx->cb = cb;
        ctx->opaque = opaque;
        ctx->partition = list->elems[0].partition;
        ctx->offset = list->elems[0].offset;
        memcpy(ctx->topic, list->elems[0].topic, tlen);

        err = rd_kafka_commit_queue(consumer, list, queue, async_cb, ctx);
        rd_kafka_queue_destroy(queue); /* the request holds its own ref */
        rd_kafka_topic_partition_list_destroy(list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR) {
                free(ctx); /* not scheduled: the callback never runs */
                kdc__stats_commit(kdc__assignment_stats(assignment),
                                  KDC_ERR_COMMIT, err);
                return KDC_ERR_COMMIT;
        }
        return 0;
}

/* The batch's partitions, each at the first offset of it in msgs. 0,
 * KDC_ERR_INVALID or KDC_ERR_NOMEM; *partsp NULL on failure. */
static int batch_partitions(rd_kafka_message_t *const *msgs, size_t count,
                            rd_kafka_topic_partition_list_t **partsp) {
        rd_kafka_topic_partition_list_t *parts;

        *partsp = NULL;
        if (!(parts =
                  rd_kafka_topic_partition_list_new(count ? (int)count : 1)))
                return KDC_ERR_NOMEM;
        for (size_t i = 0; i < count; i++) {
                const rd_kafka_message_t *m = msgs[i];
                rd_kafka_topic_partition_t *p;
                const char *topic;

                if (!m || !m->rkt) {
                        rd_kafka_topic_partition_list_destroy(parts);
                        return KDC_ERR_INVALID;
                }
                if (m->err != RD_KAFKA_RESP_ERR_NO_ERROR)
                        continue; /* an error event, not a message */
                topic = rd_kafka_topic_name(m->rkt);
                p = rd_kafka_topic_partition_list_find(parts, topic,
                                                       m->partition);
                if (!p) {
                        p = rd_kafka_topic_partition_list_add(parts, topic,
                                                              m->partition);
                        p->offset = m->offset;
                } else if (m->offset < p->offset) {
                        p->offset = m->offset;
                }
        }
        *partsp = parts;
        return 0;
}

int kdc_rewind_messages(rd_kafka_t *consumer, rd_kafka_message_t *const *msgs,
                        size_t count, int timeout_ms,
                        rd_kafka_resp_err_t *errp) {
        rd_kafka_topic_partition_list_t *parts = NULL, *first = NULL;
        rd_kafka_resp_err_t err;
        rd_kafka_error_t *error;
        int r;

        if (errp)
                *errp = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!consumer || rd_kafka_type(consumer) != RD_KAFKA_CONSUMER ||
            (!msgs && count) || count > INT32_MAX || timeout_ms == 0 ||
            timeout_ms < -1)
                return KDC_ERR_INVALID;
        if ((r = batch_partitions(msgs, count, &parts)))
                return r;
        if (parts->cnt == 0)
                goto out;
        if (!(first = rd_kafka_topic_partition_list_copy(parts))) {
                r = KDC_ERR_NOMEM;
                goto out;
        }
        if ((err = rd_kafka_committed(consumer, parts, timeout_ms))) {
                r = err == RD_KAFKA_RESP_ERR__TIMED_OUT ? KDC_ERR_TIMEOUT
                                                        : KDC_ERR_COMMIT;
                goto fail;
        }
        for (int i = 0; i < parts->cnt; i++) {
                rd_kafka_topic_partition_t *p = &parts->elems[i];

                if ((err = p->err)) {
                        r = KDC_ERR_COMMIT;
                        goto fail;
                }
                /* Nothing committed yet: replay the batch from its start. */
                if (p->offset < 0)
                        p->offset = rd_kafka_topic_partition_list_find(
                                        first, p->topic, p->partition)
                                        ->offset;
        }
        if ((error = rd_kafka_seek_partitions(consumer, parts, timeout_ms))) {
                err = rd_kafka_error_code(error);
                rd_kafka_error_destroy(error);
                r = KDC_ERR_COMMIT;
                goto fail;
        }
        for (int i = 0; i < parts->cnt; i++)
                if ((err = parts->elems[i].err)) {
                        r = KDC_ERR_COMMIT;
                        goto fail;
                }
        goto out;
fail:
        if (errp)
                *errp = err;
out:
        if (first)
                rd_kafka_topic_partition_list_destroy(first);
        rd_kafka_topic_partition_list_destroy(parts);
        return r;
}
