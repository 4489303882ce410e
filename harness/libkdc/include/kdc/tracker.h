/**
 * @file kdc/tracker.h
 * @brief DeliveryTracker: confirm a batch from per-message delivery reports.
 *
 * A tracker counts, for the messages produced through it, how many are still
 * pending (no delivery report yet), how many were delivered and how many
 * failed. Delivered (confirmed) means exactly: the report's error is
 * RD_KAFKA_RESP_ERR_NO_ERROR AND rd_kafka_message_status() is
 * RD_KAFKA_MSG_STATUS_PERSISTED. Anything else is failed, including a report
 * without error whose status is POSSIBLY_PERSISTED (what every report says
 * on an acks=0 producer). Each failed message is listed (topic, partition,
 * key, error, status: kdc_tracker_failure()).
 * A batch, checkpoint or watermark may advance only when kdc_tracker_wait()
 * returns 0, i.e. every message has a report and none failed.
 *
 * Three ways to produce through a tracker:
 *  - kdc_tracker_producev() (or _produceva()): librdkafka's own RD_KAFKA_V_*
 *    arguments (headers, timestamp, your own opaque pass through); libkdc
 *    calls rd_kafka_produceva() for you.
 *  - kdc_tracker_produce(): the same with positional arguments.
 *  - kdc_tracker_track(): you call rd_kafka_producev()/produce() yourself
 *    with the per-message handle it gives as the message opaque (keeping
 *    your own opaque inside it), and report with kdc_dr_msg_cb or with
 *    kdc_dr_msg_record() from your own dr_msg_cb (kdc/delivery.h).
 *
 * Why not rd_kafka_flush(): flush() returns RD_KAFKA_RESP_ERR_NO_ERROR as soon
 * as the local queue is empty, and a message whose delivery FAILED also leaves
 * the local queue. flush()==0 is necessary, never sufficient.
 *
 * Typical use:
 * @code
 *   rd_kafka_conf_set_dr_msg_cb(conf, kdc_dr_msg_cb);    // see kdc/delivery.h
 *   rk = rd_kafka_new(RD_KAFKA_PRODUCER, conf, errstr, sizeof(errstr));
 *   kdc_tracker_new(&t);
 *   for (each record)
 *           if ((r = kdc_tracker_produce(t, rk, topic, RD_KAFKA_PARTITION_UA,
 *                                        k, klen, v, vlen, NULL, 1000, &err)))
 *                   goto transient;            // not enqueued, not counted
 *   if (kdc_tracker_wait(t, rk, 30000) == 0)
 *           advance_checkpoint();              // all confirmed
 *   kdc_tracker_reset(t);                      // next batch
 * @endcode
 *
 * @par Lifetime and memory
 *  The tracker is created by kdc_tracker_new() and owned by the application
 *  until kdc_tracker_destroy(). Destroying a tracker with messages in
 *  flight is safe: their reports are still counted into it, and its memory
 *  is released once the last one has been served (see kdc_tracker_destroy()).
 *  Memory is proportional to the messages in flight, never to
 *  the messages produced: kdc_tracker_produce() adds nothing per message
 *  (its opaque is the tracker); kdc_tracker_track() uses one 24-byte handle
 *  per message, recycled when its report arrives (handles are allocated 1024
 *  at a time and kept until kdc_tracker_destroy(), so this memory follows
 *  the peak number of tracked messages in flight; a handle goes back to the
 *  pool it came from, one for the thread that owns the sent count and one
 *  shared by the others). Failed messages are kept
 *  (one record with a copy of topic and key each) until kdc_tracker_reset()
 *  or destroy.
 *
 * @par Threads
 *  All functions may be called from any thread: the application may produce
 *  or track from several threads and serve delivery reports (rd_kafka_poll())
 *  on yet another one. The sent and delivered counts are each owned by the
 *  first thread that adds to them, which adds with a plain load and store;
 *  other threads add with an atomic increment. So a service that produces on
 *  one thread and serves reports on one thread (the same or another) pays no
 *  atomic read-modify-write and takes no lock per confirmed message, and
 *  any other arrangement stays correct. The owner of the sent count also
 *  takes kdc_tracker_track() handles without a lock; a report gives one
 *  back without a lock on that thread, and with one atomic compare-and-swap
 *  on any other. Other threads take theirs and give them back under a mutex
 *  inside the tracker, which also guards failure records (so a failed
 *  report takes it) and the binding. The counts are read without it.
 *  Several trackers may share one producer (e.g. batch N is awaited while
 *  batch N+1 is produced); each report is counted by the tracker that
 *  produced the message, and by no other.
 *
 * @par One producer per tracker
 *  The first kdc_tracker_produce() or kdc_tracker_track() binds the tracker
 *  to its producer; later calls and kdc_tracker_wait() with another
 *  rd_kafka_t return KDC_ERR_INVALID, because waiting would poll the wrong
 *  producer. kdc_tracker_reset() unbinds it.
 */
