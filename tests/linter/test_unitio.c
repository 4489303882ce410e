/*
 * A translation unit's model as bytes (linter/model/unitio.c): what worker processes
 * send and the cache stores must give back, field by field, the model libclang
 * produced, and damaged bytes must be refused, never followed; a model that
 * leaves out what its process converted for an earlier unit merges only after
 * a unit that has it.
 *
 *   test_unitio        (KDC_FIXTURES_DIR from the environment)
 *
 * Every fixture file is parsed as its own unit (default flags), encoded and
 * merged into a fresh program; the two programs are compared node by node.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inputs.h"
#include "model.h"
#include "parse.h"
#include "unitio.h"
#include "util.h"

static struct {
    KDC_VEC(char *) files;
    kdc_parser_t *parser;
    kdc_strmap_t map; /* node of the parsed program → node of the decoded one */
    const char *where;
} g;

static int collect(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
    (void)st;
    (void)ftw;
    if (flag == FTW_F && kdc_source_language(path)) {
        char *copy = strdup(path);
        KDC_VEC_PUSH(g.files, copy);
    }
    return 0;
}

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int setup(void **state) {
    (void)state;
    const char *fixtures = getenv("KDC_FIXTURES_DIR");
    if (!fixtures || nftw(fixtures, collect, 16, FTW_PHYS) != 0 || !g.files.n) {
        fprintf(stderr, "test_unitio: KDC_FIXTURES_DIR must name the fixtures\n");
        return -1;
    }
    qsort(g.files.v, g.files.n, sizeof *g.files.v, cmp_str);
    g.parser = kdc_parser_new();
    return 0;
}

static int teardown(void **state) {
    (void)state;
    for (size_t i = 0; i < g.files.n; i++)
        free(g.files.v[i]);
    free(g.files.v);
    kdc_parser_free(g.parser);
    return 0;
}

static kdc_program_t *parse_one(const char *file) {
    int cxx = kdc_source_language(file) == 2;
    const char *argv[] = {cxx ? "-xc++" : "-xc", cxx ? "-std=gnu++17" : "-std=gnu11", "-isystem",
                          KDC_RDKAFKA_INCLUDE_DIR "/librdkafka"};
    kdc_program_t *p = kdc_program_new();
    char *err = NULL;
    if (kdc_parse_tu(g.parser, p, file, argv, 4, &err))
        fail_msg("%s: %s", file, err);
    return p;
}

#define SAME_STR(a, b, what)                                                                    \
    do {                                                                                        \
        const char *x_ = (a), *y_ = (b);                                                        \
        if ((x_ == NULL) != (y_ == NULL) || (x_ && strcmp(x_, y_)))                             \
            fail_msg("%s: %s: \"%s\" became \"%s\"", g.where, what, x_ ? x_ : "(null)",         \
                     y_ ? y_ : "(null)");                                                       \
    } while (0)
#define SAME_INT(a, b, what)                                                                    \
    do {                                                                                        \
        long long x_ = (long long)(a), y_ = (long long)(b);                                     \
        if (x_ != y_)                                                                           \
            fail_msg("%s: %s: %lld became %lld", g.where, what, x_, y_);                        \
    } while (0)

static void same_loc(const kdc_loc_t *a, const kdc_loc_t *b) {
    SAME_STR(a->file, b->file, "loc.file");
    SAME_INT(a->line, b->line, "loc.line");
    SAME_INT(a->col, b->col, "loc.col");
    SAME_INT(a->end_line, b->end_line, "loc.end_line");
    SAME_INT(a->end_col, b->end_col, "loc.end_col");
}

/* Nodes shared in the parsed model are shared in the decoded one, and only they. */
static int same_node(const void *a, const void *b) {
    if (!a || !b) {
        if (a != b)
            fail_msg("%s: a node became %s", g.where, a ? "NULL" : "non-NULL");
        return 0;
    }
    const void *seen = kdc_strmap_get(&g.map, (const char *)a);
    if (seen) {
        if (seen != b)
            fail_msg("%s: a shared node is no longer shared", g.where);
        return 0;
    }
    kdc_strmap_put(&g.map, (const char *)a, (void *)b);
    return 1;
}

