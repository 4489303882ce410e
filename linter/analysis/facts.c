#define _GNU_SOURCE
/* Program-wide facts (see facts.h). */
#include "facts_int.h"
#include "results.h"
#include "api.h"
#include "util.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Dead-letter destinations, and the retry topics failed events are parked in until
 * they are tried again (Spring's "orders-retry-0", "payments.retry"): routing an event
 * there is the same hand-over, to be confirmed before the input is committed, and the
 * same identity question for its retries. */
const char *const kdc_default_dlq_topic_patterns[] = {"*dlq*", "*.DLT", "*dead*letter*",
                                                      "*.deadletter", "*retry*", NULL};
const char *const kdc_default_dlq_name_patterns[] = {"*dlq*", "*dead*letter*", "*retry_topic*",
                                                     "*retry_rkt*", NULL};

/* cppkafka (https://github.com/mfontanini/cppkafka), the C++ wrapper ClickHouse's
 * Kafka storage uses: its consumer's poll and commit calls, its producers'
 * produce calls, and BufferedProducer's calls that wait for the acknowledgement
 * of what was produced (failures reach its produce-failure callback).
 * Producer::flush() is rd_kafka_flush(): no confirmation. */
static const char *const cppkafka_produce[] = {"cppkafka::Producer::produce",
                                               "cppkafka::BufferedProducer*::produce",
                                               "cppkafka::BufferedProducer*::add_message", NULL};
static const char *const cppkafka_commit[] = {
    "cppkafka::Consumer::commit", "cppkafka::Consumer::async_commit",
    "cppkafka::Consumer::store_offset", "cppkafka::Consumer::store_consumed_offsets", NULL};
static const char *const cppkafka_confirm[] = {"cppkafka::BufferedProducer*::flush",
                                               "cppkafka::BufferedProducer*::sync_produce",
                                               "cppkafka::BufferedProducer*::wait_for_acks", NULL};
static const char *const cppkafka_consume[] = {"cppkafka::Consumer::poll",
                                               "cppkafka::Consumer::poll_batch", NULL};
const char *const *const kdc_function_presets[KDC_NROLES] = {
    [KDC_ROLE_PRODUCE] = cppkafka_produce,
    [KDC_ROLE_COMMIT] = cppkafka_commit,
    [KDC_ROLE_CONFIRM] = cppkafka_confirm,
    [KDC_ROLE_CONSUME] = cppkafka_consume,
};

/* Log shippers' output plugins, which tell their framework a message is done by a
 * return value or a call (docs/configuration.md):
 *   rsyslog output modules: doAction, commitTransaction, endTransaction returning
 *     RS_RET_OK; doAction also RS_RET_DEFER_COMMIT / RS_RET_PREVIOUS_COMMITTED
 *     (accepted into the batch being committed)
 *   syslog-ng threaded destinations: an insert or flush callback returning LTR_SUCCESS
 *   fluent-bit output plugins: FLB_OUTPUT_RETURN(FLB_OK), a call of
 *     flb_output_return_do(1) (FLB_OK is 1; FLB_ERROR 0, FLB_RETRY 2) */
const char *const kdc_ack_presets_returns[] = {
    /* rsyslog's values (runtime/rsyslog.h), as numbers: an enumerator and a module's own
     * #define of it compare alike. RS_RET_OK 0, RS_RET_DEFER_COMMIT -2121,
     * RS_RET_PREVIOUS_COMMITTED -2122. */
    "doAction=0", "doAction=-2121", "doAction=-2122", "commitTransaction=0", "endTransaction=0",
    "*=LTR_SUCCESS", NULL};
const char *const kdc_ack_presets_calls[] = {"flb_output_return_do(1)", "flb_output_return(1)",
                                             NULL};

/* ---------- small helpers ---------- */

int kdc__match_any(const char *const *pats, const char *s) {
    if (!s || !*s || !pats)
        return 0;
    for (size_t i = 0; pats[i]; i++)
        if (fnmatch(pats[i], s, FNM_CASEFOLD) == 0)
            return 1;
    return 0;
}

int kdc_options_has_role(const kdc_options_t *o, const kdc_expr_t *call, kdc_role_t role) {
    return call->kind == KDC_E_CALL && kdc__match_any(o->functions[role], call->name);
}

/* ---------- acknowledgements by value ---------- */

/* An acknowledgement spec split: "FUNCTION=VALUE" (returns) or "FUNCTION(VALUE)"
 * (calls) into its function pattern and value, in buf; 0 when malformed. */
static int ack_spec_split(const char *s, int call, char *buf, size_t len, const char **fn,
                          const char **value) {
    size_t n = strlen(s);
    if (!n || n >= len)
        return 0;
    memcpy(buf, s, n + 1);
    char *sep = call ? strchr(buf, '(') : strrchr(buf, '=');
    if (!sep || sep == buf || (call && buf[n - 1] != ')'))
        return 0;
    *sep = 0;
    if (call)
        buf[n - 1] = 0;
    *fn = buf;
    *value = sep + 1;
    if (!**value)
        return 0;
    for (const char *p = *value; *p; p++) /* an identifier or an integer */
        if (!(*p == '_' || *p == '-' || (*p >= '0' && *p <= '9') || (*p >= 'a' && *p <= 'z') ||
              (*p >= 'A' && *p <= 'Z')))
            return 0;
    return 1;
}

int kdc_ack_spec_valid(const char *s, int call) {
    char buf[512];
    const char *fn, *value;
    return ack_spec_split(s, call, buf, sizeof buf, &fn, &value);
}

/* Is e the value: an enumerator of that name, or a constant equal to it? */
static int ack_value_is(const kdc_expr_t *e, const char *value) {
    e = kdc_expr_strip(e);
    if (!e)
        return 0;
    char *end = NULL;
    long long v = strtoll(value, &end, 0);
    if (end && !*end)
        return e->has_ival && e->ival == v;
    return e->kind == KDC_E_REF && e->ref == KDC_REF_ENUMERATOR && e->name &&
           !strcmp(e->name, value);
}

typedef struct ack_var {
    const char *usr, *value;
    int may;
} ack_var_t;

static int ack_var_assigned(const kdc_expr_t *e, void *arg) {
    ack_var_t *a = arg;
    const kdc_expr_t *lv = kdc_expr_strip(kdc_expr_assigned(e));
    if (!lv || lv->kind != KDC_E_REF || lv->usr != a->usr)
        return 0;
    const kdc_expr_t *r = e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2
                              ? kdc_expr_strip(e->kids[1])
                              : NULL;
    if (r && ack_value_is(r, a->value))
        a->may = 1;
    return a->may;
}

/* May `value`, returned from f, be `want`: the value itself, or a local variable
 * that f sets to it somewhere (rsyslog's `rsRetVal iRet = RS_RET_OK; .. return
 * iRet;`)? A call's result or a parameter says nothing. */
static int ack_value_may_be(const kdc_func_t *f, const kdc_expr_t *value, const char *want) {
    const kdc_expr_t *e = kdc_expr_strip(value);
    if (!e)
        return 0;
    if (e->has_ival || (e->kind == KDC_E_REF && e->ref == KDC_REF_ENUMERATOR))
        return ack_value_is(e, want);
    if (e->kind != KDC_E_REF || !e->usr || e->ref != KDC_REF_LOCAL)
        return 0;
    ack_var_t a = {e->usr, want, 0};
    kdc_func_walk_exprs(f, ack_var_assigned, &a);
    return a.may;
}

int kdc_facts_return_acks(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *value) {
    for (const char *const *s = fx->opts.ack_returns; s && *s; s++) {
        char buf[512];
        const char *fn, *want;
        if (ack_spec_split(*s, 0, buf, sizeof buf, &fn, &want) && f->name &&
            fnmatch(fn, f->name, 0) == 0 && ack_value_may_be(f, value, want))
            return 1;
    }
    return 0;
}

static int call_acks(const kdc_options_t *o, const kdc_expr_t *call);

int kdc_facts_call_acks(const kdc_facts_t *fx, const kdc_expr_t *call) {
    return call->kind == KDC_E_CALL && call_acks(&fx->opts, call);
}

/* A constant returned from f: 1 when a spec for f acknowledges with it, 0 when it is
 * another constant, -1 when e is not a constant. */
static int ack_constant(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e || !(e->has_ival || (e->kind == KDC_E_REF && e->ref == KDC_REF_ENUMERATOR)))
        return -1;
    for (const char *const *s = fx->opts.ack_returns; s && *s; s++) {
        char buf[512];
        const char *fn, *want;
        if (ack_spec_split(*s, 0, buf, sizeof buf, &fn, &want) && f->name &&
            fnmatch(fn, f->name, 0) == 0 && ack_value_is(e, want))
            return 1;
    }
    return 0;
}

typedef struct ret_find {
    const char *usr;
} ret_find_t;

static void find_returned_var(const kdc_stmt_t *st, void *arg) {
    ret_find_t *r = arg;
    const kdc_expr_t *e = st->kind == KDC_S_RETURN ? kdc_expr_strip(st->expr) : NULL;
    if (!r->usr && e && e->kind == KDC_E_REF && e->ref == KDC_REF_LOCAL)
        r->usr = e->usr;
}

