/* kdc_commit_message() and kdc_commit_message_async() (harness/libkdc/commit.c)
 * against the librdkafka mock cluster. The committed offsets are read back
 * from the broker with rd_kafka_committed(), never taken from local state. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

#define WAIT_MS MOCK_WAIT_MS

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

/* A consumer manually assigned to a fresh topic of `parts` partitions with
 * `n` messages each. */
struct fixture {
        char topic[64];
        rd_kafka_t *producer;
        rd_kafka_t *consumer;
};

static void fixture_init(struct fixture *f, struct mock_env *env,
                         const char *name, int parts, int n,
                         const char *const *consumer_conf) {
        f->producer = mock_env_producer(env, 1, NULL);
        f->consumer = mock_env_consumer(env, name, consumer_conf);
        mock_env_topic(env, name, parts, f->topic);
        mock_env_fill(f->producer, f->topic, parts, n);
        mock_env_assign(f->consumer, f->topic, parts);
}

static void fixture_fini(struct fixture *f) {
        mock_env_close(f->consumer);
        rd_kafka_destroy(f->producer);
}

static void commits_the_message_offset_plus_one_for_its_partition_only(
    void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        rd_kafka_message_t *msg;
        struct fixture f;

        fixture_init(&f, *state, "commit-plus-one", 2, 3, NULL);

        msg = mock_env_next(f.consumer, 0);
        assert_int_equal(msg->offset, 0);
        assert_int_equal(kdc_commit_message(f.consumer, msg, NULL, 0, &err),
                         0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_message_destroy(msg);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        msg = mock_env_next(f.consumer, 0);
        assert_int_equal(msg->offset, 1);
        assert_int_equal(kdc_commit_message(f.consumer, msg, NULL, 0, NULL),
                         0);
        rd_kafka_message_destroy(msg);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 2);

        /* Partition 1 was consumed from too, but never committed. */
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 1),
                         RD_KAFKA_OFFSET_INVALID);
        fixture_fini(&f);
}

struct async_result {
        int calls;
        char topic[64];
        int32_t partition;
        int64_t offset;
        rd_kafka_resp_err_t err;
};

static void on_commit(rd_kafka_t *consumer, const char *topic,
                      int32_t partition, int64_t offset,
                      rd_kafka_resp_err_t err, void *opaque) {
        struct async_result *r = opaque;

        (void)consumer;
        r->calls++;
        strncpy(r->topic, topic, sizeof(r->topic) - 1);
        r->partition = partition;
        r->offset = offset;
        r->err = err;
}

/* Serve the consumer queue until the callback ran (bounded). */
static void serve_until_called(rd_kafka_t *consumer,
                               const struct async_result *r) {
        for (int i = 0; i < 200 && r->calls == 0; i++) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(consumer, 50);

                if (m)
                        rd_kafka_message_destroy(m);
        }
}

static void async_commit_reports_the_partition_result_once_through_its_callback(
    void **state) {
        struct async_result r = {0};
        rd_kafka_message_t *msg;
        struct fixture f;

        fixture_init(&f, *state, "commit-async", 1, 3, NULL);
        rd_kafka_message_destroy(mock_env_next(f.consumer, 0));
        msg = mock_env_next(f.consumer, 0);
        assert_int_equal(msg->offset, 1);
        assert_int_equal(kdc_commit_message_async(f.consumer, msg, NULL, 0,
                                                  on_commit, &r),
                         0);
        rd_kafka_message_destroy(msg);

        serve_until_called(f.consumer, &r);
        assert_int_equal(r.calls, 1);
        assert_string_equal(r.topic, f.topic);
        assert_int_equal(r.partition, 0);
        assert_int_equal(r.offset, 2);
        assert_int_equal(r.err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 2);

        /* Exactly once: more serving runs no second callback. */
        rd_kafka_message_t *m = rd_kafka_consumer_poll(f.consumer, 100);
        if (m)
                rd_kafka_message_destroy(m);
        assert_int_equal(r.calls, 1);
        fixture_fini(&f);
}

