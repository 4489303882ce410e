/* What a program does after a produce failed with a given error
 * (queue-full-dropped: RD_KAFKA_RESP_ERR__QUEUE_FULL; fatal-error-ignored:
 * RD_KAFKA_RESP_ERR__FATAL): does it drop the record and go on?
 *
 * From the produce, only the paths where its result says it failed are
 * followed (kdc_outcome_*, variables the error is stored in, and the legacy
 * rd_kafka_produce()'s rd_kafka_last_error() and errno). A comparison with
 * another error code (`err == RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE`) takes
 * the error out of the path; one with the error itself makes it known. The
 * record is lost when such a path
 *   - comes back to the produce after the loop moved on to another record
 *     (an assignment to a variable the produce's arguments read, `&v` given
 *     to a call, an array filled by fgets/read/snprintf/memcpy.., a call in a
 *     loop condition given one: `while (fgets(buf, ..))`,
 *     `std::getline(in, line)`), or
 *   - commits or stores the input's offset (kdc_facts_call_roles().commits).
 * It is not lost when the path comes back to the same produce without
 * moving on (a retry), seeks the input back (rd_kafka_seek*), hands the
 * record to other code (a call of the program or of a library outside the
 * analysis given the record, a produce of it elsewhere, a store of it into
 * an array or a field), or ends (exit, abort). A path that returns hands
 * the failure to the callers: each call of the function is followed the
 * same way in its caller (on the branches where the function's result says
 * it failed; every branch when it returns nothing or its result is
 * dropped), up to three calls up. A loop condition variable tested false
 * on the way (`while (run && ..)`) stays false until it is assigned.
 */
#ifndef KDC_RULES_PRODUCE_FAILURE_H
#define KDC_RULES_PRODUCE_FAILURE_H

#include "../rule.h"

#define KDC_ERR_QUEUE_FULL (-184) /* RD_KAFKA_RESP_ERR__QUEUE_FULL, RdKafka::ERR__QUEUE_FULL */
#define KDC_ERR_FATAL (-150)      /* RD_KAFKA_RESP_ERR__FATAL, RdKafka::ERR__FATAL */
#define KDC_ERRNO_ENOBUFS 105     /* rd_kafka_produce(): QUEUE_FULL (Linux errno) */
#define KDC_ERRNO_ECANCELED 125   /* rd_kafka_produce(): fatal error (Linux errno) */

typedef enum {
    KDC_LOSS_NEXT_RECORD, /* the loop went on to another record */
    KDC_LOSS_COMMIT       /* the input's offset was committed or stored */
} kdc_loss_kind_t;

typedef struct kdc_produce_loss {
    kdc_loss_kind_t kind;
    const kdc_func_t *func;      /* where the loss is seen */
    const kdc_expr_t *call;      /* in func: the produce, or the call of the function that
                                    returned its failure */
    const kdc_expr_t *produce;   /* the produce the failure comes from */
    const kdc_func_t *produce_func;
    const kdc_expr_t *at;        /* the commit, or where the loop moved on (may be NULL) */
    int known;                   /* the path compared the error with the code itself */
    int swallowed;               /* call's function keeps the failure to itself (returns
                                    nothing, or its result is dropped) */
} kdc_produce_loss_t;

typedef void (*kdc_loss_fn)(kdc_rule_ctx_t *ctx, const kdc_produce_loss_t *loss, void *arg);

/* Follows the failure of `produce` (a produce call in f) with error `code`
 * (errno_code: what the legacy rd_kafka_produce() sets errno to for it) and
 * calls fn for each place it is lost (at most once per function and call).
 * Returns how many. */
size_t kdc_produce_failure_losses(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                  const kdc_expr_t *produce, long long code, long long errno_code,
                                  kdc_loss_fn fn, void *arg);

/* Does the produce block instead of failing when the queue is full
 * (RD_KAFKA_MSG_F_BLOCK, C++ RK_MSG_BLOCK, as a constant)? */
int kdc_produce_blocks(const kdc_expr_t *produce);

/* Is the call a librdkafka produce of one message (rd_kafka_produce,
 * producev, produceva, C++ Producer::produce)? */
int kdc_is_single_produce(const kdc_expr_t *call);

#endif
