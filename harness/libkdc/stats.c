/* Statistics of a libkdc service (kdc/stats.h): relaxed atomic counts fed by
 * the attached objects, trackers read at snapshot time, consumer lag from
 * librdkafka's watermarks, written as JSON (jansson) and OpenMetrics. */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include <kdc/error.h>
#include <kdc/stats.h>

#include "internal.h"

/* Error codes counted one by one: librdkafka's whole range (internal codes
 * from RD_KAFKA_RESP_ERR__BEGIN, broker codes up to _END_ALL); one more slot
 * for any code outside it. */
#define ERR_FIRST RD_KAFKA_RESP_ERR__BEGIN
#define ERR_SLOTS (RD_KAFKA_RESP_ERR_END_ALL - RD_KAFKA_RESP_ERR__BEGIN + 1)

/* The consumer lag of one partition at the last update. */
struct lag {
        int64_t hi_offset;        /* high watermark; -1: unknown */
        int64_t app_offset;       /* position; -1: none */
        int64_t committed_offset; /* -1: unknown (or not asked) */
        int64_t lag;              /* -1: unknown */
};

struct kdc_stats_s {
        char *name;
        _Atomic uint64_t counts[KDC__STAT_COUNT];
        _Atomic uint64_t errs[KDC__STAT_ERR_COUNT][ERR_SLOTS];
        pthread_mutex_t lock; /* guards everything below */
        kdc_tracker_t **trackers;
        size_t ntrackers, ctrackers;
        uint64_t gone_produced, gone_delivered; /* of destroyed trackers */
        struct kdc__partmap lags;               /* -> struct lag */
        int64_t lag, lag_peak;
        int32_t lag_partitions;
};

static size_t err_slot(rd_kafka_resp_err_t err) {
        long i = (long)err - (long)ERR_FIRST;

        return i >= 0 && i < ERR_SLOTS - 1 ? (size_t)i : ERR_SLOTS - 1;
}

/* The name of slot i: rd_kafka_err2name(), "OTHER" for the last. */
static const char *slot_name(size_t i) {
        if (i == ERR_SLOTS - 1)
                return "OTHER";
        return rd_kafka_err2name((rd_kafka_resp_err_t)((long)i + ERR_FIRST));
}

static uint64_t load(_Atomic uint64_t *c) {
        return atomic_load_explicit(c, memory_order_relaxed);
}

void kdc__stats_add(kdc_stats_t *s, enum kdc__stat which, uint64_t n) {
        if (s)
                atomic_fetch_add_explicit(&s->counts[which], n,
                                          memory_order_relaxed);
}

void kdc__stats_add_err(kdc_stats_t *s, enum kdc__stat_err which,
                        rd_kafka_resp_err_t err) {
        if (s)
                atomic_fetch_add_explicit(&s->errs[which][err_slot(err)], 1,
                                          memory_order_relaxed);
}

void kdc__stats_commit(kdc_stats_t *s, int r, rd_kafka_resp_err_t err) {
        if (!s)
                return;
        if (r == 0)
                kdc__stats_add(s, KDC__STAT_COMMITS, 1);
        else if (r == KDC_ERR_STALE)
                kdc__stats_add(s, KDC__STAT_STALE_DROPS, 1);
        else if (r == KDC_ERR_COMMIT)
                kdc__stats_add_err(s, KDC__STAT_ERR_COMMIT,
                                   err ? err : RD_KAFKA_RESP_ERR__FAIL);
}

static void lags_clear(struct kdc__partmap *m) {
        for (size_t i = 0; i < m->cap; i++)
                if (m->slots[i].topic)
                        free(m->slots[i].value);
        kdc__partmap_free(m);
}

int kdc_stats_new(kdc_stats_t **sp, const char *name) {
        kdc_stats_t *s;

        if (!sp)
                return KDC_ERR_INVALID;
        *sp = NULL;
        s = calloc(1, sizeof(*s));
        if (!s)
                return KDC_ERR_NOMEM;
        s->name = strdup(name ? name : "kdc");
        if (!s->name || pthread_mutex_init(&s->lock, NULL) != 0) {
                free(s->name);
                free(s);
                return KDC_ERR_NOMEM;
        }
        s->lag = s->lag_peak = -1;
        *sp = s;
        return 0;
}

