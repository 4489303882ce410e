/*
 * Checkpoints (facts.h, kdc_facts_call_checkpoints): where a service records
 * how far it got, so that a restart resumes after it. A checkpoint is a
 * durable write, never a name:
 *
 *   - a commit or offset store, a configured commit or ack function;
 *   - a durable write: a file write, a database call, a network send (the
 *     side-effect APIs, C++ file streams), a configured effect function; a produce is output,
 *     not a checkpoint, and a write to stdout, stderr or a log is not one;
 *   - program state that outlives the function: a value that is not a
 *     constant nor a clock reading assigned (`=`; `++`, `--` and `+=` are
 *     counters) to a global or static variable, a member of `this`, or storage
 *     reached through a pointer or reference parameter. Not a local, and not a
 *     field of a librdkafka structure: a partition list entry's `offset` is an
 *     argument for the call the list goes to (a commit is a checkpoint of its
 *     own; an assign, a DeleteRecords request or send_offsets_to_transaction
 *     are not);
 *   - a call of a function of the program that does one of these, where the
 *     state it writes through its parameters (or its object) outlives the
 *     caller too: `persist(&local)` writes nothing that outlives the caller.
 */
#include "facts_int.h"
#include "api.h"

#include <stdlib.h>
#include <string.h>

#define THIS_BIT 31u /* the object of a C++ method */

/* Per function: does it checkpoint whatever its arguments (`out`), and through
 * which parameters (bit i; THIS_BIT: its object) does it write state? */
struct kdc_ckpt {
    unsigned out : 1;
    uint32_t through;
};

enum { ROOT_NONE, ROOT_GLOBAL, ROOT_THIS, ROOT_PARAM };

typedef struct root {
    int kind;
    int param;
} root_t;

static int param_is_reference(const kdc_func_t *f, int i) {
    return f && i >= 0 && (unsigned)i < f->nparams && f->param_types && f->param_types[i] &&
           strchr(f->param_types[i], '&');
}

/* A field of one of librdkafka's structures (rd_kafka_topic_partition_t,
 * rd_kafka_message_t): the library's argument, not the program's state. */
static int librdkafka_field(const kdc_expr_t *m) {
    return m->usr && strstr(m->usr, "@S@rd_kafka_");
}

static int index_or_deref_call(const kdc_expr_t *call) {
    const char *n = call->name;
    size_t len = n ? strlen(n) : 0;
    return call->is_method && len >= 10 &&
           (!strcmp(n + len - 10, "operator[]") || !strcmp(n + len - 9, "operator*") ||
            !strcmp(n + len - 10, "operator->"));
}

/* Where the storage an lvalue (through: the storage a pointer or reference
 * value points to) lives, as far as outliving f goes. */
static root_t root_of(const kdc_func_t *f, const kdc_expr_t *e, int through) {
    root_t none = {ROOT_NONE, 0};
    for (int depth = 0; (e = kdc_expr_strip(e)) && depth < 32; depth++) {
        switch (e->kind) {
        case KDC_E_REF:
            if (e->ref == KDC_REF_GLOBAL) {
                root_t r = {ROOT_GLOBAL, 0};
                return r;
            }
            if (e->ref == KDC_REF_PARAM &&
                (through || param_is_reference(f, e->param_index)) && e->param_index >= 0 &&
                e->param_index < (int)THIS_BIT) {
                root_t r = {ROOT_PARAM, e->param_index};
                return r;
            }
            return none;
        case KDC_E_THIS: {
            root_t r = {ROOT_THIS, 0};
            return r;
        }
        case KDC_E_MEMBER:
            if (librdkafka_field(e))
                return none;
            if (!e->nkids) { /* an implicit this->field */
                root_t r = {ROOT_THIS, 0};
                return r;
            }
            through = e->arrow || through;
            e = e->kids[0];
            break;
        case KDC_E_UNARY:
            if (e->op == KDC_OP_DEREF) {
                through = 1;
            } else if (e->op == KDC_OP_ADDR) {
                if (!through)
                    return none; /* &x is a value, not storage */
                through = 0;
            } else {
                return none;
            }
            e = e->nkids ? e->kids[0] : NULL;
            break;
        case KDC_E_INDEX:
            through = 1;
            e = e->kids[0];
            break;
        case KDC_E_CALL: /* positions_[p] = off: the container's storage */
            if (!index_or_deref_call(e))
                return none;
            e = e->recv ? e->recv : kdc_call_arg(e, 0);
            break;
        case KDC_E_BINARY: /* p + i */
            if (e->op != KDC_OP_ADD && e->op != KDC_OP_SUB)
                return none;
            e = e->kids[0];
            break;
        default:
            return none;
        }
    }
    return none;
}