/* The local variable f returns when a framework takes what f returns as its
 * acknowledgement (a spec of kdc_options_t.ack_returns names f), or NULL. */
static const char *ack_returned_var(const kdc_facts_t *fx, const kdc_func_t *f) {
    int named = 0;
    for (const char *const *s = fx->opts.ack_returns; s && *s && !named; s++) {
        char buf[512];
        const char *fn, *want;
        named = ack_spec_split(*s, 0, buf, sizeof buf, &fn, &want) && f->name &&
                fnmatch(fn, f->name, 0) == 0;
    }
    ret_find_t r = {NULL};
    if (named && f->body)
        kdc_stmt_walk(f->body, find_returned_var, &r);
    return r.usr;
}

/* Does the call acknowledge upstream by its argument (kdc_options_t.ack_calls)? */
static int call_acks(const kdc_options_t *o, const kdc_expr_t *call) {
    for (const char *const *s = o->ack_calls; s && *s; s++) {
        char buf[512];
        const char *fn, *want;
        if (ack_spec_split(*s, 1, buf, sizeof buf, &fn, &want) && call->name &&
            fnmatch(fn, call->name, 0) == 0 && ack_value_is(kdc_call_arg(call, 0), want))
            return 1;
    }
    return 0;
}

const kdc_func_t *kdc__callee_func(const kdc_facts_t *fx, const kdc_func_t *caller,
                                   const kdc_expr_t *call) {
    return kdc_program_find_callee(fx->p, call->usr, caller ? caller->tu : -1);
}

static const kdc_summary_t *callee_summary(const kdc_facts_t *fx, const kdc_func_t *f,
                                           const kdc_expr_t *call, kdc_summary_t *merged) {
    /* Direct callee, or the union over function-pointer targets. */
    memset(merged, 0, sizeof *merged);
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(fx->pts, f, call, &callees);
    if (!callees.n) {
        free(callees.v);
        return NULL;
    }
    merged->confirms = 1;
    merged->noreturn = 1;
    for (size_t i = 0; i < callees.n; i++) {
        const kdc_summary_t *s = &fx->sum[callees.v[i]->index];
        merged->commits |= s->commits;
        merged->serves_dr |= s->serves_dr;
        merged->effects |= s->effects;
        merged->stream_params |= s->stream_params;
        merged->routes_dlq |= s->routes_dlq;
        merged->consumes |= s->consumes;
        merged->reads_dr |= s->reads_dr;
        merged->confirms &= s->confirms;
        merged->noreturn &= s->noreturn;
        merged->pending_produce |= s->pending_produce;
        if (s->pending_dlq && !merged->pending_dlq) {
            merged->pending_func = s->pending_func;
            merged->pending_site = s->pending_site;
        }
        merged->pending_dlq |= s->pending_dlq;
        if (s->pending_produce && !merged->pending_site) {
            merged->pending_func = s->pending_func;
            merged->pending_site = s->pending_site;
        }
    }
    free(callees.v);
    return merged;
}

/* What a call does, from the API table or the callee's summary. */
typedef struct call_effects {
    unsigned produces : 1;  /* enqueues a message (or returns with one unconfirmed) */
    unsigned commits : 1;   /* commits or stores offsets */
    unsigned serves_dr : 1; /* serves delivery reports */
    unsigned effects : 1;   /* performs a side effect */
    unsigned routes_dlq : 1; /* produces to a dead-letter destination */
    unsigned consumes : 1;  /* consumes messages */
    unsigned confirms : 1;  /* waits for delivery reports on every path */
    uint32_t stream_params; /* writes to the streams the calling function is given (bit per param) */
    const kdc_summary_t *callee; /* merged callee summary, when not an API call */
} call_effects_t;

/* facts_int.h */
int kdc__is_console_or_log(const kdc_expr_t *stream) {
    stream = kdc_expr_strip(stream);
    if (stream && ((stream->kind == KDC_E_REF && stream->name &&
                    (!strcmp(stream->name, "stdout") || !strcmp(stream->name, "stderr"))) ||
                   (stream->has_ival && (stream->ival == 1 || stream->ival == 2))))
        return 1;
    const char *root = stream ? kdc_expr_root_name(stream) : NULL;
    return root && (strcasestr(root, "log") || strcasestr(root, "trace") || strcasestr(root, "debug"));
}

/* Side-effect APIs of the C library and common clients (the list).
 * *stream_param: the parameter of the calling function the call writes to as
 * its stream (`hexdump(FILE *fp, ..)` writing to fp), -1 when none: then
 * whether it is an effect depends on what its callers pass (1 is returned). */
typedef struct only_assign {
    const char *usr;
    const kdc_expr_t *value;
    int n;
} only_assign_t;

static int find_only_assign(const kdc_expr_t *e, void *arg) {
    only_assign_t *o = arg;
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) &&
        e->nkids == 2) {
        const kdc_expr_t *l = kdc_expr_strip(e->kids[0]);
        if (l && l->kind == KDC_E_REF && l->usr == o->usr) {
            o->value = e->kids[1];
            o->n++;
        }
    }
    return 0;
}

/* The parameter a stream expression of f is: the parameter itself, or a
 * local variable assigned only from it (`FILE *fp = opaque;`); -1 otherwise. */
static int stream_param_of(const kdc_func_t *f, const kdc_expr_t *stream) {
    stream = kdc_expr_strip(stream);
    if (stream && stream->kind == KDC_E_REF && stream->ref == KDC_REF_LOCAL && stream->usr && f) {
        only_assign_t o = {stream->usr, NULL, 0};
        kdc_func_walk_exprs(f, find_only_assign, &o);
        stream = o.n == 1 ? kdc_expr_strip(o.value) : NULL;
    }
    return stream && stream->kind == KDC_E_REF && stream->ref == KDC_REF_PARAM &&
                   stream->param_index >= 0 && stream->param_index < 32
               ? stream->param_index
               : -1;
}

static int side_effect_api(const kdc_func_t *f, const kdc_expr_t *call, int *stream_param) {
    *stream_param = -1;
    static const char *const names[] = {
        "write", "writev", "pwrite", "pwritev", "send", "sendto", "sendmsg", "fwrite",
        "fsync", "fdatasync", "PQexec", "PQexecParams", "PQexecPrepared", "PQsendQuery",
        "PQsendQueryParams", "PQsendQueryPrepared", "sqlite3_step", "sqlite3_exec", "mysql_query",
        "mysql_real_query", "mysql_stmt_execute", "redisCommand", "redisCommandArgv",
        "redisAppendCommand", "curl_easy_perform", "curl_multi_perform", "fprintf", "vfprintf",
        "fputs", "fputc", "putc", "dprintf", NULL};
    for (size_t i = 0; names[i]; i++)
        if (!strcmp(call->name, names[i])) {
            /* printing to stdout/stderr is not an effect that needs confirming */
            const kdc_expr_t *stream = NULL;
            if (!strcmp(names[i], "fwrite"))
                stream = kdc_call_arg(call, 3);
            else if (!strncmp(names[i], "write", 5) || !strncmp(names[i], "pwrite", 6) ||
                     !strcmp(names[i], "fprintf") || !strcmp(names[i], "vfprintf") ||
                     !strcmp(names[i], "dprintf"))
                stream = kdc_call_arg(call, 0);
            else if (!strcmp(names[i], "fputs") || !strcmp(names[i], "fputc") ||
                     !strcmp(names[i], "putc"))
                stream = kdc_call_arg(call, 1);
            stream = kdc_expr_strip(stream);
            if (kdc__is_console_or_log(stream))
                return 0; /* printing, logging: not an effect that needs confirming */
            *stream_param = stream_param_of(f, stream);
            return 1;
        }
    return 0;
}

int kdc__side_effect_api(const kdc_expr_t *call) {
    int stream_param;
    return side_effect_api(NULL, call, &stream_param);
}

