/*
 * Values derived from consumed messages (facts.h, kdc_facts_output_tied_to_input):
 * a flow-insensitive, field-based propagation over the whole program, on the
 * same storage keys as handle tracking (kdc_pts_lvalue_key).
 *
 * Sources: what a consume call returns (rd_kafka_consumer_poll(),
 * rd_kafka_consume(), C++ consume()) or fills in (the message array of
 * rd_kafka_consume_batch()), the message of a consume callback
 * (rd_kafka_consume_callback(), rd_kafka_conf_set_consume_cb(), C++
 * ConsumeCb::consume_cb), rd_kafka_event_message_next(), and message
 * parameters of functions nothing in the analysed code calls (an entry point
 * a framework hands messages to), delivery-report callbacks excepted.
 *
 * Propagation: a member, element or dereference of a derived value; any
 * expression with a derived operand; the result of a library call with a
 * derived argument (strdup(m->payload), msg->payload()); assignments;
 * arguments into parameters and parameters back out through pointers and
 * references; return values; the buffers and objects a call outside the
 * program fills from a derived argument (memcpy(buf, m->payload, n),
 * out.append(m->payload())), and the parameters of a function such a call is
 * given along with one (pthread_create(&t, NULL, worker, m)).
 *
 * Handles given message data (kdc_facts_handle_carries_input): a call outside
 * the program and librdkafka (a function, not a C++ method) whose FIRST
 * argument is an object handle and a later argument a derived value stores
 * that value into the object
 * (sqlite3_bind_text(stmt, 1, m->key, ..), curl_easy_setopt(h, opt, body),
 * json_object_set(o, k, v)); a later call on the handle (sqlite3_step(stmt),
 * curl_easy_perform(h)) processes the message. A handle is a variable or
 * field (not an expression) of one-level pointer type to a named,
 * non-const type that is not a number, a character buffer, void or a C
 * stream (FILE *); neither the handle nor the storing call is named like a
 * log (log, trace, debug: the streams kdc__is_console_or_log skips). The
 * value is data: not a FILE *, an out-parameter (&x, T **) or the message
 * object itself. A program function that stores into a handle parameter so
 * makes its caller's argument one.
 */
#define _GNU_SOURCE /* strcasestr */
#include "facts_int.h"
#include "api.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *prefixed(const kdc_facts_t *fx, const char *prefix, const char *k) {
    char buf[4096];
    snprintf(buf, sizeof buf, "%s%s", prefix, k);
    return kdc_intern(fx->p, buf);
}

static const char *ret_key(const kdc_facts_t *fx, const kdc_func_t *f) {
    return prefixed(fx, "R:", f->id);
}

/* The two sets propagated: storage keys holding derived values, and handles given them. */
enum { FLOW_DERIVED, FLOW_CARRIERS };

static const kdc_strmap_t *flow_set(const kdc_facts_t *fx, int set) {
    return set == FLOW_DERIVED ? &fx->derived : &fx->carriers;
}

/* The keys a function's walk asked about and found absent, per set: the walk's
 * only inputs that can change (keys are never removed), so while none of them
 * is added, walking it again adds nothing. */
typedef struct flow_absent {
    KDC_VEC(const char *) keys[2];
} flow_absent_t;

/* Is k in the set? An absent key is recorded for the walk under way. */
static int in_set(const kdc_facts_t *fx, int set, const char *k) {
    if (!k)
        return 0;
    if (kdc_strmap_get(flow_set(fx, set), k))
        return 1;
    if (fx->flow_absent)
        KDC_VEC_PUSH(fx->flow_absent->keys[set], k);
    return 0;
}

/* Adds k to the set; returns 1 when it is new. */
static int add_to(kdc_facts_t *fx, int set, const char *k) {
    if (!k || kdc_strmap_get(flow_set(fx, set), k))
        return 0;
    kdc_strmap_put(set == FLOW_DERIVED ? &fx->derived : &fx->carriers, k, (void *)1);
    return 1;
}

