/**
 * @file kdc/dlq.h
 * @brief Confirmed dead-letter queue (DLQ) routing, the event identity, and
 *        a decoder for the DLQ headers that treats them as untrusted input.
 *
 * A message classified poison (kdc/classify.h) is produced to a DLQ topic
 * with headers that say where it came from and why it failed, and the call
 * returns 0 only when that DLQ message's own delivery report confirmed it
 * (no error, status PERSISTED). Only then may the input offset be committed:
 *
 * @code
 *   if (kdc_dlq_route(dlq, msg, KDC_CLASS_POISON, why, 30000, &err) == 0)
 *           kdc_commit_message(consumer, msg, assignment, epoch, NULL);
 *   else
 *           ;  // transient: do not commit, the message stays
 * @endcode
 *
 * @par Headers written on every DLQ message (values are text)
 * | header                  | value                                          |
 * |-------------------------|------------------------------------------------|
 * | kdc.original.topic      | topic the event was first consumed from        |
 * | kdc.original.partition  | its partition, decimal                         |
 * | kdc.original.offset     | its offset, decimal                            |
 * | kdc.original.timestamp  | its timestamp in ms since the epoch, or -1     |
 * | kdc.consumer.group      | consumer group that failed it (if configured)  |
 * | kdc.failure.class       | poison, transient, membership or fatal         |
 * | kdc.failure.error       | error text (at most 1024 bytes; control        |
 * |                         | characters other than tab, LF, CR become '?')  |
 * | kdc.retry.count         | earlier routings of this event, decimal (0..)  |
 * | kdc.identity            | event identity: 64 lower-case hex digits       |
 * | kdc.failure.attempts    | processing attempts made before the retry      |
 * |                         | policy gave up, decimal (1..); written only by |
 * |                         | kdc_retry_failed() (kdc/retry.h)               |
 *
 * Other headers of the input are copied; any kdc.* header of the input is
 * replaced. Key and value are the input's, unchanged.
 *
 * @par Batched routing
 * kdc_dlq_produce() enqueues the same DLQ message through a tracker
 * (kdc/tracker.h) instead of waiting for it: one kdc_tracker_wait() then
 * confirms a batch's routings together with its outputs. kdc_dlq_headers()
 * builds the header list for a DLQ produce the service makes itself.
 *
 * @par Identity and retries (decision record rule 7)
 * The identity of an event is SHA-256 (OpenSSL EVP) of its ORIGINAL topic,
 * key and value (kdc_identity()), never anything of the DLQ envelope. When
 * the message being routed is itself a kdc DLQ message (a retry consumer
 * failed it again), its kdc.* headers are decoded (kdc_dlq_decode()): the
 * original topic, partition, offset and timestamp are kept, so the identity
 * is the same and kdc.retry.count is the decoded count + 1. The router also
 * counts, per identity, the routings it confirmed (the last 1024 identities),
 * so an input redelivered and routed again (its commit failed after a
 * confirmed routing) gets the next count too: the count never goes back.
 * Headers that fail decoding are ignored: the message is then routed as a
 * new event of the topic it was consumed from.
 */
#ifndef KDC_DLQ_H
#define KDC_DLQ_H

#include <stddef.h>
#include <stdint.h>

#include <kdc/classify.h>
#include <kdc/export.h>
#include <kdc/tracker.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Bytes in an identity (SHA-256). */
#define KDC_IDENTITY_LEN 32

/** Header names (see the table above). */
#define KDC_DLQ_HDR_TOPIC "kdc.original.topic"
#define KDC_DLQ_HDR_PARTITION "kdc.original.partition"
#define KDC_DLQ_HDR_OFFSET "kdc.original.offset"
#define KDC_DLQ_HDR_TIMESTAMP "kdc.original.timestamp"
#define KDC_DLQ_HDR_GROUP "kdc.consumer.group"
#define KDC_DLQ_HDR_CLASS "kdc.failure.class"
#define KDC_DLQ_HDR_ERROR "kdc.failure.error"
#define KDC_DLQ_HDR_RETRY "kdc.retry.count"
#define KDC_DLQ_HDR_IDENTITY "kdc.identity"
/** Written by the retry policy only (kdc/retry.h); kdc_dlq_decode() does not
 *  decode it (read it with rd_kafka_header_get_last()). */
#define KDC_DLQ_HDR_ATTEMPTS "kdc.failure.attempts"

/** Longest topic name Kafka accepts, in bytes. */
#define KDC_DLQ_TOPIC_MAX 249
/** Longest consumer group id the decoder accepts, in bytes. */
#define KDC_DLQ_GROUP_MAX 255
/** Longest error text written and accepted, in bytes. */
#define KDC_DLQ_ERROR_MAX 1024

