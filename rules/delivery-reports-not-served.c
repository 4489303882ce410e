/*
 * delivery-reports-not-served: a producer with a delivery-report callback
 * that produces in a loop while nothing serves its delivery reports. The
 * reports are only served by rd_kafka_poll(), rd_kafka_flush() or a poll of
 * the queue they are routed to; until then each delivered message stays
 * counted in queue.buffering.max.messages, so the queue fills, produces fail
 * with RD_KAFKA_RESP_ERR__QUEUE_FULL, and delivery failures are only seen at
 * the end, if ever.
 *
 * Confidence: medium. Reported on a produce (C or C++) of a producer whose
 * configuration registers a delivery report (any form) when the produce runs
 * in a loop (a cycle of its function's control flow, or a call of its
 * function in a loop of a caller, up to three calls up) and no call on that
 * loop serves the producer's reports: rd_kafka_poll, rd_kafka_flush,
 * commit_transaction, C++ poll/flush, a configured confirm function, a
 * helper doing one of these on that producer (or on a handle that cannot be
 * followed), a poll of an event queue when the producer's main queue is
 * taken (rd_kafka_queue_get_main/_background, rd_kafka_poll_set_consumer).
 * Not reported: a loop a caller runs once per batch inside a loop that
 * serves; a loop over data in memory (a counter loop or a range-for that
 * reads no input) followed by a serving call (a flush per batch); a loop
 * bounded by constants that cannot reach queue.buffering.max.messages; a
 * producer whose reports a thread of its
 * own serves (a start routine that polls it and does not produce on it); a
 * background event callback; a producer without a delivery report (reports
 * are not queued: produce-without-delivery-callback) or whose configuration
 * cannot be followed (strict profile: a note).
 */
#include "common/config_common.h"
#include "common/consumer_common.h"
#include "common/threads.h"

#include <stdlib.h>
#include <string.h>

#define DR_MAX_DEPTH 3
#define DR_HELPER_DEPTH 4
#define DR_DEFAULT_MAX_MESSAGES 100000 /* queue.buffering.max.messages */

/* A call of a function of the program, from another. */
typedef struct site {
    const kdc_func_t *caller;
    const kdc_expr_t *call;
} site_t;
typedef KDC_VEC(site_t) site_vec_t;

/* What a thread start routine reaches that matters here. */
typedef struct thread_calls {
    const kdc_thread_entry_t *entry;
    site_vec_t serving; /* poll/flush calls and queue polls */
    site_vec_t producing;
} thread_calls_t;

/* Computed once per run: who calls whom, what the threads do. */
typedef struct drns_index {
    site_vec_t *callers; /* per function index: the calls that may reach it */
    thread_calls_t *threads;
    size_t nthreads;
} drns_index_t;

typedef struct drns {
    kdc_rule_ctx_t *ctx;
    const drns_index_t *index;
    size_t client;
    int routed;  /* the main queue is taken: event-queue polls may serve it */
    kdc_loc_t loop_loc;
    int have_loop_loc;
} drns_t;

/* ---------- what serves the producer's delivery reports ---------- */

static int is_queue_poll(const kdc_expr_t *call) {
    const char *n = call->name ? call->name : "";
    return !strcmp(n, "rd_kafka_queue_poll") || !strcmp(n, "rd_kafka_queue_poll_callback") ||
           !strcmp(n, "RdKafka::Queue::poll") || !strcmp(n, "rd_kafka_consumer_poll") ||
           !strcmp(n, "rd_kafka_consume_queue") || !strcmp(n, "rd_kafka_consume_batch_queue") ||
           !strcmp(n, "rd_kafka_consume_callback_queue") ||
           !strcmp(n, "RdKafka::KafkaConsumer::consume");
}

/* Calls that take the main queue away from rd_kafka_poll(): its events are
 * then served by whatever polls that queue. */
static int takes_main_queue(const kdc_expr_t *call) {
    const char *n = call->name ? call->name : "";
    return !strcmp(n, "rd_kafka_queue_get_main") || !strcmp(n, "rd_kafka_queue_get_background") ||
           !strcmp(n, "rd_kafka_poll_set_consumer") ||
           (!strncmp(n, "RdKafka::", 9) && strstr(n, "::get_background_queue"));
}

/* Does h denote the client, or a handle that cannot be followed (not a
 * handle known to be another client, such as a consumer)? */
static int handle_is_client(drns_t *d, const kdc_func_t *f, const kdc_expr_t *h) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_facts_clients_of(d->ctx->facts, f, h, &clients, &unknown);
    int hit = kdc_bits_get(&clients, d->client) || unknown;
    kdc_bits_free(&clients);
    return hit;
}