static int has(const kdc_facts_t *fx, const char *k) {
    return in_set(fx, FLOW_DERIVED, k);
}

static int add(kdc_facts_t *fx, const char *k) {
    return add_to(fx, FLOW_DERIVED, k);
}

static int message_type(const char *type) {
    return type && (strstr(type, "rd_kafka_message_t") || strstr(type, "rd_kafka_message_s") ||
                    strstr(type, "RdKafka::Message"));
}

static int is_consume_source(const kdc_facts_t *fx, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    return (api && (api->roles & KDC_API_CONSUME)) ||
           (call->name && !strcmp(call->name, "rd_kafka_event_message_next")) ||
           kdc_options_has_role(&fx->opts, call, KDC_ROLE_CONSUME);
}

static int derived(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e, int depth);

static int any_kid_derived(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                           int depth) {
    for (unsigned i = 0; i < e->nkids; i++)
        if (derived(fx, f, e->kids[i], depth + 1))
            return 1;
    return 0;
}

static int derived(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e, int depth) {
    e = kdc_expr_strip(e);
    if (!e || depth > 48)
        return 0;
    switch (e->kind) {
    case KDC_E_REF:
        return e->ref != KDC_REF_FUNCTION && e->ref != KDC_REF_ENUMERATOR &&
               has(fx, kdc__lkey(fx, e));
    case KDC_E_MEMBER:
        return has(fx, kdc__lkey(fx, e)) || (e->nkids && derived(fx, f, e->kids[0], depth + 1));
    case KDC_E_UNARY:
        if (e->op == KDC_OP_DEREF && has(fx, kdc__lkey(fx, e)))
            return 1;
        return any_kid_derived(fx, f, e, depth);
    case KDC_E_INDEX:
        return e->nkids && derived(fx, f, e->kids[0], depth + 1);
    case KDC_E_CALL: {
        if (is_consume_source(fx, e))
            return 1;
        const kdc_func_t *g = kdc_api_lookup(e) ? NULL : kdc__callee_func(fx, f, e);
        if (g)
            return has(fx, ret_key(fx, g));
        if (e->callee_expr)
            return 0;
        return (e->recv && derived(fx, f, e->recv, depth + 1)) || any_kid_derived(fx, f, e, depth);
    }
    case KDC_E_BINARY:
        if (e->op == KDC_OP_ASSIGN && e->nkids == 2)
            return derived(fx, f, e->kids[1], depth + 1);
        return any_kid_derived(fx, f, e, depth);
    case KDC_E_COND:
    case KDC_E_OTHER:
    case KDC_E_INIT:
        return any_kid_derived(fx, f, e, depth);
    default:
        return 0;
    }
}

/* The storage an argument hands over: x for &x, the argument itself for an
 * array, pointer or object; NULL for a value. */
static const char *handed_storage(const kdc_facts_t *fx, const kdc_expr_t *arg) {
    arg = kdc_expr_strip(arg);
    if (!arg)
        return NULL;
    if (arg->kind == KDC_E_UNARY && arg->op == KDC_OP_ADDR && arg->nkids == 1)
        return kdc__lkey(fx, arg->kids[0]);
    if (arg->kind == KDC_E_REF || arg->kind == KDC_E_MEMBER || arg->kind == KDC_E_INDEX)
        return kdc__lkey(fx, arg);
    return NULL;
}

/* The program function an argument names (worker, &worker), or NULL. */
static const kdc_func_t *function_value(const kdc_facts_t *fx, const kdc_func_t *f,
                                        const kdc_expr_t *a) {
    a = kdc_expr_strip(a);
    if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1)
        a = kdc_expr_strip(a->kids[0]);
    if (!a || a->kind != KDC_E_REF || a->ref != KDC_REF_FUNCTION || !a->usr)
        return NULL;
    return kdc_program_find_callee(fx->p, a->usr, f->tu);
}

/* ---------- handles given message data ---------- */

