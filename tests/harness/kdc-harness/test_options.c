/* Options and argument checks of kdc/testkit.h that need no Kafka: what
 * kdc_testkit_options_validate() says about each bad option, and what the
 * run and print functions return for arguments they refuse. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <kdc/testkit.h>

static void the_defaults_are_valid(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        char err[256] = "untouched";

        kdc_testkit_options_init(&o);
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), 0);
        assert_string_equal(err, "");
        assert_int_equal(o.require_complete, 0);
        assert_int_equal(o.service_fd, -1);
}

static void each_bad_option_is_named(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        char err[256];

        kdc_testkit_options_init(&o);
        o.events = 0;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_string_equal(err, "events: 0 is not in 1..10000000");

        kdc_testkit_options_init(&o);
        o.seed = UINT64_MAX; /* a JSON report would show it as -1 */
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_non_null(strstr(err, "seed: 18446744073709551615 is above 9223372036854775807"));
        o.seed = INT64_MAX;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), 0);

        kdc_testkit_options_init(&o);
        o.partitions = 65;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_string_equal(err, "partitions: 65 is not in 1..64");

        kdc_testkit_options_init(&o);
        o.output_topic = "a b";
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_non_null(strstr(err, "output topic 'a b' is not a topic name"));

        kdc_testkit_options_init(&o);
        o.dlq_topic = NULL;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_non_null(strstr(err, "DLQ topic '(null)'"));

        kdc_testkit_options_init(&o);
        o.dlq_topic = o.output_topic;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_string_equal(err, "the output and DLQ topics are both 'kdc.output': each role "
                                 "needs a topic of its own");

        kdc_testkit_options_init(&o);
        o.group = "";
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_string_equal(err, "the consumer group is empty");

        kdc_testkit_options_init(&o);
        o.timeout_ms = 999;
        assert_int_equal(kdc_testkit_options_validate(&o, err, sizeof err), KDC_ERR_INVALID);
        assert_string_equal(err, "timeout: 999 ms is not >= 1000");

        /* Truncated to the buffer, still terminated; NULL buffer allowed. */
        kdc_testkit_options_init(&o);
        o.rate = 0;
        assert_int_equal(kdc_testkit_options_validate(&o, err, 6), KDC_ERR_INVALID);
        assert_string_equal(err, "rate:");
        assert_int_equal(kdc_testkit_options_validate(&o, NULL, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_options_validate(NULL, err, sizeof err), KDC_ERR_INVALID);
}

static void refused_calls_leave_no_result(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = (kdc_testkit_result_t *)&o; /* not NULL */
        char *argv[] = {"true", NULL};

        kdc_testkit_options_init(&o);
        assert_int_equal(kdc_testkit_run_command(&o, "baseline", NULL, &r), KDC_ERR_INVALID);
        assert_null(r);
        r = (kdc_testkit_result_t *)&o;
        assert_int_equal(kdc_testkit_run_command(&o, NULL, argv, &r), KDC_ERR_INVALID);
        assert_null(r);
        r = (kdc_testkit_result_t *)&o;
        assert_int_equal(kdc_testkit_run_loop(&o, "baseline", NULL, NULL, &r), KDC_ERR_INVALID);
        assert_null(r);
        assert_int_equal(kdc_testkit_run_command(&o, "baseline", argv, NULL), KDC_ERR_INVALID);
}

/* On an existing cluster a scenario that needs the brokers is refused before
 * anything starts (127.0.0.1:1: nothing there is ever asked), and an empty
 * server list is a bad option. */
static void broker_faults_are_refused_on_an_existing_cluster(void **state) {
        (void)state;
        kdc_testkit_options_t o;
        kdc_testkit_result_t *r = (kdc_testkit_result_t *)&o; /* not NULL */
        char *argv[] = {"true", NULL};
        char why[256];

        kdc_testkit_options_init(&o);
        o.bootstrap_servers = "127.0.0.1:1";
        assert_int_equal(kdc_testkit_options_validate(&o, why, sizeof why), 0);
        for (size_t i = 0; i < kdc_testkit_scenario_count(); i++) {
                const kdc_testkit_scenario_t *s = kdc_testkit_scenario(i);
                if (!s->needs_broker_control)
                        continue;
                r = (kdc_testkit_result_t *)&o;
                assert_int_equal(kdc_testkit_run_command(&o, s->name, argv, &r), KDC_ERR_INVALID);
                assert_null(r);
        }
        o.bootstrap_servers = "";
        assert_int_equal(kdc_testkit_options_validate(&o, why, sizeof why), KDC_ERR_INVALID);
        assert_string_equal(why, "the bootstrap servers are empty");
}

static void an_unknown_report_format_is_refused(void **state) {
        (void)state;
        const kdc_testkit_result_t *none[1] = {NULL};
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_int_equal(kdc_testkit_results_print(none, 0, f, (kdc_testkit_format_t)7),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_results_print(none, 1, f, KDC_TESTKIT_JSON), KDC_ERR_INVALID);
        assert_int_equal(kdc_testkit_results_print(NULL, 0, f, KDC_TESTKIT_JSON), KDC_ERR_INVALID);
        fclose(f);
        assert_int_equal(len, 0);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_defaults_are_valid),
            cmocka_unit_test(each_bad_option_is_named),
            cmocka_unit_test(refused_calls_leave_no_result),
            cmocka_unit_test(broker_faults_are_refused_on_an_existing_cluster),
            cmocka_unit_test(an_unknown_report_format_is_refused),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