static int main_queue_taken(drns_t *d) {
    size_t nf = kdc_program_nfuncs(d->ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(d->ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            if (call->name && !strcmp(call->name, "rd_kafka_conf_set_background_event_cb"))
                return 1;
            if (takes_main_queue(call) &&
                handle_is_client(d, f, call->is_method ? call->recv : kdc_call_arg(call, 0)))
                return 1;
        }
    }
    return 0;
}

static int serves(drns_t *d, const kdc_func_t *f, const kdc_expr_t *call, int depth);

static int helper_serves(drns_t *d, const kdc_func_t *g, int depth) {
    for (unsigned c = 0; c < g->ncalls; c++)
        if (serves(d, g, g->calls[c], depth + 1))
            return 1;
    return 0;
}

/* Does the call serve the client's delivery reports (directly, or in a helper)? */
static int serves(drns_t *d, const kdc_func_t *f, const kdc_expr_t *call, int depth) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api && (api->roles & KDC_API_SERVE_DR))
        return kdc_call_on_client(d->ctx, f, call, api, 0, d->client);
    if (kdc_facts_call_roles(d->ctx->facts, f, call).confirms)
        return 1;
    if (d->routed && is_queue_poll(call))
        return 1;
    if (api || depth >= DR_HELPER_DEPTH)
        return 0;
    const kdc_func_t *h = kdc_call_helper_for_client(d->ctx, f, call, 0, d->client);
    return h && h != f && helper_serves(d, h, depth);
}

static int produces_on(drns_t *d, const kdc_func_t *f, const kdc_expr_t *call) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (!api || !(api->roles & KDC_API_PRODUCE))
        return 0;
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(d->ctx, f, call, api, 0, &clients, &unknown);
    int hit = kdc_bits_get(&clients, d->client);
    kdc_bits_free(&clients);
    return hit;
}

/* The argument a thread-creating call hands its start routine (pthread_create's
 * arg, thrd_create's arg, std::thread's arguments after the function): does it
 * denote the client? */
static int thread_arg_is_client(drns_t *d, const kdc_func_t *f, const kdc_expr_t *site) {
    const char *n = site->name ? site->name : "";
    unsigned from = !strcmp(n, "pthread_create") ? 3 : !strcmp(n, "thrd_create") ? 2 : 1;
    for (unsigned i = from; i < site->nkids; i++) {
        kdc_bits_t clients;
        int unknown = 0;
        kdc_rule_clients(d->ctx, f, site->kids[i], 0, &clients, &unknown);
        int hit = kdc_bits_get(&clients, d->client);
        kdc_bits_free(&clients);
        if (hit)
            return 1;
    }
    return 0;
}

/* Does a call in a thread's code serve the client: a poll or flush whose
 * handle is the client, or a handle that cannot be followed when the thread
 * was handed the client? */
static int thread_call_serves(drns_t *d, const kdc_func_t *f, const kdc_expr_t *call, int arg_k) {
    const kdc_api_t *api = kdc_api_lookup(call);
    if (api && (api->roles & KDC_API_SERVE_DR)) {
        kdc_bits_t clients;
        int unknown = 0;
        kdc_call_clients(d->ctx, f, call, api, 0, &clients, &unknown);
        int hit = kdc_bits_get(&clients, d->client) || (unknown && arg_k);
        kdc_bits_free(&clients);
        return hit;
    }
    return d->routed && is_queue_poll(call);
}

/* A thread of its own: a start routine that serves the client's reports and
 * does not produce on it (a dedicated poll thread). */
static int served_by_thread(drns_t *d) {
    for (size_t e = 0; e < d->index->nthreads; e++) {
        const thread_calls_t *tc = &d->index->threads[e];
        const kdc_thread_entry_t *te = tc->entry;
        int arg_k = 0, polls = 0, produces = 0;
        for (unsigned i = 0; i < te->nsites && i < 8 && !arg_k; i++)
            arg_k = thread_arg_is_client(d, te->site_funcs[i], te->sites[i]);
        for (size_t i = 0; i < tc->serving.n && !polls; i++)
            polls = thread_call_serves(d, tc->serving.v[i].caller, tc->serving.v[i].call, arg_k);
        for (size_t i = 0; i < tc->producing.n && polls && !produces; i++)
            produces = produces_on(d, tc->producing.v[i].caller, tc->producing.v[i].call);
        if (polls && !produces)
            return 1;
    }
    return 0;
}

