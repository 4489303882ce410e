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

static void a_call_on_a_null_handle_is_no_api_event(void **state) {
    (void)state;
    kdc_expr_t null_arg = {0}, rk = {0}, zero = {0}, *flush_null[] = {&null_arg, &zero},
               *flush_rk[] = {&rk, &zero}, *produce_null[] = {&zero, &zero};
    null_arg.kind = KDC_E_NULL;
    rk.kind = KDC_E_REF;
    rk.name = "rk";
    zero.kind = KDC_E_INT;
    zero.has_ival = 1;
    /* three calls: a model is not changed once built (kdc_api_lookup keeps its answer in
     * the call) */
    kdc_expr_t call = {0}, call_rk, call_produce;
    call.kind = KDC_E_CALL;
    call.name = "rd_kafka_flush";
    call.kids = flush_null;
    call.nkids = 2;
    call_rk = call;
    call_rk.kids = flush_rk;
    call_produce = call;
    call_produce.name = "rd_kafka_produce"; /* rd_kafka_produce(0, 0): no topic handle */
    call_produce.kids = produce_null;
    assert_null(kdc_api_lookup(&call));        /* rd_kafka_flush(NULL, 0) */
    assert_non_null(kdc_api_lookup(&call_rk)); /* rd_kafka_flush(rk, 0) */
    assert_null(kdc_api_lookup(&call_produce));
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_api_table_is_sorted_for_binary_search),
        cmocka_unit_test(every_table_entry_is_found_by_its_name),
        cmocka_unit_test(a_call_on_a_null_handle_is_no_api_event),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
