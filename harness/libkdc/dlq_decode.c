/* kdc_dlq_decode(): the kdc.* headers of a DLQ message, decoded as
 * untrusted input. Every value is checked against its exact syntax and
 * length before anything is copied; nothing is read beyond a value's size;
 * nothing is allocated. */
#include <stdint.h>
#include <string.h>

#include <kdc/dlq.h>
#include <kdc/error.h>

#include "internal.h"

int kdc__topic_name_valid(const char *topic, size_t len) {
        if (len < 1 || len > KDC_DLQ_TOPIC_MAX)
                return 0;
        if ((len == 1 && topic[0] == '.') ||
            (len == 2 && topic[0] == '.' && topic[1] == '.'))
                return 0;
        for (size_t i = 0; i < len; i++) {
                char c = topic[i];

                if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                      (c >= '0' && c <= '9') || c == '.' || c == '_' ||
                      c == '-'))
                        return 0;
        }
        return 1;
}

int kdc_topic_name_check(const char *topic) {
        return topic && kdc__topic_name_valid(topic, strlen(topic))
                   ? 0
                   : KDC_ERR_INVALID;
}

/* Canonical decimal in [min, max]: "0", or a non-zero digit then digits;
 * "-1" only when min allows it. */
static int parse_int(const char *s, size_t len, int64_t min, int64_t max,
                     int64_t *out) {
        uint64_t v = 0;

        if (len == 2 && s[0] == '-' && s[1] == '1' && min <= -1) {
                *out = -1;
                return 1;
        }
        if (len < 1 || len > 19 || (len > 1 && s[0] == '0'))
                return 0;
        for (size_t i = 0; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return 0;
                v = v * 10 + (uint64_t)(s[i] - '0'); /* 19 digits fit */
        }
        if (v > (uint64_t)max || (int64_t)v < min)
                return 0;
        *out = (int64_t)v;
        return 1;
}

/* Bytes without NUL or control characters (tab, LF, CR allowed if
 * allow_ws), at most max; copied NUL-terminated into out[max + 1]. */
static int copy_text(const char *s, size_t len, size_t max, int allow_ws,
                     char *out) {
        if (len > max)
                return 0;
        for (size_t i = 0; i < len; i++) {
                unsigned char c = (unsigned char)s[i];

                if (c == 0x7f ||
                    (c < 0x20 && !(allow_ws && (c == '\t' || c == '\n' ||
                                                c == '\r'))))
                        return 0;
        }
        memcpy(out, s, len);
        out[len] = '\0';
        return 1;
}

static int hexval(char c) {
        if (c >= '0' && c <= '9')
                return c - '0';
        if (c >= 'a' && c <= 'f')
                return c - 'a' + 10;
        return -1; /* upper case is not canonical */
}

static int parse_identity(const char *s, size_t len,
                          unsigned char out[KDC_IDENTITY_LEN]) {
        if (len != 2 * KDC_IDENTITY_LEN)
                return 0;
        for (size_t i = 0; i < KDC_IDENTITY_LEN; i++) {
                int hi = hexval(s[2 * i]), lo = hexval(s[2 * i + 1]);

                if (hi < 0 || lo < 0)
                        return 0;
                out[i] = (unsigned char)(hi << 4 | lo);
        }
        return 1;
}

static int parse_class(const char *s, size_t len, kdc_class_t *out) {
        for (kdc_class_t c = KDC_CLASS_POISON; c <= KDC_CLASS_FATAL; c++) {
                const char *name = kdc_class_name(c);

                if (strlen(name) == len && memcmp(name, s, len) == 0) {
                        *out = c;
                        return 1;
                }
        }
        return 0;
}

/* Decode one kdc.* value into info; 1 if valid. */
static int decode_field(unsigned bit, const char *v, size_t len,
                        kdc_dlq_info_t *info) {
        int64_t n;

        switch (bit) {
        case KDC_DLQ_F_TOPIC:
                if (!kdc__topic_name_valid(v, len))
                        return 0;
                memcpy(info->topic, v, len);
                info->topic[len] = '\0';
                return 1;
        case KDC_DLQ_F_PARTITION:
                if (!parse_int(v, len, 0, INT32_MAX, &n))
                        return 0;
                info->partition = (int32_t)n;
                return 1;
        case KDC_DLQ_F_OFFSET:
                if (!parse_int(v, len, 0, INT64_MAX, &n))
                        return 0;
                info->offset = n;
                return 1;
        case KDC_DLQ_F_TIMESTAMP:
                if (!parse_int(v, len, -1, INT64_MAX, &n))
                        return 0;
                info->timestamp = n;
                return 1;
        case KDC_DLQ_F_GROUP:
                return copy_text(v, len, KDC_DLQ_GROUP_MAX, 0, info->group);
        case KDC_DLQ_F_CLASS:
                return parse_class(v, len, &info->failure_class);
        case KDC_DLQ_F_ERROR:
                return copy_text(v, len, KDC_DLQ_ERROR_MAX, 1, info->error);
        case KDC_DLQ_F_RETRY:
                if (!parse_int(v, len, 0, INT32_MAX, &n))
                        return 0;
                info->retry_count = (int32_t)n;
                return 1;
        case KDC_DLQ_F_IDENTITY:
                return parse_identity(v, len, info->identity);
        }
        return 0;
}

