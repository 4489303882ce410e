/* The input workload (workload.c) on a mock cluster: producing never waits
 * for room in the producer's queue, so that a run whose brokers are all down
 * (broker-down) at a high --rate still applies its next fault step, the one
 * that brings them back up. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static void a_full_queue_returns_to_the_run_instead_of_waiting(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        struct tk_cluster c;
        struct tk_workload w;
        struct tk_step down;

        kdc_testkit_options_init(&o);
        assert_int_equal(tk_cluster_start(&c, &o), 0);
        assert_int_equal(tk_workload_new(&w, &c, 150000, 0, 1), 0);
        memset(&down, 0, sizeof down);
        down.action = TK_BROKER_DOWN;
        down.broker = -1;
        tk_cluster_apply(&c, &down);

        /* More events than the producer's queue holds (100,000 messages):
         * with every broker down nothing drains it. */
        int64_t t0 = tk_now_ms();
        tk_workload_produce(&w, 150000);
        assert_true(tk_now_ms() - t0 < 20000);
        assert_true(w.enqueued >= 1000);
        assert_true(w.enqueued < 150000);
        assert_int_equal(w.failed, 0); /* a full queue is not a failed event */

        /* Brokers up: the rest goes in at later rounds and is confirmed. */
        tk_cluster_heal(&c);
        for (int round = 0; round < 600 && w.confirmed < 150000; round++) {
                tk_workload_produce(&w, 150000);
                tk_workload_poll(&w, 100);
        }
        assert_int_equal(w.enqueued, 150000);
        assert_int_equal(tk_workload_drain(&w, 30000), 0);
        tk_workload_destroy(&w);
        tk_cluster_stop(&c);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_full_queue_returns_to_the_run_instead_of_waiting),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
