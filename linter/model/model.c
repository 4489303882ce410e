/* Program container: arena, string interning, function table. */
#include "model.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>


typedef struct arena_block {
    struct arena_block *next;
    size_t used, cap;
    _Alignas(16) unsigned char data[];
} arena_block_t;

struct kdc_program {
    arena_block_t *arena;
    kdc_strset_t strings;
    KDC_VEC(kdc_func_t *) funcs;
    kdc_strmap_t func_by_usr; /* first definition */
    kdc_strmap_t func_by_id;  /* second and later definitions */
    KDC_VEC(kdc_global_init_t) globals;
    KDC_VEC(kdc_tu_info_t) tus;
    KDC_VEC(kdc_omitted_t) omitted;
    KDC_VEC(const char *) contracts; /* name, contract, name, contract, ... */
    kdc_strmap_t contract_by_name;
};

kdc_program_t *kdc_program_new(void) {
    kdc_program_t *p = calloc(1, sizeof *p);
    if (!p)
        return NULL;
    kdc_strset_init(&p->strings);
    kdc_strmap_init(&p->func_by_usr);
    kdc_strmap_init(&p->func_by_id);
    kdc_strmap_init(&p->contract_by_name);
    return p;
}

void kdc_program_free(kdc_program_t *p) {
    if (!p)
        return;
    arena_block_t *b = p->arena;
    while (b) {
        arena_block_t *n = b->next;
        free(b);
        b = n;
    }
    kdc_strset_free(&p->strings);
    kdc_strmap_free(&p->func_by_usr);
    kdc_strmap_free(&p->func_by_id);
    kdc_strmap_free(&p->contract_by_name);
    free(p->contracts.v);
    free(p->funcs.v);
    free(p->globals.v);
    free(p->tus.v);
    free(p->omitted.v);
    free(p);
}

void *kdc_alloc(kdc_program_t *p, size_t n) {
    n = (n + 15) & ~(size_t)15;
    if (!p->arena || p->arena->cap - p->arena->used < n) {
        size_t cap = n > 1 << 20 ? n : 1 << 20;
        arena_block_t *b = malloc(sizeof *b + cap);
        if (!b)
            kdc_oom();
        b->next = p->arena;
        b->used = 0;
        b->cap = cap;
        p->arena = b;
    }
    void *r = p->arena->data + p->arena->used;
    p->arena->used += n;
    memset(r, 0, n);
    return r;
}

const char *kdc_intern_n(kdc_program_t *p, const char *s, size_t n) {
    return kdc_strset_add(&p->strings, s, n);
}

const char *kdc_intern(kdc_program_t *p, const char *s) {
    return s ? kdc_intern_n(p, s, strlen(s)) : NULL;
}

int kdc_program_add_func(kdc_program_t *p, kdc_func_t *f) {
    kdc_func_t *first = kdc_strmap_get(&p->func_by_usr, f->usr);
    f->id = f->usr;
    if (first) {
        kdc_func_t *last = first;
        for (kdc_func_t *g = first; g; g = g->next_def) {
            if (g->loc.file == f->loc.file && g->loc.line == f->loc.line)
                return 0;
            last = g;
        }
        char buf[4096];
        snprintf(buf, sizeof buf, "%s@%s:%u", f->usr, f->loc.file ? f->loc.file : "", f->loc.line);
        f->id = kdc_intern(p, buf);
        last->next_def = f;
        kdc_strmap_put(&p->func_by_id, f->id, f);
    } else {
        kdc_strmap_put(&p->func_by_usr, f->usr, f);
    }
    f->index = (unsigned)p->funcs.n;
    KDC_VEC_PUSH(p->funcs, f);
    return 1;
}

void kdc_program_add_global_init(kdc_program_t *p, const char *usr, kdc_expr_t *init) {
    kdc_global_init_t g = {usr, init};
    KDC_VEC_PUSH(p->globals, g);
}

