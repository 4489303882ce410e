/* Reading back what the service left: every output and DLQ record (from the
 * low to the high watermark of each partition, read_uncommitted: every
 * stored record counts), matched to the events they name, and the group's
 * committed offsets of the input. Runs after the service stopped and the
 * cluster healed. */
#include <stdlib.h>
#include <string.h>

#include <kdc/dlq.h>

#include "internal.h"

#define TK_READ_TIMEOUT_MS 60000
#define TK_QUERY_TIMEOUT_MS 10000

struct offset_index {
        int64_t *offsets; /* sorted */
        int64_t *events;
        size_t n;
};

struct pair {
        int64_t offset, event;
};

static int by_offset(const void *a, const void *b) {
        const struct pair *x = a, *y = b;

        return (x->offset > y->offset) - (x->offset < y->offset);
}

static int index_build(struct offset_index *ix, const struct tk_workload *w, int32_t part) {
        size_t n = 0;
        struct pair *pairs;

        memset(ix, 0, sizeof *ix);
        for (int64_t i = 0; i < w->n; i++)
                n += w->ev[i].partition == part && w->ev[i].offset >= 0;
        pairs = malloc((n ? n : 1) * sizeof *pairs);
        ix->offsets = malloc((n ? n : 1) * sizeof *ix->offsets);
        ix->events = malloc((n ? n : 1) * sizeof *ix->events);
        if (!pairs || !ix->offsets || !ix->events) {
                free(pairs);
                return -1;
        }
        n = 0;
        for (int64_t i = 0; i < w->n; i++)
                if (w->ev[i].partition == part && w->ev[i].offset >= 0)
                        pairs[n++] = (struct pair){w->ev[i].offset, i};
        qsort(pairs, n, sizeof *pairs, by_offset);
        for (size_t i = 0; i < n; i++) {
                ix->offsets[i] = pairs[i].offset;
                ix->events[i] = pairs[i].event;
        }
        ix->n = n;
        free(pairs);
        return 0;
}

static int64_t index_find(const struct offset_index *ix, int64_t offset) {
        size_t lo = 0, hi = ix->n;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                if (ix->offsets[mid] < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return lo < ix->n && ix->offsets[lo] == offset ? ix->events[lo] : -1;
}

/* The event a record names: header "event-id", else its key. */
static int64_t named_event(const rd_kafka_message_t *m, int64_t n) {
        rd_kafka_headers_t *hdrs = NULL;
        const void *v;
        size_t len;

        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_header_get_last(hdrs, KDC_TESTKIT_EVENT_ID_HEADER, &v, &len) ==
                RD_KAFKA_RESP_ERR_NO_ERROR) {
                int64_t i = tk_event_index(v, len, n);
                if (i >= 0)
                        return i;
        }
        return tk_event_index(m->key, m->key_len, n);
}

/* A DLQ record: its kdc.* coordinates must name an input event and its
 * identity must be that event's. Returns the event the record stands for,
 * and whether the envelope is sound. The headers are untrusted: coordinates
 * whose identity does not match are not evidence for the event they point
 * at (a forged or mixed-up envelope would hide that event's loss); the
 * record then stands for the event its event-id header or key names, and
 * only when it names none, for the event at its coordinates. */
static int64_t dlq_event(const rd_kafka_message_t *m, const struct tk_cluster *c,
                         const struct tk_workload *w, const struct offset_index *ix, int *sound) {
        rd_kafka_headers_t *hdrs = NULL;
        kdc_dlq_info_t info;
        int64_t at = -1, named;

        *sound = 0;
        if (rd_kafka_message_headers(m, &hdrs) == RD_KAFKA_RESP_ERR_NO_ERROR &&
            kdc_dlq_decode(hdrs, &info) == 0 && strcmp(info.topic, c->topics[TK_INPUT]) == 0 &&
            info.partition >= 0 && info.partition < c->partitions[TK_INPUT] &&
            (at = index_find(&ix[info.partition], info.offset)) >= 0) {
                char id[32], value[32];
                unsigned char identity[KDC_IDENTITY_LEN];
                int vlen = tk_event_value(w, at, value, sizeof value);

                tk_event_id(at, id, sizeof id);
                *sound = kdc_identity(c->topics[TK_INPUT], id, strlen(id), value, (size_t)vlen,
                                      identity) == 0 &&
                         memcmp(identity, info.identity, sizeof identity) == 0;
                if (*sound)
                        return at;
        }
        named = named_event(m, w->n);
        return named >= 0 ? named : at;
}

