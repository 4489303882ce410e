/* The librdkafka/libkdc API table kdc-lint looks calls up in. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "api.h"

static void the_api_table_is_sorted_for_binary_search(void **state) {
    (void)state;
    assert_int_equal(kdc_api_self_check(), 0);
}

static void every_table_entry_is_found_by_its_name(void **state) {
    (void)state;
    static const char *const names[] = {
        "rd_kafka_commit", "rd_kafka_producev", "rd_kafka_topic_partition_list_add",
        "rd_kafka_conf_set_default_topic_conf", "rd_kafka_consumer_poll",
        "RdKafka::KafkaConsumer::commitSync", "RdKafka::Producer::produce", "kdc_tracker_wait"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        kdc_expr_t call = {0};
        call.kind = KDC_E_CALL;
        call.name = names[i];
        const kdc_api_t *a = kdc_api_lookup(&call);
        assert_non_null(a);
        assert_string_equal(a->name, names[i]);
    }
    kdc_expr_t other = {0};
    other.kind = KDC_E_CALL;
    other.name = "rd_kafka_commitx";
    assert_null(kdc_api_lookup(&other));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_api_table_is_sorted_for_binary_search),
        cmocka_unit_test(every_table_entry_is_found_by_its_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
