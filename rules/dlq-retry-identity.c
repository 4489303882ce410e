/*
 * dlq-retry-identity: a dead-letter envelope keyed (message key or a header)
 * on a freshly generated id: a UUID, a random number, the current time. Every
 * re-routing of the same event then gets a new identity, so retry counters
 * keyed on it never reach their limit and duplicates cannot be recognised
 * (decision record rule 7: the identity is the original event's, e.g. a hash
 * of topic + key + value, or headers carrying the original coordinates).
 *
 * Confidence: medium. Reported on the dead-letter produce (C rd_kafka_producev
 * / rd_kafka_produce, C++ Producer::produce) when its key, an identity header
 * (RD_KAFKA_V_HEADER, or rd_kafka_header_add / Headers::add on the headers
 * given with RD_KAFKA_V_HEADERS or to produce()) comes from a fresh source:
 * random (rand, random, arc4random[_buf], getrandom, getentropy, RAND_bytes,
 * <random> engines), time (time, clock_gettime, gettimeofday, std::chrono
 * clocks) or a random/time UUID (uuid_generate*, not the name-based
 * uuid_generate_md5/sha1); through variables, struct fields, buffers filled by
 * snprintf/strcpy/memcpy/uuid_unparse, and helpers of the program that return
 * a fresh value or fill an out-parameter with one.
 */
#include "common/consumer_common.h"

#include <ctype.h>
#include <string.h>

typedef KDC_VEC(const char *) key_vec_t;

static int has_key(const key_vec_t *v, const char *k) {
    for (size_t i = 0; k && i < v->n; i++)
        if (v->v[i] == k)
            return 1;
    return 0;
}

static int name_is(const char *n, const char *const *names) {
    for (size_t i = 0; n && names[i]; i++)
        if (!strcmp(n, names[i]))
            return 1;
    return 0;
}

/* Calls whose value is fresh. */
static int fresh_value_call(const kdc_expr_t *e) {
    static const char *const names[] = {
        "rand", "random", "arc4random", "arc4random_uniform", "lrand48", "mrand48", "drand48",
        "rand_r", "time", "clock", "std::time", "std::rand", NULL};
    static const char *const parts[] = {"random_device", "mersenne_twister", "linear_congruential",
                                        "_distribution", "random_generator", "system_clock::now",
                                        "steady_clock::now", "high_resolution_clock::now", NULL};
    if (e->kind != KDC_E_CALL || !e->name)
        return 0;
    if (name_is(e->name, names))
        return 1;
    for (size_t i = 0; parts[i]; i++)
        if (strstr(e->name, parts[i]))
            return 1;
    return 0;
}

/* Calls that fill an out-parameter with a fresh value: the argument index, or -1. */
static int fresh_fill_arg(const kdc_expr_t *e) {
    static const struct {
        const char *name;
        int arg;
    } fills[] = {{"uuid_generate", 0},   {"uuid_generate_random", 0},
                 {"uuid_generate_time", 0}, {"uuid_generate_time_safe", 0},
                 {"RAND_bytes", 0},      {"RAND_priv_bytes", 0},
                 {"arc4random_buf", 0},  {"getrandom", 0},
                 {"getentropy", 0},      {"clock_gettime", 1},
                 {"gettimeofday", 0},    {"time", 0},
                 {"timespec_get", 0},    {"sd_id128_randomize", 0},
                 {NULL, 0}};
    if (e->kind != KDC_E_CALL || !e->name)
        return -1;
    for (size_t i = 0; fills[i].name; i++)
        if (!strcmp(e->name, fills[i].name))
            return fills[i].arg;
    return -1;
}

/* Calls that copy a value from arguments into a destination: dst index, and
 * the first source index (every later argument is a source too). */
static int copy_call(const kdc_expr_t *e, int *src) {
    static const struct {
        const char *name;
        int dst, src;
    } copies[] = {{"snprintf", 0, 2},     {"sprintf", 0, 1},       {"strcpy", 0, 1},
                  {"strncpy", 0, 1},      {"strcat", 0, 1},        {"strncat", 0, 1},
                  {"stpcpy", 0, 1},       {"memcpy", 0, 1},        {"memmove", 0, 1},
                  {"uuid_unparse", 1, 0}, {"uuid_unparse_lower", 1, 0},
                  {"uuid_unparse_upper", 1, 0}, {"uuid_copy", 0, 1}, {"uuid_parse", 1, 0},
                  {NULL, 0, 0}};
    if (e->kind != KDC_E_CALL || !e->name)
        return -1;
    for (size_t i = 0; copies[i].name; i++)
        if (!strcmp(e->name, copies[i].name)) {
            *src = copies[i].src;
            return copies[i].dst;
        }
    return -1;
}