static int is_constant(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e)
        return 1;
    if (e->has_ival || e->kind == KDC_E_INT || e->kind == KDC_E_NULL || e->kind == KDC_E_STRING)
        return 1;
    if (e->kind == KDC_E_UNARY && e->nkids == 1 && e->op != KDC_OP_DEREF &&
        e->op != KDC_OP_ADDR)
        return is_constant(e->kids[0]);
    return 0;
}

/* A reading of the clock (time(), clock_gettime(), std::chrono::..::now()):
 * a timestamp is no position. */
static int clock_call(const kdc_expr_t *e, void *arg) {
    static const char *const names[] = {"time", "clock", "clock_gettime", "gettimeofday",
                                        "rd_clock", "rd_uclock", "g_get_monotonic_time",
                                        "g_get_real_time", NULL};
    (void)arg;
    if (e->kind != KDC_E_CALL || !e->name)
        return 0;
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(e->name, names[i]))
            return 1;
    return !strncmp(e->name, "std::chrono::", 13) && strstr(e->name, "::now");
}

static int handle_or_pointer(const kdc_expr_t *e) {
    return e && e->type &&
           (strchr(e->type, '*') || strstr(e->type, "rd_kafka_") || strstr(e->type, "RdKafka::"));
}

/* Is e an assignment that records a value (not a constant reset, not a ++/--
 * counter)? Returns its target, or NULL. */
static const kdc_expr_t *recording_target(const kdc_expr_t *e) {
    /* `+=` sums (bytes sent, messages seen) are counters like `++` */
    if (e->kind != KDC_E_BINARY || e->nkids != 2 || e->op != KDC_OP_ASSIGN)
        return NULL;
    if (is_constant(e->kids[1]) || kdc_expr_walk(e->kids[1], clock_call, NULL))
        return NULL;
    /* a position is a number, a string, a struct; a pointer or a client handle
     * kept in a global (`fallback = rd_kafka_new(..)`) is no record of progress */
    const kdc_expr_t *t = kdc_expr_strip(e->kids[0]), *v = kdc_expr_strip(e->kids[1]);
    if (handle_or_pointer(t) || handle_or_pointer(v) ||
        (v && v->kind == KDC_E_UNARY && v->op == KDC_OP_ADDR))
        return NULL;
    return e->kids[0];
}

/* A write to a C++ file stream (`state_ << lsn`, `out.write(..)`): the
 * stream object (the receiver, or an operator's first operand) is an
 * ofstream or fstream. */
static int file_stream_write(const kdc_expr_t *call) {
    const char *n = call->name;
    if (!n || strncmp(n, "std::", 5) || (!strstr(n, "operator<<") && !strstr(n, "::write") &&
                                         !strstr(n, "::put")))
        return 0;
    const kdc_expr_t *stream = kdc_expr_strip(call->recv ? call->recv : kdc_call_arg(call, 0));
    return stream && stream->type && strstr(stream->type, "fstream");
}

/* A call that is a checkpoint by itself: commit, store, configured role,
 * durable write. */
static int direct_checkpoint(const kdc_facts_t *fx, const kdc_expr_t *call) {
    const kdc_options_t *o = &fx->opts;
    if (kdc_options_has_role(o, call, KDC_ROLE_COMMIT) || kdc_options_has_role(o, call, KDC_ROLE_ACK) ||
        kdc_options_has_role(o, call, KDC_ROLE_EFFECT))
        return 1;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & (KDC_API_COMMIT | KDC_API_STORE)) != 0;
    if (kdc_api_is_librdkafka(call) || kdc__callee_func(fx, NULL, call))
        return 0; /* the program's own function named send() is judged by its body */
    return kdc__side_effect_api(call) || file_stream_write(call);
}