#ifndef KDC_TRACKER_H
#define KDC_TRACKER_H

#include <stddef.h>
#include <stdint.h>

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque DeliveryTracker handle. */
typedef struct kdc_tracker_s kdc_tracker_t;

/**
 * @brief One message the tracker could not confirm (read-only; see
 *        kdc_tracker_failure()). Every field is public; libkdc owns the
 *        memory. New fields are only ever appended.
 */
typedef struct kdc_failure_s {
        /** Topic name, NUL-terminated; NULL if the report carried none. */
        const char *topic;
        /** Partition, or RD_KAFKA_PARTITION_UA if none was assigned. */
        int32_t partition;
        /** Key bytes (a copy), or NULL for a NULL key. */
        const void *key;
        /** Key length in bytes. */
        size_t key_len;
        /** The report's error; RD_KAFKA_RESP_ERR_NO_ERROR when the only
         *  problem is the status (e.g. acks=0). */
        rd_kafka_resp_err_t err;
        /** rd_kafka_message_status() of the report: NOT_PERSISTED or
         *  POSSIBLY_PERSISTED (retrying the latter may duplicate). */
        rd_kafka_msg_status_t status;
        /** The application's opaque given to kdc_tracker_track() or as
         *  RD_KAFKA_V_OPAQUE to kdc_tracker_producev(); NULL for
         *  kdc_tracker_produce() messages. */
        void *opaque;
} kdc_failure_t;

/**
 * @brief Create an empty tracker (all counts 0, bound to no producer).
 *
 * @param trackerp receives the new tracker; the caller owns it and releases
 *        it with kdc_tracker_destroy(). Set to NULL on failure.
 * @returns 0; KDC_ERR_INVALID if @p trackerp is NULL; KDC_ERR_NOMEM.
 * No librdkafka call is made. Also frees the trackers destroyed with
 * messages pending whose reports have all been served since (see
 * kdc_tracker_destroy()).
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_tracker_new(kdc_tracker_t **trackerp);

/**
 * @brief Release the application's reference to a tracker.
 *
 * If no message is pending the memory is freed now. Otherwise the tracker is
 * kept on a process-wide list: the reports of its pending messages (served
 * by rd_kafka_poll() or rd_kafka_flush() on any thread) are still counted
 * into it, and it is freed by the first kdc_tracker_new() or
 * kdc_tracker_destroy() on any thread after the last of them (a report does
 * not free it: that would cost every report an atomic operation). A tracker
 * whose reports never come (its producer destroyed unflushed) stays on the
 * list until the process exits. The handle must not be used after this call.
 * NULL is ignored. Does not touch any producer: serve or purge outstanding
 * reports before rd_kafka_destroy() (see kdc/delivery.h, Teardown).
 */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_tracker_destroy(kdc_tracker_t *tracker);