static call_effects_t effects_of(const kdc_facts_t *fx, const kdc_func_t *f,
                                 const kdc_expr_t *call, kdc_summary_t *merged) {
    call_effects_t e = {0};
    const kdc_options_t *o = &fx->opts;
    /* Roles given in the configuration win over what the code shows. */
    e.produces = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_PRODUCE);
    /* acknowledging upstream is a checkpoint: it counts as a commit */
    e.commits = (unsigned)(kdc_options_has_role(o, call, KDC_ROLE_COMMIT) ||
                           kdc_options_has_role(o, call, KDC_ROLE_ACK) || call_acks(o, call));
    e.confirms = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_CONFIRM);
    e.consumes = (unsigned)kdc_options_has_role(o, call, KDC_ROLE_CONSUME);
    int stream_param = -1;
    e.effects = (unsigned)(e.produces || kdc_options_has_role(o, call, KDC_ROLE_EFFECT) ||
                           side_effect_api(f, call, &stream_param));
    if (stream_param >= 0 && !e.produces && !kdc_options_has_role(o, call, KDC_ROLE_EFFECT)) {
        e.effects = 0; /* a write to the caller's stream: an effect unless it is stdout */
        e.stream_params = 1u << stream_param;
    }
    if (e.produces || e.commits || e.confirms || e.effects || e.stream_params || e.consumes)
        return e;
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api) {
        e.produces = (api->roles & KDC_API_PRODUCE) != 0;
        e.commits = (api->roles & (KDC_API_COMMIT | KDC_API_STORE)) != 0;
        e.serves_dr = (api->roles & KDC_API_SERVE_DR) != 0;
        e.confirms = (api->roles & KDC_API_CONFIRM) != 0;
        e.effects = e.produces;
        e.consumes = (api->roles & KDC_API_CONSUME) != 0;
        e.routes_dlq = e.produces && kdc_facts_is_dlq_produce(fx, f, call);
        return e;
    }
    /* Other librdkafka functions do nothing a rule counts, also when librdkafka's own
     * sources are analysed (rd_kafka_poll_set_consumer's body writes to a wake-up fd:
     * that is not the service's side effect). */
    if (kdc_api_is_librdkafka(call))
        return e;
    const kdc_summary_t *s = callee_summary(fx, f, call, merged);
    if (s) {
        e.produces = s->pending_produce;
        e.commits = s->commits;
        e.serves_dr = s->serves_dr;
        e.confirms = s->confirms;
        e.effects = s->effects;
        e.routes_dlq = s->routes_dlq;
        e.consumes = s->consumes;
        e.callee = s;
        /* the callee writes to streams it is given: an effect unless this call gives it
         * stdout, stderr or a log, or a stream of f's own callers */
        for (unsigned i = 0; i < 32 && s->stream_params; i++) {
            if (!(s->stream_params & (1u << i)))
                continue;
            const kdc_expr_t *a = kdc_expr_strip(kdc_call_arg(call, i));
            int p = stream_param_of(f, a);
            if (p >= 0)
                e.stream_params |= 1u << p;
            else if (!a || !kdc__is_console_or_log(a))
                e.effects = 1;
        }
    }
    return e;
}

const char *kdc__lkey(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return kdc_pts_lvalue_key(fx->p, e);
}

void kdc__for_each_obj(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                       kdc_obj_kind_t kind, void (*fn)(kdc_facts_t *, size_t, void *), void *arg,
                       int *unknown) {
    kdc__for_each_obj_ctx(fx, f, NULL, e, kind, fn, arg, unknown);
}

void kdc__for_each_obj_ctx(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                           const kdc_expr_t *e, kdc_obj_kind_t kind,
                           void (*fn)(kdc_facts_t *, size_t, void *), void *arg, int *unknown) {
    kdc__for_each_obj_at(fx, f, ctx, NULL, e, kind, fn, arg, unknown);
}

void kdc__for_each_obj_at(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                          const kdc_expr_t *call, const kdc_expr_t *e, kdc_obj_kind_t kind,
                          void (*fn)(kdc_facts_t *, size_t, void *), void *arg, int *unknown) {
    kdc_bits_t b;
    kdc_pts_expr_at(fx->pts, f, ctx, call, e, &b);
    size_t n = kdc_pts_nobjs(fx->pts), hits = 0;
    for (size_t i = kdc_bits_next(&b, 0); i < n; i = kdc_bits_next(&b, i + 1)) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_UNKNOWN && unknown)
            *unknown = 1;
        if (o->kind == kind) {
            hits++;
            if (fn)
                fn((kdc_facts_t *)fx, i, arg);
        }
    }
    if (!hits && unknown)
        *unknown = 1;
    kdc_bits_free(&b);
}

const kdc_expr_t *kdc__literal(const kdc_expr_t *e) {
    for (int depth = 0; e && depth < 8; depth++) {
        e = kdc_expr_strip_copy(e);
        if (!e)
            return NULL;
        if (e->kind == KDC_E_STRING)
            return e;
        if (e->kind == KDC_E_CALL && e->is_ctor && e->callee_system && e->nkids >= 1)
            e = e->kids[0];
        else
            return NULL;
    }
    return NULL;
}

void kdc__add_dr_func(kdc_facts_t *fx, const kdc_func_t *f) {
    if (f && !kdc_strmap_get(&fx->dr_funcs, f->id))
        kdc_strmap_put(&fx->dr_funcs, f->id, (void *)f);
}

const kdc_obj_t *kdc_facts_obj(const kdc_facts_t *fx, size_t i) { return kdc_pts_obj(fx->pts, i); }

/* ---------- delivery-report callbacks and the state they write ---------- */

/* Does the lvalue live in the function's own frame (a local or a parameter, a field
 * of one held by value, an element of a local array)? A callback's writes there end
 * with it: they are not state anyone reads after a poll. */
static int in_own_frame(const kdc_expr_t *lv) {
    for (const kdc_expr_t *e = kdc_expr_strip(lv); e;) {
        if (e->kind == KDC_E_REF)
            return e->ref == KDC_REF_LOCAL || e->ref == KDC_REF_PARAM;
        if (e->kind == KDC_E_MEMBER && !e->arrow && e->nkids)
            e = kdc_expr_strip(e->kids[0]);
        else if (e->kind == KDC_E_INDEX && e->nkids && e->kids[0]->type &&
                 strchr(e->kids[0]->type, '[') && !strchr(e->kids[0]->type, '*'))
            e = kdc_expr_strip(e->kids[0]);
        else
            return 0;
    }
    return 0;
}

typedef struct dr_writes {
    kdc_facts_t *fx;
    KDC_VEC(const char *) fresh; /* locals (USRs) holding an object the function allocates */
} dr_writes_t;

static int is_allocation(const kdc_expr_t *e) {
    static const char *const alloc[] = {"malloc", "calloc", "realloc", "strdup", "strndup",
                                        "aligned_alloc", "reallocarray", NULL};
    e = kdc_expr_strip(e);
    if (!e || e->kind != KDC_E_CALL || !e->name)
        return 0;
    for (size_t i = 0; alloc[i]; i++)
        if (!strcmp(e->name, alloc[i]))
            return 1;
    return !strncmp(e->name, "operator new", 12);
}

static int find_fresh(const kdc_expr_t *e, void *arg) {
    dr_writes_t *d = arg;
    const kdc_expr_t *lv = kdc_expr_strip(kdc_expr_assigned(e));
    if (lv && lv->kind == KDC_E_REF && lv->ref == KDC_REF_LOCAL && lv->usr &&
        e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        is_allocation(e->kids[1]))
        KDC_VEC_PUSH(d->fresh, lv->usr);
    return 0;
}

/* Is the lvalue part of an object the function allocated itself (etry =
 * calloc(..); etry->key = ..)? Filling in a new record is its initialization;
 * where the record is then put (a list head, a queue) is what others read. */
static int in_fresh_object(const dr_writes_t *d, const kdc_expr_t *lv) {
    for (const kdc_expr_t *e = kdc_expr_strip(lv); e;) {
        if (e->kind == KDC_E_REF) {
            for (size_t i = 0; e->usr && i < d->fresh.n; i++)
                if (d->fresh.v[i] == e->usr)
                    return 1;
            return 0;
        }
        if ((e->kind == KDC_E_MEMBER || e->kind == KDC_E_INDEX ||
             (e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF)) && e->nkids)
            e = kdc_expr_strip(e->kids[0]);
        else
            return 0;
    }
    return 0;
}

static int collect_written(const kdc_expr_t *e, void *arg) {
    dr_writes_t *d = arg;
    kdc_facts_t *fx = d->fx;
    const kdc_expr_t *target = kdc_expr_assigned(e);
    if (!target && e->kind == KDC_E_CALL && e->name &&
        (strstr(e->name, "atomic") || strstr(e->name, "__sync_") || strstr(e->name, "fetch_")) &&
        e->nkids) {
        /* atomic_fetch_sub(&t->pending, 1), __atomic_store_n(&st->done, 1, ...) */
        const kdc_expr_t *a = kdc_expr_strip(e->kids[0]);
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR)
            target = a->kids[0];
    }
    const char *k = target && !in_own_frame(target) && !in_fresh_object(d, target)
                        ? kdc__lkey(fx, target)
                        : NULL;
    if (k)
        kdc_strmap_put(&fx->dr_state, k, (void *)1);
    /* m->_private (C) / message.msg_opaque() (C++): the per-message opaque */
    if ((e->kind == KDC_E_MEMBER && e->name && !strcmp(e->name, "_private")) ||
        (e->kind == KDC_E_CALL && e->name && strstr(e->name, "::msg_opaque")))
        fx->dr_reads_opaque = 1;
    return 0;
}

static const char *opaque_key(const kdc_facts_t *fx, const kdc_expr_t *call);
static const kdc_expr_t *produce_opaque(const kdc_expr_t *call, const kdc_api_t *api);

/* A callback that writes through the message opaque writes whatever each
 * produce passed as its opaque: those places are delivery state too. */
static const char *deref_key(const kdc_facts_t *fx, const char *k) {
    char buf[4096];
    snprintf(buf, sizeof buf, "D:%s", k);
    return kdc_intern(fx->p, buf);
}

