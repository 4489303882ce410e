/* kdc_commit_message() (harness/commit.c) against the librdkafka mock
 * cluster. The committed offsets are read back from the broker with
 * rd_kafka_committed(), never taken from local state. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS 10000

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

/* Produce `n` confirmed messages to each of `partitions` partitions. */
static void fill(rd_kafka_t *producer, const char *topic, int partitions,
                 int n) {
        for (int p = 0; p < partitions; p++)
                for (int i = 0; i < n; i++)
                        assert_int_equal(
                            kdc_produce_confirmed(producer, topic, p, "k", 1,
                                                  "v", 1, WAIT_MS, NULL),
                            0);
}

/* Manually assign partitions 0..partitions-1 of topic from the beginning. */
static void assign_from_beginning(rd_kafka_t *consumer, const char *topic,
                                  int partitions) {
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(partitions);

        for (int p = 0; p < partitions; p++)
                rd_kafka_topic_partition_list_add(parts, topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        assert_int_equal(rd_kafka_assign(consumer, parts),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(parts);
}

/* Next message or event (msg->err may be set); fails after WAIT_MS. */
static rd_kafka_message_t *next(rd_kafka_t *consumer) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(consumer, WAIT_MS);

        assert_non_null(msg);
        return msg;
}

/* Next message of `partition` without error, skipping other partitions. */
static rd_kafka_message_t *next_of(rd_kafka_t *consumer, int32_t partition) {
        for (;;) {
                rd_kafka_message_t *msg = next(consumer);

                assert_int_equal(msg->err, RD_KAFKA_RESP_ERR_NO_ERROR);
                if (msg->partition == partition)
                        return msg;
                rd_kafka_message_destroy(msg);
        }
}

/* The offset committed for topic/partition, read from the broker
 * (RD_KAFKA_OFFSET_INVALID when none). */
static int64_t committed(rd_kafka_t *consumer, const char *topic,
                         int32_t partition) {
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(1);
        int64_t offset;

        rd_kafka_topic_partition_list_add(parts, topic, partition);
        assert_int_equal(rd_kafka_committed(consumer, parts, WAIT_MS),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        offset = parts->elems[0].offset;
        rd_kafka_topic_partition_list_destroy(parts);
        return offset;
}

static void commits_the_message_offset_plus_one_for_its_partition_only(
    void **state) {
        struct mock_env *env = *state;
        char topic[64];
        rd_kafka_message_t *msg;
        rd_kafka_t *producer = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "commit-plus-one", NULL);

        mock_env_topic(env, "commit-plus-one", 2, topic);
        fill(producer, topic, 2, 3);
        assign_from_beginning(consumer, topic, 2);

        msg = next_of(consumer, 0);
        assert_int_equal(msg->offset, 0);
        assert_int_equal(kdc_commit_message(consumer, msg, 0), 0);
        rd_kafka_message_destroy(msg);
        assert_int_equal(committed(consumer, topic, 0), 1);

        msg = next_of(consumer, 0);
        assert_int_equal(msg->offset, 1);
        assert_int_equal(kdc_commit_message(consumer, msg, 0), 0);
        rd_kafka_message_destroy(msg);
        assert_int_equal(committed(consumer, topic, 0), 2);

        /* Partition 1 was consumed from too, but never committed. */
        assert_int_equal(committed(consumer, topic, 1),
                         RD_KAFKA_OFFSET_INVALID);

        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
}

static void async_commit_reaches_the_broker_as_the_message_offset_plus_one(
    void **state) {
        struct mock_env *env = *state;
        char topic[64];
        rd_kafka_message_t *msg;
        int64_t offset = RD_KAFKA_OFFSET_INVALID;
        rd_kafka_t *producer = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "commit-async", NULL);

        mock_env_topic(env, "commit-async", 1, topic);
        fill(producer, topic, 1, 3);
        assign_from_beginning(consumer, topic, 1);
        rd_kafka_message_destroy(next_of(consumer, 0));
        msg = next_of(consumer, 0);
        assert_int_equal(msg->offset, 1);
        assert_int_equal(kdc_commit_message(consumer, msg, 1), 0);
        rd_kafka_message_destroy(msg);

        /* Async: the broker has it once the request completed; bounded. */
        for (int i = 0; i < 100 && offset != 2; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);

                if (m)
                        rd_kafka_message_destroy(m);
                offset = committed(consumer, topic, 0);
        }
        assert_int_equal(offset, 2);

        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
}

