/* The checker counts lost, duplicated and unprocessed events the way the
 * issue defines them, from histories written by hand (no Kafka). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static struct tk_event ev(int32_t partition, int64_t offset, int outputs, int dlq) {
        struct tk_event e;

        memset(&e, 0, sizeof e);
        e.partition = partition;
        e.offset = offset;
        e.outputs = outputs;
        e.dlq = dlq;
        return e;
}

static void an_event_below_the_committed_offset_without_output_or_dlq_is_lost(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 1, 0), ev(0, 1, 0, 0), ev(0, 2, 1, 0), ev(0, 3, 0, 0)};
        int64_t committed[] = {3}; /* offsets 0..2 committed, 3 not */
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 4, committed, 1, &v), 0);
        assert_int_equal(v.events, 4);
        assert_int_equal(v.committed, 3);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.nlists[KDC_TESTKIT_LOST], 1);
        assert_int_equal(v.lists[KDC_TESTKIT_LOST][0], 1);
        assert_int_equal(v.unprocessed, 1);
        assert_int_equal(v.lists[KDC_TESTKIT_UNPROCESSED][0], 3);
        tk_verdict_free(&v);
}

static void a_dlq_record_saves_a_committed_event(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 0, 1), ev(0, 1, 1, 0)};
        int64_t committed[] = {2};
        struct tk_verdict v;

        e[0].poison = 1;
        assert_int_equal(tk_check(e, 2, committed, 1, &v), 0);
        assert_int_equal(v.lost, 0);
        assert_int_equal(v.poison, 1);
        assert_int_equal(v.dead_lettered, 1);
        assert_int_equal(v.processed, 1);
        tk_verdict_free(&v);
}

/* With a sink, the row is the effect: an output does not save a committed event
 * without a row (or a DLQ record), and a second row is a duplicate effect. */
static void with_a_sink_a_committed_event_without_a_row_is_lost(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 0, 0), ev(0, 1, 1, 0), ev(0, 2, 0, 1), ev(0, 3, 0, 0),
                               ev(0, 4, 0, 0)};
        int64_t committed[] = {4}; /* offsets 0..3 committed, 4 not */
        struct tk_verdict v;

        e[0].effects = 1;
        e[3].effects = 2;
        assert_int_equal(tk_check_effects(e, 5, committed, 1, 1, &v), 0);
        assert_int_equal(v.lost, 1); /* offset 1: an output, no row */
        assert_int_equal(v.lists[KDC_TESTKIT_LOST][0], 1);
        assert_int_equal(v.effected, 2);
        assert_int_equal(v.duplicate_effects, 1);
        assert_int_equal(v.nlists[KDC_TESTKIT_DUPLICATE_EFFECTS], 1);
        assert_int_equal(v.lists[KDC_TESTKIT_DUPLICATE_EFFECTS][0], 3);
        assert_int_equal(v.unprocessed, 1);
        assert_string_equal(tk_judge(&v, 1, 1, 0, 0, 0), "events lost");
        v.lost = 0;
        assert_null(tk_judge(&v, 1, 1, 0, 0, 0));
        assert_string_equal(tk_judge(&v, 1, 1, 0, 1, 0), "effects duplicated");
        tk_verdict_free(&v);
}

static void more_than_one_output_is_a_duplicate_not_a_loss(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 2, 0), ev(0, 1, 1, 0), ev(0, 2, 3, 0)};
        int64_t committed[] = {3};
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 3, committed, 1, &v), 0);
        assert_int_equal(v.lost, 0);
        assert_int_equal(v.duplicated, 2);
        assert_int_equal(v.lists[KDC_TESTKIT_DUPLICATED][0], 0);
        assert_int_equal(v.lists[KDC_TESTKIT_DUPLICATED][1], 2);
        tk_verdict_free(&v);
}

static void a_partition_without_committed_offset_is_all_unprocessed(void **state) {
        (void)state;
        /* partition 1 has nothing committed: its events are unprocessed even
         * with outputs; partition 0 committed past both of its events */
        struct tk_event e[] = {ev(0, 0, 1, 0), ev(1, 0, 1, 0), ev(0, 1, 0, 0), ev(1, 1, 0, 0)};
        int64_t committed[] = {2, -1};
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 4, committed, 2, &v), 0);
        assert_int_equal(v.committed, 2);
        assert_int_equal(v.unprocessed, 2);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.lists[KDC_TESTKIT_LOST][0], 2);
        tk_verdict_free(&v);
}

static void events_the_broker_never_stored_are_not_counted(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 1, 0), ev(0, -1, 0, 0), ev(0, 1, 0, 0)};
        int64_t committed[] = {2};
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 3, committed, 1, &v), 0);
        assert_int_equal(v.events, 2);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.lists[KDC_TESTKIT_LOST][0], 2);
        tk_verdict_free(&v);
}