void kdc_stats_destroy(kdc_stats_t *s) {
        if (!s)
                return;
        lags_clear(&s->lags);
        free(s->trackers);
        pthread_mutex_destroy(&s->lock);
        free(s->name);
        free(s);
}

int kdc_stats_attach_tracker(kdc_stats_t *s, kdc_tracker_t *t) {
        int r;

        if (!s || !t)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->ntrackers; i++)
                if (s->trackers[i] == t) {
                        pthread_mutex_unlock(&s->lock);
                        return 0;
                }
        if (s->ntrackers == s->ctrackers) {
                size_t c = s->ctrackers ? s->ctrackers * 2 : 4;
                kdc_tracker_t **v = realloc(s->trackers, c * sizeof(*v));

                if (!v) {
                        pthread_mutex_unlock(&s->lock);
                        return KDC_ERR_NOMEM;
                }
                s->trackers = v;
                s->ctrackers = c;
        }
        if ((r = kdc__tracker_set_stats(t, s)) == 0)
                s->trackers[s->ntrackers++] = t;
        pthread_mutex_unlock(&s->lock);
        return r;
}

void kdc__stats_tracker_gone(kdc_stats_t *s, kdc_tracker_t *t) {
        uint64_t produced, delivered;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->ntrackers; i++) {
                if (s->trackers[i] != t)
                        continue;
                kdc__tracker_counts(t, &produced, &delivered);
                s->gone_produced += produced;
                s->gone_delivered += delivered;
                s->trackers[i] = s->trackers[--s->ntrackers];
                break;
        }
        pthread_mutex_unlock(&s->lock);
}

int kdc_stats_attach_assignment(kdc_stats_t *s, kdc_assignment_t *a) {
        if (!s || !a)
                return KDC_ERR_INVALID;
        kdc__assignment_set_stats(a, s);
        return 0;
}

int kdc_stats_attach_retry(kdc_stats_t *s, kdc_retry_t *r) {
        if (!s || !r)
                return KDC_ERR_INVALID;
        kdc__retry_set_stats(r, s);
        return 0;
}

int kdc_stats_attach_dlq(kdc_stats_t *s, kdc_dlq_t *d) {
        if (!s || !d)
                return KDC_ERR_INVALID;
        kdc__dlq_set_stats(d, s);
        return 0;
}

int kdc_stats_attach_txn(kdc_stats_t *s, kdc_txn_t *txn) {
        if (!s || !txn)
                return KDC_ERR_INVALID;
        kdc__txn_set_stats(txn, s);
        return 0;
}

int kdc_stats_consumer_error(kdc_stats_t *s, rd_kafka_resp_err_t err) {
        if (!s)
                return KDC_ERR_INVALID;
        if (err != RD_KAFKA_RESP_ERR_NO_ERROR)
                kdc__stats_add_err(s, KDC__STAT_ERR_CONSUMER, err);
        return 0;
}

/* ---- lag ----------------------------------------------------------------- */

/* Fill l for one assigned partition (position already in l->app_offset). */
static void lag_of(rd_kafka_t *consumer, const char *topic, int32_t partition,
                   int timeout_ms, struct lag *l) {
        int64_t lo = -1, hi = -1, from;
        rd_kafka_resp_err_t err;

        if (timeout_ms > 0)
                err = rd_kafka_query_watermark_offsets(
                    consumer, topic, partition, &lo, &hi, timeout_ms);
        else
                err = rd_kafka_get_watermark_offsets(consumer, topic, partition,
                                                     &lo, &hi);
        l->hi_offset = err || hi < 0 ? -1 : hi;
        from = l->app_offset >= 0 ? l->app_offset : l->committed_offset;
        l->lag = l->hi_offset >= 0 && from >= 0
                     ? (l->hi_offset > from ? l->hi_offset - from : 0)
                     : -1;
}