static int carries(const kdc_facts_t *fx, const char *k) {
    return in_set(fx, FLOW_CARRIERS, k);
}

static int add_carrier(kdc_facts_t *fx, const char *k) {
    return add_to(fx, FLOW_CARRIERS, k);
}

static int word_at(const char *s, const char *w) {
    size_t n = strlen(w);
    return !strncmp(s, w, n) && (!s[n] || s[n] == ' ' || s[n] == '*');
}

static const char *skip_word(const char *s, const char *w) {
    return word_at(s, w) ? s + strlen(w) + (s[strlen(w)] == ' ') : s;
}

/* "sqlite3_stmt *", "CURL *", "struct conn *": one pointer to a named type
 * an object is behind; not a number, character or void buffer, not a stream
 * (FILE *), not const (nothing is stored into it), not an array or function. */
static int handle_type(const char *type) {
    static const char *const scalars[] = {
        "void",     "char",      "signed",          "unsigned",  "short",
        "int",      "long",      "float",           "double",    "_Bool",
        "bool",     "size_t",    "ssize_t",         "off_t",     "wchar_t",
        "intptr_t", "uintptr_t", "intmax_t",        "uintmax_t", "ptrdiff_t",
        "enum",     "FILE",      "struct _IO_FILE", NULL};
    if (!type)
        return 0;
    size_t n = strlen(type);
    if (n < 3 || type[n - 1] != '*' || strchr(type, '[') || strchr(type, '(') ||
        strchr(type, '&') || strchr(type, ':') || strchr(type, '<') ||
        strchr(type, '*') != type + n - 1)
        return 0;
    const char *t = skip_word(skip_word(type, "volatile"), "struct");
    if (word_at(t, "const"))
        return 0;
    for (size_t i = 0; scalars[i]; i++)
        if (word_at(t, scalars[i]) || word_at(type, scalars[i]))
            return 0;
    /* int8_t .. uint64_t, u_char, gchar: a number or a byte buffer */
    const char *b = t + (t[0] == 'u');
    if (!strncmp(b, "int", 3) && b[3] >= '0' && b[3] <= '9')
        return 0;
    return strcmp(t, "u_char *") && strcmp(t, "gchar *") && strcmp(t, "guchar *");
}

/* The storage key of a handle argument (a variable or field), or NULL. */
static const char *handle_key(const kdc_facts_t *fx, const kdc_expr_t *arg) {
    arg = kdc_expr_strip(arg);
    if (!arg || (arg->kind != KDC_E_REF && arg->kind != KDC_E_MEMBER) ||
        (arg->kind == KDC_E_REF && arg->ref != KDC_REF_LOCAL && arg->ref != KDC_REF_PARAM &&
         arg->ref != KDC_REF_GLOBAL) ||
        !handle_type(arg->type) || kdc__is_console_or_log(arg))
        return NULL;
    return kdc__lkey(fx, arg);
}

/* A value a storing call takes as data: not a stream (FILE *), not an
 * out-parameter (&x, a pointer to a pointer), not the message object itself
 * (kdc_assignment_stamp(a, m) records where the message is from). */
static int data_value(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    if (!e || (e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR))
        return 0;
    return !e->type || (!strstr(e->type, "FILE") && !strstr(e->type, "**") &&
                        !strstr(e->type, "* *") && !message_type(e->type));
}

typedef struct prop {
    kdc_facts_t *fx;
    const kdc_func_t *f;
    int changed;
} prop_t;

/* A parameter through which the callee can write its caller's storage. */
static int writable_param(const kdc_func_t *g, unsigned i) {
    const char *t = g->param_types ? g->param_types[i] : NULL;
    return t && (strchr(t, '&') || strchr(t, '*')) && strncmp(t, "const ", 6);
}

