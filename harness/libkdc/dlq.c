/* kdc_dlq_route(): confirmed dead-letter routing with identity and retry
 * headers. */
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <kdc/dlq.h>
#include <kdc/error.h>

#include "internal.h"

/* Confirmed routings per identity, for the last RETRY_SLOTS identities. */
#define RETRY_SLOTS 1024

struct retry_slot {
        unsigned char identity[KDC_IDENTITY_LEN];
        int32_t count;
        int used;
};

struct kdc_dlq_s {
        rd_kafka_t *producer;
        char *group;          /* NULL: header omitted */
        pthread_mutex_t lock; /* guards topic and the retry ring */
        char *topic;          /* NULL: "<original topic>.dlq" */
        struct retry_slot *slots;
        size_t next; /* ring position of the next new identity */
        kdc_stats_t *stats; /* kdc_stats_attach_dlq(); NULL: none */
};

void kdc__dlq_set_stats(kdc_dlq_t *d, kdc_stats_t *s) {
        d->stats = s;
}

int kdc_dlq_new(kdc_dlq_t **dlqp, rd_kafka_t *producer, const char *group) {
        kdc_dlq_t *d;

        if (!dlqp)
                return KDC_ERR_INVALID;
        *dlqp = NULL;
        if (!producer || (group && strlen(group) > KDC_DLQ_GROUP_MAX))
                return KDC_ERR_INVALID;
        d = calloc(1, sizeof(*d));
        if (!d)
                return KDC_ERR_NOMEM;
        d->producer = producer;
        d->slots = calloc(RETRY_SLOTS, sizeof(*d->slots));
        if ((group && !(d->group = strdup(group))) || !d->slots ||
            pthread_mutex_init(&d->lock, NULL) != 0) {
                free(d->slots);
                free(d->group);
                free(d);
                return KDC_ERR_NOMEM;
        }
        *dlqp = d;
        return 0;
}

void kdc_dlq_destroy(kdc_dlq_t *d) {
        if (!d)
                return;
        pthread_mutex_destroy(&d->lock);
        free(d->slots);
        free(d->topic);
        free(d->group);
        free(d);
}

int kdc_dlq_set_topic(kdc_dlq_t *d, const char *topic) {
        char *copy = NULL;

        if (!d || (topic && !kdc__topic_name_valid(topic, strlen(topic))))
                return KDC_ERR_INVALID;
        if (topic && !(copy = strdup(topic)))
                return KDC_ERR_NOMEM;
        pthread_mutex_lock(&d->lock);
        free(d->topic);
        d->topic = copy;
        pthread_mutex_unlock(&d->lock);
        return 0;
}

/* Caller holds d->lock. */
static struct retry_slot *slot_of(kdc_dlq_t *d,
                                  const unsigned char id[KDC_IDENTITY_LEN]) {
        for (size_t i = 0; i < RETRY_SLOTS; i++)
                if (d->slots[i].used &&
                    memcmp(d->slots[i].identity, id, KDC_IDENTITY_LEN) == 0)
                        return &d->slots[i];
        return NULL;
}

int32_t kdc_dlq_retry_count(const kdc_dlq_t *cd,
                            const unsigned char identity[KDC_IDENTITY_LEN]) {
        kdc_dlq_t *d = (kdc_dlq_t *)cd; /* the mutex only */
        struct retry_slot *s;
        int32_t n = 0;

        if (!d || !identity)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&d->lock);
        if ((s = slot_of(d, identity)))
                n = s->count;
        pthread_mutex_unlock(&d->lock);
        return n;
}

static void remember(kdc_dlq_t *d, const unsigned char id[KDC_IDENTITY_LEN],
                     int32_t count) {
        struct retry_slot *s;

        pthread_mutex_lock(&d->lock);
        if (!(s = slot_of(d, id))) {
                s = &d->slots[d->next]; /* evicts the oldest identity */
                d->next = (d->next + 1) % RETRY_SLOTS;
                memcpy(s->identity, id, KDC_IDENTITY_LEN);
                s->used = 1;
                s->count = 0;
        }
        if (count > s->count)
                s->count = count;
        pthread_mutex_unlock(&d->lock);
}

/* The error text as written: at most KDC_DLQ_ERROR_MAX bytes, cut at a
 * UTF-8 boundary, control characters other than tab/LF/CR as '?'. */
static size_t clean_text(const char *in, char out[KDC_DLQ_ERROR_MAX + 1]) {
        size_t n = in ? strlen(in) : 0;

        if (n > KDC_DLQ_ERROR_MAX) {
                n = KDC_DLQ_ERROR_MAX;
                /* Back off continuation bytes (10xxxxxx) and the lead byte
                 * whose sequence they would have completed. */
                while (n > 0 && ((unsigned char)in[n] & 0xc0) == 0x80)
                        n--;
        }
        for (size_t i = 0; i < n; i++) {
                unsigned char c = (unsigned char)in[i];

                out[i] = (c == 0x7f || (c < 0x20 && c != '\t' && c != '\n' &&
                                        c != '\r'))
                             ? '?'
                             : (char)c;
        }
        out[n] = '\0';
        return n;
}