static int read_topic(rd_kafka_t *rk, const struct tk_cluster *c, enum tk_topic_role role,
                      struct tk_workload *w, const struct offset_index *ix, struct tk_history *h) {
        int parts = c->partitions[role];
        int64_t *hi = calloc((size_t)parts, sizeof *hi);
        int64_t *lo = calloc((size_t)parts, sizeof *lo);
        rd_kafka_topic_partition_list_t *assign = rd_kafka_topic_partition_list_new(parts);
        int remaining = 0, rc = 0;

        if (!hi || !lo) {
                rc = -1;
                goto out;
        }
        for (int p = 0; p < parts; p++) {
                if (rd_kafka_query_watermark_offsets(rk, c->topics[role], p, &lo[p], &hi[p],
                                                     TK_QUERY_TIMEOUT_MS)) {
                        rc = -1;
                        goto out;
                }
                h->dropped_records += lo[p]; /* topics start empty at offset 0 */
                if (hi[p] > lo[p]) {
                        rd_kafka_topic_partition_list_add(assign, c->topics[role], p)->offset =
                            lo[p];
                        remaining++;
                }
        }
        if (!remaining)
                goto out;
        rd_kafka_assign(rk, assign);
        int64_t deadline = tk_now_ms() + TK_READ_TIMEOUT_MS;
        while (remaining > 0 && tk_now_ms() < deadline) {
                rd_kafka_message_t *m = rd_kafka_consumer_poll(rk, 100);
                if (!m)
                        continue;
                if (!m->err && m->partition >= 0 && m->partition < parts &&
                    m->offset < hi[m->partition]) {
                        if (role == TK_OUTPUT) {
                                int64_t i = named_event(m, w->n);
                                h->output_records++;
                                if (i >= 0 && w->ev[i].offset >= 0)
                                        w->ev[i].outputs++;
                                else
                                        h->foreign_records++;
                        } else {
                                int sound;
                                int64_t i = dlq_event(m, c, w, ix, &sound);
                                h->dlq_records++;
                                if (i >= 0 && w->ev[i].offset >= 0)
                                        w->ev[i].dlq++;
                                if (!sound)
                                        h->dlq_without_identity++;
                        }
                        if (m->offset == hi[m->partition] - 1)
                                remaining--;
                }
                rd_kafka_message_destroy(m);
        }
        rd_kafka_assign(rk, NULL);
        if (remaining > 0)
                rc = -1;
out:
        rd_kafka_topic_partition_list_destroy(assign);
        free(hi);
        free(lo);
        return rc;
}

static int read_committed(const struct tk_cluster *c, struct tk_history *h) {
        rd_kafka_conf_t *conf = tk_cluster_conf(c);
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(h->partitions);
        char err[256];
        rd_kafka_t *rk;
        int rc = -1;

        rd_kafka_conf_set(conf, "group.id", c->group, err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        for (int p = 0; p < h->partitions; p++)
                rd_kafka_topic_partition_list_add(parts, c->topics[TK_INPUT], p);
        for (int attempt = 0; rk && attempt < 5 && rc; attempt++)
                if (rd_kafka_committed(rk, parts, TK_QUERY_TIMEOUT_MS) ==
                    RD_KAFKA_RESP_ERR_NO_ERROR) {
                        rc = 0;
                        for (int p = 0; p < parts->cnt; p++) {
                                if (parts->elems[p].err)
                                        rc = -1;
                                h->committed[p] =
                                    parts->elems[p].offset >= 0 ? parts->elems[p].offset : -1;
                        }
                }
        rd_kafka_topic_partition_list_destroy(parts);
        if (rk)
                rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        return rc;
}

int tk_history_read(struct tk_history *h, const struct tk_cluster *c, struct tk_workload *w) {
        struct offset_index *ix;
        rd_kafka_conf_t *conf = tk_cluster_conf(c);
        char err[256];
        rd_kafka_t *rk;
        int rc = 0;

        memset(h, 0, sizeof *h);
        h->partitions = c->partitions[TK_INPUT];
        h->committed = malloc((size_t)h->partitions * sizeof *h->committed);
        ix = calloc((size_t)h->partitions, sizeof *ix);
        if (!h->committed || !ix) {
                free(ix);
                rd_kafka_conf_destroy(conf);
                return -1;
        }
        for (int p = 0; p < h->partitions; p++) {
                h->committed[p] = -1;
                if (index_build(&ix[p], w, p))
                        rc = -1;
        }
        for (int64_t i = 0; i < w->n; i++)
                w->ev[i].outputs = w->ev[i].dlq = 0;

        /* A group of its own (librdkafka's consumer queue needs one); it
         * only assigns, never joins or commits. */
        rd_kafka_conf_set(conf, "group.id", "kdc-harness.reader", err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        rd_kafka_conf_set(conf, "enable.partition.eof", "false", err, sizeof err);
        rd_kafka_conf_set(conf, "isolation.level", "read_uncommitted", err, sizeof err);
        rk = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!rk)
                rc = -1;
        if (rc == 0 && (read_topic(rk, c, TK_OUTPUT, w, ix, h) ||
                        read_topic(rk, c, TK_DLQ, w, ix, h)))
                rc = -1;
        for (int p = 0; rc == 0 && p < c->partitions[TK_INPUT]; p++) {
                int64_t lo, hi;
                if (rd_kafka_query_watermark_offsets(rk, c->topics[TK_INPUT], p, &lo, &hi,
                                                     TK_QUERY_TIMEOUT_MS))
                        rc = -1;
                else
                        h->dropped_records += lo;
        }
        if (rk)
                rd_kafka_destroy_flags(rk, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        if (rc == 0 && read_committed(c, h))
                rc = -1;
        h->complete = rc == 0;
        for (int p = 0; p < h->partitions; p++) {
                free(ix[p].offsets);
                free(ix[p].events);
        }
        free(ix);
        return rc;
}

void tk_history_free(struct tk_history *h) {
        free(h->committed);
        h->committed = NULL;
}
