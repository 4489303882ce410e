/**
 * @file kdc/classify.h
 * @brief Failure classification: poison, transient, membership, fatal.
 *
 * The durability contract treats a failure by its class:
 *  - poison: deterministic for this input (malformed, too large, schema):
 *    retrying the same message fails the same way. Route it to a dead-letter
 *    queue (kdc/dlq.h), confirmed, then commit it.
 *  - transient: the network, a broker or a downstream system is unavailable
 *    for now. Do NOT commit; retry or halt so the offset stays.
 *  - membership: the consumer's group membership or assignment is gone
 *    (rebalance, session timeout, fencing). The work of the old assignment
 *    epoch must be abandoned uncommitted (kdc/assignment.h); the partitions'
 *    new owner will process the messages again.
 *  - fatal: nothing will succeed without an operator or a new client
 *    (authorization, configuration, a fenced or fatally failed producer).
 *    Do not commit; stop.
 *
 * @par The default table
 * Every librdkafka code listed here is classified as shown (names as
 * rd_kafka_err2name() prints them); every other code is transient (retrying
 * is always safe for the contract: nothing is committed). A test reads this
 * table and checks it against kdc_classify(NULL, ...), row by row.
 *
 * | code                                   | class      |
 * |----------------------------------------|------------|
 * | NO_ERROR                               | none       |
 * | _PARTITION_EOF                         | none       |
 * | _BAD_MSG                               | poison     |
 * | _BAD_COMPRESSION                       | poison     |
 * | _KEY_SERIALIZATION                     | poison     |
 * | _VALUE_SERIALIZATION                   | poison     |
 * | _KEY_DESERIALIZATION                   | poison     |
 * | _VALUE_DESERIALIZATION                 | poison     |
 * | INVALID_MSG                            | poison     |
 * | INVALID_MSG_SIZE                       | poison     |
 * | MSG_SIZE_TOO_LARGE                     | poison     |
 * | RECORD_LIST_TOO_LARGE                  | poison     |
 * | INVALID_TIMESTAMP                      | poison     |
 * | UNSUPPORTED_FOR_MESSAGE_FORMAT         | poison     |
 * | INVALID_RECORD                         | poison     |
 * | _TRANSPORT                             | transient  |
 * | _RESOLVE                               | transient  |
 * | _MSG_TIMED_OUT                         | transient  |
 * | _TIMED_OUT                             | transient  |
 * | _ALL_BROKERS_DOWN                      | transient  |
 * | _QUEUE_FULL                            | transient  |
 * | _TIMED_OUT_QUEUE                       | transient  |
 * | _WAIT_COORD                            | transient  |
 * | _ISR_INSUFF                            | transient  |
 * | _NODE_UPDATE                           | transient  |
 * | _UNKNOWN_TOPIC                         | transient  |
 * | _UNKNOWN_PARTITION                     | transient  |
 * | _IN_PROGRESS                           | transient  |
 * | _PREV_IN_PROGRESS                      | transient  |
 * | _RETRY                                 | transient  |
 * | _PURGE_QUEUE                           | transient  |
 * | _PURGE_INFLIGHT                        | transient  |
 * | UNKNOWN_TOPIC_OR_PART                  | transient  |
 * | LEADER_NOT_AVAILABLE                   | transient  |
 * | NOT_LEADER_FOR_PARTITION               | transient  |
 * | REQUEST_TIMED_OUT                      | transient  |
 * | BROKER_NOT_AVAILABLE                   | transient  |
 * | REPLICA_NOT_AVAILABLE                  | transient  |
 * | NETWORK_EXCEPTION                      | transient  |
 * | COORDINATOR_LOAD_IN_PROGRESS           | transient  |
 * | COORDINATOR_NOT_AVAILABLE              | transient  |
 * | NOT_COORDINATOR                        | transient  |
 * | NOT_ENOUGH_REPLICAS                    | transient  |
 * | NOT_ENOUGH_REPLICAS_AFTER_APPEND       | transient  |
 * | CONCURRENT_TRANSACTIONS                | transient  |
 * | KAFKA_STORAGE_ERROR                    | transient  |
 * | FENCED_LEADER_EPOCH                    | transient  |
 * | UNKNOWN_LEADER_EPOCH                   | transient  |
 * | OFFSET_NOT_AVAILABLE                   | transient  |
 * | PREFERRED_LEADER_NOT_AVAILABLE         | transient  |
 * | ELIGIBLE_LEADERS_NOT_AVAILABLE         | transient  |
 * | UNSTABLE_OFFSET_COMMIT                 | transient  |
 * | THROTTLING_QUOTA_EXCEEDED              | transient  |
 * | ILLEGAL_GENERATION                     | membership |
 * | UNKNOWN_MEMBER_ID                      | membership |
 * | REBALANCE_IN_PROGRESS                  | membership |
 * | FENCED_INSTANCE_ID                     | membership |
 * | MEMBER_ID_REQUIRED                     | membership |
 * | _MAX_POLL_EXCEEDED                     | membership |
 * | _ASSIGNMENT_LOST                       | membership |
 * | _FATAL                                 | fatal      |
 * | _FENCED                                | fatal      |
 * | _DESTROY                               | fatal      |
 * | _CRIT_SYS_RESOURCE                     | fatal      |
 * | _INVALID_ARG                           | fatal      |
 * | _NOT_CONFIGURED                        | fatal      |
 * | _NOT_IMPLEMENTED                       | fatal      |
 * | _UNSUPPORTED_FEATURE                   | fatal      |
 * | _STATE                                 | fatal      |
 * | _SSL                                   | fatal      |
 * | _AUTHENTICATION                        | fatal      |
 * | _INCONSISTENT                          | fatal      |
 * | _GAPLESS_GUARANTEE                     | fatal      |
 * | OFFSET_METADATA_TOO_LARGE              | fatal      |
 * | TOPIC_EXCEPTION                        | fatal      |
 * | INVALID_REQUIRED_ACKS                  | fatal      |
 * | INCONSISTENT_GROUP_PROTOCOL            | fatal      |
 * | INVALID_GROUP_ID                       | fatal      |
 * | INVALID_SESSION_TIMEOUT                | fatal      |
 * | INVALID_COMMIT_OFFSET_SIZE             | fatal      |
 * | TOPIC_AUTHORIZATION_FAILED             | fatal      |
 * | GROUP_AUTHORIZATION_FAILED             | fatal      |
 * | CLUSTER_AUTHORIZATION_FAILED           | fatal      |
 * | UNSUPPORTED_SASL_MECHANISM             | fatal      |
 * | ILLEGAL_SASL_STATE                     | fatal      |
 * | UNSUPPORTED_VERSION                    | fatal      |
 * | INVALID_CONFIG                         | fatal      |
 * | INVALID_REQUEST                        | fatal      |
 * | POLICY_VIOLATION                       | fatal      |
 * | OUT_OF_ORDER_SEQUENCE_NUMBER           | fatal      |
 * | INVALID_PRODUCER_EPOCH                 | fatal      |
 * | INVALID_TXN_STATE                      | fatal      |
 * | INVALID_PRODUCER_ID_MAPPING            | fatal      |
 * | TRANSACTION_COORDINATOR_FENCED         | fatal      |
 * | TRANSACTIONAL_ID_AUTHORIZATION_FAILED  | fatal      |
 * | SECURITY_DISABLED                      | fatal      |
 * | SASL_AUTHENTICATION_FAILED             | fatal      |
 * | UNSUPPORTED_COMPRESSION_TYPE           | fatal      |
 * | GROUP_MAX_SIZE_REACHED                 | fatal      |
 * | PRODUCER_FENCED                        | fatal      |
 *
 * @par Overrides and the service's own errors
 * A classifier (kdc_classifier_new()) holds per-code overrides of this table
 * (kdc_classifier_set()) and the classes of the service's own error codes
 * (kdc_classifier_set_app(): a separate number space, e.g. HTTP statuses of a
 * downstream or the service's parse errors; unknown ones are transient).
 * Every function taking a classifier accepts NULL for "the default table".
 */
