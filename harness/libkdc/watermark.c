/* Confirmed watermark: per partition, a ring of the offsets polled but not
 * yet passed, in poll order, with a done flag each. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <kdc/error.h>
#include <kdc/watermark.h>

#include "internal.h"

struct part {
        const char *topic; /* the map's key copy */
        int32_t partition;
        uint64_t epoch;
        /* Ring of tracked offsets (ascending) and their done flags. */
        int64_t *offsets;
        uint8_t *done;
        size_t cap, head, len; /* cap: power of two or 0 */
        int64_t last_tracked;  /* -1: none */
        int64_t position;      /* offset after the done prefix; -1: none */
        int64_t committed;     /* last committed position; -1: none */
        int64_t last_commit_ms;
};

struct kdc_watermark_s {
        pthread_mutex_t lock; /* guards parts and every struct part */
        struct kdc__partmap parts;
        const kdc_assignment_t *assignment;
        int interval_ms;
};

static void part_free(struct part *p) {
        if (!p)
                return;
        free(p->offsets);
        free(p->done);
        free(p);
}

/* Release the ring (a revoked partition keeps only its small record). */
static void part_drop(struct part *p) {
        free(p->offsets);
        free(p->done);
        p->offsets = NULL;
        p->done = NULL;
        p->cap = 0;
}

static void part_reset(struct part *p, uint64_t epoch) {
        p->epoch = epoch;
        p->head = p->len = 0;
        p->last_tracked = -1;
        p->position = -1;
        p->committed = -1;
        p->last_commit_ms = 0;
}

int kdc_watermark_new(kdc_watermark_t **wmp,
                      const kdc_assignment_t *assignment, int interval_ms) {
        kdc_watermark_t *wm;

        if (!wmp)
                return KDC_ERR_INVALID;
        *wmp = NULL;
        if (interval_ms < 0)
                return KDC_ERR_INVALID;
        wm = calloc(1, sizeof(*wm));
        if (!wm)
                return KDC_ERR_NOMEM;
        if (pthread_mutex_init(&wm->lock, NULL) != 0) {
                free(wm);
                return KDC_ERR_NOMEM;
        }
        wm->assignment = assignment;
        wm->interval_ms = interval_ms;
        *wmp = wm;
        return 0;
}

void kdc_watermark_destroy(kdc_watermark_t *wm) {
        if (!wm)
                return;
        for (size_t i = 0; i < wm->parts.cap; i++)
                if (wm->parts.slots[i].topic)
                        part_free(wm->parts.slots[i].value);
        kdc__partmap_free(&wm->parts);
        pthread_mutex_destroy(&wm->lock);
        free(wm);
}

#define AT(p, i) (((p)->head + (i)) & ((p)->cap - 1))

static int ring_grow(struct part *p) {
        size_t cap = p->cap ? p->cap * 2 : 64;
        int64_t *offsets = malloc(cap * sizeof(*offsets));
        uint8_t *done = malloc(cap);

        if (!offsets || !done) {
                free(offsets);
                free(done);
                return KDC_ERR_NOMEM;
        }
        for (size_t i = 0; i < p->len; i++) {
                offsets[i] = p->offsets[AT(p, i)];
                done[i] = p->done[AT(p, i)];
        }
        free(p->offsets);
        free(p->done);
        p->offsets = offsets;
        p->done = done;
        p->cap = cap;
        p->head = 0;
        return 0;
}

/* Pop the done prefix; the watermark follows it. */
static void advance(struct part *p) {
        while (p->len && p->done[p->head]) {
                p->position = p->offsets[p->head] + 1;
                p->head = (p->head + 1) & (p->cap - 1);
                p->len--;
        }
}

/* Logical index of offset in the ring, or -1 (binary search: tracked
 * offsets ascend). */
static long find(const struct part *p, int64_t offset) {
        size_t lo = 0, hi = p->len;

        while (lo < hi) {
                size_t mid = lo + (hi - lo) / 2;
                int64_t v = p->offsets[AT(p, mid)];

                if (v == offset)
                        return (long)mid;
                if (v < offset)
                        lo = mid + 1;
                else
                        hi = mid;
        }
        return -1;
}

static int epoch_current(const kdc_watermark_t *wm, const char *topic,
                         int32_t partition, uint64_t epoch) {
        return !wm->assignment ||
               kdc_assignment_check(wm->assignment, topic, partition,
                                    epoch) == 0;
}