static void add_opaque_cells(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const char *k = opaque_key(fx, f->calls[c]);
            if (!k)
                continue;
            kdc_strmap_put(&fx->dr_state, k, (void *)1);
            /* an opaque that is a pointer (not &cell): the cell is what it points to */
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            const kdc_expr_t *o = kdc_expr_strip(produce_opaque(f->calls[c], api));
            if (!(o->kind == KDC_E_UNARY && o->op == KDC_OP_ADDR))
                kdc_strmap_put(&fx->dr_state, deref_key(fx, k), (void *)1);
        }
    }
}

/* A delivery-state cell handed to a function by address is delivery state
 * there too, and the other way round: `int remains = 0;
 * produce_msgs(rk, &remains); wait_delivery(rk, &remains);` where
 * produce_msgs passes its `int *counterp` as the opaque and wait_delivery
 * loops on `*counterp > 0`. Pointer arguments pass the cell they point to. */
static int share_cell(kdc_facts_t *fx, const char *a, const char *b) {
    int ina = a && kdc_strmap_get(&fx->dr_state, a), inb = b && kdc_strmap_get(&fx->dr_state, b);
    if (!a || !b || ina == inb)
        return 0;
    kdc_strmap_put(&fx->dr_state, ina ? b : a, (void *)1);
    return 1;
}

static void follow_cells_through_calls(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (int round = 0, changed = 1; changed && round < 8; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(fx->p, i);
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_expr_t *call = f->calls[c];
                const kdc_func_t *g = kdc_api_lookup(call) ? NULL : kdc__callee_func(fx, f, call);
                for (unsigned a = 0; g && a < call->nkids && a < g->nparams; a++) {
                    const kdc_expr_t *arg = kdc_expr_strip(call->kids[a]);
                    const char *param = g->param_usrs[a] ? deref_key(fx, g->param_usrs[a]) : NULL;
                    const char *cell = NULL;
                    if (arg && arg->kind == KDC_E_UNARY && arg->op == KDC_OP_ADDR && arg->nkids == 1)
                        cell = kdc__lkey(fx, arg->kids[0]);
                    else if (arg && (arg->kind == KDC_E_REF || arg->kind == KDC_E_MEMBER) &&
                             kdc__lkey(fx, arg))
                        cell = deref_key(fx, kdc__lkey(fx, arg));
                    changed |= share_cell(fx, cell, param);
                }
            }
        }
    }
}

static void compute_dr_state(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    /* C++: DeliveryReportCb::dr_cb overrides are delivery-report callbacks. */
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        size_t len = strlen(f->name);
        if (f->class_usr && len >= 7 && !strcmp(f->name + len - 7, "::dr_cb")) {
            kdc__add_dr_func(fx, f);
            KDC_VEC_PUSH(fx->dr_callbacks, f);
            KDC_VEC_PUSH(fx->dr_sites, (const kdc_expr_t *)NULL);
        }
    }
    /* A library's delivery-report callback for its users to register
     * (libkdc's kdc_dr_msg_cb): an external function with dr_msg_cb's
     * signature that nothing in the program registers. What it writes is
     * delivery state to the library's own waits. Not a registered callback
     * (dr_callbacks): no rule reports on it as one. */
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        if (!f->is_static && !f->class_usr && f->body && f->nparams == 3 && f->param_types &&
            f->param_types[0] && f->param_types[1] && f->param_types[2] &&
            strstr(f->param_types[0], "rd_kafka_t") &&
            strstr(f->param_types[1], "rd_kafka_message_t") &&
            !strcmp(f->param_types[2], "void *"))
            kdc__add_dr_func(fx, f);
    }
    /* Close over the functions they call. */
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(fx->p, i);
            if (!kdc_strmap_get(&fx->dr_funcs, f->id))
                continue;
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_func_t *g = kdc__callee_func(fx, f, f->calls[c]);
                if (g && !kdc_strmap_get(&fx->dr_funcs, g->id)) {
                    kdc__add_dr_func(fx, g);
                    changed = 1;
                }
            }
        }
    }
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        if (kdc_strmap_get(&fx->dr_funcs, f->id)) {
            dr_writes_t d = {fx, {0}};
            kdc_func_walk_exprs(f, find_fresh, &d);
            kdc_func_walk_exprs(f, collect_written, &d);
            free(d.fresh.v);
        }
    }
    if (fx->dr_reads_opaque)
        add_opaque_cells(fx);
    follow_cells_through_calls(fx);
}

/* ---------- produces, commits, confirmations ---------- */

static const kdc_expr_t *produce_opaque(const kdc_expr_t *call, const kdc_api_t *api) {
    if (api->varargs)
        return kdc_api_producev_arg(call, 6 /* RD_KAFKA_VTYPE_OPAQUE */);
    if (call->is_method && call->nkids)
        return call->kids[call->nkids - 1]; /* C++ produce(): msg_opaque is last */
    return kdc_api_arg(call, api->opaque);
}

static const char *opaque_key(const kdc_facts_t *fx, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api || !(api->roles & KDC_API_PRODUCE))
        return NULL;
    const kdc_expr_t *o = kdc_expr_strip(produce_opaque(call, api));
    if (!o || kdc_expr_is_null(o))
        return NULL;
    if (o->kind == KDC_E_UNARY && o->op == KDC_OP_ADDR && o->nkids == 1)
        return kdc__lkey(fx, o->kids[0]);
    return kdc__lkey(fx, o);
}

static int name_is_dlq(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return kdc__match_any(fx->opts.dlq_name_patterns, kdc_expr_root_name(e));
}

/* ---------- DLQ names where they are used ---------- */

/* Does e name a DLQ topic here, by the values that reach it: a literal; each
 * branch of `a ? b : c`; each value assigned to a local variable; a helper of
 * the program by what it returns for THIS call (a parameter it returns is this
 * call's argument: env_or("OUT", "amounts.priced") does not name a DLQ though
 * env_or("DLQ", "amounts.dlq") does). A string from outside the program
 * (getenv, a library call) is no evidence of a DLQ. 1 or 0; -1 when that
 * cannot be told here (the caller falls back to every value e may hold). */
static int value_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e, int depth);

/* Either of two answers (1 wins; -1 unless both are 0). */
static int either(int a, int b) {
    return a == 1 || b == 1 ? 1 : a == 0 && b == 0 ? 0 : -1;
}

typedef struct local_vals {
    const char *usr;
    const kdc_expr_t *v[8];
    int n, other;
} local_vals_t;

static int find_local_vals(const kdc_expr_t *e, void *arg) {
    local_vals_t *lv = arg;
    const kdc_expr_t *w = kdc_expr_strip(kdc_expr_assigned(e));
    if (!w && e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1)
        w = kdc_expr_strip(e->kids[0]); /* its address taken: written anywhere */
    if (!w || w->kind != KDC_E_REF || w->usr != lv->usr)
        return 0;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && lv->n < 8)
        lv->v[lv->n++] = e->kids[1];
    else
        lv->other = 1;
    return 0;
}

typedef struct ret_vals {
    const kdc_expr_t *v[8];
    int n, other;
} ret_vals_t;

static void find_returns(const kdc_stmt_t *st, void *arg) {
    ret_vals_t *rv = arg;
    if (st->kind != KDC_S_RETURN)
        return;
    if (st->expr && rv->n < 8)
        rv->v[rv->n++] = st->expr;
    else
        rv->other = 1;
}

/* A value g returns for `call` (made in f). */
static int returned_dlq(const kdc_facts_t *fx, const kdc_func_t *g, const kdc_expr_t *v,
                        const kdc_func_t *f, const kdc_expr_t *call, int depth) {
    v = kdc_expr_strip(v);
    if (v && v->kind == KDC_E_COND && v->nkids == 3)
        return either(returned_dlq(fx, g, v->kids[1], f, call, depth),
                      returned_dlq(fx, g, v->kids[2], f, call, depth));
    if (v && v->kind == KDC_E_REF && v->ref == KDC_REF_PARAM &&
        kdc__param_fixed(fx, g, v->param_index)) {
        const kdc_expr_t *arg = kdc_call_arg(call, (unsigned)v->param_index);
        return arg ? value_dlq(fx, f, arg, depth + 1) : -1;
    }
    return value_dlq(fx, g, v, depth + 1);
}

