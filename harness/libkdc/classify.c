/* Failure classification: the default table of kdc/classify.h and the
 * service's overrides. tests/harness/libkdc/test_classify.c checks this table
 * against the one in the header, row by row. */
#include <pthread.h>
#include <stdlib.h>

#include <kdc/classify.h>
#include <kdc/error.h>

#define E(code) RD_KAFKA_RESP_ERR_##code
#define NONE KDC_CLASS_NONE
#define POISON KDC_CLASS_POISON
#define TRANSIENT KDC_CLASS_TRANSIENT
#define MEMBERSHIP KDC_CLASS_MEMBERSHIP
#define FATAL KDC_CLASS_FATAL

static const struct {
        rd_kafka_resp_err_t err;
        kdc_class_t cls;
} defaults[] = {
    {E(NO_ERROR), NONE},
    {E(_PARTITION_EOF), NONE},

    {E(_BAD_MSG), POISON},
    {E(_BAD_COMPRESSION), POISON},
    {E(_KEY_SERIALIZATION), POISON},
    {E(_VALUE_SERIALIZATION), POISON},
    {E(_KEY_DESERIALIZATION), POISON},
    {E(_VALUE_DESERIALIZATION), POISON},
    {E(INVALID_MSG), POISON},
    {E(INVALID_MSG_SIZE), POISON},
    {E(MSG_SIZE_TOO_LARGE), POISON},
    {E(RECORD_LIST_TOO_LARGE), POISON},
    {E(INVALID_TIMESTAMP), POISON},
    {E(UNSUPPORTED_FOR_MESSAGE_FORMAT), POISON},
    {E(INVALID_RECORD), POISON},

    {E(_TRANSPORT), TRANSIENT},
    {E(_RESOLVE), TRANSIENT},
    {E(_MSG_TIMED_OUT), TRANSIENT},
    {E(_TIMED_OUT), TRANSIENT},
    {E(_ALL_BROKERS_DOWN), TRANSIENT},
    {E(_QUEUE_FULL), TRANSIENT},
    {E(_TIMED_OUT_QUEUE), TRANSIENT},
    {E(_WAIT_COORD), TRANSIENT},
    {E(_ISR_INSUFF), TRANSIENT},
    {E(_NODE_UPDATE), TRANSIENT},
    {E(_UNKNOWN_TOPIC), TRANSIENT},
    {E(_UNKNOWN_PARTITION), TRANSIENT},
    {E(_IN_PROGRESS), TRANSIENT},
    {E(_PREV_IN_PROGRESS), TRANSIENT},
    {E(_RETRY), TRANSIENT},
    {E(_PURGE_QUEUE), TRANSIENT},
    {E(_PURGE_INFLIGHT), TRANSIENT},
    {E(UNKNOWN_TOPIC_OR_PART), TRANSIENT},
    {E(LEADER_NOT_AVAILABLE), TRANSIENT},
    {E(NOT_LEADER_FOR_PARTITION), TRANSIENT},
    {E(REQUEST_TIMED_OUT), TRANSIENT},
    {E(BROKER_NOT_AVAILABLE), TRANSIENT},
    {E(REPLICA_NOT_AVAILABLE), TRANSIENT},
    {E(NETWORK_EXCEPTION), TRANSIENT},
    {E(COORDINATOR_LOAD_IN_PROGRESS), TRANSIENT},
    {E(COORDINATOR_NOT_AVAILABLE), TRANSIENT},
    {E(NOT_COORDINATOR), TRANSIENT},
    {E(NOT_ENOUGH_REPLICAS), TRANSIENT},
    {E(NOT_ENOUGH_REPLICAS_AFTER_APPEND), TRANSIENT},
    {E(CONCURRENT_TRANSACTIONS), TRANSIENT},
    {E(KAFKA_STORAGE_ERROR), TRANSIENT},
    {E(FENCED_LEADER_EPOCH), TRANSIENT},
    {E(UNKNOWN_LEADER_EPOCH), TRANSIENT},
    {E(OFFSET_NOT_AVAILABLE), TRANSIENT},
    {E(PREFERRED_LEADER_NOT_AVAILABLE), TRANSIENT},
    {E(ELIGIBLE_LEADERS_NOT_AVAILABLE), TRANSIENT},
    {E(UNSTABLE_OFFSET_COMMIT), TRANSIENT},
    {E(THROTTLING_QUOTA_EXCEEDED), TRANSIENT},

    {E(ILLEGAL_GENERATION), MEMBERSHIP},
    {E(UNKNOWN_MEMBER_ID), MEMBERSHIP},
    {E(REBALANCE_IN_PROGRESS), MEMBERSHIP},
    {E(FENCED_INSTANCE_ID), MEMBERSHIP},
    {E(MEMBER_ID_REQUIRED), MEMBERSHIP},
    {E(_MAX_POLL_EXCEEDED), MEMBERSHIP},
    {E(_ASSIGNMENT_LOST), MEMBERSHIP},

    {E(_FATAL), FATAL},
    {E(_FENCED), FATAL},
    {E(_DESTROY), FATAL},
    {E(_CRIT_SYS_RESOURCE), FATAL},
    {E(_INVALID_ARG), FATAL},
    {E(_NOT_CONFIGURED), FATAL},
    {E(_NOT_IMPLEMENTED), FATAL},
    {E(_UNSUPPORTED_FEATURE), FATAL},
    {E(_STATE), FATAL},
    {E(_SSL), FATAL},
    {E(_AUTHENTICATION), FATAL},
    {E(_INCONSISTENT), FATAL},
    {E(_GAPLESS_GUARANTEE), FATAL},
    {E(OFFSET_METADATA_TOO_LARGE), FATAL},
    {E(TOPIC_EXCEPTION), FATAL},
    {E(INVALID_REQUIRED_ACKS), FATAL},
    {E(INCONSISTENT_GROUP_PROTOCOL), FATAL},
    {E(INVALID_GROUP_ID), FATAL},
    {E(INVALID_SESSION_TIMEOUT), FATAL},
    {E(INVALID_COMMIT_OFFSET_SIZE), FATAL},
    {E(TOPIC_AUTHORIZATION_FAILED), FATAL},
    {E(GROUP_AUTHORIZATION_FAILED), FATAL},
    {E(CLUSTER_AUTHORIZATION_FAILED), FATAL},
    {E(UNSUPPORTED_SASL_MECHANISM), FATAL},
    {E(ILLEGAL_SASL_STATE), FATAL},
    {E(UNSUPPORTED_VERSION), FATAL},
    {E(INVALID_CONFIG), FATAL},
    {E(INVALID_REQUEST), FATAL},
    {E(POLICY_VIOLATION), FATAL},
    {E(OUT_OF_ORDER_SEQUENCE_NUMBER), FATAL},
    {E(INVALID_PRODUCER_EPOCH), FATAL},
    {E(INVALID_TXN_STATE), FATAL},
    {E(INVALID_PRODUCER_ID_MAPPING), FATAL},
    {E(TRANSACTION_COORDINATOR_FENCED), FATAL},
    {E(TRANSACTIONAL_ID_AUTHORIZATION_FAILED), FATAL},
    {E(SECURITY_DISABLED), FATAL},
    {E(SASL_AUTHENTICATION_FAILED), FATAL},
    {E(UNSUPPORTED_COMPRESSION_TYPE), FATAL},
    {E(GROUP_MAX_SIZE_REACHED), FATAL},
    {E(PRODUCER_FENCED), FATAL},
};