/** Bits of kdc_dlq_info_t.fields: which headers were present and valid. */
enum {
        KDC_DLQ_F_TOPIC = 1u << 0,
        KDC_DLQ_F_PARTITION = 1u << 1,
        KDC_DLQ_F_OFFSET = 1u << 2,
        KDC_DLQ_F_TIMESTAMP = 1u << 3,
        KDC_DLQ_F_GROUP = 1u << 4,
        KDC_DLQ_F_CLASS = 1u << 5,
        KDC_DLQ_F_ERROR = 1u << 6,
        KDC_DLQ_F_RETRY = 1u << 7,
        KDC_DLQ_F_IDENTITY = 1u << 8
};

/**
 * @brief The decoded kdc.* headers of a DLQ message (kdc_dlq_decode()).
 * Plain data owned by the caller; a field is meaningful only if its
 * KDC_DLQ_F_* bit is set in @c fields (otherwise it is zero / empty).
 */
typedef struct kdc_dlq_info_s {
        unsigned fields;                     /**< KDC_DLQ_F_* bits */
        char topic[KDC_DLQ_TOPIC_MAX + 1];   /**< NUL-terminated */
        int32_t partition;                   /**< >= 0 */
        int64_t offset;                      /**< >= 0 */
        int64_t timestamp;                   /**< ms, or -1 */
        char group[KDC_DLQ_GROUP_MAX + 1];   /**< NUL-terminated */
        kdc_class_t failure_class;           /**< never KDC_CLASS_NONE */
        char error[KDC_DLQ_ERROR_MAX + 1];   /**< NUL-terminated */
        int32_t retry_count;                 /**< >= 0 */
        unsigned char identity[KDC_IDENTITY_LEN];
} kdc_dlq_info_t;

/** Opaque DLQ router bound to one producer. */
typedef struct kdc_dlq_s kdc_dlq_t;

/**
 * @brief The identity of an event: SHA-256 over
 *        "kdc.identity.v1" 0x00,
 *        u32be(topic length) topic,
 *        u8(key != NULL) u32be(key_len) key,
 *        u8(value != NULL) u32be(value_len) value
 *        (lengths in bytes; a NULL key or value is distinct from an empty
 *        one). Any implementation can recompute it from those bytes.
 *
 * @param topic     the ORIGINAL topic name (NUL-terminated, not NULL).
 * @param key       key bytes or NULL (then @p key_len must be 0).
 * @param value     value bytes or NULL (then @p value_len must be 0).
 * @param identity  receives the 32 bytes.
 * @returns 0; KDC_ERR_INVALID for NULL @p topic / @p identity, a length
 *          without a buffer, or a length above 4 GiB - 1; KDC_ERR_NOMEM if
 *          OpenSSL could not allocate its digest context.
 * Thread-safe. Relies on: OpenSSL EVP_DigestInit_ex(EVP_sha256()).
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_identity(const char *topic,
                            const void *key, size_t key_len,
                            const void *value, size_t value_len,
                            unsigned char identity[KDC_IDENTITY_LEN]);

/**
 * @brief Create a DLQ router producing on @p producer.
 *
 * @param dlqp     receives the router (NULL on failure); release with
 *                 kdc_dlq_destroy().
 * @param producer a producer with a dr_msg_cb for libkdc (kdc/delivery.h);
 *                 borrowed: it must outlive the router. Checked on each
 *                 route, not here.
 * @param group    the consumer group written to kdc.consumer.group (copied);
 *                 NULL to omit the header.
 * @returns 0; KDC_ERR_INVALID (NULL @p dlqp or @p producer, @p group longer
 *          than KDC_DLQ_GROUP_MAX); KDC_ERR_NOMEM.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_dlq_new(kdc_dlq_t **dlqp, rd_kafka_t *producer,
                           const char *group);

/** @brief Free the router; NULL is ignored. No route may be running. */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_dlq_destroy(kdc_dlq_t *dlq);