static int value_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e, int depth) {
    e = kdc_expr_strip(e);
    if (!e || depth > 4)
        return -1;
    const kdc_expr_t *lit = kdc__literal(e);
    if (lit)
        return kdc__match_any(fx->opts.dlq_topic_patterns, lit->str);
    if (e->kind == KDC_E_NULL)
        return 0;
    if (e->kind == KDC_E_COND && e->nkids == 3)
        return either(value_dlq(fx, f, e->kids[1], depth), value_dlq(fx, f, e->kids[2], depth));
    if (e->kind == KDC_E_REF && e->ref == KDC_REF_LOCAL && e->usr) {
        local_vals_t lv = {.usr = e->usr};
        kdc_func_walk_exprs(f, find_local_vals, &lv);
        int r = lv.n && !lv.other ? 0 : -1;
        for (int i = 0; i < lv.n && r != 1; i++)
            r = either(r, value_dlq(fx, f, lv.v[i], depth + 1));
        return r;
    }
    const kdc_api_t *api = e->kind == KDC_E_CALL ? kdc_api_lookup(e) : NULL;
    if (api && (api->roles & KDC_API_TOPIC_NEW)) /* a topic handle: by its name */
        return value_dlq(fx, f, kdc_api_arg(e, api->topic), depth + 1);
    if (e->kind != KDC_E_CALL || e->callee_expr || e->is_method)
        return -1;
    const kdc_func_t *g = kdc__callee_func(fx, f, e);
    if (!g) /* getenv(), a library's string: from outside; librdkafka's: cannot tell */
        return e->callee_system && !kdc_api_is_librdkafka(e) ? 0 : -1;
    ret_vals_t rv = {0};
    kdc_stmt_walk(g->body, find_returns, &rv);
    int r = rv.n && !rv.other ? 0 : -1;
    for (int i = 0; i < rv.n && r != 1; i++)
        r = either(r, returned_dlq(fx, g, rv.v[i], f, e, depth));
    return r;
}

int kdc__strings_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    if (!e)
        return 0;
    const kdc_expr_t *s = kdc__literal(e);
    if (s)
        return kdc__match_any(fx->opts.dlq_topic_patterns, s->str);
    int here = f ? value_dlq(fx, f, e, 0) : -1;
    if (here >= 0)
        return here;
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    int r = 0;
    size_t n = kdc_pts_nobjs(fx->pts);
    for (size_t i = 0; i < n && !r; i++) {
        if (!kdc_bits_get(&b, i))
            continue;
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_STRING)
            r = kdc__match_any(fx->opts.dlq_topic_patterns, o->str);
        else if (o->kind == KDC_OBJ_TOPIC) {
            const objinfo_t *ti = &fx->info[i];
            r = ti->name_expr && (kdc__strings_dlq(fx, ti->name_func, ti->name_expr) ||
                                  name_is_dlq(fx, ti->name_expr));
        }
    }
    kdc_bits_free(&b);
    return r;
}

int kdc__expr_names_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    return e && (kdc__strings_dlq(fx, f, e) || name_is_dlq(fx, e));
}

static int direct_dlq_produce(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                              const kdc_api_t *api) {
    if (api->roles & KDC_API_DLQ)
        return 1;
    const kdc_expr_t *topic =
        api->varargs ? kdc_api_producev_arg(call, 1 /* RD_KAFKA_VTYPE_TOPIC */)
                     : kdc_api_arg(call, api->topic);
    const kdc_expr_t *rkt = api->varargs ? kdc_api_producev_arg(call, 2 /* RKT */) : NULL;
    const kdc_expr_t *handle = kdc_api_arg(call, api->handle);
    return kdc__strings_dlq(fx, f, topic) || kdc__strings_dlq(fx, f, rkt) || name_is_dlq(fx, topic) ||
           name_is_dlq(fx, rkt) || name_is_dlq(fx, handle);
}

size_t kdc_facts_strings(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                         void (*fn)(const char *s, void *arg), void *arg, int *unknown) {
    if (!e) {
        if (unknown)
            *unknown = 1;
        return 0;
    }
    const kdc_expr_t *lit = kdc__literal(e);
    if (lit) {
        fn(lit->str, arg);
        return 1;
    }
    kdc_bits_t b;
    kdc_pts_expr(fx->pts, f, e, &b);
    size_t n = kdc_pts_nobjs(fx->pts), count = 0;
    for (size_t i = kdc_bits_next(&b, 0); i < n; i = kdc_bits_next(&b, i + 1)) {
        const kdc_obj_t *o = kdc_pts_obj(fx->pts, i);
        if (o->kind == KDC_OBJ_STRING) {
            fn(o->str, arg);
            count++;
        } else if (o->kind == KDC_OBJ_TOPIC && fx->info[i].name_expr) {
            count += kdc_facts_strings(fx, fx->info[i].name_func, fx->info[i].name_expr, fn, arg,
                                       unknown);
        } else if (o->kind == KDC_OBJ_UNKNOWN && unknown) {
            *unknown = 1;
        }
    }
    kdc_bits_free(&b);
    if (!count && unknown)
        *unknown = 1;
    return count;
}

const kdc_expr_t *kdc_facts_produce_topic(const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api || !(api->roles & KDC_API_PRODUCE))
        return NULL;
    if (api->varargs) {
        const kdc_expr_t *t = kdc_api_producev_arg(call, 1 /* RD_KAFKA_VTYPE_TOPIC */);
        return t ? t : kdc_api_producev_arg(call, 2 /* RD_KAFKA_VTYPE_RKT */);
    }
    return kdc_api_arg(call, api->topic);
}

int kdc_facts_is_dlq_produce(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    if (kdc_options_has_role(&fx->opts, call, KDC_ROLE_PRODUCE)) {
        /* a configured produce wrapper: any argument naming a dead-letter destination */
        for (unsigned i = 0; i < call->nkids; i++)
            if (kdc__strings_dlq(fx, f, call->kids[i]) || name_is_dlq(fx, call->kids[i]))
                return 1;
        return 0;
    }
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api)
        return (api->roles & KDC_API_PRODUCE) && direct_dlq_produce(fx, f, call, api);
    kdc_summary_t m;
    const kdc_summary_t *s = callee_summary(fx, f, call, &m);
    return s && s->pending_dlq;
}


typedef struct reads_ctx {
    const kdc_facts_t *fx;
    const char *opaque;
    int hit;
    const kdc_func_t *f; /* when set, a call of a helper that reads the state counts */
} reads_ctx_t;

static int reads_visit(const kdc_expr_t *e, void *arg) {
    reads_ctx_t *r = arg;
    if (e->kind == KDC_E_CALL && r->f && !kdc_api_lookup(e)) {
        kdc_summary_t m;
        const kdc_summary_t *s = callee_summary(r->fx, r->f, e, &m);
        if (s && s->reads_dr) {
            r->hit = 1;
            return 1;
        }
    }
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER &&
        !(e->kind == KDC_E_UNARY && e->op == KDC_OP_DEREF))
        return 0;
    const char *k = kdc__lkey(r->fx, e);
    if (k && ((r->opaque && k == r->opaque) || kdc_strmap_get(&r->fx->dr_state, k))) {
        r->hit = 1;
        return 1;
    }
    return 0;
}

/* Does the condition read delivery-report state (or the produce's opaque)? */
static int reads_dr_state(const kdc_facts_t *fx, const kdc_expr_t *cond, const char *opaque) {
    reads_ctx_t r = {fx, opaque, 0, NULL};
    kdc_expr_walk(cond, reads_visit, &r);
    return r.hit;
}

int kdc_facts_reads_delivery_state(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return reads_dr_state(fx, e, NULL);
}

/* ... also through helpers of f that read it (batch_delivered(b)). */
static int reads_dr_state_in(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *cond,
                             const char *opaque) {
    reads_ctx_t r = {fx, opaque, 0, f};
    kdc_expr_walk(cond, reads_visit, &r);
    return r.hit;
}

kdc_call_roles_t kdc_facts_call_roles(const kdc_facts_t *fx, const kdc_func_t *f,
                                      const kdc_expr_t *call) {
    kdc_summary_t m;
    call_effects_t e = effects_of(fx, f, call, &m);
    return (kdc_call_roles_t){.produces = e.produces,
                              .commits = e.commits,
                              .confirms = e.confirms,
                              .consumes = e.consumes,
                              .routes_dlq = e.routes_dlq};
}

/* Do f's callers give f, for the parameters in mask, a stream other than
 * stdout, stderr or a log (followed out through their own parameters, four
 * calls deep; a function nobody calls is given anything)? */
static int streams_written(const kdc_facts_t *fx, const kdc_func_t *f, uint32_t mask, int depth) {
    const frame_vec_t *callers = &fx->callers[f->index];
    if (!callers->n || depth > 4)
        return 1;
    for (size_t k = 0; k < callers->n; k++) {
        uint32_t up = 0;
        for (unsigned i = 0; i < 32; i++) {
            if (!(mask & (1u << i)))
                continue;
            const kdc_expr_t *a = kdc_expr_strip(kdc_call_arg(callers->v[k].call, i));
            int p = stream_param_of(callers->v[k].f, a);
            if (p >= 0)
                up |= 1u << p;
            else if (!a || !kdc__is_console_or_log(a))
                return 1;
        }
        if (up && streams_written(fx, callers->v[k].f, up, depth + 1))
            return 1;
    }
    return 0;
}

int kdc_facts_call_effect(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    kdc_summary_t m;
    call_effects_t e = effects_of(fx, f, call, &m);
    return e.effects || (e.stream_params && streams_written(fx, f, e.stream_params, 0));
}

/* A walk along paths on which a message is not (yet) confirmed: from a
 * produce to the commits it reaches (rules, pending-at-exit summaries), or
 * from a function's entry (does every path confirm?). */
