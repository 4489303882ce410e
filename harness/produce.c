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
        atomic_int done;         /* release-stored after err */
        rd_kafka_resp_err_t err; /* the report's error */
};

static void kdc__confirm_unref(struct kdc__confirm *c) {
        if (atomic_fetch_sub_explicit(&c->refcnt, 1, memory_order_acq_rel) ==
            1) {
                c->target.magic = 0;
                free(c);
        }
}

/* Runs inside kdc_dr_msg_cb(), on whichever thread polls the producer. */
static void kdc__confirm_on_report(struct kdc__dr_target *target,
                                   const rd_kafka_message_t *rkmessage) {
        struct kdc__confirm *c = (struct kdc__confirm *)target;

        c->err = rkmessage->err;
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

int kdc_produce_confirmed(rd_kafka_t *rk, const char *topic, int32_t partition,
                          const void *key, size_t key_len, const void *value,
                          size_t value_len, int timeout_ms,
                          rd_kafka_resp_err_t *delivery_err) {
        struct kdc__confirm *c;
        rd_kafka_resp_err_t err;
        int64_t deadline;
        int r;

        if (!rk ||
            !kdc__message_args_valid(topic, key, key_len, value, value_len,
                                     timeout_ms))
                return kdc__set_err(delivery_err,
                                    RD_KAFKA_RESP_ERR__INVALID_ARG,
                                    KDC_ERR_INVALID);
        if ((r = kdc__producer_check(rk)))
                return kdc__set_err(delivery_err,
                                    r == KDC_ERR_CONF
                                        ? RD_KAFKA_RESP_ERR__NOT_CONFIGURED
                                        : RD_KAFKA_RESP_ERR__INVALID_ARG,
                                    r);
        deadline = kdc__deadline(timeout_ms);

        c = calloc(1, sizeof(*c));
        if (!c)
                return kdc__set_err(delivery_err, RD_KAFKA_RESP_ERR__FAIL,
                                    KDC_ERR_NOMEM);
        c->target.magic = KDC__DR_TARGET_MAGIC;
        c->target.on_report = kdc__confirm_on_report;
        atomic_init(&c->refcnt, 2);
        atomic_init(&c->done, 0);

        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         NULL, &c->target, deadline, &err);
        if (r) {
                free(c); /* not enqueued: no report will come */
                return kdc__set_err(delivery_err, err, r);
        }

        while (!kdc__confirm_done(c) && kdc__now_ms() < deadline)
                rd_kafka_poll(rk, kdc__poll_slice(deadline));
        if (!kdc__confirm_done(c))
                rd_kafka_poll(rk, 0); /* one last non-blocking serve */

        if (!kdc__confirm_done(c)) {
                kdc__confirm_unref(c); /* the late report frees it */
                return kdc__set_err(delivery_err, RD_KAFKA_RESP_ERR__TIMED_OUT,
                                    KDC_ERR_TIMEOUT);
        }
        err = c->err;
        kdc__confirm_unref(c);
        return kdc__set_err(delivery_err, err,
                            err == RD_KAFKA_RESP_ERR_NO_ERROR
                                ? 0
                                : KDC_ERR_DELIVERY);
}