/**
 * @brief Produce one message through the tracker and count it as pending.
 *
 * Calls rd_kafka_produceva() with RD_KAFKA_MSG_F_COPY (key and value are
 * copied: the caller's buffers may be reused as soon as this returns) and the
 * tracker as the per-message opaque (RD_KAFKA_VTYPE_OPAQUE). When librdkafka
 * answers RD_KAFKA_RESP_ERR__QUEUE_FULL (queue.buffering.max.messages or
 * .kbytes reached), it serves delivery reports with rd_kafka_poll() (which is
 * what frees queue space) and retries until @p timeout_ms has passed.
 *
 * On the first call the tracker is bound to @p rk, after checking that the
 * producer has a dr_msg_cb (kdc_dr_msg_cb, or the application's own calling
 * kdc_dr_msg_record()) and delivery.report.only.error is false (read back
 * with rd_kafka_conf() + rd_kafka_conf_get()).
 *
 * @param tracker   the tracker that will count the message's report.
 * @param rk        a producer created with kdc_dr_msg_cb (see kdc/delivery.h).
 * @param topic     topic name; copied by librdkafka.
 * @param partition partition, or RD_KAFKA_PARTITION_UA for the partitioner.
 * @param key       key bytes, or NULL (then @p key_len must be 0).
 * @param key_len   key length in bytes.
 * @param value     value bytes, or NULL for a tombstone (@p value_len 0).
 * @param value_len value length in bytes.
 * @param headers   message headers or NULL. On success librdkafka owns them
 *                  (do not destroy them); on any failure the caller still
 *                  owns them (rd_kafka_produceva() semantics).
 * @param timeout_ms how long to keep retrying while the local queue is full,
 *                  in milliseconds; 0 tries once; -1 retries without limit.
 *                  This bounds enqueueing only, never delivery.
 * @param produce_err if not NULL, receives the librdkafka error of the last
 *                  rd_kafka_produceva() call (RD_KAFKA_RESP_ERR_NO_ERROR on
 *                  success, RD_KAFKA_RESP_ERR__INVALID_ARG for bad arguments).
 *
 * @returns 0: enqueued and counted pending; its report will be counted.
 *          KDC_ERR_INVALID: NULL tracker/rk/topic, a length without a buffer,
 *          @p rk not a producer, @p rk not the producer the tracker is bound
 *          to, or @p timeout_ms < -1.
 *          KDC_ERR_CONF: @p rk has no dr_msg_cb, or
 *          delivery.report.only.error=true.
 *          KDC_ERR_QUEUE_FULL: still __QUEUE_FULL at the deadline.
 *          KDC_ERR_PRODUCE: rd_kafka_produceva() failed otherwise (e.g.
 *          __MSG_SIZE_TOO_LARGE, __UNKNOWN_PARTITION, __FATAL); see
 *          @p produce_err.
 *          On every failure the message is not enqueued and not counted.
 *
 * Delivery reports of this and other messages may be served (and counted,
 * by whichever tracker owns them) on the calling thread while it polls.
 */
KDC_CONTRACT("produce handle=1 topic=2")
KDC_EXPORT int kdc_tracker_produce(kdc_tracker_t *tracker,
                                   rd_kafka_t *rk,
                                   const char *topic,
                                   int32_t partition,
                                   const void *key,
                                   size_t key_len,
                                   const void *value,
                                   size_t value_len,
                                   rd_kafka_headers_t *headers,
                                   int timeout_ms,
                                   rd_kafka_resp_err_t *produce_err);