typedef struct walk {
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    const kdc_expr_t *produce;  /* NULL when walking from the entry */
    const char *opaque;
    kdc_outcome_t outcome;      /* what conditions say about the produce's result */
    int prune_failure;          /* ignore paths where the produce itself failed */
    int stop_at_commit;
    int exit_reached;
    kdc_reached_fn reached;
    void *ctx;
    kdc_outcome_t txn[4];       /* commit_transaction calls of f: their success confirms */
    int ntxn;
    const char *flags[8];       /* variables of f assigned from delivery state (delivered = d.err == 0) */
    int nflags;
    const kdc_expr_t *flag_sets[16]; /* ... those assignments (path state bit 1 + j: flag j was
                                        overwritten since the walk started by a value that is
                                        not delivery state, and not set from it again) */
    int nflag_sets;
    const kdc_expr_t *status_loops[32]; /* conditions of loops over per-message statuses */
    int nstatus_loops;
    const char *ret_var;        /* what f returns to a framework that takes a value as its
                                   acknowledgement (iRet); path state bit 1 + nflags: it is
                                   known not to hold an acknowledging value */
} walk_t;

typedef struct walk_prep {
    walk_t *w;
    int in_status_loop;
} walk_prep_t;

static int is_api_call(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return e->kind == KDC_E_CALL && kdc_api_lookup(e) != NULL;
}

static int find_dr_flags(const kdc_expr_t *e, void *arg) {
    walk_t *w = arg;
    /* a read of the state, not a call that is given it (e = producev(.., OPAQUE(st), ..));
     * also counted up: pending += !d[i].done */
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN) &&
        e->nkids == 2 && w->nflag_sets < 16 &&
        !kdc_expr_walk(e->kids[1], is_api_call, NULL) &&
        reads_dr_state_in(w->fx, w->f, e->kids[1], w->opaque)) {
        const char *k = kdc__lkey(w->fx, e->kids[0]);
        int j = 0;
        while (k && j < w->nflags && w->flags[j] != k)
            j++;
        if (k && j == w->nflags && w->nflags < 8)
            w->flags[w->nflags++] = k;
        if (k && j < w->nflags)
            w->flag_sets[w->nflag_sets++] = e;
    }
    return 0;
}

static int mentions_key(const kdc_facts_t *fx, const kdc_expr_t *e, const char *const *keys, int n);

/* The index of the flag an assignment writes, or -1. */
static int flag_written(const walk_t *w, const kdc_expr_t *assign) {
    const kdc_expr_t *lv = kdc_expr_assigned(assign);
    const char *k = lv ? kdc__lkey(w->fx, lv) : NULL;
    for (int j = 0; k && j < w->nflags; j++)
        if (w->flags[j] == k)
            return j;
    return -1;
}

/* Does the condition read a flag that holds delivery state on this path? Not once
 * it was overwritten since the walk started by another value that is not a
 * constant (state bit 1 + j: iRet = checkFailedMessages(); .. iRet = writeKafka();
 * the status read before the produce says nothing about its message); a constant
 * only resets a counter the delivery state is added to (pending = 0; pending +=
 * !cells[i].done). */
static int mentions_live_flag(const walk_t *w, const kdc_expr_t *cond, int state) {
    for (int j = 0; j < w->nflags; j++)
        if (!(state & (2 << j)) && mentions_key(w->fx, cond, &w->flags[j], 1))
            return 1;
    return 0;
}

static int add_loop_cond(const kdc_expr_t *e, void *arg) {
    walk_t *w = arg;
    if (w->nstatus_loops < 32)
        w->status_loops[w->nstatus_loops++] = e;
    return 0;
}

static void find_if_reading(const kdc_stmt_t *st, void *arg) {
    walk_prep_t *p = arg;
    if (st->kind == KDC_S_IF && st->expr && reads_dr_state_in(p->w->fx, p->w->f, st->expr, p->w->opaque))
        p->in_status_loop = 1;
}

/* for (i = 0; i < n; i++) if (!d[i].done || d[i].err) return; — leaving the loop
 * through its condition means every status was checked. */
static void find_status_loops(const kdc_stmt_t *st, void *arg) {
    walk_t *w = arg;
    if ((st->kind != KDC_S_FOR && st->kind != KDC_S_WHILE && st->kind != KDC_S_DO) || !st->expr ||
        !st->body)
        return;
    walk_prep_t p = {w, 0};
    kdc_stmt_walk(st->body, find_if_reading, &p);
    if (p.in_status_loop)
        kdc_expr_walk(st->expr, add_loop_cond, w);
}

static void walk_prepare(walk_t *w) {
    kdc_func_walk_exprs(w->f, find_dr_flags, w);
    w->ret_var = ack_returned_var(w->fx, w->f);
    if (w->f->body)
        kdc_stmt_walk(w->f->body, find_status_loops, w);
}

typedef struct key_ctx {
    const kdc_facts_t *fx;
    const char *const *keys;
    int n, hit;
} key_ctx_t;

static int key_visit(const kdc_expr_t *e, void *arg) {
    key_ctx_t *k = arg;
    if (e->kind != KDC_E_REF && e->kind != KDC_E_MEMBER)
        return 0;
    const char *lk = kdc__lkey(k->fx, e);
    for (int i = 0; lk && i < k->n; i++)
        if (k->keys[i] == lk)
            return k->hit = 1;
    return 0;
}

static int mentions_key(const kdc_facts_t *fx, const kdc_expr_t *e, const char *const *keys, int n) {
    key_ctx_t k = {fx, keys, n, 0};
    kdc_expr_walk(e, key_visit, &k);
    return k.hit;
}

/* A successful rd_kafka_commit_transaction() (C++ Producer::commit_transaction)
 * flushes and fails when any message of the transaction was not delivered: its
 * success edge confirms every output produced in the transaction. */
static void walk_find_txn_commits(walk_t *w) {
    for (unsigned c = 0; c < w->f->ncalls && w->ntxn < 4; c++) {
        const kdc_expr_t *call = w->f->calls[c];
        if (call->name && (!strcmp(call->name, "rd_kafka_commit_transaction") ||
                           !strcmp(call->name, "RdKafka::Producer::commit_transaction")))
            kdc_outcome_init(&w->txn[w->ntxn++], w->fx->p, w->f, call);
    }
}

static int ret_bit(const walk_t *w) { return 2 << w->nflags; }

static int is_ret_var(const walk_t *w, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return w->ret_var && e && e->kind == KDC_E_REF && e->usr == w->ret_var;
}

static int returns_ret_var(const walk_t *w, const kdc_expr_t *value) { return is_ret_var(w, value); }

static int assigns_ret_var(const walk_t *w, const kdc_expr_t *assign) {
    return is_ret_var(w, kdc_expr_assigned(assign));
}

/* What a condition's outcome says of the returned variable: `iRet != RS_RET_OK`
 * (also `(iRet = call()) != RS_RET_OK`) taken true means it does not hold the
 * acknowledging value. */
static int ret_var_edge(const walk_t *w, const kdc_expr_t *cond, unsigned i, int state) {
    const kdc_expr_t *c = kdc_expr_strip(cond);
    int neg = 0;
    while (c && c->kind == KDC_E_UNARY && c->op == KDC_OP_NOT && c->nkids == 1) {
        neg ^= 1;
        c = kdc_expr_strip(c->kids[0]);
    }
    if (!c || c->kind != KDC_E_BINARY || (c->op != KDC_OP_EQ && c->op != KDC_OP_NE) || c->nkids != 2)
        return state;
    for (unsigned side = 0; side < 2; side++) {
        const kdc_expr_t *v = kdc_expr_strip(c->kids[side]);
        if (v && v->kind == KDC_E_BINARY && v->op == KDC_OP_ASSIGN && v->nkids == 2)
            v = kdc_expr_strip(v->kids[0]); /* (iRet = code) != RS_RET_OK */
        if (!is_ret_var(w, v))
            continue;
        int cls = ack_constant(w->fx, w->f, c->kids[1 - side]);
        if (cls < 0)
            return state;
        unsigned eq_edge = ((c->op == KDC_OP_EQ) ^ neg) ? 0 : 1; /* the edge where v == C */
        if (i == eq_edge)
            return cls ? state & ~ret_bit(w) : state | ret_bit(w);
        return cls ? state | ret_bit(w) : state;
    }
    return state;
}