/**
 * @brief Is @p topic a topic name Kafka accepts: 1 to KDC_DLQ_TOPIC_MAX
 *        bytes of [A-Za-z0-9._-], not "." or ".."? The check
 *        kdc_dlq_set_topic() and kdc_dlq_decode() make.
 * @returns 0 if it is; KDC_ERR_INVALID if it is not, or @p topic is NULL.
 * Thread-safe; no librdkafka call (the broker's rule, Topic.validate).
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_topic_name_check(const char *topic);

/**
 * @brief Route every message to @p topic (copied) instead of the default:
 *        "<topic the message was consumed from>.dlq", or that topic itself
 *        when its name already ends in ".dlq" (a retry consumer reading a
 *        DLQ routes back to it). The default never comes from the
 *        message's headers: a record cannot choose where it is routed.
 *        NULL restores the default.
 * @returns 0; KDC_ERR_INVALID (NULL @p dlq, an empty or over-long name);
 *          KDC_ERR_NOMEM. Thread-safe with concurrent routes.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_dlq_set_topic(kdc_dlq_t *dlq, const char *topic);

/**
 * @brief Produce @p msg to the DLQ with the kdc.* headers and wait for that
 *        message's delivery report.
 *
 * Blocks like kdc_produce_confirmed() (rd_kafka_flush() in slices of at most
 * 10 ms on the calling thread, so linger.ms is not waited out), with the
 * same deadline rules.
 *
 * @param dlq        the router.
 * @param msg        the failed input, as consumed (msg->err == NO_ERROR);
 *                   only read; the caller keeps it.
 * @param cls        why it failed: KDC_CLASS_POISON usually; any class but
 *                   KDC_CLASS_NONE is accepted and written.
 * @param error_text human-readable reason, or NULL; at most
 *                   KDC_DLQ_ERROR_MAX bytes are written (cut at a UTF-8
 *                   character boundary).
 * @param timeout_ms total time for enqueueing and delivery, in milliseconds;
 *                   -1 waits for the report however long it takes.
 * @param delivery_err if not NULL, receives the librdkafka error that
 *                   decided the outcome, as for kdc_produce_confirmed().
 *
 * @returns 0: the DLQ message is confirmed (no error, status PERSISTED); the
 *          input may now be committed. The router's retry count for the
 *          identity is now the written kdc.retry.count + 1.
 *          KDC_ERR_DELIVERY / KDC_ERR_TIMEOUT / KDC_ERR_QUEUE_FULL /
 *          KDC_ERR_PRODUCE / KDC_ERR_CONF: not confirmed (see
 *          kdc_produce_confirmed()); do NOT commit the input.
 *          KDC_ERR_INVALID: NULL @p dlq or @p msg, msg->err set, msg
 *          without a topic, @p cls not a failure class, @p timeout_ms < -1.
 *          KDC_ERR_NOMEM. Nothing was produced for these two.
 *
 * Thread-safe (several threads may route through one router). Relies on:
 * rd_kafka_message_headers(), rd_kafka_header_get_all(),
 * rd_kafka_message_timestamp(), rd_kafka_produceva() with
 * RD_KAFKA_V_HEADERS, the delivery report's rd_kafka_message_status().
 */
KDC_CONTRACT("dlq-route")
KDC_EXPORT int kdc_dlq_route(kdc_dlq_t *dlq,
                             const rd_kafka_message_t *msg,
                             kdc_class_t cls,
                             const char *error_text,
                             int timeout_ms,
                             rd_kafka_resp_err_t *delivery_err);

/**
 * @brief Produce @p msg to the DLQ with the kdc.* headers through a
 *        tracker, without waiting: the batched form of kdc_dlq_route().
 *
 * The DLQ message is the one kdc_dlq_route() would produce (same topic,
 * key, value and headers), enqueued with kdc_tracker_produce() on the
 * router's producer and counted by @p tracker. It is confirmed only when
 * kdc_tracker_wait(tracker, producer, ..) returns 0: commit the inputs
 * routed this way after that wait, never before. One wait confirms a whole
 * batch of routings and outputs, instead of one round trip per poison
 * message:
 * @code
 *   for (each message m of the batch)
 *           if (poison(m) ? kdc_dlq_produce(dlq, t, m, KDC_CLASS_POISON, why,
 *                                           5000, &err)
 *                         : kdc_tracker_producev(t, producer, 5000, &err, ...))
 *                   goto transient;                 // nothing of m enqueued
 *   if (kdc_tracker_wait(t, producer, 30000) == 0)
 *           commit the batch;                       // outputs and DLQ confirmed
 * @endcode
 *
 * The router's memory of confirmed routings (kdc_dlq_retry_count()) is not
 * updated: the outcome is the tracker's. kdc.retry.count still grows when a
 * DLQ message is routed again (it is decoded from the message's headers).
 *
 * @param dlq        the router; its producer is the one produced on.
 * @param tracker    counts the DLQ message; bound to the router's producer
 *                   by this call (or already bound to it).
 * @param msg, cls, error_text as for kdc_dlq_route().
 * @param timeout_ms how long to retry while the local queue is full, in
 *                   milliseconds (kdc_tracker_produce()); bounds enqueueing
 *                   only, never delivery.
 * @param produce_err if not NULL, receives the librdkafka error of the
 *                   produce (RD_KAFKA_RESP_ERR_NO_ERROR on success), as for
 *                   kdc_tracker_produce(); RD_KAFKA_RESP_ERR__FAIL with
 *                   KDC_ERR_NOMEM.
 *
 * @returns 0: enqueued and counted pending in the tracker (NOT confirmed).
 *          KDC_ERR_INVALID: as for kdc_dlq_route(), NULL @p tracker, or a
 *          tracker bound to another producer. KDC_ERR_CONF,
 *          KDC_ERR_QUEUE_FULL, KDC_ERR_PRODUCE: as for
 *          kdc_tracker_produce(). KDC_ERR_NOMEM. On every failure nothing
 *          was enqueued or counted: do not commit the input.
 *
 * Thread-safe. Relies on: what kdc_dlq_route() relies on, and
 * rd_kafka_produceva() taking the header list on success.
 */