static void async_commit_rejected_by_the_broker_reports_a_membership_error(
    void **state) {
        struct mock_env *env = *state;
        struct async_result r = {0};
        rd_kafka_message_t *msg;
        struct fixture f;

        fixture_init(&f, env, "commit-async-rejected", 1, 1, NULL);
        msg = mock_env_next(f.consumer, 0);
        rd_kafka_mock_push_request_errors(env->mcluster,
                                          MOCK_APIKEY_OFFSET_COMMIT, 1,
                                          RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(kdc_commit_message_async(f.consumer, msg, NULL, 0,
                                                  on_commit, &r),
                         0);
        rd_kafka_message_destroy(msg);

        serve_until_called(f.consumer, &r);
        assert_int_equal(r.calls, 1);
        assert_int_equal(r.err, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(kdc_classify(NULL, r.err), KDC_CLASS_MEMBERSHIP);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        fixture_fini(&f);
}

/* The broker answers the OffsetCommit with `code`: not committed, and the
 * partition's error comes back, classified as `cls`. */
static void rejected_commit(struct mock_env *env, const char *name,
                            rd_kafka_resp_err_t code, kdc_class_t cls) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_message_t *msg;
        struct fixture f;

        fixture_init(&f, env, name, 1, 1, NULL);
        msg = mock_env_next(f.consumer, 0);
        rd_kafka_mock_push_request_errors(env->mcluster,
                                          MOCK_APIKEY_OFFSET_COMMIT, 1, code);
        assert_int_equal(kdc_commit_message(f.consumer, msg, NULL, 0, &err),
                         KDC_ERR_COMMIT);
        assert_int_equal(err, code);
        assert_int_equal(kdc_classify(NULL, err), cls);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        /* Nothing sticks: the same message commits once the broker agrees. */
        assert_int_equal(kdc_commit_message(f.consumer, msg, NULL, 0, &err),
                         0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);
        rd_kafka_message_destroy(msg);
        fixture_fini(&f);
}

static void illegal_generation_on_commit_is_returned_and_classified_membership(
    void **state) {
        rejected_commit(*state, "commit-illegal-generation",
                        RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
                        KDC_CLASS_MEMBERSHIP);
}

static void unknown_member_id_on_commit_is_returned_and_classified_membership(
    void **state) {
        rejected_commit(*state, "commit-unknown-member",
                        RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
                        KDC_CLASS_MEMBERSHIP);
}

static void group_authorization_failed_on_commit_is_returned_and_classified_fatal(
    void **state) {
        rejected_commit(*state, "commit-group-authz",
                        RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED,
                        KDC_CLASS_FATAL);
}

/* Assign the fixture's partitions through an assignment record, as a
 * rebalance would (rd_kafka_assign() underneath): epochs start. */
static rd_kafka_topic_partition_list_t *assign_via(kdc_assignment_t *a,
                                                   struct fixture *f,
                                                   int parts) {
        rd_kafka_topic_partition_list_t *list =
            rd_kafka_topic_partition_list_new(parts);

        for (int p = 0; p < parts; p++)
                rd_kafka_topic_partition_list_add(list, f->topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        assert_int_equal(kdc_assignment_rebalance(
                             a, f->consumer,
                             RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS, list),
                         0);
        return list;
}

static void work_of_a_revoked_epoch_is_refused_and_nothing_is_committed(
    void **state) {
        struct async_result r = {0};
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_topic_partition_list_t *list;
        rd_kafka_message_t *first, *second;
        kdc_assignment_t *a;
        uint64_t epoch;
        struct fixture f;

        f.producer = mock_env_producer(*state, 1, NULL);
        f.consumer = mock_env_consumer(*state, "commit-stale", NULL);
        mock_env_topic(*state, "commit-stale", 1, f.topic);
        mock_env_fill(f.producer, f.topic, 1, 2);
        assert_int_equal(kdc_assignment_new(&a, NULL, NULL), 0);
        list = assign_via(a, &f, 1);

        first = mock_env_next(f.consumer, 0);
        epoch = kdc_assignment_stamp(a, first);
        assert_true(epoch > 0);
        /* Current epoch: committed. */
        assert_int_equal(kdc_commit_message(f.consumer, first, a, epoch, &err),
                         0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        second = mock_env_next(f.consumer, 0);
        assert_int_equal(kdc_assignment_stamp(a, second), epoch);
        assert_int_equal(kdc_assignment_rebalance(
                             a, f.consumer,
                             RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS, list),
                         0);
        assert_int_equal(kdc_assignment_epoch(a, f.topic, 0), 0);

        /* The epoch ended: both forms refuse; no callback ever runs. */
        assert_int_equal(kdc_commit_message(f.consumer, second, a, epoch,
                                            &err),
                         KDC_ERR_STALE);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__STATE);
        assert_int_equal(kdc_commit_message_async(f.consumer, second, a,
                                                  epoch, on_commit, &r),
                         KDC_ERR_STALE);
        rd_kafka_message_t *m = rd_kafka_consumer_poll(f.consumer, 100);
        if (m)
                rd_kafka_message_destroy(m);
        assert_int_equal(r.calls, 0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        rd_kafka_message_destroy(first);
        rd_kafka_message_destroy(second);
        rd_kafka_topic_partition_list_destroy(list);
        fixture_fini(&f);
        kdc_assignment_destroy(a);
}

static void refuses_a_partition_eof_event_instead_of_committing_past_it(
    void **state) {
        static const char *const eof[] = {"enable.partition.eof", "true",
                                          NULL};
        rd_kafka_message_t *msg, *event;
        struct fixture f;

        fixture_init(&f, *state, "commit-eof", 1, 1, eof);
        msg = mock_env_next(f.consumer, 0);
        event = rd_kafka_consumer_poll(f.consumer, WAIT_MS);
        assert_non_null(event);
        assert_int_equal(event->err, RD_KAFKA_RESP_ERR__PARTITION_EOF);

        assert_int_equal(kdc_commit_message(f.consumer, event, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_commit_message_async(f.consumer, event, NULL, 0,
                                                  NULL, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        assert_int_equal(kdc_commit_message(f.consumer, msg, NULL, 0, NULL),
                         0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        rd_kafka_message_destroy(event);
        rd_kafka_message_destroy(msg);
        fixture_fini(&f);
}

static void returns_kdc_err_invalid_for_null_or_non_consumer_handles(
    void **state) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_message_t *msg;
        struct fixture f;

        fixture_init(&f, *state, "commit-invalid", 1, 1, NULL);
        msg = mock_env_next(f.consumer, 0);

        assert_int_equal(kdc_commit_message(NULL, msg, NULL, 0, &err),
                         KDC_ERR_INVALID);
        assert_int_equal(err, RD_KAFKA_RESP_ERR__INVALID_ARG);
        assert_int_equal(kdc_commit_message(f.consumer, NULL, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_commit_message(f.producer, msg, NULL, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(
            kdc_commit_message_async(f.producer, msg, NULL, 0, NULL, NULL),
            KDC_ERR_INVALID);
        assert_int_equal(
            kdc_commit_message_async(NULL, msg, NULL, 0, NULL, NULL),
            KDC_ERR_INVALID);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(msg);
        fixture_fini(&f);
}

/* The next message of any partition, skipping EOF events; NULL if none
 * comes within ms. */
static rd_kafka_message_t *next_within(rd_kafka_t *consumer, int ms) {
        rd_kafka_message_t *m;

        while ((m = rd_kafka_consumer_poll(consumer, ms)) &&
               m->err == RD_KAFKA_RESP_ERR__PARTITION_EOF)
                rd_kafka_message_destroy(m);
        return m;
}

/* Two partitions of 4 messages, all polled; partition 0's offset 0
 * committed. A failed batch (partition 0's offsets 1..3) rewound: they
 * come again from the committed offset 1, and partition 1 (not in the
 * batch) is left where it was. Then a batch of partition 1's offsets 2..3,
 * which has no committed offset: replayed from 2, its first offset in the
 * batch, although auto.offset.reset=latest. Nothing is committed by it. */
static void rewind_replays_a_failed_batch_from_its_committed_offsets(
    void **state) {
        static const char *const latest[] = {"auto.offset.reset", "latest",
                                             NULL};
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        rd_kafka_message_t *p0[4], *p1[4], *m;
        int n0 = 0, n1 = 0;
        struct fixture f;

        fixture_init(&f, *state, "commit-rewind", 2, 4, latest);
        while (n0 < 4 || n1 < 4) {
                m = mock_env_next(f.consumer, -1);
                if (m->partition == 0)
                        p0[n0++] = m;
                else
                        p1[n1++] = m;
        }
        assert_int_equal(kdc_commit_message(f.consumer, p0[0], NULL, 0, NULL),
                         0);

        assert_int_equal(
            kdc_rewind_messages(f.consumer, p0 + 1, 3, WAIT_MS, &err), 0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        for (int64_t o = 1; o < 4; o++) {
                m = mock_env_next(f.consumer, -1);
                assert_int_equal(m->partition, 0); /* partition 1 left alone */
                assert_int_equal(m->offset, o);
                rd_kafka_message_destroy(m);
        }
        assert_null(next_within(f.consumer, 300));

        assert_int_equal(
            kdc_rewind_messages(f.consumer, p1 + 2, 2, WAIT_MS, NULL), 0);
        m = mock_env_next(f.consumer, -1);
        assert_int_equal(m->partition, 1);
        assert_int_equal(m->offset, 2);
        rd_kafka_message_destroy(m);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 1),
                         RD_KAFKA_OFFSET_INVALID);

        /* Refused: nothing sought. An empty batch is nothing to do. */
        assert_int_equal(kdc_rewind_messages(f.producer, p0, 1, WAIT_MS, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(
            kdc_rewind_messages(f.consumer, NULL, 1, WAIT_MS, NULL),
            KDC_ERR_INVALID);
        assert_int_equal(kdc_rewind_messages(f.consumer, p0, 1, 0, NULL),
                         KDC_ERR_INVALID);
        assert_int_equal(
            kdc_rewind_messages(f.consumer, NULL, 0, WAIT_MS, NULL), 0);
        for (int i = 0; i < 4; i++) {
                rd_kafka_message_destroy(p0[i]);
                rd_kafka_message_destroy(p1[i]);
        }
        fixture_fini(&f);
}

/* The committed-offset query fails: KDC_ERR_COMMIT with the broker's error
 * and nothing sought (the next message is the one after the batch). */
static void rewind_reports_a_failed_committed_offset_query(void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        rd_kafka_message_t *m[2], *next;
        struct fixture f;

        fixture_init(&f, env, "commit-rewind-fail", 1, 3, NULL);
        m[0] = mock_env_next(f.consumer, 0);
        m[1] = mock_env_next(f.consumer, 0);
        rd_kafka_mock_push_request_errors(
            env->mcluster, 9 /* OffsetFetch */, 1,
            RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        assert_int_equal(kdc_rewind_messages(f.consumer, m, 2, WAIT_MS, &err),
                         KDC_ERR_COMMIT);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_GROUP_AUTHORIZATION_FAILED);
        next = mock_env_next(f.consumer, 0);
        assert_int_equal(next->offset, 2);
        rd_kafka_message_destroy(next);
        rd_kafka_message_destroy(m[0]);
        rd_kafka_message_destroy(m[1]);
        fixture_fini(&f);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE(
                "commit_message commits the message's offset plus one, "
                "for its partition only, and returns the partition's "
                "result",
                commits_the_message_offset_plus_one_for_its_partition_only),
            SENTENCE(
                "an async commit reports the partition's result once, "
                "through its callback, as the message's offset plus one",
                async_commit_reports_the_partition_result_once_through_its_callback),
            SENTENCE(
                "an async commit rejected by the broker reports "
                "ILLEGAL_GENERATION, classified membership, and commits "
                "nothing",
                async_commit_rejected_by_the_broker_reports_a_membership_error),
            SENTENCE(
                "ILLEGAL_GENERATION on commit comes back as the "
                "partition's error, classified membership",
                illegal_generation_on_commit_is_returned_and_classified_membership),
            SENTENCE(
                "UNKNOWN_MEMBER_ID on commit comes back as the "
                "partition's error, classified membership",
                unknown_member_id_on_commit_is_returned_and_classified_membership),
            SENTENCE(
                "GROUP_AUTHORIZATION_FAILED on commit comes back as the "
                "partition's error, classified fatal",
                group_authorization_failed_on_commit_is_returned_and_classified_fatal),
            SENTENCE(
                "work of a revoked epoch is refused by both commit forms "
                "and nothing is committed",
                work_of_a_revoked_epoch_is_refused_and_nothing_is_committed),
            SENTENCE(
                "commit_message refuses a partition EOF event instead of "
                "committing past it",
                refuses_a_partition_eof_event_instead_of_committing_past_it),
            SENTENCE("commit_message returns KDC_ERR_INVALID for NULL or "
                     "non-consumer handles and commits nothing",
                     returns_kdc_err_invalid_for_null_or_non_consumer_handles),
            SENTENCE("rewind replays a failed batch from its committed "
                     "offsets, leaves other partitions alone, and replays an "
                     "uncommitted partition from the batch's first offset",
                     rewind_replays_a_failed_batch_from_its_committed_offsets),
            SENTENCE("rewind reports a failed committed-offset query and "
                     "seeks nothing",
                     rewind_reports_a_failed_committed_offset_query),
        };

        return cmocka_run_group_tests_name("kdc_commit_message", tests,
                                           mock_env_setup, mock_env_teardown);
}