#ifndef KDC_CLASSIFY_H
#define KDC_CLASSIFY_H

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Failure class. Values are part of the ABI. */
typedef enum kdc_class_e {
        /** Not a failure (NO_ERROR, an end-of-partition event). */
        KDC_CLASS_NONE = 0,
        /** Deterministic for this message: dead-letter it, then commit. */
        KDC_CLASS_POISON = 1,
        /** May succeed later: do not commit; retry or halt. */
        KDC_CLASS_TRANSIENT = 2,
        /** Group membership/assignment lost: abandon the epoch's work. */
        KDC_CLASS_MEMBERSHIP = 3,
        /** Needs an operator or a new client: do not commit; stop. */
        KDC_CLASS_FATAL = 4
} kdc_class_t;

/** Opaque classifier: the default table plus the service's overrides. */
typedef struct kdc_classifier_s kdc_classifier_t;

/**
 * @brief Create a classifier that answers like the default table.
 * @param classifierp receives it (NULL on failure); release with
 *        kdc_classifier_destroy().
 * @returns 0, KDC_ERR_INVALID (NULL @p classifierp), KDC_ERR_NOMEM.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_classifier_new(kdc_classifier_t **classifierp);

/** @brief Free a classifier; NULL is ignored. No call may be using it. */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_classifier_destroy(kdc_classifier_t *classifier);