int kdc_stats_update_lag(kdc_stats_t *s, rd_kafka_t *consumer, int timeout_ms) {
        rd_kafka_topic_partition_list_t *parts = NULL, *committed = NULL;
        struct kdc__partmap fresh = {0};
        int64_t sum = -1;
        int known = 0, r = 0;

        if (!s || !consumer || timeout_ms < 0 ||
            rd_kafka_type(consumer) != RD_KAFKA_CONSUMER)
                return KDC_ERR_INVALID;
        if (rd_kafka_assignment(consumer, &parts))
                return KDC_ERR_ASSIGN;
        (void)rd_kafka_position(consumer, parts);
        for (int i = 0; timeout_ms > 0 && !committed && i < parts->cnt; i++) {
                if (parts->elems[i].offset >= 0)
                        continue;
                /* No position yet: the committed offset (a broker call). */
                committed = rd_kafka_topic_partition_list_copy(parts);
                if (committed &&
                    rd_kafka_committed(consumer, committed, timeout_ms)) {
                        rd_kafka_topic_partition_list_destroy(committed);
                        committed = NULL;
                        break;
                }
        }
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *e = &parts->elems[i];
                struct lag *l = calloc(1, sizeof(*l));

                if (!l) {
                        r = KDC_ERR_NOMEM;
                        break;
                }
                l->app_offset = e->offset >= 0 ? e->offset : -1;
                l->committed_offset = -1;
                if (committed && !committed->elems[i].err &&
                    committed->elems[i].offset >= 0)
                        l->committed_offset = committed->elems[i].offset;
                lag_of(consumer, e->topic, e->partition, timeout_ms, l);
                if (kdc__partmap_put(&fresh, e->topic, e->partition,
                                     kdc__partmap_hash(e->topic, e->partition),
                                     l)) {
                        free(l);
                        r = KDC_ERR_NOMEM;
                        break;
                }
        }
        if (committed)
                rd_kafka_topic_partition_list_destroy(committed);
        rd_kafka_topic_partition_list_destroy(parts);
        if (r) {
                lags_clear(&fresh);
                return r;
        }
        for (size_t i = 0; i < fresh.cap; i++) {
                const struct lag *l = fresh.slots[i].value;

                if (!fresh.slots[i].topic || l->lag < 0)
                        continue;
                sum = (sum < 0 ? 0 : sum) + l->lag;
                known++;
        }

        pthread_mutex_lock(&s->lock);
        lags_clear(&s->lags);
        s->lags = fresh;
        s->lag_partitions = (int32_t)fresh.len;
        if (sum >= 0) {
                s->lag = sum;
                if (sum > s->lag_peak)
                        s->lag_peak = sum;
        }
        pthread_mutex_unlock(&s->lock);
        return known;
}

int64_t kdc_stats_lag(kdc_stats_t *s, const char *topic, int32_t partition) {
        const struct lag *l;
        int64_t lag;

        if (!s || !topic)
                return KDC_ERR_INVALID;
        pthread_mutex_lock(&s->lock);
        l = kdc__partmap_get(&s->lags, topic, partition,
                             kdc__partmap_hash(topic, partition));
        lag = l && l->lag >= 0 ? l->lag : KDC_ERR_NOENT;
        pthread_mutex_unlock(&s->lock);
        return lag;
}

/* ---- reading ------------------------------------------------------------- */

static int64_t err_sum(kdc_stats_t *s, enum kdc__stat_err which) {
        uint64_t n = 0;

        for (size_t i = 0; i < ERR_SLOTS; i++)
                n += load(&s->errs[which][i]);
        return (int64_t)n;
}