static int add(rd_kafka_headers_t *h, const char *name, const char *value) {
        return rd_kafka_header_add(h, name, -1, value, -1) ==
               RD_KAFKA_RESP_ERR_NO_ERROR;
}

/* The DLQ of the topic the message was consumed from: "<topic>.dlq", or
 * the topic itself when it is already one (a retry consumer reading a DLQ
 * routes back to it). Never from the message's headers: a record must not
 * choose where it goes. */
static void default_topic(const char *consumed,
                          char out[KDC_DLQ_TOPIC_MAX + 8]) {
        size_t n = consumed ? strlen(consumed) : 0;

        if (n >= 4 && strcmp(consumed + n - 4, ".dlq") == 0)
                snprintf(out, KDC_DLQ_TOPIC_MAX + 8, "%s", consumed);
        else
                snprintf(out, KDC_DLQ_TOPIC_MAX + 8, "%s.dlq",
                         consumed ? consumed : "");
}

/* A new header list with the input's headers except any kdc.* one. */
static rd_kafka_headers_t *headers_base(const rd_kafka_headers_t *in) {
        rd_kafka_headers_t *h = rd_kafka_headers_new(16);
        const char *name;
        const void *value;
        size_t size;

        for (size_t idx = 0;
             h && in && rd_kafka_header_get_all(in, idx, &name, &value,
                                                &size) ==
                            RD_KAFKA_RESP_ERR_NO_ERROR;
             idx++) {
                if (!name || strncmp(name, "kdc.", 4) == 0)
                        continue;
                if (rd_kafka_header_add(h, name, -1, value,
                                        value ? (ssize_t)size : 0) !=
                    RD_KAFKA_RESP_ERR_NO_ERROR) {
                        rd_kafka_headers_destroy(h);
                        return NULL;
                }
        }
        return h;
}

/* What a routing of msg produces: its DLQ topic, the headers (the input's
 * but kdc.*, then every kdc.* one), the event identity and the retry count
 * written; attempts > 0 adds kdc.failure.attempts. 0, KDC_ERR_INVALID or KDC_ERR_NOMEM (*errp: __FAIL); *outp is
 * the caller's on 0, NULL otherwise. topic may be NULL (not wanted). */
static int envelope(kdc_dlq_t *d, const rd_kafka_message_t *msg,
                    kdc_class_t cls, const char *error_text, int attempts,
                    char topic[KDC_DLQ_TOPIC_MAX + 8],
                    unsigned char id[KDC_IDENTITY_LEN], int32_t *retryp,
                    rd_kafka_headers_t **outp, rd_kafka_resp_err_t *errp) {
        char num[5][24], hex[2 * KDC_IDENTITY_LEN + 1];
        char text[KDC_DLQ_ERROR_MAX + 1];
        rd_kafka_headers_t *in = NULL, *out;
        const char *orig_topic;
        int32_t orig_partition, retry, seen;
        int64_t orig_offset, orig_ts;
        kdc_dlq_info_t info;
        int r, rerouted;

        *outp = NULL;
        if (!d || !msg || msg->err != RD_KAFKA_RESP_ERR_NO_ERROR || !msg->rkt ||
            cls < KDC_CLASS_POISON || cls > KDC_CLASS_FATAL)
                return KDC_ERR_INVALID;

        /* A kdc DLQ message routed again keeps its original event. */
        if (rd_kafka_message_headers(msg, &in) != RD_KAFKA_RESP_ERR_NO_ERROR)
                in = NULL;
        rerouted = in && kdc_dlq_decode(in, &info) == 0;
        if (rerouted) {
                orig_topic = info.topic;
                orig_partition = info.partition;
                orig_offset = info.offset;
                orig_ts = info.fields & KDC_DLQ_F_TIMESTAMP ? info.timestamp
                                                            : -1;
                retry = info.fields & KDC_DLQ_F_RETRY ? info.retry_count : 0;
                retry = retry < INT32_MAX ? retry + 1 : INT32_MAX;
        } else {
                orig_topic = rd_kafka_topic_name(msg->rkt);
                orig_partition = msg->partition;
                orig_offset = msg->offset;
                orig_ts = rd_kafka_message_timestamp(msg, NULL);
                retry = 0;
        }
        if ((r = kdc_identity(orig_topic, msg->key, msg->key ? msg->key_len : 0,
                              msg->payload, msg->payload ? msg->len : 0, id)))
                return r;
        if ((seen = kdc_dlq_retry_count(d, id)) > retry)
                retry = seen; /* routed (and confirmed) before by us */
        *retryp = retry;

        if (topic) {
                pthread_mutex_lock(&d->lock);
                if (d->topic)
                        snprintf(topic, KDC_DLQ_TOPIC_MAX + 8, "%s", d->topic);
                else
                        default_topic(rd_kafka_topic_name(msg->rkt), topic);
                pthread_mutex_unlock(&d->lock);
        }

        snprintf(num[0], sizeof(num[0]), "%" PRId32, orig_partition);
        snprintf(num[1], sizeof(num[1]), "%" PRId64, orig_offset);
        snprintf(num[2], sizeof(num[2]), "%" PRId64, orig_ts < 0 ? -1 : orig_ts);
        snprintf(num[3], sizeof(num[3]), "%" PRId32, retry);
        snprintf(num[4], sizeof(num[4]), "%d", attempts);
        kdc__identity_hex(id, hex);
        clean_text(error_text, text);
        out = headers_base(in);
        if (!out || !add(out, KDC_DLQ_HDR_TOPIC, orig_topic) ||
            !add(out, KDC_DLQ_HDR_PARTITION, num[0]) ||
            !add(out, KDC_DLQ_HDR_OFFSET, num[1]) ||
            !add(out, KDC_DLQ_HDR_TIMESTAMP, num[2]) ||
            (d->group && !add(out, KDC_DLQ_HDR_GROUP, d->group)) ||
            !add(out, KDC_DLQ_HDR_CLASS, kdc_class_name(cls)) ||
            !add(out, KDC_DLQ_HDR_ERROR, text) ||
            !add(out, KDC_DLQ_HDR_RETRY, num[3]) ||
            (attempts > 0 && !add(out, KDC_DLQ_HDR_ATTEMPTS, num[4])) ||
            !add(out, KDC_DLQ_HDR_IDENTITY, hex)) {
                if (out)
                        rd_kafka_headers_destroy(out);
                if (errp)
                        *errp = RD_KAFKA_RESP_ERR__FAIL;
                return KDC_ERR_NOMEM;
        }
        *outp = out;
        return 0;
}

