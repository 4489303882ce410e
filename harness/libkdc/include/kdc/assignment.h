/**
 * @file kdc/assignment.h
 * @brief Rebalance epochs: which partitions this consumer owns, since when,
 *        and whether a message's work may still be committed.
 *
 * Every assignment of partitions (eager assign, cooperative incremental
 * assign) starts a new epoch for them: a number, unique per kdc_assignment_t
 * and increasing, 0 meaning "none". Revoking or losing a partition ends its
 * epoch. The application stamps each polled message with its partition's
 * epoch (kdc_assignment_stamp()) and hands the stamp to the commit and
 * watermark helpers (kdc/commit.h, kdc/watermark.h), which refuse work from
 * an epoch that has ended (KDC_ERR_STALE): after a rebalance the partition
 * may belong to another consumer, which resumes from the last committed
 * offset; committing an older message's offset would overwrite that
 * consumer's progress, and the old work is redelivered to it anyway.
 *
 * @par Installing the rebalance callback
 * Either let libkdc be the callback (the conf opaque must then be the
 * kdc_assignment_t):
 * @code
 *   kdc_assignment_new(&a, NULL, NULL);
 *   rd_kafka_conf_set_rebalance_cb(conf, kdc_assignment_rebalance_cb);
 *   rd_kafka_conf_set_opaque(conf, a);
 * @endcode
 * or chain it from your own callback (your conf opaque stays yours):
 * @code
 *   static void my_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
 *                               rd_kafka_topic_partition_list_t *parts,
 *                               void *opaque) {
 *           struct app *app = opaque;
 *           kdc_assignment_rebalance(app->assignment, rk, err, parts);
 *   }
 * @endcode
 * Either way libkdc performs the (un)assignment: rd_kafka_assign() for the
 * eager protocol, rd_kafka_incremental_assign()/incremental_unassign() when
 * rd_kafka_rebalance_protocol() is "COOPERATIVE". To act around it (commit
 * what is done before partitions go), give kdc_assignment_new() a hook.
 *
 * @par Lost assignments
 * A lost assignment (session timeout, max.poll.interval.ms exceeded, fenced
 * member) arrives as a revoke for which rd_kafka_assignment_lost() is true.
 * Its epochs end BEFORE the hook runs, so nothing of them can be committed
 * from the hook; for an ordinary revoke they end AFTER the hook, which may
 * still commit completed work (kdc_watermark_commit(.., force=1, ..)).
 *
 * @par Threads
 * librdkafka calls the rebalance callback from rd_kafka_consumer_poll() (or
 * rd_kafka_poll() with rd_kafka_poll_set_consumer()) on the polling thread.
 * kdc_assignment_stamp(), kdc_assignment_epoch() and kdc_assignment_check()
 * may be called from any thread (an internal mutex). A message returned by
 * rd_kafka_consumer_poll() belongs to the assignment in force when it
 * returned (librdkafka drops messages fetched under an older assignment), so
 * stamp it on the polling thread before the next poll.
 */
#ifndef KDC_ASSIGNMENT_H
#define KDC_ASSIGNMENT_H

#include <stdint.h>

#include <kdc/export.h>
#include <librdkafka/rdkafka.h>

