/* One translation unit's model as bytes, and back (see unitio.h). */
#define _GNU_SOURCE
#include "unitio.h"
#include "util.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define UNIT_MAGIC "KDCU"
#define UNIT_FORMAT 4u /* 3: callee_noreturn; 4: callees' contracts */

/* ---------- encoding ---------- */

/* Nodes are numbered in post-order (children first), so every reference in
 * the bytes points to a node already read: the decoder builds each node in
 * one pass and a cycle cannot be expressed. Index 0 means NULL. */
typedef struct enc {
    kdc_buf_t *out;
    kdc_strmap_t str_ids, expr_ids, stmt_ids; /* pointer → index + 1 */
    KDC_VEC(const char *) strs;
    KDC_VEC(const kdc_expr_t *) exprs;
    KDC_VEC(const kdc_stmt_t *) stmts;
} enc_t;

static uint32_t id_of(const kdc_strmap_t *m, const void *p) {
    return p ? (uint32_t)(uintptr_t)kdc_strmap_get(m, p) : 0;
}

static void note_str(enc_t *e, const char *s) {
    if (!s || kdc_strmap_get(&e->str_ids, s))
        return;
    KDC_VEC_PUSH(e->strs, s);
    kdc_strmap_put(&e->str_ids, s, (void *)(uintptr_t)e->strs.n);
}

static void note_loc(enc_t *e, const kdc_loc_t *l) { note_str(e, l->file); }

static void number_expr(enc_t *e, const kdc_expr_t *x) {
    if (!x || kdc_strmap_get(&e->expr_ids, (const char *)x))
        return;
    number_expr(e, x->recv);
    number_expr(e, x->callee_expr);
    for (unsigned i = 0; i < x->nkids; i++)
        number_expr(e, x->kids[i]);
    note_str(e, x->name);
    note_str(e, x->usr);
    note_str(e, x->str);
    note_str(e, x->type);
    if (x->fields)
        for (unsigned i = 0; i < x->nkids; i++)
            note_str(e, x->fields[i]);
    note_loc(e, &x->loc);
    KDC_VEC_PUSH(e->exprs, x);
    kdc_strmap_put(&e->expr_ids, (const char *)x, (void *)(uintptr_t)e->exprs.n);
}

static void number_stmt(enc_t *e, const kdc_stmt_t *s) {
    if (!s || kdc_strmap_get(&e->stmt_ids, (const char *)s))
        return;
    number_expr(e, s->expr);
    number_expr(e, s->inc);
    number_stmt(e, s->init);
    number_stmt(e, s->body);
    number_stmt(e, s->els);
    for (unsigned i = 0; i < s->nkids; i++)
        number_stmt(e, s->kids[i]);
    note_str(e, s->label);
    note_loc(e, &s->loc);
    KDC_VEC_PUSH(e->stmts, s);
    kdc_strmap_put(&e->stmt_ids, (const char *)s, (void *)(uintptr_t)e->stmts.n);
}

static void put_u8(enc_t *e, unsigned v) {
    uint8_t b = (uint8_t)v;
    kdc_buf_put(e->out, &b, 1);
}
static void put_u32(enc_t *e, uint32_t v) { kdc_buf_put(e->out, &v, sizeof v); }
static void put_i32(enc_t *e, int32_t v) { kdc_buf_put(e->out, &v, sizeof v); }
static void put_i64(enc_t *e, int64_t v) { kdc_buf_put(e->out, &v, sizeof v); }
static void put_str(enc_t *e, const char *s) { put_u32(e, id_of(&e->str_ids, s)); }
static void put_expr(enc_t *e, const kdc_expr_t *x) {
    put_u32(e, id_of(&e->expr_ids, (const char *)x));
}
static void put_stmt(enc_t *e, const kdc_stmt_t *s) {
    put_u32(e, id_of(&e->stmt_ids, (const char *)s));
}
static void put_loc(enc_t *e, const kdc_loc_t *l) {
    put_str(e, l->file);
    put_u32(e, l->line);
    put_u32(e, l->col);
    put_u32(e, l->end_line);
    put_u32(e, l->end_col);
}