int kdc_watermark_track(kdc_watermark_t *wm, const char *topic,
                        int32_t partition, int64_t offset, uint64_t epoch) {
        struct part *p;
        uint64_t hash;
        int r = 0;

        /* (the next offset, offset + 1, must be an offset too) */
        if (!wm || !topic || partition < 0 || offset < 0 || offset == INT64_MAX)
                return KDC_ERR_INVALID;
        if (!epoch_current(wm, topic, partition, epoch)) {
                kdc__stats_commit(kdc__assignment_stats(wm->assignment),
                                  KDC_ERR_STALE, RD_KAFKA_RESP_ERR_NO_ERROR);
                return KDC_ERR_STALE;
        }
        hash = kdc__partmap_hash(topic, partition);

        pthread_mutex_lock(&wm->lock);
        p = kdc__partmap_get(&wm->parts, topic, partition, hash);
        if (!p) {
                p = calloc(1, sizeof(*p));
                if (!p || kdc__partmap_put(&wm->parts, topic, partition, hash,
                                           p)) {
                        free(p);
                        r = KDC_ERR_NOMEM;
                        goto out;
                }
                /* The map owns the key copy; point at it. */
                p->topic = NULL;
                for (size_t i = 0; i < wm->parts.cap; i++)
                        if (wm->parts.slots[i].value == p)
                                p->topic = wm->parts.slots[i].topic;
                p->partition = partition;
                part_reset(p, epoch);
        } else if (p->epoch != epoch) {
                part_reset(p, epoch); /* a new epoch starts afresh */
        }

        if (offset <= p->last_tracked) {
                /* Seeked back: what follows will be polled again. */
                while (p->len && p->offsets[AT(p, p->len - 1)] >= offset)
                        p->len--;
        }
        if (p->len == p->cap && (r = ring_grow(p)))
                goto out;
        p->offsets[AT(p, p->len)] = offset;
        p->done[AT(p, p->len)] = 0;
        p->len++;
        p->last_tracked = offset;
out:
        pthread_mutex_unlock(&wm->lock);
        return r;
}

int kdc_watermark_done(kdc_watermark_t *wm, const char *topic,
                       int32_t partition, int64_t offset, uint64_t epoch) {
        struct part *p;
        long i;
        int r = 0;

        if (!wm || !topic || partition < 0 || offset < 0)
                return KDC_ERR_INVALID;
        if (!epoch_current(wm, topic, partition, epoch)) {
                kdc__stats_commit(kdc__assignment_stats(wm->assignment),
                                  KDC_ERR_STALE, RD_KAFKA_RESP_ERR_NO_ERROR);
                return KDC_ERR_STALE;
        }
        pthread_mutex_lock(&wm->lock);
        p = kdc__partmap_get(&wm->parts, topic, partition,
                             kdc__partmap_hash(topic, partition));
        if (!p) {
                r = KDC_ERR_NOENT;
        } else if (p->epoch != epoch) {
                r = KDC_ERR_STALE;
                kdc__stats_commit(kdc__assignment_stats(wm->assignment), r,
                                  RD_KAFKA_RESP_ERR_NO_ERROR);
        } else if ((i = find(p, offset)) < 0 || p->done[AT(p, i)]) {
                r = KDC_ERR_NOENT;
        } else {
                p->done[AT(p, i)] = 1;
                if (i == 0)
                        advance(p);
        }
        pthread_mutex_unlock(&wm->lock);
        return r;
}

/* A polled message's coordinates are usable: a message, not an error
 * event, with a topic handle. */
static int message_valid(const rd_kafka_message_t *msg) {
        return msg && msg->err == RD_KAFKA_RESP_ERR_NO_ERROR && msg->rkt;
}

int kdc_watermark_track_message(kdc_watermark_t *wm,
                                const rd_kafka_message_t *msg, uint64_t epoch) {
        if (!message_valid(msg))
                return KDC_ERR_INVALID;
        return kdc_watermark_track(wm, rd_kafka_topic_name(msg->rkt),
                                   msg->partition, msg->offset, epoch);
}

int kdc_watermark_done_message(kdc_watermark_t *wm,
                               const rd_kafka_message_t *msg, uint64_t epoch) {
        if (!message_valid(msg))
                return KDC_ERR_INVALID;
        return kdc_watermark_done(wm, rd_kafka_topic_name(msg->rkt),
                                  msg->partition, msg->offset, epoch);
}

