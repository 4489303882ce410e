/**
 * @file kdc/retry.h
 * @brief Bounded retries of a consumed message: attempts, exponential
 *        backoff with jitter and a cap, an overall deadline, per failure
 *        class; the partition paused while the message waits; on exhaustion
 *        a confirmed dead-letter routing or a halt.
 *
 * What Spring Kafka's DefaultErrorHandler does with a BackOff and a
 * DeadLetterPublishingRecoverer, in C, keeping the contract: nothing is
 * committed before an attempt succeeded or the DLQ write was confirmed.
 *
 * @par The loop
 * @code
 *   for (;;) {
 *           rd_kafka_message_t *m;
 *           uint64_t epoch;
 *
 *           if (kdc_retry_next(retry, &m, &epoch) == 0) {
 *                   // nothing due: poll (other partitions keep flowing)
 *                   m = rd_kafka_consumer_poll(consumer,
 *                                              kdc_retry_timeout(retry, 100));
 *                   if (!m || m->err) { ...; continue; }
 *                   epoch = kdc_assignment_stamp(assignment, m);
 *           }
 *           if (process(m, &cls) == 0) {                  // effect confirmed
 *                   kdc_commit_message(consumer, m, assignment, epoch, NULL);
 *                   kdc_retry_done(retry, consumer, m);    // resume
 *           } else {
 *                   int r = kdc_retry_failed(retry, consumer, m, assignment,
 *                                            epoch, cls, why, NULL);
 *                   if (r == KDC_RETRY_WAIT)
 *                           continue;                // m is the retry's now
 *                   if (r == KDC_RETRY_COMMIT)       // DLQ write confirmed
 *                           kdc_commit_message(consumer, m, assignment,
 *                                              epoch, NULL);
 *                   else if (r == KDC_RETRY_HALT || r < 0)
 *                           stop = 1;                // nothing committed
 *                   // KDC_RETRY_DROP: abandoned, the new owner redoes it
 *           }
 *           rd_kafka_message_destroy(m);
 *   }
 * @endcode
 *
 * @par How a retry keeps the group membership
 * A failed message that will be retried is kept by the retry object (not
 * sought back) and its partition is paused with rd_kafka_pause_partitions():
 * librdkafka then discards what it had fetched of that partition and
 * fetches nothing more of it, so no later message of the partition
 * overtakes the failed one. The application keeps calling
 * rd_kafka_consumer_poll() meanwhile (for its other partitions, or getting
 * NULL), which is what resets max.poll.interval.ms: a backoff longer than
 * max.poll.interval.ms never costs the membership. When the backoff has
 * passed, kdc_retry_next() hands the same message back for the next
 * attempt; the partition stays paused until kdc_retry_done() (the attempt
 * succeeded) seeks it to the offset after the message
 * (rd_kafka_seek_partitions()) and resumes it
 * (rd_kafka_resume_partitions()). The seek matters to a service that polls
 * in batches: librdkafka would otherwise resume after the last message
 * polled before the pause, and the messages of the batch after the failed
 * one, which the service dropped uncommitted, would never come again (a
 * test shows it). So: on a failure, hand the first failed message of the
 * partition to kdc_retry_failed() and drop the partition's later messages
 * of the batch, uncommitted; they come again after the retry.
 *
 * @par Rebalances
 * A partition revoked or lost while its message waits is not retried by
 * this consumer: its new owner starts from the committed offset, which is
 * still before the message. kdc_retry_rebalance_hook() (the hook of
 * kdc_assignment_new(), kdc/assignment.h) drops the partitions' pending
 * retries, destroying the held messages and resuming the partitions
 * before librdkafka unassigns them: librdkafka 2.0.2 keeps an application
 * pause across an eager revoke and a later assignment of the same
 * partition, which would otherwise never be fetched again (a test shows
 * it). A message whose epoch already ended is refused by
 * kdc_retry_failed() (KDC_RETRY_DROP), and kdc_commit_message() refuses
 * its commit (KDC_ERR_STALE) in any case.
 *
 * @par Policies per failure class (kdc/classify.h)
 * | class      | default                                                     |
 * |------------|-------------------------------------------------------------|
 * | poison     | 1 attempt, then the DLQ (halt when the retry has no DLQ)    |
 * | transient  | 10 attempts, 1 s doubling up to 30 s, jitter 0.2, no        |
 * |            | deadline, then halt                                         |
 * | membership | never retried: KDC_RETRY_DROP (the epoch's work is          |
 * |            | abandoned uncommitted); not configurable                    |
 * | fatal      | never retried: KDC_RETRY_HALT; not configurable             |
 *
 * The wait before attempt n + 1 (n = failed attempts so far, from 1) is
 * min(max_interval_ms, initial_ms * multiplier^(n-1)), less a random part of
 * at most jitter times it (so the cap is never exceeded). The policy is
 * exhausted when n reaches max_attempts, or when the next attempt would
 * start more than deadline_ms after the first failure: no attempt is made
 * after the deadline.
 *
 * @par Threads and memory
 * A kdc_retry_t is not thread-safe: call every function on the thread that
 * polls the consumer (rebalances, which drop pending retries, are served
 * there). Memory: one small record per partition with a failed message
 * (at most one per partition, since the partition is paused), plus the held
 * message itself.
 */
