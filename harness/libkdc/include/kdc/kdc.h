/**
 * @file kdc/kdc.h
 * @brief libkdc: runtime helpers that make Kafka producers and consumers keep
 *        the kdc durability contract. Include this one header.
 *
 * The contract, in the parts libkdc serves:
 *  - Every produce has a delivery report, and a batch, checkpoint or DLQ
 *    routing is confirmed from per-message reports (kdc_tracker_wait(),
 *    kdc_produce_confirmed(), kdc_dlq_route()), never from
 *    rd_kafka_flush() == 0; only RD_KAFKA_MSG_STATUS_PERSISTED confirms.
 *  - Offsets are committed by message (kdc_commit_message(),
 *    kdc_commit_message_async()) or at the confirmed watermark
 *    (kdc_watermark_commit()), only after the effect is confirmed, and never
 *    for work of a revoked or lost assignment epoch (kdc/assignment.h).
 *  - Failures are classified (kdc/classify.h): poison goes to a DLQ,
 *    confirmed, with a stable event identity (kdc/dlq.h); transient,
 *    membership and fatal failures commit nothing. Retries are bounded
 *    (kdc/retry.h): the partition is paused while a message waits, and an
 *    exhausted message is dead-lettered (confirmed) or the service halts.
 *  - What happened is counted (kdc/stats.h): deliveries, DLQ routings,
 *    retries, commits, rebalances and consumer lag, read as a struct, JSON
 *    or OpenMetrics.
 *
 * Conventions (all headers):
 *  - Names are kdc_<object>_<verb>; handles are opaque (kdc_tracker_t,
 *    kdc_assignment_t, kdc_watermark_t, kdc_dlq_t, kdc_classifier_t,
 *    kdc_retry_t, kdc_stats_t).
 *  - Functions that can fail return int: 0, or a negative KDC_ERR_* code
 *    (kdc/error.h); kdc_strerror() describes it. librdkafka error codes come
 *    back through rd_kafka_resp_err_t out-parameters.
 *  - Times are in milliseconds; -1 means no limit (as in librdkafka), other
 *    negative values are KDC_ERR_INVALID. Lengths are in bytes.
 *  - libkdc never aborts or exits the process, and never installs signal
 *    handlers or threads of its own.
 *  - Delivery reports are served only by rd_kafka_poll()/rd_kafka_flush()
 *    (called by the application or inside libkdc's waits), on the thread
 *    making that call.
 *
 * Producers used with libkdc must register kdc_dr_msg_cb, or their own
 * dr_msg_cb calling kdc_dr_msg_record(): see kdc/delivery.h.
 */
#ifndef KDC_KDC_H
#define KDC_KDC_H

#include <kdc/export.h>
#include <kdc/error.h>
#include <kdc/delivery.h>
#include <kdc/tracker.h>
#include <kdc/produce.h>
#include <kdc/classify.h>
#include <kdc/assignment.h>
#include <kdc/commit.h>
#include <kdc/watermark.h>
#include <kdc/dlq.h>
#include <kdc/retry.h>
#include <kdc/stats.h>

#endif /* KDC_KDC_H */