static void same_expr(const kdc_expr_t *a, const kdc_expr_t *b) {
    if (!same_node(a, b))
        return;
    SAME_INT(a->kind, b->kind, "expr.kind");
    SAME_INT(a->op, b->op, "expr.op");
    SAME_INT(a->ref, b->ref, "expr.ref");
    SAME_INT(a->has_ival, b->has_ival, "expr.has_ival");
    SAME_INT(a->is_method, b->is_method, "expr.is_method");
    SAME_INT(a->is_ctor, b->is_ctor, "expr.is_ctor");
    SAME_INT(a->arrow, b->arrow, "expr.arrow");
    SAME_INT(a->callee_system, b->callee_system, "expr.callee_system");
    SAME_INT(a->callee_noreturn, b->callee_noreturn, "expr.callee_noreturn");
    SAME_INT(a->param_index, b->param_index, "expr.param_index");
    SAME_INT(a->ival, b->ival, "expr.ival");
    SAME_STR(a->name, b->name, "expr.name");
    SAME_STR(a->usr, b->usr, "expr.usr");
    SAME_STR(a->str, b->str, "expr.str");
    SAME_STR(a->type, b->type, "expr.type");
    SAME_INT(a->call_id, b->call_id, "expr.call_id");
    same_loc(&a->loc, &b->loc);
    same_expr(a->recv, b->recv);
    same_expr(a->callee_expr, b->callee_expr);
    SAME_INT(a->nkids, b->nkids, "expr.nkids");
    SAME_INT(a->fields != NULL, b->fields != NULL, "expr.fields");
    for (unsigned i = 0; i < a->nkids; i++) {
        same_expr(a->kids[i], b->kids[i]);
        if (a->fields)
            SAME_STR(a->fields[i], b->fields[i], "expr.fields[i]");
    }
}

static void same_stmt(const kdc_stmt_t *a, const kdc_stmt_t *b) {
    if (!same_node(a, b))
        return;
    SAME_INT(a->kind, b->kind, "stmt.kind");
    SAME_INT(a->unknown_cond, b->unknown_cond, "stmt.unknown_cond");
    SAME_STR(a->label, b->label, "stmt.label");
    same_loc(&a->loc, &b->loc);
    same_expr(a->expr, b->expr);
    same_expr(a->inc, b->inc);
    same_stmt(a->init, b->init);
    same_stmt(a->body, b->body);
    same_stmt(a->els, b->els);
    SAME_INT(a->nkids, b->nkids, "stmt.nkids");
    for (unsigned i = 0; i < a->nkids; i++)
        same_stmt(a->kids[i], b->kids[i]);
}

static void same_program(const kdc_program_t *a, const kdc_program_t *b) {
    SAME_INT(kdc_program_nfuncs(a), kdc_program_nfuncs(b), "functions");
    SAME_INT(kdc_program_nglobal_inits(a), kdc_program_nglobal_inits(b), "global initialisers");
    SAME_INT(kdc_program_ntus(a), kdc_program_ntus(b), "units");
    for (size_t i = 0; i < kdc_program_nfuncs(a); i++) {
        const kdc_func_t *f = kdc_program_func(a, i), *h = kdc_program_func(b, i);
        SAME_STR(f->usr, h->usr, "func.usr");
        SAME_STR(f->id, h->id, "func.id");
        SAME_STR(f->name, h->name, "func.name");
        SAME_STR(f->class_usr, h->class_usr, "func.class_usr");
        same_loc(&f->loc, &h->loc);
        SAME_INT(f->is_static, h->is_static, "func.is_static");
        SAME_INT(f->tu, h->tu, "func.tu");
        SAME_INT(f->index, h->index, "func.index");
        SAME_INT(f->nparams, h->nparams, "func.nparams");
        for (unsigned k = 0; k < f->nparams; k++) {
            SAME_STR(f->param_usrs[k], h->param_usrs[k], "func.param_usrs");
            SAME_STR(f->param_names[k], h->param_names[k], "func.param_names");
            SAME_STR(f->param_types[k], h->param_types[k], "func.param_types");
        }
        same_stmt(f->body, h->body);
        SAME_INT(f->ncalls, h->ncalls, "func.ncalls");
        for (unsigned k = 0; k < f->ncalls; k++) {
            /* calls point into the body: the same nodes, already mapped */
            same_expr(f->calls[k], h->calls[k]);
            if (kdc_strmap_get(&g.map, (const char *)f->calls[k]) != h->calls[k])
                fail_msg("%s: call %u of %s is not the body's node", g.where, k, f->name);
        }
    }
    for (size_t i = 0; i < kdc_program_nglobal_inits(a); i++) {
        const kdc_global_init_t *x = kdc_program_global_init(a, i);
        const kdc_global_init_t *y = kdc_program_global_init(b, i);
        SAME_STR(x->usr, y->usr, "global.usr");
        same_expr(x->init, y->init);
    }
    for (size_t i = 0; i < kdc_program_ntus(a); i++) {
        const kdc_tu_info_t *x = kdc_program_tu(a, i), *y = kdc_program_tu(b, i);
        SAME_STR(x->file, y->file, "tu.file");
        SAME_INT(x->incomplete, y->incomplete, "tu.incomplete");
        SAME_INT(x->nerrors, y->nerrors, "tu.nerrors");
        SAME_STR(x->first_error, y->first_error, "tu.first_error");
        SAME_STR(x->too_deep, y->too_deep, "tu.too_deep");
    }
}

