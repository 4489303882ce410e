/* The confirmed watermark (harness/libkdc/watermark.c) committing against the
 * librdkafka mock cluster: every committed offset is read back from the
 * broker with rd_kafka_committed(). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#include "mock_env.h"

static int heal(void **state) {
        mock_env_heal(*state);
        return 0;
}

struct fixture {
        char topic[64];
        rd_kafka_t *producer;
        rd_kafka_t *consumer;
        kdc_watermark_t *wm;
};

/* `n` messages in each of `parts` partitions; the consumer assigned to all
 * of them manually. */
static void fixture_init(struct fixture *f, struct mock_env *env,
                         const char *name, int parts, int n,
                         int interval_ms) {
        f->producer = mock_env_producer(env, 1, NULL);
        f->consumer = mock_env_consumer(env, name, NULL);
        mock_env_topic(env, name, parts, f->topic);
        mock_env_fill(f->producer, f->topic, parts, n);
        mock_env_assign(f->consumer, f->topic, parts);
        assert_int_equal(kdc_watermark_new(&f->wm, NULL, interval_ms), 0);
}

static void fixture_fini(struct fixture *f) {
        kdc_watermark_destroy(f->wm);
        mock_env_close(f->consumer);
        rd_kafka_destroy(f->producer);
}

/* Poll n messages of partition 0, tracking each (epoch 1). */
static void poll_and_track(struct fixture *f, int n) {
        for (int i = 0; i < n; i++) {
                rd_kafka_message_t *m = mock_env_next(f->consumer, 0);

                assert_int_equal(m->offset, i);
                assert_int_equal(kdc_watermark_track(f->wm, f->topic, 0,
                                                     m->offset, 1),
                                 0);
                rd_kafka_message_destroy(m);
        }
}

static void commit(struct fixture *f, int force, int expect_partitions) {
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR__FAIL;
        int committed = -1;

        assert_int_equal(
            kdc_watermark_commit(f->wm, f->consumer, force, &committed, &err),
            0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_NO_ERROR);
        assert_int_equal(committed, expect_partitions);
}

static void out_of_order_completion_commits_only_the_contiguous_prefix(
    void **state) {
        struct fixture f;

        fixture_init(&f, *state, "wm-out-of-order", 1, 10, 0);
        poll_and_track(&f, 10);
        for (int64_t o = 9; o >= 3; o--)
                assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, o, 1),
                                 0);
        commit(&f, 0, 0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);

        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 1, 1), 0);
        commit(&f, 0, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 2);

        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 2, 1), 0);
        commit(&f, 0, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 10);
        /* Nothing new: no commit is sent. */
        commit(&f, 0, 0);
        fixture_fini(&f);
}

static void an_offset_gap_does_not_wedge_the_committed_watermark(
    void **state) {
        struct fixture f;

        fixture_init(&f, *state, "wm-gap", 1, 8, 0);
        /* Offsets 2..4 never reach the application (as compaction or
         * transaction markers leave them out; the 2.0.2 mock writes neither,
         * so they are skipped here): only the polled ones are tracked. */
        for (int i = 0; i < 8; i++) {
                rd_kafka_message_t *m = mock_env_next(f.consumer, 0);

                if (m->offset < 2 || m->offset > 4)
                        assert_int_equal(kdc_watermark_track(f.wm, f.topic, 0,
                                                             m->offset, 1),
                                         0);
                rd_kafka_message_destroy(m);
        }
        for (int64_t o = 7; o >= 5; o--)
                assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, o, 1),
                                 0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 1, 1), 0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 0, 1), 0);
        commit(&f, 0, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 8);
        fixture_fini(&f);
}

static void a_partition_is_committed_at_most_once_per_interval_unless_forced(
    void **state) {
        struct fixture f;

        fixture_init(&f, *state, "wm-interval", 1, 3, 60000);
        poll_and_track(&f, 3);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 0, 1), 0);
        commit(&f, 0, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);

        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 1, 1), 0);
        commit(&f, 0, 0); /* within the interval: held back */
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);
        commit(&f, 1, 1); /* forced (before close, on revoke) */
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 2);
        fixture_fini(&f);
}