#ifndef KDC_RETRY_H
#define KDC_RETRY_H

#include <stdint.h>

#include <kdc/assignment.h>
#include <kdc/classify.h>
#include <kdc/dlq.h>
#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque retry state of one consumer. */
typedef struct kdc_retry_s kdc_retry_t;

/** What happens when a policy is exhausted. Values are part of the ABI. */
typedef enum kdc_retry_exhausted_e {
        /** Route the message to the DLQ (kdc_dlq_route(), confirmed, with
         *  kdc.failure.attempts), then the application commits it. */
        KDC_RETRY_EXHAUSTED_DLQ = 0,
        /** Halt: nothing is committed, the service stops (its partitions go
         *  to another consumer, which tries again from the committed
         *  offset). */
        KDC_RETRY_EXHAUSTED_HALT = 1
} kdc_retry_exhausted_t;

/** What kdc_retry_failed() decided (its non-negative returns). */
typedef enum kdc_retry_outcome_e {
        /** The message is dead-lettered: its DLQ write is confirmed
         *  (delivery report without error, PERSISTED). Commit it now. Its
         *  partition, if paused by earlier waits, is already sought to the
         *  offset after it and resumed (no kdc_retry_done() needed). */
        KDC_RETRY_COMMIT = 0,
        /** Kept for another attempt: the retry owns the message now and its
         *  partition is paused; kdc_retry_next() hands it back when due. */
        KDC_RETRY_WAIT = 1,
        /** Stop the service: the policy says halt (or the class is fatal).
         *  Nothing was committed; the partition stays paused. */
        KDC_RETRY_HALT = 2,
        /** Abandoned: a membership failure, or the message's epoch has
         *  ended. Nothing was committed; the partition's current owner
         *  processes it again from the committed offset. */
        KDC_RETRY_DROP = 3
} kdc_retry_outcome_t;

/**
 * @brief One class's retry policy: plain data, every field public. Fill it
 *        with kdc_retry_get_policy() and change what differs; fields are
 *        only ever appended.
 */
typedef struct kdc_retry_policy_s {
        /** Attempts in all, the first included (>= 1; 1: no retry). */
        int max_attempts;
        /** Wait before the second attempt, in milliseconds (>= 0). */
        int initial_ms;
        /** Factor of each further wait (>= 1.0; 1.0: fixed backoff). */
        double multiplier;
        /** Cap of one wait, in milliseconds (>= initial_ms). */
        int max_interval_ms;
        /** Random part taken off each wait, 0.0 (none) .. 1.0. */
        double jitter;
        /** No attempt starts later than this after the first failure, in
         *  milliseconds; -1: no deadline. */
        int deadline_ms;
        /** Exhausted: dead-letter or halt. */
        kdc_retry_exhausted_t on_exhausted;
        /** Bound of the DLQ routing (enqueue and delivery report), in
         *  milliseconds, as kdc_dlq_route()'s timeout_ms (-1: none). */
        int dlq_timeout_ms;
} kdc_retry_policy_t;

/**
 * @brief Create the retry state of one consumer, with the default policies
 *        (table above).
 *
 * @param retryp receives it (NULL on failure); release with
 *               kdc_retry_destroy() BEFORE the consumer is destroyed (held
 *               messages belong to it).
 * @param dlq    the DLQ router for exhausted messages (borrowed: it must
 *               outlive the retry), or NULL: then no policy may dead-letter
 *               and poison's default is to halt.
 * @returns 0; KDC_ERR_INVALID (NULL @p retryp); KDC_ERR_NOMEM.
 * No librdkafka call.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_retry_new(kdc_retry_t **retryp, kdc_dlq_t *dlq);

/**
 * @brief Free the retry state and destroy the messages it holds
 *        (rd_kafka_message_destroy()), without resuming their partitions;
 *        NULL is ignored. Call it before rd_kafka_destroy() of the consumer,
 *        after rd_kafka_consumer_close().
 */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_retry_destroy(kdc_retry_t *retry);