static void put_exprs_and_stmts(enc_t *e) {
    put_u32(e, (uint32_t)e->exprs.n);
    for (size_t i = 0; i < e->exprs.n; i++) {
        const kdc_expr_t *x = e->exprs.v[i];
        put_u8(e, x->kind);
        put_u8(e, x->op);
        put_u8(e, x->ref);
        put_u8(e, x->has_ival | x->is_method << 1 | x->is_ctor << 2 | x->arrow << 3 |
                      x->callee_system << 4 | (x->fields != NULL) << 5 |
                      x->callee_noreturn << 6);
        put_i32(e, x->param_index);
        put_i64(e, x->ival);
        put_str(e, x->name);
        put_str(e, x->usr);
        put_str(e, x->str);
        put_str(e, x->type);
        put_expr(e, x->recv);
        put_expr(e, x->callee_expr);
        put_u32(e, x->nkids);
        for (unsigned k = 0; k < x->nkids; k++)
            put_expr(e, x->kids[k]);
        if (x->fields)
            for (unsigned k = 0; k < x->nkids; k++)
                put_str(e, x->fields[k]);
        put_i32(e, x->call_id);
        put_loc(e, &x->loc);
    }
    put_u32(e, (uint32_t)e->stmts.n);
    for (size_t i = 0; i < e->stmts.n; i++) {
        const kdc_stmt_t *s = e->stmts.v[i];
        put_u8(e, s->kind);
        put_u8(e, s->unknown_cond);
        put_loc(e, &s->loc);
        put_expr(e, s->expr);
        put_stmt(e, s->init);
        put_expr(e, s->inc);
        put_stmt(e, s->body);
        put_stmt(e, s->els);
        put_u32(e, s->nkids);
        for (unsigned k = 0; k < s->nkids; k++)
            put_stmt(e, s->kids[k]);
        put_str(e, s->label);
    }
}

/* Forgets the node numbering of the previous section. */
static void new_section(enc_t *e) {
    kdc_strmap_free(&e->expr_ids);
    kdc_strmap_free(&e->stmt_ids);
    kdc_strmap_init(&e->expr_ids);
    kdc_strmap_init(&e->stmt_ids);
    e->exprs.n = 0;
    e->stmts.n = 0;
}

/* A section's byte length goes before it, so a reader can skip it whole. */
static size_t begin_length(enc_t *e) {
    size_t at = e->out->n;
    uint64_t zero = 0;
    kdc_buf_put(e->out, &zero, sizeof zero);
    return at;
}

static void end_length(enc_t *e, size_t at) {
    uint64_t len = e->out->n - at - sizeof len;
    memcpy(e->out->v + at, &len, sizeof len);
}

