/*
 * Fuzz target: libkdc's kdc_dlq_decode (harness/libkdc/dlq_decode.c), the kdc.* headers
 * of a consumed message decoded as untrusted input. The input is a list of headers:
 * per header one byte of name length, the name, one byte of value length (255: a NULL
 * value), the value; the name is often made a kdc.* name, so that the decoder's checks
 * are reached.
 */
#include <kdc/dlq.h>
#include <kdc/error.h>
#include <librdkafka/rdkafka.h>

#include <stdint.h>
#include <stdlib.h>
#include <sys/types.h>
#include <string.h>

static const char *const names[] = {
    KDC_DLQ_HDR_TOPIC,     KDC_DLQ_HDR_PARTITION, KDC_DLQ_HDR_OFFSET,
    KDC_DLQ_HDR_TIMESTAMP, KDC_DLQ_HDR_GROUP,     KDC_DLQ_HDR_CLASS,
    KDC_DLQ_HDR_ERROR,     KDC_DLQ_HDR_RETRY,     KDC_DLQ_HDR_IDENTITY};
#define NNAMES (sizeof names / sizeof names[0])

/* A string of at most max bytes of info, NUL-terminated within its array. */
static void check_str(const char *s, size_t max) {
    if (!memchr(s, 0, max + 1))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    rd_kafka_headers_t *h = rd_kafka_headers_new(8);
    const uint8_t *p = data, *end = data + size;
    while (p < end) {
        size_t nlen = *p++;
        char name[256];
        if (nlen < NNAMES) { /* a name of the table */
            strcpy(name, names[nlen]);
        } else {
            nlen -= NNAMES;
            if (nlen > (size_t)(end - p))
                nlen = (size_t)(end - p);
            memcpy(name, p, nlen);
            name[nlen] = 0;
            p += nlen;
        }
        if (p >= end)
            break;
        size_t vlen = *p++;
        const void *value = p;
        if (vlen == 255) {
            value = NULL;
            vlen = 0;
        } else if (vlen > (size_t)(end - p)) {
            vlen = (size_t)(end - p);
        }
        rd_kafka_header_add(h, name, -1, value, (ssize_t)vlen);
        p += vlen;
    }
    kdc_dlq_info_t info;
    int rc = kdc_dlq_decode(h, &info);
    if (rc != 0 && rc != KDC_ERR_NOENT && rc != KDC_ERR_MALFORMED)
        abort();
    if (rc == 0 && (info.partition < 0 || info.offset < 0 || info.retry_count < 0))
        abort();
    check_str(info.topic, KDC_DLQ_TOPIC_MAX);
    check_str(info.group, KDC_DLQ_GROUP_MAX);
    check_str(info.error, KDC_DLQ_ERROR_MAX);
    rd_kafka_headers_destroy(h);
    return 0;
}
