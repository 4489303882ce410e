#include "api.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define N KDC_ARG_NONE
#define R KDC_ARG_RECV

/* Sorted by name (strcmp); kdc_api_self_check() verifies it. One entry a line, however
 * long: not reflowed. */
/* clang-format off */
static const kdc_api_t table[] = {
    /* name, roles, handle, topic, conf, list, opaque, key, value, client_type, varargs (the
     * first RD_KAFKA_V_* argument) */
    {"<delete>", KDC_API_DESTROY, 0, N, N, N, N, N, N, N, 0}, /* C++ delete of a handle */
    {"RdKafka::Conf::create", KDC_API_CONF_NEW, N, N, N, N, N, N, N, N, 0},
    {"RdKafka::Conf::set", KDC_API_CONF_SET, N, N, R, N, N, 0, 1, N, 0},
    {"RdKafka::Consumer::consume", KDC_API_CONSUME, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Consumer::create", KDC_API_CLIENT_NEW, N, N, 0, N, N, N, N,
     KDC_CLIENT_CONSUMER_FIXED, 0},
    {"RdKafka::Handle::outq_len", KDC_API_OUTQ, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Handle::poll", KDC_API_SERVE_DR, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::close", KDC_API_CLOSE, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::commitAsync", KDC_API_COMMIT, R, N, N, 0, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::commitSync", KDC_API_COMMIT, R, N, N, 0, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::consume", KDC_API_CONSUME, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::create", KDC_API_CLIENT_NEW, N, N, 0, N, N, N, N,
     KDC_CLIENT_CONSUMER_FIXED, 0},
    {"RdKafka::KafkaConsumer::offsets_store", KDC_API_STORE, R, N, N, 0, N, N, N, N, 0},
    {"RdKafka::KafkaConsumer::subscribe", KDC_API_SUBSCRIBE, R, N, N, 0, N, N, N, N, 0},
    {"RdKafka::Producer::abort_transaction", KDC_API_TXN_ABORT, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Producer::begin_transaction", KDC_API_TXN, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Producer::commit_transaction", KDC_API_TXN | KDC_API_SERVE_DR | KDC_API_FLUSH, R, N,
     N, N, N, N, N, N, 0},
    {"RdKafka::Producer::create", KDC_API_CLIENT_NEW, N, N, 0, N, N, N, N,
     KDC_CLIENT_PRODUCER_FIXED, 0},
    {"RdKafka::Producer::flush", KDC_API_SERVE_DR | KDC_API_FLUSH, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Producer::produce", KDC_API_PRODUCE, R, 0, N, N, N, N, N, N, 0},
    {"RdKafka::Producer::send_offsets_to_transaction", KDC_API_TXN, R, N, N, 0, N, N, N, N, 0},
    {"RdKafka::Queue::consume", KDC_API_CONSUME, R, N, N, N, N, N, N, N, 0},
    {"RdKafka::Topic::create", KDC_API_TOPIC_NEW, 0, 1, 2, N, N, N, N, N, 0},
    {"RdKafka::Topic::offset_store", KDC_API_STORE, N, R, N, N, N, N, N, N, 0},
    /* libkdc (harness/libkdc/include/kdc/kdc.h): what its headers declare (KDC_CONTRACT),
     * for declarations without it (a service's own prototypes); linter.libkdc_contracts
     * checks that the two agree */
    {"kdc_commit_message", KDC_API_COMMIT, 0, N, N, N, N, N, N, N, 0},
    {"kdc_commit_message_async", KDC_API_COMMIT, 0, N, N, N, N, N, N, N, 0},
    {"kdc_dlq_produce", KDC_API_PRODUCE | KDC_API_DLQ, N, N, N, N, N, N, N, N, 0},
    {"kdc_dlq_route", KDC_API_CONFIRM | KDC_API_SERVE_DR, N, N, N, N, N, N, N, N, 0},
    {"kdc_produce_confirmed", KDC_API_CONFIRM | KDC_API_SERVE_DR, 0, 1, N, N, N, N, N, N, 0},
    /* returns 0 (KDC_RETRY_COMMIT) only when the exhausted message's DLQ write is confirmed */
    {"kdc_retry_failed", KDC_API_CONFIRM | KDC_API_SERVE_DR, N, N, N, N, N, N, N, N, 0},
    {"kdc_tracker_produce", KDC_API_PRODUCE, 1, 2, N, N, N, N, N, N, 0},
    {"kdc_tracker_producev", KDC_API_PRODUCE, 1, N, N, N, N, N, N, N, 4},
    {"kdc_tracker_produceva", KDC_API_PRODUCE, 1, N, N, N, N, N, N, N, 0},
    {"kdc_tracker_wait", KDC_API_CONFIRM | KDC_API_SERVE_DR, 1, N, N, N, N, N, N, N, 0},
    {"kdc_watermark_commit", KDC_API_COMMIT, 1, N, N, 0, N, N, N, N, 0},
    {"kdc_watermark_done", KDC_API_MARK_DONE, N, N, N, 0, N, N, N, N, 0},
    {"kdc_watermark_done_message", KDC_API_MARK_DONE, N, N, N, 0, N, N, N, N, 0},
    {"rd_kafka_abort_transaction", KDC_API_TXN_ABORT, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_begin_transaction", KDC_API_TXN, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_commit", KDC_API_COMMIT, 0, N, N, 1, N, N, N, N, 0},
    {"rd_kafka_commit_message", KDC_API_COMMIT, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_commit_queue", KDC_API_COMMIT, 0, N, N, 1, N, N, N, N, 0},
    {"rd_kafka_commit_transaction", KDC_API_TXN | KDC_API_SERVE_DR | KDC_API_FLUSH, 0, N, N, N, N,
     N, N, N, 0},
    {"rd_kafka_conf_dup", KDC_API_CONF_DUP, N, N, 0, N, N, N, N, N, 0},
    {"rd_kafka_conf_dup_filter", KDC_API_CONF_DUP, N, N, 0, N, N, N, N, N, 0},
    {"rd_kafka_conf_new", KDC_API_CONF_NEW, N, N, N, N, N, N, N, N, 0},
    {"rd_kafka_conf_set", KDC_API_CONF_SET, N, N, 0, N, N, 1, 2, N, 0},
    {"rd_kafka_conf_set_default_topic_conf", KDC_API_CONF_LINK, N, N, 0, N, N, N, 1, N, 0},
    {"rd_kafka_conf_set_dr_cb", KDC_API_DR_REGISTER, N, N, 0, N, N, N, 1, N, 0},
    {"rd_kafka_conf_set_dr_msg_cb", KDC_API_DR_REGISTER, N, N, 0, N, N, N, 1, N, 0},
    {"rd_kafka_conf_set_events", KDC_API_EVENTS_SET, N, N, 0, N, N, N, 1, N, 0},
    {"rd_kafka_conf_set_rebalance_cb", KDC_API_REBALANCE_CB, N, N, 0, N, N, N, 1, N, 0},
    {"rd_kafka_consume", KDC_API_CONSUME, N, 0, N, N, N, N, N, N, 0},
    {"rd_kafka_consume_batch", KDC_API_CONSUME, N, 0, N, N, N, N, N, N, 0},
    {"rd_kafka_consume_batch_queue", KDC_API_CONSUME, N, N, N, N, N, N, N, N, 0},
    {"rd_kafka_consume_callback", KDC_API_CONSUME, N, 0, N, N, N, N, N, N, 0},
    {"rd_kafka_consume_callback_queue", KDC_API_CONSUME, N, N, N, N, N, N, N, N, 0},
    {"rd_kafka_consume_queue", KDC_API_CONSUME, N, N, N, N, N, N, N, N, 0},
    {"rd_kafka_consumer_close", KDC_API_CLOSE, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_consumer_poll", KDC_API_CONSUME, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_destroy", KDC_API_DESTROY, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_destroy_flags", KDC_API_DESTROY, 0, N, N, N, N, N, 1, N, 0},
    {"rd_kafka_flush", KDC_API_SERVE_DR | KDC_API_FLUSH, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_new", KDC_API_CLIENT_NEW, N, N, 1, N, N, N, N, 0, 0},
    {"rd_kafka_offset_store", KDC_API_STORE, N, 0, N, N, N, N, N, N, 0},
    {"rd_kafka_offsets_store", KDC_API_STORE, 0, N, N, 1, N, N, N, N, 0},
    {"rd_kafka_outq_len", KDC_API_OUTQ, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_poll", KDC_API_SERVE_DR, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_produce", KDC_API_PRODUCE, N, 0, N, N, 7, N, N, N, 0},
    {"rd_kafka_produce_batch", KDC_API_PRODUCE, N, 0, N, N, N, N, N, N, 0},
    {"rd_kafka_producev", KDC_API_PRODUCE, 0, N, N, N, N, N, N, N, 1},
    {"rd_kafka_produceva", KDC_API_PRODUCE, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_purge", KDC_API_PURGE, 0, N, N, N, N, N, N, N, 0},
    {"rd_kafka_send_offsets_to_transaction", KDC_API_TXN, 0, N, N, 1, N, N, N, N, 0},
    {"rd_kafka_subscribe", KDC_API_SUBSCRIBE, 0, N, N, 1, N, N, N, N, 0},
    {"rd_kafka_topic_conf_dup", KDC_API_CONF_DUP, N, N, 0, N, N, N, N, N, 0},
    {"rd_kafka_topic_conf_new", KDC_API_CONF_NEW, N, N, N, N, N, N, N, N, 0},
    {"rd_kafka_topic_conf_set", KDC_API_CONF_SET, N, N, 0, N, N, 1, 2, N, 0},
    {"rd_kafka_topic_new", KDC_API_TOPIC_NEW, 0, 1, 2, N, N, N, N, N, 0},
    {"rd_kafka_topic_partition_list_add", KDC_API_LIST_ADD, N, 1, N, 0, N, N, N, N, 0},
};
/* clang-format on */

#undef N
#undef R

/* The client or topic handle a call operates on: its handle argument, else a
 * leading topic handle (rd_kafka_produce(rkt, ..), rd_kafka_offset_store(rkt, ..),
 * rd_kafka_consume(rkt, ..)); NULL when it has neither. */
static const kdc_expr_t *object_arg(const kdc_api_t *a, const kdc_expr_t *call) {
    if (a->handle != KDC_ARG_NONE)
        return kdc_api_arg(call, a->handle);
    if (a->topic == 0 && !strncmp(a->name, "rd_kafka_", 9))
        return kdc_call_arg(call, 0);
    return NULL;
}

/* The analysis looks up every call it meets, many times over: the table's names are also
 * kept in an open-addressing hash set (XXH3), built on first use, so a lookup costs one hash
 * and usually one strcmp instead of a binary search's eight. */
#define API_SLOTS 1024
static const kdc_api_t *api_slots[API_SLOTS];
static int api_slots_filled;

static size_t api_slot(const char *name) {
    return (size_t)XXH3_64bits(name, strlen(name)) & (API_SLOTS - 1);
}

static void api_slots_fill(void) {
    for (size_t i = 0; i < sizeof table / sizeof table[0]; i++) {
        size_t k = api_slot(table[i].name);
        while (api_slots[k])
            k = (k + 1) & (API_SLOTS - 1);
        api_slots[k] = &table[i];
    }
    api_slots_filled = 1;
}

/* ---------- declared contracts (libkdc's KDC_CONTRACT) ---------- */

static const struct {
    const char *meaning;
    unsigned roles;
} meanings[] = {
    {"produce", KDC_API_PRODUCE},
    {"produce-confirmed", KDC_API_CONFIRM | KDC_API_SERVE_DR},
    {"dlq-route", KDC_API_CONFIRM | KDC_API_SERVE_DR},
    {"dlq-produce", KDC_API_PRODUCE | KDC_API_DLQ},
    {"confirm", KDC_API_CONFIRM | KDC_API_SERVE_DR},
    {"commit-message", KDC_API_COMMIT},
    {"commit-done", KDC_API_COMMIT},
    /* no role of kdc-lint's: nothing produced, confirmed or committed */
    {"mark-done", KDC_API_MARK_DONE},
    {"track", 0},
    {"classify", 0},
    {"rebalance", 0},
    {"delivery-callback", 0},
    {"rewind", 0},
    {"retry", 0},
    {"txn", 0},
    {"create", 0},
    {"destroy", 0},
    {"configure", 0},
    {"query", 0},
    {"decode", 0},
};

int kdc_api_from_contract(const char *name, const char *contract, kdc_api_t *out) {
    *out = (kdc_api_t){name,
                       0,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       KDC_ARG_NONE,
                       0};
    size_t n = strcspn(contract, " ");
    size_t i = 0;
    while (i < sizeof meanings / sizeof *meanings &&
           (strlen(meanings[i].meaning) != n || strncmp(meanings[i].meaning, contract, n)))
        i++;
    if (i == sizeof meanings / sizeof *meanings)
        return -1;
    out->roles = meanings[i].roles;
    for (const char *p = contract + n; *p;) {
        p += strspn(p, " ");
        if (!*p)
            break;
        static const char *const keys[] = {"handle=", "topic=", "list=", "varargs="};
        int varargs = 0, *slots[] = {&out->handle, &out->topic, &out->list, &varargs};
        size_t k = 0;
        while (k < 4 && strncmp(p, keys[k], strlen(keys[k])))
            k++;
        if (k == 4)
            return -1;
        p += strlen(keys[k]);
        if (*p < '0' || *p > '9' || (p[1] && p[1] != ' '))
            return -1; /* one digit: libkdc's functions have few arguments */
        *slots[k] = *p++ - '0';
        if (k == 3)
            out->varargs = (unsigned)varargs;
    }
    return 0;
}

/* The program's contracts by callee name: an open-addressing table like the API's. */
static struct {
    kdc_api_t *v;
    size_t n, nslots;
    const kdc_api_t **slots;
} contracts;

static const kdc_api_t *contract_of(const char *name) {
    if (!contracts.nslots)
        return NULL;
    size_t mask = contracts.nslots - 1;
    for (size_t k = (size_t)XXH3_64bits(name, strlen(name)) & mask; contracts.slots[k];
         k = (k + 1) & mask)
        if (!strcmp(contracts.slots[k]->name, name))
            return contracts.slots[k];
    return NULL;
}

/* The generation of the answers kdc_api_lookup keeps in each call (kdc_expr_t.api_memo): a
 * new one with every table of contracts, so no answer outlives the table it came from. */
static unsigned memo_gen = 1;

/* kdc_api_calls' index, for the program and the generation it was built for. */
static struct {
    const kdc_program_t *p;
    unsigned gen;
    kdc_api_call_t *v;
    size_t n;
} api_calls;

const kdc_api_call_t *kdc_api_calls(const kdc_program_t *p, size_t *n) {
    if (api_calls.p != p || api_calls.gen != memo_gen) {
        free(api_calls.v);
        memset(&api_calls, 0, sizeof api_calls);
        size_t cap = 0, nf = kdc_program_nfuncs(p);
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(p, i);
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *a = kdc_api_lookup(f->calls[c]);
                if (!a)
                    continue;
                if (api_calls.n == cap) {
                    cap = cap ? 2 * cap : 256;
                    api_calls.v = kdc_xrealloc(api_calls.v, cap * sizeof *api_calls.v);
                }
                api_calls.v[api_calls.n++] = (kdc_api_call_t){f, f->calls[c], a};
            }
        }
        api_calls.p = p;
        api_calls.gen = memo_gen;
    }
    *n = api_calls.n;
    return api_calls.v;
}

void kdc_api_use_contracts(const kdc_program_t *p) {
    if (++memo_gen == 0)
        memo_gen = 1;
    free(contracts.v);
    free(contracts.slots);
    memset(&contracts, 0, sizeof contracts);
    size_t n = kdc_program_ncontracts(p);
    if (!n)
        return;
    contracts.v = calloc(n, sizeof *contracts.v);
    contracts.nslots = 16;
    while (contracts.nslots < 2 * n)
        contracts.nslots *= 2;
    contracts.slots = calloc(contracts.nslots, sizeof *contracts.slots);
    if (!contracts.v || !contracts.slots)
        kdc_oom();
    for (size_t i = 0; i < n; i++) {
        const char *name, *contract;
        kdc_program_contract(p, i, &name, &contract);
        kdc_api_t a;
        if (kdc_api_from_contract(name, contract, &a) != 0 || contract_of(name))
            continue;
        contracts.v[contracts.n] = a;
        size_t mask = contracts.nslots - 1, k = (size_t)XXH3_64bits(name, strlen(name)) & mask;
        while (contracts.slots[k])
            k = (k + 1) & mask;
        contracts.slots[k] = &contracts.v[contracts.n++];
    }
}

static const kdc_api_t *lookup(const kdc_expr_t *call);

/* Asked for every call again and again by the rules and facts (12.7 % of a librdkafka run's
 * time before its answer was kept in the call itself). */
const kdc_api_t *kdc_api_lookup(const kdc_expr_t *call) {
    if (!call || call->kind != KDC_E_CALL || !call->name || !*call->name)
        return NULL;
    if (call->api_memo_gen == memo_gen)
        return call->api_memo;
    const kdc_api_t *a = lookup(call);
    kdc_expr_t *w = (kdc_expr_t *)call; /* a cache in the model, not a change of it */
    w->api_memo = a;
    w->api_memo_gen = memo_gen;
    return a;
}

static const kdc_api_t *lookup(const kdc_expr_t *call) {
    if (!api_slots_filled)
        api_slots_fill();
    /* what the callee's declaration says it means comes first */
    const kdc_api_t *a = contract_of(call->name);
    if (a && !a->roles)
        return NULL;
    for (size_t k = api_slot(call->name); !a && api_slots[k]; k = (k + 1) & (API_SLOTS - 1))
        if (!strcmp(api_slots[k]->name, call->name)) {
            a = api_slots[k];
            break;
        }
    if (!a)
        return NULL;
    /* A call on a NULL handle operates on no client: librdkafka returns an error
     * (or crashes) and nothing is produced, committed or flushed. Such calls are
     * written to reference a symbol (a link check in a block that never runs), not
     * to do anything; they are no API event for any rule. */
    if (kdc_expr_is_null(object_arg(a, call)))
        return NULL;
    return a;
}

const kdc_expr_t *kdc_api_arg(const kdc_expr_t *call, int pos) {
    if (pos == KDC_ARG_RECV)
        return call->recv;
    if (pos < 0)
        return NULL;
    return kdc_call_arg(call, (unsigned)pos);
}

int kdc_api_is_librdkafka(const kdc_expr_t *call) {
    return call->name &&
           (!strncmp(call->name, "rd_kafka_", 9) || !strncmp(call->name, "RdKafka::", 9));
}

const char *kdc_api_display_name(const kdc_expr_t *call) {
    static const char ns[] = "RdKafka::";
    return !strncmp(call->name, ns, sizeof ns - 1) ? call->name + sizeof ns - 1 : call->name;
}

unsigned kdc_api_varargs_start(const kdc_expr_t *call) {
    const kdc_api_t *a = kdc_api_lookup(call);
    return a && a->varargs ? a->varargs : 1;
}

const kdc_expr_t *kdc_api_producev_arg(const kdc_expr_t *call, long long vtype) {
    /* Each RD_KAFKA_V_* macro yields the vtype enumerator followed by its values. */
    static const int nvals[] = {0, 1, 1, 1, 2, 2, 1, 1, 1, 3, 1};
    unsigned i = kdc_api_varargs_start(call);
    while (i < call->nkids) {
        const kdc_expr_t *m = call->kids[i];
        if (!m->has_ival || m->ival < 0 || m->ival >= (long long)(sizeof nvals / sizeof nvals[0]))
            return NULL;
        if (m->ival == 0)
            return NULL; /* RD_KAFKA_V_END */
        if (m->ival == vtype)
            return i + 1 < call->nkids ? call->kids[i + 1] : NULL;
        i += 1 + (unsigned)nvals[m->ival];
    }
    return NULL;
}

int kdc_api_is_noreturn_name(const char *name) {
    static const char *const names[] = {
        "exit", "_exit", "_Exit", "abort", "quick_exit", "pthread_exit", "thrd_exit", "longjmp",
        "siglongjmp", "_longjmp", "__assert_fail", "__assert_rtn", "err", "errx", "verr",
        "verrx", "__builtin_unreachable", "__builtin_trap", "std::terminate", "std::abort",
        "std::exit", "std::quick_exit", "std::_Exit"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (!strcmp(name, names[i]))
            return 1;
    return 0;
}

int kdc_api_self_check(void) {
    for (size_t i = 1; i < sizeof table / sizeof table[0]; i++)
        if (strcmp(table[i - 1].name, table[i].name) >= 0)
            return -1;
    return 0;
}