static int64_t wall_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int kdc_stats_read(kdc_stats_t *s, kdc_stats_snapshot_t *snap) {
        uint64_t produced, delivered;

        if (!s || !snap)
                return KDC_ERR_INVALID;
        memset(snap, 0, sizeof(*snap));
        snap->ts_ms = wall_ms();
        pthread_mutex_lock(&s->lock);
        snap->produced = (int64_t)s->gone_produced;
        snap->delivered = (int64_t)s->gone_delivered;
        for (size_t i = 0; i < s->ntrackers; i++) {
                kdc__tracker_counts(s->trackers[i], &produced, &delivered);
                snap->produced += (int64_t)produced;
                snap->delivered += (int64_t)delivered;
        }
        snap->lag = s->lag;
        snap->lag_peak = s->lag_peak;
        snap->lag_partitions = s->lag_partitions;
        pthread_mutex_unlock(&s->lock);

        snap->delivery_failed = err_sum(s, KDC__STAT_ERR_DELIVERY);
        snap->commits_failed = err_sum(s, KDC__STAT_ERR_COMMIT);
        snap->consumer_errors = err_sum(s, KDC__STAT_ERR_CONSUMER);
        snap->max_poll_exceeded = (int64_t)load(
            &s->errs[KDC__STAT_ERR_CONSUMER]
                    [err_slot(RD_KAFKA_RESP_ERR__MAX_POLL_EXCEEDED)]);
#define C(field, which) snap->field = (int64_t)load(&s->counts[which])
        C(dlq_routed, KDC__STAT_DLQ_ROUTED);
        C(dlq_failed, KDC__STAT_DLQ_FAILED);
        C(retries, KDC__STAT_RETRIES);
        C(retries_exhausted, KDC__STAT_RETRIES_EXHAUSTED);
        C(commits, KDC__STAT_COMMITS);
        C(rebalances, KDC__STAT_REBALANCES);
        C(revocations, KDC__STAT_REVOCATIONS);
        C(lost, KDC__STAT_LOST);
        C(stale_drops, KDC__STAT_STALE_DROPS);
        C(txn_aborts, KDC__STAT_TXN_ABORTS);
        C(txn_rewinds, KDC__STAT_TXN_REWINDS);
#undef C
        return 0;
}

int64_t kdc_stats_delivery_failed(kdc_stats_t *s, rd_kafka_resp_err_t err) {
        if (!s)
                return KDC_ERR_INVALID;
        return (int64_t)load(&s->errs[KDC__STAT_ERR_DELIVERY][err_slot(err)]);
}

int64_t kdc_stats_commit_failed(kdc_stats_t *s, rd_kafka_resp_err_t err) {
        if (!s)
                return KDC_ERR_INVALID;
        return (int64_t)load(&s->errs[KDC__STAT_ERR_COMMIT][err_slot(err)]);
}

/* ---- the counts, named once for JSON and OpenMetrics --------------------- */

struct field {
        const char *name; /* the snapshot field; OpenMetrics kdc_<name> */
        size_t offset;    /* in kdc_stats_snapshot_t */
        int gauge;        /* 0: a counter (kdc_<name>_total) */
        const char *help;
};

#define F(name, gauge, help)                                                   \
        { #name, offsetof(kdc_stats_snapshot_t, name), gauge, help }
static const struct field fields[] = {
    F(produced, 0, "Messages enqueued through libkdc trackers."),
    F(delivered, 0, "Delivery reports confirming a message (PERSISTED)."),
    F(dlq_routed, 0, "Messages whose dead-letter routing was confirmed."),
    F(dlq_failed, 0, "Dead-letter routings not confirmed."),
    F(retries, 0, "Failed attempts scheduled for another attempt."),
    F(retries_exhausted, 0, "Messages whose retry policy was exhausted."),
    F(commits, 0, "Offsets committed."),
    F(rebalances, 0, "Partition assignments served."),
    F(revocations, 0, "Partition revocations served, lost ones included."),
    F(lost, 0, "Revocations whose assignment was lost."),
    F(stale_drops, 0, "Work refused because its assignment epoch had ended."),
    F(txn_aborts, 0, "Transactions aborted."),
    F(txn_rewinds, 0, "Consumers rewound to committed offsets after an abort."),
    F(max_poll_exceeded, 0,
      "Consumer _MAX_POLL_EXCEEDED events (left the group)."),
};
#undef F

static int64_t field_value(const kdc_stats_snapshot_t *snap,
                           const struct field *f) {
        return *(const int64_t *)((const char *)snap + f->offset);
}

/* The counts by error, for JSON and OpenMetrics. */
static const struct {
        enum kdc__stat_err which;
        const char *name; /* the snapshot's total; OpenMetrics kdc_<name> */
        const char *help;
} err_fields[] = {
    {KDC__STAT_ERR_DELIVERY, "delivery_failed",
     "Failed delivery reports, by error."},
    {KDC__STAT_ERR_COMMIT, "commits_failed",
     "Offsets whose commit failed, by error."},
    {KDC__STAT_ERR_CONSUMER, "consumer_errors",
     "Error events polled from the consumer, by error."},
};
#define N_ERR_FIELDS (sizeof(err_fields) / sizeof(err_fields[0]))

/* ---- JSON ---------------------------------------------------------------- */

static int set_int(json_t *o, const char *key, int64_t v) {
        return json_object_set_new(o, key, json_integer((json_int_t)v));
}

static json_t *topics_json(kdc_stats_t *s) {
        json_t *topics = json_object();
        int bad = !topics;

        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; !bad && i < s->lags.cap; i++) {
                const struct kdc__partmap_slot *slot = &s->lags.slots[i];
                const struct lag *l = slot->value;
                json_t *t, *parts, *p;
                char num[16];

                if (!slot->topic)
                        continue;
                t = json_object_get(topics, slot->topic);
                if (!t) {
                        t = json_object();
                        bad =
                            !t || json_object_set_new(topics, slot->topic, t) ||
                            json_object_set_new(t, "topic",
                                                json_string(slot->topic)) ||
                            json_object_set_new(t, "partitions", json_object());
                        if (bad)
                                break;
                }
                parts = json_object_get(t, "partitions");
                p = json_object();
                snprintf(num, sizeof(num), "%" PRId32, slot->partition);
                bad = !parts || !p || json_object_set_new(parts, num, p) ||
                      set_int(p, "partition", slot->partition) ||
                      set_int(p, "hi_offset", l->hi_offset) ||
                      set_int(p, "app_offset", l->app_offset) ||
                      set_int(p, "committed_offset", l->committed_offset) ||
                      set_int(p, "consumer_lag", l->lag);
        }
        pthread_mutex_unlock(&s->lock);
        if (bad) {
                json_decref(topics);
                return NULL;
        }
        return topics;
}