/**
 * @brief Produce one message through the tracker, described by librdkafka's
 *        own RD_KAFKA_V_* arguments, and count it as pending.
 *
 * The rd_kafka_producev() of a tracker: every argument librdkafka takes
 * passes through (RD_KAFKA_V_TOPIC or _RKT, _PARTITION, _KEY, _VALUE,
 * _TIMESTAMP, _HEADER or _HEADERS, _MSGFLAGS, _OPAQUE), so headers, a
 * timestamp and the service's own per-message opaque need no second API:
 * @code
 *   if (kdc_tracker_producev(t, rk, 5000, &err,
 *                            RD_KAFKA_V_TOPIC("orders.audit"),
 *                            RD_KAFKA_V_KEY(m->key, m->key_len),
 *                            RD_KAFKA_V_VALUE(m->payload, m->len),
 *                            RD_KAFKA_V_TIMESTAMP(ts),
 *                            RD_KAFKA_V_HEADER("trace-id", id, -1),
 *                            RD_KAFKA_V_OPAQUE(my_ctx),
 *                            RD_KAFKA_V_END) != 0)
 *           goto transient;                    // not enqueued, not counted
 * @endcode
 * What libkdc changes on the way to rd_kafka_produceva():
 *  - the per-message opaque: librdkafka's is libkdc's (the tracker, or a
 *    kdc_tracker_track() handle when RD_KAFKA_V_OPAQUE gives a non-NULL
 *    one). The service's own opaque is kept in that handle and handed back
 *    with the outcome: kdc_tracker_failure()->opaque for a message that was
 *    not confirmed, and the opaquep of kdc_dr_msg_record() in the service's
 *    own dr_msg_cb for every report. A non-NULL opaque costs one 24-byte
 *    handle in flight, as kdc_tracker_track() does.
 *  - the flags: without RD_KAFKA_V_MSGFLAGS, RD_KAFKA_MSG_F_COPY (key and
 *    value copied: the buffers may be reused on return), where librdkafka's
 *    default (0) would require them to live until the report. Given
 *    flags are passed as they are (RD_KAFKA_MSG_F_FREE: librdkafka frees the
 *    value once enqueued; on failure the caller still owns it).
 * Everything else, and what librdkafka refuses, is librdkafka's: a
 * RD_KAFKA_V_HEADERS list belongs to librdkafka once this returns 0 and is
 * still the caller's on any failure; RD_KAFKA_V_HEADER values are copied.
 *
 * The queue-full retries, the binding to @p rk and its configuration check
 * are those of kdc_tracker_produce().
 *
 * @param tracker    the tracker that will count the message's report.
 * @param rk         a producer created with kdc_dr_msg_cb, or with its own
 *                   dr_msg_cb calling kdc_dr_msg_record() (kdc/delivery.h).
 * @param timeout_ms how long to keep retrying while the local queue is full,
 *                   in milliseconds; 0 tries once; -1 retries without limit.
 *                   Bounds enqueueing only, never delivery.
 * @param produce_err if not NULL, receives the librdkafka error of the last
 *                   rd_kafka_produceva() call (RD_KAFKA_RESP_ERR_NO_ERROR on
 *                   success; RD_KAFKA_RESP_ERR__INVALID_ARG when libkdc
 *                   refused the arguments).
 * @param ...        RD_KAFKA_V_* arguments, ended by RD_KAFKA_V_END, as for
 *                   rd_kafka_producev(). RD_KAFKA_V_TOPIC or RD_KAFKA_V_RKT
 *                   is required.
 *
 * @returns 0: enqueued and counted pending; its report will be counted.
 *          KDC_ERR_INVALID: NULL @p tracker or @p rk, no topic, an
 *          RD_KAFKA_VTYPE_* libkdc does not know (librdkafka 2.0.2's are
 *          all known), @p rk not a producer or not the bound one,
 *          @p timeout_ms < -1.
 *          KDC_ERR_CONF, KDC_ERR_QUEUE_FULL, KDC_ERR_PRODUCE: as for
 *          kdc_tracker_produce() (see @p produce_err).
 *          KDC_ERR_NOMEM: no handle for the opaque, or (more than 14
 *          arguments) no memory for their copy.
 *          On every failure the message is not enqueued, not counted, and
 *          no report or callback will come for it.
 *
 * Thread: any. Delivery reports may be served on the calling thread while
 * it waits for queue space. Relies on: rd_kafka_produceva(),
 * rd_kafka_vu_t, RD_KAFKA_VTYPE_* of librdkafka 2.0.2.
 */
KDC_CONTRACT("produce handle=1 varargs=4")
KDC_EXPORT int kdc_tracker_producev(kdc_tracker_t *tracker, rd_kafka_t *rk,
                                    int timeout_ms,
                                    rd_kafka_resp_err_t *produce_err, ...);

/**
 * @brief kdc_tracker_producev() with the message described by an array of
 *        rd_kafka_vu_t, as rd_kafka_produceva() takes it (no
 *        RD_KAFKA_VTYPE_END entry).
 *
 * @param tracker, rk, timeout_ms, produce_err as for kdc_tracker_producev().
 * @param vus  @p cnt entries; only read (libkdc copies them to replace the
 *             opaque and add the flags). Ownership of a
 *             RD_KAFKA_VTYPE_HEADERS list as for kdc_tracker_producev().
 * @param cnt  number of entries.
 *
 * @returns as kdc_tracker_producev(); KDC_ERR_INVALID also for NULL @p vus
 *          with @p cnt > 0, and for an RD_KAFKA_VTYPE_END entry.
 * Thread: any. Relies on: rd_kafka_produceva().
 */
