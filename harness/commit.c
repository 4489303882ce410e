/* kdc_commit_message(): commit by message, never by position. */
#include <kdc/commit.h>
#include <kdc/error.h>

int kdc_commit_message(rd_kafka_t *consumer, const rd_kafka_message_t *msg,
                       int async) {
        if (!consumer || !msg || !msg->rkt)
                return KDC_ERR_INVALID;
        if (rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        /* An error event (e.g. __PARTITION_EOF) is not a processed message:
         * committing its offset + 1 could skip one. */
        if (msg->err != RD_KAFKA_RESP_ERR_NO_ERROR || msg->offset < 0)
                return KDC_ERR_INVALID;
        /* rd_kafka_commit_message() commits msg->offset + 1 itself. */
        if (rd_kafka_commit_message(consumer, msg, async) !=
            RD_KAFKA_RESP_ERR_NO_ERROR)
                return KDC_ERR_COMMIT;
        return 0;
}
