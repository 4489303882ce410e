#include "consumer_common.h"
#include "pts.h"

#include <ctype.h>
#include <string.h>

void kdc_call_clients(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                      const kdc_api_t *api, int type, kdc_bits_t *clients, int *unknown) {
    const kdc_expr_t *handle = api->handle != KDC_ARG_NONE ? kdc_api_arg(call, api->handle)
                                                           : kdc_api_arg(call, api->topic);
    kdc_rule_clients_at(ctx, f, call, handle, type, clients, unknown);
}

int kdc_call_on_client(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                       const kdc_api_t *api, int type, size_t client) {
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(ctx, f, call, api, type, &clients, &unknown);
    int hit = kdc_bits_get(&clients, client) || unknown;
    kdc_bits_free(&clients);
    return hit;
}

int kdc_call_only_other_clients(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call,
                                int type, size_t client) {
    int others = 0;
    for (unsigned i = 0; i < call->nkids; i++) {
        const kdc_expr_t *a = kdc_expr_strip(call->kids[i]);
        if (!a || !a->type ||
            !((strstr(a->type, "rd_kafka_t") && !strstr(a->type, "rd_kafka_topic")) ||
              strstr(a->type, "RdKafka::Producer") || strstr(a->type, "RdKafka::KafkaConsumer")))
            continue; /* not a client handle */
        kdc_bits_t clients;
        int unknown = 0;
        kdc_rule_clients(ctx, f, a, type, &clients, &unknown);
        int mine = kdc_bits_get(&clients, client) || unknown;
        kdc_bits_free(&clients);
        if (mine)
            return 0;
        others = 1;
    }
    return others;
}

const kdc_func_t *kdc_call_helper_for_client(kdc_rule_ctx_t *ctx, const kdc_func_t *f,
                                             const kdc_expr_t *call, int type, size_t client) {
    if (kdc_api_lookup(call) || !call->usr || call->callee_system ||
        kdc_call_only_other_clients(ctx, f, call, type, client))
        return NULL;
    const kdc_func_t *g = kdc_program_find_callee(ctx->program, call->usr, f->tu);
    return g && g->body && g->cfg ? g : NULL;
}

const kdc_expr_t *kdc_at_helper_calls(kdc_rule_ctx_t *ctx, const kdc_func_t *f, int type,
                                      size_t client, kdc_helper_call_fn at) {
    size_t n;
    const kdc_call_site_t *sites = kdc_facts_named_callers(ctx->facts, f, &n);
    for (size_t i = 0; i < n; i++) {
        const kdc_func_t *c = sites[i].f;
        const kdc_expr_t *cc = sites[i].call;
        if (c == f || kdc_call_only_other_clients(ctx, c, cc, type, client))
            continue;
        const kdc_expr_t *found = at(ctx, c, client, cc);
        if (found)
            return found;
    }
    return NULL;
}

static size_t consumers(kdc_rule_ctx_t *ctx) {
    size_t n = 0, nobjs = kdc_pts_nobjs(kdc_facts_pts_of(ctx->facts));
    for (size_t i = 0; i < nobjs; i++)
        if (kdc_facts_obj(ctx->facts, i)->kind == KDC_OBJ_CLIENT &&
            kdc_facts_client_type(ctx->facts, i) == 1)
            n++;
    return n;
}

static int commits_manually(kdc_rule_ctx_t *ctx, size_t client, int with_libkdc) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    int only = consumers(ctx) == 1;
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (!api || !(api->roles & (KDC_API_COMMIT | KDC_API_STORE)) ||
            (!with_libkdc && !strncmp(api->name, "kdc_", 4)))
            continue;
        kdc_bits_t clients;
        int unknown = 0;
        kdc_call_clients(ctx, f, call, api, 1, &clients, &unknown);
        int hit = kdc_bits_get(&clients, client) || (unknown && only);
        kdc_bits_free(&clients);
        if (hit)
            return 1;
    }
    return 0;
}

static int commits_manually_kept(kdc_rule_ctx_t *ctx, size_t client, int with_libkdc) {
    unsigned q = with_libkdc ? KDC_MEMO_COMMITS_LIBKDC : KDC_MEMO_COMMITS;
    int yes = kdc_facts_client_memo(ctx->facts, q, client);
    if (yes < 0)
        kdc_facts_client_memo_set(ctx->facts, q, client,
                                  yes = commits_manually(ctx, client, with_libkdc));
    return yes;
}

int kdc_consumer_commits_manually(kdc_rule_ctx_t *ctx, size_t client) {
    return commits_manually_kept(ctx, client, 0);
}

int kdc_consumer_commits_manually_or_with_libkdc(kdc_rule_ctx_t *ctx, size_t client) {
    return commits_manually_kept(ctx, client, 1);
}