KDC_CONTRACT("produce handle=1")
KDC_EXPORT int kdc_tracker_produceva(kdc_tracker_t *tracker, rd_kafka_t *rk,
                                     int timeout_ms,
                                     rd_kafka_resp_err_t *produce_err,
                                     const rd_kafka_vu_t *vus, size_t cnt);

/**
 * @brief Count one message the application produces itself, and get the
 *        per-message handle to pass as its opaque.
 *
 * Use when the application calls rd_kafka_producev() (or rd_kafka_produce(),
 * produceva(), a C++ wrapper) itself:
 * @code
 *   void *h;
 *   if (kdc_tracker_track(t, rk, my_ctx, &h) == 0 &&
 *       rd_kafka_producev(rk, RD_KAFKA_V_TOPIC(topic), RD_KAFKA_V_VALUE(v, n),
 *                         RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
 *                         RD_KAFKA_V_OPAQUE(h), RD_KAFKA_V_END) != 0)
 *           kdc_tracker_untrack(t, h);          // not enqueued: no report
 * @endcode
 * The message's report must reach kdc_dr_msg_cb or kdc_dr_msg_record()
 * (kdc/delivery.h); the latter hands @p opaque back.
 *
 * On the first call the tracker is bound to @p rk, after checking that a
 * dr_msg_cb is registered and delivery.report.only.error is false.
 *
 * @param tracker  the tracker that will count the message's report.
 * @param rk       the producer the message will be produced on.
 * @param opaque   the application's own per-message opaque, kept in the
 *                 handle (any value, NULL too; libkdc never dereferences it).
 * @param handlep  receives the handle (set to NULL on failure). It belongs
 *                 to libkdc and goes back to the tracker with the message's
 *                 delivery report, or with kdc_tracker_untrack(); it must
 *                 not be used after that.
 *
 * @returns 0: counted pending. KDC_ERR_INVALID: NULL argument, @p rk not a
 *          producer or not the bound one. KDC_ERR_CONF: no dr_msg_cb, or
 *          delivery.report.only.error=true. KDC_ERR_NOMEM. On failure nothing
 *          is counted.
 *
 * Thread: any; no librdkafka call except the one-time configuration check.
 */
KDC_CONTRACT("track")
KDC_EXPORT int kdc_tracker_track(kdc_tracker_t *tracker,
                                 rd_kafka_t *rk,
                                 void *opaque,
                                 void **handlep);

/**
 * @brief Withdraw a handle from kdc_tracker_track() whose message was NOT
 *        enqueued (the produce call returned an error), so no report will
 *        come: the pending count drops by one and the handle goes back to
 *        the tracker.
 *
 * Never call it for a message that was enqueued: its report would then
 * touch freed memory.
 *
 * @returns 0; KDC_ERR_INVALID if an argument is NULL or @p handle is not a
 *          live handle of @p tracker (nothing is changed then).
 */
KDC_CONTRACT("track")
KDC_EXPORT int kdc_tracker_untrack(kdc_tracker_t *tracker, void *handle);

/**
 * @brief Serve delivery reports until every message of the tracker has one,
 *        or the timeout passes. This is the batch confirmation.
 *
 * Calls rd_kafka_flush(rk, ..) in slices of at most 10 ms (serving reports
 * for every message of @p rk, whichever tracker owns them) until the
 * tracker's pending count is 0 or @p timeout_ms has passed. flush() rather
 * than poll(): while it runs, librdkafka sends queued messages at once
 * instead of waiting out linger.ms (5 ms by default), for every message of
 * @p rk; a slice ends early (rd_kafka_yield() from the report) as soon as a
 * report served on this thread leaves the tracker with nothing pending, so
 * other trackers' messages on the same producer do not hold the wait up.
 * Reports served concurrently by another thread (an application thread
 * polling @p rk, or another libkdc wait on it) are seen within one slice.
 *
 * @param tracker    the tracker.
 * @param rk         the producer the tracker is bound to. A tracker that never
 *                   produced anything is bound to nothing and accepts any
 *                   producer.
 * @param timeout_ms maximum time to wait, in milliseconds; 0 polls once
 *                   without blocking; -1 waits until every report arrived
 *                   (which librdkafka bounds by message.timeout.ms).
 *
 * @returns 0 only if no message is pending and every report since creation
 *          or the last kdc_tracker_reset() confirmed its message (no error,
 *          status PERSISTED); a tracker with no messages returns 0: an empty
 *          batch is confirmed.
 *          KDC_ERR_TIMEOUT if messages are still pending at the deadline
 *          (whether or not some already failed): their outcome is unknown.
 *          KDC_ERR_DELIVERY if every report arrived and at least one did not
 *          confirm its message; kdc_tracker_failure() lists each of them.
 *          KDC_ERR_INVALID for NULL arguments, @p rk not the bound producer,
 *          or @p timeout_ms < -1.
 */