/**
 * @brief Set the policy of failure class @p cls (KDC_CLASS_POISON or
 *        KDC_CLASS_TRANSIENT) for failures recorded from now on (a message
 *        already waiting keeps its scheduled wait).
 * @param policy copied.
 * @returns 0; KDC_ERR_INVALID: NULL arguments, another class, a field out of
 *          its range (see kdc_retry_policy_t), or KDC_RETRY_EXHAUSTED_DLQ
 *          for a retry created without a DLQ router. Nothing is changed
 *          then. No librdkafka call.
 */
KDC_CONTRACT("configure")
KDC_EXPORT int kdc_retry_set_policy(kdc_retry_t *retry, kdc_class_t cls,
                                    const kdc_retry_policy_t *policy);

/**
 * @brief Read the policy of @p cls (KDC_CLASS_POISON or
 *        KDC_CLASS_TRANSIENT) into @p policy.
 * @returns 0; KDC_ERR_INVALID for NULL arguments or another class.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_retry_get_policy(const kdc_retry_t *retry, kdc_class_t cls,
                                    kdc_retry_policy_t *policy);

/**
 * @brief Record a failed attempt at @p msg and decide: wait and retry,
 *        dead-letter, halt or drop.
 *
 * The attempt count is per message (topic, partition, offset): a message
 * handed back by kdc_retry_next() and failed again counts one more; a
 * different offset of the same partition starts at 1.
 *  - @p cls KDC_CLASS_MEMBERSHIP, or @p assignment given and @p epoch no
 *    longer current: KDC_RETRY_DROP. A partition paused by an earlier wait
 *    is sought back to the message and resumed: if it is still this
 *    consumer's, the message comes again; if not, its new owner starts from
 *    the committed offset.
 *  - @p cls KDC_CLASS_FATAL (or KDC_CLASS_NONE): KDC_RETRY_HALT.
 *  - attempts left within the deadline: the partition is paused
 *    (rd_kafka_pause_partitions()), the message kept, KDC_RETRY_WAIT.
 *  - exhausted, policy halt: KDC_RETRY_HALT (the partition stays paused).
 *  - exhausted, policy DLQ: kdc_dlq_route() of @p msg with class @p cls,
 *    @p error_text and the header kdc.failure.attempts (the attempts made),
 *    waiting at most the policy's dlq_timeout_ms for its delivery report;
 *    confirmed: KDC_RETRY_COMMIT, commit @p msg now (a paused partition
 *    is sought to msg->offset + 1 and resumed). Not confirmed
 *    (@p delivery_err says why): KDC_RETRY_WAIT, the message is kept
 *    (paused, handed back after the policy's longest wait, and routed again
 *    when it fails again); nothing may be committed.
 * On every outcome but KDC_RETRY_WAIT the retry's record of the message is
 * gone; a paused partition is resumed by
 * KDC_RETRY_COMMIT, kdc_retry_done() or a rebalance (after KDC_RETRY_HALT
 * it stays paused: the service stops).
 *
 * @param retry      the retry state.
 * @param consumer   the consumer @p msg was polled from.
 * @param msg        the message, as polled or as kdc_retry_next() handed it
 *                   back (msg->err == NO_ERROR). Ownership: on
 *                   KDC_RETRY_WAIT, and only then, the retry owns it (do
 *                   not destroy or use it); on every other return,
 *                   negative ones included, the caller still does.
 * @param assignment the consumer's assignment record, or NULL to skip the
 *                   epoch check.
 * @param epoch      kdc_assignment_stamp() of @p msg (handed back by
 *                   kdc_retry_next() for a retried message).
 * @param cls        the failure's class (kdc_classify(), kdc_classify_app()).
 * @param error_text why, for the DLQ header kdc.failure.error (may be NULL).
 * @param delivery_err if not NULL, receives the librdkafka error of the DLQ
 *                   routing when one was made (as kdc_dlq_route()'s
 *                   delivery_err: RD_KAFKA_RESP_ERR_NO_ERROR when confirmed;
 *                   e.g. TOPIC_AUTHORIZATION_FAILED or __MSG_TIMED_OUT
 *                   with KDC_RETRY_WAIT when not), else
 *                   RD_KAFKA_RESP_ERR_NO_ERROR.
 *
 * @returns a kdc_retry_outcome_t (>= 0). KDC_ERR_INVALID: NULL
 *          @p retry, @p consumer or @p msg, msg->err set, no topic; nothing
 *          recorded, the caller keeps @p msg. KDC_ERR_NOMEM: nothing
 *          recorded (treat as halt). KDC_ERR_ASSIGN: librdkafka refused to
 *          pause the partition; nothing recorded (treat as halt: continuing
 *          would let later messages overtake this one).
 *
 * Thread: the polling thread; blocks only for a DLQ routing (serving the
 * DLQ producer's delivery reports on this thread). Relies on:
 * rd_kafka_pause_partitions() (pausing discards the partition's fetched
 * messages and saves the position after the last one polled),
 * kdc_dlq_route()'s confirmation, rd_kafka_topic_name().
 */