static void every_fixture_unit_survives_encoding_field_by_field(void **state) {
    (void)state;
    size_t funcs = 0;
    for (size_t i = 0; i < g.files.n; i++) {
        g.where = g.files.v[i];
        kdc_program_t *parsed = parse_one(g.files.v[i]), *decoded = kdc_program_new();
        kdc_buf_t b = {0};
        kdc_unit_encode(parsed, &b);
        char *err = NULL;
        if (kdc_unit_merge(decoded, b.v, b.n, &err))
            fail_msg("%s: the encoded unit does not decode: %s", g.where, err);
        kdc_strmap_init(&g.map);
        same_program(parsed, decoded);
        kdc_strmap_free(&g.map);
        funcs += kdc_program_nfuncs(parsed);
        kdc_buf_free(&b);
        kdc_program_free(parsed);
        kdc_program_free(decoded);
    }
    assert_true(funcs > g.files.n); /* the comparison saw real models */
}

static void a_unit_merged_twice_keeps_one_copy_of_each_definition_as_parsing_twice_does(
    void **state) {
    (void)state;
    for (size_t i = 0; i < g.files.n; i += 7) {
        g.where = g.files.v[i];
        kdc_program_t *twice = kdc_program_new(), *merged = kdc_program_new();
        const char *argv[] = {"-xc", "-std=gnu11", "-isystem",
                              KDC_RDKAFKA_INCLUDE_DIR "/librdkafka"};
        if (kdc_source_language(g.files.v[i]) == 2) {
            argv[0] = "-xc++";
            argv[1] = "-std=gnu++17";
        }
        char *err = NULL;
        assert_int_equal(kdc_parse_tu(g.parser, twice, g.files.v[i], argv, 4, &err), 0);
        assert_int_equal(kdc_parse_tu(g.parser, twice, g.files.v[i], argv, 4, &err), 0);
        kdc_program_t *one = parse_one(g.files.v[i]);
        kdc_buf_t b = {0};
        kdc_unit_encode(one, &b);
        assert_int_equal(kdc_unit_merge(merged, b.v, b.n, &err), 0);
        assert_int_equal(kdc_unit_merge(merged, b.v, b.n, &err), 0);
        SAME_INT(kdc_program_nfuncs(twice), kdc_program_nfuncs(merged), "functions");
        SAME_INT(kdc_program_ntus(merged), 2, "units");
        SAME_INT(kdc_program_nglobal_inits(twice), kdc_program_nglobal_inits(merged), "globals");
        for (size_t k = 0; k < kdc_program_nfuncs(merged); k++)
            SAME_INT(kdc_program_func(twice, k)->tu, kdc_program_func(merged, k)->tu, "func.tu");
        kdc_buf_free(&b);
        kdc_program_free(one);
        kdc_program_free(twice);
        kdc_program_free(merged);
    }
}