static const struct {
        const char *name;
        unsigned bit;
} names[] = {
    {KDC_DLQ_HDR_TOPIC, KDC_DLQ_F_TOPIC},
    {KDC_DLQ_HDR_PARTITION, KDC_DLQ_F_PARTITION},
    {KDC_DLQ_HDR_OFFSET, KDC_DLQ_F_OFFSET},
    {KDC_DLQ_HDR_TIMESTAMP, KDC_DLQ_F_TIMESTAMP},
    {KDC_DLQ_HDR_GROUP, KDC_DLQ_F_GROUP},
    {KDC_DLQ_HDR_CLASS, KDC_DLQ_F_CLASS},
    {KDC_DLQ_HDR_ERROR, KDC_DLQ_F_ERROR},
    {KDC_DLQ_HDR_RETRY, KDC_DLQ_F_RETRY},
    {KDC_DLQ_HDR_IDENTITY, KDC_DLQ_F_IDENTITY},
};

#define REQUIRED                                                               \
        (KDC_DLQ_F_TOPIC | KDC_DLQ_F_PARTITION | KDC_DLQ_F_OFFSET |            \
         KDC_DLQ_F_IDENTITY)

/* Zero the field a bad or repeated header may have written. */
static void clear_field(unsigned bit, kdc_dlq_info_t *info) {
        switch (bit) {
        case KDC_DLQ_F_TOPIC:
                memset(info->topic, 0, sizeof(info->topic));
                break;
        case KDC_DLQ_F_PARTITION:
                info->partition = 0;
                break;
        case KDC_DLQ_F_OFFSET:
                info->offset = 0;
                break;
        case KDC_DLQ_F_TIMESTAMP:
                info->timestamp = 0;
                break;
        case KDC_DLQ_F_GROUP:
                memset(info->group, 0, sizeof(info->group));
                break;
        case KDC_DLQ_F_CLASS:
                info->failure_class = KDC_CLASS_NONE;
                break;
        case KDC_DLQ_F_ERROR:
                memset(info->error, 0, sizeof(info->error));
                break;
        case KDC_DLQ_F_RETRY:
                info->retry_count = 0;
                break;
        case KDC_DLQ_F_IDENTITY:
                memset(info->identity, 0, sizeof(info->identity));
                break;
        }
}

int kdc_dlq_decode(const rd_kafka_headers_t *headers, kdc_dlq_info_t *info) {
        unsigned seen = 0, bad = 0;
        int any = 0;
        const char *name;
        const void *value;
        size_t size;

        if (!info)
                return KDC_ERR_INVALID;
        memset(info, 0, sizeof(*info));
        if (!headers)
                return KDC_ERR_NOENT;

        for (size_t idx = 0; rd_kafka_header_get_all(headers, idx, &name,
                                                     &value, &size) ==
                             RD_KAFKA_RESP_ERR_NO_ERROR;
             idx++) {
                unsigned bit = 0;

                if (!name || strncmp(name, "kdc.", 4) != 0)
                        continue;
                any = 1;
                for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                        if (strcmp(name, names[i].name) == 0)
                                bit = names[i].bit;
                if (!bit)
                        continue; /* a newer writer's field: ignored */
                if (seen & bit) {
                        bad |= bit; /* repeated: which one is true? */
                        continue;
                }
                seen |= bit;
                if (!value || !decode_field(bit, value, size, info))
                        bad |= bit;
        }
        if (!any)
                return KDC_ERR_NOENT;
        for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++)
                if (bad & names[i].bit)
                        clear_field(names[i].bit, info);
        info->fields = seen & ~bad;
        if (bad || (info->fields & REQUIRED) != REQUIRED)
                return KDC_ERR_MALFORMED;
        return 0;
}