static void build_index(kdc_rule_ctx_t *ctx, const kdc_thread_entry_vec_t *entries,
                        drns_index_t *x) {
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    size_t nf = kdc_program_nfuncs(ctx->program);
    x->callers = calloc(nf ? nf : 1, sizeof *x->callers);
    x->threads = calloc(entries->n ? entries->n : 1, sizeof *x->threads);
    if (!x->callers || !x->threads)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *caller = kdc_program_func(ctx->program, i);
        const kdc_cfg_t *g = caller->cfg;
        for (unsigned c = 0; g && c < caller->ncalls; c++) {
            const kdc_expr_t *cs = caller->calls[c];
            if (kdc_api_lookup(cs) || g->call_node[c] < 0)
                continue;
            kdc_funcvec_t callees = {0};
            kdc_pts_callees(pts, caller, cs, &callees);
            for (size_t k = 0; k < callees.n; k++)
                if (callees.v[k] != caller) {
                    site_t st = {caller, cs};
                    KDC_VEC_PUSH(x->callers[callees.v[k]->index], st);
                }
            free(callees.v);
        }
    }
    for (size_t e = 0; e < entries->n; e++) {
        thread_calls_t *tc = &x->threads[x->nthreads++];
        tc->entry = &entries->v[e];
        kdc_func_vec_t reach = {0};
        kdc_func_closure(ctx, entries->v[e].func, &reach);
        for (size_t i = 0; i < reach.n; i++) {
            const kdc_func_t *f = reach.v[i];
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
                site_t st = {f, f->calls[c]};
                if ((api && (api->roles & KDC_API_SERVE_DR)) || is_queue_poll(f->calls[c]))
                    KDC_VEC_PUSH(tc->serving, st);
                if (api && (api->roles & KDC_API_PRODUCE))
                    KDC_VEC_PUSH(tc->producing, st);
            }
        }
        free(reach.v);
    }
}

static void free_index(drns_index_t *x, size_t nf) {
    for (size_t i = 0; x->callers && i < nf; i++)
        free(x->callers[i].v);
    for (size_t e = 0; e < x->nthreads; e++) {
        free(x->threads[e].serving.v);
        free(x->threads[e].producing.v);
    }
    free(x->callers);
    free(x->threads);
}

/* ---------- loops ---------- */

/* The nodes on a cycle through node s of g (empty when s is in no loop). */
static size_t cycle_nodes(const kdc_cfg_t *g, int s, unsigned char *in) {
    unsigned n = g->n;
    unsigned char *fwd = calloc(n, 1), *bwd = calloc(n, 1);
    int *stack = malloc((n + 1) * sizeof *stack);
    unsigned *npred = calloc(n + 1, sizeof *npred), *first = NULL;
    int *pred = NULL;
    if (!fwd || !bwd || !stack || !npred)
        kdc_oom();
    size_t sp = 0, count = 0;
    /* forward from s's successors */
    for (unsigned i = 0; i < g->nodes[s].nsucc; i++) {
        int m = g->nodes[s].succ[i];
        if (m >= 0 && !fwd[m]) {
            fwd[m] = 1;
            stack[sp++] = m;
        }
    }
    while (sp) {
        int v = stack[--sp];
        for (unsigned i = 0; i < g->nodes[v].nsucc; i++) {
            int m = g->nodes[v].succ[i];
            if (m >= 0 && !fwd[m]) {
                fwd[m] = 1;
                stack[sp++] = m;
            }
        }
    }
    if (fwd[s]) {
        /* backward from s over predecessor lists */
        for (unsigned v = 0; v < n; v++)
            for (unsigned i = 0; i < g->nodes[v].nsucc; i++)
                if (g->nodes[v].succ[i] >= 0)
                    npred[g->nodes[v].succ[i]]++;
        first = calloc(n + 1, sizeof *first);
        unsigned *fill = calloc(n + 1, sizeof *fill);
        size_t total = 0;
        for (unsigned v = 0; v < n; v++) {
            first[v] = (unsigned)total;
            total += npred[v];
        }
        first[n] = (unsigned)total;
        pred = malloc((total + 1) * sizeof *pred);
        if (!first || !fill || !pred)
            kdc_oom();
        for (unsigned v = 0; v < n; v++)
            for (unsigned i = 0; i < g->nodes[v].nsucc; i++) {
                int m = g->nodes[v].succ[i];
                if (m >= 0)
                    pred[first[m] + fill[m]++] = (int)v;
            }
        free(fill);
        bwd[s] = 1;
        stack[sp++] = s;
        while (sp) {
            int v = stack[--sp];
            for (unsigned k = first[v]; k < first[v + 1]; k++) {
                int m = pred[k];
                if (!bwd[m]) {
                    bwd[m] = 1;
                    stack[sp++] = m;
                }
            }
        }
        for (unsigned v = 0; v < n; v++) {
            in[v] = fwd[v] && bwd[v];
            count += in[v];
        }
    }
    free(fwd);
    free(bwd);
    free(stack);
    free(npred);
    free(first);
    free(pred);
    return count;
}

