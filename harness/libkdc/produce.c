/* kdc_produce_confirmed(): produce one message and wait for its own
 * delivery report. */
#include <stdatomic.h>
#include <stdlib.h>

#include <kdc/error.h>
#include <kdc/produce.h>

#include "internal.h"

/* Per-call status record, the message's per-message opaque. It is on the
 * heap, not the caller's stack, because a call that times out returns while
 * the message is still in flight: the late report must find live memory.
 * Two references: the waiting call and the pending report; the last one to
 * let go frees it. */
struct kdc__confirm {
        struct kdc__dr_target target; /* first: the per-message opaque */
        atomic_int refcnt;
        atomic_int done;         /* release-stored after err and status */
        rd_kafka_resp_err_t err; /* the report's error */
        rd_kafka_msg_status_t status;
};

static void kdc__confirm_unref(struct kdc__confirm *c) {
        if (atomic_fetch_sub_explicit(&c->refcnt, 1, memory_order_acq_rel) ==
            1) {
                c->target.magic = 0;
                free(c);
        }
}

/* Runs inside kdc_dr_msg_record(), on whichever thread polls the
 * producer. */
void kdc__confirm_record(struct kdc__dr_target *target,
                         const struct kdc__report *r) {
        struct kdc__confirm *c = (struct kdc__confirm *)target;

        c->err = r->err;
        c->status = r->status;
        atomic_store_explicit(&c->done, 1, memory_order_release);
        kdc__confirm_unref(c);
}

static int kdc__confirm_done(struct kdc__confirm *c) {
        return atomic_load_explicit(&c->done, memory_order_acquire);
}

static int kdc__set_err(rd_kafka_resp_err_t *delivery_err,
                        rd_kafka_resp_err_t err, int r) {
        if (delivery_err)
                *delivery_err = err;
        return r;
}

int kdc__produce_confirmed(rd_kafka_t *rk, const char *topic,
                           int32_t partition, const void *key, size_t key_len,
                           const void *value, size_t value_len,
                           rd_kafka_headers_t *headers, int timeout_ms,
                           rd_kafka_resp_err_t *delivery_err) {
        struct kdc__confirm *c;
        rd_kafka_resp_err_t err;
        int64_t deadline;
        int r;

        if (!rk ||
            !kdc__message_args_valid(topic, key, key_len, value, value_len,
                                     timeout_ms)) {
                r = KDC_ERR_INVALID;
                err = RD_KAFKA_RESP_ERR__INVALID_ARG;
                goto refused;
        }
        if ((r = kdc__producer_check(rk))) {
                err = r == KDC_ERR_CONF ? RD_KAFKA_RESP_ERR__NOT_CONFIGURED
                                        : RD_KAFKA_RESP_ERR__INVALID_ARG;
                goto refused;
        }
        deadline = kdc__deadline(timeout_ms);

        c = calloc(1, sizeof(*c));
        if (!c) {
                r = KDC_ERR_NOMEM;
                err = RD_KAFKA_RESP_ERR__FAIL;
                goto refused;
        }
        c->target.magic = KDC__DR_TARGET_MAGIC;
        c->target.kind = KDC__DR_CONFIRM;
        atomic_init(&c->refcnt, 2);
        atomic_init(&c->done, 0);

        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         headers, &c->target, deadline, timeout_ms, &err);
        if (r) {
                free(c); /* not enqueued: no report will come */
                goto refused;
        }

        while (!kdc__confirm_done(c) && kdc__now_ms() < deadline)
                kdc__serve(rk, c, kdc__poll_slice(deadline));
        if (!kdc__confirm_done(c))
                rd_kafka_poll(rk, 0); /* one last non-blocking serve */

        if (!kdc__confirm_done(c)) {
                kdc__confirm_unref(c); /* the late report frees it */
                return kdc__set_err(delivery_err, RD_KAFKA_RESP_ERR__TIMED_OUT,
                                    KDC_ERR_TIMEOUT);
        }
        err = c->err;
        r = err == RD_KAFKA_RESP_ERR_NO_ERROR &&
                    c->status == RD_KAFKA_MSG_STATUS_PERSISTED
                ? 0
                : KDC_ERR_DELIVERY;
        kdc__confirm_unref(c);
        return kdc__set_err(delivery_err, err, r);

refused:
        /* Not enqueued: the headers are still ours (producev semantics). */
        if (headers)
                rd_kafka_headers_destroy(headers);
        return kdc__set_err(delivery_err, err, r);
}

int kdc_produce_confirmed(rd_kafka_t *rk, const char *topic, int32_t partition,
                          const void *key, size_t key_len, const void *value,
                          size_t value_len, int timeout_ms,
                          rd_kafka_resp_err_t *delivery_err) {
        return kdc__produce_confirmed(rk, topic, partition, key, key_len,
                                      value, value_len, NULL, timeout_ms,
                                      delivery_err);
}