/* A header name that identifies the event: a literal with id, key, uuid,
 * identity, dedup(e), idempotency in it, or retry without a time word (retry-at
 * is a schedule); tracing headers (trace, span) are not. A name kdc-lint cannot
 * read counts as an identity. */
static int identity_header(const kdc_expr_t *name) {
    static const char *const strong[] = {"id",    "key",         "uuid",        "identity",
                                         "dedup", "dedupe",      "deduplication",
                                         "idempotency", "idempotence", NULL};
    static const char *const timing[] = {"at",    "after",    "time",  "ts",    "timestamp",
                                         "ms",    "delay",    "backoff", "deadline", "until",
                                         "due",   "epoch",    "when",  "date",  NULL};
    static const char *const tracing[] = {"trace", "span", "traceparent", "tracestate", NULL};
    while (name && name->kind == KDC_E_OTHER && name->nkids == 1)
        name = name->kids[0];
    if (name && name->kind == KDC_E_CALL && name->nkids >= 1 && name->is_ctor)
        name = kdc_expr_strip(name->kids[0]); /* C++ std::string("...") */
    if (!name || name->kind != KDC_E_STRING || !name->str)
        return 1;
    int has_strong = 0, has_retry = 0, has_timing = 0, has_tracing = 0;
    char w[64];
    size_t n = 0;
    for (const char *c = name->str;; c++) {
        if (!isalnum((unsigned char)*c) ||
            (n && isupper((unsigned char)*c) && !isupper((unsigned char)c[-1]))) {
            w[n] = 0;
            if (n) {
                has_strong |= name_is(w, strong);
                has_retry |= !strcmp(w, "retry");
                has_timing |= name_is(w, timing);
                has_tracing |= name_is(w, tracing);
            }
            n = 0;
        }
        if (!*c)
            break;
        if (isalnum((unsigned char)*c) && n + 1 < sizeof w)
            w[n++] = (char)tolower((unsigned char)*c);
    }
    if (has_tracing)
        return 0;
    return has_strong || (has_retry && !has_timing);
}

/* ---------- fresh values ---------- */

typedef struct fresh {
    kdc_rule_ctx_t *ctx;
    key_vec_t keys;               /* variables, fields, buffers holding a fresh value */
    unsigned char *fresh_return;  /* per function */
    unsigned char **fresh_param;  /* per function and parameter: filled with a fresh value */
    const kdc_func_t *f;
    int added;
} fresh_t;

static void add_key(fresh_t *fr, const char *k) {
    if (k && !has_key(&fr->keys, k)) {
        KDC_VEC_PUSH(fr->keys, k);
        fr->added = 1;
    }
}

/* The storage a destination argument names: &x, x, x + n, x[i], p->f. */
static const char *dst_key(fresh_t *fr, const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    while (e && ((e->kind == KDC_E_UNARY && e->op == KDC_OP_ADDR && e->nkids == 1) ||
                 (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ADD || e->op == KDC_OP_SUB) &&
                  e->nkids == 2)))
        e = kdc_expr_strip(e->kids[0]);
    return e ? kdc_pts_lvalue_key(fr->ctx->program, e) : NULL;
}

static int mentions_visit(const kdc_expr_t *e, void *arg) {
    fresh_t *fr = arg;
    if (fresh_value_call(e))
        return 1;
    if (e->kind == KDC_E_CALL) {
        kdc_funcvec_t callees = {0};
        kdc_pts_callees(kdc_facts_pts_of(fr->ctx->facts), fr->f, e, &callees);
        int hit = 0;
        for (size_t k = 0; k < callees.n && !hit; k++)
            hit = fr->fresh_return[callees.v[k]->index];
        free(callees.v);
        return hit;
    }
    if (e->kind == KDC_E_REF || e->kind == KDC_E_MEMBER)
        return has_key(&fr->keys, kdc_pts_lvalue_key(fr->ctx->program, e));
    return 0;
}

static int mentions_fresh(fresh_t *fr, const kdc_expr_t *e) {
    return e && kdc_expr_walk(e, mentions_visit, fr);
}