void kdc_unit_encode(const kdc_program_t *unit, kdc_buf_t *out) {
    enc_t e = {.out = out};
    kdc_strmap_init(&e.str_ids);
    kdc_strmap_init(&e.expr_ids);
    kdc_strmap_init(&e.stmt_ids);
    size_t nfuncs = kdc_program_nfuncs(unit), nglobals = kdc_program_nglobal_inits(unit);
    size_t ntus = kdc_program_ntus(unit);

    /* the strings of everything, first */
    for (size_t i = 0; i < nfuncs; i++) {
        const kdc_func_t *f = kdc_program_func(unit, i);
        new_section(&e);
        number_stmt(&e, f->body);
        for (unsigned k = 0; k < f->ncalls; k++)
            number_expr(&e, f->calls[k]);
        note_str(&e, f->usr);
        note_str(&e, f->name);
        note_str(&e, f->class_usr);
        note_loc(&e, &f->loc);
        for (unsigned k = 0; k < f->nparams; k++) {
            note_str(&e, f->param_usrs[k]);
            note_str(&e, f->param_names[k]);
            note_str(&e, f->param_types[k]);
        }
    }
    for (size_t i = 0; i < nglobals; i++) {
        const kdc_global_init_t *g = kdc_program_global_init(unit, i);
        new_section(&e);
        number_expr(&e, g->init);
        note_str(&e, g->usr);
    }
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *t = kdc_program_tu(unit, i);
        note_str(&e, t->file);
        note_str(&e, t->first_error);
        note_str(&e, t->too_deep);
    }
    size_t nomitted = kdc_program_nomitted(unit);
    for (size_t i = 0; i < nomitted; i++) {
        note_str(&e, kdc_program_omitted(unit, i)->usr);
        note_str(&e, kdc_program_omitted(unit, i)->file);
    }
    size_t ncontracts = kdc_program_ncontracts(unit);
    for (size_t i = 0; i < ncontracts; i++) {
        const char *name, *contract;
        kdc_program_contract(unit, i, &name, &contract);
        note_str(&e, name);
        note_str(&e, contract);
    }

    kdc_buf_put(out, UNIT_MAGIC, 4);
    put_u32(&e, UNIT_FORMAT);
    put_u32(&e, (uint32_t)e.strs.n);
    for (size_t i = 0; i < e.strs.n; i++) {
        size_t len = strlen(e.strs.v[i]);
        put_u32(&e, (uint32_t)len);
        kdc_buf_put(out, e.strs.v[i], len);
    }
    /* each function: its header, then its nodes (numbered within the function) */
    put_u32(&e, (uint32_t)nfuncs);
    for (size_t i = 0; i < nfuncs; i++) {
        const kdc_func_t *f = kdc_program_func(unit, i);
        put_str(&e, f->usr);
        put_loc(&e, &f->loc);
        size_t at = begin_length(&e);
        put_str(&e, f->name);
        put_str(&e, f->class_usr);
        put_u8(&e, f->is_static);
        put_u32(&e, f->nparams);
        for (unsigned k = 0; k < f->nparams; k++) {
            put_str(&e, f->param_usrs[k]);
            put_str(&e, f->param_names[k]);
            put_str(&e, f->param_types[k]);
        }
        new_section(&e);
        number_stmt(&e, f->body);
        for (unsigned k = 0; k < f->ncalls; k++)
            number_expr(&e, f->calls[k]);
        put_exprs_and_stmts(&e);
        put_stmt(&e, f->body);
        put_u32(&e, f->ncalls);
        for (unsigned k = 0; k < f->ncalls; k++)
            put_expr(&e, f->calls[k]);
        end_length(&e, at);
    }
    put_u32(&e, (uint32_t)nglobals);
    for (size_t i = 0; i < nglobals; i++) {
        const kdc_global_init_t *g = kdc_program_global_init(unit, i);
        put_str(&e, g->usr);
        new_section(&e);
        number_expr(&e, g->init);
        put_exprs_and_stmts(&e);
        put_expr(&e, g->init);
    }
    put_u32(&e, (uint32_t)ntus);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *t = kdc_program_tu(unit, i);
        put_str(&e, t->file);
        put_u8(&e, t->incomplete);
        put_u32(&e, t->nerrors);
        put_str(&e, t->first_error);
        put_str(&e, t->too_deep);
    }
    /* the definitions left out: converted for an earlier unit (kdc_parser_omit_seen) */
    put_u32(&e, (uint32_t)nomitted);
    for (size_t i = 0; i < nomitted; i++) {
        const kdc_omitted_t *o = kdc_program_omitted(unit, i);
        put_str(&e, o->usr);
        put_str(&e, o->file);
        put_u32(&e, o->line);
    }
    /* what the callees' declarations say they mean (KDC_CONTRACT) */
    put_u32(&e, (uint32_t)ncontracts);
    for (size_t i = 0; i < ncontracts; i++) {
        const char *name, *contract;
        kdc_program_contract(unit, i, &name, &contract);
        put_str(&e, name);
        put_str(&e, contract);
    }
    kdc_buf_put(out, UNIT_MAGIC, 4); /* end marker: a truncated unit is never complete */
    kdc_strmap_free(&e.str_ids);
    kdc_strmap_free(&e.expr_ids);
    kdc_strmap_free(&e.stmt_ids);
    free(e.strs.v);
    free(e.exprs.v);
    free(e.stmts.v);
}

/* ---------- decoding ---------- */

typedef struct dec {
    kdc_program_t *p;
    const unsigned char *at, *end;
    const char *bad; /* first problem, or NULL */
    const char **strs;
    uint32_t nstrs;
    kdc_expr_t **exprs;
    uint32_t nexprs;
    kdc_stmt_t **stmts;
    uint32_t nstmts;
} dec_t;

static int take(dec_t *d, void *out, size_t n, const char *what) {
    if (d->bad)
        return -1;
    if ((size_t)(d->end - d->at) < n) {
        d->bad = what;
        return -1;
    }
    memcpy(out, d->at, n);
    d->at += n;
    return 0;
}