/* The calls of f that may hand it the client. */
static void callers_of(drns_t *d, const kdc_func_t *f, site_vec_t *out) {
    const site_vec_t *all = &d->index->callers[f->index];
    for (size_t i = 0; i < all->n; i++)
        if (!kdc_call_only_other_clients(d->ctx, all->v[i].caller, all->v[i].call, 0, d->client))
            KDC_VEC_PUSH(*out, all->v[i]);
}

static int upper_bound(drns_t *d, const kdc_func_t *f, const kdc_expr_t *e, int depth,
                       long long *v);

typedef struct const_find {
    drns_t *d;
    const kdc_func_t *f;
    const char *usr;
    int depth;
    int assigns, unknown;
    long long max;
} const_find_t;

static int find_assign(const kdc_expr_t *e, void *arg) {
    const_find_t *c = arg;
    const kdc_expr_t *lv = kdc_expr_strip(kdc_expr_assigned(e));
    if (!lv || lv->kind != KDC_E_REF || lv->usr != c->usr)
        return 0;
    c->assigns++;
    long long v;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        upper_bound(c->d, c->f, e->kids[1], c->depth + 1, &v)) {
        if (c->assigns == 1 || v > c->max)
            c->max = v;
    } else {
        c->unknown = 1;
    }
    return 0;
}

/* An upper bound of e's value: a constant, arithmetic on constants, a local
 * whose every assignment has one, a parameter every caller passes one for. */
static int upper_bound(drns_t *d, const kdc_func_t *f, const kdc_expr_t *e, int depth,
                       long long *v) {
    e = kdc_expr_strip(e);
    if (!e || depth > 6)
        return 0;
    if (e->has_ival) {
        *v = e->ival;
        return 1;
    }
    long long a, b;
    if (e->kind == KDC_E_COND && e->nkids == 3) {
        if (!upper_bound(d, f, e->kids[1], depth + 1, &a) ||
            !upper_bound(d, f, e->kids[2], depth + 1, &b))
            return 0;
        *v = a > b ? a : b;
        return 1;
    }
    if (e->kind == KDC_E_BINARY && e->nkids == 2 &&
        (e->op == KDC_OP_ADD || e->op == KDC_OP_MUL || e->op == KDC_OP_SUB)) {
        if (!upper_bound(d, f, e->kids[0], depth + 1, &a))
            return 0;
        const kdc_expr_t *r = kdc_expr_strip(e->kids[1]);
        if (e->op == KDC_OP_SUB) { /* x - c: only a constant c keeps the bound */
            if (!r || !r->has_ival)
                return 0;
            *v = a - r->ival;
            return 1;
        }
        if (!upper_bound(d, f, r, depth + 1, &b) || a < 0 || b < 0 || a > 1000000000 ||
            b > 1000000000)
            return 0;
        *v = e->op == KDC_OP_ADD ? a + b : a * b;
        return 1;
    }
    if (e->kind != KDC_E_REF || !e->usr)
        return 0;
    if (e->ref == KDC_REF_LOCAL) {
        const_find_t c = {d, f, e->usr, depth, 0, 0, 0};
        kdc_func_walk_exprs(f, find_assign, &c);
        if (!c.assigns || c.unknown)
            return 0;
        *v = c.max;
        return 1;
    }
    if (e->ref != KDC_REF_PARAM || e->param_index < 0)
        return 0;
    site_vec_t sites = {0};
    callers_of(d, f, &sites);
    int ok = sites.n > 0;
    long long max = 0;
    for (size_t i = 0; i < sites.n && ok; i++) {
        const kdc_expr_t *arg = kdc_call_arg(sites.v[i].call, (unsigned)e->param_index);
        ok = arg && upper_bound(d, sites.v[i].caller, arg, depth + 1, &a);
        if (ok && (i == 0 || a > max))
            max = a;
    }
    free(sites.v);
    if (ok)
        *v = max;
    return ok;
}

/* The bound of a loop condition `i < N`, `i <= N`, `N > i`; sets *var to the
 * counted variable or field (USR). 0 when it has none. */
static long long cmp_bound(drns_t *d, const kdc_func_t *f, const kdc_expr_t *cond,
                           const char **var) {
    cond = kdc_expr_strip(cond);
    *var = NULL;
    if (!cond || cond->kind != KDC_E_BINARY || cond->nkids != 2)
        return 0;
    long long v;
    int up = cond->op == KDC_OP_LT || cond->op == KDC_OP_LE;
    int down = cond->op == KDC_OP_GT || cond->op == KDC_OP_GE;
    if (!up && !down)
        return 0;
    const kdc_expr_t *counter = kdc_expr_strip(cond->kids[up ? 0 : 1]);
    if (counter && (counter->kind == KDC_E_REF || counter->kind == KDC_E_MEMBER))
        *var = counter->usr; /* i < n, or a position kept in a struct: g->next < upto */
    if (!upper_bound(d, f, cond->kids[up ? 1 : 0], 0, &v))
        return 0;
    return v + (cond->op == KDC_OP_LE || cond->op == KDC_OP_GE);
}