int64_t kdc_watermark_position(const kdc_watermark_t *cwm, const char *topic,
                               int32_t partition) {
        kdc_watermark_t *wm = (kdc_watermark_t *)cwm; /* the mutex only */
        struct part *p;
        int64_t pos;

        if (!wm || !topic)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&wm->lock);
        p = kdc__partmap_get(&wm->parts, topic, partition,
                             kdc__partmap_hash(topic, partition));
        pos = p && p->position >= 0 ? p->position : KDC_ERR_NOENT;
        pthread_mutex_unlock(&wm->lock);
        return pos;
}

/* Result of the commit: copy each partition's error into our list. */
static void commit_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                      rd_kafka_topic_partition_list_t *offsets,
                      void *opaque) {
        rd_kafka_topic_partition_list_t *sent = opaque;

        (void)rk;
        for (int i = 0; i < sent->cnt; i++) {
                rd_kafka_topic_partition_t *s = &sent->elems[i];
                rd_kafka_topic_partition_t *got =
                    offsets ? rd_kafka_topic_partition_list_find(
                                  offsets, s->topic, s->partition)
                            : NULL;

                s->err = got && got->err ? got->err : err;
        }
}

int kdc_watermark_commit(kdc_watermark_t *wm, rd_kafka_t *consumer, int force,
                         int *committedp, rd_kafka_resp_err_t *commit_err) {
        rd_kafka_topic_partition_list_t *list;
        rd_kafka_resp_err_t err, first = RD_KAFKA_RESP_ERR_NO_ERROR;
        uint64_t *epochs;
        int64_t now = kdc__now_ms();
        int committed = 0;

        if (committedp)
                *committedp = 0;
        if (commit_err)
                *commit_err = RD_KAFKA_RESP_ERR_NO_ERROR;
        if (!wm || !consumer || rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&wm->lock);
        list = rd_kafka_topic_partition_list_new((int)wm->parts.len + 1);
        /* The epoch each entry was sent under, by list index. */
        epochs = malloc((wm->parts.len + 1) * sizeof(*epochs));
        if (!list || !epochs) {
                pthread_mutex_unlock(&wm->lock);
                if (list)
                        rd_kafka_topic_partition_list_destroy(list);
                free(epochs);
                return KDC_ERR_NOMEM;
        }
        for (size_t i = 0; i < wm->parts.cap; i++) {
                struct kdc__partmap_slot *s = &wm->parts.slots[i];
                struct part *p = s->value;
                rd_kafka_topic_partition_t *e;

                if (!s->topic)
                        continue;
                if (!epoch_current(wm, p->topic, p->partition, p->epoch)) {
                        /* Revoked or lost: never commit it again. */
                        part_reset(p, 0);
                        part_drop(p);
                        continue;
                }
                if (p->position <= p->committed ||
                    (!force && now - p->last_commit_ms < wm->interval_ms))
                        continue;
                epochs[list->cnt] = p->epoch;
                e = rd_kafka_topic_partition_list_add(list, p->topic,
                                                      p->partition);
                e->offset = p->position;
        }
        pthread_mutex_unlock(&wm->lock);
        if (list->cnt == 0) {
                rd_kafka_topic_partition_list_destroy(list);
                free(epochs);
                return 0;
        }

        for (int i = 0; i < list->cnt; i++)
                list->elems[i].err = RD_KAFKA_RESP_ERR__FAIL;
        err = rd_kafka_commit_queue(consumer, list, NULL, commit_cb, list);
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
                for (int i = 0; i < list->cnt; i++)
                        if (!list->elems[i].err)
                                list->elems[i].err = err;

        pthread_mutex_lock(&wm->lock);
        for (int i = 0; i < list->cnt; i++) {
                rd_kafka_topic_partition_t *e = &list->elems[i];
                struct part *p;

                kdc__stats_commit(kdc__assignment_stats(wm->assignment),
                                  e->err ? KDC_ERR_COMMIT : 0, e->err);
                if (e->err) {
                        if (!first)
                                first = e->err;
                        continue;
                }
                committed++;
                p = kdc__partmap_get(&wm->parts, e->topic, e->partition,
                                     kdc__partmap_hash(e->topic,
                                                       e->partition));
                if (p && p->epoch == epochs[i]) {
                        if (e->offset > p->committed)
                                p->committed = e->offset;
                        p->last_commit_ms = now;
                }
        }
        pthread_mutex_unlock(&wm->lock);
        rd_kafka_topic_partition_list_destroy(list);
        free(epochs);
        if (committedp)
                *committedp = committed;
        if (commit_err)
                *commit_err = first;
        return first ? KDC_ERR_COMMIT : 0;
}