static unsigned get_u8(dec_t *d, unsigned limit, const char *what) {
    uint8_t v = 0;
    if (take(d, &v, 1, "truncated") == 0 && v > limit)
        d->bad = what;
    return d->bad ? 0 : v;
}

static uint32_t get_u32(dec_t *d) {
    uint32_t v = 0;
    take(d, &v, sizeof v, "truncated");
    return d->bad ? 0 : v;
}

static int32_t get_i32(dec_t *d) {
    int32_t v = 0;
    take(d, &v, sizeof v, "truncated");
    return d->bad ? 0 : v;
}

static int64_t get_i64(dec_t *d) {
    int64_t v = 0;
    take(d, &v, sizeof v, "truncated");
    return d->bad ? 0 : v;
}

/* A count of items of at least `min_size` bytes each that must fit in the rest. */
static uint32_t get_count(dec_t *d, size_t min_size) {
    uint32_t n = get_u32(d);
    if (!d->bad && (size_t)n > (size_t)(d->end - d->at) / (min_size ? min_size : 1))
        d->bad = "a count larger than the data";
    return d->bad ? 0 : n;
}

static const char *get_str(dec_t *d) {
    uint32_t i = get_u32(d);
    if (!d->bad && i > d->nstrs)
        d->bad = "a string index out of range";
    return d->bad || !i ? NULL : d->strs[i - 1];
}

/* References point backwards only: to a node read before this one. */
static kdc_expr_t *get_expr(dec_t *d, uint32_t before) {
    uint32_t i = get_u32(d);
    if (!d->bad && (i > before || i > d->nexprs))
        d->bad = "an expression reference out of order";
    return d->bad || !i ? NULL : d->exprs[i - 1];
}

static kdc_stmt_t *get_stmt(dec_t *d, uint32_t before) {
    uint32_t i = get_u32(d);
    if (!d->bad && (i > before || i > d->nstmts))
        d->bad = "a statement reference out of order";
    return d->bad || !i ? NULL : d->stmts[i - 1];
}

static void get_loc(dec_t *d, kdc_loc_t *l) {
    l->file = get_str(d);
    l->line = get_u32(d);
    l->col = get_u32(d);
    l->end_line = get_u32(d);
    l->end_col = get_u32(d);
}

static void decode_exprs(dec_t *d) {
    d->nexprs = get_count(d, 64);
    d->exprs = calloc(d->nexprs ? d->nexprs : 1, sizeof *d->exprs);
    if (!d->exprs)
        kdc_oom();
    for (uint32_t i = 0; i < d->nexprs && !d->bad; i++) {
        kdc_expr_t *x = kdc_alloc(d->p, sizeof *x);
        x->kind = get_u8(d, KDC_E_INIT, "an unknown expression kind");
        x->op = get_u8(d, KDC_OP_SHR, "an unknown operator");
        x->ref = get_u8(d, KDC_REF_ENUMERATOR, "an unknown reference kind");
        unsigned flags = get_u8(d, 127, "unknown expression flags");
        x->has_ival = flags & 1;
        x->is_method = flags >> 1 & 1;
        x->is_ctor = flags >> 2 & 1;
        x->arrow = flags >> 3 & 1;
        x->callee_system = flags >> 4 & 1;
        x->callee_noreturn = flags >> 6 & 1;
        x->param_index = get_i32(d);
        x->ival = get_i64(d);
        x->name = get_str(d);
        x->usr = get_str(d);
        x->str = get_str(d);
        x->type = get_str(d);
        x->recv = get_expr(d, i);
        x->callee_expr = get_expr(d, i);
        x->nkids = get_count(d, 4);
        if (x->nkids && !d->bad) {
            x->kids = kdc_alloc(d->p, x->nkids * sizeof *x->kids);
            for (unsigned k = 0; k < x->nkids; k++)
                x->kids[k] = get_expr(d, i);
        }
        if (flags & 32 && x->nkids && !d->bad) {
            x->fields = kdc_alloc(d->p, x->nkids * sizeof *x->fields);
            for (unsigned k = 0; k < x->nkids; k++)
                x->fields[k] = get_str(d);
        }
        x->call_id = get_i32(d);
        get_loc(d, &x->loc);
        d->exprs[i] = x;
    }
}

