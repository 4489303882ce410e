/* kdc_dr_msg_cb(), kdc_dr_msg_record() and the produce plumbing shared by
 * the tracker, the synchronous confirmed produce and DLQ routing. */
#include <stdio.h>
#include <string.h>
#include <time.h>

#include <kdc/delivery.h>
#include <kdc/error.h>

#include "internal.h"

/* What kdc__serve() on this thread waits for: a tracker or a confirm
 * record; NULL outside it. initial-exec: one load on the report path. */
static __thread const void *kdc__awaited
    __attribute__((tls_model("initial-exec")));
/* Whether kdc__yield_if_awaited() called rd_kafka_yield() during the
 * innermost kdc__serve() on this thread. */
static __thread int kdc__yielded __attribute__((tls_model("initial-exec")));

/* Called from a delivery report on this thread, after recording it: when the
 * thread is inside kdc__serve() for that very target and the target has
 * nothing pending any more (tracker NULL: a confirm record, done by its one
 * report), stop the dispatcher so the waiter returns now instead of at the
 * end of its slice. The target is alive: its waiter holds a reference. */
static void kdc__yield_if_awaited(rd_kafka_t *rk, const void *target,
                                  const kdc_tracker_t *tracker) {
        if (kdc__awaited != target)
                return;
        if (!tracker || kdc_tracker_pending(tracker) == 0) {
                kdc__yielded = 1;
                rd_kafka_yield(rk);
        }
}

/* rd_kafka_yield() sets a per-thread flag that librdkafka leaves set when
 * the dispatcher it stopped returns. If libkdc's wait runs inside one of
 * the application's own dispatchers (a confirmed produce or DLQ route from
 * the application's dr_msg_cb, consume_cb, ...), that dispatcher then sees
 * the flag when the callback returns and stops too: the application's
 * rd_kafka_flush() returned __TIMED_OUT at once with reports unserved.
 * Polling an empty queue of our own clears the flag (every librdkafka
 * dispatcher, rd_kafka_queue_poll() included, resets it when it starts)
 * without serving anything. Only after a yield: once per wait. */
static void kdc__unyield(rd_kafka_t *rk) {
        rd_kafka_queue_t *q = rd_kafka_queue_new(rk);
        rd_kafka_event_t *ev;

        if (!q)
                return;
        if ((ev = rd_kafka_queue_poll(q, 0)))
                rd_kafka_event_destroy(ev); /* none: nobody else has q */
        rd_kafka_queue_destroy(q);
}

void kdc__serve(rd_kafka_t *rk, const void *awaited, int slice_ms) {
        const void *outer = kdc__awaited;
        int outer_yielded = kdc__yielded;

        kdc__awaited = awaited;
        kdc__yielded = 0;
        /* flush(), not poll(): it serves delivery reports like poll() and
         * also makes the broker threads ignore linger.ms while it runs, so
         * what the waiter waits for is sent now rather than when a batch
         * fills or lingers out (5 ms by default: a confirmed produce took
         * 5.2 ms on the mock cluster with poll()). Its own result counts
         * every message of rk, not ours: ignored. It returns at the end of
         * the slice, when rk has nothing outstanding, or when
         * kdc__yield_if_awaited() stops it; a report served by another
         * thread is only seen when it returns: short slices. */
        (void)rd_kafka_flush(rk, slice_ms < KDC__FLUSH_SLICE_MS
                                     ? slice_ms
                                     : KDC__FLUSH_SLICE_MS);
        /* Our yield stops our flush and nothing around it. */
        if (kdc__yielded)
                kdc__unyield(rk);
        kdc__awaited = outer;
        kdc__yielded = outer_yielded;
        /* A serve nested in an outer one that had already yielded (its
         * callback went on to wait here): flush() cleared that yield. */
        if (outer_yielded)
                rd_kafka_yield(rk);
}

int kdc_dr_msg_record(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage,
                      void **opaquep) {
        struct kdc__dr_target *target;
        kdc_tracker_t *tracker;
        struct kdc__report r;
        void *app = NULL;

        if (opaquep)
                *opaquep = NULL;
        if (!rkmessage || !rkmessage->_private)
                return KDC_ERR_NOENT; /* not produced through libkdc */
        target = rkmessage->_private;
        if (target->magic != KDC__DR_TARGET_MAGIC)
                return KDC_ERR_NOENT;

        if (target->kind == KDC__DR_TRACKER &&
            rkmessage->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_message_status(rkmessage) ==
                RD_KAFKA_MSG_STATUS_PERSISTED) {
                /* The common case, kept short: a confirmed message of
                 * kdc_tracker_produce() (no handle, nothing to list), the
                 * same test as kdc__report_confirmed(). */
                kdc__tracker_confirmed((kdc_tracker_t *)target);
                kdc__yield_if_awaited(rk, target, (kdc_tracker_t *)target);
                return 0;
        }
        memset(&r, 0, sizeof(r));
        r.err = rkmessage->err;
        r.status = rd_kafka_message_status(rkmessage);
        r.partition = rkmessage->partition;
        if (!kdc__report_confirmed(&r)) {
                /* Only failures are listed: the common path reads no more. */
                r.topic = rkmessage->rkt ? rd_kafka_topic_name(rkmessage->rkt)
                                         : NULL;
                r.key = rkmessage->key;
                r.key_len = rkmessage->key ? rkmessage->key_len : 0;
        }

        switch (target->kind) {
        case KDC__DR_TRACKER:
        case KDC__DR_TRACK:
                /* The tracker, read before the record recycles a handle. */
                tracker = kdc__tracker_of(target);
                app = kdc__tracker_record(target, &r);
                kdc__yield_if_awaited(rk, tracker, tracker);
                break;
        case KDC__DR_CONFIRM:
                kdc__confirm_record(target, &r);
                kdc__yield_if_awaited(rk, target, NULL);
                break;
        default:
                return KDC_ERR_NOENT;
        }
        if (opaquep)
                *opaquep = app;
        return 0;
}

