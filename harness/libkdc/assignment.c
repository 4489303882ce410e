/* Rebalance epochs: the partitions a consumer owns and the epoch each was
 * assigned in. */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include <kdc/assignment.h>
#include <kdc/error.h>

#include "internal.h"

struct kdc_assignment_s {
        pthread_mutex_t lock;     /* guards parts and last_epoch */
        struct kdc__partmap parts; /* -> uint64_t epoch (heap) */
        uint64_t last_epoch;
        kdc_rebalance_hook_t *hook;
        void *opaque;
        kdc_stats_t *stats; /* kdc_stats_attach_assignment(); NULL: none */
};

kdc_stats_t *kdc__assignment_stats(const kdc_assignment_t *a) {
        return a ? a->stats : NULL;
}

void kdc__assignment_set_stats(kdc_assignment_t *a, kdc_stats_t *s) {
        a->stats = s;
}

int kdc_assignment_new(kdc_assignment_t **ap, kdc_rebalance_hook_t *hook,
                       void *opaque) {
        kdc_assignment_t *a;

        if (!ap)
                return KDC_ERR_INVALID;
        *ap = NULL;
        a = calloc(1, sizeof(*a));
        if (!a)
                return KDC_ERR_NOMEM;
        if (pthread_mutex_init(&a->lock, NULL) != 0) {
                free(a);
                return KDC_ERR_NOMEM;
        }
        a->hook = hook;
        a->opaque = opaque;
        *ap = a;
        return 0;
}

static void clear_locked(kdc_assignment_t *a) {
        for (size_t i = 0; i < a->parts.cap; i++)
                if (a->parts.slots[i].topic)
                        free(a->parts.slots[i].value);
        kdc__partmap_free(&a->parts);
}

void kdc_assignment_destroy(kdc_assignment_t *a) {
        if (!a)
                return;
        clear_locked(a);
        pthread_mutex_destroy(&a->lock);
        free(a);
}

/* One new epoch for every listed partition. */
static int start_epoch(kdc_assignment_t *a,
                       const rd_kafka_topic_partition_list_t *parts) {
        int r = 0;

        pthread_mutex_lock(&a->lock);
        a->last_epoch++;
        for (int i = 0; i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *p = &parts->elems[i];
                uint64_t hash = kdc__partmap_hash(p->topic, p->partition);
                uint64_t *e = kdc__partmap_get(&a->parts, p->topic,
                                               p->partition, hash);

                if (!e) {
                        e = malloc(sizeof(*e));
                        if (!e || kdc__partmap_put(&a->parts, p->topic,
                                                   p->partition, hash, e)) {
                                free(e);
                                r = KDC_ERR_NOMEM;
                                continue;
                        }
                }
                *e = a->last_epoch;
        }
        pthread_mutex_unlock(&a->lock);
        return r;
}

static void end_epoch(kdc_assignment_t *a,
                      const rd_kafka_topic_partition_list_t *parts) {
        pthread_mutex_lock(&a->lock);
        for (int i = 0; parts && i < parts->cnt; i++) {
                const rd_kafka_topic_partition_t *p = &parts->elems[i];

                free(kdc__partmap_del(
                    &a->parts, p->topic, p->partition,
                    kdc__partmap_hash(p->topic, p->partition)));
        }
        if (!parts)
                clear_locked(a);
        pthread_mutex_unlock(&a->lock);
}

static int cooperative(rd_kafka_t *rk) {
        const char *proto = rd_kafka_rebalance_protocol(rk);

        return proto && strcmp(proto, "COOPERATIVE") == 0;
}

static int assign(rd_kafka_t *rk, rd_kafka_topic_partition_list_t *parts,
                  int incremental, int add) {
        rd_kafka_error_t *error = NULL;

        if (!incremental)
                return rd_kafka_assign(rk, add ? parts : NULL) ==
                               RD_KAFKA_RESP_ERR_NO_ERROR
                           ? 0
                           : KDC_ERR_ASSIGN;
        error = add ? rd_kafka_incremental_assign(rk, parts)
                    : rd_kafka_incremental_unassign(rk, parts);
        if (!error)
                return 0;
        rd_kafka_error_destroy(error);
        return KDC_ERR_ASSIGN;
}

static void hook(kdc_assignment_t *a, rd_kafka_t *rk, rd_kafka_resp_err_t err,
                 rd_kafka_topic_partition_list_t *parts, int lost) {
        if (a->hook)
                a->hook(rk, err, parts, lost, a->opaque);
}

int kdc_assignment_rebalance(kdc_assignment_t *a, rd_kafka_t *rk,
                             rd_kafka_resp_err_t err,
                             rd_kafka_topic_partition_list_t *parts) {
        int incremental, r, lost;

        if (!a || !rk)
                return KDC_ERR_INVALID;
        incremental = cooperative(rk);

        switch (err) {
        case RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS:
                if (!parts)
                        return KDC_ERR_INVALID;
                kdc__stats_add(a->stats, KDC__STAT_REBALANCES, 1);
                r = start_epoch(a, parts);
                if (assign(rk, parts, incremental, 1)) {
                        end_epoch(a, parts);
                        r = KDC_ERR_ASSIGN;
                }
                hook(a, rk, err, parts, 0);
                return r;

        case RD_KAFKA_RESP_ERR__REVOKE_PARTITIONS:
                if (!parts)
                        return KDC_ERR_INVALID;
                lost = rd_kafka_assignment_lost(rk);
                kdc__stats_add(a->stats, KDC__STAT_REVOCATIONS, 1);
                if (lost)
                        kdc__stats_add(a->stats, KDC__STAT_LOST, 1);
                if (lost)
                        end_epoch(a, parts); /* before anyone commits */
                hook(a, rk, err, parts, lost);
                if (!lost)
                        end_epoch(a, parts);
                return assign(rk, parts, incremental, 0);

        default:
                end_epoch(a, NULL);
                r = assign(rk, NULL, 0, 0);
                hook(a, rk, err, parts, 0);
                return r;
        }
}

void kdc_assignment_rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err,
                                 rd_kafka_topic_partition_list_t *parts,
                                 void *opaque) {
        (void)kdc_assignment_rebalance(opaque, rk, err, parts);
}

uint64_t kdc_assignment_epoch(const kdc_assignment_t *ca, const char *topic,
                              int32_t partition) {
        kdc_assignment_t *a = (kdc_assignment_t *)ca; /* the mutex only */
        const uint64_t *e;
        uint64_t epoch = 0;

        if (!a || !topic)
                return 0;
        pthread_mutex_lock(&a->lock);
        e = kdc__partmap_get(&a->parts, topic, partition,
                             kdc__partmap_hash(topic, partition));
        if (e)
                epoch = *e;
        pthread_mutex_unlock(&a->lock);
        return epoch;
}

uint64_t kdc_assignment_stamp(const kdc_assignment_t *a,
                              const rd_kafka_message_t *msg) {
        if (!a || !msg || msg->err != RD_KAFKA_RESP_ERR_NO_ERROR || !msg->rkt)
                return 0;
        return kdc_assignment_epoch(a, rd_kafka_topic_name(msg->rkt),
                                    msg->partition);
}

int kdc_assignment_check(const kdc_assignment_t *a, const char *topic,
                         int32_t partition, uint64_t epoch) {
        if (!a || !topic)
                return KDC_ERR_INVALID;
        if (epoch == 0 || kdc_assignment_epoch(a, topic, partition) != epoch)
                return KDC_ERR_STALE;
        return 0;
}