static int is_header_add(const kdc_expr_t *e, const kdc_expr_t **headers,
                         const kdc_expr_t **name, const kdc_expr_t **value) {
    if (e->kind != KDC_E_CALL || !e->name)
        return 0;
    if (!strcmp(e->name, "rd_kafka_header_add") && e->nkids >= 4) {
        *headers = e->kids[0];
        *name = e->kids[1];
        *value = e->kids[3];
        return 1;
    }
    if (!strcmp(e->name, "RdKafka::Headers::add") && e->recv && e->nkids >= 2) {
        *headers = e->recv;
        *name = e->kids[0];
        *value = e->kids[1];
        return 1;
    }
    return 0;
}

static int find_fresh(const kdc_expr_t *e, void *arg) {
    fresh_t *fr = arg;
    if (e->kind == KDC_E_BINARY && e->op == KDC_OP_ASSIGN && e->nkids == 2 &&
        mentions_fresh(fr, e->kids[1]))
        add_key(fr, dst_key(fr, e->kids[0]));
    if (e->kind != KDC_E_CALL)
        return 0;
    int a = fresh_fill_arg(e);
    if (a >= 0 && (unsigned)a < e->nkids && !kdc_expr_is_null(e->kids[a]))
        add_key(fr, dst_key(fr, e->kids[a]));
    int src = 0, dst = copy_call(e, &src);
    if (dst >= 0 && (unsigned)dst < e->nkids) {
        for (unsigned i = (unsigned)src; i < e->nkids; i++)
            if ((int)i != dst && mentions_fresh(fr, e->kids[i])) {
                add_key(fr, dst_key(fr, e->kids[dst]));
                break;
            }
    }
    const kdc_expr_t *headers, *name, *value;
    if (is_header_add(e, &headers, &name, &value) && identity_header(name) &&
        mentions_fresh(fr, value))
        add_key(fr, dst_key(fr, headers));
    /* helpers of the program that fill an out-parameter with a fresh value */
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(fr->ctx->facts), fr->f, e, &callees);
    for (size_t k = 0; k < callees.n; k++) {
        const unsigned char *fp = fr->fresh_param[callees.v[k]->index];
        for (unsigned i = 0; fp && i < e->nkids && i < callees.v[k]->nparams; i++)
            if (fp[i])
                add_key(fr, dst_key(fr, e->kids[i]));
    }
    free(callees.v);
    return 0;
}

typedef struct ret_walk {
    fresh_t *fr;
    int fresh;
} ret_walk_t;

static void find_fresh_return(const kdc_stmt_t *s, void *arg) {
    ret_walk_t *rw = arg;
    if (s->kind == KDC_S_RETURN && s->expr && mentions_fresh(rw->fr, s->expr))
        rw->fresh = 1;
}

/* Fresh variables, fields and buffers of the whole program, and which helpers
 * return a fresh value or fill a parameter with one. */
static void compute_fresh(fresh_t *fr) {
    kdc_program_t *p = fr->ctx->program;
    size_t nf = kdc_program_nfuncs(p);
    fr->fresh_return = calloc(nf ? nf : 1, 1);
    fr->fresh_param = calloc(nf ? nf : 1, sizeof *fr->fresh_param);
    if (!fr->fresh_return || !fr->fresh_param)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(p, i);
        if (f->nparams && !(fr->fresh_param[f->index] = calloc(f->nparams, 1)))
            kdc_oom();
    }
    for (int round = 0; round < 6; round++) {
        fr->added = 0;
        for (size_t i = 0; i < nf; i++) {
            fr->f = kdc_program_func(p, i);
            kdc_func_walk_exprs(fr->f, find_fresh, fr);
            ret_walk_t rw = {fr, 0};
            kdc_stmt_walk(fr->f->body, find_fresh_return, &rw);
            if (rw.fresh && !fr->fresh_return[fr->f->index]) {
                fr->fresh_return[fr->f->index] = 1;
                fr->added = 1;
            }
            for (unsigned k = 0; k < fr->f->nparams; k++) {
                const char *u = fr->f->param_usrs ? fr->f->param_usrs[k] : NULL;
                if (!u || fr->fresh_param[fr->f->index][k])
                    continue;
                char buf[512];
                snprintf(buf, sizeof buf, "D:%s", u);
                if (has_key(&fr->keys, u) || has_key(&fr->keys, kdc_intern(p, buf))) {
                    fr->fresh_param[fr->f->index][k] = 1;
                    fr->added = 1;
                }
            }
        }
        if (!fr->added)
            break;
    }
}

/* ---------- the dead-letter produce ---------- */

typedef struct ids {
    const kdc_expr_t *v[16];
    size_t n;
} ids_t;

static void add_id(ids_t *ids, const kdc_expr_t *e) {
    if (e && ids->n < 16)
        ids->v[ids->n++] = e;
}

