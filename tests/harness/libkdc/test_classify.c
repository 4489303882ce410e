/* Failure classification (harness/libkdc/classify.c). The default table lives in
 * harness/libkdc/include/kdc/classify.h; this test reads it from there and checks every
 * row against kdc_classify(), so the header and the code cannot drift. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <kdc/kdc.h>

#ifndef KDC_CLASSIFY_HEADER
#error "KDC_CLASSIFY_HEADER (path of harness/libkdc/include/kdc/classify.h) is not defined"
#endif

/* The code for a name as rd_kafka_err2name() prints it; -1000 if none. */
static int code_of(const char *name) {
        const struct rd_kafka_err_desc *descs;
        size_t n;

        rd_kafka_get_err_descs(&descs, &n);
        for (size_t i = 0; i < n; i++)
                if (descs[i].name && strcmp(descs[i].name, name) == 0)
                        return descs[i].code;
        return -1000;
}

static kdc_class_t class_of(const char *name) {
        for (kdc_class_t c = KDC_CLASS_NONE; c <= KDC_CLASS_FATAL; c++)
                if (strcmp(kdc_class_name(c), name) == 0)
                        return c;
        fail_msg("unknown class name '%s' in the header table", name);
        return KDC_CLASS_NONE;
}

struct row {
        int code;
        kdc_class_t cls;
};

/* Rows of the header's table: " * | NAME | class |". */
static size_t read_table(struct row *rows, size_t max) {
        FILE *f = fopen(KDC_CLASSIFY_HEADER, "r");
        char line[256], name[128], cls[32];
        size_t n = 0;

        assert_non_null(f);
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, " * | %127[A-Z0-9_] | %31[a-z] |", name,
                           cls) == 2) {
                        assert_true(n < max);
                        rows[n].code = code_of(name);
                        if (rows[n].code == -1000)
                                fail_msg("header names unknown code %s", name);
                        rows[n].cls = class_of(cls);
                        n++;
                }
        fclose(f);
        return n;
}

static void every_row_of_the_header_table_is_what_kdc_classify_answers(
    void **state) {
        struct row rows[256];
        size_t n = read_table(rows, 256);

        (void)state;
        assert_true(n >= 90);
        for (size_t i = 0; i < n; i++) {
                if (kdc_classify(NULL, rows[i].code) != rows[i].cls)
                        fail_msg("%s: header says %s, code says %s",
                                 rd_kafka_err2name(rows[i].code),
                                 kdc_class_name(rows[i].cls),
                                 kdc_class_name(
                                     kdc_classify(NULL, rows[i].code)));
                for (size_t j = 0; j < i; j++)
                        assert_int_not_equal(rows[i].code, rows[j].code);
        }
}

static void every_code_not_in_the_table_is_transient(void **state) {
        const struct rd_kafka_err_desc *descs;
        struct row rows[256];
        size_t n = read_table(rows, 256), ndescs;
        int unlisted = 0;

        (void)state;
        rd_kafka_get_err_descs(&descs, &ndescs);
        for (size_t i = 0; i < ndescs; i++) {
                int listed = 0;

                if (!descs[i].name)
                        continue;
                for (size_t j = 0; j < n; j++)
                        listed |= rows[j].code == descs[i].code;
                if (listed)
                        continue;
                unlisted++;
                if (kdc_classify(NULL, descs[i].code) != KDC_CLASS_TRANSIENT)
                        fail_msg("%s is not in the header table but is "
                                 "classified %s",
                                 descs[i].name,
                                 kdc_class_name(
                                     kdc_classify(NULL, descs[i].code)));
        }
        assert_true(unlisted > 0);
        /* A code librdkafka does not even know is transient too. */
        assert_int_equal(kdc_classify(NULL, (rd_kafka_resp_err_t)12345),
                         KDC_CLASS_TRANSIENT);
}

static void the_issues_membership_and_transport_codes_have_their_class(
    void **state) {
        static const rd_kafka_resp_err_t membership[] = {
            RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION,
            RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID,
            RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS,
            RD_KAFKA_RESP_ERR_FENCED_INSTANCE_ID,
            RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED,
            RD_KAFKA_RESP_ERR__ASSIGNMENT_LOST};
        static const rd_kafka_resp_err_t transient[] = {
            RD_KAFKA_RESP_ERR__TRANSPORT, RD_KAFKA_RESP_ERR__TIMED_OUT,
            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT, RD_KAFKA_RESP_ERR__RESOLVE,
            RD_KAFKA_RESP_ERR__ALL_BROKERS_DOWN};

        (void)state;
        for (size_t i = 0; i < sizeof(membership) / sizeof(membership[0]); i++)
                assert_int_equal(kdc_classify(NULL, membership[i]),
                                 KDC_CLASS_MEMBERSHIP);
        for (size_t i = 0; i < sizeof(transient) / sizeof(transient[0]); i++)
                assert_int_equal(kdc_classify(NULL, transient[i]),
                                 KDC_CLASS_TRANSIENT);
        assert_int_equal(kdc_classify(NULL, RD_KAFKA_RESP_ERR_NO_ERROR),
                         KDC_CLASS_NONE);
        assert_int_equal(
            kdc_classify(NULL, RD_KAFKA_RESP_ERR_MSG_SIZE_TOO_LARGE),
            KDC_CLASS_POISON);
        assert_int_equal(
            kdc_classify(NULL, RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED),
            KDC_CLASS_FATAL);
}

