/* Rebalance epochs (harness/libkdc/assignment.c) with real consumer groups on the
 * librdkafka mock cluster: a second consumer joins, an assignment is lost,
 * and the commit and watermark helpers refuse the old epoch's work. Every
 * committed offset is read back with rd_kafka_committed(). */
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

/* Group timings for the 2.0.2 mock: a first join waits 3 s (its
 * group.initial.rebalance.delay), so the session must outlive that; a later
 * join waits session.timeout.ms - 1 s for the members to rejoin. */
static const char *const eager_conf[] = {
    "session.timeout.ms", "3300",   "heartbeat.interval.ms", "100",
    "partition.assignment.strategy", "range", NULL};
static const char *const cooperative_conf[] = {
    "session.timeout.ms", "3300",   "heartbeat.interval.ms", "100",
    "partition.assignment.strategy", "cooperative-sticky", NULL};

/* What the hook saw. */
struct events {
        int assigns, revokes, lost_revokes;
        int committed_in_lost_hook; /* kdc_commit_message() result there */
        const rd_kafka_message_t *held; /* a message polled before */
        uint64_t held_epoch;
        kdc_assignment_t *a;
};

static void hook(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                 rd_kafka_topic_partition_list_t *parts, int lost,
                 void *opaque) {
        struct events *ev = opaque;

        (void)parts;
        if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
                ev->assigns++;
        } else if (err == RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS) {
                ev->revokes++;
                if (lost) {
                        ev->lost_revokes++;
                        assert_true(rd_kafka_assignment_lost(rk));
                        /* Too late: the epoch ended before this hook. */
                        if (ev->held)
                                ev->committed_in_lost_hook =
                                    kdc_commit_message(rk, ev->held, ev->a,
                                                       ev->held_epoch, NULL);
                }
        }
}

/* The application's own rebalance callback, chaining libkdc. */
struct app {
        kdc_assignment_t *a;
        int calls;
};

static void app_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *parts,
                             void *opaque) {
        struct app *app = opaque;

        app->calls++;
        assert_int_equal(kdc_assignment_rebalance(app->a, rk, err, parts), 0);
}

static void subscribe(rd_kafka_t *consumer, const char *topic) {
        rd_kafka_topic_partition_list_t *t =
            rd_kafka_topic_partition_list_new(1);

        /* Join with the topic's metadata known, not learnt mid-join (which
         * makes librdkafka rejoin: another 3 s on the mock). */
        mock_env_warm(consumer, topic);

        rd_kafka_topic_partition_list_add(t, topic, RD_KAFKA_PARTITION_UA);
        assert_int_equal(rd_kafka_subscribe(consumer, t),
                         RD_KAFKA_RESP_ERR_NO_ERROR);
        rd_kafka_topic_partition_list_destroy(t);
}

static int assigned_count(kdc_assignment_t *a, const char *topic) {
        return (kdc_assignment_epoch(a, topic, 0) != 0) +
               (kdc_assignment_epoch(a, topic, 1) != 0);
}

/* Poll `c` once; keep the first message of each partition in got[]. */
static void poll_keep(rd_kafka_t *c, rd_kafka_message_t *got[2], int ms) {
        rd_kafka_message_t *m = rd_kafka_consumer_poll(c, ms);

        if (!m)
                return;
        if (!m->err && m->partition >= 0 && m->partition < 2 &&
            !got[m->partition]) {
                got[m->partition] = m;
                return;
        }
        rd_kafka_message_destroy(m);
}

/* Poll the first consumer until it holds one message of each partition. */
static void poll_both_partitions(rd_kafka_t *c, rd_kafka_message_t *got[2]) {
        int64_t deadline = 0;

        for (int i = 0; (!got[0] || !got[1]) && deadline < 3 * WAIT_MS;
             i++, deadline += 50)
                poll_keep(c, got, 50);
        assert_non_null(got[0]);
        assert_non_null(got[1]);
}

/* Poll both consumers until each owns exactly one partition. */
static void rebalance_to_one_each(rd_kafka_t *c1, kdc_assignment_t *a1,
                                  rd_kafka_t *c2, kdc_assignment_t *a2,
                                  const char *topic,
                                  rd_kafka_message_t *got2[2]) {
        rd_kafka_message_t *ignore[2] = {NULL, NULL};

        for (int i = 0; i < 300 && (assigned_count(a1, topic) != 1 ||
                                    assigned_count(a2, topic) != 1);
             i++) {
                poll_keep(c1, ignore, 25);
                poll_keep(c2, got2, 25);
                for (int p = 0; p < 2; p++)
                        if (ignore[p]) {
                                rd_kafka_message_destroy(ignore[p]);
                                ignore[p] = NULL;
                        }
        }
        assert_int_equal(assigned_count(a1, topic), 1);
        assert_int_equal(assigned_count(a2, topic), 1);
}