/* rd_kafka_producev(): RD_KAFKA_V_KEY, identity RD_KAFKA_V_HEADERs, RD_KAFKA_V_HEADERS. */
static void producev_ids(const kdc_expr_t *call, ids_t *ids) {
    static const int nvals[] = {0, 1, 1, 1, 2, 2, 1, 1, 1, 3, 1};
    unsigned i = kdc_api_varargs_start(call);
    while (i < call->nkids) {
        const kdc_expr_t *m = call->kids[i];
        if (!m->has_ival || m->ival <= 0 || m->ival >= (long long)(sizeof nvals / sizeof nvals[0]))
            return;
        if (m->ival == 5 /* KEY */ || m->ival == 10 /* HEADERS */)
            add_id(ids, kdc_call_arg(call, i + 1));
        if (m->ival == 9 /* HEADER */ && i + 2 < call->nkids && identity_header(call->kids[i + 1]))
            add_id(ids, call->kids[i + 2]);
        i += 1 + (unsigned)nvals[m->ival];
    }
}

static const char *const MESSAGE =
    "dead-letter message keyed on a freshly generated id (uuid, random, time): each re-routing "
    "of the same event gets a new identity, so retry limits and duplicate detection never "
    "match; key it on the original event (hash of topic + key + value, or its "
    "topic/partition/offset headers)";

/* The identity expressions (key, identity headers) of a produce. */
static void produce_ids(const kdc_expr_t *call, const kdc_api_t *api, ids_t *ids) {
    if (api->varargs)
        producev_ids(call, ids);
    else if (!strcmp(api->name, "rd_kafka_produce"))
        add_id(ids, kdc_call_arg(call, 5));
    else if (!strcmp(api->name, "RdKafka::Producer::produce")) {
        if (call->nkids >= 7)
            add_id(ids, kdc_call_arg(call, 5)); /* key (pointer, or const std::string *) */
        else if (call->nkids == 5)
            add_id(ids, kdc_call_arg(call, 3)); /* const std::vector<char> *key */
        if (call->nkids >= 10)
            add_id(ids, kdc_call_arg(call, 8)); /* RdKafka::Headers * */
    }
}

static void check_produce(kdc_rule_ctx_t *ctx, fresh_t *fr, const kdc_func_t *f,
                          const kdc_expr_t *call, const kdc_api_t *api) {
    if (!kdc_facts_is_dlq_produce(ctx->facts, f, call))
        return;
    ids_t ids = {{0}, 0};
    produce_ids(call, api, &ids);
    fr->f = f;
    for (size_t i = 0; i < ids.n; i++) {
        if (!mentions_fresh(fr, ids.v[i]))
            continue;
        kdc_rule_report(ctx, f, &call->loc, NULL, 0, "%s", MESSAGE);
        return;
    }
}

/* ---------- helpers whose parameter becomes a dead-letter identity ---------- */

typedef struct id_params {
    kdc_rule_ctx_t *ctx;
    unsigned char **param;           /* per function and parameter */
    const kdc_expr_t ***site;        /* the dead-letter produce it reaches */
} id_params_t;

/* Does an identity expression of a produce in f mention its parameter p? */
static int param_in_ids(const kdc_func_t *f, const ids_t *ids, unsigned p) {
    for (size_t i = 0; i < ids->n; i++)
        if (kdc_mentions(ids->v[i], f->param_usrs[p]))
            return 1;
    return 0;
}

