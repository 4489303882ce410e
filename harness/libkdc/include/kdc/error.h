/**
 * @file kdc/error.h
 * @brief The one error convention of libkdc.
 *
 * The rule (libuv's): whenever a libkdc or kdc testkit function returns a
 * signed integer (int, int32_t, int64_t), a negative value is an error and
 * is one of the KDC_ERR_* codes below; anything else is success. A call
 * that only succeeds or fails returns 0 (KDC_OK); a call that returns a
 * count (int64_t, as message counts are) or another value (an offset)
 * returns it as 0 or more, so `if (rc < 0)` is the one test for failure
 * everywhere. A function that returns a pointer
 * returns NULL where its comment says so; one that cannot fail says it
 * ("never negative"), or returns void.
 *
 * libkdc never aborts or exits the process, and a call that fails never
 * runs or arms a callback: a message whose produce call failed has no
 * delivery report and is not counted anywhere.
 *
 * Where a librdkafka error code explains a failure, the function hands it
 * back through a separate rd_kafka_resp_err_t out-parameter; it is never
 * folded into the int.
 *
 * @par Values, not statuses
 * These calls return a type that cannot carry a negative KDC_ERR_*; they
 * keep the signatures libkdc 0.1 was released with, and each says what it
 * returns for bad arguments (tests/harness/libkdc/test_error_convention.c
 * checks that this list and the headers agree):
 * - kdc_assignment_stamp(), kdc_assignment_epoch(): an epoch (uint64_t).
 *   0 means "no epoch", also for NULL arguments; it is not an error code
 *   but a value every call that takes an epoch refuses (KDC_ERR_STALE).
 * - kdc_tracker_first_error(): a librdkafka code (rd_kafka_resp_err_t),
 *   RD_KAFKA_RESP_ERR_NO_ERROR when no report failed, and librdkafka's own
 *   RD_KAFKA_RESP_ERR__INVALID_ARG for a NULL tracker (check the tracker
 *   first, or read the count of failures, which follows the rule).
 * - kdc_classify(), kdc_classify_error(), kdc_classify_app(): a kdc_class_t;
 *   they cannot fail (NULL arguments have a documented class).
 * - kdc_testkit_scenario_count(): a count (size_t); it cannot fail.
 */
#ifndef KDC_ERROR_H
#define KDC_ERROR_H

#include <kdc/export.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief libkdc error codes. All are negative; 0 (KDC_OK) is success.
 * Values are part of the ABI: new codes are only ever appended.
 */
typedef enum kdc_err_e {
        /** Success. */
        KDC_OK = 0,
        /** An argument was NULL, out of range, or the wrong kind of handle
         *  (e.g. a consumer where a producer is required). Nothing was done. */
        KDC_ERR_INVALID = -1,
        /** Memory allocation failed. Nothing was done. */
        KDC_ERR_NOMEM = -2,
        /** The deadline passed before every awaited delivery report arrived.
         *  The outcome of the unreported messages is unknown: they may still
         *  be delivered later. Treat as transient: do not commit input. */
        KDC_ERR_TIMEOUT = -3,
        /** Every awaited delivery report arrived and at least one carried an
         *  error: at least one message was NOT delivered. */
        KDC_ERR_DELIVERY = -4,
        /** The producer's local queue stayed full (librdkafka
         *  RD_KAFKA_RESP_ERR__QUEUE_FULL) until the deadline; the message was
         *  not enqueued. */
        KDC_ERR_QUEUE_FULL = -5,
        /** rd_kafka_produceva() refused the message for another reason (the
         *  librdkafka code is returned through the function's out-parameter);
         *  the message was not enqueued. */
        KDC_ERR_PRODUCE = -6,
        /** The offset commit failed (synchronously, or could not be
         *  scheduled); the offset was not committed. */
        KDC_ERR_COMMIT = -7,
        /** The object still has messages awaiting delivery reports. */
        KDC_ERR_BUSY = -8,
        /** The producer was not configured the way libkdc needs: no
         *  dr_msg_cb is registered (kdc_dr_msg_cb(), or the application's
         *  own callback calling kdc_dr_msg_record()), or
         *  delivery.report.only.error is true. Delivery could never be
         *  confirmed; nothing was produced. */
        KDC_ERR_CONF = -9,
        /** The work belongs to an assignment epoch that was revoked or lost
         *  (kdc/assignment.h): the partition was taken away since the
         *  message was polled, so committing its offset could overwrite the
         *  new owner's progress. Nothing was committed or recorded; the
         *  message will be redelivered to the partition's current owner. */
        KDC_ERR_STALE = -10,
        /** Input that libkdc decodes (untrusted DLQ headers, kdc/dlq.h) is
         *  malformed: a value out of range, too long, of the wrong syntax, or
         *  a header that appears twice. */
        KDC_ERR_MALFORMED = -11,
        /** The thing asked for is not there: no libkdc bookkeeping behind a
         *  delivery report's opaque, no kdc DLQ header on a message, no state
         *  for a partition. */
        KDC_ERR_NOENT = -12,
        /** librdkafka refused to (un)assign partitions during a rebalance
         *  (rd_kafka_assign(), rd_kafka_incremental_assign() or
         *  rd_kafka_incremental_unassign() failed). */
        KDC_ERR_ASSIGN = -13,
        /** A file could not be written, flushed or renamed (errno says
         *  why); e.g. kdc_stats_write_json_file(). */
        KDC_ERR_IO = -14
} kdc_err_t;

/**
 * @brief Human-readable text for a libkdc return code.
 *
 * @param err 0 or a KDC_ERR_* code (any int is accepted).
 * @returns a static, NUL-terminated English string; never NULL. The storage
 *          belongs to libkdc and lives for the whole process; do not free it.
 *          An unknown code yields "Unknown kdc error code".
 *
 * Thread-safe; no librdkafka call is involved. For librdkafka's own codes
 * (out-parameters of type rd_kafka_resp_err_t) use rd_kafka_err2str().
 */
KDC_CONTRACT("query")
KDC_EXPORT const char *kdc_strerror(int err);

#ifdef __cplusplus
}
#endif

#endif /* KDC_ERROR_H */