/* Unknown codes: retrying never breaks the contract (nothing commits). */
#define DEFAULT_CLASS KDC_CLASS_TRANSIENT

struct override {
        int code;
        kdc_class_t cls;
};

struct overrides {
        struct override *v;
        size_t n, cap;
};

struct kdc_classifier_s {
        pthread_mutex_t lock; /* guards both lists */
        struct overrides rdkafka;
        struct overrides app;
};

static int default_of(rd_kafka_resp_err_t err, kdc_class_t *clsp) {
        for (size_t i = 0; i < sizeof(defaults) / sizeof(defaults[0]); i++)
                if (defaults[i].err == err) {
                        *clsp = defaults[i].cls;
                        return 1;
                }
        return 0;
}

static int valid_class(kdc_class_t cls) {
        return cls >= KDC_CLASS_NONE && cls <= KDC_CLASS_FATAL;
}

int kdc_classifier_new(kdc_classifier_t **cp) {
        kdc_classifier_t *c;

        if (!cp)
                return KDC_ERR_INVALID;
        *cp = NULL;
        c = calloc(1, sizeof(*c));
        if (!c)
                return KDC_ERR_NOMEM;
        if (pthread_mutex_init(&c->lock, NULL) != 0) {
                free(c);
                return KDC_ERR_NOMEM;
        }
        *cp = c;
        return 0;
}