const char *kdc_root_var(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    while (e && (e->kind == KDC_E_MEMBER || e->kind == KDC_E_INDEX ||
                 (e->kind == KDC_E_UNARY && e->nkids == 1) ||
                 (e->kind == KDC_E_CALL && e->is_method && e->recv))) {
        if (e->kind == KDC_E_MEMBER && !e->nkids)
            return NULL;
        e = kdc_expr_strip(e->kind == KDC_E_CALL ? e->recv : e->kids[0]);
    }
    return e && e->kind == KDC_E_REF && e->ref != KDC_REF_FUNCTION ? e->usr : NULL;
}

static int mentions_visit(const kdc_expr_t *e, void *arg) {
    return e->kind == KDC_E_REF && e->usr == (const char *)arg;
}

int kdc_mentions(const kdc_expr_t *e, const char *usr) {
    return usr && kdc_expr_walk(e, mentions_visit, (void *)usr);
}

const kdc_expr_t *kdc_commit_message_of(const kdc_expr_t *call, const kdc_api_t *api) {
    if (!strcmp(api->name, "rd_kafka_commit_message") || !strcmp(api->name, "kdc_commit_message"))
        return kdc_call_arg(call, 1);
    if (!strcmp(api->name, "rd_kafka_offset_store"))
        return kdc_call_arg(call, 0); /* m->rkt */
    if (call->is_method && call->nkids == 1 && call->str && strstr(call->str, "Message"))
        return call->kids[0];
    return NULL;
}

int kdc_type_is_message(const char *type) {
    return type && (strstr(type, "rd_kafka_message_t") || strstr(type, "RdKafka::Message"));
}

static int is_message_ref(const kdc_expr_t *e) {
    return e->kind == KDC_E_REF && e->usr && e->ref != KDC_REF_FUNCTION &&
           kdc_type_is_message(e->type);
}

typedef struct var_list {
    const char **v;
    size_t n, max;
} var_list_t;

static int add_message_var(const kdc_expr_t *e, void *arg) {
    var_list_t *m = arg;
    if (!is_message_ref(e))
        return 0;
    for (size_t i = 0; i < m->n; i++)
        if (m->v[i] == e->usr)
            return 0;
    if (m->n < m->max)
        m->v[m->n++] = e->usr;
    return 0;
}

size_t kdc_add_message_vars(const kdc_expr_t *e, const char **vars, size_t n, size_t max) {
    var_list_t m = {vars, n, max};
    kdc_expr_walk(e, add_message_var, &m);
    return m.n;
}

static int add_index_var(const kdc_expr_t *e, void *arg) {
    var_list_t *l = arg;
    const char *v = e->kind == KDC_E_INDEX && e->nkids == 2 ? kdc_root_var(e->kids[1]) : NULL;
    if (v && l->n < l->max)
        l->v[l->n++] = v;
    return 0;
}

size_t kdc_add_index_vars(const kdc_expr_t *e, const char **vars, size_t n, size_t max) {
    var_list_t l = {vars, n, max};
    kdc_expr_walk(e, add_index_var, &l);
    return l.n;
}

typedef struct batch_ctx {
    kdc_rule_ctx_t *ctx;
    const kdc_func_t *f;
    size_t client;
    const char *vars[16];
    size_t nvars;
    int hit;
} batch_ctx_t;

/* m = rd_kafka_consumer_poll(consumer, ..) */
static int find_polled(const kdc_expr_t *e, void *arg) {
    batch_ctx_t *b = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2)
        return 0;
    const kdc_expr_t *rhs = kdc_expr_strip(e->kids[1]);
    const kdc_api_t *api = kdc_api_lookup(rhs);
    if (!api || !(api->roles & KDC_API_CONSUME) || b->nvars >= 16)
        return 0;
    kdc_bits_t clients;
    int unknown = 0;
    kdc_call_clients(b->ctx, b->f, rhs, api, 1, &clients, &unknown);
    if (kdc_bits_get(&clients, b->client)) {
        const char *v = kdc_root_var(e->kids[0]);
        if (v)
            b->vars[b->nvars++] = v;
    }
    kdc_bits_free(&clients);
    return 0;
}

/* batch[n++] = m */
static int find_batching(const kdc_expr_t *e, void *arg) {
    batch_ctx_t *b = arg;
    if (e->kind != KDC_E_BINARY || e->op != KDC_OP_ASSIGN || e->nkids != 2 ||
        kdc_expr_strip(e->kids[0])->kind != KDC_E_INDEX)
        return 0;
    const kdc_expr_t *rhs = kdc_expr_strip(e->kids[1]);
    for (size_t i = 0; i < b->nvars && !b->hit; i++)
        b->hit = rhs->kind == KDC_E_REF && rhs->usr == b->vars[i];
    return b->hit;
}