static void after_a_revoke_nothing_more_is_committed_for_that_partition(
    void **state) {
        rd_kafka_topic_partition_list_t *all, *revoked;
        rd_kafka_message_t *m0, *m1;
        uint64_t e0, e1;
        kdc_assignment_t *a;
        struct fixture f;

        f.producer = mock_env_producer(*state, 1, NULL);
        f.consumer = mock_env_consumer(*state, "wm-revoke", NULL);
        mock_env_topic(*state, "wm-revoke", 2, f.topic);
        mock_env_fill(f.producer, f.topic, 2, 2);
        mock_env_warm(f.consumer, f.topic);
        assert_int_equal(kdc_assignment_new(&a, NULL, NULL), 0);
        assert_int_equal(kdc_watermark_new(&f.wm, a, 0), 0);
        all = rd_kafka_topic_partition_list_new(2);
        revoked = rd_kafka_topic_partition_list_new(1);
        for (int p = 0; p < 2; p++)
                rd_kafka_topic_partition_list_add(all, f.topic, p)->offset =
                    RD_KAFKA_OFFSET_BEGINNING;
        rd_kafka_topic_partition_list_add(revoked, f.topic, 1);
        /* As a rebalance callback would: rd_kafka_assign() underneath. */
        assert_int_equal(kdc_assignment_rebalance(
                             a, f.consumer,
                             RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS, all),
                         0);

        m0 = m1 = NULL;
        while (!m0 || !m1) { /* the first message of each partition */
                rd_kafka_message_t *m = mock_env_next(f.consumer, -1);

                if (m->partition == 0 && !m0)
                        m0 = m;
                else if (m->partition == 1 && !m1)
                        m1 = m;
                else
                        rd_kafka_message_destroy(m);
        }
        assert_int_equal(m0->offset, 0);
        assert_int_equal(m1->offset, 0);
        e0 = kdc_assignment_stamp(a, m0);
        e1 = kdc_assignment_stamp(a, m1);
        assert_true(e0 > 0 && e1 == e0);
        assert_int_equal(kdc_watermark_track(f.wm, f.topic, 0, m0->offset, e0),
                         0);
        assert_int_equal(kdc_watermark_track(f.wm, f.topic, 1, m1->offset, e1),
                         0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, m0->offset, e0),
                         0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 1, m1->offset, e1),
                         0);

        /* Partition 1 is revoked before the watermark commits. */
        assert_int_equal(kdc_assignment_rebalance(
                             a, f.consumer,
                             RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS, revoked),
                         0);
        commit(&f, 1, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 1),
                         RD_KAFKA_OFFSET_INVALID);
        /* Its late work is refused. */
        assert_int_equal(kdc_watermark_track(f.wm, f.topic, 1, 1, e1),
                         KDC_ERR_STALE);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 1, 1, e1),
                         KDC_ERR_STALE);
        commit(&f, 1, 0);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 1),
                         RD_KAFKA_OFFSET_INVALID);

        rd_kafka_message_destroy(m0);
        rd_kafka_message_destroy(m1);
        rd_kafka_topic_partition_list_destroy(all);
        rd_kafka_topic_partition_list_destroy(revoked);
        kdc_watermark_destroy(f.wm);
        mock_env_close(f.consumer);
        rd_kafka_destroy(f.producer);
        kdc_assignment_destroy(a);
}

static void a_rejected_commit_keeps_the_position_and_is_retried(void **state) {
        struct mock_env *env = *state;
        rd_kafka_resp_err_t err = RD_KAFKA_RESP_ERR_NO_ERROR;
        int committed = -1;
        struct fixture f;

        fixture_init(&f, env, "wm-rejected", 1, 2, 0);
        poll_and_track(&f, 2);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_done(f.wm, f.topic, 0, 1, 1), 0);
        rd_kafka_mock_push_request_errors(env->mcluster,
                                          MOCK_APIKEY_OFFSET_COMMIT, 1,
                                          RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(
            kdc_watermark_commit(f.wm, f.consumer, 0, &committed, &err),
            KDC_ERR_COMMIT);
        assert_int_equal(committed, 0);
        assert_int_equal(err, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
        assert_int_equal(kdc_classify(NULL, err), KDC_CLASS_MEMBERSHIP);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0),
                         RD_KAFKA_OFFSET_INVALID);
        commit(&f, 0, 1);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 2);
        fixture_fini(&f);
}

/* The message forms read topic, partition and offset from the polled
 * message: the same watermark as the coordinate forms, across partitions. */
static void the_message_forms_track_and_mark_by_the_polled_message(
    void **state) {
        rd_kafka_message_t *m[6];
        struct fixture f;
        int per_part[2] = {0, 0};

        fixture_init(&f, *state, "wm-message", 2, 3, 0);
        for (int i = 0; i < 6; i++) {
                m[i] = mock_env_next(f.consumer, -1);
                assert_int_equal(m[i]->offset, per_part[m[i]->partition]++);
                assert_int_equal(kdc_watermark_track_message(f.wm, m[i], 1), 0);
        }
        /* Everything but partition 1's offset 1 done, in reverse order. */
        for (int i = 5; i >= 0; i--)
                if (m[i]->partition == 0 || m[i]->offset != 1)
                        assert_int_equal(
                            kdc_watermark_done_message(f.wm, m[i], 1), 0);
        assert_int_equal(kdc_watermark_done_message(f.wm, m[0], 1),
                         KDC_ERR_NOENT); /* marked twice */
        commit(&f, 0, 2);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 0), 3);
        assert_int_equal(mock_env_committed(f.consumer, f.topic, 1), 1);
        assert_int_equal(kdc_watermark_position(f.wm, f.topic, 1), 1);

        /* An error event is not a message: refused, nothing recorded. */
        m[0]->err = RD_KAFKA_RESP_ERR__PARTITION_EOF;
        assert_int_equal(kdc_watermark_track_message(f.wm, m[0], 1),
                         KDC_ERR_INVALID);
        m[0]->err = RD_KAFKA_RESP_ERR_NO_ERROR;
        assert_int_equal(kdc_watermark_done_message(f.wm, NULL, 1),
                         KDC_ERR_INVALID);
        for (int i = 0; i < 6; i++)
                rd_kafka_message_destroy(m[i]);
        fixture_fini(&f);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE(
                "out-of-order completion commits only the contiguous "
                "done prefix",
                out_of_order_completion_commits_only_the_contiguous_prefix),
            SENTENCE("an offset gap does not wedge the committed watermark",
                     an_offset_gap_does_not_wedge_the_committed_watermark),
            SENTENCE(
                "a partition is committed at most once per interval "
                "unless forced",
                a_partition_is_committed_at_most_once_per_interval_unless_forced),
            SENTENCE(
                "after a revoke nothing more is committed for that "
                "partition, and its late work is refused",
                after_a_revoke_nothing_more_is_committed_for_that_partition),
            SENTENCE("a rejected commit keeps the position and the next call "
                     "commits it",
                     a_rejected_commit_keeps_the_position_and_is_retried),
            SENTENCE("the message forms track and mark done by the polled "
                     "message, per partition",
                     the_message_forms_track_and_mark_by_the_polled_message),
        };

        return cmocka_run_group_tests_name("confirmed watermark", tests,
                                           mock_env_setup, mock_env_teardown);
}