static json_t *by_error_json(kdc_stats_t *s, enum kdc__stat_err which) {
        json_t *o = json_object();

        for (size_t i = 0; o && i < ERR_SLOTS; i++) {
                uint64_t n = load(&s->errs[which][i]);

                if (n && set_int(o, slot_name(i), (int64_t)n)) {
                        json_decref(o);
                        return NULL;
                }
        }
        return o;
}

int kdc_stats_json(kdc_stats_t *s, char **jsonp) {
        kdc_stats_snapshot_t snap;
        json_t *doc;
        int bad;

        if (jsonp)
                *jsonp = NULL;
        if (!s || !jsonp)
                return KDC_ERR_INVALID;
        kdc_stats_read(s, &snap);
        doc = json_object();
        if (!doc)
                return KDC_ERR_NOMEM;
        bad = json_object_set_new(doc, "name", json_string(s->name)) ||
              json_object_set_new(doc, "type", json_string("kdc")) ||
              set_int(doc, "ts", kdc__now_ms() * 1000) ||
              set_int(doc, "time", snap.ts_ms / 1000);
        for (size_t i = 0; !bad && i < sizeof(fields) / sizeof(fields[0]); i++)
                bad = set_int(doc, fields[i].name,
                              field_value(&snap, &fields[i]));
        bad = bad || set_int(doc, "delivery_failed", snap.delivery_failed) ||
              set_int(doc, "commits_failed", snap.commits_failed) ||
              set_int(doc, "consumer_errors", snap.consumer_errors) ||
              set_int(doc, "lag", snap.lag) ||
              set_int(doc, "lag_peak", snap.lag_peak) ||
              set_int(doc, "lag_partitions", snap.lag_partitions);
        for (size_t i = 0; !bad && i < N_ERR_FIELDS; i++) {
                char key[64];

                snprintf(key, sizeof(key), "%s_by_error", err_fields[i].name);
                bad = json_object_set_new(
                    doc, key, by_error_json(s, err_fields[i].which));
        }
        bad = bad || json_object_set_new(doc, "topics", topics_json(s));
        if (!bad)
                *jsonp = json_dumps(doc, JSON_COMPACT | JSON_SORT_KEYS);
        json_decref(doc);
        return *jsonp ? 0 : KDC_ERR_NOMEM;
}

