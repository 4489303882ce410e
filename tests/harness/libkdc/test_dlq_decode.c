/* The DLQ header decoder (harness/libkdc/dlq_decode.c) and the event identity
 * (harness/libkdc/identity.c). Headers are built with rd_kafka_headers_new(), so
 * no librdkafka client (and no librdkafka thread) is involved: the decoder
 * is exercised as what it is, a parser of untrusted bytes. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include <kdc/kdc.h>

static const char *const identity_hex =
    "cef98382712bb661dfc64fa8d663955e63b5f87713bc80519955a3ef4ea47c88";

static void hex_of(const unsigned char id[KDC_IDENTITY_LEN], char out[65]) {
        for (int i = 0; i < KDC_IDENTITY_LEN; i++)
                snprintf(out + 2 * i, 3, "%02x", id[i]);
}

static void identity_is_sha256_of_the_documented_framing(void **state) {
        unsigned char id[KDC_IDENTITY_LEN];
        char hex[65];

        (void)state;
        /* Expected values computed independently (Python hashlib) from the
         * framing documented in kdc/dlq.h. */
        assert_int_equal(kdc_identity("orders", "order-17", 8, "not json", 8,
                                      id),
                         0);
        hex_of(id, hex);
        assert_string_equal(hex, identity_hex);
        assert_int_equal(kdc_identity("orders", NULL, 0, "", 0, id), 0);
        hex_of(id, hex);
        assert_string_equal(
            hex,
            "a50f68e8a23497535f0922c1ba5f3b91c2fe9fe39a09c6a9b944c342ee904a61");
        /* An empty key is not a NULL key. */
        assert_int_equal(kdc_identity("orders", "", 0, "", 0, id), 0);
        hex_of(id, hex);
        assert_string_equal(
            hex,
            "7ce8a36c46d07f3b9a02534e605b074d59e5530820d1f6811c2e82132adec9f2");

        assert_int_equal(kdc_identity(NULL, NULL, 0, NULL, 0, id),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_identity("t", NULL, 1, NULL, 0, id),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_identity("t", NULL, 0, NULL, 0, NULL),
                         KDC_ERR_INVALID);
}

static void identity_separates_topic_key_and_value(void **state) {
        unsigned char a[KDC_IDENTITY_LEN], b[KDC_IDENTITY_LEN];

        (void)state;
        /* Moving bytes between fields changes the identity. */
        assert_int_equal(kdc_identity("ab", "c", 1, "d", 1, a), 0);
        assert_int_equal(kdc_identity("a", "bc", 2, "d", 1, b), 0);
        assert_memory_not_equal(a, b, KDC_IDENTITY_LEN);
        assert_int_equal(kdc_identity("a", "b", 1, "cd", 2, b), 0);
        assert_memory_not_equal(a, b, KDC_IDENTITY_LEN);
        assert_int_equal(kdc_identity("ab", "c", 1, "d", 1, b), 0);
        assert_memory_equal(a, b, KDC_IDENTITY_LEN);
}

struct hdr {
        const char *name;
        const char *value; /* NULL: a header without value */
        size_t len;        /* 0: strlen(value) */
};

static rd_kafka_headers_t *build(const struct hdr *h, size_t n) {
        rd_kafka_headers_t *hdrs = rd_kafka_headers_new(n + 1);

        for (size_t i = 0; i < n; i++)
                assert_int_equal(
                    rd_kafka_header_add(
                        hdrs, h[i].name, -1, h[i].value,
                        h[i].value ? (ssize_t)(h[i].len ? h[i].len
                                                        : strlen(h[i].value))
                                   : 0),
                    RD_KAFKA_RESP_ERR_NO_ERROR);
        return hdrs;
}

/* A complete, valid set as the router writes it. */
static const struct hdr valid[] = {
    {"trace-id", "abc", 0},
    {KDC_DLQ_HDR_TOPIC, "orders", 0},
    {KDC_DLQ_HDR_PARTITION, "3", 0},
    {KDC_DLQ_HDR_OFFSET, "41", 0},
    {KDC_DLQ_HDR_TIMESTAMP, "1700000000000", 0},
    {KDC_DLQ_HDR_GROUP, "orders-worker", 0},
    {KDC_DLQ_HDR_CLASS, "poison", 0},
    {KDC_DLQ_HDR_ERROR, "not json:\tline 1", 0},
    {KDC_DLQ_HDR_RETRY, "2", 0},
    {KDC_DLQ_HDR_IDENTITY,
     "cef98382712bb661dfc64fa8d663955e63b5f87713bc80519955a3ef4ea47c88", 0},
};
#define NVALID (sizeof(valid) / sizeof(valid[0]))