KDC_CONTRACT("dlq-route")
KDC_EXPORT int kdc_retry_failed(kdc_retry_t *retry, rd_kafka_t *consumer,
                                rd_kafka_message_t *msg,
                                const kdc_assignment_t *assignment,
                                uint64_t epoch, kdc_class_t cls,
                                const char *error_text,
                                rd_kafka_resp_err_t *delivery_err);

/**
 * @brief Hand back one message whose wait is over, for its next attempt.
 *
 * @param retry    the retry state.
 * @param msgp     receives the message (NULL when none is due). The caller
 *                 owns it again: process it, then kdc_retry_done() on
 *                 success or kdc_retry_failed() on failure, as for a
 *                 message just polled.
 * @param epochp   if not NULL, receives the epoch the message was stamped
 *                 with (for kdc_commit_message()).
 * @returns 1: a message was handed back; 0: none is due; KDC_ERR_INVALID for
 *          NULL @p retry or @p msgp. Its partition stays
 *          paused. Thread: the polling thread. No librdkafka call.
 */
KDC_CONTRACT("retry")
KDC_EXPORT int kdc_retry_next(kdc_retry_t *retry, rd_kafka_message_t **msgp,
                              uint64_t *epochp);

/**
 * @brief The attempt at @p msg succeeded (its effect is confirmed; commit it
 *        as usual): forget its retry record, seek its partition to
 *        msg->offset + 1 and resume it. For a message that never failed it
 *        does nothing: call it after every success.
 * @returns 0: a record was forgotten and the partition resumed;
 *          KDC_ERR_NOENT: no record for this message (nothing done);
 *          KDC_ERR_INVALID: NULL arguments, msg->err set, no topic;
 *          KDC_ERR_ASSIGN: the record is gone but librdkafka refused the
 *          seek or the resume (e.g. the partition was revoked meanwhile);
 *          KDC_ERR_NOMEM.
 * Commits nothing. Thread: the polling thread; blocks for the local seek
 * (at most 5 s; librdkafka's own threads answer it, not the broker).
 * Relies on: rd_kafka_seek_partitions() of a paused partition setting the
 * position its resume fetches from; rd_kafka_resume_partitions().
 */
KDC_CONTRACT("retry")
KDC_EXPORT int kdc_retry_done(kdc_retry_t *retry, rd_kafka_t *consumer,
                              const rd_kafka_message_t *msg);

/**
 * @brief How long the caller may block in rd_kafka_consumer_poll() before a
 *        waiting message is due, in milliseconds: 0 if one is due now,
 *        @p max_ms if none is waiting or none is due sooner.
 * @returns that time (>= 0); KDC_ERR_INVALID for NULL @p retry or
 *          @p max_ms < 0.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_retry_timeout(const kdc_retry_t *retry, int max_ms);

/**
 * @brief Messages with a retry record (waiting, or handed back and not yet
 *        done or failed again).
 * @returns the count (>= 0); KDC_ERR_INVALID for NULL @p retry.
 */
KDC_CONTRACT("query")
KDC_EXPORT int64_t kdc_retry_pending(const kdc_retry_t *retry);

/**
 * @brief Failed attempts recorded for @p msg (its topic, partition, offset).
 * @returns the count (>= 0; 0: no record); KDC_ERR_INVALID for NULL
 *          arguments, msg->err set or no topic.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_retry_attempts(const kdc_retry_t *retry,
                                  const rd_kafka_message_t *msg);

/**
 * @brief A kdc_rebalance_hook_t (kdc/assignment.h) that drops the pending
 *        retries of revoked or lost partitions; @p opaque is the
 *        kdc_retry_t.
 *
 * Give it to kdc_assignment_new(&a, kdc_retry_rebalance_hook, retry), or
 * call it from your own hook with the same arguments. On
 * __REVOKE_PARTITIONS (lost or not), for each listed partition with a
 * record: the held message is destroyed, the record forgotten and the
 * partition resumed (rd_kafka_resume_partitions(), so that it is not still
 * paused if it is assigned again). On an error other than assign/revoke,
 * every record is dropped. Assigns change nothing. Nothing is committed:
 * the new owner starts from the committed offset.
 *
 * Thread: the polling thread, inside the rebalance callback (before
 * libkdc unassigns the partitions). Relies on: rd_kafka_resume_partitions().
 */
KDC_CONTRACT("rebalance")
KDC_EXPORT void kdc_retry_rebalance_hook(
    rd_kafka_t *rk, rd_kafka_resp_err_t err,
    rd_kafka_topic_partition_list_t *partitions, int lost, void *opaque);

#ifdef __cplusplus
}
#endif

#endif /* KDC_RETRY_H */
