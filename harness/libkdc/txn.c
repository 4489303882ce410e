/* Transactional consume-process-produce with recovery (kdc/txn.h): commit
 * outputs and input offsets together; on failure abort and rewind the
 * consumer to the group's committed offsets. */
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>
#include <kdc/txn.h>

#include "internal.h"

struct kdc_txn_s {
        rd_kafka_t *producer, *consumer;
        int api_timeout_ms;
        rd_kafka_topic_partition_list_t *offsets; /* next offset per partition */
        kdc_stats_t *stats; /* kdc_stats_attach_txn(); NULL: none */
};

void kdc__txn_set_stats(kdc_txn_t *txn, kdc_stats_t *s) {
        txn->stats = s;
}

/* Rewind txn's consumer, counting a success. */
static int rewind_counted(kdc_txn_t *txn) {
        int r = kdc_txn_rewind(txn->consumer, txn->api_timeout_ms, NULL);

        if (r == 0)
                kdc__stats_add(txn->stats, KDC__STAT_TXN_REWINDS, 1);
        return r;
}

static void result_clear(kdc_txn_result_t *r) {
        if (r)
                memset(r, 0, sizeof *r);
}

/* Record an rd_kafka_error_t in the result and free it. */
static void result_error(kdc_txn_result_t *r, rd_kafka_error_t *error) {
        if (r && error) {
                r->err = rd_kafka_error_code(error);
                r->cls = kdc_classify_error(NULL, error);
        }
        rd_kafka_error_destroy(error);
}

static int remaining(int64_t deadline) {
        int64_t left = deadline - kdc__now_ms();

        return left > 0 ? (int)(left < INT32_MAX ? left : INT32_MAX) : 0;
}