static void a_complete_header_set_decodes_to_every_field(void **state) {
        rd_kafka_headers_t *h = build(valid, NVALID);
        unsigned char id[KDC_IDENTITY_LEN];
        kdc_dlq_info_t info;

        (void)state;
        assert_int_equal(kdc_dlq_decode(h, &info), 0);
        assert_int_equal(info.fields, 0x1ff);
        assert_string_equal(info.topic, "orders");
        assert_int_equal(info.partition, 3);
        assert_int_equal(info.offset, 41);
        assert_int_equal(info.timestamp, 1700000000000LL);
        assert_string_equal(info.group, "orders-worker");
        assert_int_equal(info.failure_class, KDC_CLASS_POISON);
        assert_string_equal(info.error, "not json:\tline 1");
        assert_int_equal(info.retry_count, 2);
        assert_int_equal(kdc_identity("orders", "order-17", 8, "not json", 8,
                                      id),
                         0);
        assert_memory_equal(info.identity, id, KDC_IDENTITY_LEN);
        rd_kafka_headers_destroy(h);
}

static void no_kdc_header_is_noent_and_null_arguments_are_refused(
    void **state) {
        static const struct hdr others[] = {{"trace-id", "abc", 0},
                                            {"kdc", "no dot", 0}};
        rd_kafka_headers_t *h = build(others, 2);
        kdc_dlq_info_t info;

        (void)state;
        assert_int_equal(kdc_dlq_decode(h, &info), KDC_ERR_NOENT);
        assert_int_equal(info.fields, 0);
        assert_int_equal(kdc_dlq_decode(NULL, &info), KDC_ERR_NOENT);
        assert_int_equal(kdc_dlq_decode(h, NULL), KDC_ERR_INVALID);
        rd_kafka_headers_destroy(h);
}

/* The valid set with one header's value replaced (or removed: NULL name
 * match with remove = 1); returns the decode result and fields. */
static int decode_with(const char *name, const char *value, size_t len,
                       int remove, kdc_dlq_info_t *info) {
        struct hdr h[NVALID];
        size_t n = 0;
        rd_kafka_headers_t *hdrs;
        int r;

        for (size_t i = 0; i < NVALID; i++) {
                if (strcmp(valid[i].name, name) == 0) {
                        if (remove)
                                continue;
                        h[n] = (struct hdr){name, value, len};
                } else {
                        h[n] = valid[i];
                }
                n++;
        }
        hdrs = build(h, n);
        r = kdc_dlq_decode(hdrs, info);
        rd_kafka_headers_destroy(hdrs);
        return r;
}

struct bad {
        const char *name;
        const char *value; /* NULL: header without value */
        size_t len;
        unsigned bit;
};