static void a_service_overrides_a_code_and_classifies_its_own_errors(
    void **state) {
        enum { HTTP_400 = 400, HTTP_503 = 503, PARSE_ERROR = 1 };
        kdc_classifier_t *c;

        (void)state;
        assert_int_equal(kdc_classifier_new(&c), 0);
        /* Before any override: the default table. */
        assert_int_equal(kdc_classify(c, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
                         KDC_CLASS_TRANSIENT);
        assert_int_equal(kdc_classifier_set(c,
                                            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
                                            KDC_CLASS_FATAL),
                         0);
        assert_int_equal(kdc_classify(c, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
                         KDC_CLASS_FATAL);
        /* Set again: the last one wins. */
        assert_int_equal(kdc_classifier_set(c,
                                            RD_KAFKA_RESP_ERR__MSG_TIMED_OUT,
                                            KDC_CLASS_POISON),
                         0);
        assert_int_equal(kdc_classify(c, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
                         KDC_CLASS_POISON);
        /* Other codes and the NULL classifier are unaffected. */
        assert_int_equal(kdc_classify(NULL, RD_KAFKA_RESP_ERR__MSG_TIMED_OUT),
                         KDC_CLASS_TRANSIENT);
        assert_int_equal(kdc_classify(c, RD_KAFKA_RESP_ERR__TRANSPORT),
                         KDC_CLASS_TRANSIENT);

        /* The service's own codes: their own number space. */
        assert_int_equal(kdc_classifier_set_app(c, HTTP_400, KDC_CLASS_POISON),
                         0);
        assert_int_equal(
            kdc_classifier_set_app(c, PARSE_ERROR, KDC_CLASS_POISON), 0);
        assert_int_equal(kdc_classify_app(c, HTTP_400), KDC_CLASS_POISON);
        assert_int_equal(kdc_classify_app(c, PARSE_ERROR), KDC_CLASS_POISON);
        assert_int_equal(kdc_classify_app(c, HTTP_503), KDC_CLASS_TRANSIENT);
        assert_int_equal(kdc_classify_app(NULL, HTTP_400),
                         KDC_CLASS_TRANSIENT);
        /* App code 1 is not librdkafka's code 1 (OFFSET_OUT_OF_RANGE). */
        assert_int_equal(kdc_classify(c, (rd_kafka_resp_err_t)PARSE_ERROR),
                         KDC_CLASS_TRANSIENT);

        assert_int_equal(kdc_classifier_set(NULL, 0, KDC_CLASS_FATAL),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_classifier_set(c, 0, (kdc_class_t)9),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_classifier_set_app(c, 0, (kdc_class_t)-1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_classifier_new(NULL), KDC_ERR_INVALID);
        kdc_classifier_destroy(c);
        kdc_classifier_destroy(NULL);
}

static void rd_kafka_error_t_is_classified_by_its_code_and_override(
    void **state) {
        rd_kafka_error_t *e;
        kdc_classifier_t *c;

        (void)state;
        assert_int_equal(kdc_classify_error(NULL, NULL), KDC_CLASS_NONE);
        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION, "gen");
        assert_int_equal(kdc_classify_error(NULL, e), KDC_CLASS_MEMBERSHIP);
        rd_kafka_error_destroy(e);
        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR__TRANSPORT, "down");
        assert_int_equal(kdc_classify_error(NULL, e), KDC_CLASS_TRANSIENT);
        assert_int_equal(kdc_classifier_new(&c), 0);
        assert_int_equal(
            kdc_classifier_set(c, RD_KAFKA_RESP_ERR__TRANSPORT,
                               KDC_CLASS_FATAL),
            0);
        assert_int_equal(kdc_classify_error(c, e), KDC_CLASS_FATAL);
        rd_kafka_error_destroy(e);
        e = rd_kafka_error_new(RD_KAFKA_RESP_ERR_INVALID_RECORD, "bad");
        assert_int_equal(kdc_classify_error(NULL, e), KDC_CLASS_POISON);
        rd_kafka_error_destroy(e);
        kdc_classifier_destroy(c);
}

static void class_names_are_the_dlq_header_values(void **state) {
        (void)state;
        assert_string_equal(kdc_class_name(KDC_CLASS_NONE), "none");
        assert_string_equal(kdc_class_name(KDC_CLASS_POISON), "poison");
        assert_string_equal(kdc_class_name(KDC_CLASS_TRANSIENT), "transient");
        assert_string_equal(kdc_class_name(KDC_CLASS_MEMBERSHIP),
                            "membership");
        assert_string_equal(kdc_class_name(KDC_CLASS_FATAL), "fatal");
        assert_string_equal(kdc_class_name((kdc_class_t)42), "unknown");
}

#define SENTENCE(text, fn) {text, fn, NULL, NULL, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("every row of the table in kdc/classify.h is what "
                     "kdc_classify answers",
                     every_row_of_the_header_table_is_what_kdc_classify_answers),
            SENTENCE("every librdkafka code not in the table is transient",
                     every_code_not_in_the_table_is_transient),
            SENTENCE("membership codes (ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, "
                     "...) and transport codes have their class",
                     the_issues_membership_and_transport_codes_have_their_class),
            SENTENCE("a service overrides a code and classifies its own "
                     "errors in their own number space",
                     a_service_overrides_a_code_and_classifies_its_own_errors),
            SENTENCE("an rd_kafka_error_t is classified by its code and the "
                     "service's override",
                     rd_kafka_error_t_is_classified_by_its_code_and_override),
            SENTENCE("class names are the DLQ header values",
                     class_names_are_the_dlq_header_values),
        };

        return cmocka_run_group_tests_name("failure classification", tests,
                                           NULL, NULL);
}