KDC_CONTRACT("confirm handle=1")
KDC_EXPORT int kdc_tracker_wait(kdc_tracker_t *tracker,
                                rd_kafka_t *rk,
                                int timeout_ms);

/**
 * @brief The i-th message the tracker could not confirm, in report order.
 *
 * @param tracker the tracker.
 * @param i       0 .. kdc_tracker_failed() - 1.
 * @returns a read-only record owned by the tracker, valid until
 *          kdc_tracker_reset() or kdc_tracker_destroy(); NULL if @p tracker
 *          is NULL or @p i is out of range. Records never move: reading one
 *          while another thread serves more reports is safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT const kdc_failure_t *kdc_tracker_failure(const kdc_tracker_t *tracker,
                                                    size_t i);

/**
 * @brief Start a new batch: zero the delivered and failed counts and the first
 *        error, free the failure records, and unbind the producer.
 *
 * @returns 0; KDC_ERR_INVALID if @p tracker is NULL; KDC_ERR_BUSY if messages
 *          are still pending (nothing is changed: a late report must not be
 *          counted into the next batch). No librdkafka call is made.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_tracker_reset(kdc_tracker_t *tracker);

/**
 * @brief Messages produced through the tracker whose delivery report has not
 *        been served yet.
 * @returns the count (>= 0), or KDC_ERR_INVALID if @p tracker is NULL.
 * A snapshot: reports served concurrently on another thread may change it.
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_tracker_pending(const kdc_tracker_t *tracker);

/**
 * @brief Messages confirmed (report without error AND status PERSISTED: the
 *        broker acked it under the producer's acks setting; use acks=all,
 *        the default) since creation or the last kdc_tracker_reset().
 * @returns the count (>= 0), or KDC_ERR_INVALID if @p tracker is NULL.
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_tracker_delivered(const kdc_tracker_t *tracker);

/**
 * @brief Messages whose delivery report did not confirm them: an error
 *        (broker error such as TOPIC_AUTHORIZATION_FAILED, or local such as
 *        __MSG_TIMED_OUT, __PURGE_QUEUE), or a status other than PERSISTED,
 *        since creation or the last kdc_tracker_reset(). Each is listed by
 *        kdc_tracker_failure().
 * @returns the count (>= 0), or KDC_ERR_INVALID if @p tracker is NULL.
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_tracker_failed(const kdc_tracker_t *tracker);

/**
 * @brief The error of the first failed delivery report since creation or the
 *        last kdc_tracker_reset().
 * @returns RD_KAFKA_RESP_ERR_NO_ERROR if none failed, or if the first failure
 *          was a report without error but not PERSISTED (check
 *          kdc_tracker_failed() and kdc_tracker_failure(t, 0)->status);
 *          RD_KAFKA_RESP_ERR__INVALID_ARG if @p tracker is NULL. A
 *          librdkafka code, not a KDC_ERR_* status: one of the "values, not
 *          statuses" of kdc/error.h, kept from libkdc 0.1.
 * Describe it with rd_kafka_err2str().
 */
KDC_CONTRACT("query")
KDC_EXPORT rd_kafka_resp_err_t
kdc_tracker_first_error(const kdc_tracker_t *tracker);

#ifdef __cplusplus
}
#endif

#endif /* KDC_TRACKER_H */