static void bind_program_call(prop_t *q, const kdc_expr_t *call, const kdc_func_t *g) {
    kdc_facts_t *fx = q->fx;
    for (unsigned i = 0; i < call->nkids && i < g->nparams; i++) {
        const char *param = g->param_usrs[i];
        if (!param)
            continue;
        const kdc_expr_t *arg = call->kids[i];
        if (derived(fx, q->f, arg, 0))
            q->changed |= add(fx, param);
        const kdc_expr_t *a = kdc_expr_strip(arg);
        /* &x into `T *p`: *p is x */
        if (a && a->kind == KDC_E_UNARY && a->op == KDC_OP_ADDR && a->nkids == 1) {
            const char *x = kdc__lkey(fx, a->kids[0]);
            if (derived(fx, q->f, a->kids[0], 0))
                q->changed |= add(fx, prefixed(fx, "D:", param));
            if (has(fx, prefixed(fx, "D:", param)))
                q->changed |= add(fx, x);
        } else if (writable_param(g, i) && has(fx, param)) {
            /* filled through a reference, a pointer or an array: render(m, buf, n) */
            q->changed |= add(fx, handed_storage(fx, arg));
        }
        /* bind_event(stmt, m): the helper stores into the handle it is given */
        if (carries(fx, param))
            q->changed |= add_carrier(fx, handle_key(fx, arg));
    }
}

static int prop_expr(const kdc_expr_t *e, void *arg) {
    prop_t *q = arg;
    kdc_facts_t *fx = q->fx;
    const kdc_expr_t *target = kdc_expr_assigned(e);
    if (target && e->kind == KDC_E_BINARY && e->nkids == 2 && derived(fx, q->f, e->kids[1], 0))
        q->changed |= add(fx, kdc__lkey(fx, target));
    if (e->kind != KDC_E_CALL)
        return 0;
    const kdc_api_t *api = kdc_api_lookup(e);
    if (api && (api->roles & KDC_API_CONSUME)) {
        for (unsigned i = 0; i < e->nkids; i++) /* rd_kafka_consume_batch(.., messages, n) */
            if (kdc_expr_strip(e->kids[i]) && message_type(kdc_expr_strip(e->kids[i])->type))
                q->changed |= add(fx, handed_storage(fx, e->kids[i]));
        return 0;
    }
    if (api || kdc_api_is_librdkafka(e))
        return 0; /* librdkafka fills none of the application's buffers from a message */
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(fx->pts, q->f, e, &callees);
    for (size_t k = 0; k < callees.n; k++)
        bind_program_call(q, e, callees.v[k]);
    int program = callees.n > 0;
    free(callees.v);
    if (program || e->callee_expr)
        return 0;
    /* memcpy(buf, m->payload, n), out.append(m->payload()), snprintf(line, .., m->key) */
    int from = (e->recv && derived(fx, q->f, e->recv, 0)) || any_kid_derived(fx, q->f, e, 0);
    if (!from)
        return 0;
    /* sqlite3_bind_text(stmt, 1, m->key, ..): the handle holds the message's data */
    const char *h = !e->recv && e->nkids >= 2 && e->name && !strcasestr(e->name, "log") &&
                            !strcasestr(e->name, "trace") && !strcasestr(e->name, "debug")
                        ? handle_key(fx, e->kids[0])
                        : NULL;
    for (unsigned i = 1; h && i < e->nkids; i++)
        if (data_value(e->kids[i]) && derived(fx, q->f, e->kids[i], 0)) {
            q->changed |= add_carrier(fx, h);
            break;
        }
    if (e->recv)
        q->changed |= add(fx, handed_storage(fx, e->recv));
    for (unsigned i = 0; i < e->nkids; i++) {
        if (derived(fx, q->f, e->kids[i], 0))
            continue;
        q->changed |= add(fx, handed_storage(fx, e->kids[i]));
        /* pthread_create(&t, NULL, worker, m): the function gets the value */
        const kdc_func_t *g = function_value(fx, q->f, e->kids[i]);
        for (unsigned k = 0; g && k < g->nparams; k++)
            q->changed |= add(fx, g->param_usrs[k]);
    }
    return 0;
}