KDC_CONTRACT("dlq-produce")
KDC_EXPORT int kdc_dlq_produce(kdc_dlq_t *dlq, kdc_tracker_t *tracker,
                               const rd_kafka_message_t *msg, kdc_class_t cls,
                               const char *error_text, int timeout_ms,
                               rd_kafka_resp_err_t *produce_err);

/**
 * @brief Build the headers kdc_dlq_route() would write for @p msg, for a
 *        DLQ produce the service makes itself.
 *
 * The list holds the input's own headers except any kdc.* one, then every
 * kdc.* header of the table above (the identity, the original topic,
 * partition, offset and timestamp, decoded from @p msg's headers when it is
 * itself a kdc DLQ message, the retry count, the group, the class and the
 * error text). Give it to rd_kafka_producev() with RD_KAFKA_V_HEADERS(h)
 * (or kdc_tracker_producev()), with the input's key and value, and confirm
 * that produce before committing the input. The router's confirmed-routing
 * memory is read, not updated.
 *
 * @param dlq        the router (its group, its memory of retries).
 * @param msg, cls, error_text as for kdc_dlq_route().
 * @param headersp   receives a new list (NULL on failure). The caller owns
 *                   it: pass it to a produce that succeeds (librdkafka then
 *                   owns it) or free it with rd_kafka_headers_destroy().
 * @returns 0; KDC_ERR_INVALID (NULL @p dlq, @p msg or @p headersp, msg->err
 *          set, msg without a topic, @p cls not a failure class);
 *          KDC_ERR_NOMEM. Thread-safe; produces nothing. Relies on:
 *          rd_kafka_message_headers(), rd_kafka_header_get_all(),
 *          rd_kafka_message_timestamp(), rd_kafka_header_add().
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_dlq_headers(kdc_dlq_t *dlq, const rd_kafka_message_t *msg,
                               kdc_class_t cls, const char *error_text,
                               rd_kafka_headers_t **headersp);

/**
 * @brief Routings of the event @p identity this router has confirmed (among
 *        the last 1024 identities it routed); 0 if none.
 * @returns the count (>= 0), or KDC_ERR_INVALID for NULL arguments.
 * Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT int32_t kdc_dlq_retry_count(const kdc_dlq_t *dlq,
                                       const unsigned char
                                           identity[KDC_IDENTITY_LEN]);

/**
 * @brief Decode the kdc.* headers of a DLQ message, treating every byte as
 *        untrusted.
 *
 * Get the headers with rd_kafka_message_headers(msg, &headers). Every kdc.*
 * header must appear at most once, have a non-NULL value, and match its
 * syntax exactly: topic 1..249 bytes of [A-Za-z0-9._-] and not "." or "..";
 * partition, offset, retry count: canonical decimal (no sign, no leading
 * zero, no spaces) within int32/int64/int32; timestamp: the same, or "-1";
 * class: one of the four failure class names; identity: exactly 64
 * lower-case hex digits; group and error: at most KDC_DLQ_GROUP_MAX /
 * KDC_DLQ_ERROR_MAX bytes without NUL or control characters (tab, LF, CR
 * allowed in the error). Unknown kdc.* names and other headers are ignored.
 * Nothing is read beyond each value's size; no allocation is made.
 *
 * @param headers the message's headers, or NULL.
 * @param info    receives the decoded fields; zeroed first; on
 *                KDC_ERR_MALFORMED the valid fields are still filled and
 *                flagged in info->fields.
 * @returns 0: a kdc DLQ message: topic, partition, offset and identity are
 *          present and every kdc.* header present is valid.
 *          KDC_ERR_NOENT: no kdc.* header at all (or @p headers NULL).
 *          KDC_ERR_MALFORMED: a kdc.* header is invalid or repeated, or a
 *          required one is missing.
 *          KDC_ERR_INVALID: @p info is NULL.
 * Thread-safe. Relies on: rd_kafka_header_get_all().
 */
KDC_CONTRACT("decode")
KDC_EXPORT int kdc_dlq_decode(const rd_kafka_headers_t *headers,
                              kdc_dlq_info_t *info);

#ifdef __cplusplus
}
#endif

#endif /* KDC_DLQ_H */