/* The first dimension of an array type ("char [16][8]": 16), or 0. */
static long long array_dim(const char *type) {
    const char *b = type ? strchr(type, '[') : NULL;
    if (!b || strstr(type, "(*)"))
        return 0;
    long long n = strtoll(b + 1, NULL, 10);
    return n > 0 ? n : 0;
}

static long long array_bound(drns_t *d, const kdc_func_t *f, const kdc_expr_t *a, int depth);

/* How many elements the array a (an expression of f) has: its type, or for a
 * parameter the arrays every caller passes. 0 when unknown. */
static long long array_bound(drns_t *d, const kdc_func_t *f, const kdc_expr_t *a, int depth) {
    a = kdc_expr_strip(a);
    if (!a || depth > DR_MAX_DEPTH)
        return 0;
    long long n = array_dim(a->type);
    if (n || a->kind != KDC_E_REF || a->ref != KDC_REF_PARAM || a->param_index < 0)
        return n;
    site_vec_t sites = {0};
    callers_of(d, f, &sites);
    long long max = 0;
    for (size_t i = 0; i < sites.n; i++) {
        const kdc_expr_t *arg = kdc_call_arg(sites.v[i].call, (unsigned)a->param_index);
        long long b = arg ? array_bound(d, sites.v[i].caller, arg, depth + 1) : 0;
        if (!b) {
            max = 0;
            break;
        }
        max = b > max ? b : max;
    }
    free(sites.v);
    return max;
}

typedef struct index_find {
    drns_t *d;
    const kdc_func_t *f;
    const char *var;
    long long bound; /* smallest array indexed by var */
} index_find_t;

static int find_index(const kdc_expr_t *e, void *arg) {
    index_find_t *x = arg;
    if (e->kind != KDC_E_INDEX || e->nkids != 2)
        return 0;
    const kdc_expr_t *i = kdc_expr_strip(e->kids[1]);
    if (!i || i->kind != KDC_E_REF || i->usr != x->var)
        return 0;
    long long b = array_bound(x->d, x->f, e->kids[0], 0);
    if (b && (!x->bound || b < x->bound))
        x->bound = b;
    return 0;
}

static void stmt_index_bound(const kdc_stmt_t *st, void *arg) {
    kdc_expr_walk(st->expr, find_index, arg);
    kdc_expr_walk(st->inc, find_index, arg);
}

/* How often a loop statement can run: a conjunct of its condition that counts
 * a variable up to a bound (`n < 100 && next(..)`), or an array of fixed
 * size the counted variable indexes (`i < b->n` over `b->in[64]`). 0: no bound. */
static long long loop_stmt_bound(drns_t *d, const kdc_func_t *f, const kdc_stmt_t *loop) {
    const kdc_expr_t *conj[16];
    size_t n = 0, top = 0;
    const kdc_expr_t *stack[16];
    if (!loop->expr)
        return 0; /* for (;;) */
    stack[top++] = loop->expr;
    while (top && n < 16) {
        const kdc_expr_t *e = kdc_expr_strip(stack[--top]);
        if (e && e->kind == KDC_E_BINARY && e->op == KDC_OP_LAND && e->nkids == 2 && top + 2 <= 16) {
            stack[top++] = e->kids[0];
            stack[top++] = e->kids[1];
        } else if (e) {
            conj[n++] = e;
        }
    }
    long long best = 0;
    for (size_t i = 0; i < n; i++) {
        const char *var = NULL;
        long long b = cmp_bound(d, f, conj[i], &var);
        if (!b && var) {
            index_find_t x = {d, f, var, 0};
            kdc_stmt_walk(loop->body, stmt_index_bound, &x);
            b = x.bound;
        }
        if (b > 0 && (!best || b < best))
            best = b;
    }
    return best;
}

typedef struct enclosing {
    const kdc_expr_t *target;
    const kdc_stmt_t *stack[32];
    size_t depth;
    const kdc_stmt_t *found[32];
    size_t nfound;
    int done;
} enclosing_t;

static int is_target(const kdc_expr_t *e, void *arg) {
    return e == ((enclosing_t *)arg)->target;
}

static int is_loop(const kdc_stmt_t *s) {
    return s->kind == KDC_S_WHILE || s->kind == KDC_S_DO || s->kind == KDC_S_FOR;
}