static void every_malformed_value_is_refused_and_its_field_left_empty(
    void **state) {
        static char long_topic[KDC_DLQ_TOPIC_MAX + 2];
        static char long_group[KDC_DLQ_GROUP_MAX + 2];
        static char long_error[KDC_DLQ_ERROR_MAX + 2];
        const struct bad bad[] = {
            {KDC_DLQ_HDR_TOPIC, "", 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, "a b", 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, "a/b", 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, ".", 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, "..", 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, "or\0ders", 7, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, long_topic, 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_TOPIC, NULL, 0, KDC_DLQ_F_TOPIC},
            {KDC_DLQ_HDR_PARTITION, "", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "-1", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "+3", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "03", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, " 3", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "3 ", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "0x3", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_PARTITION, "2147483648", 0, KDC_DLQ_F_PARTITION},
            {KDC_DLQ_HDR_OFFSET, "9223372036854775808", 0, KDC_DLQ_F_OFFSET},
            {KDC_DLQ_HDR_OFFSET, "99999999999999999999", 0,
             KDC_DLQ_F_OFFSET},
            {KDC_DLQ_HDR_OFFSET, "-1", 0, KDC_DLQ_F_OFFSET},
            {KDC_DLQ_HDR_OFFSET, "4\0001", 3, KDC_DLQ_F_OFFSET},
            {KDC_DLQ_HDR_TIMESTAMP, "-2", 0, KDC_DLQ_F_TIMESTAMP},
            {KDC_DLQ_HDR_TIMESTAMP, "-0", 0, KDC_DLQ_F_TIMESTAMP},
            {KDC_DLQ_HDR_TIMESTAMP, "1e3", 0, KDC_DLQ_F_TIMESTAMP},
            {KDC_DLQ_HDR_GROUP, long_group, 0, KDC_DLQ_F_GROUP},
            {KDC_DLQ_HDR_GROUP, "g\nroup", 0, KDC_DLQ_F_GROUP},
            {KDC_DLQ_HDR_CLASS, "POISON", 0, KDC_DLQ_F_CLASS},
            {KDC_DLQ_HDR_CLASS, "none", 0, KDC_DLQ_F_CLASS},
            {KDC_DLQ_HDR_CLASS, "poison ", 0, KDC_DLQ_F_CLASS},
            {KDC_DLQ_HDR_CLASS, "pois", 0, KDC_DLQ_F_CLASS},
            {KDC_DLQ_HDR_ERROR, long_error, 0, KDC_DLQ_F_ERROR},
            {KDC_DLQ_HDR_ERROR, "a\0b", 3, KDC_DLQ_F_ERROR},
            {KDC_DLQ_HDR_ERROR, "esc\033[2J", 0, KDC_DLQ_F_ERROR},
            {KDC_DLQ_HDR_ERROR, "del\177", 0, KDC_DLQ_F_ERROR},
            {KDC_DLQ_HDR_RETRY, "-1", 0, KDC_DLQ_F_RETRY},
            {KDC_DLQ_HDR_RETRY, "2147483648", 0, KDC_DLQ_F_RETRY},
            {KDC_DLQ_HDR_IDENTITY,
             "CEF98382712BB661DFC64FA8D663955E63B5F87713BC80519955A3EF4EA47C88",
             0, KDC_DLQ_F_IDENTITY},
            {KDC_DLQ_HDR_IDENTITY,
             "cef98382712bb661dfc64fa8d663955e63b5f87713bc80519955a3ef4ea47c8",
             0, KDC_DLQ_F_IDENTITY},
            {KDC_DLQ_HDR_IDENTITY,
             "cef98382712bb661dfc64fa8d663955e63b5f87713bc80519955a3ef4ea47c888",
             0, KDC_DLQ_F_IDENTITY},
            {KDC_DLQ_HDR_IDENTITY,
             "gef98382712bb661dfc64fa8d663955e63b5f87713bc80519955a3ef4ea47c88",
             0, KDC_DLQ_F_IDENTITY},
        };
        kdc_dlq_info_t info;

        (void)state;
        memset(long_topic, 'a', sizeof(long_topic) - 1);
        memset(long_group, 'g', sizeof(long_group) - 1);
        memset(long_error, 'e', sizeof(long_error) - 1);
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                int r = decode_with(bad[i].name, bad[i].value, bad[i].len, 0,
                                    &info);

                if (r != KDC_ERR_MALFORMED || (info.fields & bad[i].bit) ||
                    (info.fields | bad[i].bit) != 0x1ff)
                        fail_msg("case %zu (%s): r=%d fields=%#x", i,
                                 bad[i].name, r, info.fields);
        }
        /* The field of a refused value is left empty. */
        decode_with(KDC_DLQ_HDR_TOPIC, "a/b", 0, 0, &info);
        assert_string_equal(info.topic, "");
        decode_with(KDC_DLQ_HDR_ERROR, long_error, 0, 0, &info);
        assert_string_equal(info.error, "");
}

static void boundary_values_are_accepted(void **state) {
        static char max_topic[KDC_DLQ_TOPIC_MAX + 1];
        static char max_error[KDC_DLQ_ERROR_MAX + 1];
        kdc_dlq_info_t info;

        (void)state;
        memset(max_topic, 'T', KDC_DLQ_TOPIC_MAX);
        memset(max_error, 'x', KDC_DLQ_ERROR_MAX);
        assert_int_equal(decode_with(KDC_DLQ_HDR_TOPIC, max_topic, 0, 0, &info),
                         0);
        assert_int_equal(strlen(info.topic), KDC_DLQ_TOPIC_MAX);
        assert_int_equal(
            decode_with(KDC_DLQ_HDR_PARTITION, "2147483647", 0, 0, &info), 0);
        assert_int_equal(info.partition, INT32_MAX);
        assert_int_equal(decode_with(KDC_DLQ_HDR_OFFSET,
                                     "9223372036854775807", 0, 0, &info),
                         0);
        assert_int_equal(info.offset, INT64_MAX);
        assert_int_equal(decode_with(KDC_DLQ_HDR_OFFSET, "0", 0, 0, &info), 0);
        assert_int_equal(info.offset, 0);
        assert_int_equal(
            decode_with(KDC_DLQ_HDR_TIMESTAMP, "-1", 0, 0, &info), 0);
        assert_int_equal(info.timestamp, -1);
        assert_int_equal(decode_with(KDC_DLQ_HDR_ERROR, max_error, 0, 0, &info),
                         0);
        assert_int_equal(strlen(info.error), KDC_DLQ_ERROR_MAX);
        assert_int_equal(decode_with(KDC_DLQ_HDR_ERROR, "", 0, 0, &info), 0);
        assert_int_equal(decode_with(KDC_DLQ_HDR_TOPIC, "a.b_c-D9", 0, 0,
                                     &info),
                         0);
}