static void truncated_or_damaged_bytes_are_refused_with_a_message(void **state) {
    (void)state;
    /* the largest fixture unit */
    kdc_buf_t best = {0};
    for (size_t i = 0; i < g.files.n; i++) {
        kdc_program_t *p = parse_one(g.files.v[i]);
        kdc_buf_t b = {0};
        kdc_unit_encode(p, &b);
        if (b.n > best.n) {
            kdc_buf_free(&best);
            best = b;
        } else {
            kdc_buf_free(&b);
        }
        kdc_program_free(p);
    }
    assert_true(best.n > 1000);
    size_t refused = 0, flips = 0;
    for (size_t len = 0; len < best.n; len += 1 + len / 64) {
        kdc_program_t *p = kdc_program_new();
        char *err = NULL;
        if (kdc_unit_merge(p, best.v, len, &err) == 0)
            fail_msg("a unit cut to %zu of %zu bytes was accepted", len, best.n);
        assert_non_null(err);
        assert_true(*err);
        assert_int_equal(kdc_program_nfuncs(p), 0); /* nothing half-added */
        assert_int_equal(kdc_program_ntus(p), 0);
        free(err);
        kdc_program_free(p);
        refused++;
    }
    /* a flipped byte anywhere: refused, or decoded into a well-formed program */
    unsigned char *copy = malloc(best.n);
    for (size_t at = 0; at < best.n; at += 1 + at / 32) {
        memcpy(copy, best.v, best.n);
        copy[at] ^= 0xA5;
        kdc_program_t *p = kdc_program_new();
        char *err = NULL;
        if (kdc_unit_merge(p, copy, best.n, &err) == 0) {
            assert_int_equal(kdc_program_ntus(p), 1);
        } else {
            assert_non_null(err);
            assert_int_equal(kdc_program_ntus(p), 0);
            free(err);
        }
        kdc_program_free(p);
        flips++;
    }
    free(copy);
    assert_true(refused > 100 && flips > 100);
    kdc_buf_free(&best);
}

/* How many functions of `whole` the parse `omitting` lists as left out, or left out with the
 * function around them (a C++ lambda is converted with its enclosing function's body: an
 * enclosing function left out takes its lambdas with it; their USR starts with its USR). Every
 * entry of the list must name a function of `whole`. */
static size_t left_out_or_inside(const kdc_program_t *whole, const kdc_program_t *omitting) {
    size_t n = 0;
    for (size_t i = 0; i < kdc_program_nomitted(omitting); i++) {
        const kdc_omitted_t *o = kdc_program_omitted(omitting, i);
        int found = 0;
        for (size_t k = 0; k < kdc_program_nfuncs(whole) && !found; k++)
            found = !strcmp(kdc_program_func(whole, k)->usr, o->usr);
        if (!found)
            fail_msg("%s: left out %s, which the whole parse does not define", g.where, o->usr);
    }
    for (size_t k = 0; k < kdc_program_nfuncs(whole); k++) {
        const char *usr = kdc_program_func(whole, k)->usr;
        const char *lambda = strstr(usr, "@lambda:");
        for (size_t i = 0; i < kdc_program_nomitted(omitting); i++) {
            const char *o = kdc_program_omitted(omitting, i)->usr;
            size_t len = strlen(o);
            if (!strcmp(usr, o) || (lambda && !strncmp(usr, o, len) && len <= (size_t)(lambda - usr))) {
                n++;
                break;
            }
        }
    }
    return n;
}

/* A parser that leaves out what it converted for an earlier unit: the second parse of a
 * file keeps nothing but the list of what it left out; that model merges only after one
 * that defines it all, and then gives the program two whole parses give. A unit with
 * compile errors is converted whole every time. */
