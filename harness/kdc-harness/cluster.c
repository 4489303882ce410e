/* The mock cluster of one run: three brokers on loopback, the input, output
 * and DLQ topics with their leaders pinned to one broker per role, and the
 * faults applied to it (rdkafka_mock.h of librdkafka 2.0.2). With
 * options.bootstrap_servers, an existing cluster instead (remote.c). */
#include <string.h>
#include <time.h>

#include "internal.h"

static void quiet_log(const rd_kafka_t *rk, int level, const char *fac, const char *buf) {
        (void)rk;
        (void)level;
        (void)fac;
        (void)buf;
}

static void quiet_error(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
        (void)rk;
        (void)err;
        (void)reason;
        (void)opaque;
}

static int set(rd_kafka_conf_t *conf, const char *name, const char *value) {
        char err[256];

        return rd_kafka_conf_set(conf, name, value, err, sizeof err) == RD_KAFKA_CONF_OK ? 0 : -1;
}

rd_kafka_conf_t *tk_cluster_conf(const struct tk_cluster *c) {
        rd_kafka_conf_t *conf = rd_kafka_conf_new();

        /* Faults make librdkafka log connection errors: expected here. */
        rd_kafka_conf_set_log_cb(conf, quiet_log);
        rd_kafka_conf_set_error_cb(conf, quiet_error);
        if (c && c->bootstraps)
                set(conf, "bootstrap.servers", c->bootstraps);
        set(conf, "reconnect.backoff.ms", "10");
        set(conf, "reconnect.backoff.max.ms", "200");
        return conf;
}

static void set_leaders(struct tk_cluster *c, enum tk_topic_role role, int broker) {
        for (int p = 0; p < c->partitions[role]; p++)
                rd_kafka_mock_partition_set_leader(c->mcluster, c->topics[role], p, broker);
}

static void *waker_main(void *arg) {
        struct tk_cluster *c = arg;

        while (!__atomic_load_n(&c->waker_stop, __ATOMIC_ACQUIRE)) {
                const struct rd_kafka_metadata *md = NULL;
                struct timespec ts = {0, 20 * 1000 * 1000};

                if (rd_kafka_metadata(c->waker, 0, NULL, &md, 200) == RD_KAFKA_RESP_ERR_NO_ERROR)
                        rd_kafka_metadata_destroy(md);
                nanosleep(&ts, NULL);
        }
        return NULL;
}

static int waker_start(struct tk_cluster *c) {
        char err[256];

        c->waker = rd_kafka_new(RD_KAFKA_PRODUCER, tk_cluster_conf(c), err, sizeof err);
        if (!c->waker)
                return -1;
        if (pthread_create(&c->waker_thread, NULL, waker_main, c) != 0) {
                rd_kafka_destroy(c->waker);
                c->waker = NULL;
                return -1;
        }
        return 0;
}

int tk_cluster_start(struct tk_cluster *c, const kdc_testkit_options_t *o) {
        static const int leader[3] = {TK_BROKER_INPUT, TK_BROKER_OUTPUT, TK_BROKER_DLQ};
        char err[256];

        memset(c, 0, sizeof *c);
        c->topics[TK_INPUT] = o->input_topic;
        c->topics[TK_OUTPUT] = o->output_topic;
        c->topics[TK_DLQ] = o->dlq_topic;
        c->partitions[TK_INPUT] = o->partitions;
        c->partitions[TK_OUTPUT] = o->partitions;
        c->partitions[TK_DLQ] = 1;
        c->group = o->group;
        c->log = o->log;
        if (o->bootstrap_servers) {
                int rc = tk_remote_start(c, o);
                if (rc != 0)
                        tk_remote_stop(c);
                return rc;
        }

        c->host = rd_kafka_new(RD_KAFKA_PRODUCER, tk_cluster_conf(NULL), err, sizeof err);
        if (!c->host)
                return KDC_ERR_NOMEM;
        c->mcluster = rd_kafka_mock_cluster_new(c->host, TK_BROKERS);
        if (!c->mcluster) {
                rd_kafka_destroy(c->host);
                c->host = NULL;
                return KDC_ERR_NOMEM;
        }
        c->bootstraps = rd_kafka_mock_cluster_bootstraps(c->mcluster);
        if (waker_start(c) != 0) {
                tk_cluster_stop(c);
                return KDC_ERR_NOMEM;
        }
        for (int r = 0; r < 3; r++) {
                if (rd_kafka_mock_topic_create(c->mcluster, c->topics[r], c->partitions[r],
                                               TK_BROKERS) != RD_KAFKA_RESP_ERR_NO_ERROR) {
                        tk_cluster_stop(c);
                        return KDC_ERR_INVALID;
                }
                set_leaders(c, (enum tk_topic_role)r, leader[r]);
        }
        rd_kafka_mock_coordinator_set(c->mcluster, "group", c->group, TK_BROKER_INPUT);
        return 0;
}

void tk_cluster_stop(struct tk_cluster *c) {
        if (c->remote) {
                tk_remote_stop(c);
                c->bootstraps = NULL;
                return;
        }
        if (c->mcluster)
                rd_kafka_mock_cluster_destroy(c->mcluster); /* the waker helps here too */
        if (c->waker) {
                __atomic_store_n(&c->waker_stop, 1, __ATOMIC_RELEASE);
                pthread_join(c->waker_thread, NULL);
                rd_kafka_destroy(c->waker);
                c->waker = NULL;
        }
        if (c->host)
                rd_kafka_destroy(c->host);
        c->mcluster = NULL;
        c->host = NULL;
        c->bootstraps = NULL;
}

void tk_cluster_apply(struct tk_cluster *c, const struct tk_step *st) {
        if (!c->mcluster)
                return; /* an existing cluster: such scenarios are refused (run.c) */
        switch (st->action) {
        case TK_BROKER_DOWN:
                rd_kafka_mock_broker_set_down(c->mcluster, st->broker);
                break;
        case TK_BROKER_UP:
                rd_kafka_mock_broker_set_up(c->mcluster, st->broker);
                break;
        case TK_PUSH_ERRORS:
                /* One call per error: the call is variadic in the count. */
                for (int i = 0; i < st->count; i++)
                        rd_kafka_mock_broker_push_request_error_rtts(
                            c->mcluster, st->broker, st->apikey, 1, st->err, st->rtt_ms);
                break;
        case TK_SET_COORDINATOR:
                rd_kafka_mock_coordinator_set(c->mcluster, "group", c->group, st->broker);
                break;
        case TK_SET_LEADERS:
                set_leaders(c, st->role, st->broker);
                break;
        default:
                break; /* instance actions: service.c */
        }
}

void tk_cluster_heal(struct tk_cluster *c) {
        if (!c->mcluster)
                return;
        rd_kafka_mock_broker_set_up(c->mcluster, -1);
}