/* Path state bit 0: delivery reports were served since the walk started. */
static int walk_visit(void *ctx, const kdc_cfg_t *g, int n, int state) {
    walk_t *w = ctx;
    const kdc_node_t *nd = &g->nodes[n];
    if (n == g->exit) {
        w->exit_reached = 1;
        return -1;
    }
    if (nd->kind == KDC_N_CALL) {
        kdc_summary_t m;
        call_effects_t e = effects_of(w->fx, w->f, nd->expr, &m);
        if (e.confirms)
            return -1;
        if (e.commits && w->stop_at_commit) {
            /* The first commit on the path is where the message is lost; later
             * commits on the same path are the same loss. */
            if (w->reached)
                w->reached(w->ctx, w->f, nd->expr);
            return -1;
        }
        if (e.serves_dr)
            state |= 1;
    } else if (nd->kind == KDC_N_RETURN && w->stop_at_commit &&
               kdc_facts_return_acks(w->fx, w->f, nd->expr) &&
               !(returns_ret_var(w, nd->expr) && (state & ret_bit(w)))) {
        /* the framework is told the input is done: a checkpoint, as a commit is */
        if (w->reached)
            w->reached(w->ctx, w->f, nd->expr);
        return -1;
    } else if (nd->kind == KDC_N_COND) {
        /* a wait loop on the delivery's state, or a check of it once reports were served
         * (directly, in a helper, or through a loop over per-message statuses) */
        if ((nd->loop_cond || (state & 1)) && reads_dr_state_in(w->fx, w->f, nd->expr, w->opaque))
            return -1;
        for (int i = 0; (state & 1) && i < w->nstatus_loops; i++)
            if (w->status_loops[i] == nd->expr)
                return -1;
        /* a flag set from the delivery's state (delivered = d.err == 0) gates what follows */
        if (w->nflags && mentions_live_flag(w, nd->expr, state))
            return -1;
    } else if (nd->kind == KDC_N_ASSIGN && w->ret_var && assigns_ret_var(w, nd->expr)) {
        const kdc_expr_t *e = nd->expr;
        int c = e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2
                    ? ack_constant(w->fx, w->f, e->kids[1])
                    : -1;
        state = c == 0 ? state | ret_bit(w) : state & ~ret_bit(w);
    }
    if (nd->kind == KDC_N_ASSIGN && w->nflags) {
        int j = flag_written(w, nd->expr);
        if (j >= 0) {
            int set = 0;
            for (int i = 0; i < w->nflag_sets && !set; i++)
                set = w->flag_sets[i] == nd->expr;
            const kdc_expr_t *e = nd->expr;
            const kdc_expr_t *r = e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2
                                      ? kdc_expr_strip(e->kids[1])
                                      : NULL;
            if (set)
                state &= ~(2 << j);
            else if (r && !r->has_ival && !(r->kind == KDC_E_REF && r->ref == KDC_REF_ENUMERATOR))
                state |= 2 << j;
        }
    }
    return state;
}

static int walk_edge(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int state) {
    walk_t *w = ctx;
    const kdc_node_t *nd = &g->nodes[n];
    if (nd->kind != KDC_N_COND)
        return state;
    for (int t = 0; t < w->ntxn; t++) {
        int fail = kdc_outcome_failure_edge(&w->txn[t], nd->expr);
        if (fail >= 0 && fail != (int)i)
            return -1; /* the transaction committed: its outputs are confirmed */
    }
    if (w->prune_failure && kdc_outcome_failure_edge(&w->outcome, nd->expr) == (int)i)
        return -1;
    return w->ret_var ? ret_var_edge(w, nd->expr, i, state) : state;
}

static int walk_from(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *produce,
                     int prune_failure, kdc_reached_fn reached, void *ctx) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || produce->call_id < 0 || g->call_node[produce->call_id] < 0)
        return 0;
    walk_t w = {.fx = fx, .f = f, .produce = produce, .opaque = opaque_key(fx, produce),
                .prune_failure = prune_failure, .stop_at_commit = 1, .reached = reached, .ctx = ctx};
    if (prune_failure)
        kdc_outcome_init(&w.outcome, fx->p, f, produce);
    walk_find_txn_commits(&w);
    walk_prepare(&w);
    kdc_search_t s = {walk_visit, NULL, &w, 4 << w.nflags};
    kdc_cfg_search_edges(g, g->call_node[produce->call_id], 0, &s, walk_edge);
    return w.exit_reached;
}

int kdc_facts_walk_unconfirmed(const kdc_facts_t *fx, const kdc_func_t *f,
                               const kdc_expr_t *produce, kdc_reached_fn reached, void *ctx) {
    return walk_from(fx, f, produce, 0, reached, ctx);
}

/* ---------- summaries ---------- */

/* Does e update a counter in place: x++, x += n, an atomic read-modify-write
 * (__sync_fetch_and_add(&x, 1), atomic_fetch_add(&x, 1))? It reads the
 * counter only to write it back: a statistic kept by the delivery-report
 * callback and the main code alike (rsyslog's STATSCOUNTER_INC) is updated
 * there, not read to decide anything. */
static int updates_in_place(const kdc_expr_t *e) {
    if (e->kind == KDC_E_UNARY && (e->op == KDC_OP_PREINC || e->op == KDC_OP_PREDEC ||
                                   e->op == KDC_OP_POSTINC || e->op == KDC_OP_POSTDEC))
        return 1;
    if (e->kind != KDC_E_CALL || !e->name || !e->nkids)
        return 0;
    static const char *const rmw[] = {"fetch_and_add", "fetch_and_sub", "add_and_fetch",
                                      "sub_and_fetch", "fetch_add", "fetch_sub", NULL};
    for (size_t i = 0; rmw[i]; i++)
        if (strstr(e->name, rmw[i]) && (strstr(e->name, "atomic") || strstr(e->name, "__sync_")))
            return 1;
    return 0;
}

/* Reads of delivery-report state outside the arguments of librdkafka calls (a
 * produce given the status cell as its opaque does not read it), and other
 * than a counter's update in place. */
static void reads_outside_api(const kdc_expr_t *e, reads_ctx_t *r) {
    if (!e || r->hit)
        return;
    if (e->kind == KDC_E_CALL && kdc_api_lookup(e))
        return;
    if (updates_in_place(e)) {
        for (unsigned i = 1; i < e->nkids && !r->hit; i++) /* the amount added */
            reads_outside_api(e->kids[i], r);
        return;
    }
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_COMPOUND_ASSIGN && e->nkids == 2) {
        reads_outside_api(e->kids[1], r);
        return;
    }
    if (reads_visit(e, r))
        return;
    for (unsigned i = 0; i < e->nkids && !r->hit; i++)
        reads_outside_api(e->kids[i], r);
    if (e->kind == KDC_E_CALL && e->recv)
        reads_outside_api(e->recv, r);
}

/* A function reads delivery-report state when what it decides does: a condition
 * (if, loops, switch) or the value it returns. A copy of the state into other
 * storage, or an update next to the callback's own (a shared list it appends to,
 * a statistic), does not make its result a delivery outcome. */
static void summary_reads_stmt(const kdc_stmt_t *st, void *arg) {
    reads_ctx_t *r = arg;
    switch (st->kind) {
    case KDC_S_IF: case KDC_S_WHILE: case KDC_S_DO: case KDC_S_FOR: case KDC_S_SWITCH:
    case KDC_S_RETURN:
        reads_outside_api(st->expr, r);
        break;
    default:
        break;
    }
}

/* Pass 1: may commit, may serve delivery reports (monotone in callees). */
static int summarize_effects(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    kdc_summary_t old = *s;
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; c < f->ncalls; c++) {
        const kdc_expr_t *call = f->calls[c];
        if (!g || g->call_node[c] < 0)
            continue;
        kdc_summary_t m;
        call_effects_t e = effects_of(fx, f, call, &m);
        s->commits |= e.commits;
        s->serves_dr |= e.serves_dr;
        s->effects |= e.effects;
        s->stream_params |= e.stream_params;
        s->routes_dlq |= e.routes_dlq;
        s->consumes |= e.consumes;
    }
    if (!s->reads_dr && f->body) {
        reads_ctx_t r = {fx, NULL, 0, f};
        kdc_stmt_walk(f->body, summary_reads_stmt, &r);
        s->reads_dr = (unsigned)r.hit;
    }
    return memcmp(s, &old, sizeof *s) != 0;
}

/* Pass 2: every path to the exit passes a confirmation (monotone: more
 * confirming callees only add barriers). */
static int summarize_confirms(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    if (!f->cfg || s->noreturn || s->confirms)
        return 0;
    walk_t w = {.fx = fx, .f = f};
    walk_find_txn_commits(&w);
    walk_prepare(&w);
    kdc_search_t srch = {walk_visit, NULL, &w, 4 << w.nflags};
    kdc_cfg_search_edges(f->cfg, ((const kdc_cfg_t *)f->cfg)->entry, 0, &srch, walk_edge);
    s->confirms = !w.exit_reached;
    return s->confirms;
}

/* Pass 3: a produced message may still be unconfirmed at the exit. */
static int summarize_pending(kdc_facts_t *fx, const kdc_func_t *f) {
    kdc_summary_t *s = &fx->sum[f->index];
    kdc_summary_t old = *s;
    const kdc_cfg_t *g = f->cfg;
    for (unsigned c = 0; c < f->ncalls && !(s->pending_produce && s->pending_dlq); c++) {
        const kdc_expr_t *call = f->calls[c];
        if (!g || g->call_node[c] < 0)
            continue;
        kdc_summary_t m;
        call_effects_t e = effects_of(fx, f, call, &m);
        const kdc_summary_t *cs = e.callee;
        if (!e.produces || !walk_from(fx, f, call, 1, NULL, NULL))
            continue;
        int dlq = kdc_facts_is_dlq_produce(fx, f, call);
        if (s->pending_produce && !(dlq && !s->pending_dlq))
            continue;
        s->pending_func = cs ? cs->pending_func : f;
        s->pending_site = cs ? cs->pending_site : call;
        s->pending_produce = 1;
        s->pending_dlq |= (unsigned)dlq;
    }
    return memcmp(s, &old, sizeof *s) != 0;
}

