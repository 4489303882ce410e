/**
 * @file kdc/delivery.h
 * @brief The delivery report callback that libkdc's producer helpers need.
 *
 * A producer used with kdc_tracker_produce() or kdc_produce_confirmed() must
 * be created from a conf on which the application registered
 *
 * @code
 *   rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
 * @endcode
 *
 * before rd_kafka_new(). The registration is written out by the application
 * (rather than hidden in a kdc_ function) so that it is visible to readers and
 * to kdc-lint's produce-without-delivery-callback rule.
 *
 * @par What the application must leave to libkdc on such a producer
 *  - The dr_msg_cb slot: do not replace kdc_dr_msg_cb, do not use the legacy
 *    rd_kafka_conf_set_dr_cb(), and do not route delivery reports to an event
 *    queue with rd_kafka_conf_set_events(conf, RD_KAFKA_EVENT_DR).
 *  - delivery.report.only.error must stay false (the default): libkdc counts
 *    successful reports too.
 *  - The per-message opaque (RD_KAFKA_V_OPAQUE / rkmessage->_private): libkdc
 *    stores its own bookkeeping pointer there for every message it produces.
 *    Messages the application produces itself on the same producer must use a
 *    NULL per-message opaque; kdc_dr_msg_cb() ignores their reports. (A
 *    non-NULL foreign opaque would be read as libkdc bookkeeping: undefined
 *    behaviour.)
 *
 * @par What stays the application's
 *  The conf opaque (rd_kafka_conf_set_opaque(), rd_kafka_opaque()) is never
 *  used by libkdc, so error_cb, stats_cb and the like keep their context.
 *
 * @par Which thread runs the callback
 *  librdkafka runs dr_msg_cb only from rd_kafka_poll() or rd_kafka_flush()
 *  (and their internal use by kdc_tracker_wait(), kdc_tracker_produce() and
 *  kdc_produce_confirmed()), on the thread that makes that call. Any thread
 *  may poll; libkdc's bookkeeping is thread-safe.
 *
 * @par Teardown
 *  rd_kafka_destroy() does not serve delivery reports that are still
 *  outstanding. Before destroying a producer, serve them: wait on the
 *  trackers, or rd_kafka_flush(); if you must give up, rd_kafka_purge(rk,
 *  RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT) followed by
 *  rd_kafka_flush() makes librdkafka fail every outstanding message with
 *  __PURGE_QUEUE / __PURGE_INFLIGHT, which libkdc counts as failed. Reports
 *  never served leak the small libkdc records they would have released.
 */
#ifndef KDC_DELIVERY_H
#define KDC_DELIVERY_H

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/**
 * @brief Delivery report callback: routes each report to the libkdc object
 *        (tracker or synchronous produce) that produced the message.
 *
 * Register with rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb); do not call
 * it directly. It reads rkmessage->err (NO_ERROR means the broker acked the
 * message under the producer's acks setting) and rkmessage->_private (the
 * per-message opaque set by libkdc). Reports of messages with a NULL
 * per-message opaque are ignored. The @p opaque argument (the conf opaque) is
 * not used.
 *
 * Runs on the thread calling rd_kafka_poll()/rd_kafka_flush(); never blocks
 * beyond a short internal mutex; never calls back into librdkafka.
 * Relies on: rd_kafka_conf_set_dr_msg_cb(), rd_kafka_message_t._private.
 */
KDC_EXPORT void kdc_dr_msg_cb(rd_kafka_t *rk,
                              const rd_kafka_message_t *rkmessage,
                              void *opaque);

#ifdef __cplusplus
}
#endif

#endif /* KDC_DELIVERY_H */