/**
 * @brief Classify librdkafka code @p err as @p cls from now on (replaces the
 *        default table's answer, or an earlier override).
 * @returns 0; KDC_ERR_INVALID for a NULL classifier or a @p cls outside
 *          kdc_class_t; KDC_ERR_NOMEM.
 * Thread-safe with concurrent classification (an internal mutex).
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_classifier_set(kdc_classifier_t *classifier,
                                  rd_kafka_resp_err_t err,
                                  kdc_class_t cls);

/**
 * @brief Classify the service's own error code @p code as @p cls. App codes
 *        are a number space of their own, never confused with librdkafka's.
 * @returns 0; KDC_ERR_INVALID; KDC_ERR_NOMEM. Thread-safe.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_classifier_set_app(kdc_classifier_t *classifier,
                                      int code,
                                      kdc_class_t cls);

/**
 * @brief The class of a librdkafka error code: the classifier's override if
 *        any, else the default table, else KDC_CLASS_TRANSIENT.
 * @param classifier a classifier, or NULL for the default table.
 * Thread-safe; no librdkafka call.
 */
KDC_CONTRACT("classify")
KDC_EXPORT kdc_class_t kdc_classify(const kdc_classifier_t *classifier,
                                    rd_kafka_resp_err_t err);

/**
 * @brief The class of an rd_kafka_error_t (transactional and admin APIs),
 *        using its flags, in this order:
 *        1. rd_kafka_error_is_fatal(): KDC_CLASS_FATAL (the client is
 *           unusable whatever the code);
 *        2. an override of rd_kafka_error_code() in the classifier;
 *        3. a code the default table calls membership: KDC_CLASS_MEMBERSHIP;
 *        4. rd_kafka_error_txn_requires_abort() or
 *           rd_kafka_error_is_retriable(): KDC_CLASS_TRANSIENT (abort the
 *           transaction and retry the batch);
 *        5. kdc_classify() of the code.
 * @param error may be NULL: KDC_CLASS_NONE.
 * Thread-safe. Relies on: rd_kafka_error_code(), rd_kafka_error_is_fatal(),
 * rd_kafka_error_is_retriable(), rd_kafka_error_txn_requires_abort().
 */
KDC_CONTRACT("classify")
KDC_EXPORT kdc_class_t kdc_classify_error(const kdc_classifier_t *classifier,
                                          const rd_kafka_error_t *error);

/**
 * @brief The class of the service's own error @p code: what
 *        kdc_classifier_set_app() said, else KDC_CLASS_TRANSIENT.
 * @param classifier may be NULL (then always KDC_CLASS_TRANSIENT).
 * Thread-safe.
 */
KDC_CONTRACT("classify")
KDC_EXPORT kdc_class_t kdc_classify_app(const kdc_classifier_t *classifier,
                                        int code);

/**
 * @brief Lower-case name of a class: "none", "poison", "transient",
 *        "membership", "fatal" (the values of the DLQ header
 *        kdc.failure.class); "unknown" for any other value; never NULL.
 *        Static storage.
 */
KDC_CONTRACT("query")
KDC_EXPORT const char *kdc_class_name(kdc_class_t cls);

#ifdef __cplusplus
}
#endif

#endif /* KDC_CLASSIFY_H */