static void returns_kdc_err_commit_and_commits_nothing_when_the_broker_rejects_it(
    void **state) {
        struct mock_env *env = *state;
        char topic[64];
        rd_kafka_message_t *msg;
        rd_kafka_t *producer = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "commit-rejected", NULL);

        mock_env_topic(env, "commit-rejected", 1, topic);
        fill(producer, topic, 1, 1);
        assign_from_beginning(consumer, topic, 1);
        msg = next_of(consumer, 0);

        rd_kafka_mock_push_request_errors(
            env->mcluster, MOCK_APIKEY_OFFSET_COMMIT, 1,
            RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        assert_int_equal(kdc_commit_message(consumer, msg, 0), KDC_ERR_COMMIT);
        assert_int_equal(committed(consumer, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        rd_kafka_message_destroy(msg);

        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
}

static void refuses_a_partition_eof_event_instead_of_committing_past_it(
    void **state) {
        static const char *const eof[] = {"enable.partition.eof", "true",
                                          NULL};
        struct mock_env *env = *state;
        char topic[64];
        rd_kafka_message_t *msg, *event;
        rd_kafka_t *producer = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "commit-eof", eof);

        mock_env_topic(env, "commit-eof", 1, topic);
        fill(producer, topic, 1, 1);
        assign_from_beginning(consumer, topic, 1);
        msg = next_of(consumer, 0);
        event = next(consumer);
        assert_int_equal(event->err, RD_KAFKA_RESP_ERR__PARTITION_EOF);

        assert_int_equal(kdc_commit_message(consumer, event, 0),
                         KDC_ERR_INVALID);
        assert_int_equal(committed(consumer, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        assert_int_equal(kdc_commit_message(consumer, msg, 0), 0);
        assert_int_equal(committed(consumer, topic, 0), 1);

        rd_kafka_message_destroy(event);
        rd_kafka_message_destroy(msg);
        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
}

static void returns_kdc_err_invalid_for_null_or_non_consumer_handles(
    void **state) {
        struct mock_env *env = *state;
        char topic[64];
        rd_kafka_message_t *msg;
        rd_kafka_t *producer = mock_env_producer(env, 1, NULL);
        rd_kafka_t *consumer = mock_env_consumer(env, "commit-invalid", NULL);

        mock_env_topic(env, "commit-invalid", 1, topic);
        fill(producer, topic, 1, 1);
        assign_from_beginning(consumer, topic, 1);
        msg = next_of(consumer, 0);

        assert_int_equal(kdc_commit_message(NULL, msg, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_commit_message(consumer, NULL, 0),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_commit_message(producer, msg, 0),
                         KDC_ERR_INVALID);
        assert_int_equal(committed(consumer, topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(msg);
        assert_int_equal(rd_kafka_consumer_close(consumer),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_destroy(consumer);
        rd_kafka_destroy(producer);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("commit_message commits the message's offset plus one, "
                     "for its partition only",
                     commits_the_message_offset_plus_one_for_its_partition_only),
            SENTENCE("an async commit_message reaches the broker as the "
                     "message's offset plus one",
                     async_commit_reaches_the_broker_as_the_message_offset_plus_one),
            SENTENCE("commit_message returns KDC_ERR_COMMIT and commits "
                     "nothing when the broker rejects the OffsetCommit",
                     returns_kdc_err_commit_and_commits_nothing_when_the_broker_rejects_it),
            SENTENCE("commit_message refuses a partition EOF event instead of "
                     "committing past it",
                     refuses_a_partition_eof_event_instead_of_committing_past_it),
            SENTENCE("commit_message returns KDC_ERR_INVALID for NULL or "
                     "non-consumer handles and commits nothing",
                     returns_kdc_err_invalid_for_null_or_non_consumer_handles),
        };

        return cmocka_run_group_tests_name("kdc_commit_message", tests,
                                           mock_env_setup, mock_env_teardown);
}