#ifdef __cplusplus
extern "C" {
#endif

/** Opaque record of a consumer's assignment and its epochs. */
typedef struct kdc_assignment_s kdc_assignment_t;

/**
 * @brief Called by libkdc during each rebalance (see kdc_assignment_new()).
 *
 * @param rk         the consumer.
 * @param err        RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS,
 *                   RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS, or another error
 *                   librdkafka passed to the rebalance callback.
 * @param partitions the partitions assigned or revoked (librdkafka's list;
 *                   do not keep or destroy it).
 * @param lost       non-zero when the revoked partitions were lost
 *                   (rd_kafka_assignment_lost()): their epochs have already
 *                   ended and commits of their work are refused.
 * @param opaque     the opaque given to kdc_assignment_new().
 *
 * Runs on the polling thread, inside the rebalance callback: for assigns
 * after the partitions were assigned, for revokes before they are
 * unassigned. It may commit (synchronously) but must not poll.
 */
typedef void(kdc_rebalance_hook_t)(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                   rd_kafka_topic_partition_list_t *partitions,
                                   int lost, void *opaque);

/**
 * @brief Create an empty assignment record (no partition, no epoch).
 * @param assignmentp receives it (NULL on failure); release with
 *        kdc_assignment_destroy() after the consumer is closed.
 * @param hook   optional hook (NULL for none), with its @p opaque.
 * @returns 0; KDC_ERR_INVALID (NULL @p assignmentp); KDC_ERR_NOMEM.
 * No librdkafka call is made.
 */
KDC_CONTRACT("create")
KDC_EXPORT int kdc_assignment_new(kdc_assignment_t **assignmentp,
                                  kdc_rebalance_hook_t *hook,
                                  void *opaque);

/** @brief Free the record; NULL is ignored. Close the consumer first. */
KDC_CONTRACT("destroy")
KDC_EXPORT void kdc_assignment_destroy(kdc_assignment_t *assignment);

/**
 * @brief Rebalance callback to register with rd_kafka_conf_set_rebalance_cb()
 *        when the conf opaque (rd_kafka_conf_set_opaque()) is the
 *        kdc_assignment_t. Calls kdc_assignment_rebalance(opaque, ...).
 *        Do not call it directly.
 */
KDC_CONTRACT("rebalance")
KDC_EXPORT void kdc_assignment_rebalance_cb(
    rd_kafka_t *rk,
    rd_kafka_resp_err_t err,
    rd_kafka_topic_partition_list_t *partitions,
    void *opaque);

/**
 * @brief Handle one rebalance event: record epochs and perform the
 *        (un)assignment. Call it from your own rebalance callback, with the
 *        arguments librdkafka gave it.
 *
 * - __ASSIGN_PARTITIONS: a new epoch starts for every listed partition; then
 *   rd_kafka_assign(rk, partitions) (eager) or
 *   rd_kafka_incremental_assign(rk, partitions) (cooperative); then the
 *   hook. If the assign call fails, the new epochs end at once.
 * - __REVOKE_PARTITIONS, not lost: the hook, then the listed partitions'
 *   epochs end, then rd_kafka_assign(rk, NULL) (eager) or
 *   rd_kafka_incremental_unassign(rk, partitions) (cooperative).
 * - __REVOKE_PARTITIONS, lost (rd_kafka_assignment_lost()): the epochs end,
 *   then the hook (lost = 1), then the unassign as above.
 * - any other error: every epoch ends, rd_kafka_assign(rk, NULL), the hook.
 *
 * @returns 0. KDC_ERR_INVALID for NULL @p assignment or @p rk.
 *          KDC_ERR_NOMEM: the epochs could not be recorded; the partitions
 *          are assigned but their messages stamp as epoch 0 (every commit
 *          helper refuses them; they are redelivered after the next
 *          rebalance). KDC_ERR_ASSIGN: librdkafka's assign/unassign call
 *          failed (its error was logged by librdkafka); no epoch is current
 *          for the listed partitions.
 *
 * Thread: the polling thread (inside the rebalance callback). Relies on:
 * rd_kafka_rebalance_protocol(), rd_kafka_assignment_lost(),
 * rd_kafka_assign(), rd_kafka_incremental_assign(),
 * rd_kafka_incremental_unassign().
 */
KDC_CONTRACT("rebalance")
KDC_EXPORT int kdc_assignment_rebalance(
    kdc_assignment_t *assignment,
    rd_kafka_t *rk,
    rd_kafka_resp_err_t err,
    rd_kafka_topic_partition_list_t *partitions);

/**
 * @brief The epoch to stamp on a message just returned by
 *        rd_kafka_consumer_poll(): its partition's current epoch.
 * @returns the epoch (> 0); 0 if @p assignment or @p msg is NULL, msg->err is
 *          set (an event, not a message), or its partition is not assigned
 *          through this record (then every helper refuses it). 0 is a
 *          value, not an error code: one of the "values, not statuses" of
 *          kdc/error.h, kept from libkdc 0.1.
 * Thread-safe. Relies on: rd_kafka_topic_name().
 */
KDC_CONTRACT("query")
KDC_EXPORT uint64_t kdc_assignment_stamp(const kdc_assignment_t *assignment,
                                         const rd_kafka_message_t *msg);

/**
 * @brief The current epoch of @p topic / @p partition, 0 if not assigned
 *        (or NULL arguments): a value, not an error code (kdc/error.h,
 *        "values, not statuses"). Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT uint64_t kdc_assignment_epoch(const kdc_assignment_t *assignment,
                                         const char *topic,
                                         int32_t partition);

/**
 * @brief Is @p epoch still the current epoch of @p topic / @p partition?
 * @returns 0 if it is; KDC_ERR_STALE if the partition was revoked or lost
 *          since, or @p epoch is 0 or not this partition's;
 *          KDC_ERR_INVALID for NULL arguments. Thread-safe.
 */
KDC_CONTRACT("query")
KDC_EXPORT int kdc_assignment_check(const kdc_assignment_t *assignment,
                                    const char *topic,
                                    int32_t partition,
                                    uint64_t epoch);

#ifdef __cplusplus
}
#endif

#endif /* KDC_ASSIGNMENT_H */