static void optional_fields_may_be_missing_required_ones_may_not(
    void **state) {
        static const char *const optional[] = {
            KDC_DLQ_HDR_TIMESTAMP, KDC_DLQ_HDR_GROUP, KDC_DLQ_HDR_CLASS,
            KDC_DLQ_HDR_ERROR, KDC_DLQ_HDR_RETRY};
        static const char *const required[] = {
            KDC_DLQ_HDR_TOPIC, KDC_DLQ_HDR_PARTITION, KDC_DLQ_HDR_OFFSET,
            KDC_DLQ_HDR_IDENTITY};
        kdc_dlq_info_t info;

        (void)state;
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(decode_with(optional[i], NULL, 0, 1, &info),
                                 0);
        for (size_t i = 0; i < 4; i++)
                assert_int_equal(decode_with(required[i], NULL, 0, 1, &info),
                                 KDC_ERR_MALFORMED);
}

static void a_repeated_header_is_malformed_and_unknown_kdc_names_ignored(
    void **state) {
        struct hdr h[NVALID + 2];
        rd_kafka_headers_t *hdrs;
        kdc_dlq_info_t info;

        (void)state;
        memcpy(h, valid, sizeof(valid));
        h[NVALID] = (struct hdr){"kdc.future.field", "\001\002", 2};
        hdrs = build(h, NVALID + 1);
        assert_int_equal(kdc_dlq_decode(hdrs, &info), 0);
        rd_kafka_headers_destroy(hdrs);

        /* Two offsets: which one is true? Neither. */
        h[NVALID + 1] = (struct hdr){KDC_DLQ_HDR_OFFSET, "41", 0};
        hdrs = build(h, NVALID + 2);
        assert_int_equal(kdc_dlq_decode(hdrs, &info), KDC_ERR_MALFORMED);
        assert_false(info.fields & KDC_DLQ_F_OFFSET);
        assert_int_equal(info.offset, 0);
        assert_true(info.fields & KDC_DLQ_F_TOPIC);
        rd_kafka_headers_destroy(hdrs);
}

/* xorshift64*: a fixed seed makes the run reproducible. */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dull;
}