/* Records the loop statements around the statement that evaluates target. */
static void find_enclosing(const kdc_stmt_t *s, enclosing_t *x) {
    if (!s || x->done)
        return;
    int loop = is_loop(s) && x->depth < 32;
    if (loop)
        x->stack[x->depth++] = s;
    if (kdc_expr_walk(s->expr, is_target, x) || kdc_expr_walk(s->inc, is_target, x)) {
        x->nfound = x->depth;
        memcpy(x->found, x->stack, x->depth * sizeof x->stack[0]);
        x->done = 1;
    }
    find_enclosing(s->init, x);
    find_enclosing(s->body, x);
    find_enclosing(s->els, x);
    for (unsigned i = 0; i < s->nkids; i++)
        find_enclosing(s->kids[i], x);
    if (loop)
        x->depth--;
}

static long long max_messages(drns_t *d) {
    kdc_config_values_t vals;
    kdc_config_values(d->ctx, d->client, "queue.buffering.max.messages", &vals);
    long long m = DR_DEFAULT_MAX_MESSAGES;
    for (size_t i = 0; i < vals.n; i++) {
        const char *s = vals.v[i]->value;
        char *end = NULL;
        long long v = s ? strtoll(s, &end, 10) : 0;
        if (!s || !end || *end || v <= 0)
            return 0; /* not a number kdc-lint can read: no bound counts */
        if (i == 0 || v > m)
            m = v;
    }
    return m;
}

/* Does a call in the expression read input (a loop condition such as
 * fgets(..), std::getline(..), next_row(..))? */
static int is_call(const kdc_expr_t *e, void *arg) {
    (void)arg;
    return e->kind == KDC_E_CALL;
}

static int consumes_in(const kdc_expr_t *e, void *arg) {
    (void)arg;
    const kdc_api_t *api = e->kind == KDC_E_CALL ? kdc_api_lookup(e) : NULL;
    return api && (api->roles & KDC_API_CONSUME);
}

static void stmt_consumes(const kdc_stmt_t *st, void *arg) {
    int *hit = arg;
    *hit |= kdc_expr_walk(st->expr, consumes_in, NULL) || kdc_expr_walk(st->inc, consumes_in, NULL);
}

/* A loop over data already in memory: a counter compared with a bound
 * (`i < n`, whatever n is) or a C++ range-for, whose condition reads nothing
 * and whose body consumes nothing. Anything else reads a stream (`while
 * (fgets(..))`, `while (run)`, a consume loop, `for (;;)`). */
static int loop_in_memory(drns_t *d, const kdc_func_t *f, const kdc_stmt_t *loop) {
    int consumes = 0;
    kdc_stmt_walk(loop->body, stmt_consumes, &consumes);
    if (consumes || (loop->expr && kdc_expr_walk(loop->expr, is_call, NULL)))
        return 0;
    if (loop->kind == KDC_S_FOR && loop->unknown_cond && loop->init)
        return 1; /* for (auto &row : rows) */
    const kdc_expr_t *c = kdc_expr_strip(loop->expr);
    while (c && c->kind == KDC_E_BINARY && c->op == KDC_OP_LAND && c->nkids == 2)
        c = kdc_expr_strip(c->kids[0]);
    const char *var = NULL;
    cmp_bound(d, f, c, &var);
    return var != NULL;
}

/* Is a call that serves the client reachable from node s of f outside the
 * cycle `in` (after the loop), or, when f has none, after every call of f? */
static int served_after(drns_t *d, const kdc_func_t *f, int s, const unsigned char *in, int depth) {
    const kdc_cfg_t *g = f->cfg;
    unsigned char *seen = calloc(g->n ? g->n : 1, 1);
    int *stack = malloc((g->n + 1) * sizeof *stack);
    if (!seen || !stack)
        kdc_oom();
    size_t sp = 0;
    int found = 0;
    seen[s] = 1;
    stack[sp++] = s;
    while (sp && !found) {
        int v = stack[--sp];
        const kdc_node_t *nd = &g->nodes[v];
        if (v != s && (!in || !in[v]) && nd->kind == KDC_N_CALL && serves(d, f, nd->expr, 0))
            found = 1;
        for (unsigned i = 0; i < nd->nsucc; i++)
            if (nd->succ[i] >= 0 && !seen[nd->succ[i]]) {
                seen[nd->succ[i]] = 1;
                stack[sp++] = nd->succ[i];
            }
    }
    free(seen);
    free(stack);
    if (found || depth >= DR_MAX_DEPTH)
        return found;
    site_vec_t sites = {0};
    callers_of(d, f, &sites);
    int all = sites.n > 0;
    for (size_t i = 0; i < sites.n && all; i++) {
        const kdc_func_t *c = sites.v[i].caller;
        all = served_after(d, c, ((const kdc_cfg_t *)c->cfg)->call_node[sites.v[i].call->call_id],
                           NULL, depth + 1);
    }
    free(sites.v);
    return all;
}