int kdc_txn_new(kdc_txn_t **txnp, rd_kafka_t *producer, rd_kafka_t *consumer,
                int api_timeout_ms, rd_kafka_resp_err_t *errp) {
        char tid[256];
        size_t len = sizeof tid;
        rd_kafka_error_t *error;
        kdc_txn_t *txn;

        if (errp)
                *errp = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (txnp)
                *txnp = NULL;
        if (!txnp || !producer || !consumer || api_timeout_ms <= 0 ||
            rd_kafka_type(producer) != RD_KAFKA_PRODUCER ||
            rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        if (rd_kafka_conf_get(rd_kafka_conf(producer), "transactional.id", tid, &len) !=
                RD_KAFKA_CONF_OK ||
            len <= 1)
                return KDC_ERR_CONF;
        if (!(txn = calloc(1, sizeof *txn)) ||
            !(txn->offsets = rd_kafka_topic_partition_list_new(8))) {
                free(txn);
                return KDC_ERR_NOMEM;
        }
        txn->producer = producer;
        txn->consumer = consumer;
        txn->api_timeout_ms = api_timeout_ms;
        if ((error = rd_kafka_init_transactions(producer, api_timeout_ms))) {
                int retriable = rd_kafka_error_is_retriable(error);
                if (errp)
                        *errp = rd_kafka_error_code(error);
                rd_kafka_error_destroy(error);
                kdc_txn_destroy(txn);
                return retriable ? KDC_ERR_TIMEOUT : KDC_ERR_COMMIT;
        }
        *txnp = txn;
        return 0;
}

void kdc_txn_destroy(kdc_txn_t *txn) {
        if (!txn)
                return;
        rd_kafka_topic_partition_list_destroy(txn->offsets);
        free(txn);
}

static void forget_offsets(kdc_txn_t *txn) {
        while (txn->offsets->cnt > 0)
                rd_kafka_topic_partition_list_del_by_idx(txn->offsets, txn->offsets->cnt - 1);
}

int kdc_txn_begin(kdc_txn_t *txn, kdc_txn_result_t *result) {
        rd_kafka_error_t *error;

        result_clear(result);
        if (!txn)
                return KDC_ERR_INVALID;
        forget_offsets(txn);
        if ((error = rd_kafka_begin_transaction(txn->producer))) {
                result_error(result, error);
                return KDC_ERR_COMMIT;
        }
        return 0;
}

int kdc_txn_track(kdc_txn_t *txn, const rd_kafka_message_t *msg) {
        const char *topic;
        rd_kafka_topic_partition_t *p;

        if (!txn || !msg || msg->err || !msg->rkt || msg->offset < 0)
                return KDC_ERR_INVALID;
        topic = rd_kafka_topic_name(msg->rkt);
        p = rd_kafka_topic_partition_list_find(txn->offsets, topic, msg->partition);
        if (!p && !(p = rd_kafka_topic_partition_list_add(txn->offsets, topic, msg->partition)))
                return KDC_ERR_NOMEM;
        /* offsets committed are the next to consume: msg->offset + 1 */
        if (p->offset < msg->offset + 1)
                p->offset = msg->offset + 1;
        return 0;
}

/* The auto.offset.reset start of a partition without committed offset. */
static int64_t reset_offset(rd_kafka_t *consumer) {
        char v[32];
        size_t len = sizeof v;

        if (rd_kafka_conf_get(rd_kafka_conf(consumer), "auto.offset.reset", v, &len) ==
                RD_KAFKA_CONF_OK &&
            (!strcmp(v, "latest") || !strcmp(v, "largest") || !strcmp(v, "end")))
                return RD_KAFKA_OFFSET_END;
        return RD_KAFKA_OFFSET_BEGINNING;
}

int kdc_txn_rewind(rd_kafka_t *consumer, int timeout_ms, rd_kafka_resp_err_t *errp) {
        rd_kafka_topic_partition_list_t *parts = NULL;
        rd_kafka_resp_err_t err;
        rd_kafka_error_t *error;
        int rc = 0;

        if (errp)
                *errp = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!consumer || timeout_ms < 0 || rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        if ((err = rd_kafka_assignment(consumer, &parts))) {
                if (errp)
                        *errp = err;
                return KDC_ERR_COMMIT;
        }
        if (!parts)
                return KDC_ERR_NOMEM;
        if (parts->cnt == 0) {
                rd_kafka_topic_partition_list_destroy(parts);
                return 0;
        }
        if ((err = rd_kafka_committed(consumer, parts, timeout_ms))) {
                if (errp)
                        *errp = err;
                rd_kafka_topic_partition_list_destroy(parts);
                return err == RD_KAFKA_RESP_ERR__TIMED_OUT ? KDC_ERR_TIMEOUT : KDC_ERR_COMMIT;
        }
        for (int i = 0; i < parts->cnt; i++) {
                if (parts->elems[i].err) {
                        if (errp && !*errp)
                                *errp = parts->elems[i].err;
                        rd_kafka_topic_partition_list_destroy(parts);
                        return KDC_ERR_COMMIT;
                }
                if (parts->elems[i].offset < 0)
                        parts->elems[i].offset = reset_offset(consumer);
        }
        if ((error = rd_kafka_seek_partitions(consumer, parts, timeout_ms))) {
                if (errp)
                        *errp = rd_kafka_error_code(error);
                rd_kafka_error_destroy(error);
                rc = KDC_ERR_COMMIT;
        }
        for (int i = 0; rc == 0 && i < parts->cnt; i++)
                if (parts->elems[i].err) {
                        if (errp)
                                *errp = parts->elems[i].err;
                        rc = KDC_ERR_COMMIT;
                }
        rd_kafka_topic_partition_list_destroy(parts);
        return rc;
}

/* Abort, then rewind. 0, KDC_ERR_TIMEOUT (abort timed out) or
 * KDC_ERR_COMMIT (abort failed otherwise). The result keeps the first
 * error (the one that made us abort) unless the abort itself fails. */
static int abort_and_rewind(kdc_txn_t *txn, kdc_txn_result_t *result) {
        rd_kafka_error_t *error = rd_kafka_abort_transaction(txn->producer, txn->api_timeout_ms);

        forget_offsets(txn);
        if (error) {
                int retriable = rd_kafka_error_is_retriable(error);
                result_error(result, error);
                if (retriable)
                        return KDC_ERR_TIMEOUT;
                /* fatal: the producer is unusable; the inputs must still be
                 * redone by whoever consumes next */
                if (result && rewind_counted(txn) == 0)
                        result->rewound = 1;
                return KDC_ERR_COMMIT;
        }
        kdc__stats_add(txn->stats, KDC__STAT_TXN_ABORTS, 1);
        if (result) {
                result->aborted = 1;
                result->rewound = rewind_counted(txn) == 0;
        } else {
                rewind_counted(txn);
        }
        return 0;
}

int kdc_txn_commit(kdc_txn_t *txn, kdc_txn_result_t *result) {
        kdc_txn_result_t local;
        int64_t deadline;
        rd_kafka_error_t *error = NULL;
        int rc;

        if (!txn)
                return KDC_ERR_INVALID;
        if (!result)
                result = &local;
        result_clear(result);
        deadline = kdc__now_ms() + txn->api_timeout_ms;

        /* 1. the input offsets, with the group's current metadata */
        if (txn->offsets->cnt > 0) {
                rd_kafka_consumer_group_metadata_t *cgmd =
                    rd_kafka_consumer_group_metadata(txn->consumer);
                if (!cgmd)
                        return KDC_ERR_NOMEM;
                while ((error = rd_kafka_send_offsets_to_transaction(
                            txn->producer, txn->offsets, cgmd, remaining(deadline))) &&
                       rd_kafka_error_is_retriable(error) && remaining(deadline) > 0) {
                        rd_kafka_error_destroy(error);
                        result->retries++;
                }
                rd_kafka_consumer_group_metadata_destroy(cgmd);
        }
        /* 2. the outputs (commit_transaction flushes them) */
        if (!error)
                while ((error = rd_kafka_commit_transaction(txn->producer, remaining(deadline))) &&
                       rd_kafka_error_is_retriable(error) && remaining(deadline) > 0) {
                        rd_kafka_error_destroy(error);
                        result->retries++;
                }
        if (!error) {
                forget_offsets(txn);
                return 0;
        }

        /* Not committed: abort (unless the producer is beyond that) and rewind. */
        int fatal = rd_kafka_error_is_fatal(error);
        result_error(result, error);
        kdc_class_t cls = result->cls;
        rd_kafka_resp_err_t err = result->err;
        if (fatal) {
                forget_offsets(txn);
                result->rewound = rewind_counted(txn) == 0;
                return KDC_ERR_COMMIT;
        }
        rc = abort_and_rewind(txn, result);
        if (rc != 0)
                return rc;
        /* report why we aborted, not the abort's success */
        result->err = err;
        result->cls = cls;
        return cls == KDC_CLASS_MEMBERSHIP ? KDC_ERR_STALE : KDC_ERR_COMMIT;
}

int kdc_txn_abort(kdc_txn_t *txn, kdc_txn_result_t *result) {
        result_clear(result);
        if (!txn)
                return KDC_ERR_INVALID;
        return abort_and_rewind(txn, result);
}
