/* The text and JSON reports (report.c) of a result written by hand (no
 * Kafka): every list the text promises, the verdict's reason in both. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <jansson.h>

#include "internal.h"

static char *print(const struct tk_result *r, kdc_testkit_format_t format) {
        const kdc_testkit_result_t *rs[] = {&r->pub};
        char *text = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&text, &len);

        assert_non_null(f);
        assert_int_equal(kdc_testkit_results_print(rs, 1, f, format), 0);
        fclose(f);
        return text;
}

static void a_result_with_duplicates(struct tk_result *r, char **dups, int64_t committed[2]) {
        memset(r, 0, sizeof *r);
        r->pub.scenario = "baseline";
        r->pub.seed = 7;
        r->pub.events = 4;
        r->pub.committed = 4;
        r->pub.output_records = 6;
        r->pub.processed = 4;
        r->pub.duplicated = 2;
        r->pub.end_reason = "all events committed";
        r->pub.failure = "events duplicated";
        r->ids[KDC_TESTKIT_DUPLICATED] = dups;
        r->nids[KDC_TESTKIT_DUPLICATED] = 2;
        r->committed = committed;
        r->partitions = 2;
}

static void the_text_lists_the_duplicated_events(void **state) {
        (void)state;
        char *dups[] = {"evt-0000001", "evt-0000003"};
        int64_t committed[] = {2, 2};
        struct tk_result r;

        a_result_with_duplicates(&r, dups, committed);
        char *text = print(&r, KDC_TESTKIT_TEXT);
        assert_non_null(strstr(text, "scenario baseline (seed 7): FAIL, 2 events duplicated "
                                     "(exactly-once)\n"));
        assert_non_null(strstr(text, "  duplicated: evt-0000001 evt-0000003\n"));
        assert_null(strstr(text, "lost:"));
        free(text);
}

static void the_json_gives_the_failure_and_the_dropped_records(void **state) {
        (void)state;
        char *dups[] = {"evt-0000001", "evt-0000003"};
        int64_t committed[] = {2, 2};
        struct tk_result r;
        json_error_t jerr;

        a_result_with_duplicates(&r, dups, committed);
        char *text = print(&r, KDC_TESTKIT_JSON);
        json_t *doc = json_loads(text, 0, &jerr), *run;
        assert_non_null(doc);
        run = json_array_get(json_object_get(doc, "runs"), 0);
        assert_string_equal(json_string_value(json_object_get(run, "failure")),
                            "events duplicated");
        assert_int_equal(json_integer_value(json_object_get(run, "dropped_records")), 0);
        assert_int_equal(json_array_size(json_object_get(run, "duplicated_events")), 2);
        json_decref(doc);
        free(text);

        /* Valid: failure is null. */
        r.pub.valid = 1;
        r.pub.failure = NULL;
        text = print(&r, KDC_TESTKIT_JSON);
        doc = json_loads(text, 0, &jerr);
        assert_non_null(doc);
        run = json_array_get(json_object_get(doc, "runs"), 0);
        assert_true(json_is_null(json_object_get(run, "failure")));
        assert_true(json_is_true(json_object_get(doc, "valid")));
        json_decref(doc);
        free(text);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(the_text_lists_the_duplicated_events),
            cmocka_unit_test(the_json_gives_the_failure_and_the_dropped_records),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
