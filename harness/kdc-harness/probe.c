/* The progress probe: a thread that reads, every 200 ms, the group's
 * committed offsets of the input (rd_kafka_committed(), OffsetFetch: it
 * never joins the group) and the high watermarks of the output and DLQ
 * partitions. The run uses it to see that the service started working,
 * that every event is committed, and when nothing moves any more. While
 * brokers are down its queries fail and the last values stand.
 *
 * In a sink scenario it also counts the sink's rows, from a connection of its
 * own (tk_sink_count()): for the timeline only, never for the run's progress
 * (changed_at), so that the end of a run is what it was without it. A count
 * that fails (the server stopped, the database busy) is skipped, and the last
 * value stands. */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "internal.h"

#define TK_PROBE_PERIOD_MS 200
#define TK_PROBE_TIMEOUT_MS 1000

static int64_t committed_sum(struct tk_probe *p, int *ok) {
        const struct tk_cluster *c = p->cluster;
        rd_kafka_topic_partition_list_t *parts =
            rd_kafka_topic_partition_list_new(c->partitions[TK_INPUT]);
        int64_t sum = 0;

        for (int i = 0; i < c->partitions[TK_INPUT]; i++)
                rd_kafka_topic_partition_list_add(parts, c->topics[TK_INPUT], i);
        *ok = rd_kafka_committed(p->consumer, parts, TK_PROBE_TIMEOUT_MS) ==
              RD_KAFKA_RESP_ERR_NO_ERROR;
        for (int i = 0; *ok && i < parts->cnt; i++) {
                if (parts->elems[i].err)
                        *ok = 0;
                else if (parts->elems[i].offset > 0)
                        sum += parts->elems[i].offset;
        }
        rd_kafka_topic_partition_list_destroy(parts);
        return sum;
}

static int64_t stored_sum(struct tk_probe *p, int *ok) {
        const struct tk_cluster *c = p->cluster;
        int64_t sum = 0;

        *ok = 1;
        for (int r = TK_OUTPUT; r <= TK_DLQ && *ok; r++)
                for (int i = 0; i < c->partitions[r] && *ok; i++) {
                        int64_t lo, hi;
                        *ok = rd_kafka_query_watermark_offsets(p->consumer, c->topics[r], i, &lo,
                                                               &hi, TK_PROBE_TIMEOUT_MS) ==
                              RD_KAFKA_RESP_ERR_NO_ERROR;
                        sum += hi;
                }
        return sum;
}

static int64_t now_us(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

static void *probe_main(void *arg) {
        struct tk_probe *p = arg;

        for (;;) {
                int ok1, ok2;
                int64_t committed = committed_sum(p, &ok1);
                int64_t outputs = stored_sum(p, &ok2);
                int64_t effects = -1, t = now_us();
                int ok3 = p->counting && tk_sink_count(&p->counter, &effects) == 0;

                t = now_us() - t;

                pthread_mutex_lock(&p->lock);
                if (p->stop) {
                        pthread_mutex_unlock(&p->lock);
                        break;
                }
                if ((ok1 && committed != p->committed) || (ok2 && outputs != p->outputs))
                        p->changed_at = tk_now_ms();
                if (ok1)
                        p->committed = committed;
                if (ok2)
                        p->outputs = outputs;
                if (p->counting) {
                        if (ok3)
                                p->effects = effects;
                        else
                                p->effects_skipped++;
                        p->effects_samples++;
                        p->effects_us += t;
                }
                p->samples++;
                pthread_mutex_unlock(&p->lock);
                struct timespec ts = {0, TK_PROBE_PERIOD_MS * 1000 * 1000};
                nanosleep(&ts, NULL);
        }
        return NULL;
}

int tk_probe_start(struct tk_probe *p, const struct tk_cluster *c, const struct tk_sink *sink) {
        rd_kafka_conf_t *conf = tk_cluster_conf(c);
        char err[256];

        memset(p, 0, sizeof *p);
        p->cluster = c;
        p->effects = -1;
        /* no counter, no series: the run goes on as without a sink plot */
        p->counting =
            sink && sink->kind != TK_SINK_NONE && tk_sink_counter_open(&p->counter, sink) == 0;
        rd_kafka_conf_set(conf, "group.id", c->group, err, sizeof err);
        rd_kafka_conf_set(conf, "enable.auto.commit", "false", err, sizeof err);
        p->consumer = rd_kafka_new(RD_KAFKA_CONSUMER, conf, err, sizeof err);
        if (!p->consumer) {
                if (p->counting)
                        tk_sink_counter_close(&p->counter);
                p->counting = 0;
                return KDC_ERR_NOMEM;
        }
        p->changed_at = tk_now_ms();
        pthread_mutex_init(&p->lock, NULL);
        if (pthread_create(&p->thread, NULL, probe_main, p) != 0) {
                pthread_mutex_destroy(&p->lock);
                rd_kafka_destroy(p->consumer);
                p->consumer = NULL;
                if (p->counting)
                        tk_sink_counter_close(&p->counter);
                p->counting = 0;
                return KDC_ERR_NOMEM;
        }
        return 0;
}

void tk_probe_read(struct tk_probe *p, int64_t *committed, int64_t *outputs,
                   int64_t *changed_at) {
        pthread_mutex_lock(&p->lock);
        *committed = p->committed;
        *outputs = p->outputs;
        *changed_at = p->changed_at;
        pthread_mutex_unlock(&p->lock);
}

int64_t tk_probe_effects(struct tk_probe *p) {
        int64_t effects;

        pthread_mutex_lock(&p->lock);
        effects = p->effects;
        pthread_mutex_unlock(&p->lock);
        return effects;
}

void tk_probe_stop(struct tk_probe *p) {
        if (!p->consumer)
                return;
        pthread_mutex_lock(&p->lock);
        p->stop = 1;
        pthread_mutex_unlock(&p->lock);
        pthread_join(p->thread, NULL);
        pthread_mutex_destroy(&p->lock);
        /* Never subscribed: nothing to close in the group. */
        rd_kafka_destroy_flags(p->consumer, RD_KAFKA_DESTROY_F_NO_CONSUMER_CLOSE);
        p->consumer = NULL;
        if (p->counting)
                tk_sink_counter_close(&p->counter);
}
