/* libkdc internals: never installed, never included by applications.
 * Internal names use the kdc__ prefix (libuv style). */
#ifndef KDC_HARNESS_INTERNAL_H
#define KDC_HARNESS_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include <librdkafka/rdkafka.h>

/* Longest single rd_kafka_poll() inside a libkdc wait, so that reports
 * served by another thread are noticed promptly. */
#define KDC__POLL_SLICE_MS 100

/* Every per-message opaque libkdc hands to rd_kafka_producev() points to an
 * object that starts with this header; kdc_dr_msg_cb() dispatches on it. */
#define KDC__DR_TARGET_MAGIC 0x6b646364u /* "kdcd" */

struct kdc__dr_target {
        uint32_t magic;
        void (*on_report)(struct kdc__dr_target *target,
                          const rd_kafka_message_t *rkmessage);
};

/* Monotonic clock in milliseconds. */
int64_t kdc__now_ms(void);

/* Absolute deadline for a relative timeout: -1 -> INT64_MAX. */
int64_t kdc__deadline(int timeout_ms);

/* Milliseconds left until deadline (>= 0), capped at KDC__POLL_SLICE_MS. */
int kdc__poll_slice(int64_t deadline);

/* 0 if rk is a producer whose reports reach kdc_dr_msg_cb (dr_msg_cb is
 * kdc_dr_msg_cb and delivery.report.only.error is false); KDC_ERR_INVALID if
 * rk is not a producer; KDC_ERR_CONF otherwise. */
int kdc__producer_check(rd_kafka_t *rk);

/* Validate the message arguments shared by the produce functions. */
int kdc__message_args_valid(const char *topic, const void *key, size_t key_len,
                            const void *value, size_t value_len,
                            int timeout_ms);

/* rd_kafka_producev() with F_COPY and target as per-message opaque; on
 * __QUEUE_FULL serve reports with rd_kafka_poll() and retry until deadline.
 * Returns 0, KDC_ERR_QUEUE_FULL or KDC_ERR_PRODUCE; *errp gets the last
 * producev error. On failure headers are still owned by the caller. */
int kdc__produce(rd_kafka_t *rk, const char *topic, int32_t partition,
                 const void *key, size_t key_len, const void *value,
                 size_t value_len, rd_kafka_headers_t *headers,
                 struct kdc__dr_target *target, int64_t deadline,
                 rd_kafka_resp_err_t *errp);

#endif /* KDC_HARNESS_INTERNAL_H */
