/* The scenario table: at least ten documented scenarios, plans drawn from
 * the seed and reproducible, every fault healed by the end of its plan,
 * and docs/kdc-harness.md naming exactly the scenarios `kdc-harness list`
 * prints. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "internal.h"

static void at_least_ten_scenarios_each_with_its_documentation(void **state) {
        (void)state;
        size_t n = kdc_testkit_scenario_count();

        assert_true(n >= 10);
        for (size_t i = 0; i < n; i++) {
                const kdc_testkit_scenario_t *s = kdc_testkit_scenario(i);
                assert_non_null(s);
                assert_true(strlen(s->name) > 0);
                assert_true(strlen(s->summary) > 10);
                assert_true(strlen(s->faults) > 3);
                assert_true(strlen(s->expect) > 10);
                assert_non_null(s->mock_limits);
                assert_ptr_equal(kdc_testkit_scenario_find(s->name), s);
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(kdc_testkit_scenario(j)->name, s->name);
        }
        assert_null(kdc_testkit_scenario(n));
        assert_null(kdc_testkit_scenario_find("no-such-scenario"));
        assert_null(kdc_testkit_scenario_find(NULL));
}

static void the_issues_faults_each_have_a_scenario(void **state) {
        (void)state;
        static const char *const required[] = {
            "broker-down", "produce-not-enough-replicas", "produce-msg-timed-out",
            "produce-topic-authorization-failed", "dlq-failing", "commit-rebalance-in-progress",
            "commit-unknown-member-id", "commit-illegal-generation", "coordinator-moved",
            "second-consumer", "sigkill-restart", "poison-events", "slow-processing",
            "leader-change"};

        for (size_t i = 0; i < sizeof required / sizeof required[0]; i++)
                if (!kdc_testkit_scenario_find(required[i]))
                        fail_msg("no scenario %s", required[i]);
}

static void the_same_seed_gives_the_same_plan_and_another_seed_another(void **state) {
        (void)state;
        for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                const struct tk_scenario *s = tk_scenario_find(kdc_testkit_scenario(i)->name);
                struct tk_plan a, b, c;
                int differs = 0;

                tk_plan_make(s, 7, &a);
                tk_plan_make(s, 7, &b);
                assert_memory_equal(&a, &b, sizeof a);
                if (a.nsteps == 0)
                        continue;
                for (uint64_t seed = 8; seed < 12 && !differs; seed++) {
                        tk_plan_make(s, seed, &c);
                        differs = memcmp(&a, &c, sizeof a) != 0;
                }
                if (!differs)
                        fail_msg("%s: seeds 7..11 give one plan", s->pub.name);
        }
}

static void every_fault_is_healed_by_the_end_of_its_plan(void **state) {
        (void)state;
        for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                const struct tk_scenario *s = tk_scenario_find(kdc_testkit_scenario(i)->name);
                int down[TK_BROKERS + 2] = {0}, paused = 0, started = 0, signals = 0;
                struct tk_plan p;

                tk_plan_make(s, 1, &p);
                assert_true(p.nsteps <= TK_MAX_STEPS);
                assert_true(p.poison_ratio >= 0 && p.poison_ratio < 0.5);
                assert_true(p.session_timeout_ms > 0);
                /* librdkafka refuses max.poll.interval.ms < session.timeout.ms */
                assert_true(p.max_poll_interval_ms == 0 ||
                            p.max_poll_interval_ms >= p.session_timeout_ms);
                for (int k = 0; k < p.nsteps; k++) {
                        const struct tk_step *st = &p.steps[k];
                        int b = st->broker < 0 ? TK_BROKERS + 1 : st->broker;
                        assert_true(st->at < 1.0);
                        if (k == 0)
                                assert_true(st->at > 0.1); /* after the warm-up */
                        switch (st->action) {
                        case TK_BROKER_DOWN:
                                down[b]++;
                                break;
                        case TK_BROKER_UP:
                                down[b]--;
                                break;
                        case TK_PAUSE:
                                paused++;
                                signals = 1;
                                break;
                        case TK_RESUME:
                                paused--;
                                break;
                        case TK_KILL:
                                signals = 1;
                                break;
                        case TK_START:
                                started++;
                                break;
                        case TK_STOP:
                                started--;
                                break;
                        case TK_PUSH_ERRORS:
                                assert_true(st->count > 0 && st->broker >= 1 &&
                                            st->broker <= TK_BROKERS);
                                break;
                        default:
                                break;
                        }
                }
                for (int b = 0; b < TK_BROKERS + 2; b++)
                        assert_int_equal(down[b], 0);
                assert_int_equal(paused, 0);
                assert_int_equal(started, 0);
                /* a thread cannot be SIGKILLed or SIGSTOPped */
                assert_int_equal(signals, s->pub.needs_process);
                /* the sink a scenario documents is the one its plan gives */
                if (p.sink == TK_SINK_NONE)
                        assert_null(s->pub.sink);
                else
                        assert_string_equal(s->pub.sink,
                                            p.sink == TK_SINK_SQLITE ? "sqlite" : "postgresql");
        }
}

