/*
 * What kdc-lint knows about librdkafka's C and C++ API and libkdc's helpers:
 * one table, looked up by the qualified callee name of a call.
 */
#ifndef KDC_API_H
#define KDC_API_H

#include "model.h"

enum {
    KDC_API_PRODUCE = 1u << 0,       /* enqueues a message for delivery */
    KDC_API_COMMIT = 1u << 1,        /* commits consumer offsets */
    KDC_API_STORE = 1u << 2,         /* stores offsets for a later (auto) commit */
    KDC_API_SERVE_DR = 1u << 3,      /* serves delivery reports (poll, flush) */
    KDC_API_FLUSH = 1u << 4,         /* rd_kafka_flush */
    KDC_API_CONF_NEW = 1u << 5,      /* creates a global configuration object */
    KDC_API_CONF_DUP = 1u << 6,      /* copies a configuration (keeps its callbacks) */
    KDC_API_CONF_SET = 1u << 7,      /* sets a property: key arg, value arg */
    KDC_API_DR_REGISTER = 1u << 8,   /* registers a delivery-report callback */
    KDC_API_EVENTS_SET = 1u << 9,    /* rd_kafka_conf_set_events(conf, flags) */
    KDC_API_CLIENT_NEW = 1u << 10,   /* creates a client handle from a conf */
    KDC_API_TOPIC_NEW = 1u << 11,    /* creates a topic handle: (handle, name, tconf) */
    KDC_API_CONFIRM = 1u << 12,      /* waits for delivery reports and reports their outcome */
    KDC_API_CONF_LINK = 1u << 13,    /* attaches a topic configuration (value) to a conf */
    KDC_API_SUBSCRIBE = 1u << 14,    /* subscribes a consumer (handle) to a topic list (list) */
    KDC_API_LIST_ADD = 1u << 15,     /* adds a topic (topic) to a partition list (list) */
    KDC_API_CONSUME = 1u << 16,      /* hands a consumed message to the application */
    KDC_API_TXN = 1u << 17,          /* a transactional step returning rd_kafka_error_t * */
    KDC_API_TXN_ABORT = 1u << 18,    /* aborts the transaction */
    KDC_API_OUTQ = 1u << 19,         /* rd_kafka_outq_len: messages not yet delivered */
    KDC_API_CLOSE = 1u << 20,        /* closes a consumer (waits for its commits) */
    KDC_API_DESTROY = 1u << 21,      /* destroys a client handle */
    KDC_API_REBALANCE_CB = 1u << 22, /* registers a rebalance callback (value) on a conf */
    KDC_API_MARK_DONE = 1u << 23     /* marks a message's effect done in `list`, whose
                                      * commit (COMMIT with that list) then covers it */
};

/* PRODUCE: always to a dead-letter queue, whatever its arguments (kdc_dlq_produce). */
enum { KDC_API_DLQ = 1u << 24 };

/* rd_kafka_purge: discards queued (and in-flight) messages; their delivery reports say
 * __PURGE_QUEUE / __PURGE_INFLIGHT, so a flush after it confirms nothing (a teardown). */
enum { KDC_API_PURGE = 1u << 25 };

#define KDC_ARG_NONE (-1)
#define KDC_ARG_RECV (-2) /* the C++ object the method is called on */

typedef struct kdc_api {
    const char *name;
    unsigned roles;
    int handle;       /* rd_kafka_t / RdKafka::Handle argument */
    int topic;        /* rd_kafka_topic_t argument or topic-name argument */
    int conf;         /* configuration argument */
    int list;         /* offsets list argument (COMMIT/STORE) */
    int opaque;       /* per-message opaque argument (PRODUCE) */
    int key, value;   /* CONF_SET: property name and value; DR_REGISTER: value = callback */
    int client_type;  /* CLIENT_NEW: >= 0 argument holding the type; -2 producer; -3 consumer */
    unsigned varargs : 4; /* PRODUCE: RD_KAFKA_V_* pairs from this argument on (0: none) */
} kdc_api_t;

#define KDC_CLIENT_PRODUCER_FIXED (-2)
#define KDC_CLIENT_CONSUMER_FIXED (-3)

/* The table entry for a call, or NULL when the callee is not a known API or the
 * call operates on a NULL handle (`rd_kafka_flush(NULL, 0)`, `rd_kafka_produce(NULL,
 * ..)`: a call on no client does nothing a rule counts). */
const kdc_api_t *kdc_api_lookup(const kdc_expr_t *call);

/* A call of the program with a table entry (kdc_api_lookup's answer). */
typedef struct kdc_api_call {
    const kdc_func_t *f;
    const kdc_expr_t *call;
    const kdc_api_t *api;
} kdc_api_call_t;

/* Every call of p that has a table entry, in program order (function index, then call
 * index), *n of them: what a loop over the whole program looking for one kind of API call
 * (a flush, a subscribe) walks instead of every call. Built on the first use after
 * kdc_api_use_contracts(p); owned here, valid until the next kdc_api_use_contracts. */
const kdc_api_call_t *kdc_api_calls(const kdc_program_t *p, size_t *n);

/* The argument at a table position (KDC_ARG_RECV → the C++ object), or NULL. */
const kdc_expr_t *kdc_api_arg(const kdc_expr_t *call, int pos);

/* Is the callee part of librdkafka (rd_kafka_* or RdKafka::*)? */
int kdc_api_is_librdkafka(const kdc_expr_t *call);

/* The callee's name as a finding writes it: a C++ method of librdkafka's without the
 * RdKafka:: namespace ("KafkaConsumer::commitSync"); any other name as it is. */
const char *kdc_api_display_name(const kdc_expr_t *call);

/* The first RD_KAFKA_V_* argument of a call whose api->varargs is set: 1 for
 * rd_kafka_producev(rk, ..), 4 for kdc_tracker_producev(t, rk, timeout, errp, ..). */
unsigned kdc_api_varargs_start(const kdc_expr_t *call);

/* rd_kafka_producev() argument following an RD_KAFKA_V_<vtype> marker, or NULL.
 * vtype is the rd_kafka_vtype_t value (RD_KAFKA_VTYPE_TOPIC = 1, RKT = 2, OPAQUE = 6). */
const kdc_expr_t *kdc_api_producev_arg(const kdc_expr_t *call, long long vtype);

/* The entry a declared contract makes (libkdc's KDC_CONTRACT, kdc/export.h:
 * "MEANING [handle=N] [topic=N] [list=N]") for the function `name` (kept, not
 * copied). Returns 0, or -1 when the meaning is not one export.h lists or an
 * argument is malformed. A meaning kdc-lint has no role for (create, query, ...)
 * makes an entry with roles 0. */
int kdc_api_from_contract(const char *name, const char *contract, kdc_api_t *out);

/* The contracts the program's declarations make, for kdc_api_lookup (which then
 * prefers them to the table's entries of the same name): set before the analysis
 * of a program, replacing those of the one before. Malformed ones are ignored. */
void kdc_api_use_contracts(const kdc_program_t *p);

/* 0 when the table is sorted (bsearch needs it), -1 otherwise; run by the tests. */
int kdc_api_self_check(void);

/* Does a call never return (exit, abort, longjmp, ...)? */
int kdc_api_is_noreturn_name(const char *name);

#endif