static int batches(kdc_rule_ctx_t *ctx, size_t client) {
    size_t nf = kdc_program_nfuncs(ctx->program);
    for (size_t i = 0; i < nf; i++) {
        batch_ctx_t b = {ctx, kdc_program_func(ctx->program, i), client, {0}, 0, 0};
        kdc_func_walk_exprs(b.f, find_polled, &b);
        if (b.nvars)
            kdc_func_walk_exprs(b.f, find_batching, &b);
        if (b.hit)
            return 1;
    }
    return 0;
}

int kdc_consumer_batches(kdc_rule_ctx_t *ctx, size_t client) {
    int yes = kdc_facts_client_memo(ctx->facts, KDC_MEMO_BATCHES, client);
    if (yes < 0)
        kdc_facts_client_memo_set(ctx->facts, KDC_MEMO_BATCHES, client, yes = batches(ctx, client));
    return yes;
}

int kdc_name_has_word(const char *name, const char *const *words, const char *const *first) {
    const char *base = strrchr(name, ':');
    base = base ? base + 1 : name;
    char w[64];
    size_t n = 0, index = 0;
    for (const char *c = base;; c++) {
        if ((!*c || *c == '_' || (n && isupper((unsigned char)*c))) && n) {
            w[n] = 0;
            for (size_t i = 0; words[i]; i++)
                if (!strcmp(w, words[i]))
                    return 1;
            for (size_t i = 0; first && index == 0 && first[i]; i++)
                if (!strcmp(w, first[i]))
                    return 1;
            n = 0;
            index++;
        }
        if (!*c)
            return 0;
        if (*c != '_' && n + 1 < sizeof w)
            w[n++] = (char)tolower((unsigned char)*c);
    }
}

int kdc_is_logging_name(const char *name) {
    static const char *const words[] = {"log", "print", "printf", "trace", "debug", "dump",
                                        "dbg", "dbgprintf", NULL};
    return kdc_name_has_word(name, words, NULL);
}

size_t kdc_consumed_vars(kdc_rule_ctx_t *ctx, const kdc_func_t *f, size_t client,
                         const char **vars, size_t max) {
    batch_ctx_t b = {ctx, f, client, {0}, 0, 0};
    kdc_func_walk_exprs(f, find_polled, &b);
    size_t n = b.nvars < max ? b.nvars : max;
    for (size_t i = 0; i < n; i++)
        vars[i] = b.vars[i];
    return n;
}

int kdc_call_outside_processing(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call) {
    if (call->kind != KDC_E_CALL || !call->name || !*call->name || call->callee_system ||
        kdc_api_lookup(call) || kdc_api_is_librdkafka(call) || kdc_is_logging_name(call->name))
        return 0;
    /* C++ constructors and operators (a template of the program's whose instance
     * has no body here: `tostr() << msg->topic_name()`) build values, they do
     * not process the message */
    if (call->is_ctor || strstr(call->name, "operator"))
        return 0;
    return !call->usr || !kdc_program_find_callee(ctx->program, call->usr, f->tu);
}

static int is_group(kdc_rule_ctx_t *ctx, size_t client) {
    size_t napi;
    const kdc_api_call_t *apis = kdc_api_calls(ctx->program, &napi);
    for (size_t j = 0; j < napi; j++) {
        const kdc_func_t *f = apis[j].f;
        const kdc_expr_t *call = apis[j].call;
        const kdc_api_t *api = apis[j].api;
        if (!api ||
            !((api->roles & KDC_API_SUBSCRIBE) || !strcmp(api->name, "rd_kafka_consumer_poll") ||
              !strcmp(api->name, "RdKafka::KafkaConsumer::consume")))
            continue;
        if (kdc_call_on_client(ctx, f, call, api, 1, client))
            return 1;
    }
    return 0;
}

int kdc_consumer_is_group(kdc_rule_ctx_t *ctx, size_t client) {
    int yes = kdc_facts_client_memo(ctx->facts, KDC_MEMO_GROUP, client);
    if (yes < 0)
        kdc_facts_client_memo_set(ctx->facts, KDC_MEMO_GROUP, client, yes = is_group(ctx, client));
    return yes;
}

int kdc_expr_is_topic_handle(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *e) {
    const kdc_pts_t *pts = kdc_facts_pts_of(ctx->facts);
    if (!e)
        return 0;
    kdc_bits_t b;
    kdc_pts_expr(pts, f, e, &b);
    int topics = 0, clients = 0;
    for (size_t i = kdc_bits_next(&b, 0); i < kdc_pts_nobjs(pts); i = kdc_bits_next(&b, i + 1)) {
        kdc_obj_kind_t k = kdc_pts_obj(pts, i)->kind;
        topics += k == KDC_OBJ_TOPIC;
        clients += k == KDC_OBJ_CLIENT;
    }
    kdc_bits_free(&b);
    return topics && !clients;
}