void kdc_classifier_destroy(kdc_classifier_t *c) {
        if (!c)
                return;
        free(c->rdkafka.v);
        free(c->app.v);
        pthread_mutex_destroy(&c->lock);
        free(c);
}

static int set(kdc_classifier_t *c, struct overrides *o, int code,
               kdc_class_t cls) {
        int r = 0;

        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < o->n; i++)
                if (o->v[i].code == code) {
                        o->v[i].cls = cls;
                        goto out;
                }
        if (o->n == o->cap) {
                size_t cap = o->cap ? o->cap * 2 : 8;
                struct override *v = realloc(o->v, cap * sizeof(*v));

                if (!v) {
                        r = KDC_ERR_NOMEM;
                        goto out;
                }
                o->v = v;
                o->cap = cap;
        }
        o->v[o->n].code = code;
        o->v[o->n].cls = cls;
        o->n++;
out:
        pthread_mutex_unlock(&c->lock);
        return r;
}

/* 1 and *clsp if the classifier has an override for code. */
static int get(const kdc_classifier_t *cc, const struct overrides *o,
               int code, kdc_class_t *clsp) {
        kdc_classifier_t *c = (kdc_classifier_t *)cc; /* the mutex only */
        int found = 0;

        pthread_mutex_lock(&c->lock);
        for (size_t i = 0; i < o->n; i++)
                if (o->v[i].code == code) {
                        *clsp = o->v[i].cls;
                        found = 1;
                        break;
                }
        pthread_mutex_unlock(&c->lock);
        return found;
}

int kdc_classifier_set(kdc_classifier_t *c, rd_kafka_resp_err_t err,
                       kdc_class_t cls) {
        if (!c || !valid_class(cls))
                return KDC_ERR_INVALID;
        return set(c, &c->rdkafka, (int)err, cls);
}

int kdc_classifier_set_app(kdc_classifier_t *c, int code, kdc_class_t cls) {
        if (!c || !valid_class(cls))
                return KDC_ERR_INVALID;
        return set(c, &c->app, code, cls);
}

kdc_class_t kdc_classify(const kdc_classifier_t *c, rd_kafka_resp_err_t err) {
        kdc_class_t cls;

        if (c && get(c, &c->rdkafka, (int)err, &cls))
                return cls;
        if (default_of(err, &cls))
                return cls;
        return DEFAULT_CLASS;
}

kdc_class_t kdc_classify_error(const kdc_classifier_t *c,
                               const rd_kafka_error_t *error) {
        rd_kafka_resp_err_t err;
        kdc_class_t cls;

        if (!error)
                return KDC_CLASS_NONE;
        if (rd_kafka_error_is_fatal(error))
                return KDC_CLASS_FATAL;
        err = rd_kafka_error_code(error);
        if (c && get(c, &c->rdkafka, (int)err, &cls))
                return cls;
        if (default_of(err, &cls) && cls == KDC_CLASS_MEMBERSHIP)
                return cls;
        if (rd_kafka_error_txn_requires_abort(error) ||
            rd_kafka_error_is_retriable(error))
                return KDC_CLASS_TRANSIENT;
        return kdc_classify(NULL, err);
}

kdc_class_t kdc_classify_app(const kdc_classifier_t *c, int code) {
        kdc_class_t cls;

        if (c && get(c, &c->app, code, &cls))
                return cls;
        return DEFAULT_CLASS;
}

const char *kdc_class_name(kdc_class_t cls) {
        switch (cls) {
        case KDC_CLASS_NONE:
                return "none";
        case KDC_CLASS_POISON:
                return "poison";
        case KDC_CLASS_TRANSIENT:
                return "transient";
        case KDC_CLASS_MEMBERSHIP:
                return "membership";
        case KDC_CLASS_FATAL:
                return "fatal";
        }
        return "unknown";
}
