/* kdc_strerror() (harness/libkdc/error.c). */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <string.h>

#include <cmocka.h>

#include <kdc/kdc.h>

static const int all_codes[] = {
    KDC_OK,           KDC_ERR_INVALID,    KDC_ERR_NOMEM,   KDC_ERR_TIMEOUT,
    KDC_ERR_DELIVERY, KDC_ERR_QUEUE_FULL, KDC_ERR_PRODUCE, KDC_ERR_COMMIT,
    KDC_ERR_BUSY,     KDC_ERR_CONF,       KDC_ERR_STALE,   KDC_ERR_MALFORMED,
    KDC_ERR_NOENT,    KDC_ERR_ASSIGN,     KDC_ERR_IO,
};
#define N_CODES (sizeof(all_codes) / sizeof(all_codes[0]))

static void every_code_has_its_own_text_and_every_error_is_negative(
    void **state) {
        const char *unknown = kdc_strerror(-1000);

        (void)state;
        for (size_t i = 0; i < N_CODES; i++) {
                const char *text = kdc_strerror(all_codes[i]);

                assert_non_null(text);
                assert_true(strlen(text) > 0);
                assert_string_not_equal(text, unknown);
                if (i > 0)
                        assert_true(all_codes[i] < 0);
                for (size_t j = 0; j < i; j++)
                        assert_string_not_equal(text,
                                                kdc_strerror(all_codes[j]));
        }
}

static void codes_are_consecutive_so_new_ones_are_only_ever_appended(
    void **state) {
        (void)state;
        for (size_t i = 0; i < N_CODES; i++)
                assert_int_equal(all_codes[i], -(int)i);
}

static void unknown_codes_get_a_fixed_text_never_null(void **state) {
        (void)state;
        assert_string_equal(kdc_strerror(-1000), "Unknown kdc error code");
        assert_string_equal(kdc_strerror(1), "Unknown kdc error code");
        assert_string_equal(kdc_strerror(KDC_ERR_IO - 1),
                            "Unknown kdc error code");
}

int main(void) {
        const struct CMUnitTest tests[] = {
            {"every kdc error code has its own text and every error is "
             "negative",
             every_code_has_its_own_text_and_every_error_is_negative, NULL,
             NULL, NULL},
            {"error codes are consecutive, 0 down to the last one",
             codes_are_consecutive_so_new_ones_are_only_ever_appended, NULL,
             NULL, NULL},
            {"unknown codes get a fixed text, never NULL",
             unknown_codes_get_a_fixed_text_never_null, NULL, NULL, NULL},
        };

        return cmocka_run_group_tests_name("kdc_strerror", tests, NULL, NULL);
}