static void decode_stmts(dec_t *d) {
    d->nstmts = get_count(d, 40);
    d->stmts = calloc(d->nstmts ? d->nstmts : 1, sizeof *d->stmts);
    if (!d->stmts)
        kdc_oom();
    for (uint32_t i = 0; i < d->nstmts && !d->bad; i++) {
        kdc_stmt_t *s = kdc_alloc(d->p, sizeof *s);
        s->kind = get_u8(d, KDC_S_NULL, "an unknown statement kind");
        s->unknown_cond = get_u8(d, 1, "a bad statement flag");
        get_loc(d, &s->loc);
        s->expr = get_expr(d, d->nexprs);
        s->init = get_stmt(d, i);
        s->inc = get_expr(d, d->nexprs);
        s->body = get_stmt(d, i);
        s->els = get_stmt(d, i);
        s->nkids = get_count(d, 4);
        if (s->nkids && !d->bad) {
            s->kids = kdc_alloc(d->p, s->nkids * sizeof *s->kids);
            for (unsigned k = 0; k < s->nkids; k++)
                s->kids[k] = get_stmt(d, i);
        }
        s->label = get_str(d);
        d->stmts[i] = s;
    }
}

static uint64_t get_u64(dec_t *d) {
    uint64_t v = 0;
    take(d, &v, sizeof v, "truncated");
    return d->bad ? 0 : v;
}

/* One section's nodes: its own numbering. */
static void decode_nodes(dec_t *d) {
    free(d->exprs);
    free(d->stmts);
    d->exprs = NULL;
    d->stmts = NULL;
    d->nexprs = d->nstmts = 0;
    decode_exprs(d);
    decode_stmts(d);
}

/* Would kdc_program_add_func drop this definition (seen through another unit)? */
static int already_defined(const kdc_program_t *p, const char *usr, const kdc_loc_t *loc) {
    for (const kdc_func_t *g = kdc_program_find_func(p, usr); g; g = g->next_def)
        if (g->loc.file == loc->file && g->loc.line == loc->line)
            return 1;
    return 0;
}