static void random_and_mutated_headers_never_break_the_decoder(void **state) {
        static const char *const names[] = {
            KDC_DLQ_HDR_TOPIC,  KDC_DLQ_HDR_PARTITION, KDC_DLQ_HDR_OFFSET,
            KDC_DLQ_HDR_TIMESTAMP, KDC_DLQ_HDR_GROUP,  KDC_DLQ_HDR_CLASS,
            KDC_DLQ_HDR_ERROR,  KDC_DLQ_HDR_RETRY,     KDC_DLQ_HDR_IDENTITY,
            "kdc.x",            "trace-id",            "kdc."};
        const int iterations = 100000;
        int outcomes[3] = {0, 0, 0};
        static char buf[2100];

        (void)state;
        for (int it = 0; it < iterations; it++) {
                rd_kafka_headers_t *hdrs = rd_kafka_headers_new(8);
                size_t n = (size_t)(rng() % 14);
                kdc_dlq_info_t info;
                int r;

                for (size_t i = 0; i < n; i++) {
                        size_t which = (size_t)(rng() % 12), len;
                        uint64_t mode = rng() % 4;

                        if (mode == 0 && which < NVALID - 1) {
                                /* a valid value, mutated in one byte */
                                const struct hdr *v = &valid[which + 1];

                                len = strlen(v->value);
                                memcpy(buf, v->value, len);
                                if (len && rng() % 2)
                                        buf[rng() % len] = (char)rng();
                        } else if (mode == 1 && which < NVALID - 1) {
                                const struct hdr *v = &valid[which + 1];

                                len = strlen(v->value);
                                memcpy(buf, v->value, len);
                        } else {
                                len = (size_t)(rng() % (rng() % 8 ? 80 : 2100));
                                for (size_t j = 0; j < len; j++)
                                        buf[j] = (char)(rng() % 4
                                                            ? '0' + rng() % 75
                                                            : rng());
                        }
                        rd_kafka_header_add(hdrs, names[which], -1,
                                            rng() % 50 ? buf : NULL,
                                            (ssize_t)len);
                }
                r = kdc_dlq_decode(hdrs, &info);
                assert_true(r == 0 || r == KDC_ERR_NOENT ||
                            r == KDC_ERR_MALFORMED);
                outcomes[r == 0 ? 0 : r == KDC_ERR_NOENT ? 1 : 2]++;
                /* What comes out is always well-formed. */
                assert_true((info.fields & ~0x1ffu) == 0);
                assert_true(strnlen(info.topic, sizeof(info.topic)) <
                            sizeof(info.topic));
                assert_true(strnlen(info.group, sizeof(info.group)) <
                            sizeof(info.group));
                assert_true(strnlen(info.error, sizeof(info.error)) <
                            sizeof(info.error));
                if (info.fields & KDC_DLQ_F_TOPIC)
                        assert_true(strspn(info.topic,
                                           "abcdefghijklmnopqrstuvwxyz"
                                           "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                           "0123456789._-") ==
                                    strlen(info.topic));
                assert_true(info.partition >= 0 && info.offset >= 0 &&
                            info.retry_count >= 0 && info.timestamp >= -1);
                if (info.fields & KDC_DLQ_F_CLASS)
                        assert_true(info.failure_class >= KDC_CLASS_POISON &&
                                    info.failure_class <= KDC_CLASS_FATAL);
                if (r == 0)
                        assert_true((info.fields & 0x107) == 0x107);
                rd_kafka_headers_destroy(hdrs);
        }
        /* The generator reaches every outcome. */
        assert_true(outcomes[0] > 0 && outcomes[1] > 0 && outcomes[2] > 0);
}

/* The one topic-name check of libkdc (the testkit validates its topics with
 * it too). */
static void a_topic_name_is_1_to_249_legal_bytes_not_dot_or_dot_dot(
    void **state) {
        char name[KDC_DLQ_TOPIC_MAX + 2];

        (void)state;
        memset(name, 'a', sizeof name);
        name[KDC_DLQ_TOPIC_MAX] = '\0';
        assert_int_equal(kdc_topic_name_check(name), 0);
        name[KDC_DLQ_TOPIC_MAX] = 'a';
        name[KDC_DLQ_TOPIC_MAX + 1] = '\0';
        assert_int_equal(kdc_topic_name_check(name), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check("orders.v2_dlq-1"), 0);
        assert_int_equal(kdc_topic_name_check("..."), 0);
        assert_int_equal(kdc_topic_name_check("."), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check(".."), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check(""), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check("orders dlq"), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check("orders/dlq"), KDC_ERR_INVALID);
        assert_int_equal(kdc_topic_name_check(NULL), KDC_ERR_INVALID);
}

#define SENTENCE(text, fn) {text, fn, NULL, NULL, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("the identity is SHA-256 of the documented framing of "
                     "topic, key and value",
                     identity_is_sha256_of_the_documented_framing),
            SENTENCE("the identity separates topic, key and value",
                     identity_separates_topic_key_and_value),
            SENTENCE("a complete header set decodes to every field",
                     a_complete_header_set_decodes_to_every_field),
            SENTENCE("no kdc header is KDC_ERR_NOENT; NULL info is refused",
                     no_kdc_header_is_noent_and_null_arguments_are_refused),
            SENTENCE("every malformed value is refused and its field left "
                     "empty",
                     every_malformed_value_is_refused_and_its_field_left_empty),
            SENTENCE("boundary values are accepted",
                     boundary_values_are_accepted),
            SENTENCE("optional fields may be missing, required ones may not",
                     optional_fields_may_be_missing_required_ones_may_not),
            SENTENCE(
                "a repeated header is malformed; unknown kdc.* names are "
                "ignored",
                a_repeated_header_is_malformed_and_unknown_kdc_names_ignored),
            SENTENCE("100,000 random and mutated header sets never break the "
                     "decoder",
                     random_and_mutated_headers_never_break_the_decoder),
            SENTENCE("a topic name is 1 to 249 legal bytes, not . or ..",
                     a_topic_name_is_1_to_249_legal_bytes_not_dot_or_dot_dot),
        };

        return cmocka_run_group_tests_name("DLQ header decoder", tests, NULL,
                                           NULL);
}