static void summarize_all(kdc_facts_t *fx, int (*pass)(kdc_facts_t *, const kdc_func_t *)) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (int round = 0; round < 16; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++)
            changed |= pass(fx, kdc_program_func(fx->p, i));
        if (!changed)
            break;
    }
}

/* ---------- calls that run more than once ---------- */

typedef struct cycle_walk {
    int start;
    int found;
} cycle_walk_t;

static int cycle_visit(void *arg, const kdc_cfg_t *g, int n, int st) {
    (void)g;
    cycle_walk_t *c = arg;
    if (n == c->start) {
        c->found = 1;
        return -1;
    }
    return st;
}

int kdc_call_in_loop(const kdc_func_t *f, const kdc_expr_t *call) {
    const kdc_cfg_t *g = f->cfg;
    if (!g || call->call_id < 0 || g->call_node[call->call_id] < 0)
        return 0;
    cycle_walk_t c = {g->call_node[call->call_id], 0};
    kdc_search_t s = {cycle_visit, NULL, &c, 1};
    kdc_cfg_search(g, c.start, 0, &s);
    return c.found;
}

int kdc_facts_func_runs_repeatedly(const kdc_facts_t *fx, const kdc_func_t *f, int depth) {
    if (depth < 0)
        return 0;
    if (depth > 2)
        depth = 2;
    unsigned char *memo = &fx->repeats[depth][f->index];
    if (*memo)
        return *memo == 2;
    const frame_vec_t *callers = &fx->callers[f->index];
    int repeats = callers->n > 1;
    for (size_t i = 0; i < callers->n && !repeats; i++) {
        const frame_t *fr = &callers->v[i];
        repeats = kdc_call_in_loop(fr->f, fr->call) ||
                  (depth > 0 && fr->f != f && kdc_facts_func_runs_repeatedly(fx, fr->f, depth - 1));
    }
    *memo = repeats ? 2 : 1;
    return repeats;
}

/* Who calls whom (direct calls and function pointers), and whether anything consumes. */
static void index_callers(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    fx->callers = calloc(nf ? nf : 1, sizeof *fx->callers);
    for (int d = 0; d < 3; d++)
        if (!(fx->repeats[d] = calloc(nf ? nf : 1, 1)))
            kdc_oom();
    if (!fx->callers)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if ((api && (api->roles & KDC_API_CONSUME)) ||
                kdc_options_has_role(&fx->opts, f->calls[c], KDC_ROLE_CONSUME))
                fx->consumes = 1;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(fx->pts, f, f->calls[c], &callees);
            for (size_t k = 0; k < callees.n; k++) {
                frame_t fr = {f, f->calls[c]};
                KDC_VEC_PUSH(fx->callers[callees.v[k]->index], fr);
            }
            free(callees.v);
        }
    }
}

int kdc_facts_program_consumes(const kdc_facts_t *fx) { return fx->consumes; }

int kdc_facts_func_program_consumes(const kdc_facts_t *fx, const kdc_func_t *f) {
    if (!fx->mains || !f || !fx->mains[f->index])
        return fx->consumes; /* one program, or code no main() reaches (a library) */
    return (fx->mains[f->index] & fx->mains_consuming) != 0;
}

/* Several programs in one analysis (a compile database of a monorepo with one
 * main() per service): which main()s reach each function, and which of those
 * programs consume. */
static void index_programs(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p), nmains = 0;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        nmains += f->body && !f->class_usr && !strcmp(f->name, "main");
    }
    if (nmains < 2 || nmains > 64)
        return;
    fx->mains = calloc(nf, sizeof *fx->mains);
    size_t *work = malloc(nf * sizeof *work);
    if (!fx->mains || !work)
        kdc_oom();
    unsigned bit = 0;
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *m = kdc_program_func(fx->p, i);
        if (!m->body || m->class_usr || strcmp(m->name, "main"))
            continue;
        uint64_t mask = (uint64_t)1 << bit++;
        size_t n = 0;
        fx->mains[m->index] |= mask;
        work[n++] = m->index;
        while (n) {
            const kdc_func_t *f = kdc_program_func(fx->p, work[--n]);
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                if (api && (api->roles & KDC_API_CONSUME))
                    fx->mains_consuming |= mask;
                kdc_funcvec_t callees = {0};
                kdc_pts_callees(fx->pts, f, f->calls[c], &callees);
                for (size_t k = 0; k < callees.n; k++)
                    if (!(fx->mains[callees.v[k]->index] & mask)) {
                        fx->mains[callees.v[k]->index] |= mask;
                        work[n++] = callees.v[k]->index;
                    }
                free(callees.v);
            }
        }
    }
    free(work);
}

size_t kdc_facts_dr_callbacks(const kdc_facts_t *fx, const kdc_func_t ***funcs,
                              const kdc_expr_t ***sites) {
    *funcs = (const kdc_func_t **)fx->dr_callbacks.v;
    *sites = (const kdc_expr_t **)fx->dr_sites.v;
    return fx->dr_callbacks.n;
}

kdc_facts_t *kdc_facts_build(kdc_program_t *p, const kdc_options_t *opts) {
    kdc_facts_t *fx = calloc(1, sizeof *fx);
    if (!fx)
        kdc_oom();
    fx->p = p;
    fx->opts = *opts;
    kdc_api_use_contracts(p); /* libkdc's declared meanings, before any lookup */
    if (!fx->opts.dlq_topic_patterns)
        fx->opts.dlq_topic_patterns = kdc_default_dlq_topic_patterns;
    if (!fx->opts.dlq_name_patterns)
        fx->opts.dlq_name_patterns = kdc_default_dlq_name_patterns;
    if (!fx->opts.ack_returns)
        fx->opts.ack_returns = kdc_ack_presets_returns;
    if (!fx->opts.ack_calls)
        fx->opts.ack_calls = kdc_ack_presets_calls;
    kdc_strmap_init(&fx->dr_state);
    kdc_strmap_init(&fx->dr_funcs);
    size_t nf = kdc_program_nfuncs(p);
    fx->sum = calloc(nf ? nf : 1, sizeof *fx->sum);
    if (!fx->sum)
        kdc_oom();

    kdc__build_cfgs(fx);
    fx->pts = kdc_pts_build(p);
    index_callers(fx);
    index_programs(fx);
    kdc__describe_clients(fx);
    compute_dr_state(fx);
    summarize_all(fx, summarize_effects);
    summarize_all(fx, summarize_confirms);
    summarize_all(fx, summarize_pending);
    kdc__summarize_checkpoints(fx);
    kdc__compute_input_flow(fx);
    fx->complete = 1;
    return fx;
}

const kdc_call_site_t *kdc_facts_named_callers(const kdc_facts_t *fx, const kdc_func_t *g,
                                               size_t *n) {
    *n = 0;
    if (!fx->complete)
        return NULL;
    size_t nf = kdc_program_nfuncs(fx->p);
    if (!fx->named_callers) {
        kdc_facts_t *w = (kdc_facts_t *)fx; /* an index, not a change of the facts */
        if (!(w->named_callers = calloc(nf ? nf : 1, sizeof *w->named_callers)))
            kdc_oom();
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *c = kdc_program_func(fx->p, i);
            for (unsigned k = 0; k < c->ncalls; k++) {
                const kdc_expr_t *cc = c->calls[k];
                if (!cc->usr || cc->callee_system || kdc_api_lookup(cc))
                    continue;
                const kdc_func_t *callee = kdc_program_find_callee(fx->p, cc->usr, c->tu);
                if (callee)
                    KDC_VEC_PUSH(w->named_callers[callee->index], ((kdc_call_site_t){c, cc}));
            }
        }
    }
    *n = fx->named_callers[g->index].n;
    return fx->named_callers[g->index].v;
}

void kdc_facts_free(kdc_facts_t *fx) {
    if (!fx)
        return;
    for (size_t i = 0; fx->named_callers && i < kdc_program_nfuncs(fx->p); i++)
        free(fx->named_callers[i].v);
    free(fx->named_callers);
    kdc__free_clients(fx);
    kdc__free_checkpoints(fx);
    kdc__free_input_flow(fx);
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; fx->callers && i < nf; i++)
        free(fx->callers[i].v);
    free(fx->callers);
    for (int d = 0; d < 3; d++)
        free(fx->repeats[d]);
    free(fx->mains);
    free(fx->sum);
    kdc_pts_free(fx->pts);
    kdc_strmap_free(&fx->dr_state);
    kdc_strmap_free(&fx->dr_funcs);
    free(fx->param_writes);
    free(fx->dr_callbacks.v);
    free(fx->dr_sites.v);
    free(fx);
}

const kdc_options_t *kdc_facts_options(const kdc_facts_t *fx) { return &fx->opts; }
const kdc_pts_t *kdc_facts_pts_of(const kdc_facts_t *fx) { return fx->pts; }
const kdc_summary_t *kdc_facts_summary(const kdc_facts_t *fx, const kdc_func_t *f) {
    return &fx->sum[f->index];
}