int kdc_unit_merge(kdc_program_t *p, const void *data, size_t len, char **err) {
    dec_t d = {.p = p, .at = data, .end = (const unsigned char *)data + len};
    char magic[4];
    KDC_VEC(kdc_func_t *) funcs = {0};
    kdc_global_init_t *globals = NULL;
    kdc_tu_info_t tu = {0};
    uint32_t nfuncs = 0, nglobals = 0;
    if (take(&d, magic, 4, "truncated") == 0 && memcmp(magic, UNIT_MAGIC, 4))
        d.bad = "not a kdc-lint unit model";
    if (!d.bad && get_u32(&d) != UNIT_FORMAT && !d.bad)
        d.bad = "a model of another format version";

    d.nstrs = get_count(&d, 4);
    d.strs = calloc(d.nstrs ? d.nstrs : 1, sizeof *d.strs);
    if (!d.strs)
        kdc_oom();
    for (uint32_t i = 0; i < d.nstrs && !d.bad; i++) {
        uint32_t n = get_count(&d, 1);
        if (!d.bad && memchr(d.at, 0, n))
            d.bad = "a string with a NUL byte";
        if (!d.bad) {
            d.strs[i] = kdc_intern_n(p, (const char *)d.at, n);
            d.at += n;
        }
    }

    nfuncs = get_count(&d, 32);
    for (uint32_t i = 0; i < nfuncs && !d.bad; i++) {
        const char *usr = get_str(&d);
        kdc_loc_t loc;
        get_loc(&d, &loc);
        uint64_t size = get_u64(&d);
        if (!d.bad && size > (uint64_t)(d.end - d.at))
            d.bad = "a function longer than the data";
        if (!d.bad && !usr)
            d.bad = "a function without a USR";
        if (d.bad)
            break;
        const unsigned char *section_end = d.at + size;
        if (already_defined(p, usr, &loc)) { /* a header's function, kept from another unit */
            d.at = section_end;
            continue;
        }
        kdc_func_t *f = kdc_alloc(p, sizeof *f);
        f->usr = usr;
        f->loc = loc;
        f->name = get_str(&d);
        f->class_usr = get_str(&d);
        f->is_static = get_u8(&d, 1, "a bad function flag");
        f->nparams = get_count(&d, 12);
        if (f->nparams && !d.bad) {
            f->param_usrs = kdc_alloc(p, f->nparams * sizeof *f->param_usrs);
            f->param_names = kdc_alloc(p, f->nparams * sizeof *f->param_names);
            f->param_types = kdc_alloc(p, f->nparams * sizeof *f->param_types);
            for (unsigned k = 0; k < f->nparams; k++) {
                f->param_usrs[k] = get_str(&d);
                f->param_names[k] = get_str(&d);
                f->param_types[k] = get_str(&d);
            }
        }
        decode_nodes(&d);
        f->body = get_stmt(&d, d.nstmts);
        f->ncalls = get_count(&d, 4);
        if (f->ncalls && !d.bad) {
            f->calls = kdc_alloc(p, f->ncalls * sizeof *f->calls);
            for (unsigned k = 0; k < f->ncalls; k++)
                if (!(f->calls[k] = get_expr(&d, d.nexprs)) && !d.bad)
                    d.bad = "a function call list with a hole";
        }
        if (!d.bad && d.at != section_end)
            d.bad = "a function of another length than announced";
        KDC_VEC_PUSH(funcs, f);
    }
    nglobals = get_count(&d, 12);
    globals = calloc(nglobals ? nglobals : 1, sizeof *globals);
    if (!globals)
        kdc_oom();
    for (uint32_t i = 0; i < nglobals && !d.bad; i++) {
        globals[i].usr = get_str(&d);
        decode_nodes(&d);
        globals[i].init = get_expr(&d, d.nexprs);
    }
    if (!d.bad && get_u32(&d) != 1 && !d.bad)
        d.bad = "not exactly one translation unit";
    tu.file = get_str(&d);
    tu.incomplete = get_u8(&d, 1, "a bad unit flag");
    tu.nerrors = get_u32(&d);
    tu.first_error = get_str(&d);
    tu.too_deep = get_str(&d);
    if (!d.bad && !tu.file)
        d.bad = "a unit without a file name";
    /* every definition left out must be in the program already (from an earlier unit) */
    uint32_t nomitted = get_count(&d, 12);
    const char *missing = NULL;
    for (uint32_t i = 0; i < nomitted && !d.bad; i++) {
        const char *usr = get_str(&d), *file = get_str(&d);
        uint32_t line = get_u32(&d);
        if (!d.bad && !usr)
            d.bad = "a definition left out without a USR";
        if (!d.bad && !missing && !kdc_program_has_def(p, usr, file, line))
            missing = usr;
    }
    uint32_t ncontracts = get_count(&d, 8);
    KDC_VEC(const char *) contracts = {0};
    for (uint32_t i = 0; i < ncontracts && !d.bad; i++) {
        const char *name = get_str(&d), *contract = get_str(&d);
        if (!d.bad && (!name || !contract))
            d.bad = "a contract without a name";
        KDC_VEC_PUSH(contracts, name);
        KDC_VEC_PUSH(contracts, contract);
    }
    if (take(&d, magic, 4, "truncated") == 0 && memcmp(magic, UNIT_MAGIC, 4))
        d.bad = "no end marker";
    if (!d.bad && d.at != d.end)
        d.bad = "bytes after the end marker";

    int rc = 0;
    if (d.bad) {
        *err = kdc_xasprintf("%s", d.bad);
        rc = -1;
    } else if (missing) {
        *err = kdc_xasprintf("it leaves out %s, defined by a unit merged before it, and no unit "
                             "merged so far defines it", missing);
        rc = KDC_UNIT_INCOMPLETE;
    } else {
        /* As kdc_parse_tu: the unit's index is the number of units before it. */
        int index = (int)kdc_program_ntus(p);
        for (size_t i = 0; i < funcs.n; i++) {
            funcs.v[i]->tu = index;
            kdc_program_add_func(p, funcs.v[i]);
        }
        for (uint32_t i = 0; i < nglobals; i++)
            kdc_program_add_global_init(p, globals[i].usr, globals[i].init);
        for (size_t i = 0; i + 1 < contracts.n; i += 2)
            kdc_program_add_contract(p, contracts.v[i], contracts.v[i + 1]);
        kdc_program_add_tu(p, &tu);
    }
    free(contracts.v);
    free(d.strs);
    free(d.exprs);
    free(d.stmts);
    free(funcs.v);
    free(globals);
    return rc;
}