static void definitions_converted_for_an_earlier_unit_are_left_out_and_checked_at_merge(
    void **state) {
    (void)state;
    size_t checked = 0;
    for (size_t i = 0; i < g.files.n; i += 5) {
        g.where = g.files.v[i];
        kdc_parser_t *ps = kdc_parser_new(); /* what it converted: this file only */
        kdc_parser_omit_seen(ps, 1);
        int cxx = kdc_source_language(g.files.v[i]) == 2;
        const char *argv[] = {cxx ? "-xc++" : "-xc", cxx ? "-std=gnu++17" : "-std=gnu11",
                              "-isystem", KDC_RDKAFKA_INCLUDE_DIR "/librdkafka"};
        kdc_program_t *first = kdc_program_new(), *second = kdc_program_new();
        char *err = NULL;
        assert_int_equal(kdc_parse_tu(ps, first, g.files.v[i], argv, 4, &err), 0);
        assert_int_equal(kdc_parse_tu(ps, second, g.files.v[i], argv, 4, &err), 0);
        if (kdc_program_tu(first, 0)->nerrors || kdc_program_tu(first, 0)->too_deep) {
            kdc_program_free(first);
            kdc_program_free(second);
            kdc_parser_free(ps);
            continue;
        }
        SAME_INT(kdc_program_nomitted(first), 0, "left out by a first parse");
        SAME_INT(kdc_program_nfuncs(second), 0, "converted again");
        SAME_INT(left_out_or_inside(first, second), kdc_program_nfuncs(first), "left out");
        kdc_buf_t a = {0}, b = {0};
        kdc_unit_encode(first, &a);
        kdc_unit_encode(second, &b);
        /* alone it is incomplete, and the program is left as it was */
        kdc_program_t *alone = kdc_program_new();
        if (kdc_program_nfuncs(first)) {
            assert_int_equal(kdc_unit_merge(alone, b.v, b.n, &err), KDC_UNIT_INCOMPLETE);
            assert_non_null(strstr(err, "leaves out"));
            free(err);
            err = NULL;
            SAME_INT(kdc_program_ntus(alone), 0, "units after a refused merge");
            SAME_INT(kdc_program_nfuncs(alone), 0, "functions after a refused merge");
        }
        /* after the unit that has them: as two whole parses */
        kdc_program_t *merged = kdc_program_new(), *whole = kdc_program_new();
        assert_int_equal(kdc_unit_merge(merged, a.v, a.n, &err), 0);
        assert_int_equal(kdc_unit_merge(merged, b.v, b.n, &err), 0);
        assert_int_equal(kdc_parse_tu(g.parser, whole, g.files.v[i], argv, 4, &err), 0);
        assert_int_equal(kdc_parse_tu(g.parser, whole, g.files.v[i], argv, 4, &err), 0);
        SAME_INT(kdc_program_nfuncs(merged), kdc_program_nfuncs(whole), "functions");
        SAME_INT(kdc_program_ntus(merged), 2, "units");
        for (size_t k = 0; k < kdc_program_nfuncs(merged); k++) {
            SAME_STR(kdc_program_func(merged, k)->id, kdc_program_func(whole, k)->id, "func.id");
            SAME_INT(kdc_program_func(merged, k)->tu, kdc_program_func(whole, k)->tu, "func.tu");
        }
        checked += kdc_program_nfuncs(first) > 0;
        kdc_buf_free(&a);
        kdc_buf_free(&b);
        kdc_program_free(alone);
        kdc_program_free(merged);
        kdc_program_free(whole);
        kdc_program_free(first);
        kdc_program_free(second);
        kdc_parser_free(ps);
    }
    assert_true(checked > 10);
    kdc_parser_t *ps = kdc_parser_new();
    kdc_parser_omit_seen(ps, 1);

    /* compile errors: converted whole on every parse */
    char path[] = "/tmp/kdc-unitio-XXXXXX.c";
    int fd = mkstemps(path, 2);
    assert_true(fd >= 0);
    static const char broken[] = "#include \"missing.h\"\n"
                                 "int helper(int x) { return x + 1; }\n";
    assert_int_equal(write(fd, broken, sizeof broken - 1), (ssize_t)(sizeof broken - 1));
    close(fd);
    const char *argv[] = {"-xc", "-std=gnu11"};
    for (int round = 0; round < 2; round++) {
        kdc_program_t *p = kdc_program_new();
        char *err = NULL;
        assert_int_equal(kdc_parse_tu(ps, p, path, argv, 2, &err), 0);
        assert_true(kdc_program_tu(p, 0)->nerrors > 0);
        SAME_INT(kdc_program_nfuncs(p), 1, "functions of a unit with compile errors");
        SAME_INT(kdc_program_nomitted(p), 0, "left out of a unit with compile errors");
        kdc_program_free(p);
    }
    unlink(path);
    kdc_parser_free(ps);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_fixture_unit_survives_encoding_field_by_field),
        cmocka_unit_test(
            a_unit_merged_twice_keeps_one_copy_of_each_definition_as_parsing_twice_does),
        cmocka_unit_test(truncated_or_damaged_bytes_are_refused_with_a_message),
        cmocka_unit_test(
            definitions_converted_for_an_earlier_unit_are_left_out_and_checked_at_merge),
    };
    return cmocka_run_group_tests_name("kdc-lint unit models as bytes", tests, setup, teardown);
}