/* The argument of `call` that parameter bit i of its callee stands for. */
static const kdc_expr_t *arg_for_bit(const kdc_expr_t *call, unsigned i) {
    if (i != THIS_BIT)
        return kdc_call_arg(call, i);
    return call->recv ? call->recv : kdc_call_arg(call, 0); /* an operator call: its first */
}

/* Does calling a function with summary `s` from f checkpoint? Adds to *into
 * (when not NULL) the parameters of f through which it does. */
static int call_through(const kdc_func_t *f, const kdc_expr_t *call, const struct kdc_ckpt *s,
                        struct kdc_ckpt *into) {
    int hit = s->out;
    for (unsigned i = 0; i < 32; i++) {
        if (!(s->through & (1u << i)))
            continue;
        root_t r = root_of(f, arg_for_bit(call, i), 1);
        if (r.kind == ROOT_NONE)
            continue;
        hit = 1;
        if (!into)
            continue;
        if (r.kind == ROOT_GLOBAL)
            into->out = 1;
        else if (r.kind == ROOT_THIS)
            into->through |= 1u << THIS_BIT;
        else
            into->through |= 1u << r.param;
    }
    return hit;
}

typedef struct sum_q {
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    struct kdc_ckpt *s;
} sum_q_t;

static int sum_assign(const kdc_expr_t *e, void *arg) {
    sum_q_t *q = arg;
    const kdc_expr_t *target = recording_target(e);
    if (!target)
        return 0;
    root_t r = root_of(q->f, target, 0);
    if (r.kind == ROOT_GLOBAL)
        q->s->out = 1;
    else if (r.kind == ROOT_THIS)
        q->s->through |= 1u << THIS_BIT;
    else if (r.kind == ROOT_PARAM)
        q->s->through |= 1u << r.param;
    return 0;
}

static int summarize(kdc_facts_t *fx, const kdc_func_t *f) {
    struct kdc_ckpt *s = &fx->ckpt[f->index], old = *s;
    const kdc_cfg_t *g = f->cfg;
    if (!g || !f->body)
        return 0;
    if (!s->out) {
        sum_q_t q = {fx, f, s};
        kdc_func_walk_exprs(f, sum_assign, &q);
    }
    for (unsigned c = 0; c < f->ncalls && !s->out; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (g->call_node[c] < 0)
            continue;
        if (direct_checkpoint(fx, call)) {
            s->out = 1;
            break;
        }
        if (kdc_api_lookup(call) || kdc_api_is_librdkafka(call))
            continue;
        kdc_funcvec_t callees = {0};
        kdc_pts_callees(fx->pts, f, call, &callees);
        for (size_t k = 0; k < callees.n; k++)
            if (callees.v[k] != f)
                call_through(f, call, &fx->ckpt[callees.v[k]->index], s);
        free(callees.v);
    }
    return s->out != old.out || s->through != old.through;
}

void kdc__summarize_checkpoints(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    fx->ckpt = calloc(nf ? nf : 1, sizeof *fx->ckpt);
    if (!fx->ckpt)
        kdc_oom();
    for (int round = 0; round < 16; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++)
            changed |= summarize(fx, kdc_program_func(fx->p, i));
        if (!changed)
            break;
    }
}

void kdc__free_checkpoints(kdc_facts_t *fx) { free(fx->ckpt); }

int kdc_facts_call_checkpoints(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    if (direct_checkpoint(fx, call))
        return 1;
    if (kdc_api_lookup(call) || kdc_api_is_librdkafka(call))
        return 0;
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(fx->pts, f, call, &callees);
    int hit = 0;
    for (size_t k = 0; k < callees.n && !hit; k++)
        hit = call_through(f, call, &fx->ckpt[callees.v[k]->index], NULL);
    free(callees.v);
    return hit;
}

int kdc_facts_assign_checkpoints(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    (void)fx;
    const kdc_expr_t *target = e ? recording_target(e) : NULL;
    return target && root_of(f, target, 0).kind != ROOT_NONE;
}