int kdc_program_add_tu(kdc_program_t *p, const kdc_tu_info_t *tu) {
    KDC_VEC_PUSH(p->tus, *tu);
    return (int)p->tus.n - 1;
}

void kdc_program_add_omitted(kdc_program_t *p, const char *usr, const char *file, unsigned line) {
    kdc_omitted_t o = {usr, file, line};
    KDC_VEC_PUSH(p->omitted, o);
}

void kdc_program_add_contract(kdc_program_t *p, const char *name, const char *contract) {
    if (!name || !contract || kdc_strmap_get(&p->contract_by_name, name))
        return;
    kdc_strmap_put(&p->contract_by_name, name, (void *)contract);
    KDC_VEC_PUSH(p->contracts, name);
    KDC_VEC_PUSH(p->contracts, contract);
}

size_t kdc_program_ncontracts(const kdc_program_t *p) {
    return p->contracts.n / 2;
}

void kdc_program_contract(const kdc_program_t *p, size_t i, const char **name,
                          const char **contract) {
    *name = p->contracts.v[2 * i];
    *contract = p->contracts.v[2 * i + 1];
}

size_t kdc_program_nomitted(const kdc_program_t *p) { return p->omitted.n; }
const kdc_omitted_t *kdc_program_omitted(const kdc_program_t *p, size_t i) {
    return &p->omitted.v[i];
}

int kdc_program_has_def(const kdc_program_t *p, const char *usr, const char *file,
                        unsigned line) {
    for (const kdc_func_t *g = usr ? kdc_strmap_get(&p->func_by_usr, usr) : NULL; g;
         g = g->next_def)
        if (g->loc.file == file && g->loc.line == line)
            return 1;
    return 0;
}

size_t kdc_program_nfuncs(const kdc_program_t *p) { return p->funcs.n; }
kdc_func_t *kdc_program_func(const kdc_program_t *p, size_t i) { return p->funcs.v[i]; }
kdc_func_t *kdc_program_find_func(const kdc_program_t *p, const char *id) {
    if (!id)
        return NULL;
    kdc_func_t *f = kdc_strmap_get(&p->func_by_id, id);
    return f ? f : kdc_strmap_get(&p->func_by_usr, id);
}

kdc_func_t *kdc_program_find_callee(const kdc_program_t *p, const char *usr, int tu) {
    kdc_func_t *first = usr ? kdc_strmap_get(&p->func_by_usr, usr) : NULL;
    for (kdc_func_t *g = first; g; g = g->next_def)
        if (g->tu == tu)
            return g;
    return first;
}
size_t kdc_program_nglobal_inits(const kdc_program_t *p) { return p->globals.n; }
const kdc_global_init_t *kdc_program_global_init(const kdc_program_t *p, size_t i) {
    return &p->globals.v[i];
}
size_t kdc_program_ntus(const kdc_program_t *p) { return p->tus.n; }
const kdc_tu_info_t *kdc_program_tu(const kdc_program_t *p, size_t i) { return &p->tus.v[i]; }

void kdc_program_files(const kdc_program_t *prog, kdc_files_t *out) {
    KDC_VEC(const char *) v = {0};
    const char *last = NULL;
    for (size_t i = 0; i < kdc_program_ntus(prog); i++)
        KDC_VEC_PUSH(v, kdc_program_tu(prog, i)->file);
    for (size_t i = 0; i < kdc_program_nfuncs(prog); i++) {
        const char *f = kdc_program_func(prog, i)->loc.file;
        if (f && f != last)
            KDC_VEC_PUSH(v, f);
        last = f;
    }
    out->v = v.v;
    out->n = v.n;
}

const kdc_expr_t *kdc_expr_strip(const kdc_expr_t *e) {
    /* parse.c already drops casts and parentheses; a comma yields its right side. */
    while (e && e->kind == KDC_E_BINARY && e->op == KDC_OP_COMMA && e->nkids == 2)
        e = e->kids[1];
    return e;
}