static void offsets_with_gaps_compare_by_offset_not_by_position(void **state) {
        (void)state;
        /* offsets 10 and 20 (a compacted or transactional partition):
         * committed 15 covers only the first */
        struct tk_event e[] = {ev(0, 10, 0, 0), ev(0, 20, 0, 0)};
        int64_t committed[] = {15};
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 2, committed, 1, &v), 0);
        assert_int_equal(v.lost, 1);
        assert_int_equal(v.unprocessed, 1);
        tk_verdict_free(&v);
}

static void many_lost_events_are_all_listed(void **state) {
        (void)state;
        enum { N = 5000 };
        static struct tk_event e[N];
        int64_t committed[] = {N};
        struct tk_verdict v;

        for (int i = 0; i < N; i++)
                e[i] = ev(0, i, i % 2, 0);
        assert_int_equal(tk_check(e, N, committed, 1, &v), 0);
        assert_int_equal(v.lost, N / 2);
        assert_int_equal(v.nlists[KDC_TESTKIT_LOST], N / 2);
        assert_int_equal(v.lists[KDC_TESTKIT_LOST][N / 2 - 1], N - 2);
        tk_verdict_free(&v);
}

static void event_ids_round_trip_and_strangers_are_refused(void **state) {
        (void)state;
        char id[24];

        tk_event_id(42, id, sizeof id);
        assert_string_equal(id, "evt-0000042");
        assert_int_equal(tk_event_index(id, strlen(id), 100), 42);
        assert_int_equal(tk_event_index(id, strlen(id), 42), -1);       /* not one of n */
        assert_int_equal(tk_event_index("evt-042", 7, 100), -1);       /* another spelling */
        assert_int_equal(tk_event_index("evt-00000042", 12, 100), -1); /* leading zero */
        assert_int_equal(tk_event_index("evt-000004x", 11, 100), -1);
        assert_int_equal(tk_event_index("abc-0000042", 11, 100), -1);
        assert_int_equal(tk_event_index(NULL, 0, 100), -1);
}

static void a_run_in_which_the_service_did_nothing_fails(void **state) {
        (void)state;
        struct tk_event e[] = {ev(0, 0, 0, 0), ev(0, 1, 0, 0)};
        int64_t none[] = {-1};
        struct tk_verdict v;

        /* Nothing committed, no output, no DLQ record: nothing lost, and no
         * evidence of anything either. */
        assert_int_equal(tk_check(e, 2, none, 1, &v), 0);
        assert_int_equal(v.lost, 0);
        assert_string_equal(tk_judge(&v, 0, 0, 0, 0, 0), "nothing processed");
        /* Outputs without commits: it worked, only incompletely. */
        assert_null(tk_judge(&v, 2, 0, 0, 0, 0));
        assert_null(tk_judge(&v, 0, 1, 0, 0, 0));
        assert_string_equal(tk_judge(&v, 2, 0, 0, 0, 1), "events unprocessed");
        tk_verdict_free(&v);
}

static void the_failure_named_is_the_first_that_applies(void **state) {
        (void)state;
        /* offset 0: two outputs; 1: none (lost); 2: one; 3: not committed */
        struct tk_event e[] = {ev(0, 0, 2, 0), ev(0, 1, 0, 0), ev(0, 2, 1, 0), ev(0, 3, 1, 0)};
        int64_t committed[] = {3};
        struct tk_verdict v;

        assert_int_equal(tk_check(e, 4, committed, 1, &v), 0);
        assert_string_equal(tk_judge(&v, 4, 0, 0, 1, 1), "events lost");
        e[1].outputs = 1;
        tk_verdict_free(&v);
        assert_int_equal(tk_check(e, 4, committed, 1, &v), 0);
        assert_null(tk_judge(&v, 5, 0, 0, 0, 0)); /* duplicates and unprocessed allowed */
        assert_string_equal(tk_judge(&v, 5, 0, 0, 1, 1), "events duplicated");
        assert_string_equal(tk_judge(&v, 5, 0, 0, 0, 1), "events unprocessed");
        /* Records the mock deleted: no verdict, whatever else holds. */
        e[1].outputs = 0;
        tk_verdict_free(&v);
        assert_int_equal(tk_check(e, 4, committed, 1, &v), 0);
        assert_string_equal(tk_judge(&v, 4, 0, 1, 0, 0), "records dropped by the mock cluster");
        tk_verdict_free(&v);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(an_event_below_the_committed_offset_without_output_or_dlq_is_lost),
            cmocka_unit_test(a_dlq_record_saves_a_committed_event),
            cmocka_unit_test(more_than_one_output_is_a_duplicate_not_a_loss),
            cmocka_unit_test(a_partition_without_committed_offset_is_all_unprocessed),
            cmocka_unit_test(events_the_broker_never_stored_are_not_counted),
            cmocka_unit_test(offsets_with_gaps_compare_by_offset_not_by_position),
            cmocka_unit_test(many_lost_events_are_all_listed),
            cmocka_unit_test(event_ids_round_trip_and_strangers_are_refused),
            cmocka_unit_test(a_run_in_which_the_service_did_nothing_fails),
            cmocka_unit_test(the_failure_named_is_the_first_that_applies),
            cmocka_unit_test(with_a_sink_a_committed_event_without_a_row_is_lost),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