int kdc__dlq_route(kdc_dlq_t *d, const rd_kafka_message_t *msg, kdc_class_t cls,
                   const char *error_text, int attempts, int timeout_ms,
                   rd_kafka_resp_err_t *delivery_err) {
        char topic[KDC_DLQ_TOPIC_MAX + 8];
        unsigned char id[KDC_IDENTITY_LEN];
        rd_kafka_headers_t *out;
        int32_t retry;
        int r;

        if (delivery_err)
                *delivery_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (timeout_ms < -1)
                return KDC_ERR_INVALID;
        if ((r = envelope(d, msg, cls, error_text, attempts, topic, id, &retry,
                          &out, delivery_err)))
                return r;
        /* Headers pass to librdkafka (or are destroyed) in there. */
        r = kdc__produce_confirmed(d->producer, topic, RD_KAFKA_PARTITION_UA,
                                   msg->key, msg->key ? msg->key_len : 0,
                                   msg->payload, msg->payload ? msg->len : 0,
                                   out, timeout_ms, delivery_err);
        if (r == 0)
                remember(d, id, retry < INT32_MAX ? retry + 1 : INT32_MAX);
        if (r != KDC_ERR_INVALID)
                kdc__stats_add(
                    d->stats,
                    r == 0 ? KDC__STAT_DLQ_ROUTED : KDC__STAT_DLQ_FAILED, 1);
        return r;
}

int kdc_dlq_route(kdc_dlq_t *d, const rd_kafka_message_t *msg, kdc_class_t cls,
                  const char *error_text, int timeout_ms,
                  rd_kafka_resp_err_t *delivery_err) {
        return kdc__dlq_route(d, msg, cls, error_text, 0, timeout_ms,
                              delivery_err);
}

int kdc_dlq_produce(kdc_dlq_t *d, kdc_tracker_t *tracker,
                    const rd_kafka_message_t *msg, kdc_class_t cls,
                    const char *error_text, int timeout_ms,
                    rd_kafka_resp_err_t *produce_err) {
        char topic[KDC_DLQ_TOPIC_MAX + 8];
        unsigned char id[KDC_IDENTITY_LEN];
        rd_kafka_headers_t *out;
        int32_t retry;
        int r;

        if (produce_err)
                *produce_err = RD_KAFKA_RESP_ERR__INVALID_ARG;
        if (!tracker || timeout_ms < -1)
                return KDC_ERR_INVALID;
        if ((r = envelope(d, msg, cls, error_text, 0, topic, id, &retry, &out,
                          produce_err)))
                return r;
        r = kdc_tracker_produce(
            tracker, d->producer, topic, RD_KAFKA_PARTITION_UA, msg->key,
            msg->key ? msg->key_len : 0, msg->payload,
            msg->payload ? msg->len : 0, out, timeout_ms, produce_err);
        if (r)
                rd_kafka_headers_destroy(out); /* not enqueued: still ours */
        return r;
}

int kdc_dlq_headers(kdc_dlq_t *d, const rd_kafka_message_t *msg,
                    kdc_class_t cls, const char *error_text,
                    rd_kafka_headers_t **headersp) {
        unsigned char id[KDC_IDENTITY_LEN];
        int32_t retry;

        if (!headersp)
                return KDC_ERR_INVALID;
        return envelope(d, msg, cls, error_text, 0, NULL, id, &retry, headersp,
                        NULL);
}