void kdc_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *rkmessage,
                   void *opaque) {
        (void)opaque;
        (void)kdc_dr_msg_record(rk, rkmessage, NULL);
}

int64_t kdc__now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int64_t kdc__deadline(int timeout_ms) {
        if (timeout_ms < 0)
                return INT64_MAX;
        return kdc__now_ms() + timeout_ms;
}

int kdc__poll_slice(int64_t deadline) {
        int64_t left;

        if (deadline == INT64_MAX)
                return KDC__POLL_SLICE_MS;
        left = deadline - kdc__now_ms();
        if (left <= 0)
                return 0;
        return left < KDC__POLL_SLICE_MS ? (int)left : KDC__POLL_SLICE_MS;
}

int kdc__producer_check(rd_kafka_t *rk) {
        const rd_kafka_conf_t *conf;
        char have[64];
        size_t size;

        if (rd_kafka_type(rk) != RD_KAFKA_PRODUCER)
                return KDC_ERR_INVALID;
        conf = rd_kafka_conf(rk);

        /* Unset pointer properties are RD_KAFKA_CONF_UNKNOWN. Which callback
         * is registered cannot be checked: the application's own must call
         * kdc_dr_msg_record() (otherwise waits time out, never confirm). */
        size = sizeof(have);
        if (rd_kafka_conf_get(conf, "dr_msg_cb", have, &size) !=
            RD_KAFKA_CONF_OK)
                return KDC_ERR_CONF; /* no dr_msg_cb registered */

        size = sizeof(have);
        if (rd_kafka_conf_get(conf, "delivery.report.only.error", have,
                              &size) == RD_KAFKA_CONF_OK &&
            strcmp(have, "true") == 0)
                return KDC_ERR_CONF;
        return 0;
}

int kdc__message_args_valid(const char *topic, const void *key, size_t key_len,
                            const void *value, size_t value_len,
                            int timeout_ms) {
        if (!topic || !*topic)
                return 0;
        if ((!key && key_len) || (!value && value_len))
                return 0;
        return timeout_ms >= -1;
}

int kdc__produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                 const void *key, size_t key_len, const void *value,
                 size_t value_len, rd_kafka_headers_t *headers,
                 struct kdc__dr_target *target, int64_t deadline,
                 int timeout_ms, rd_kafka_resp_err_t *errp) {
        rd_kafka_vu_t vus[7];
        size_t n = 0;

        /* Only the fields in use: librdkafka parses every one per call. */
        vus[n].vtype = RD_KAFKA_VTYPE_TOPIC;
        vus[n++].u.cstr = topic;
        vus[n].vtype = RD_KAFKA_VTYPE_PARTITION;
        vus[n++].u.i32 = partition;
        vus[n].vtype = RD_KAFKA_VTYPE_MSGFLAGS;
        vus[n++].u.i = RD_KAFKA_MSG_F_COPY;
        if (key) {
                vus[n].vtype = RD_KAFKA_VTYPE_KEY;
                vus[n].u.mem.ptr = (void *)key;
                vus[n++].u.mem.size = key_len;
        }
        vus[n].vtype = RD_KAFKA_VTYPE_VALUE;
        vus[n].u.mem.ptr = (void *)value;
        vus[n++].u.mem.size = value_len;
        if (headers) {
                vus[n].vtype = RD_KAFKA_VTYPE_HEADERS;
                vus[n++].u.headers = headers;
        }
        vus[n].vtype = RD_KAFKA_VTYPE_OPAQUE;
        vus[n++].u.ptr = target;
        return kdc__produceva(rk, vus, n, deadline, timeout_ms, errp);
}

int kdc__produceva(rd_kafka_t *rk, const rd_kafka_vu_t *vus, size_t n,
                   int64_t deadline, int timeout_ms,
                   rd_kafka_resp_err_t *errp) {
        rd_kafka_error_t *error;
        rd_kafka_resp_err_t err;

        for (;;) {
                error = rd_kafka_produceva(rk, vus, n);
                err = error ? rd_kafka_error_code(error)
                            : RD_KAFKA_RESP_ERR_NO_ERROR;
                if (error)
                        rd_kafka_error_destroy(error);
                *errp = err;
                if (err == RD_KAFKA_RESP_ERR_NO_ERROR)
                        return 0;
                if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL)
                        return KDC_ERR_PRODUCE;
                if (deadline == 0)
                        deadline = kdc__deadline(timeout_ms);
                if (kdc__now_ms() >= deadline)
                        return KDC_ERR_QUEUE_FULL;
                /* Serving reports is what frees queue space. */
                rd_kafka_poll(rk, kdc__poll_slice(deadline));
        }
}