static void an_eager_rebalance_ends_the_epoch_and_its_batch_is_refused(
    void **state) {
        struct mock_env *env = *state;
        struct events ev1 = {0}, ev2 = {0};
        rd_kafka_message_t *batch[2] = {NULL, NULL}, *got2[2] = {NULL, NULL};
        kdc_assignment_t *a1, *a2;
        kdc_watermark_t *wm;
        rd_kafka_t *producer, *c1, *c2;
        uint64_t e1;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "epoch-eager", 2, topic);
        mock_env_fill(producer, topic, 2, 3);
        assert_int_equal(kdc_assignment_new(&a1, hook, &ev1), 0);
        assert_int_equal(kdc_assignment_new(&a2, hook, &ev2), 0);
        /* Installed directly: the conf opaque is the assignment record. */
        c1 = mock_env_consumer_with(env, "epoch-eager",
                                    kdc_assignment_rebalance_cb, a1,
                                    eager_conf);
        c2 = mock_env_consumer_with(env, "epoch-eager",
                                    kdc_assignment_rebalance_cb, a2,
                                    eager_conf);
        assert_int_equal(kdc_watermark_new(&wm, a1, 0), 0);

        subscribe(c1, topic);
        poll_both_partitions(c1, batch);
        e1 = kdc_assignment_stamp(a1, batch[0]);
        assert_true(e1 > 0);
        assert_int_equal(kdc_assignment_stamp(a1, batch[1]), e1);
        for (int p = 0; p < 2; p++)
                assert_int_equal(kdc_watermark_track(wm, topic, p,
                                                     batch[p]->offset, e1),
                                 0);

        /* A second consumer joins: eager revoke of everything, then each
         * gets one partition under a new epoch. */
        subscribe(c2, topic);
        rebalance_to_one_each(c1, a1, c2, a2, topic, got2);
        assert_true(ev1.revokes >= 1);
        assert_int_equal(ev1.lost_revokes, 0);
        for (int p = 0; p < 2; p++) {
                uint64_t now = kdc_assignment_epoch(a1, topic, p);

                assert_true(now == 0 || now > e1);
        }

        /* The batch polled under e1 is refused, whichever partition c1
         * kept, by both helpers; nothing reaches the broker. */
        for (int p = 0; p < 2; p++) {
                assert_int_equal(kdc_assignment_check(a1, topic, p, e1),
                                 KDC_ERR_STALE);
                assert_int_equal(
                    kdc_commit_message(c1, batch[p], a1, e1, NULL),
                    KDC_ERR_STALE);
                assert_int_equal(kdc_watermark_done(wm, topic, p,
                                                    batch[p]->offset, e1),
                                 KDC_ERR_STALE);
        }
        assert_int_equal(kdc_watermark_commit(wm, c1, 1, NULL, NULL), 0);
        for (int p = 0; p < 2; p++)
                assert_int_equal(mock_env_committed(c1, topic, p),
                                 RD_KAFKA_OFFSET_INVALID);

        /* The new owner's work under its own epoch commits. */
        for (int i = 0; i < 200 && !got2[0] && !got2[1]; i++)
                poll_keep(c2, got2, 25);
        for (int p = 0; p < 2; p++)
                if (got2[p]) {
                        assert_int_equal(
                            kdc_commit_message(c2, got2[p], a2,
                                               kdc_assignment_stamp(a2,
                                                                    got2[p]),
                                               NULL),
                            0);
                        assert_int_equal(mock_env_committed(c2, topic, p),
                                         got2[p]->offset + 1);
                        rd_kafka_message_destroy(got2[p]);
                }

        for (int p = 0; p < 2; p++)
                rd_kafka_message_destroy(batch[p]);
        kdc_watermark_destroy(wm);
        mock_env_close(c2);
        mock_env_close(c1);
        kdc_assignment_destroy(a1);
        kdc_assignment_destroy(a2);
        rd_kafka_destroy(producer);
}

