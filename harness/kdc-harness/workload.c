/* The input events of a run: ids, which ones are poison (from the seed), and
 * their production to the input topic, paced by the caller and confirmed by
 * per-message delivery reports (the broker's offset of each event is what
 * the checker compares with the committed offsets). */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

void tk_event_id(int64_t i, char *buf, size_t size) {
        snprintf(buf, size, "evt-%07" PRId64, i);
}

int64_t tk_event_index(const void *id, size_t len, int64_t n) {
        const char *s = id;
        int64_t v = 0;

        if (!s || len < 11 || len > 20 || memcmp(s, "evt-", 4) != 0)
                return -1;
        for (size_t i = 4; i < len; i++) {
                if (s[i] < '0' || s[i] > '9')
                        return -1;
                v = v * 10 + (s[i] - '0');
        }
        /* exactly the spelling tk_event_id() gives */
        char again[32];
        tk_event_id(v, again, sizeof again);
        if (strlen(again) != len || memcmp(again, s, len) != 0 || v >= n)
                return -1;
        return v;
}

static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *m, void *opaque) {
        struct tk_workload *w = opaque;
        int64_t i = (int64_t)(intptr_t)m->_private - 1;

        (void)rk;
        if (i < 0 || i >= w->n)
                return;
        if (m->err == RD_KAFKA_RESP_ERR_NO_ERROR &&
            rd_kafka_message_status(m) == RD_KAFKA_MSG_STATUS_PERSISTED) {
                w->ev[i].offset = m->offset;
                w->ev[i].stored_ms = tk_now_ms();
                w->confirmed++;
        } else {
                w->ev[i].failed = 1;
                w->failed++;
        }
}

int tk_workload_new(struct tk_workload *w, struct tk_cluster *c, int64_t n,
                    double poison_ratio, uint64_t seed) {
        rd_kafka_conf_t *conf = tk_cluster_conf(c);
        unsigned short rng[3] = {(unsigned short)(seed ^ 0x5eed), (unsigned short)(seed >> 16),
                                 (unsigned short)(seed >> 32)};
        char err[256];
        int64_t poison = 0;

        memset(w, 0, sizeof *w);
        w->n = n;
        w->topic = c->topics[TK_INPUT];
        w->partitions = c->partitions[TK_INPUT];
        w->ev = calloc((size_t)n, sizeof *w->ev);
        if (!w->ev) {
                rd_kafka_conf_destroy(conf);
                return KDC_ERR_NOMEM;
        }
        for (int64_t i = 0; i < n; i++) {
                w->ev[i].partition = (int32_t)(i % w->partitions);
                w->ev[i].offset = -1;
                w->ev[i].poison = poison_ratio > 0 && erand48(rng) < poison_ratio;
                poison += w->ev[i].poison;
        }
        if (poison_ratio > 0 && poison == 0)
                w->ev[n / 2].poison = 1;

        /* The input must hold each event exactly once: idempotent, acks=all,
         * and no local timeout (faults heal; the broker then takes them). */
        rd_kafka_conf_set(conf, "enable.idempotence", "true", err, sizeof err);
        rd_kafka_conf_set(conf, "message.timeout.ms", "0", err, sizeof err);
        rd_kafka_conf_set(conf, "linger.ms", "2", err, sizeof err);
        rd_kafka_conf_set_dr_msg_cb(conf, dr_cb);
        rd_kafka_conf_set_opaque(conf, w);
        w->producer = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!w->producer) {
                free(w->ev);
                w->ev = NULL;
                return KDC_ERR_NOMEM;
        }
        return 0;
}

int tk_event_value(const struct tk_workload *w, int64_t i, char *buf, size_t size) {
        static const char *const poison[] = {"amount=", "amount=12x", "amount=-5",
                                             "{\"amount\": 12}", "\xff\xfe\xfd"};

        if (w->ev[i].poison)
                return snprintf(buf, size, "%s", poison[i % 5]);
        return snprintf(buf, size, "amount=%" PRId64, (i * 7919) % 999999 + 1);
}

void tk_workload_produce(struct tk_workload *w, int64_t upto) {
        if (upto > w->n)
                upto = w->n;
        while (w->enqueued < upto) {
                int64_t i = w->enqueued;
                char id[32], value[32];
                int vlen = tk_event_value(w, i, value, sizeof value);
                rd_kafka_headers_t *h = rd_kafka_headers_new(1);
                rd_kafka_resp_err_t err;

                tk_event_id(i, id, sizeof id);
                rd_kafka_header_add(h, KDC_TESTKIT_EVENT_ID_HEADER, -1, id, -1);
                err = rd_kafka_producev(w->producer, RD_KAFKA_V_TOPIC(w->topic),
                                        RD_KAFKA_V_PARTITION(w->ev[i].partition),
                                        RD_KAFKA_V_KEY(id, strlen(id)),
                                        RD_KAFKA_V_VALUE(value, (size_t)vlen),
                                        RD_KAFKA_V_HEADERS(h), RD_KAFKA_V_MSGFLAGS(RD_KAFKA_MSG_F_COPY),
                                        RD_KAFKA_V_OPAQUE((void *)(intptr_t)(i + 1)), RD_KAFKA_V_END);
                if (err) {
                        rd_kafka_headers_destroy(h);
                        /* The local queue is full (every broker down, a
                         * high --rate): try again at the caller's next
                         * round, which meanwhile applies the fault steps
                         * (the broker coming back up) and supervises. */
                        if (err == RD_KAFKA_RESP_ERR__QUEUE_FULL)
                                break;
                        w->ev[i].failed = 1; /* never enqueued: not an event */
                        w->failed++;
                }
                w->enqueued++;
        }
        rd_kafka_poll(w->producer, 0);
}

void tk_workload_poll(struct tk_workload *w, int timeout_ms) {
        rd_kafka_poll(w->producer, timeout_ms);
}

int tk_workload_drain(struct tk_workload *w, int timeout_ms) {
        int64_t deadline = tk_now_ms() + timeout_ms;

        while (w->confirmed + w->failed < w->enqueued && tk_now_ms() < deadline)
                rd_kafka_poll(w->producer, 50);
        return w->confirmed == w->n ? 0 : -1;
}

void tk_workload_destroy(struct tk_workload *w) {
        if (w->producer) {
                rd_kafka_purge(w->producer, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
                rd_kafka_flush(w->producer, 1000);
                rd_kafka_destroy(w->producer);
        }
        free(w->ev);
        memset(w, 0, sizeof *w);
}
