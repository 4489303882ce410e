/* DeliveryTracker: counts per-message delivery reports of a producer. */
#include <pthread.h>
#include <stdlib.h>

#include <kdc/error.h>
#include <kdc/tracker.h>

#include "internal.h"

struct kdc_tracker_s {
        struct kdc__dr_target target; /* first: the per-message opaque */
        pthread_mutex_t lock;         /* guards everything below */
        rd_kafka_t *rk;               /* bound producer, NULL if none */
        int64_t pending;
        int64_t delivered;
        int64_t failed;
        rd_kafka_resp_err_t first_error;
        int released; /* kdc_tracker_destroy() was called */
};

static void kdc__tracker_free(kdc_tracker_t *t) {
        t->target.magic = 0;
        pthread_mutex_destroy(&t->lock);
        free(t);
}

/* Runs inside kdc_dr_msg_cb(), on whichever thread polls the producer. */
static void kdc__tracker_on_report(struct kdc__dr_target *target,
                                   const rd_kafka_message_t *rkmessage) {
        kdc_tracker_t *t = (kdc_tracker_t *)target;
        int free_now;

        pthread_mutex_lock(&t->lock);
        t->pending--;
        if (rkmessage->err == RD_KAFKA_RESP_ERR_NO_ERROR) {
                t->delivered++;
        } else {
                if (t->failed == 0)
                        t->first_error = rkmessage->err;
                t->failed++;
        }
        free_now = t->released && t->pending == 0;
        pthread_mutex_unlock(&t->lock);
        if (free_now)
                kdc__tracker_free(t);
}

int kdc_tracker_new(kdc_tracker_t **trackerp) {
        kdc_tracker_t *t;

        if (!trackerp)
                return KDC_ERR_INVALID;
        *trackerp = NULL;
        t = calloc(1, sizeof(*t));
        if (!t)
                return KDC_ERR_NOMEM;
        if (pthread_mutex_init(&t->lock, NULL) != 0) {
                free(t);
                return KDC_ERR_NOMEM;
        }
        t->target.magic = KDC__DR_TARGET_MAGIC;
        t->target.on_report = kdc__tracker_on_report;
        t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
        *trackerp = t;
        return 0;
}

void kdc_tracker_destroy(kdc_tracker_t *t) {
        int free_now;

        if (!t)
                return;
        pthread_mutex_lock(&t->lock);
        t->released = 1;
        free_now = t->pending == 0;
        pthread_mutex_unlock(&t->lock);
        if (free_now)
                kdc__tracker_free(t);
        /* else: the last pending report frees it (kdc__tracker_on_report) */
}

/* Bind t to rk on first use, checking rk's configuration once.
 * Caller holds t->lock. */
static int kdc__tracker_bind(kdc_tracker_t *t, rd_kafka_t *rk) {
        int r;

        if (t->rk)
                return t->rk == rk ? 0 : KDC_ERR_INVALID;
        if ((r = kdc__producer_check(rk)))
                return r;
        t->rk = rk;
        return 0;
}

int kdc_tracker_produce(kdc_tracker_t *t, rd_kafka_t *rk, const char *topic,
                        int32_t partition, const void *key, size_t key_len,
                        const void *value, size_t value_len,
                        rd_kafka_headers_t *headers, int timeout_ms,
                        rd_kafka_resp_err_t *produce_err) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        int64_t deadline;
        int r;

        if (produce_err)
                *produce_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (!t || !rk ||
            !kdc__message_args_valid(topic, key, key_len, value, value_len,
                                     timeout_ms))
                return KDC_ERR_INVALID;
        deadline = kdc__deadline(timeout_ms);

        /* Count the message before it can possibly be reported: another
         * thread may serve its report as soon as producev() returns. */
        pthread_mutex_lock(&t->lock);
        r = kdc__tracker_bind(t, rk);
        if (r == 0)
                t->pending++;
        pthread_mutex_unlock(&t->lock);
        if (r) {
                if (produce_err && r == KDC_ERR_CONF)
                        *produce_err = RD_KAFKA_RESP_ERR__NOT_CONFIGURED;
                return r;
        }

        r = kdc__produce(rk, topic, partition, key, key_len, value, value_len,
                         headers, &t->target, deadline, &err);
        if (produce_err)
                *produce_err = err;
        if (r) {
                /* Not enqueued: there will be no report. */
                pthread_mutex_lock(&t->lock);
                t->pending--;
                pthread_mutex_unlock(&t->lock);
        }
        return r;
}

int kdc_tracker_wait(kdc_tracker_t *t, rd_kafka_t *rk, int timeout_ms) {
        int64_t deadline, pending, failed;
        int bound_elsewhere;

        if (!t || !rk || timeout_ms < -1)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        bound_elsewhere = t->rk && t->rk != rk;
        pthread_mutex_unlock(&t->lock);
        if (bound_elsewhere)
                return KDC_ERR_INVALID;

        deadline = kdc__deadline(timeout_ms);
        for (;;) {
                pthread_mutex_lock(&t->lock);
                pending = t->pending;
                failed = t->failed;
                pthread_mutex_unlock(&t->lock);
                if (pending == 0)
                        return failed ? KDC_ERR_DELIVERY : 0;
                if (kdc__now_ms() >= deadline) {
                        /* One last non-blocking serve before giving up. */
                        rd_kafka_poll(rk, 0);
                        pthread_mutex_lock(&t->lock);
                        pending = t->pending;
                        failed = t->failed;
                        pthread_mutex_unlock(&t->lock);
                        if (pending == 0)
                                return failed ? KDC_ERR_DELIVERY : 0;
                        return KDC_ERR_TIMEOUT;
                }
                rd_kafka_poll(rk, kdc__poll_slice(deadline));
        }
}

int kdc_tracker_reset(kdc_tracker_t *t) {
        int r = 0;

        if (!t)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&t->lock);
        if (t->pending) {
                r = KDC_ERR_BUSY;
        } else {
                t->delivered = 0;
                t->failed = 0;
                t->first_error = RD_KAFKA_RESP_ERR_NO_ERROR;
                t->rk = NULL;
        }
        pthread_mutex_unlock(&t->lock);
        return r;
}

/* The mutex is logically mutable: reading counts does not change the
 * tracker, so the accessors take a const handle. */
enum kdc__count { KDC__PENDING, KDC__DELIVERED, KDC__FAILED };

static int64_t kdc__tracker_read(const kdc_tracker_t *ct,
                                 enum kdc__count which) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;
        int64_t v;

        pthread_mutex_lock(&t->lock);
        switch (which) {
        case KDC__PENDING:
                v = t->pending;
                break;
        case KDC__DELIVERED:
                v = t->delivered;
                break;
        default:
                v = t->failed;
                break;
        }
        pthread_mutex_unlock(&t->lock);
        return v;
}

int64_t kdc_tracker_pending(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__PENDING) : KDC_ERR_INVALID;
}

int64_t kdc_tracker_delivered(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__DELIVERED) : KDC_ERR_INVALID;
}

int64_t kdc_tracker_failed(const kdc_tracker_t *t) {
        return t ? kdc__tracker_read(t, KDC__FAILED) : KDC_ERR_INVALID;
}

rd_kafka_resp_err_t kdc_tracker_first_error(const kdc_tracker_t *ct) {
        kdc_tracker_t *t = (kdc_tracker_t *)ct;
        rd_kafka_resp_err_t err;

        if (!t)
                return RD_KAFKA_RESP_ERR__INVALID_ARG;
        pthread_mutex_lock(&t->lock);
        err = t->first_error;
        pthread_mutex_unlock(&t->lock);
        return err;
}