static void a_cooperative_rebalance_ends_only_the_revoked_partitions_epoch(
    void **state) {
        struct mock_env *env = *state;
        struct events ev1 = {0}, ev2 = {0};
        struct app app1 = {0}, app2 = {0};
        rd_kafka_message_t *batch[2] = {NULL, NULL}, *got2[2] = {NULL, NULL};
        rd_kafka_t *producer, *c1, *c2;
        int kept, gone;
        uint64_t e1;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "epoch-coop", 2, topic);
        mock_env_fill(producer, topic, 2, 3);
        assert_int_equal(kdc_assignment_new(&app1.a, hook, &ev1), 0);
        assert_int_equal(kdc_assignment_new(&app2.a, hook, &ev2), 0);
        /* Chained from the application's own callback. */
        c1 = mock_env_consumer_with(env, "epoch-coop", app_rebalance_cb,
                                    &app1, cooperative_conf);
        c2 = mock_env_consumer_with(env, "epoch-coop", app_rebalance_cb,
                                    &app2, cooperative_conf);

        subscribe(c1, topic);
        poll_both_partitions(c1, batch);
        assert_string_equal(rd_kafka_rebalance_protocol(c1), "COOPERATIVE");
        e1 = kdc_assignment_stamp(app1.a, batch[0]);
        assert_true(e1 > 0);

        subscribe(c2, topic);
        rebalance_to_one_each(c1, app1.a, c2, app2.a, topic, got2);
        assert_true(app1.calls >= 2);
        kept = kdc_assignment_epoch(app1.a, topic, 0) ? 0 : 1;
        gone = 1 - kept;
        /* Incremental: the kept partition's epoch did not change. */
        assert_int_equal(kdc_assignment_epoch(app1.a, topic, kept), e1);
        assert_int_equal(kdc_assignment_epoch(app1.a, topic, gone), 0);

        assert_int_equal(kdc_commit_message(c1, batch[gone], app1.a, e1, NULL),
                         KDC_ERR_STALE);
        assert_int_equal(kdc_commit_message(c1, batch[kept], app1.a, e1, NULL),
                         0);
        assert_int_equal(mock_env_committed(c1, topic, kept),
                         batch[kept]->offset + 1);
        assert_int_equal(mock_env_committed(c1, topic, gone),
                         RD_KAFKA_OFFSET_INVALID);

        for (int p = 0; p < 2; p++) {
                rd_kafka_message_destroy(batch[p]);
                if (got2[p])
                        rd_kafka_message_destroy(got2[p]);
        }
        mock_env_close(c2);
        mock_env_close(c1);
        kdc_assignment_destroy(app1.a);
        kdc_assignment_destroy(app2.a);
        rd_kafka_destroy(producer);
}

static void a_lost_assignment_ends_the_epoch_before_the_hook_can_commit(
    void **state) {
        struct mock_env *env = *state;
        struct events ev = {0};
        rd_kafka_message_t *batch[2] = {NULL, NULL};
        rd_kafka_t *producer, *c, *checker;
        kdc_assignment_t *a;
        char topic[64];

        producer = mock_env_producer(env, 1, NULL);
        mock_env_topic(env, "epoch-lost", 2, topic);
        mock_env_fill(producer, topic, 2, 3);
        assert_int_equal(kdc_assignment_new(&a, hook, &ev), 0);
        ev.a = a;
        ev.committed_in_lost_hook = 1; /* not called yet */
        c = mock_env_consumer_with(env, "epoch-lost",
                                   kdc_assignment_rebalance_cb, a,
                                   eager_conf);
        subscribe(c, topic);
        poll_both_partitions(c, batch);
        ev.held = batch[0];
        ev.held_epoch = kdc_assignment_stamp(a, batch[0]);
        assert_true(ev.held_epoch > 0);

        /* The coordinator forgets the member: librdkafka treats the
         * assignment as lost. */
        rd_kafka_mock_push_request_errors(env->mcluster, MOCK_APIKEY_HEARTBEAT,
                                          3,
                                          RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
                                          RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
                                          RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
        for (int i = 0; i < 200 && ev.lost_revokes == 0; i++)
                poll_keep(c, batch, 25);
        assert_int_equal(ev.lost_revokes, 1);
        assert_int_equal(ev.committed_in_lost_hook, KDC_ERR_STALE);
        assert_int_equal(kdc_commit_message(c, batch[0], a, ev.held_epoch,
                                            NULL),
                         KDC_ERR_STALE);
        /* Read back through another handle of the group: the lost member
         * is busy rejoining. */
        checker = mock_env_consumer(env, "epoch-lost", NULL);
        assert_int_equal(
            mock_env_committed(checker, topic, batch[0]->partition),
            RD_KAFKA_OFFSET_INVALID);
        mock_env_close(checker);

        for (int p = 0; p < 2; p++)
                rd_kafka_message_destroy(batch[p]);
        /* Its membership is gone; leaving the group again only waits for
         * the mock's rejoin timer. */
        rd_kafka_destroy_flags(c, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        kdc_assignment_destroy(a);
        rd_kafka_destroy(producer);
}

#define SENTENCE(text, fn) {text, fn, NULL, heal, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("eager: a second consumer joins, the revoke ends the "
                     "epoch, and the old epoch's batch is refused by commit "
                     "and watermark",
                     an_eager_rebalance_ends_the_epoch_and_its_batch_is_refused),
            SENTENCE("cooperative: only the revoked partition's epoch ends; "
                     "the kept partition's work still commits",
                     a_cooperative_rebalance_ends_only_the_revoked_partitions_epoch),
            SENTENCE("a lost assignment ends the epoch before the hook runs, "
                     "so nothing of it can be committed",
                     a_lost_assignment_ends_the_epoch_before_the_hook_can_commit),
        };

        return cmocka_run_group_tests_name("rebalance epochs", tests,
                                           mock_env_setup, mock_env_teardown);
}