const kdc_expr_t *kdc_expr_strip_copy(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    for (int d = 0; e && e->kind == KDC_E_CALL && d < 8; d++) {
        const kdc_expr_t *k = e->nkids == 1 ? e->kids[0] : NULL;
        /* libclang shows such a construction as a call of nothing named, its argument
         * also as the "callee"; a call through a function pointer has a callee of
         * pointer type */
        const kdc_expr_t *c = e->callee_expr;
        if (!k || (e->name && *e->name) || e->is_method || !e->type || !k->type ||
            strcmp(e->type, k->type) || (c && (!c->type || strcmp(c->type, e->type))))
            break;
        e = kdc_expr_strip(k);
    }
    return e;
}

const kdc_expr_t *kdc_expr_assigned(const kdc_expr_t *e) {
    if (!e || !e->nkids)
        return NULL;
    if (e->kind == KDC_E_BINARY && (e->op == KDC_OP_ASSIGN || e->op == KDC_OP_COMPOUND_ASSIGN))
        return e->kids[0];
    if (e->kind == KDC_E_UNARY && (e->op == KDC_OP_PREINC || e->op == KDC_OP_PREDEC ||
                                   e->op == KDC_OP_POSTINC || e->op == KDC_OP_POSTDEC))
        return e->kids[0];
    return NULL;
}

int kdc_expr_is_null(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    return e && (e->kind == KDC_E_NULL || (e->kind == KDC_E_INT && e->ival == 0));
}

const kdc_expr_t *kdc_call_arg(const kdc_expr_t *call, unsigned i) {
    if (!call || call->kind != KDC_E_CALL || i >= call->nkids)
        return NULL;
    return call->kids[i];
}

const char *kdc_expr_root_name(const kdc_expr_t *e) {
    e = kdc_expr_strip(e);
    while (e) {
        switch (e->kind) {
        case KDC_E_REF:
        case KDC_E_MEMBER:
            return e->name;
        case KDC_E_UNARY:
        case KDC_E_INDEX:
            e = e->nkids ? e->kids[0] : NULL;
            break;
        default:
            return NULL;
        }
    }
    return NULL;
}

int kdc_expr_walk(const kdc_expr_t *e, int (*fn)(const kdc_expr_t *, void *), void *arg) {
    if (!e)
        return 0;
    int r = fn(e, arg);
    if (r)
        return r;
    if (e->recv && (r = kdc_expr_walk(e->recv, fn, arg)))
        return r;
    if (e->callee_expr && (r = kdc_expr_walk(e->callee_expr, fn, arg)))
        return r;
    for (unsigned i = 0; i < e->nkids; i++)
        if ((r = kdc_expr_walk(e->kids[i], fn, arg)))
            return r;
    return 0;
}

void kdc_stmt_walk(const kdc_stmt_t *s, void (*fn)(const kdc_stmt_t *, void *), void *arg) {
    if (!s)
        return;
    fn(s, arg);
    kdc_stmt_walk(s->init, fn, arg);
    kdc_stmt_walk(s->body, fn, arg);
    kdc_stmt_walk(s->els, fn, arg);
    for (unsigned i = 0; i < s->nkids; i++)
        kdc_stmt_walk(s->kids[i], fn, arg);
}

typedef struct walk_exprs {
    int (*fn)(const kdc_expr_t *, void *);
    void *arg;
} walk_exprs_t;

static void walk_stmt_exprs(const kdc_stmt_t *s, void *arg) {
    walk_exprs_t *w = arg;
    kdc_expr_walk(s->expr, w->fn, w->arg);
    kdc_expr_walk(s->inc, w->fn, w->arg);
}

void kdc_func_walk_exprs(const kdc_func_t *f, int (*fn)(const kdc_expr_t *, void *), void *arg) {
    walk_exprs_t w = {fn, arg};
    kdc_stmt_walk(f->body, walk_stmt_exprs, &w);
}