/* Can the loop around node s (its cycle `in`) produce as many messages as
 * the queue holds before something serves the reports? Not when every loop
 * statement around the call is bounded and the product of the bounds, times
 * the produces on the cycle, stays below queue.buffering.max.messages; nor
 * when they only walk data in memory (a batch) and the reports are served
 * after the loop (flush() per batch). A cycle without a loop statement (a
 * goto) is not bounded. */
static int loop_can_fill(drns_t *d, const kdc_func_t *f, const unsigned char *in, int s) {
    const kdc_cfg_t *g = f->cfg;
    long long limit = max_messages(d), total = 1, produces = 0;
    enclosing_t x = {0};
    x.target = g->nodes[s].expr;
    find_enclosing(f->body, &x);
    if (!x.nfound)
        return 1;
    int bounded = 1, in_memory = 1;
    for (size_t i = 0; i < x.nfound; i++) {
        long long b = bounded ? loop_stmt_bound(d, f, x.found[i]) : 0;
        if (b <= 0)
            bounded = 0;
        else if (limit)
            total = total > limit ? total : total * b;
        in_memory &= loop_in_memory(d, f, x.found[i]);
    }
    if (!bounded)
        return !(in_memory && served_after(d, f, s, in, 0));
    if (!limit)
        return 0; /* bounded, and the limit cannot be read: cannot tell */
    for (unsigned n = 0; n < g->n; n++)
        if (in[n] && g->nodes[n].kind == KDC_N_CALL && produces_on(d, f, g->nodes[n].expr))
            produces++;
    return total * (produces ? produces : 1) >= limit;
}

static const kdc_loc_t *loop_loc_of(const kdc_func_t *f, const unsigned char *in, int s) {
    const kdc_cfg_t *g = f->cfg;
    for (unsigned n = 0; n < g->n; n++)
        if (in[n] && g->nodes[n].kind == KDC_N_COND && g->nodes[n].loop_cond && g->nodes[n].expr)
            return &g->nodes[n].expr->loc;
    return g->nodes[s].expr ? &g->nodes[s].expr->loc : &f->loc;
}

enum { SERVED = 0, UNSERVED = 1 };

static int loop_of(drns_t *d, const kdc_func_t *f, int s, int depth);

/* Does every caller run f once per batch of a loop that serves the client? */
static int callers_serve_per_batch(drns_t *d, const kdc_func_t *f, int depth) {
    if (depth >= DR_MAX_DEPTH)
        return 0;
    site_vec_t sites = {0};
    callers_of(d, f, &sites);
    int ok = sites.n > 0;
    for (size_t i = 0; i < sites.n && ok; i++) {
        const kdc_func_t *caller = sites.v[i].caller;
        const kdc_cfg_t *g = caller->cfg;
        int s = g->call_node[sites.v[i].call->call_id];
        unsigned char *in = calloc(g->n ? g->n : 1, 1);
        if (!in)
            kdc_oom();
        if (cycle_nodes(g, s, in)) {
            int served = 0;
            for (unsigned n = 0; n < g->n && !served; n++)
                served = in[n] && g->nodes[n].kind == KDC_N_CALL &&
                         serves(d, caller, g->nodes[n].expr, 0);
            ok = served;
        } else {
            ok = callers_serve_per_batch(d, caller, depth + 1);
        }
        free(in);
    }
    free(sites.v);
    return ok;
}

/* Is node s of f (a produce, or a call of a function producing) run in a
 * loop that never serves the client? Sets d->loop_loc. */
static int loop_of(drns_t *d, const kdc_func_t *f, int s, int depth) {
    const kdc_cfg_t *g = f->cfg;
    unsigned char *in = calloc(g->n ? g->n : 1, 1);
    if (!in)
        kdc_oom();
    int r = SERVED;
    if (cycle_nodes(g, s, in)) {
        int served = 0;
        for (unsigned n = 0; n < g->n && !served; n++)
            served = in[n] && g->nodes[n].kind == KDC_N_CALL && serves(d, f, g->nodes[n].expr, 0);
        if (!served && loop_can_fill(d, f, in, s) && !callers_serve_per_batch(d, f, depth)) {
            d->loop_loc = *loop_loc_of(f, in, s);
            d->have_loop_loc = 1;
            r = UNSERVED;
        }
    } else if (depth < DR_MAX_DEPTH) {
        /* not in a loop here: the loop may be in a caller (send_one() called per line) */
        site_vec_t sites = {0};
        callers_of(d, f, &sites);
        for (size_t i = 0; i < sites.n && r == SERVED; i++) {
            const kdc_func_t *caller = sites.v[i].caller;
            int cs = ((const kdc_cfg_t *)caller->cfg)->call_node[sites.v[i].call->call_id];
            r = loop_of(d, caller, cs, depth + 1);
        }
        free(sites.v);
    }
    free(in);
    return r;
}