static void prop_return(const kdc_stmt_t *s, void *arg) {
    prop_t *q = arg;
    if (s->kind == KDC_S_RETURN && s->expr && derived(q->fx, q->f, s->expr, 0))
        q->changed |= add(q->fx, ret_key(q->fx, q->f));
}

static void seed_callback_param(kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *cb) {
    cb = kdc_expr_strip(cb);
    if (cb && cb->kind == KDC_E_UNARY && cb->op == KDC_OP_ADDR && cb->nkids == 1)
        cb = kdc_expr_strip(cb->kids[0]);
    if (!cb || cb->kind != KDC_E_REF || cb->ref != KDC_REF_FUNCTION || !cb->usr)
        return;
    const kdc_func_t *g = kdc_program_find_callee(fx->p, cb->usr, f->tu);
    if (g && g->nparams)
        add(fx, g->param_usrs[0]);
}

static void seed(kdc_facts_t *fx) {
    size_t nf = kdc_program_nfuncs(fx->p);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(fx->p, i);
        size_t len = strlen(f->name);
        if (f->class_usr && len >= 12 && !strcmp(f->name + len - 12, "::consume_cb") && f->nparams)
            add(fx, f->param_usrs[0]); /* RdKafka::ConsumeCb::consume_cb(Message &, void *) */
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (!call->name)
                continue;
            if (!strcmp(call->name, "rd_kafka_consume_callback") ||
                !strcmp(call->name, "rd_kafka_consume_callback_queue"))
                seed_callback_param(fx, f, kdc_call_arg(call, call->nkids >= 2 ? call->nkids - 2 : 0));
            else if (!strcmp(call->name, "rd_kafka_conf_set_consume_cb"))
                seed_callback_param(fx, f, kdc_call_arg(call, 1));
            else if (!strcmp(call->name, "rd_kafka_event_message_array"))
                add(fx, handed_storage(fx, kdc_call_arg(call, 1)));
        }
        /* an entry point a framework hands messages to */
        if (f->body && !kdc_pts_ncallers(fx->pts, f) && !kdc_strmap_get(&fx->dr_funcs, f->id))
            for (unsigned k = 0; k < f->nparams; k++)
                if (f->param_types && message_type(f->param_types[k]))
                    add(fx, f->param_usrs[k]);
    }
}

/* Has a key the last walk found absent been added since? */
static int added_since(const kdc_facts_t *fx, const flow_absent_t *a) {
    for (int set = FLOW_DERIVED; set <= FLOW_CARRIERS; set++)
        for (size_t k = 0; k < a->keys[set].n; k++)
            if (kdc_strmap_get(flow_set(fx, set), a->keys[set].v[k]))
                return 1;
    return 0;
}

void kdc__compute_input_flow(kdc_facts_t *fx) {
    kdc_strmap_init(&fx->derived);
    kdc_strmap_init(&fx->carriers);
    if (!fx->consumes)
        return;
    seed(fx);
    size_t nf = kdc_program_nfuncs(fx->p);
    /* per function: the absent keys of its last walk (walked: 1 once it was walked) */
    flow_absent_t *last = calloc(nf ? nf : 1, sizeof *last);
    unsigned char *walked = calloc(nf ? nf : 1, 1);
    if (!last || !walked)
        kdc_oom();
    for (int round = 0; round < 16; round++) {
        int changed = 0;
        for (size_t i = 0; i < nf; i++) {
            prop_t q = {fx, kdc_program_func(fx->p, i), 0};
            if (!q.f->body || (walked[i] && !added_since(fx, &last[i])))
                continue;
            free(last[i].keys[0].v);
            free(last[i].keys[1].v);
            memset(&last[i], 0, sizeof last[i]);
            fx->flow_absent = &last[i];
            kdc_func_walk_exprs(q.f, prop_expr, &q);
            kdc_stmt_walk(q.f->body, prop_return, &q);
            fx->flow_absent = NULL;
            walked[i] = 1;
            changed |= q.changed;
        }
        if (!changed)
            break;
    }
    for (size_t i = 0; i < nf; i++) {
        free(last[i].keys[0].v);
        free(last[i].keys[1].v);
    }
    free(last);
    free(walked);
}