int kdc_stats_write_json_file(kdc_stats_t *s, const char *path) {
        char *json, *tmp;
        size_t len;
        FILE *fp;
        int r, e = 0;

        if (!s || !path)
                return KDC_ERR_INVALID;
        if ((r = kdc_stats_json(s, &json)))
                return r;
        len = strlen(path) + 5;
        tmp = malloc(len);
        if (!tmp) {
                free(json);
                return KDC_ERR_NOMEM;
        }
        snprintf(tmp, len, "%s.tmp", path);
        fp = fopen(tmp, "w");
        if (!fp) {
                r = KDC_ERR_IO;
        } else {
                if (fputs(json, fp) < 0 || fputc('\n', fp) == EOF)
                        e = errno ? errno : EIO;
                if (fclose(fp) != 0 && !e)
                        e = errno;
                if (!e && rename(tmp, path) != 0)
                        e = errno;
                if (e) {
                        (void)remove(tmp);
                        errno = e;
                        r = KDC_ERR_IO;
                }
        }
        free(tmp);
        free(json);
        return r;
}

/* ---- OpenMetrics --------------------------------------------------------- */

/* A label value, escaped as OpenMetrics requires (\\, \", \n). */
static void put_label(FILE *fp, const char *v) {
        for (; *v; v++) {
                if (*v == '\\' || *v == '"')
                        fputc('\\', fp);
                if (*v == '\n')
                        fputs("\\n", fp);
                else
                        fputc(*v, fp);
        }
}

int kdc_stats_write_openmetrics(kdc_stats_t *s, FILE *fp) {
        kdc_stats_snapshot_t snap;

        if (!s || !fp)
                return KDC_ERR_INVALID;
        kdc_stats_read(s, &snap);
        for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++) {
                const struct field *f = &fields[i];

                fprintf(fp, "# TYPE kdc_%s counter\n# HELP kdc_%s %s\n",
                        f->name, f->name, f->help);
                fprintf(fp, "kdc_%s_total %" PRId64 "\n", f->name,
                        field_value(&snap, f));
        }
        for (size_t k = 0; k < N_ERR_FIELDS; k++) {
                const char *n = err_fields[k].name;

                fprintf(fp, "# TYPE kdc_%s counter\n# HELP kdc_%s %s\n", n, n,
                        err_fields[k].help);
                for (size_t i = 0; i < ERR_SLOTS; i++) {
                        uint64_t v = load(&s->errs[err_fields[k].which][i]);

                        if (!v)
                                continue;
                        fprintf(fp, "kdc_%s_total{error=\"", n);
                        put_label(fp, slot_name(i));
                        fprintf(fp, "\"} %" PRIu64 "\n", v);
                }
        }
        fputs("# TYPE kdc_consumer_lag gauge\n"
              "# HELP kdc_consumer_lag Messages after the consumer's "
              "position (high watermark - position), by partition.\n",
              fp);
        pthread_mutex_lock(&s->lock);
        for (size_t i = 0; i < s->lags.cap; i++) {
                const struct kdc__partmap_slot *slot = &s->lags.slots[i];
                const struct lag *l = slot->value;

                if (!slot->topic || l->lag < 0)
                        continue;
                fputs("kdc_consumer_lag{topic=\"", fp);
                put_label(fp, slot->topic);
                fprintf(fp, "\",partition=\"%" PRId32 "\"} %" PRId64 "\n",
                        slot->partition, l->lag);
        }
        pthread_mutex_unlock(&s->lock);
        fputs("# TYPE kdc_consumer_lag_sum gauge\n"
              "# HELP kdc_consumer_lag_sum Consumer lag of every assigned "
              "partition at the last update.\n",
              fp);
        if (snap.lag >= 0)
                fprintf(fp, "kdc_consumer_lag_sum %" PRId64 "\n", snap.lag);
        fputs("# TYPE kdc_consumer_lag_peak gauge\n"
              "# HELP kdc_consumer_lag_peak Largest consumer lag sum seen.\n",
              fp);
        if (snap.lag_peak >= 0)
                fprintf(fp, "kdc_consumer_lag_peak %" PRId64 "\n",
                        snap.lag_peak);
        fputs("# EOF\n", fp);
        return ferror(fp) ? KDC_ERR_IO : 0;
}
