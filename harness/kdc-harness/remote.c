/* A run on an existing cluster (kdc_testkit_options_t.bootstrap_servers):
 * topics and a group of the run's own, with unique names (the given names,
 * suffixed with this process's id, the time and a random number), created
 * with the Admin API (rd_kafka_CreateTopics()) and deleted at the end
 * (rd_kafka_DeleteTopics(), rd_kafka_DeleteGroups()). No broker is
 * controlled: the scenarios that need it are refused before (run.c).
 *
 * librdkafka 2.0.2's mock cluster (kdc-harness mock-cluster) answers none of
 * CreateTopics, DeleteTopics and DeleteGroups (rdkafka_mock_handlers.c has no
 * handler), and librdkafka 2.0.2 cannot be asked safely: its admin client waits
 * for the mock's controller (id 0, a broker that does not exist) until the
 * request times out, and rd_kafka_DeleteGroups() to a broker without
 * DeleteGroups aborts the process (an assertion in rd_kafka_enq_once). So the
 * cluster is asked first which requests it supports (an ApiVersions request
 * on a socket of our own: librdkafka keeps the answer to itself), and a
 * request it lacks is not sent: the topics are then created by a Metadata
 * request that allows auto-creation (the cluster's default partition count, 4
 * on the mock), and a line says what could not be deleted. */
#include <arpa/inet.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"

#define TK_ADMIN_TIMEOUT_MS 30000
#define TK_METADATA_WAIT_MS 30000