void kdc__free_input_flow(kdc_facts_t *fx) {
    kdc_strmap_free(&fx->derived);
    kdc_strmap_free(&fx->carriers);
}

int kdc_facts_derived_from_input(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e) {
    return derived(fx, f, e, 0);
}

int kdc_facts_handle_carries_input(const kdc_facts_t *fx, const kdc_expr_t *e) {
    return carries(fx, handle_key(fx, e));
}

/* ---------- is an output tied to the committed input? ---------- */

typedef struct find_q {
    const kdc_expr_t *target;
    int found;
} find_q_t;

static int find_expr(const kdc_expr_t *e, void *arg) {
    find_q_t *q = arg;
    if (e == q->target)
        q->found = 1;
    return q->found;
}

static void find_in_stmt(const kdc_stmt_t *s, void *arg) {
    find_q_t *q = arg;
    if (!q->found)
        kdc_expr_walk(s->expr, find_expr, q);
    if (!q->found)
        kdc_expr_walk(s->inc, find_expr, q);
}

static int stmt_contains(const kdc_stmt_t *s, const kdc_expr_t *e) {
    find_q_t q = {e, 0};
    kdc_stmt_walk(s, find_in_stmt, &q);
    return q.found;
}

typedef struct loop_q {
    const kdc_facts_t *fx;
    const kdc_func_t *f;
    const kdc_expr_t *produce, *commit;
    int hit;
} loop_q_t;

/* A loop of f that consumes, with both calls in it. */
static void find_consume_loop(const kdc_stmt_t *s, void *arg) {
    loop_q_t *q = arg;
    if (q->hit || (s->kind != KDC_S_WHILE && s->kind != KDC_S_DO && s->kind != KDC_S_FOR))
        return;
    if (!stmt_contains(s, q->produce) || !stmt_contains(s, q->commit))
        return;
    for (unsigned c = 0; c < q->f->ncalls && !q->hit; c++)
        if (kdc_facts_call_roles(q->fx, q->f, q->f->calls[c]).consumes &&
            stmt_contains(s, q->f->calls[c]))
            q->hit = 1;
}

static int output_derived(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    for (unsigned i = 0; i < call->nkids; i++) {
        if (api && api->handle == (int)i)
            continue; /* the producer itself says nothing about the message */
        if (derived(fx, f, call->kids[i], 0))
            return 1;
    }
    return !api && call->recv && derived(fx, f, call->recv, 0);
}

int kdc_facts_output_tied_to_input(const kdc_facts_t *fx, const kdc_func_t *f,
                                   const kdc_expr_t *produce, const kdc_expr_t *commit) {
    if (!kdc_facts_func_program_consumes(fx, f))
        return 1; /* no consumed input to tie it to: an upstream ack (configured) */
    if (output_derived(fx, f, produce))
        return 1;
    if (!kdc_api_lookup(produce)) {
        /* a helper that produces: the message it leaves pending, in its own function */
        const kdc_func_t *g = kdc__callee_func(fx, f, produce);
        const kdc_summary_t *s = g ? kdc_facts_summary(fx, g) : NULL;
        if (s && s->pending_site && s->pending_func && s->consumes &&
            output_derived(fx, s->pending_func, s->pending_site))
            return 1;
    }
    /* a handler of one consumed message (its caller's consume loop, one iteration) */
    for (unsigned i = 0; i < f->nparams; i++)
        if (f->param_types && message_type(f->param_types[i]) && has(fx, f->param_usrs[i]))
            return 1;
    loop_q_t q = {fx, f, produce, commit, 0};
    kdc_stmt_walk(f->body, find_consume_loop, &q);
    return q.hit;
}
