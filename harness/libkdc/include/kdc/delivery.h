/**
 * @file kdc/delivery.h
 * @brief How delivery reports reach libkdc: its own callback, or a call from
 *        the application's callback.
 *
 * A producer used with libkdc (kdc_tracker_produce(), kdc_tracker_track(),
 * kdc_produce_confirmed(), kdc_dlq_route()) must be created from a conf on
 * which the application registered, before rd_kafka_new(), EITHER
 *
 * @code
 *   rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);
 * @endcode
 *
 * OR its own dr_msg_cb that hands every report to kdc_dr_msg_record():
 *
 * @code
 *   static void my_dr_msg_cb(rd_kafka_t *rk, const rd_kafka_message_t *m,
 *                            void *conf_opaque) {
 *           void *mine;
 *           if (kdc_dr_msg_record(rk, m, &mine) == 0) {
 *                   // libkdc's message; `mine` is the opaque given to
 *                   // kdc_tracker_track() (NULL for libkdc's own produces)
 *           } else {
 *                   // not produced through libkdc: m->_private is yours
 *           }
 *   }
 *   rd_kafka_conf_set_dr_msg_cb(conf, my_dr_msg_cb);
 * @endcode
 *
 * The registration is written out by the application (rather than hidden in
 * a kdc_ function) so that it is visible to readers and to kdc-lint's
 * produce-without-delivery-callback rule. libkdc checks, with rd_kafka_conf()
 * + rd_kafka_conf_get(), that SOME dr_msg_cb is registered and that
 * delivery.report.only.error is false (KDC_ERR_CONF otherwise). It cannot
 * check that an application callback calls kdc_dr_msg_record(); if it does
 * not, libkdc's waits time out (KDC_ERR_TIMEOUT): they never confirm
 * anything that was not reported.
 *
 * @par What the application must leave to libkdc on such a producer
 *  - Do not use the legacy rd_kafka_conf_set_dr_cb() or route delivery
 *    reports to an event queue (rd_kafka_conf_set_events(conf,
 *    RD_KAFKA_EVENT_DR)): only dr_msg_cb reports carry what libkdc needs.
 *  - delivery.report.only.error must stay false (the default): libkdc counts
 *    successful reports too.
 *  - The per-message opaque (RD_KAFKA_V_OPAQUE / rkmessage->_private) of a
 *    message libkdc tracks is libkdc's: kdc_tracker_track() gives the handle
 *    to pass and keeps the application's own opaque inside it. Messages the
 *    application produces without libkdc must use a NULL opaque or one that
 *    points to at least 4 readable bytes that do not start with libkdc's
 *    marker 0x6b646364 (libkdc reads those 4 bytes to tell its records from
 *    foreign ones).
 *
 * @par What stays the application's
 *  The conf opaque (rd_kafka_conf_set_opaque(), rd_kafka_opaque()) is never
 *  used by these functions, so error_cb, stats_cb and the like keep their
 *  context.
 *
 * @par Which thread runs the callback
 *  librdkafka runs dr_msg_cb only from rd_kafka_poll() or rd_kafka_flush()
 *  (and their internal use by libkdc's waits and produce retries), on the
 *  thread that makes that call. Any thread may poll; libkdc's bookkeeping is
 *  thread-safe.
 *
 * @par Teardown
 *  rd_kafka_destroy() does not serve delivery reports that are still
 *  outstanding. Before destroying a producer, serve them: wait on the
 *  trackers, or rd_kafka_flush(); if you must give up, rd_kafka_purge(rk,
 *  RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT) followed by
 *  rd_kafka_flush() makes librdkafka fail every outstanding message with
 *  __PURGE_QUEUE / __PURGE_INFLIGHT, which libkdc counts as failed. Reports
 *  never served keep what they would have let go until the process exits:
 *  a kdc_produce_confirmed() call's small record, or a whole tracker
 *  destroyed with them pending (its handles and failure records too), which
 *  every later kdc_tracker_new() and kdc_tracker_destroy() then looks at
 *  again (see kdc_tracker_destroy()).
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
 *        (tracker, tracked message or synchronous produce) that produced the
 *        message.
 *
 * Register with rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb); do not call
 * it directly. Equivalent to kdc_dr_msg_record(rk, rkmessage, NULL); reports
 * of messages not produced through libkdc are ignored. The @p opaque argument
 * (the conf opaque) is not used.
 *
 * Runs on the thread calling rd_kafka_poll()/rd_kafka_flush(); never blocks
 * beyond a short internal mutex. Its only librdkafka call is
 * rd_kafka_yield(), when the report completes what a libkdc wait on this
 * same thread waits for (see kdc_dr_msg_record()).
 * Relies on: rd_kafka_conf_set_dr_msg_cb(), rd_kafka_message_t._private.
 */
KDC_CONTRACT("delivery-callback")
KDC_EXPORT void kdc_dr_msg_cb(rd_kafka_t *rk,
                              const rd_kafka_message_t *rkmessage,
                              void *opaque);

/**
 * @brief Record one delivery report with libkdc; call it from the
 *        application's own dr_msg_cb, once per report.
 *
 * If rkmessage->_private is a libkdc record (a tracker, a kdc_tracker_track()
 * handle, a synchronous produce), the report is recorded there: confirmed
 * when rkmessage->err is RD_KAFKA_RESP_ERR_NO_ERROR AND
 * rd_kafka_message_status() is RD_KAFKA_MSG_STATUS_PERSISTED; otherwise
 * failed. A kdc_tracker_track() handle goes back to its tracker in this
 * call: do not use rkmessage->_private afterwards.
 *
 * When the report completes what a libkdc wait running on this thread
 * waits for (the last pending message of the tracker in kdc_tracker_wait(),
 * the message of kdc_produce_confirmed() or kdc_dlq_route()), this calls
 * rd_kafka_yield() so that the wait's rd_kafka_flush() returns at once. The
 * wait clears that yield again before it returns: an rd_kafka_poll(),
 * rd_kafka_flush() or consume callback dispatcher of the application's own
 * around it (a wait called from one of its callbacks) is not stopped.
 *
 * @param rk        the producer (the report's, as passed to dr_msg_cb).
 * @param rkmessage the report, as passed to dr_msg_cb. Only read.
 * @param opaquep   if not NULL, receives the application's opaque given to
 *                  kdc_tracker_track() for this message; NULL for messages
 *                  libkdc produced itself, and when 0 is not returned.
 *
 * @returns 0: the report was libkdc's and is recorded.
 *          KDC_ERR_NOENT: rkmessage is NULL or its per-message opaque is not
 *          a libkdc record (NULL, or not starting with libkdc's marker);
 *          nothing was recorded and the opaque is the application's.
 *
 * Thread: the thread running dr_msg_cb (inside rd_kafka_poll() or
 * rd_kafka_flush()). Relies on: rd_kafka_message_status(),
 * rd_kafka_topic_name(), rd_kafka_message_t._private.
 */
KDC_CONTRACT("delivery-callback")
KDC_EXPORT int kdc_dr_msg_record(rd_kafka_t *rk,
                                 const rd_kafka_message_t *rkmessage,
                                 void **opaquep);

#ifdef __cplusplus
}
#endif

#endif /* KDC_DELIVERY_H */