/* needs_broker_control is written in the table; the plans say what it must be:
 * a scenario needs the embedded mock exactly when one of its steps (for any
 * seed) takes a broker down or up, pushes request errors or moves a leader or
 * the coordinator. */
static void broker_control_is_what_the_plans_do(void **state) {
        int some = 0, none = 0;

        (void)state;
        for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                const struct tk_scenario *s = tk_scenario_find(kdc_testkit_scenario(i)->name);
                int control = 0;

                for (uint64_t seed = 1; seed <= 5; seed++) {
                        struct tk_plan p;
                        tk_plan_make(s, seed, &p);
                        for (int k = 0; k < p.nsteps; k++)
                                switch (p.steps[k].action) {
                                case TK_BROKER_DOWN:
                                case TK_BROKER_UP:
                                case TK_PUSH_ERRORS:
                                case TK_SET_COORDINATOR:
                                case TK_SET_LEADERS:
                                        control = 1;
                                        break;
                                default:
                                        break;
                                }
                }
                if (control != s->pub.needs_broker_control)
                        fail_msg("%s: needs_broker_control is %d, its plan says %d", s->pub.name,
                                 s->pub.needs_broker_control, control);
                some += control;
                none += !control;
        }
        /* Both kinds exist: --bootstrap-servers has something to run and to refuse. */
        assert_true(some >= 5);
        assert_true(none >= 4);
}

static char *slurp(const char *path) {
        FILE *f = fopen(path, "r");
        char *buf;
        long n;

        if (!f)
                return NULL;
        fseek(f, 0, SEEK_END);
        n = ftell(f);
        rewind(f);
        buf = calloc(1, (size_t)n + 1);
        if (buf && fread(buf, 1, (size_t)n, f) != (size_t)n) {
                free(buf);
                buf = NULL;
        }
        fclose(f);
        return buf;
}

/* docs/kdc-harness.md has one "### `name`" heading per scenario, in table order. */
static void the_docs_name_exactly_the_scenarios_in_order(void **state) {
        (void)state;
        char *doc = slurp(KDC_HARNESS_DOC);
        size_t next = 0;

        if (!doc)
                fail_msg("cannot read %s", KDC_HARNESS_DOC);
        for (char *p = doc; (p = strstr(p, "\n### `")); p++) {
                char *name = p + 6, *end = strchr(name, '`');
                assert_non_null(end);
                *end = '\0';
                if (next >= kdc_testkit_scenario_count())
                        fail_msg("docs/kdc-harness.md documents an unknown scenario %s", name);
                if (strcmp(name, kdc_testkit_scenario(next)->name) != 0)
                        fail_msg("docs/kdc-harness.md: expected scenario %s, found %s",
                                 kdc_testkit_scenario(next)->name, name);
                next++;
                p = end;
        }
        assert_int_equal(next, kdc_testkit_scenario_count());
        free(doc);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(at_least_ten_scenarios_each_with_its_documentation),
            cmocka_unit_test(the_issues_faults_each_have_a_scenario),
            cmocka_unit_test(the_same_seed_gives_the_same_plan_and_another_seed_another),
            cmocka_unit_test(every_fault_is_healed_by_the_end_of_its_plan),
            cmocka_unit_test(broker_control_is_what_the_plans_do),
            cmocka_unit_test(the_docs_name_exactly_the_scenarios_in_order),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