/* ---------- the rule ---------- */

typedef struct state {
    kdc_thread_entry_vec_t entries;
    drns_index_t index;
    signed char *thread_served; /* per object: -1 not computed */
    signed char *routed;
} state_t;

static void check(kdc_rule_ctx_t *ctx) {
    state_t st = {0};
    kdc_thread_entries(ctx, &st.entries);
    build_index(ctx, &st.entries, &st.index);
    size_t nobjs = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts));
    st.thread_served = malloc(nobjs ? nobjs : 1);
    st.routed = malloc(nobjs ? nobjs : 1);
    if (!st.thread_served || !st.routed)
        kdc_oom();
    memset(st.thread_served, -1, nobjs ? nobjs : 1);
    memset(st.routed, -1, nobjs ? nobjs : 1);
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        const kdc_cfg_t *g = f->cfg;
        for (unsigned c = 0; g && c < f->ncalls; c++) {
            const kdc_expr_t *call = f->calls[c];
            const kdc_api_t *api = kdc_api_lookup(call);
            if (!api || !(api->roles & KDC_API_PRODUCE) || !kdc_api_is_librdkafka(call) ||
                g->call_node[c] < 0)
                continue;
            kdc_bits_t clients;
            int unknown = 0;
            kdc_call_clients(ctx, f, call, api, 0, &clients, &unknown);
            for (size_t k = kdc_bits_next(&clients, 0); !unknown && k < clients.nwords * 64;
                 k = kdc_bits_next(&clients, k + 1)) {
                if (!kdc_bits_get(&clients, k) || kdc_facts_client_type(ctx->facts, k) == 1)
                    continue;
                kdc_tri_t dr = kdc_facts_client_has_dr(ctx->facts, k);
                if (dr == KDC_TRI_NO || (dr == KDC_TRI_UNKNOWN && !ctx->opts->strict))
                    continue; /* no reports queued; or cannot tell: a note in strict */
                drns_t d = {ctx, &st.index, k, 0, {0}, 0};
                if (st.routed[k] < 0)
                    st.routed[k] = (signed char)main_queue_taken(&d);
                d.routed = st.routed[k];
                if (st.thread_served[k] < 0)
                    st.thread_served[k] = (signed char)served_by_thread(&d);
                if (st.thread_served[k] || loop_of(&d, f, g->call_node[c], 0) != UNSERVED)
                    continue;
                kdc_notes_t notes = {0};
                kdc_notes_add(&notes, kdc_facts_client_loc(ctx->facts, k), "producer created here");
                if (d.have_loop_loc)
                    kdc_notes_add(&notes, &d.loop_loc,
                                  "this loop never serves the producer's delivery reports");
                const char *name = kdc_api_display_name(call);
                void (*report)(kdc_rule_ctx_t *, const kdc_func_t *, const kdc_loc_t *,
                               const kdc_related_t *, size_t, const char *, ...) =
                    dr == KDC_TRI_YES ? kdc_rule_report : kdc_rule_note;
                report(
                    ctx, f, &call->loc, notes.v, notes.n,
                    "%s produces in a loop that never serves this producer's delivery reports%s "
                    "(no rd_kafka_poll/rd_kafka_flush on it in the loop, nor a thread of its own "
                    "polling it): the reports pile up, the queue fills and produces fail with "
                    "RD_KAFKA_RESP_ERR__QUEUE_FULL, and failed deliveries are not seen; call "
                    "rd_kafka_poll(rk, 0) after each produce or batch, or poll from a dedicated "
                    "thread",
                    name,
                    dr == KDC_TRI_YES ? ""
                                      : " (if its configuration, which cannot be followed, "
                                        "registers them; strict profile)");
                break;
            }
            kdc_bits_free(&clients);
        }
    }
    free_index(&st.index, nf);
    free(st.entries.v);
    free(st.thread_served);
    free(st.routed);
}

const kdc_rule_t kdc_rule_delivery_reports_not_served = {
    .name = "delivery-reports-not-served",
    .summary = "a producer with a delivery-report callback produces in a loop that never serves "
               "its delivery reports (no poll/flush, no poll thread)",
    .severity = KDC_SEV_WARNING,
    .confidence = "medium",
    .in_default = 1,
    .check = check,
};