static void compute_id_params(id_params_t *ip) {
    kdc_program_t *prog = ip->ctx->program;
    size_t nf = kdc_program_nfuncs(prog);
    ip->param = calloc(nf ? nf : 1, sizeof *ip->param);
    ip->site = calloc(nf ? nf : 1, sizeof *ip->site);
    if (!ip->param || !ip->site)
        kdc_oom();
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(prog, i);
        if (!f->nparams || !f->param_usrs)
            continue;
        ip->param[f->index] = calloc(f->nparams, 1);
        ip->site[f->index] = calloc(f->nparams, sizeof **ip->site);
        if (!ip->param[f->index] || !ip->site[f->index])
            kdc_oom();
    }
    const kdc_pts_t *pts = kdc_facts_pts_of(ip->ctx->facts);
    for (int changed = 1, round = 0; changed && round < 4; round++) {
        changed = 0;
        for (size_t i = 0; i < nf; i++) {
            const kdc_func_t *f = kdc_program_func(prog, i);
            if (!ip->param[f->index])
                continue;
            for (unsigned c = 0; c < f->ncalls; c++) {
                const kdc_expr_t *call = f->calls[c];
                const kdc_api_t *api = kdc_api_lookup(call);
                if (api && (api->roles & KDC_API_PRODUCE)) {
                    if (!kdc_facts_is_dlq_produce(ip->ctx->facts, f, call))
                        continue;
                    ids_t ids = {{0}, 0};
                    produce_ids(call, api, &ids);
                    for (unsigned p = 0; p < f->nparams; p++)
                        if (!ip->param[f->index][p] && f->param_usrs[p] &&
                            param_in_ids(f, &ids, p)) {
                            ip->param[f->index][p] = 1;
                            ip->site[f->index][p] = call;
                            changed = 1;
                        }
                    continue;
                }
                /* passed on to a helper's identity parameter */
                kdc_funcvec_t callees = {0};
                kdc_pts_callees(pts, f, call, &callees);
                for (size_t k = 0; k < callees.n; k++) {
                    const kdc_func_t *g = callees.v[k];
                    for (unsigned a = 0; a < call->nkids && a < g->nparams; a++) {
                        if (!ip->param[g->index] || !ip->param[g->index][a])
                            continue;
                        for (unsigned p = 0; p < f->nparams; p++)
                            if (!ip->param[f->index][p] && f->param_usrs[p] &&
                                kdc_mentions(call->kids[a], f->param_usrs[p])) {
                                ip->param[f->index][p] = 1;
                                ip->site[f->index][p] = ip->site[g->index][a];
                                changed = 1;
                            }
                    }
                }
                free(callees.v);
            }
        }
    }
}

/* A call passing a fresh value to a helper's identity parameter. */
static void check_call(kdc_rule_ctx_t *ctx, fresh_t *fr, id_params_t *ip, const kdc_func_t *f,
                       const kdc_expr_t *call) {
    kdc_funcvec_t callees = {0};
    kdc_pts_callees(kdc_facts_pts_of(ctx->facts), f, call, &callees);
    fr->f = f;
    for (size_t k = 0; k < callees.n; k++) {
        const kdc_func_t *g = callees.v[k];
        for (unsigned a = 0; a < call->nkids && a < g->nparams; a++) {
            if (!ip->param[g->index] || !ip->param[g->index][a] ||
                !mentions_fresh(fr, call->kids[a]))
                continue;
            kdc_notes_t notes = {0};
            kdc_notes_add(&notes, &ip->site[g->index][a]->loc,
                          "the helper's dead-letter produce uses this argument as its identity");
            kdc_rule_report(ctx, f, &call->loc, notes.v, notes.n, "%s", MESSAGE);
            free(callees.v);
            return;
        }
    }
    free(callees.v);
}

/* Does the program produce to a dead-letter queue anywhere? Every finding is at such a
 * produce, or at a call whose argument reaches one's identity. */
static int produces_to_dlq(kdc_rule_ctx_t *ctx) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++)
        if ((apis[j].api->roles & KDC_API_PRODUCE) &&
            kdc_facts_is_dlq_produce(ctx->facts, apis[j].f, apis[j].call))
            return 1;
    return 0;
}

static void check(kdc_rule_ctx_t *ctx) {
    if (!produces_to_dlq(ctx))
        return; /* the fixpoints below walk the whole program six times over */
    fresh_t fr = {0};
    fr.ctx = ctx;
    compute_fresh(&fr);
    id_params_t ip = {ctx, NULL, NULL};
    compute_id_params(&ip);
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        for (unsigned c = 0; c < f->ncalls; c++) {
            const kdc_api_t *api = kdc_api_lookup(f->calls[c]);
            if (api && (api->roles & KDC_API_PRODUCE))
                check_produce(ctx, &fr, f, f->calls[c], api);
            else if (!api)
                check_call(ctx, &fr, &ip, f, f->calls[c]);
        }
    }
    for (size_t i = 0; i < nf; i++) {
        const kdc_func_t *f = kdc_program_func(ctx->program, i);
        free(fr.fresh_param[f->index]);
        free(ip.param[f->index]);
        free(ip.site[f->index]);
    }
    free(ip.param);
    free(ip.site);
    free(fr.fresh_param);
    free(fr.fresh_return);
    free(fr.keys.v);
}

const kdc_rule_t kdc_rule_dlq_retry_identity = {
    "dlq-retry-identity",
    "dead-letter envelope keyed on a freshly generated id instead of the original event",
    KDC_SEV_WARNING,
    "medium",
    1,
    check,
};