static void note(const struct tk_cluster *c, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* One line on the run's log. */
static void note(const struct tk_cluster *c, const char *fmt, ...) {
        va_list ap;

        if (!c->log)
                return;
        fputs("kdc-harness: cluster: ", c->log);
        va_start(ap, fmt);
        vfprintf(c->log, fmt, ap);
        va_end(ap);
        fputc('\n', c->log);
        fflush(c->log);
}

/* Kafka protocol ApiKeys of the admin requests. */
#define TK_APIKEY_API_VERSIONS 18
#define TK_APIKEY_CREATE_TOPICS 19
#define TK_APIKEY_DELETE_TOPICS 20
#define TK_APIKEY_DELETE_GROUPS 42

static int io_all(int fd, void *buf, size_t n, int writing) {
        for (size_t done = 0; done < n;) {
                ssize_t k = writing ? send(fd, (char *)buf + done, n - done, MSG_NOSIGNAL)
                                    : recv(fd, (char *)buf + done, n - done, 0);
                if (k <= 0)
                        return -1;
                done += (size_t)k;
        }
        return 0;
}

/* ApiVersions v0 (every broker since Kafka 0.10 answers it) to one
 * "host:port": sets c->api[] from its answer. 0, or -1. */
static int api_versions_from(struct tk_cluster *c, const char *server, size_t len) {
        static const unsigned char request[] = {0,   0,
                                                0,   21, /* size */
                                                0,   TK_APIKEY_API_VERSIONS,
                                                0,   0, /* ApiKey, ApiVersion 0 */
                                                0,   0,
                                                0,   1, /* CorrelationId */
                                                0,   11,
                                                'k', 'd',
                                                'c', '-',
                                                'h', 'a',
                                                'r', 'n',
                                                'e', 's',
                                                's'};
        char host[256], *colon;
        struct addrinfo hints = {.ai_socktype = SOCK_STREAM}, *ai = NULL;
        struct timeval tv = {5, 0};
        unsigned char head[14], entry[6];
        int fd = -1, rc = -1;

        if (len >= sizeof host)
                return -1;
        memcpy(host, server, len);
        host[len] = '\0';
        if (!(colon = strrchr(host, ':')))
                return -1;
        *colon = '\0';
        if (getaddrinfo(host, colon + 1, &hints, &ai) != 0)
                return -1;
        for (struct addrinfo *a = ai; a && fd < 0; a = a->ai_next) {
                fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
                if (fd < 0)
                        continue;
                setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
                setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
                if (connect(fd, a->ai_addr, a->ai_addrlen) != 0) {
                        close(fd);
                        fd = -1;
                }
        }
        freeaddrinfo(ai);
        if (fd < 0)
                return -1;
        /* size, CorrelationId, ErrorCode, [ApiKey MinVersion MaxVersion] */
        if (io_all(fd, (void *)request, sizeof request, 1) == 0 &&
            io_all(fd, head, sizeof head, 0) == 0) {
                uint32_t n;
                memcpy(&n, head + 10, 4);
                n = ntohl(n);
                rc = n < 10000 ? 0 : -1;
                for (uint32_t i = 0; rc == 0 && i < n; i++) {
                        uint16_t key;
                        if (io_all(fd, entry, sizeof entry, 0) != 0) {
                                rc = -1;
                                break;
                        }
                        memcpy(&key, entry, 2);
                        key = ntohs(key);
                        if (key < sizeof c->api / sizeof c->api[0])
                                c->api[key] = 1;
                }
        }
        close(fd);
        return rc;
}

/* Which requests the cluster supports (c->api[]), asked of the first
 * bootstrap server that answers: 0, or -1 when none did (down, not Kafka, or
 * not plaintext: the run cannot use it either). */
static int api_versions(struct tk_cluster *c) {
        for (const char *s = c->bootstraps; *s;) {
                size_t len = strcspn(s, ",");
                const char *scheme = strstr(s, "://");
                size_t skip = scheme && (size_t)(scheme - s) < len ? (size_t)(scheme - s) + 3 : 0;
                if (len > skip && api_versions_from(c, s + skip, len - skip) == 0)
                        return 0;
                s += len + (s[len] == ',');
        }
        return -1;
}

static int unique_names(struct tk_cluster *c, const kdc_testkit_options_t *o) {
        const char *base[4] = {o->input_topic, o->output_topic, o->dlq_topic, o->group};
        char *names[4] = {c->names.input, c->names.output, c->names.dlq, c->names.group};
        uint32_t rnd = 0;
        struct timespec ts;
        char suffix[64];

        clock_gettime(CLOCK_REALTIME, &ts);
        if (getrandom(&rnd, sizeof rnd, GRND_NONBLOCK) != (ssize_t)sizeof rnd)
                rnd = (uint32_t)ts.tv_nsec ^ ((uint32_t)getpid() << 16);
        snprintf(suffix, sizeof suffix, "-%ld-%" PRId64 "-%08" PRIx32, (long)getpid(),
                 (int64_t)ts.tv_sec, rnd);
        for (int i = 0; i < 4; i++) {
                int n = snprintf(names[i], TK_NAME_MAX, "%s%s", base[i], suffix);
                /* A topic name has at most 249 characters. */
                if (n < 0 || n >= TK_NAME_MAX || (i < 3 && n > 249))
                        return KDC_ERR_INVALID;
        }
        for (int r = 0; r < 3; r++)
                c->topics[r] = names[r];
        c->group = c->names.group;
        return 0;
}

/* rd_kafka_CreateTopics(): 0, KDC_ERR_NOENT when the cluster does not
 * support it, KDC_ERR_INVALID for another error (said on the log). */
static int create_topics(struct tk_cluster *c) {
        rd_kafka_NewTopic_t *nt[3] = {NULL, NULL, NULL};
        rd_kafka_AdminOptions_t *ao =
            rd_kafka_AdminOptions_new(c->admin, RD_KAFKA_ADMIN_OP_CREATETOPICS);
        rd_kafka_queue_t *q = rd_kafka_queue_new(c->admin);
        rd_kafka_event_t *ev;
        char err[256];
        int rc = 0;

        rd_kafka_AdminOptions_set_request_timeout(ao, TK_ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_AdminOptions_set_operation_timeout(ao, TK_ADMIN_TIMEOUT_MS, err, sizeof err);
        for (int r = 0; r < 3; r++)
                /* replication factor -1: the cluster's default */
                if (!(nt[r] = rd_kafka_NewTopic_new(c->topics[r], c->partitions[r], -1, err,
                                                    sizeof err))) {
                        note(c, "CreateTopics: %s: %s", c->topics[r], err);
                        rc = KDC_ERR_INVALID;
                }
        ev = NULL;
        if (rc == 0) {
                rd_kafka_CreateTopics(c->admin, nt, 3, ao, q);
                ev = rd_kafka_queue_poll(q, TK_ADMIN_TIMEOUT_MS + 5000);
        }
        if (rc != 0) {
                /* said above */
        } else if (!ev) {
                note(c, "CreateTopics: no answer in %d s", TK_ADMIN_TIMEOUT_MS / 1000 + 5);
                rc = KDC_ERR_INVALID;
        } else if (rd_kafka_event_error(ev)) {
                rd_kafka_resp_err_t e = rd_kafka_event_error(ev);
                if (e == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE) {
                        rc = KDC_ERR_NOENT;
                } else {
                        note(c, "CreateTopics: %s", rd_kafka_event_error_string(ev));
                        rc = KDC_ERR_INVALID;
                }
        } else {
                size_t n = 0;
                const rd_kafka_topic_result_t **res =
                    rd_kafka_CreateTopics_result_topics(rd_kafka_event_CreateTopics_result(ev), &n);
                for (size_t i = 0; i < n; i++) {
                        const char *name = rd_kafka_topic_result_name(res[i]);
                        rd_kafka_resp_err_t e = rd_kafka_topic_result_error(res[i]);
                        for (int r = 0; r < 3; r++)
                                if (!e && !strcmp(name, c->topics[r]))
                                        c->created[r] = 1;
                        if (e) {
                                note(c, "CreateTopics: %s: %s", name,
                                     rd_kafka_topic_result_error_string(res[i])
                                         ? rd_kafka_topic_result_error_string(res[i])
                                         : rd_kafka_err2str(e));
                                rc = KDC_ERR_INVALID;
                        }
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        for (int r = 0; r < 3; r++)
                if (nt[r])
                        rd_kafka_NewTopic_destroy(nt[r]);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_queue_destroy(q);
        return rc;
}

/* The partition count of a topic once every partition has a leader; 0 while
 * it has none (yet) or is not there. The admin handle is a producer: its
 * Metadata requests let the cluster create a topic it lacks (auto-creation,
 * where the cluster allows it). */
static int partitions_led(struct tk_cluster *c, int role) {
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_topic_t *rkt = rd_kafka_topic_new(c->admin, c->topics[role], NULL);
        int n = 0;

        if (rkt && rd_kafka_metadata(c->admin, 0, rkt, &md, 5000) == RD_KAFKA_RESP_ERR_NO_ERROR) {
                for (int t = 0; t < md->topic_cnt; t++) {
                        const rd_kafka_metadata_topic_t *mt = &md->topics[t];
                        if (strcmp(mt->topic, c->topics[role]))
                                continue;
                        n = mt->err ? 0 : mt->partition_cnt;
                        for (int p = 0; p < mt->partition_cnt; p++)
                                if (mt->partitions[p].leader < 0)
                                        n = 0;
                }
                rd_kafka_metadata_destroy(md);
        }
        if (rkt)
                rd_kafka_topic_destroy(rkt);
        return n;
}

int tk_remote_start(struct tk_cluster *c, const kdc_testkit_options_t *o) {
        static const char *const role[3] = {"input", "output", "DLQ"};
        rd_kafka_conf_t *conf;
        char err[256];
        int rc, auto_created = 0;

        c->remote = 1;
        c->bootstraps = o->bootstrap_servers;
        if ((rc = unique_names(c, o)) != 0)
                return rc;
        conf = tk_cluster_conf(c);
        c->admin = rd_kafka_new(RD_KAFKA_PRODUCER, conf, err, sizeof err);
        if (!c->admin) {
                note(c, "%s", err);
                return KDC_ERR_INVALID;
        }
        if (api_versions(c) != 0) {
                note(c, "no server of %s answered an ApiVersions request (plaintext, 5 s each)",
                     c->bootstraps);
                return KDC_ERR_TIMEOUT;
        }
        rc = c->api[TK_APIKEY_CREATE_TOPICS] ? create_topics(c) : KDC_ERR_NOENT;
        if (rc == KDC_ERR_NOENT) {
                note(c, "the cluster does not support CreateTopics (as librdkafka 2.0.2's mock "
                        "cluster): the topics are created by a Metadata request, with the "
                        "cluster's default partition count");
                auto_created = 1;
                rc = 0;
        }
        if (rc != 0)
                return rc;
        /* Until every partition of each topic has a leader (a topic just
         * created is not ready at once). */
        int64_t deadline = tk_now_ms() + TK_METADATA_WAIT_MS;
        for (int r = 0; r < 3; r++) {
                int n;
                while ((n = partitions_led(c, r)) <= 0 && tk_now_ms() < deadline) {
                        struct timespec ts = {0, 100 * 1000 * 1000};
                        nanosleep(&ts, NULL);
                }
                if (n <= 0) {
                        note(c, "the %s topic %s has no leader for every partition after %d s",
                             role[r], c->topics[r], TK_METADATA_WAIT_MS / 1000);
                        return KDC_ERR_TIMEOUT;
                }
                if (auto_created)
                        c->created[r] = 1;
                if (n != c->partitions[r]) {
                        note(c, "the %s topic %s has %d partitions, not %d: the run uses %d",
                             role[r], c->topics[r], n, c->partitions[r], n);
                        c->partitions[r] = n;
                }
        }
        note(c, "%s: topics %s, %s, %s and group %s, created for this run", c->bootstraps,
             c->topics[TK_INPUT], c->topics[TK_OUTPUT], c->topics[TK_DLQ], c->group);
        return 0;
}

/* Runs an admin request and gives its event (NULL: no answer, said). */
static rd_kafka_event_t *admin_wait(struct tk_cluster *c, rd_kafka_queue_t *q, const char *what) {
        rd_kafka_event_t *ev = rd_kafka_queue_poll(q, TK_ADMIN_TIMEOUT_MS + 5000);

        if (!ev)
                note(c, "%s: no answer in %d s", what, TK_ADMIN_TIMEOUT_MS / 1000 + 5);
        return ev;
}

static void delete_topics(struct tk_cluster *c) {
        rd_kafka_DeleteTopic_t *dt[3];
        rd_kafka_AdminOptions_t *ao =
            rd_kafka_AdminOptions_new(c->admin, RD_KAFKA_ADMIN_OP_DELETETOPICS);
        rd_kafka_queue_t *q = rd_kafka_queue_new(c->admin);
        rd_kafka_event_t *ev;
        char err[256], names[3 * TK_NAME_MAX] = "";
        size_t n = 0;

        for (int r = 0; r < 3; r++)
                if (c->created[r]) {
                        dt[n++] = rd_kafka_DeleteTopic_new(c->topics[r]);
                        snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                                 *names ? ", " : "", c->topics[r]);
                }
        if (!n)
                goto out;
        if (!c->api[TK_APIKEY_DELETE_TOPICS]) {
                note(c,
                     "the cluster does not support DeleteTopics (as librdkafka 2.0.2's mock "
                     "cluster): topics %s are left on it",
                     names);
                rd_kafka_DeleteTopic_destroy_array(dt, n);
                goto out;
        }
        rd_kafka_AdminOptions_set_request_timeout(ao, TK_ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_AdminOptions_set_operation_timeout(ao, TK_ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_DeleteTopics(c->admin, dt, n, ao, q);
        if (!(ev = admin_wait(c, q, "DeleteTopics"))) {
                note(c, "topics %s may be left on the cluster", names);
        } else if (rd_kafka_event_error(ev)) {
                note(c, "DeleteTopics: %s: topics %s are left on the cluster",
                     rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE
                         ? "not supported by the cluster (as librdkafka 2.0.2's mock cluster)"
                         : rd_kafka_event_error_string(ev),
                     names);
        } else {
                size_t k = 0;
                const rd_kafka_topic_result_t **res =
                    rd_kafka_DeleteTopics_result_topics(rd_kafka_event_DeleteTopics_result(ev), &k);
                for (size_t i = 0; i < k; i++)
                        if (rd_kafka_topic_result_error(res[i]))
                                note(c, "DeleteTopics: %s: %s: it is left on the cluster",
                                     rd_kafka_topic_result_name(res[i]),
                                     rd_kafka_err2str(rd_kafka_topic_result_error(res[i])));
        }
        if (ev)
                rd_kafka_event_destroy(ev);
        rd_kafka_DeleteTopic_destroy_array(dt, n);
out:
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_queue_destroy(q);
}

static void delete_group(struct tk_cluster *c) {
        rd_kafka_DeleteGroup_t *dg = rd_kafka_DeleteGroup_new(c->group);
        rd_kafka_AdminOptions_t *ao =
            rd_kafka_AdminOptions_new(c->admin, RD_KAFKA_ADMIN_OP_DELETEGROUPS);
        rd_kafka_queue_t *q = rd_kafka_queue_new(c->admin);
        rd_kafka_event_t *ev;
        char err[256];

        if (!c->api[TK_APIKEY_DELETE_GROUPS]) {
                /* Not sent: librdkafka 2.0.2 aborts on the answer (above). */
                note(c,
                     "the cluster does not support DeleteGroups (as librdkafka 2.0.2's mock "
                     "cluster): group %s is left on it",
                     c->group);
                goto out;
        }
        rd_kafka_AdminOptions_set_request_timeout(ao, TK_ADMIN_TIMEOUT_MS, err, sizeof err);
        rd_kafka_DeleteGroups(c->admin, &dg, 1, ao, q);
        if (!(ev = admin_wait(c, q, "DeleteGroups"))) {
                note(c, "group %s may be left on the cluster", c->group);
        } else if (rd_kafka_event_error(ev)) {
                note(c, "DeleteGroups: %s: group %s is left on the cluster",
                     rd_kafka_event_error(ev) == RD_KAFKA_RESP_ERR__UNSUPPORTED_FEATURE
                         ? "not supported by the cluster (as librdkafka 2.0.2's mock cluster)"
                         : rd_kafka_event_error_string(ev),
                     c->group);
        } else {
                size_t k = 0;
                const rd_kafka_group_result_t **res =
                    rd_kafka_DeleteGroups_result_groups(rd_kafka_event_DeleteGroups_result(ev), &k);
                for (size_t i = 0; i < k; i++) {
                        const rd_kafka_error_t *e = rd_kafka_group_result_error(res[i]);
                        /* No commit, no member ever: there is no group to delete. */
                        if (e && rd_kafka_error_code(e) != RD_KAFKA_RESP_ERR_GROUP_ID_NOT_FOUND)
                                note(c, "DeleteGroups: %s: %s: it is left on the cluster",
                                     rd_kafka_group_result_name(res[i]), rd_kafka_error_string(e));
                }
        }
        if (ev)
                rd_kafka_event_destroy(ev);
out:
        rd_kafka_DeleteGroup_destroy(dg);
        rd_kafka_AdminOptions_destroy(ao);
        rd_kafka_queue_destroy(q);
}

void tk_remote_stop(struct tk_cluster *c) {
        if (!c->admin)
                return;
        /* Every broker lists ApiVersions among its requests: without it, the
         * cluster never answered, and nothing was made there. */
        if (c->api[TK_APIKEY_API_VERSIONS]) {
                delete_topics(c);
                delete_group(c);
        }
        rd_kafka_destroy(c->admin);
        c->admin = NULL;
}
