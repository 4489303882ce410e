#define _GNU_SOURCE
/*
 * libclang → the owned per-function model (model.h).
 *
 * libclang has no CFG and (before LLVM 17) no operator-kind API, so operators,
 * `else` branches and `for` header parts are recovered from tokens at spelling
 * locations. Where that is not possible (inside macro bodies) the operator is
 * KDC_OP_UNKNOWN and the analyses stay conservative.
 */
#include "parse.h"
#include "openguard.h"
#include "util.h"

#include <clang-c/Index.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Precompiled preambles a process keeps loaded (kdc_parse_tu_contents), the least recently
 * used one given up for another: units come in input order, where a tree's groups interleave
 * (collectd: 129 uses of 15 preambles, 35 loads when the oldest loaded went first, 28 now).
 * Each one loaded costs the memory of its declarations, read as its units visit them
 * (8 instead of 4: 15 to 24 MiB more per worker on collectd and librdkafka). */
#define KDC_PREAMBLES_LOADED 4

struct kdc_parser {
    CXIndex index;
    CXIndex index_local; /* visits a unit's own declarations only, not its preamble's */
    struct loaded_preamble {
        char *pch;
        CXTranslationUnit tu;
        /* its top-level cursors outside system headers, in order (top_visit leaves the
         * others), once its units have asked (own_tops) */
        KDC_VEC(CXCursor) tops;
        int tops_known;
        unsigned long used; /* when it was last used (uses), 0: never */
    } loaded[KDC_PREAMBLES_LOADED];
    unsigned long uses;
    int omit;            /* kdc_parser_omit_seen */
    kdc_strset_t keys;   /* "USR\nfile\nline" of function definitions met */
    kdc_strmap_t seen;   /* key → SEEN_WHOLE or SEEN_PARTIAL once converted */
};

#define SEEN_WHOLE ((void *)1)
#define SEEN_PARTIAL ((void *)2) /* reached the nesting limit */

typedef struct pctx {
    kdc_program_t *p;
    kdc_parser_t *ps;
    CXTranslationUnit tu;
    int tu_index;
    kdc_strmap_t file_names; /* CXFile (as key) → interned real path */
    kdc_func_t *func;        /* function being built */
    KDC_VEC(kdc_expr_t *) calls;
    int is_cxx;
    unsigned depth;          /* expressions and statements being converted */
    const char *too_deep;    /* where the model first stopped at KDC_MAX_NESTING */
    unsigned ndeep;          /* how many times it stopped there */
    int omit;                /* leave out definitions converted for an earlier unit */
    kdc_strmap_t noreturn;   /* callee USR → (void *)1 never returns, (void *)2 returns */
    kdc_strmap_t contracts; /* callee USR → its KDC_CONTRACT meaning (interned), or &no_contract */
    struct spelled_memo *spelled; /* spelled_op's readings in this unit (open addressing) */
    size_t nspelled, spelled_cap;
} pctx_t;

static const char no_contract[] = "";

/* Deepest expression/statement nesting the model keeps. Every later pass
 * (CFG, handle tracking, facts) recurses over the model, so this bounds their
 * stack use; a deeper subtree becomes an unknown value or an empty statement
 * and the translation unit is reported as analysed partially. Far deeper than
 * hand-written code; generated code (long else-if chains, huge constant
 * expressions) can reach it. */
#define KDC_MAX_NESTING 10000

kdc_parser_t *kdc_parser_new(void) {
    kdc_parser_t *ps = calloc(1, sizeof *ps);
    if (!ps)
        kdc_oom();
    ps->index = clang_createIndex(0, 0);
    kdc_strset_init(&ps->keys);
    kdc_strmap_init(&ps->seen);
    return ps;
}

void kdc_parser_free(kdc_parser_t *ps) {
    if (!ps)
        return;
    for (unsigned i = 0; i < KDC_PREAMBLES_LOADED; i++)
        if (ps->loaded[i].tu) {
            clang_disposeTranslationUnit(ps->loaded[i].tu);
            free(ps->loaded[i].pch);
            free(ps->loaded[i].tops.v);
        }
    if (ps->index_local)
        clang_disposeIndex(ps->index_local);
    clang_disposeIndex(ps->index);
    kdc_strset_free(&ps->keys);
    kdc_strmap_free(&ps->seen);
    free(ps);
}

void kdc_parser_omit_seen(kdc_parser_t *ps, int on) { ps->omit = on; }

/* The key of a definition in ps->keys; *len its length. */
static char *seen_key(const kdc_func_t *f, size_t *len) {
    char *k = kdc_xasprintf("%s\n%s\n%u", f->usr, f->loc.file ? f->loc.file : "", f->loc.line);
    *len = strlen(k);
    return k;
}

/* ---------- strings and locations ---------- */

static const char *intern_cx(pctx_t *c, CXString s) {
    const char *cs = clang_getCString(s);
    const char *r = kdc_intern(c->p, cs ? cs : "");
    clang_disposeString(s);
    return r;
}

static const char *file_name(pctx_t *c, CXFile f) {
    if (!f)
        return NULL;
    const char *key = (const char *)f;
    const char *name = kdc_strmap_get(&c->file_names, key);
    if (name)
        return name;
    CXString s = clang_getFileName(f);
    const char *raw = clang_getCString(s);
    char *real = raw ? realpath(raw, NULL) : NULL;
    name = kdc_intern(c->p, real ? real : (raw ? raw : "<unknown>"));
    free(real);
    clang_disposeString(s);
    kdc_strmap_put(&c->file_names, key, (void *)name);
    return name;
}

/* Identity of a struct field: its USR plus where it is declared, so that two
 * programs analysed in one run with same-named structs do not share fields,
 * while a struct from a shared header is one struct everywhere. */
static const char *field_key(pctx_t *c, CXCursor field) {
    CXString u = clang_getCursorUSR(field);
    CXFile f = NULL;
    unsigned line = 0, col, off;
    clang_getSpellingLocation(clang_getCursorLocation(field), &f, &line, &col, &off);
    const char *fname = file_name(c, f);
    char buf[4096];
    snprintf(buf, sizeof buf, "%s@%s:%u", clang_getCString(u), fname ? fname : "", line);
    clang_disposeString(u);
    return kdc_intern(c->p, buf);
}

static kdc_loc_t loc_of(pctx_t *c, CXCursor cur) {
    kdc_loc_t l = {0};
    CXSourceRange r = clang_getCursorExtent(cur);
    CXFile f = NULL;
    unsigned line = 0, col = 0, off = 0;
    clang_getExpansionLocation(clang_getRangeStart(r), &f, &line, &col, &off);
    l.file = file_name(c, f);
    l.line = line;
    l.col = col;
    CXFile f2 = NULL;
    clang_getExpansionLocation(clang_getRangeEnd(r), &f2, &line, &col, &off);
    if (f2 == f && line >= l.line) {
        l.end_line = line;
        l.end_col = col;
    } else {
        l.end_line = l.line;
        l.end_col = l.col;
    }
    return l;
}

typedef struct spell {
    CXFile file;
    unsigned off;
} spell_t;

static spell_t spelling(CXSourceLocation loc) {
    spell_t s = {0};
    unsigned line, col;
    clang_getSpellingLocation(loc, &s.file, &line, &col, &s.off);
    return s;
}

/* Tokens between two spelling positions of one file; returns count (caller disposes). */
static unsigned tokens_between(pctx_t *c, spell_t a, spell_t b, CXToken **toks) {
    *toks = NULL;
    if (!a.file || a.file != b.file || a.off > b.off)
        return 0;
    CXSourceRange r = clang_getRange(clang_getLocationForOffset(c->tu, a.file, a.off),
                                     clang_getLocationForOffset(c->tu, b.file, b.off));
    unsigned n = 0;
    clang_tokenize(c->tu, r, toks, &n);
    return n;
}

static int tok_is(pctx_t *c, CXToken t, const char *s) {
    CXString sp = clang_getTokenSpelling(c->tu, t);
    int r = strcmp(clang_getCString(sp), s) == 0;
    clang_disposeString(sp);
    return r;
}

static unsigned tok_off(CXTranslationUnit tu, CXToken t) {
    return spelling(clang_getTokenLocation(tu, t)).off;
}

/* ---------- cursor helpers ---------- */

typedef KDC_VEC(CXCursor) cursor_vec_t;

static enum CXChildVisitResult collect_kids(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    cursor_vec_t *v = d;
    KDC_VEC_PUSH(*v, cur);
    return CXChildVisit_Continue;
}

static cursor_vec_t children(CXCursor cur) {
    cursor_vec_t v = {0};
    clang_visitChildren(cur, collect_kids, &v);
    return v;
}

static int is_expr_kind(enum CXCursorKind k) {
    return clang_isExpression(k) || k == CXCursor_StmtExpr;
}

static int is_func_kind(enum CXCursorKind k) {
    return k == CXCursor_FunctionDecl || k == CXCursor_CXXMethod || k == CXCursor_Constructor ||
           k == CXCursor_Destructor || k == CXCursor_ConversionFunction ||
           k == CXCursor_FunctionTemplate;
}

/* "ns::Class::method" for C++, plain name for C. */
static const char *qualified_name(pctx_t *c, CXCursor cur) {
    const char *parts[32];
    int np = 0;
    parts[np++] = intern_cx(c, clang_getCursorSpelling(cur));
    for (CXCursor k = clang_getCursorSemanticParent(cur); np < 32;
         k = clang_getCursorSemanticParent(k)) {
        if (clang_Cursor_isNull(k))
            break;
        enum CXCursorKind kind = clang_getCursorKind(k);
        if (kind == CXCursor_Namespace || kind == CXCursor_ClassDecl ||
            kind == CXCursor_StructDecl || kind == CXCursor_UnionDecl ||
            kind == CXCursor_ClassTemplate ||
            kind == CXCursor_ClassTemplatePartialSpecialization)
            parts[np++] = intern_cx(c, clang_getCursorSpelling(k));
        else if (kind != CXCursor_LinkageSpec && kind != CXCursor_UnexposedDecl)
            break;
    }
    if (np == 1)
        return parts[0];
    char buf[1024];
    size_t len = 0;
    buf[0] = 0;
    for (int i = np - 1; i >= 0; i--) {
        int w = snprintf(buf + len, sizeof buf - len, "%s%s", parts[i], i ? "::" : "");
        if (w < 0 || (size_t)w >= sizeof buf - len)
            break;
        len += (size_t)w;
    }
    return kdc_intern(c->p, buf);
}

/* ---------- expressions ---------- */

static kdc_expr_t *conv_expr(pctx_t *c, CXCursor cur);
static kdc_stmt_t *conv_stmt(pctx_t *c, CXCursor cur);
static kdc_stmt_t *conv_child_stmt(pctx_t *c, CXCursor cur);
static void build_lambda(pctx_t *c, CXCursor lambda);

static kdc_expr_t *new_expr(pctx_t *c, kdc_expr_kind_t kind, CXCursor cur) {
    kdc_expr_t *e = kdc_alloc(c->p, sizeof *e);
    e->kind = kind;
    e->call_id = -1;
    e->param_index = -1;
    e->loc = loc_of(c, cur);
    return e;
}

static void set_kids(pctx_t *c, kdc_expr_t *e, kdc_expr_t **kids, unsigned n) {
    e->nkids = n;
    e->kids = n ? kdc_alloc(c->p, n * sizeof *kids) : NULL;
    for (unsigned i = 0; i < n; i++)
        e->kids[i] = kids[i];
}

static kdc_expr_t *other_with_kids(pctx_t *c, CXCursor cur) {
    kdc_expr_t *e = new_expr(c, KDC_E_OTHER, cur);
    cursor_vec_t kv = children(cur);
    kdc_expr_t **tmp = kv.n ? calloc(kv.n, sizeof *tmp) : NULL;
    unsigned n = 0;
    for (size_t i = 0; i < kv.n; i++)
        if (is_expr_kind(clang_getCursorKind(kv.v[i])))
            tmp[n++] = conv_expr(c, kv.v[i]);
    set_kids(c, e, tmp, n);
    free(tmp);
    free(kv.v);
    return e;
}

static const char *type_spelling(pctx_t *c, CXCursor cur) {
    return intern_cx(c, clang_getTypeSpelling(clang_getCursorType(cur)));
}

static kdc_op_t op_from(const char *s, int unary) {
    static const struct { const char *s; kdc_op_t u, b; } ops[] = {
        {"!", KDC_OP_NOT, KDC_OP_UNKNOWN},    {"~", KDC_OP_BITNOT, KDC_OP_UNKNOWN},
        {"-", KDC_OP_NEG, KDC_OP_SUB},        {"+", KDC_OP_PLUS, KDC_OP_ADD},
        {"*", KDC_OP_DEREF, KDC_OP_MUL},      {"&", KDC_OP_ADDR, KDC_OP_AND},
        {"++", KDC_OP_PREINC, KDC_OP_UNKNOWN}, {"--", KDC_OP_PREDEC, KDC_OP_UNKNOWN},
        {"=", KDC_OP_UNKNOWN, KDC_OP_ASSIGN}, {"==", KDC_OP_UNKNOWN, KDC_OP_EQ},
        {"!=", KDC_OP_UNKNOWN, KDC_OP_NE},    {"<", KDC_OP_UNKNOWN, KDC_OP_LT},
        {">", KDC_OP_UNKNOWN, KDC_OP_GT},     {"<=", KDC_OP_UNKNOWN, KDC_OP_LE},
        {">=", KDC_OP_UNKNOWN, KDC_OP_GE},    {"&&", KDC_OP_UNKNOWN, KDC_OP_LAND},
        {"||", KDC_OP_UNKNOWN, KDC_OP_LOR},   {",", KDC_OP_UNKNOWN, KDC_OP_COMMA},
        {"/", KDC_OP_UNKNOWN, KDC_OP_DIV},    {"%", KDC_OP_UNKNOWN, KDC_OP_MOD},
        {"|", KDC_OP_UNKNOWN, KDC_OP_OR},     {"^", KDC_OP_UNKNOWN, KDC_OP_XOR},
        {"<<", KDC_OP_UNKNOWN, KDC_OP_SHL},   {">>", KDC_OP_UNKNOWN, KDC_OP_SHR},
        {"not", KDC_OP_NOT, KDC_OP_UNKNOWN},  {"and", KDC_OP_UNKNOWN, KDC_OP_LAND},
        {"or", KDC_OP_UNKNOWN, KDC_OP_LOR},   {"not_eq", KDC_OP_UNKNOWN, KDC_OP_NE},
    };
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (!strcmp(ops[i].s, s))
            return unary ? ops[i].u : ops[i].b;
    size_t n = strlen(s);
    if (!unary && n >= 2 && s[n - 1] == '=' && strcmp(s, "==") && strcmp(s, "!=") &&
        strcmp(s, "<=") && strcmp(s, ">="))
        return KDC_OP_COMPOUND_ASSIGN;
    return KDC_OP_UNKNOWN;
}

/* Operator between the end of `lhs` and the start of `rhs`, from tokens. */
/* The first operator token in [a, b) of one file (parentheses skipped). */
static kdc_op_t operator_between(pctx_t *c, spell_t a, spell_t b, int unary) {
    CXToken *toks;
    unsigned n = tokens_between(c, a, b, &toks);
    kdc_op_t op = KDC_OP_UNKNOWN;
    for (unsigned i = 0; i < n && op == KDC_OP_UNKNOWN; i++) {
        CXTokenKind k = clang_getTokenKind(toks[i]);
        unsigned off = tok_off(c->tu, toks[i]);
        if ((k != CXToken_Punctuation && k != CXToken_Keyword) || off < a.off || off >= b.off)
            continue;
        CXString sp = clang_getTokenSpelling(c->tu, toks[i]);
        const char *s = clang_getCString(sp);
        if (strcmp(s, "(") && strcmp(s, ")")) {
            op = op_from(s, unary);
            if (op == KDC_OP_UNKNOWN)
                op = KDC_OP_NONE; /* a token, but no operator we know: stop here */
        }
        clang_disposeString(sp);
    }
    if (n)
        clang_disposeTokens(c->tu, toks, n);
    return op == KDC_OP_NONE ? KDC_OP_UNKNOWN : op;
}

/* Operator between the end of `lhs` and the start of `rhs`, from tokens. */
static kdc_op_t binary_op(pctx_t *c, CXCursor lhs, CXCursor rhs) {
    return operator_between(c, spelling(clang_getRangeEnd(clang_getCursorExtent(lhs))),
                            spelling(clang_getRangeStart(clang_getCursorExtent(rhs))), 0);
}

/* ---------- operators inside macro expansions ----------
 *
 * libclang 14's spelling locations are file locations: every token of a macro
 * body is placed at the invocation, so the tokens between two operands cannot
 * be read there. clang_tokenize, though, reads a range at its real spelling:
 * from an expression's own start, the macro body's text. There the operand
 * before the operator is skipped (a primary expression with its postfix parts,
 * after prefix operators) and the next token is the operator. */

typedef struct spelled {
    CXToken *v;
    unsigned n;
} spelled_t;

/* Where the token at `at` is spelled (*f, *off): 0 when no token is there. */
static int spelled_start(pctx_t *c, CXSourceLocation at, CXSourceLocation *from, CXFile *f,
                         unsigned *off) {
    CXToken *one = NULL;
    unsigned n = 0;
    clang_tokenize(c->tu, clang_getRange(at, at), &one, &n);
    if (!n)
        return 0;
    *from = clang_getTokenLocation(c->tu, one[0]);
    clang_disposeTokens(c->tu, one, n);
    *f = NULL;
    *off = 0;
    clang_getSpellingLocation(*from, f, NULL, NULL, off);
    return 1;
}

/* Is the location `want - off` bytes after from (a file location: f, off) the place want of
 * f? Then *at is it. A file location of libclang is clang's offset in the unit's source
 * space, and a file's offsets are consecutive there, from 0 to its size; past the size lies
 * another file (or none). The answer is checked (clang_getSpellingLocation), never assumed. */
static int offset_in_file(CXSourceLocation from, CXFile f, unsigned off, unsigned want,
                          CXSourceLocation *at) {
    CXSourceLocation l = from;
    l.int_data = from.int_data + (want - off);
    if ((from.int_data | l.int_data) & 0x80000000u || l.int_data < from.int_data)
        return 0; /* a macro's location in clang's encoding (the top bit), or past the end */
    CXFile g = NULL;
    unsigned o = 0;
    clang_getSpellingLocation(l, &g, NULL, NULL, &o);
    if (g != f || o != want)
        return 0;
    *at = l;
    return 1;
}

/* Tokens from `from` (spelled at f, off), up to 512 bytes on (in one file).
 *
 * Where the window ends is found from `from` itself: asking libclang for a place of a
 * header by its offset (clang_getLocationForOffset, clang_getFileContents) searches all
 * of the unit's source locations for the header's, and against a preamble that means
 * reading every one of the preamble's (7 % of a cold run on collectd). */
static spelled_t tokens_spelled_from(pctx_t *c, CXSourceLocation from, CXFile f, unsigned off) {
    spelled_t t = {NULL, 0};
    if (!f)
        return t;
    CXSourceLocation end;
    if (!offset_in_file(from, f, off, off + 512, &end)) {
        if (offset_in_file(from, f, off, off, &end)) {
            /* the file ends sooner: its last offset, by halving */
            unsigned lo = off, hi = off + 512;
            while (hi - lo > 1) {
                unsigned mid = lo + (hi - lo) / 2;
                CXSourceLocation m;
                if (offset_in_file(from, f, off, mid, &m))
                    lo = mid;
                else
                    hi = mid;
            }
            if (lo == off)
                return t; /* at the file's end */
            offset_in_file(from, f, off, lo, &end);
        } else {
            /* not a file location as above: by the file's offsets */
            size_t size = 0;
            if (!clang_getFileContents(c->tu, f, &size) || off >= size)
                return t;
            end =
                clang_getLocationForOffset(c->tu, f, size - off > 512 ? off + 512 : (unsigned)size);
        }
    }
    clang_tokenize(c->tu, clang_getRange(from, end), &t.v, &t.n);
    return t;
}

static int spelled_is(pctx_t *c, const spelled_t *t, unsigned i, const char *s) {
    return i < t->n && tok_is(c, t->v[i], s);
}

/* The index after the balanced bracket that opens at i, or t->n. */
static unsigned skip_balanced(pctx_t *c, const spelled_t *t, unsigned i) {
    int depth = 0;
    for (; i < t->n; i++) {
        if (spelled_is(c, t, i, "(") || spelled_is(c, t, i, "["))
            depth++;
        else if ((spelled_is(c, t, i, ")") || spelled_is(c, t, i, "]")) && --depth == 0)
            return i + 1;
    }
    return t->n;
}

/* The index after the operand that starts at i: prefix operators, an
 * identifier, literal or parenthesised expression, then `.f`, `->f`, `[i]`
 * and `(args)`; t->n when it cannot tell. */
static unsigned skip_operand(pctx_t *c, const spelled_t *t, unsigned i) {
    static const char *const prefix[] = {"*", "&", "!", "-", "+", "~", "++", "--"};
    for (int again = 1; again && i < t->n;) {
        again = 0;
        for (size_t k = 0; k < sizeof prefix / sizeof prefix[0]; k++)
            if (spelled_is(c, t, i, prefix[k])) {
                i++;
                again = 1;
                break;
            }
    }
    if (i >= t->n)
        return t->n;
    CXTokenKind k = clang_getTokenKind(t->v[i]);
    if (spelled_is(c, t, i, "("))
        i = skip_balanced(c, t, i);
    else if (k == CXToken_Identifier || k == CXToken_Literal || k == CXToken_Keyword)
        i++;
    else
        return t->n;
    while (i < t->n) {
        if (spelled_is(c, t, i, ".") || spelled_is(c, t, i, "->"))
            i += 2;
        else if (spelled_is(c, t, i, "[") || spelled_is(c, t, i, "("))
            i = skip_balanced(c, t, i);
        else
            break;
    }
    return i < t->n ? i : t->n;
}

/* Can skip_operand step over this operand? Not over one with operators of
 * its own at its top (a + b in a + b == c, also under an implicit
 * conversion), nor over a cast's type. */
static int simple_operand(CXCursor operand) {
    cursor_vec_t kv = children(operand);
    int under = clang_getCursorKind(operand) == CXCursor_UnexposedExpr && kv.n == 1;
    CXCursor inner = under ? kv.v[0] : operand;
    free(kv.v);
    if (under)
        return simple_operand(inner);
    switch (clang_getCursorKind(operand)) {
    case CXCursor_BinaryOperator:
    case CXCursor_CompoundAssignOperator:
    case CXCursor_ConditionalOperator:
    case CXCursor_CStyleCastExpr:
        return 0;
    default:
        return 1;
    }
}

/* What the tokens spelled at one place say (spelled_op): kept per unit, as one
 * macro's body is read at each of its expansions, and reading it costs two
 * searches of all of the unit's source locations in libclang
 * (clang_getFileContents, clang_getLocationForOffset on a header's file: 5 %
 * of a run on librdkafka, 10 reads in 11 of the same place). */
typedef struct spelled_memo {
    CXFile f; /* NULL: a free slot */
    unsigned off;
    unsigned char unary;
    signed char pre;   /* the first token as a prefix operator (unary), or KDC_OP_UNKNOWN */
    signed char after; /* the token after the operand skipped (skip_operand), or -1: none */
} spelled_memo_t;

static size_t spelled_hash(CXFile f, unsigned off, unsigned unary, size_t cap) {
    uintptr_t h = ((uintptr_t)f >> 4) * 31 + off * 2 + unary;
    return (size_t)(h * 0x9E3779B97F4A7C15u >> 7) & (cap - 1);
}

static spelled_memo_t *spelled_memo_slot(pctx_t *c, CXFile f, unsigned off, int unary) {
    if ((c->nspelled + 1) * 2 > c->spelled_cap) {
        size_t cap = c->spelled_cap ? 2 * c->spelled_cap : 256;
        spelled_memo_t *v = calloc(cap, sizeof *v);
        if (!v)
            kdc_oom();
        for (size_t k = 0; k < c->spelled_cap; k++)
            if (c->spelled[k].f) {
                size_t i =
                    spelled_hash(c->spelled[k].f, c->spelled[k].off, c->spelled[k].unary, cap);
                while (v[i].f)
                    i = (i + 1) & (cap - 1);
                v[i] = c->spelled[k];
            }
        free(c->spelled);
        c->spelled = v;
        c->spelled_cap = cap;
    }
    size_t i = spelled_hash(f, off, (unsigned)unary, c->spelled_cap);
    while (c->spelled[i].f &&
           !(c->spelled[i].f == f && c->spelled[i].off == off && c->spelled[i].unary == unary))
        i = (i + 1) & (c->spelled_cap - 1);
    return &c->spelled[i];
}

/* The operator of a binary (unary: 1) expression inside a macro expansion,
 * read from the macro body; *postfix is set for x++ / x--. */
static kdc_op_t spelled_op(pctx_t *c, CXCursor cur, CXCursor first, int unary, int *postfix) {
    CXSourceLocation from;
    CXFile f;
    unsigned off;
    if (!spelled_start(c, clang_getRangeStart(clang_getCursorExtent(cur)), &from, &f, &off) || !f)
        return KDC_OP_UNKNOWN;
    spelled_memo_t *m = spelled_memo_slot(c, f, off, unary);
    if (!m->f) {
        spelled_t t = tokens_spelled_from(c, from, f, off);
        *m = (spelled_memo_t){f, off, (unsigned char)unary, KDC_OP_UNKNOWN, -1};
        c->nspelled++;
        if (t.n) {
            CXString sp = clang_getTokenSpelling(c->tu, t.v[0]);
            m->pre = (signed char)(unary ? op_from(clang_getCString(sp), 1) : KDC_OP_UNKNOWN);
            clang_disposeString(sp);
            unsigned i = m->pre == KDC_OP_UNKNOWN ? skip_operand(c, &t, 0) : t.n;
            if (i < t.n) {
                sp = clang_getTokenSpelling(c->tu, t.v[i]);
                m->after = (signed char)op_from(clang_getCString(sp), unary);
                clang_disposeString(sp);
            }
            clang_disposeTokens(c->tu, t.v, t.n);
        }
    }
    kdc_op_t op = KDC_OP_UNKNOWN;
    if (m->pre != KDC_OP_UNKNOWN) {
        op = (kdc_op_t)m->pre;
    } else if (m->after >= 0 && simple_operand(first)) {
        op = (kdc_op_t)m->after;
        if (unary && postfix)
            *postfix = 1;
    }
    /* an operand that is a macro argument is read at the invocation, where a
     * comma separates it from the next argument */
    return op == KDC_OP_COMMA ? KDC_OP_UNKNOWN : op;
}

static kdc_op_t unary_op(pctx_t *c, CXCursor un, CXCursor operand) {
    CXSourceRange ur = clang_getCursorExtent(un), orr = clang_getCursorExtent(operand);
    spell_t us = spelling(clang_getRangeStart(ur)), os = spelling(clang_getRangeStart(orr));
    int prefix = us.file == os.file && us.off < os.off;
    kdc_op_t op = prefix ? operator_between(c, us, os, 1)
                         : operator_between(c, spelling(clang_getRangeEnd(orr)),
                                            spelling(clang_getRangeEnd(ur)), 1);
    if (op == KDC_OP_UNKNOWN) {
        int postfix = 0;
        op = spelled_op(c, un, operand, 1, &postfix);
        prefix = !postfix;
    }
    if (!prefix && op == KDC_OP_PREINC)
        op = KDC_OP_POSTINC;
    if (!prefix && op == KDC_OP_PREDEC)
        op = KDC_OP_POSTDEC;
    return op;
}

static void fold_unary(kdc_expr_t *e) {
    kdc_expr_t *k = e->kids[0];
    if (!k->has_ival)
        return;
    /* Wrapping arithmetic (like the hardware) instead of signed overflow,
     * which is undefined: constants in real code do overflow long long. */
    switch (e->op) {
    case KDC_OP_NEG: e->ival = (long long)(0ULL - (unsigned long long)k->ival); break;
    case KDC_OP_PLUS: e->ival = k->ival; break;
    case KDC_OP_NOT: e->ival = !k->ival; break;
    case KDC_OP_BITNOT: e->ival = ~k->ival; break;
    default: return;
    }
    e->has_ival = 1;
}

static void fold_binary(kdc_expr_t *e) {
    kdc_expr_t *a = e->kids[0], *b = e->kids[1];
    if (!a->has_ival || !b->has_ival)
        return;
    long long x = a->ival, y = b->ival;
    unsigned long long ux = (unsigned long long)x, uy = (unsigned long long)y;
    switch (e->op) {
    case KDC_OP_OR: e->ival = x | y; break;
    case KDC_OP_AND: e->ival = x & y; break;
    case KDC_OP_XOR: e->ival = x ^ y; break;
    case KDC_OP_ADD: e->ival = (long long)(ux + uy); break;
    case KDC_OP_SUB: e->ival = (long long)(ux - uy); break;
    case KDC_OP_MUL: e->ival = (long long)(ux * uy); break;
    case KDC_OP_SHL: e->ival = (y >= 0 && y < 63) ? (long long)(ux << y) : 0; break;
    case KDC_OP_SHR: e->ival = (y >= 0 && y < 63) ? x >> y : 0; break;
    default: return;
    }
    e->has_ival = 1;
}

static int eval_int(CXCursor cur, long long *out) {
    CXEvalResult r = clang_Cursor_Evaluate(cur);
    if (!r)
        return 0;
    int ok = clang_EvalResult_getKind(r) == CXEval_Int;
    if (ok)
        *out = clang_EvalResult_getAsLongLong(r);
    clang_EvalResult_dispose(r);
    return ok;
}

static int param_index_of(pctx_t *c, const char *usr) {
    if (!c->func)
        return -1;
    for (unsigned i = 0; i < c->func->nparams; i++)
        if (c->func->param_usrs[i] == usr)
            return (int)i;
    return -1;
}

static kdc_expr_t *conv_ref(pctx_t *c, CXCursor cur) {
    kdc_expr_t *e = new_expr(c, KDC_E_REF, cur);
    CXCursor d = clang_getCursorReferenced(cur);
    e->name = intern_cx(c, clang_getCursorSpelling(cur));
    if (clang_Cursor_isNull(d))
        return e;
    e->usr = intern_cx(c, clang_getCursorUSR(d));
    e->type = type_spelling(c, cur);
    switch (clang_getCursorKind(d)) {
    case CXCursor_ParmDecl:
        e->ref = KDC_REF_PARAM;
        e->param_index = param_index_of(c, e->usr);
        break;
    case CXCursor_VarDecl: {
        enum CXCursorKind pk = clang_getCursorKind(clang_getCursorSemanticParent(d));
        int local = is_func_kind(pk) || pk == CXCursor_LambdaExpr;
        if (local && clang_Cursor_getStorageClass(d) == CX_SC_Static)
            local = 0;
        e->ref = local ? KDC_REF_LOCAL : KDC_REF_GLOBAL;
        break;
    }
    case CXCursor_EnumConstantDecl:
        e->ref = KDC_REF_ENUMERATOR;
        e->ival = clang_getEnumConstantDeclValue(d);
        e->has_ival = 1;
        break;
    case CXCursor_FieldDecl:
        e->kind = KDC_E_MEMBER;
        e->usr = field_key(c, d);
        break;
    default:
        if (is_func_kind(clang_getCursorKind(d))) {
            e->ref = KDC_REF_FUNCTION;
            e->name = qualified_name(c, d);
        }
        break;
    }
    return e;
}

/* Is an attribute cursor C11 `_Noreturn`, C++ `[[noreturn]]` or MSVC's
 * `__declspec(noreturn)`? libclang 14 exposes them as unexposed attributes,
 * told apart by their first token (read where it is spelled: inside a macro
 * such as `#define NORETURN _Noreturn`, the macro's text; an attribute's
 * extent from a macro ends at the invocation, so only its start is read). */
static enum CXChildVisitResult noreturn_attr_visit(CXCursor cur, CXCursor parent,
                                                   CXClientData arg) {
    (void)parent;
    struct { pctx_t *c; int found; } *nv = arg;
    if (!clang_isAttribute(clang_getCursorKind(cur)))
        return CXChildVisit_Continue;
    CXSourceLocation at = clang_getRangeStart(clang_getCursorExtent(cur));
    CXToken *toks = NULL;
    unsigned n = 0;
    clang_tokenize(nv->c->tu, clang_getRange(at, at), &toks, &n);
    if (n) {
        CXString sp = clang_getTokenSpelling(nv->c->tu, toks[0]);
        const char *t = clang_getCString(sp);
        nv->found = t && (!strcmp(t, "_Noreturn") || !strcmp(t, "noreturn") ||
                          !strcmp(t, "__noreturn__"));
        clang_disposeString(sp);
        clang_disposeTokens(nv->c->tu, toks, n);
    }
    return nv->found ? CXChildVisit_Break : CXChildVisit_Continue;
}

/* Does the function declaration `d` (of type spelling `type`) say it never
 * returns? GNU `__attribute__((noreturn))` (glibc's exit, abort,
 * __assert_fail, thrd_exit, pthread_exit, longjmp) is part of the function's
 * type, which libclang spells with it; C11 `_Noreturn` and C++ `[[noreturn]]`
 * are attributes of the declaration (inherited by its redeclarations). */
static int decl_noreturn(pctx_t *c, CXCursor d, const char *usr, const char *type) {
    if (type && strstr(type, "__attribute__((noreturn))"))
        return 1;
    void *known = usr && *usr ? kdc_strmap_get(&c->noreturn, usr) : NULL;
    if (known)
        return known == (void *)1;
    struct { pctx_t *c; int found; } nv = {c, 0};
    clang_visitChildren(d, noreturn_attr_visit, &nv);
    if (usr && *usr)
        kdc_strmap_put(&c->noreturn, usr, nv.found ? (void *)1 : (void *)2);
    return nv.found;
}

static enum CXChildVisitResult contract_attr_visit(CXCursor cur, CXCursor parent,
                                                   CXClientData arg) {
    (void)parent;
    static const char prefix[] = "kdc.contract:";
    struct {
        pctx_t *c;
        const char *found;
    } *cv = arg;
    if (clang_getCursorKind(cur) != CXCursor_AnnotateAttr)
        return CXChildVisit_Continue;
    CXString sp = clang_getCursorSpelling(cur);
    const char *t = clang_getCString(sp);
    if (t && !strncmp(t, prefix, sizeof prefix - 1))
        cv->found = kdc_intern(cv->c->p, t + sizeof prefix - 1);
    clang_disposeString(sp);
    return cv->found ? CXChildVisit_Break : CXChildVisit_Continue;
}

/* What a callee means to the durability contract, as libkdc's headers declare it
 * (KDC_CONTRACT in kdc/export.h: an annotate attribute "kdc.contract:MEANING ..."),
 * or NULL. Cached per USR. */
static const char *decl_contract(pctx_t *c, CXCursor d, const char *usr) {
    const char *known = usr && *usr ? kdc_strmap_get(&c->contracts, usr) : NULL;
    if (known)
        return known == no_contract ? NULL : known;
    struct {
        pctx_t *c;
        const char *found;
    } cv = {c, NULL};
    clang_visitChildren(d, contract_attr_visit, &cv);
    if (usr && *usr)
        kdc_strmap_put(&c->contracts, usr, (void *)(cv.found ? cv.found : no_contract));
    return cv.found;
}

/* The member function a dependent call in a template names (`c->set(k, v,
 * err)` with v of a template parameter's type: an overload set of
 * RdKafka::Conf::set, resolved only per instantiation): the first of the set
 * when every candidate is a member function of one name. */
static CXCursor dependent_member_callee(pctx_t *c, const cursor_vec_t *kv) {
    CXCursor none = clang_getNullCursor();
    if (!kv->n || clang_getCursorKind(kv->v[0]) != CXCursor_MemberRefExpr)
        return none;
    CXCursor set = clang_getCursorReferenced(kv->v[0]);
    unsigned n = clang_getNumOverloadedDecls(set);
    const char *name = NULL;
    for (unsigned i = 0; i < n; i++) {
        CXCursor d = clang_getOverloadedDecl(set, i);
        enum CXCursorKind k = clang_getCursorKind(d);
        if (k == CXCursor_FunctionTemplate)
            k = clang_getTemplateCursorKind(d);
        const char *q = k == CXCursor_CXXMethod ? qualified_name(c, d) : NULL;
        if (!q || (name && q != name))
            return none;
        name = q;
    }
    return name ? clang_getOverloadedDecl(set, 0) : none;
}

static kdc_expr_t *conv_call(pctx_t *c, CXCursor cur) {
    kdc_expr_t *e = new_expr(c, KDC_E_CALL, cur);
    CXCursor d = clang_getCursorReferenced(cur);
    cursor_vec_t kv = children(cur);
    if (clang_Cursor_isNull(d))
        d = dependent_member_callee(c, &kv);

    enum CXCursorKind dk = clang_getCursorKind(d);
    if (dk == CXCursor_FunctionTemplate)
        dk = clang_getTemplateCursorKind(d);
    if (!clang_Cursor_isNull(d) && is_func_kind(dk)) {
        e->name = qualified_name(c, d);
        e->usr = intern_cx(c, clang_getCursorUSR(d));
        /* a function template of the program: its instantiations have no body of
         * their own in the model, the template has */
        CXCursor t = clang_getSpecializedCursorTemplate(d);
        if (!clang_Cursor_isNull(t) && clang_getCursorKind(t) == CXCursor_FunctionTemplate &&
            !clang_Location_isInSystemHeader(clang_getCursorLocation(t)))
            e->usr = intern_cx(c, clang_getCursorUSR(t));
        e->str = type_spelling(c, d);
        e->is_method = dk == CXCursor_CXXMethod || dk == CXCursor_Destructor ||
                       dk == CXCursor_ConversionFunction;
        e->is_ctor = dk == CXCursor_Constructor;
        e->callee_system = (unsigned)clang_Location_isInSystemHeader(clang_getCursorLocation(d));
        e->callee_noreturn = (unsigned)decl_noreturn(c, d, e->usr, e->str);
        /* libkdc's functions declare their meaning: library calls (as from a system
         * header, whatever the include flag), looked up by it (kdc_api_lookup) */
        const char *contract = decl_contract(c, d, e->usr);
        if (contract) {
            e->callee_system = 1;
            kdc_program_add_contract(c->p, e->name, contract);
        }
        if (e->is_method && kv.n && clang_getCursorKind(kv.v[0]) == CXCursor_MemberRefExpr) {
            cursor_vec_t mk = children(kv.v[0]);
            for (size_t i = 0; i < mk.n; i++)
                if (is_expr_kind(clang_getCursorKind(mk.v[i]))) {
                    e->recv = conv_expr(c, mk.v[i]);
                    break;
                }
            free(mk.v);
            if (!e->recv)
                e->recv = new_expr(c, KDC_E_THIS, cur);
        } else if (e->is_method) {
            e->recv = NULL; /* operator call: the object is the first argument */
        }
    } else if (kv.n && !e->is_ctor) {
        e->callee_expr = conv_expr(c, kv.v[0]);
        e->name = kdc_intern(c->p, "");
    }
    if (!e->name)
        e->name = kdc_intern(c->p, "");
    e->type = type_spelling(c, cur);
    int nargs = clang_Cursor_getNumArguments(cur);
    if (nargs > 0) {
        kdc_expr_t **tmp = calloc((size_t)nargs, sizeof *tmp);
        for (int i = 0; i < nargs; i++)
            tmp[i] = conv_expr(c, clang_Cursor_getArgument(cur, (unsigned)i));
        set_kids(c, e, tmp, (unsigned)nargs);
        free(tmp);
    }
    free(kv.v);
    e->call_id = (int)c->calls.n;
    KDC_VEC_PUSH(c->calls, e);
    return e;
}

typedef struct flat_ctx {
    KDC_VEC(kdc_expr_t *) exprs;
} flat_ctx_t;

static void flatten_stmt(const kdc_stmt_t *s, void *arg) {
    flat_ctx_t *fc = arg;
    if (s->expr)
        KDC_VEC_PUSH(fc->exprs, s->expr);
    if (s->inc)
        KDC_VEC_PUSH(fc->exprs, s->inc);
}

/* exprs[0..n) as the comma chain e1, e2, .., value (value NULL: the last
 * of exprs is the value); NULL when there is nothing. */
static kdc_expr_t *comma_chain(pctx_t *c, CXCursor cur, kdc_expr_t **exprs, size_t n,
                               kdc_expr_t *value) {
    kdc_expr_t *chain = value;
    for (size_t i = n; i-- > 0;) {
        if (!chain) {
            chain = exprs[i];
            continue;
        }
        kdc_expr_t *comma = new_expr(c, KDC_E_BINARY, cur);
        comma->op = KDC_OP_COMMA;
        kdc_expr_t *kids[2] = {exprs[i], chain};
        set_kids(c, comma, kids, 2);
        comma->has_ival = chain->has_ival;
        comma->ival = chain->ival;
        chain = comma;
    }
    return chain;
}

/* A statement of a GNU statement expression as an expression that evaluates
 * what it does, or NULL when it does nothing: `if (c) a; else b;` becomes
 * `c ? a : b`, so a branch stays a branch (glibc's assert(x) is
 * `({ if (x) ; else __assert_fail(..); })`, and __assert_fail never returns);
 * other control flow inside (rare in such macros) is flattened. */
static kdc_expr_t *stmt_as_expr(pctx_t *c, CXCursor cur, const kdc_stmt_t *st) {
    if (!st)
        return NULL;
    if (st->kind == KDC_S_IF && st->expr && !st->init) {
        kdc_expr_t *a = stmt_as_expr(c, cur, st->body), *b = stmt_as_expr(c, cur, st->els);
        if (!a && !b)
            return st->expr;
        kdc_expr_t *kids[3] = {st->expr, a ? a : new_expr(c, KDC_E_OTHER, cur),
                               b ? b : new_expr(c, KDC_E_OTHER, cur)};
        kdc_expr_t *e = new_expr(c, KDC_E_COND, cur);
        set_kids(c, e, kids, 3);
        return e;
    }
    if (st->kind == KDC_S_COMPOUND) {
        kdc_expr_t **tmp = st->nkids ? calloc(st->nkids, sizeof *tmp) : NULL;
        size_t n = 0;
        for (unsigned i = 0; i < st->nkids; i++) {
            kdc_expr_t *x = stmt_as_expr(c, cur, st->kids[i]);
            if (x)
                tmp[n++] = x;
        }
        kdc_expr_t *chain = comma_chain(c, cur, tmp, n, NULL);
        free(tmp);
        return chain;
    }
    flat_ctx_t fc = {{0}};
    kdc_stmt_walk(st, flatten_stmt, &fc);
    kdc_expr_t *chain = comma_chain(c, cur, fc.exprs.v, fc.exprs.n, NULL);
    free(fc.exprs.v);
    return chain;
}

/* A GNU statement expression ({ s1; s2; value; }) as the comma chain
 * s1, s2, value: every call in it is seen, in order; an if statement stays a
 * branch (stmt_as_expr), other control flow inside is flattened. librdkafka's
 * RD_KAFKA_V_* type-check macros expand to these. */
static kdc_expr_t *conv_stmt_expr(pctx_t *c, CXCursor cur) {
    cursor_vec_t kv = children(cur);
    kdc_expr_t *value = NULL;
    KDC_VEC(kdc_expr_t *) exprs = {0};
    if (kv.n && clang_getCursorKind(kv.v[kv.n - 1]) == CXCursor_CompoundStmt) {
        cursor_vec_t sv = children(kv.v[kv.n - 1]);
        for (size_t i = 0; i < sv.n; i++) {
            if (i + 1 == sv.n && is_expr_kind(clang_getCursorKind(sv.v[i]))) {
                value = conv_expr(c, sv.v[i]);
                break;
            }
            kdc_stmt_t *st = conv_child_stmt(c, sv.v[i]);
            if (st->kind == KDC_S_IF && st->expr && st->expr->has_ival && !st->expr->ival &&
                !st->els)
                continue; /* if (0) { type check } of librdkafka's _LRK_TYPECHECK */
            kdc_expr_t *x = stmt_as_expr(c, cur, st);
            if (x)
                KDC_VEC_PUSH(exprs, x);
        }
        free(sv.v);
    }
    free(kv.v);
    kdc_expr_t *chain =
        comma_chain(c, cur, exprs.v, exprs.n, value ? value : new_expr(c, KDC_E_OTHER, cur));
    free(exprs.v);
    return chain;
}

/* Contents of a string literal from its tokens: adjacent literals are joined,
 * the common escapes decoded (enough to match topic names and property keys). */
/* The value of a string literal. libclang spells a StringLiteral cursor as its
 * value re-quoted (escapes, prefix and adjacent-literal concatenation resolved),
 * also when the literal comes from a macro (`#define ACKS "1"`), where the
 * cursor's extent and its tokens do not give the literal alone. */
static const char *string_literal(pctx_t *c, CXCursor cur) {
    KDC_VEC(char) out = {0};
    CXString sp = clang_getCursorSpelling(cur);
    const char *t = clang_getCString(sp);
    const char *q = t ? strchr(t, '"') : NULL;
    const char *end = t ? strrchr(t, '"') : NULL;
    for (const char *s = q ? q + 1 : end; s && s < end; s++) {
        char ch = *s;
        if (ch == '\\' && s + 1 < end) {
            s++;
            switch (*s) {
            case 'n': ch = '\n'; break;
            case 't': ch = '\t'; break;
            case 'r': ch = '\r'; break;
            case '0': ch = 0; break;
            default: ch = *s; break;
            }
            if (!ch)
                break;
        }
        KDC_VEC_PUSH(out, ch);
    }
    clang_disposeString(sp);
    const char *r = kdc_intern_n(c->p, out.v ? out.v : "", out.n);
    free(out.v);
    return r;
}

typedef struct field_list {
    pctx_t *c;
    KDC_VEC(const char *) usrs;
} field_list_t;

static enum CXVisitorResult collect_field(CXCursor field, CXClientData d) {
    field_list_t *fl = d;
    const char *usr = field_key(fl->c, field);
    KDC_VEC_PUSH(fl->usrs, usr);
    return CXVisit_Continue;
}

/* {..} for a struct: its kids initialise the fields in order (libclang shows the
 * semantic form, designators already resolved). */
static kdc_expr_t *conv_init_list(pctx_t *c, CXCursor cur) {
    kdc_expr_t *e = other_with_kids(c, cur);
    e->kind = KDC_E_INIT;
    CXType t = clang_getCanonicalType(clang_getCursorType(cur));
    if (t.kind != CXType_Record || !e->nkids)
        return e;
    field_list_t fl = {c, {0}};
    clang_Type_visitFields(t, collect_field, &fl);
    if (fl.usrs.n >= e->nkids) {
        e->fields = kdc_alloc(c->p, e->nkids * sizeof *e->fields);
        for (unsigned i = 0; i < e->nkids; i++)
            e->fields[i] = fl.usrs.v[i];
    }
    free(fl.usrs.v);
    return e;
}

/* libclang exposes C11/GNU atomic builtins (AtomicExpr: __c11_atomic_store,
 * __atomic_fetch_add, ... and the <stdatomic.h> macros spelled with them)
 * as an unexposed expression, not a call. The name as written, read from
 * the first token of its extent (the macro's name for atomic_store(...)),
 * when that names an atomic operation; NULL otherwise. */
static const char *atomic_builtin_name(pctx_t *c, CXCursor cur) {
    CXSourceRange ext = clang_getCursorExtent(cur);
    CXSourceLocation at = clang_getRangeStart(ext);
    CXToken *toks = NULL;
    unsigned n = 0;
    const char *name = NULL;
    clang_tokenize(c->tu, clang_getRange(at, at), &toks, &n);
    if (n && clang_getTokenKind(toks[0]) == CXToken_Identifier) {
        CXString sp = clang_getTokenSpelling(c->tu, toks[0]);
        const char *t = clang_getCString(sp);
        if (t && (!strncmp(t, "atomic_", 7) || !strncmp(t, "__c11_atomic_", 13) ||
                  !strncmp(t, "__atomic_", 9)))
            name = kdc_intern(c->p, t);
        clang_disposeString(sp);
    }
    if (toks)
        clang_disposeTokens(c->tu, toks, n);
    return name;
}

/* An atomic builtin as a call of a system function with that name: its
 * operands are its arguments (the object's address first), so the facts see
 * atomic_store(&st->done, 1) in a delivery callback as a write of st->done
 * and atomic_load(&st->done) as a read. */
static kdc_expr_t *conv_atomic(pctx_t *c, CXCursor cur, const char *name) {
    kdc_expr_t *e = other_with_kids(c, cur);
    e->kind = KDC_E_CALL;
    e->name = name;
    e->callee_system = 1;
    e->type = type_spelling(c, cur);
    e->call_id = (int)c->calls.n;
    KDC_VEC_PUSH(c->calls, e);
    return e;
}

static kdc_expr_t *conv_expr_at(pctx_t *c, CXCursor cur) {
    enum CXCursorKind k = clang_getCursorKind(cur);
    switch (k) {
    case CXCursor_InitListExpr:
        return conv_init_list(c, cur);
    case CXCursor_UnexposedExpr:
    case CXCursor_ParenExpr:
    case CXCursor_CStyleCastExpr:
    case CXCursor_CXXStaticCastExpr:
    case CXCursor_CXXDynamicCastExpr:
    case CXCursor_CXXReinterpretCastExpr:
    case CXCursor_CXXConstCastExpr:
    case CXCursor_CXXFunctionalCastExpr: {
        cursor_vec_t kv = children(cur);
        CXCursor last = clang_getNullCursor();
        size_t nexpr = 0;
        for (size_t i = 0; i < kv.n; i++)
            if (is_expr_kind(clang_getCursorKind(kv.v[i]))) {
                last = kv.v[i];
                nexpr++;
            }
        free(kv.v);
        if (nexpr >= 2 && k == CXCursor_UnexposedExpr) {
            const char *atomic = atomic_builtin_name(c, cur);
            if (atomic)
                return conv_atomic(c, cur, atomic);
        }
        if (nexpr == 1)
            return conv_expr(c, last);
        if (nexpr == 0 && k == CXCursor_UnexposedExpr) {
            kdc_expr_t *e = new_expr(c, KDC_E_OTHER, cur);
            long long v;
            if (eval_int(cur, &v)) {
                e->kind = KDC_E_INT;
                e->ival = v;
                e->has_ival = 1;
            }
            return e;
        }
        return other_with_kids(c, cur);
    }
    case CXCursor_StmtExpr:
        return conv_stmt_expr(c, cur);
    case CXCursor_CallExpr:
        return conv_call(c, cur);
    case CXCursor_DeclRefExpr:
        return conv_ref(c, cur);
    case CXCursor_MemberRefExpr: {
        kdc_expr_t *e = new_expr(c, KDC_E_MEMBER, cur);
        CXCursor d = clang_getCursorReferenced(cur);
        e->name = intern_cx(c, clang_getCursorSpelling(cur));
        if (!clang_Cursor_isNull(d))
            e->usr = clang_getCursorKind(d) == CXCursor_FieldDecl ? field_key(c, d)
                                                                 : intern_cx(c, clang_getCursorUSR(d));
        e->type = type_spelling(c, cur);
        cursor_vec_t kv = children(cur);
        for (size_t i = 0; i < kv.n; i++)
            if (is_expr_kind(clang_getCursorKind(kv.v[i]))) {
                kdc_expr_t *base = conv_expr(c, kv.v[i]);
                set_kids(c, e, &base, 1);
                /* "->" iff the base is a pointer */
                CXType bt = clang_getCursorType(kv.v[i]);
                e->arrow = clang_getCanonicalType(bt).kind == CXType_Pointer;
                break;
            }
        free(kv.v);
        return e;
    }
    case CXCursor_StringLiteral: {
        kdc_expr_t *e = new_expr(c, KDC_E_STRING, cur);
        e->str = string_literal(c, cur);
        return e;
    }
    case CXCursor_IntegerLiteral:
    case CXCursor_CharacterLiteral:
    case CXCursor_CXXBoolLiteralExpr: {
        kdc_expr_t *e = new_expr(c, KDC_E_INT, cur);
        e->has_ival = (unsigned)eval_int(cur, &e->ival);
        if (!e->has_ival)
            e->kind = KDC_E_OTHER;
        return e;
    }
    case CXCursor_GNUNullExpr:
    case CXCursor_CXXNullPtrLiteralExpr:
        return new_expr(c, KDC_E_NULL, cur);
    case CXCursor_CXXThisExpr:
        return new_expr(c, KDC_E_THIS, cur);
    case CXCursor_UnaryOperator: {
        cursor_vec_t kv = children(cur);
        if (kv.n != 1) {
            free(kv.v);
            return other_with_kids(c, cur);
        }
        kdc_expr_t *e = new_expr(c, KDC_E_UNARY, cur);
        e->op = unary_op(c, cur, kv.v[0]);
        kdc_expr_t *kid = conv_expr(c, kv.v[0]);
        set_kids(c, e, &kid, 1);
        fold_unary(e);
        if (!e->has_ival && kid->has_ival)
            e->has_ival = (unsigned)eval_int(cur, &e->ival);
        free(kv.v);
        return e;
    }
    case CXCursor_BinaryOperator:
    case CXCursor_CompoundAssignOperator: {
        cursor_vec_t kv = children(cur);
        if (kv.n != 2) {
            free(kv.v);
            return other_with_kids(c, cur);
        }
        kdc_expr_t *e = new_expr(c, KDC_E_BINARY, cur);
        e->op = k == CXCursor_CompoundAssignOperator ? KDC_OP_COMPOUND_ASSIGN
                                                     : binary_op(c, kv.v[0], kv.v[1]);
        if (e->op == KDC_OP_UNKNOWN)
            e->op = spelled_op(c, cur, kv.v[0], 0, NULL);
        kdc_expr_t *kids[2] = {conv_expr(c, kv.v[0]), conv_expr(c, kv.v[1])};
        set_kids(c, e, kids, 2);
        fold_binary(e);
        if (!e->has_ival && kids[0]->has_ival && kids[1]->has_ival)
            e->has_ival = (unsigned)eval_int(cur, &e->ival);
        free(kv.v);
        return e;
    }
    case CXCursor_ConditionalOperator: {
        kdc_expr_t *e = other_with_kids(c, cur);
        if (e->nkids == 3)
            e->kind = KDC_E_COND;
        return e;
    }
    case CXCursor_ArraySubscriptExpr: {
        kdc_expr_t *e = other_with_kids(c, cur);
        if (e->nkids == 2)
            e->kind = KDC_E_INDEX;
        return e;
    }
    case CXCursor_LambdaExpr:
        build_lambda(c, cur);
        return new_expr(c, KDC_E_OTHER, cur);
    case CXCursor_CXXDeleteExpr: {
        /* `delete p` as a call named "<delete>" (not an identifier): destroying a
         * C++ client handle matters to the teardown rules */
        kdc_expr_t *e = other_with_kids(c, cur);
        e->kind = KDC_E_CALL;
        e->name = kdc_intern(c->p, "<delete>");
        e->callee_system = 1;
        e->call_id = (int)c->calls.n;
        KDC_VEC_PUSH(c->calls, e);
        return e;
    }
    case CXCursor_UnaryExpr: /* sizeof / alignof: operand not evaluated */
    case CXCursor_BlockExpr: {
        kdc_expr_t *e = new_expr(c, KDC_E_OTHER, cur);
        long long v;
        if (k == CXCursor_UnaryExpr && eval_int(cur, &v)) {
            e->kind = KDC_E_INT;
            e->ival = v;
            e->has_ival = 1;
        }
        return e;
    }
    default:
        return other_with_kids(c, cur);
    }
}

/* ---------- statements ---------- */

static kdc_stmt_t *new_stmt(pctx_t *c, kdc_stmt_kind_t kind, CXCursor cur) {
    kdc_stmt_t *s = kdc_alloc(c->p, sizeof *s);
    s->kind = kind;
    s->loc = loc_of(c, cur);
    return s;
}

static kdc_stmt_t *expr_stmt(pctx_t *c, kdc_expr_t *e, CXCursor cur) {
    kdc_stmt_t *s = new_stmt(c, KDC_S_EXPR, cur);
    s->expr = e;
    return s;
}

static kdc_stmt_t *compound_of(pctx_t *c, CXCursor cur, kdc_stmt_t **kids, size_t n) {
    kdc_stmt_t *s = new_stmt(c, KDC_S_COMPOUND, cur);
    s->nkids = (unsigned)n;
    s->kids = n ? kdc_alloc(c->p, n * sizeof *kids) : NULL;
    for (size_t i = 0; i < n; i++)
        s->kids[i] = kids[i];
    return s;
}

/* `var = init` for a VarDecl with an initializer; NULL when there is none. */
static kdc_stmt_t *conv_var_decl(pctx_t *c, CXCursor var) {
    cursor_vec_t kv = children(var);
    CXCursor init = clang_getNullCursor();
    for (size_t i = 0; i < kv.n; i++)
        if (is_expr_kind(clang_getCursorKind(kv.v[i])))
            init = kv.v[i];
    free(kv.v);
    if (clang_Cursor_isNull(init))
        return NULL;
    /* An array bound is an expression child too: an initializer needs '=' after
     * the name (outside brackets), or '(' / '{' right after it. */
    spell_t name = spelling(clang_getCursorLocation(var));
    spell_t start = spelling(clang_getRangeStart(clang_getCursorExtent(init)));
    if (name.file && name.file == start.file && start.off > name.off) {
        CXToken *toks;
        unsigned n = tokens_between(c, name, start, &toks);
        int has_init = 0, depth = 0, first = 1;
        for (unsigned i = 0; i < n; i++) {
            unsigned off = tok_off(c->tu, toks[i]);
            if (off <= name.off)
                continue;
            if (off >= start.off)
                break;
            if (first && (tok_is(c, toks[i], "(") || tok_is(c, toks[i], "{")))
                has_init = 1;
            first = 0;
            if (tok_is(c, toks[i], "["))
                depth++;
            else if (tok_is(c, toks[i], "]"))
                depth--;
            else if (depth == 0 && tok_is(c, toks[i], "="))
                has_init = 1;
        }
        if (n)
            clang_disposeTokens(c->tu, toks, n);
        if (!has_init)
            return NULL;
    }
    kdc_expr_t *lhs = new_expr(c, KDC_E_REF, var);
    lhs->name = intern_cx(c, clang_getCursorSpelling(var));
    lhs->usr = intern_cx(c, clang_getCursorUSR(var));
    lhs->type = type_spelling(c, var);
    enum CXCursorKind pk = clang_getCursorKind(clang_getCursorSemanticParent(var));
    lhs->ref = (is_func_kind(pk) && clang_Cursor_getStorageClass(var) != CX_SC_Static)
                   ? KDC_REF_LOCAL
                   : KDC_REF_GLOBAL;
    kdc_expr_t *e = new_expr(c, KDC_E_BINARY, var);
    e->op = KDC_OP_ASSIGN;
    kdc_expr_t *kids[2] = {lhs, conv_expr(c, init)};
    set_kids(c, e, kids, 2);
    return expr_stmt(c, e, var);
}

static kdc_stmt_t *conv_decl_stmt(pctx_t *c, CXCursor cur) {
    cursor_vec_t kv = children(cur);
    KDC_VEC(kdc_stmt_t *) out = {0};
    for (size_t i = 0; i < kv.n; i++)
        if (clang_getCursorKind(kv.v[i]) == CXCursor_VarDecl) {
            kdc_stmt_t *s = conv_var_decl(c, kv.v[i]);
            if (s)
                KDC_VEC_PUSH(out, s);
        }
    kdc_stmt_t *r = compound_of(c, cur, out.v, out.n);
    free(out.v);
    free(kv.v);
    return r;
}

static kdc_stmt_t *conv_child_stmt(pctx_t *c, CXCursor cur) {
    enum CXCursorKind k = clang_getCursorKind(cur);
    if (k == CXCursor_VarDecl) {
        kdc_stmt_t *s = conv_var_decl(c, cur);
        return s ? s : new_stmt(c, KDC_S_NULL, cur);
    }
    return conv_stmt(c, cur);
}

/* Is the token `what` between cursors a and b? -1 when the source between
 * them cannot be read: inside a macro expansion a statement's extent is the
 * whole invocation, so b may start before a ends. */
static int has_token_between(pctx_t *c, CXCursor a, CXCursor b, const char *what) {
    spell_t s = spelling(clang_getRangeEnd(clang_getCursorExtent(a)));
    spell_t e = spelling(clang_getRangeStart(clang_getCursorExtent(b)));
    if (!s.file || s.file != e.file || s.off > e.off)
        return -1;
    CXToken *toks;
    unsigned n = tokens_between(c, s, e, &toks);
    int found = 0;
    for (unsigned i = 0; i < n && !found; i++) {
        unsigned off = tok_off(c->tu, toks[i]);
        if (off >= s.off && off < e.off && tok_is(c, toks[i], what))
            found = 1;
    }
    if (n)
        clang_disposeTokens(c->tu, toks, n);
    return found;
}

/* Does an if statement with children kv have an else branch? Its children
 * are the condition, the then branch and the else branch, after a C++ init
 * statement or condition variable: the `else` token between the last two
 * children tells, or, inside a macro expansion, where that source cannot be
 * read (glibc's assert(x) is `if (x) ; else __assert_fail(..)`), a third
 * child that follows no declaration. */
static int if_has_else(pctx_t *c, const cursor_vec_t *kv) {
    size_t n = kv->n;
    if (n < 3)
        return 0;
    int t = has_token_between(c, kv->v[n - 2], kv->v[n - 1], "else");
    if (t >= 0)
        return t;
    enum CXCursorKind k0 = clang_getCursorKind(kv->v[0]);
    return n >= 4 || (k0 != CXCursor_DeclStmt && k0 != CXCursor_VarDecl);
}

static kdc_stmt_t *conv_if(pctx_t *c, CXCursor cur) {
    cursor_vec_t kv = children(cur);
    kdc_stmt_t *s = new_stmt(c, KDC_S_IF, cur);
    size_t n = kv.n;
    if (n < 2) {
        free(kv.v);
        s->kind = KDC_S_NULL;
        return s;
    }
    int has_else = if_has_else(c, &kv);
    size_t then_i = has_else ? n - 2 : n - 1;
    size_t cond_i = then_i - 1;
    if (has_else)
        s->els = conv_stmt(c, kv.v[n - 1]);
    s->body = conv_stmt(c, kv.v[then_i]);
    s->expr = conv_expr(c, kv.v[cond_i]);
    if (cond_i > 0) {
        kdc_stmt_t **pre = calloc(cond_i, sizeof *pre);
        for (size_t i = 0; i < cond_i; i++)
            pre[i] = conv_child_stmt(c, kv.v[i]);
        s->init = compound_of(c, cur, pre, cond_i);
        free(pre);
    }
    free(kv.v);
    return s;
}

static kdc_stmt_t *conv_for(pctx_t *c, CXCursor cur) {
    cursor_vec_t kv = children(cur);
    kdc_stmt_t *s = new_stmt(c, KDC_S_FOR, cur);
    if (!kv.n) {
        free(kv.v);
        return s;
    }
    s->body = conv_stmt(c, kv.v[kv.n - 1]);
    /* Find the two ';' of the header at parenthesis depth 1. */
    CXSourceRange r = clang_getCursorExtent(cur);
    spell_t a = spelling(clang_getRangeStart(r));
    spell_t b = spelling(clang_getRangeStart(clang_getCursorExtent(kv.v[kv.n - 1])));
    CXToken *toks;
    unsigned n = tokens_between(c, a, b, &toks);
    unsigned semi[2] = {0, 0}, close = 0;
    int nsemi = 0, depth = 0, ok = n > 2 && tok_is(c, toks[0], "for");
    for (unsigned i = 1; ok && i < n; i++) {
        if (tok_is(c, toks[i], "(") || tok_is(c, toks[i], "[") || tok_is(c, toks[i], "{"))
            depth++;
        else if (tok_is(c, toks[i], ")") || tok_is(c, toks[i], "]") || tok_is(c, toks[i], "}")) {
            if (--depth == 0) {
                close = tok_off(c->tu, toks[i]);
                break;
            }
        } else if (depth == 1 && tok_is(c, toks[i], ";") && nsemi < 2)
            semi[nsemi++] = tok_off(c->tu, toks[i]);
    }
    if (n)
        clang_disposeTokens(c->tu, toks, n);
    ok = ok && nsemi == 2 && close;
    s->unknown_cond = !ok;
    KDC_VEC(kdc_stmt_t *) pre = {0};
    for (size_t i = 0; i + 1 < kv.n; i++) {
        unsigned off = spelling(clang_getRangeStart(clang_getCursorExtent(kv.v[i]))).off;
        enum CXCursorKind k = clang_getCursorKind(kv.v[i]);
        if (ok && off > semi[0] && off < semi[1] && is_expr_kind(k))
            s->expr = conv_expr(c, kv.v[i]);
        else if (ok && off > semi[1] && is_expr_kind(k))
            s->inc = conv_expr(c, kv.v[i]);
        else if (ok && off > semi[0] && off < semi[1] && k == CXCursor_VarDecl) {
            kdc_stmt_t *d = conv_child_stmt(c, kv.v[i]); /* C++ condition variable */
            KDC_VEC_PUSH(pre, d);
        } else {
            kdc_stmt_t *d = conv_child_stmt(c, kv.v[i]);
            KDC_VEC_PUSH(pre, d);
        }
    }
    if (pre.n)
        s->init = compound_of(c, cur, pre.v, pre.n);
    free(pre.v);
    free(kv.v);
    return s;
}

static kdc_stmt_t *conv_stmt_at(pctx_t *c, CXCursor cur) {
    enum CXCursorKind k = clang_getCursorKind(cur);
    cursor_vec_t kv = {0};
    kdc_stmt_t *s = NULL;
    switch (k) {
    case CXCursor_CompoundStmt: {
        kv = children(cur);
        kdc_stmt_t **tmp = kv.n ? calloc(kv.n, sizeof *tmp) : NULL;
        for (size_t i = 0; i < kv.n; i++)
            tmp[i] = conv_child_stmt(c, kv.v[i]);
        s = compound_of(c, cur, tmp, kv.n);
        free(tmp);
        break;
    }
    case CXCursor_IfStmt:
        return conv_if(c, cur);
    case CXCursor_ForStmt:
        return conv_for(c, cur);
    case CXCursor_WhileStmt:
    case CXCursor_SwitchStmt: {
        kv = children(cur);
        s = new_stmt(c, k == CXCursor_WhileStmt ? KDC_S_WHILE : KDC_S_SWITCH, cur);
        if (kv.n >= 2) {
            s->body = conv_stmt(c, kv.v[kv.n - 1]);
            s->expr = conv_expr(c, kv.v[kv.n - 2]);
            if (kv.n > 2) {
                kdc_stmt_t **pre = calloc(kv.n - 2, sizeof *pre);
                for (size_t i = 0; i + 2 < kv.n; i++)
                    pre[i] = conv_child_stmt(c, kv.v[i]);
                s->init = compound_of(c, cur, pre, kv.n - 2);
                free(pre);
            }
        }
        break;
    }
    case CXCursor_DoStmt:
        kv = children(cur);
        s = new_stmt(c, KDC_S_DO, cur);
        if (kv.n == 2) {
            s->body = conv_stmt(c, kv.v[0]);
            s->expr = conv_expr(c, kv.v[1]);
        }
        break;
    case CXCursor_CXXForRangeStmt: {
        /* for (decl : range) body: evaluate the range (`decl = range[..]`: the
         * loop variable holds its elements), then loop an unknown number of times */
        kv = children(cur);
        s = new_stmt(c, KDC_S_FOR, cur);
        s->unknown_cond = 1;
        if (kv.n) {
            s->body = conv_stmt(c, kv.v[kv.n - 1]);
            KDC_VEC(kdc_stmt_t *) pre = {0};
            CXCursor var = clang_getNullCursor();
            for (size_t i = 0; i + 1 < kv.n; i++)
                if (clang_getCursorKind(kv.v[i]) == CXCursor_VarDecl && clang_Cursor_isNull(var))
                    var = kv.v[i];
            for (size_t i = 0; i + 1 < kv.n; i++) {
                enum CXCursorKind kk = clang_getCursorKind(kv.v[i]);
                if (is_expr_kind(kk)) {
                    kdc_expr_t *range = conv_expr(c, kv.v[i]);
                    if (!clang_Cursor_isNull(var)) {
                        /* the loop variable holds an element of the range: var = range[..] */
                        kdc_expr_t *elem = new_expr(c, KDC_E_INDEX, kv.v[i]);
                        kdc_expr_t *which = new_expr(c, KDC_E_OTHER, kv.v[i]);
                        kdc_expr_t *ek[2] = {range, which};
                        set_kids(c, elem, ek, 2);
                        kdc_expr_t *lhs = new_expr(c, KDC_E_REF, var);
                        lhs->name = intern_cx(c, clang_getCursorSpelling(var));
                        lhs->usr = intern_cx(c, clang_getCursorUSR(var));
                        lhs->type = type_spelling(c, var);
                        lhs->ref = KDC_REF_LOCAL;
                        kdc_expr_t *as = new_expr(c, KDC_E_BINARY, var);
                        as->op = KDC_OP_ASSIGN;
                        kdc_expr_t *ak[2] = {lhs, elem};
                        set_kids(c, as, ak, 2);
                        range = as;
                        var = clang_getNullCursor();
                    }
                    kdc_stmt_t *d = expr_stmt(c, range, kv.v[i]);
                    KDC_VEC_PUSH(pre, d);
                }
            }
            if (pre.n)
                s->init = compound_of(c, cur, pre.v, pre.n);
            free(pre.v);
        }
        break;
    }
    case CXCursor_CaseStmt:
    case CXCursor_DefaultStmt:
    case CXCursor_LabelStmt:
        kv = children(cur);
        s = new_stmt(c, k == CXCursor_CaseStmt      ? KDC_S_CASE
                        : k == CXCursor_DefaultStmt ? KDC_S_DEFAULT
                                                    : KDC_S_LABEL,
                     cur);
        if (kv.n)
            s->body = conv_child_stmt(c, kv.v[kv.n - 1]);
        if (k == CXCursor_LabelStmt)
            s->label = intern_cx(c, clang_getCursorSpelling(cur));
        break;
    case CXCursor_GotoStmt: {
        s = new_stmt(c, KDC_S_GOTO, cur);
        CXCursor l = clang_getCursorReferenced(cur);
        if (clang_Cursor_isNull(l)) {
            kv = children(cur);
            if (kv.n)
                s->label = intern_cx(c, clang_getCursorSpelling(kv.v[0]));
        } else {
            s->label = intern_cx(c, clang_getCursorSpelling(l));
        }
        break;
    }
    case CXCursor_IndirectGotoStmt:
        s = new_stmt(c, KDC_S_GOTO, cur); /* label NULL: any label */
        break;
    case CXCursor_BreakStmt:
        return new_stmt(c, KDC_S_BREAK, cur);
    case CXCursor_ContinueStmt:
        return new_stmt(c, KDC_S_CONTINUE, cur);
    case CXCursor_ReturnStmt:
        kv = children(cur);
        s = new_stmt(c, KDC_S_RETURN, cur);
        for (size_t i = 0; i < kv.n; i++)
            if (is_expr_kind(clang_getCursorKind(kv.v[i])))
                s->expr = conv_expr(c, kv.v[i]);
        break;
    case CXCursor_DeclStmt:
        return conv_decl_stmt(c, cur);
    case CXCursor_CXXTryStmt: {
        kv = children(cur);
        s = new_stmt(c, KDC_S_TRY, cur);
        if (kv.n) {
            s->body = conv_stmt(c, kv.v[0]);
            s->nkids = (unsigned)(kv.n - 1);
            s->kids = s->nkids ? kdc_alloc(c->p, s->nkids * sizeof *s->kids) : NULL;
            for (size_t i = 1; i < kv.n; i++) {
                cursor_vec_t hk = children(kv.v[i]); /* CXXCatchStmt: [decl], body */
                s->kids[i - 1] = hk.n ? conv_stmt(c, hk.v[hk.n - 1]) : new_stmt(c, KDC_S_NULL, kv.v[i]);
                free(hk.v);
            }
        }
        break;
    }
    case CXCursor_NullStmt:
        return new_stmt(c, KDC_S_NULL, cur);
    default:
        if (is_expr_kind(k))
            return expr_stmt(c, conv_expr(c, cur), cur);
        return new_stmt(c, KDC_S_NULL, cur);
    }
    free(kv.v);
    return s;
}

static int nesting_ok(pctx_t *c, CXCursor cur) {
    if (c->depth < KDC_MAX_NESTING)
        return 1;
    c->ndeep++;
    if (!c->too_deep) {
        kdc_loc_t l = loc_of(c, cur);
        char buf[4200];
        snprintf(buf, sizeof buf,
                 "%s:%u:%u: nesting deeper than %d expressions and statements; the deeper part "
                 "is not analysed",
                 l.file ? l.file : "<unknown>", l.line, l.col, KDC_MAX_NESTING);
        c->too_deep = kdc_intern(c->p, buf);
    }
    return 0;
}

static kdc_expr_t *conv_expr(pctx_t *c, CXCursor cur) {
    if (!nesting_ok(c, cur))
        return new_expr(c, KDC_E_OTHER, cur);
    c->depth++;
    kdc_expr_t *e = conv_expr_at(c, cur);
    c->depth--;
    return e;
}

static kdc_stmt_t *conv_stmt(pctx_t *c, CXCursor cur) {
    if (!nesting_ok(c, cur))
        return new_stmt(c, KDC_S_NULL, cur);
    c->depth++;
    kdc_stmt_t *s = conv_stmt_at(c, cur);
    c->depth--;
    return s;
}

/* ---------- functions and translation units ---------- */

/* Converts a body into f and adds f to the program. Nests: a lambda found
 * while converting a function becomes a function of its own. */
static void finish_function(pctx_t *c, kdc_func_t *f, CXCursor body) {
    kdc_func_t *outer = c->func;
    kdc_expr_t **outer_v = c->calls.v;
    size_t outer_n = c->calls.n, outer_cap = c->calls.cap;
    memset(&c->calls, 0, sizeof c->calls);
    c->func = f;
    f->body = conv_stmt(c, body);
    f->ncalls = (unsigned)c->calls.n;
    f->calls = f->ncalls ? kdc_alloc(c->p, f->ncalls * sizeof *f->calls) : NULL;
    for (unsigned i = 0; i < f->ncalls; i++)
        f->calls[i] = c->calls.v[i];
    free(c->calls.v);
    c->calls.v = outer_v;
    c->calls.n = outer_n;
    c->calls.cap = outer_cap;
    c->func = outer;
    kdc_program_add_func(c->p, f);
}

/* A C++ lambda's body is analysed as a function of its own (named after the
 * function it appears in); captured variables keep their identity, so handles
 * flow in through captures. The lambda expression itself is an unknown value. */
static void build_lambda(pctx_t *c, CXCursor lambda) {
    cursor_vec_t kv = children(lambda);
    CXCursor body = clang_getNullCursor();
    size_t nparams = 0;
    for (size_t i = 0; i < kv.n; i++) {
        enum CXCursorKind k = clang_getCursorKind(kv.v[i]);
        if (k == CXCursor_CompoundStmt)
            body = kv.v[i];
        else if (k == CXCursor_ParmDecl)
            nparams++;
    }
    if (clang_Cursor_isNull(body)) {
        free(kv.v);
        return;
    }
    kdc_func_t *f = kdc_alloc(c->p, sizeof *f);
    f->loc = loc_of(c, lambda);
    char buf[4096];
    snprintf(buf, sizeof buf, "%s@lambda:%s:%u:%u", c->func ? c->func->usr : "", f->loc.file,
             f->loc.line, f->loc.col);
    f->usr = kdc_intern(c->p, buf);
    snprintf(buf, sizeof buf, "%s::<lambda at line %u>", c->func ? c->func->name : "", f->loc.line);
    f->name = kdc_intern(c->p, buf);
    f->is_static = 1;
    f->tu = c->tu_index;
    f->nparams = (unsigned)nparams;
    if (nparams) {
        f->param_usrs = kdc_alloc(c->p, nparams * sizeof *f->param_usrs);
        f->param_names = kdc_alloc(c->p, nparams * sizeof *f->param_names);
        f->param_types = kdc_alloc(c->p, nparams * sizeof *f->param_types);
        for (size_t i = 0, k = 0; i < kv.n; i++)
            if (clang_getCursorKind(kv.v[i]) == CXCursor_ParmDecl) {
                f->param_usrs[k] = intern_cx(c, clang_getCursorUSR(kv.v[i]));
                f->param_names[k] = intern_cx(c, clang_getCursorSpelling(kv.v[i]));
                f->param_types[k] = type_spelling(c, kv.v[i]);
                k++;
            }
    }
    free(kv.v);
    finish_function(c, f, body);
}

static void build_function(pctx_t *c, CXCursor cur) {
    kdc_func_t *f = kdc_alloc(c->p, sizeof *f);
    f->usr = intern_cx(c, clang_getCursorUSR(cur));
    f->name = qualified_name(c, cur);
    f->loc = loc_of(c, cur);
    {
        CXFile file;
        unsigned line, col, off;
        clang_getExpansionLocation(clang_getCursorLocation(cur), &file, &line, &col, &off);
        f->loc.line = line;
        f->loc.col = col;
    }
    /* converted for an earlier unit of this process (a shared header's function): left out */
    size_t klen;
    char *key = c->omit ? seen_key(f, &klen) : NULL;
    const char *seen = key ? kdc_strset_add(&c->ps->keys, key, klen) : NULL;
    free(key);
    if (seen && kdc_strmap_get(&c->ps->seen, seen) == SEEN_WHOLE) {
        kdc_program_add_omitted(c->p, f->usr, f->loc.file, f->loc.line);
        return;
    }
    unsigned ndeep = c->ndeep;
    f->is_static = clang_getCursorLinkage(cur) != CXLinkage_External;
    f->tu = c->tu_index;
    enum CXCursorKind k = clang_getCursorKind(cur);
    if (k == CXCursor_CXXMethod || k == CXCursor_Constructor || k == CXCursor_Destructor)
        f->class_usr = intern_cx(c, clang_getCursorUSR(clang_getCursorSemanticParent(cur)));
    /* a function template's parameters are its ParmDecl children (libclang
     * gives arguments for functions only) */
    cursor_vec_t params = {0};
    int np = clang_Cursor_getNumArguments(cur);
    if (k == CXCursor_FunctionTemplate) {
        cursor_vec_t all = children(cur);
        for (size_t i = 0; i < all.n; i++)
            if (clang_getCursorKind(all.v[i]) == CXCursor_ParmDecl)
                KDC_VEC_PUSH(params, all.v[i]);
        free(all.v);
        np = (int)params.n;
    }
    if (np > 0) {
        f->nparams = (unsigned)np;
        f->param_usrs = kdc_alloc(c->p, (size_t)np * sizeof *f->param_usrs);
        f->param_names = kdc_alloc(c->p, (size_t)np * sizeof *f->param_names);
        f->param_types = kdc_alloc(c->p, (size_t)np * sizeof *f->param_types);
        for (int i = 0; i < np; i++) {
            CXCursor a = params.n ? params.v[i] : clang_Cursor_getArgument(cur, (unsigned)i);
            f->param_usrs[i] = intern_cx(c, clang_getCursorUSR(a));
            f->param_names[i] = intern_cx(c, clang_getCursorSpelling(a));
            f->param_types[i] = type_spelling(c, a);
        }
    }
    free(params.v);
    cursor_vec_t kv = children(cur);
    CXCursor body = clang_getNullCursor();
    for (size_t i = 0; i < kv.n; i++) {
        enum CXCursorKind bk = clang_getCursorKind(kv.v[i]);
        if (bk == CXCursor_CompoundStmt || bk == CXCursor_CXXTryStmt)
            body = kv.v[i];
    }
    free(kv.v);
    if (clang_Cursor_isNull(body))
        return;
    finish_function(c, f, body);
    /* converted partially (the nesting limit): every unit converts it again, and says so */
    if (seen)
        kdc_strmap_put(&c->ps->seen, seen, c->ndeep == ndeep ? SEEN_WHOLE : SEEN_PARTIAL);
}

static enum CXChildVisitResult top_visit(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    pctx_t *c = d;
    if (clang_Location_isInSystemHeader(clang_getCursorLocation(cur)))
        return CXChildVisit_Continue;
    enum CXCursorKind k = clang_getCursorKind(cur);
    if (is_func_kind(k)) {
        if (clang_isCursorDefinition(cur))
            build_function(c, cur);
        return CXChildVisit_Continue;
    }
    switch (k) {
    case CXCursor_Namespace:
    case CXCursor_ClassDecl:
    case CXCursor_StructDecl:
    case CXCursor_ClassTemplate:
    case CXCursor_LinkageSpec:
    case CXCursor_UnexposedDecl:
        return CXChildVisit_Recurse;
    case CXCursor_VarDecl: {
        c->func = NULL;
        kdc_stmt_t *s = conv_var_decl(c, cur);
        if (s && s->expr)
            kdc_program_add_global_init(c->p, s->expr->kids[0]->usr, s->expr->kids[1]);
        return CXChildVisit_Continue;
    }
    default:
        return CXChildVisit_Continue;
    }
}

/* "file:line:col: error: message", as clang_formatDiagnostic writes it, but the file named
 * by its real path (file_name): the name clang gives a file depends on which name of its
 * directory it met first, so a header is `./src/x.h` in one parse and `src/x.h` in another
 * (with a precompiled preamble: preamble.h). Reports show it relative to the working
 * directory (kdc_display_path), as they show findings. */
static const char *error_text(pctx_t *c, CXDiagnostic dg) {
    CXFile f = NULL;
    unsigned line = 0, col = 0;
    clang_getSpellingLocation(clang_getDiagnosticLocation(dg), &f, &line, &col, NULL);
    CXString text = clang_formatDiagnostic(dg, 0); /* "error: message" */
    if (!f)
        return intern_cx(c, text);
    const char *t = clang_getCString(text);
    char *s = kdc_xasprintf("%s:%u:%u: %s", file_name(c, f), line, col, t ? t : "");
    const char *r = kdc_intern(c->p, s);
    free(s);
    clang_disposeString(text);
    return r;
}

static const char *first_error(pctx_t *c, unsigned *nerrors) {
    unsigned n = clang_getNumDiagnostics(c->tu);
    const char *first = NULL;
    *nerrors = 0;
    for (unsigned i = 0; i < n; i++) {
        CXDiagnostic dg = clang_getDiagnostic(c->tu, i);
        enum CXDiagnosticSeverity sev = clang_getDiagnosticSeverity(dg);
        if (sev >= CXDiagnostic_Error) {
            (*nerrors)++;
            if (!first)
                first = error_text(c, dg);
        }
        clang_disposeDiagnostic(dg);
    }
    return first;
}

typedef struct inclusion_ctx {
    kdc_parse_file_fn fn;
    void *arg;
} inclusion_ctx_t;

static void visit_inclusion(CXFile f, CXSourceLocation *stack, unsigned depth, CXClientData d) {
    (void)stack;
    (void)depth;
    inclusion_ctx_t *ic = d;
    CXString real = clang_File_tryGetRealPathName(f), name = clang_getFileName(f);
    const char *r = clang_getCString(real), *n = clang_getCString(name);
    if (r && *r)
        ic->fn(ic->arg, r);
    /* and the name it was found by, when that is another: through a symbolic link (of the
     * file or of a directory above it) retargeted since, it is another file */
    if (n && *n && !(r && !strcmp(r, n)))
        ic->fn(ic->arg, n);
    clang_disposeString(name);
    clang_disposeString(real);
}

int kdc_parse_tu(kdc_parser_t *ps, kdc_program_t *p, const char *file, const char *const *argv,
                 int argc, char **err) {
    return kdc_parse_tu_files(ps, p, file, argv, argc, NULL, NULL, err);
}

static enum CXChildVisitResult collect_own_top(CXCursor cur, CXCursor parent, CXClientData d) {
    (void)parent;
    struct loaded_preamble *lp = d;
    if (!clang_Location_isInSystemHeader(clang_getCursorLocation(cur)))
        KDC_VEC_PUSH(lp->tops, cur);
    return CXChildVisit_Continue;
}

/* A loaded preamble's top-level cursors outside system headers, listed on first use: each
 * of its units visits those only, instead of asking where every declaration of the
 * system's headers is, again and again. */
static void own_tops(struct loaded_preamble *lp) {
    if (!lp->tops_known) {
        clang_visitChildren(clang_getTranslationUnitCursor(lp->tu), collect_own_top, lp);
        lp->tops_known = 1;
    }
}

/* Does every compile error of a unit parsed against a preamble lie after it: at a place in a
 * file that is none of pre_files and not in the directory of the precompiled header pch?
 * Then the error is the unit's own, and a parse without the preamble reports it as it is:
 * the preamble was built without an error from the same directives with the same
 * arguments, and errors name their files by real path (error_text). An error at no place,
 * or in a file whose real path is not known, may be the preamble's. */
static int errors_after_preamble(pctx_t *c, const char *const *pre_files, size_t npre_files,
                                 const char *pch) {
    const char *slash = strrchr(pch, '/');
    size_t dirlen = slash ? (size_t)(slash - pch) + 1 : 0;
    unsigned n = clang_getNumDiagnostics(c->tu);
    int after = 1;
    for (unsigned i = 0; i < n && after; i++) {
        CXDiagnostic dg = clang_getDiagnostic(c->tu, i);
        if (clang_getDiagnosticSeverity(dg) >= CXDiagnostic_Error) {
            CXFile f = NULL;
            clang_getSpellingLocation(clang_getDiagnosticLocation(dg), &f, NULL, NULL, NULL);
            CXString name = f ? clang_getFileName(f) : (CXString){0};
            const char *raw = f ? clang_getCString(name) : NULL;
            char *real = raw ? realpath(raw, NULL) : NULL;
            after = real && (!dirlen || strncmp(real, pch, dirlen));
            for (size_t k = 0; after && k < npre_files; k++)
                after = strcmp(real, pre_files[k]) != 0 && strcmp(raw, pre_files[k]) != 0;
            free(real);
            if (f)
                clang_disposeString(name);
        }
        clang_disposeDiagnostic(dg);
    }
    return after;
}

/* Parses and converts one unit: 0, -1 (*err set), or 1 when it was parsed against a preamble
 * (pre, one this parser keeps loaded) and has a compile error that may be the preamble's
 * (nothing converted, *err unset). */
static int parse_tu(kdc_parser_t *ps, kdc_program_t *p, const char *file, const char *const *argv,
                    int argc, struct CXUnsavedFile *unsaved, unsigned nunsaved,
                    struct loaded_preamble *pre, const char *const *pre_files, size_t npre_files,
                    kdc_parse_file_fn file_fn, void *arg, char **err) {
    pctx_t c = {0};
    c.p = p;
    c.ps = ps;
    kdc_strmap_init(&c.file_names);
    kdc_strmap_init(&c.noreturn);
    kdc_strmap_init(&c.contracts);
    /* libclang applies -working-directory= to the whole process: restore ours. */
    int cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    kdc_openguard_begin(); /* no FIFO, device or socket is read (openguard.h) */
    enum CXErrorCode ec = clang_parseTranslationUnit2(
        pre ? ps->index_local : ps->index, file, argv, argc, unsaved, nunsaved,
        CXTranslationUnit_KeepGoing | CXTranslationUnit_IgnoreNonErrorsFromIncludedFiles, &c.tu);
    char *refused = kdc_openguard_end();
    if (cwd_fd >= 0) {
        if (fchdir(cwd_fd) != 0) {
            /* nothing better to do: paths were made absolute before parsing */
        }
        close(cwd_fd);
    }
    int rc = 0;
    kdc_tu_info_t info = {0};
    if (refused) {
        *err = kdc_xasprintf("%s: not analysed", refused);
        free(refused);
        rc = -1;
    } else if (ec != CXError_Success || !c.tu) {
        *err = kdc_xasprintf("libclang could not parse this file (error %d)", (int)ec);
        rc = -1;
    } else {
        info.first_error = first_error(&c, &info.nerrors);
        if (pre && info.nerrors && !errors_after_preamble(&c, pre_files, npre_files, pre->pch))
            rc = 1;
    }
    if (rc) {
        if (c.tu)
            clang_disposeTranslationUnit(c.tu);
        kdc_strmap_free(&c.file_names);
        kdc_strmap_free(&c.noreturn);
        kdc_strmap_free(&c.contracts);
        free(c.spelled);
        return rc;
    }
    char *real = realpath(file, NULL);
    info.file = kdc_intern(p, real ? real : file);
    free(real);
    /* A unit with compile errors is never cached, so it is parsed on every run, after other
     * units or none: converted whole, its model is the same whatever this process parsed
     * before (the analysis cache keys on the models' bytes). */
    c.omit = ps->omit && info.nerrors == 0;
    c.tu_index = (int)kdc_program_ntus(p); /* the index kdc_program_add_tu gives it below */
    if (pre) {
        /* the preamble's declarations first, where the unit has them, from the precompiled
         * header this process loaded once (kdc_parse_tu_contents) */
        pctx_t cp = {0};
        cp.p = p;
        cp.ps = ps;
        cp.tu = pre->tu;
        cp.tu_index = c.tu_index;
        cp.omit = c.omit;
        kdc_strmap_init(&cp.file_names);
        kdc_strmap_init(&cp.noreturn);
        kdc_strmap_init(&cp.contracts);
        own_tops(pre);
        for (size_t i = 0; i < pre->tops.n; i++)
            if (top_visit(pre->tops.v[i], clang_getTranslationUnitCursor(pre->tu), &cp) ==
                CXChildVisit_Recurse)
                clang_visitChildren(pre->tops.v[i], top_visit, &cp);
        c.too_deep = cp.too_deep;
        c.ndeep = cp.ndeep;
        free(cp.calls.v);
        kdc_strmap_free(&cp.file_names);
        kdc_strmap_free(&cp.noreturn);
        kdc_strmap_free(&cp.contracts);
        free(cp.spelled);
    }
    clang_visitChildren(clang_getTranslationUnitCursor(c.tu), top_visit, &c);
    info.too_deep = c.too_deep;
    info.incomplete = info.nerrors > 0 || info.too_deep;
    kdc_program_add_tu(p, &info);
    if (file_fn) {
        inclusion_ctx_t ic = {file_fn, arg};
        clang_getInclusions(c.tu, visit_inclusion, &ic);
    }
    free(c.calls.v);
    kdc_strmap_free(&c.file_names);
    kdc_strmap_free(&c.noreturn);
    kdc_strmap_free(&c.contracts);
    free(c.spelled);
    clang_disposeTranslationUnit(c.tu);
    return 0;
}

int kdc_parse_tu_files(kdc_parser_t *ps, kdc_program_t *p, const char *file,
                       const char *const *argv, int argc, kdc_parse_file_fn file_fn, void *arg,
                       char **err) {
    return parse_tu(ps, p, file, argv, argc, NULL, 0, NULL, NULL, 0, file_fn, arg, err);
}

/* The precompiled header at pch as a translation unit of this process, loaded on first use;
 * NULL when it cannot be read. */
static struct loaded_preamble *loaded_preamble(kdc_parser_t *ps, const char *pch) {
    unsigned i = 0;
    for (unsigned k = 0; k < KDC_PREAMBLES_LOADED; k++) {
        if (ps->loaded[k].pch && !strcmp(ps->loaded[k].pch, pch)) {
            ps->loaded[k].used = ++ps->uses;
            return &ps->loaded[k];
        }
        if (ps->loaded[k].used < ps->loaded[i].used)
            i = k; /* the least recently used (or a free one) */
    }
    if (ps->loaded[i].tu) {
        clang_disposeTranslationUnit(ps->loaded[i].tu);
        free(ps->loaded[i].pch);
        free(ps->loaded[i].tops.v);
        memset(&ps->loaded[i], 0, sizeof ps->loaded[i]);
    }
    CXTranslationUnit tu = NULL;
    kdc_openguard_begin();
    enum CXErrorCode ec = clang_createTranslationUnit2(ps->index, pch, &tu);
    char *refused = kdc_openguard_end();
    if (refused || ec != CXError_Success || !tu) {
        free(refused);
        if (tu)
            clang_disposeTranslationUnit(tu);
        return NULL;
    }
    ps->loaded[i].pch = kdc_xstrdup(pch);
    ps->loaded[i].tu = tu;
    ps->loaded[i].used = ++ps->uses;
    return &ps->loaded[i];
}

int kdc_parse_tu_contents(kdc_parser_t *ps, kdc_program_t *p, const char *file,
                          const char *const *argv, int argc, const char *contents, size_t len,
                          const char *pch, const char *const *pre_files, size_t npre_files,
                          kdc_parse_file_fn file_fn, void *arg, char **err) {
    struct loaded_preamble *pre = loaded_preamble(ps, pch);
    if (!pre)
        return 1;
    if (!ps->index_local)
        ps->index_local = clang_createIndex(1, 0);
    struct CXUnsavedFile u = {file, contents, (unsigned long)len};
    return parse_tu(ps, p, file, argv, argc, &u, 1, pre, pre_files, npre_files, file_fn, arg, err);
}

/* path with "." and "dir/.." taken out textually, as clang's writer of precompiled headers
 * records the files it read (malloc'd). */
static char *lexically_clean(const char *path) {
    size_t n = strlen(path);
    char *out = malloc(n + 2);
    if (!out)
        kdc_oom();
    size_t o = 0;
    const char *p = path;
    while (*p) {
        while (*p == '/')
            p++;
        const char *e = strchr(p, '/');
        size_t len = e ? (size_t)(e - p) : strlen(p);
        if (len == 0)
            break;
        if (len == 1 && p[0] == '.') {
            /* nothing */
        } else if (len == 2 && p[0] == '.' && p[1] == '.') {
            while (o > 0 && out[o - 1] != '/')
                o--;
            if (o > 0)
                o--;
        } else {
            out[o++] = '/';
            memcpy(out + o, p, len);
            o += len;
        }
        p += len;
    }
    if (o == 0)
        out[o++] = '/';
    out[o] = '\0';
    return out;
}

/* The first file a precompiled header would record under another file's name, or none: a
 * header found through a directory whose ".." a textual clean-up resolves elsewhere than the
 * file system does (a symbolic link before the ".."; libclang's own GCC directories,
 * "/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12", recorded as
 * "/include/c++/12"). A unit parsed against such a header would name its later headers by
 * paths that name nothing. */
typedef struct relocated {
    char *name; /* malloc'd, or NULL */
} relocated_t;

static void find_relocated(CXFile f, CXSourceLocation *stack, unsigned depth, CXClientData d) {
    (void)stack;
    (void)depth;
    relocated_t *rl = d;
    if (rl->name)
        return;
    CXString name = clang_getFileName(f);
    const char *n = clang_getCString(name);
    if (n && n[0] == '/') {
        char *clean = lexically_clean(n);
        struct stat a, b;
        if (strcmp(clean, n) && (stat(n, &a) != 0 || stat(clean, &b) != 0 || a.st_dev != b.st_dev ||
                                 a.st_ino != b.st_ino))
            rl->name = kdc_xstrdup(n);
        free(clean);
    }
    clang_disposeString(name);
}

int kdc_parse_save_pch(kdc_parser_t *ps, const char *header, const char *const *argv, int argc,
                       const char *pch, kdc_parse_file_fn file_fn, void *arg, char **err) {
    CXTranslationUnit tu = NULL;
    int cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    kdc_openguard_begin();
    enum CXErrorCode ec = clang_parseTranslationUnit2(
        ps->index, header, argv, argc, NULL, 0,
        CXTranslationUnit_KeepGoing | CXTranslationUnit_IgnoreNonErrorsFromIncludedFiles |
            CXTranslationUnit_ForSerialization,
        &tu);
    char *refused = kdc_openguard_end();
    if (cwd_fd >= 0) {
        if (fchdir(cwd_fd) != 0) {
            /* as parse_tu */
        }
        close(cwd_fd);
    }
    int rc = 0;
    if (refused) {
        *err = kdc_xasprintf("%s: not read", refused);
        free(refused);
        rc = -1;
    } else if (ec != CXError_Success || !tu) {
        *err = kdc_xasprintf("libclang could not parse it (error %d)", (int)ec);
        rc = -1;
    } else {
        pctx_t c = {0};
        c.tu = tu;
        c.p = kdc_program_new();
        if (!c.p)
            kdc_oom();
        kdc_strmap_init(&c.file_names); /* error_text's */
        unsigned nerrors;
        const char *first = first_error(&c, &nerrors);
        relocated_t rl = {NULL};
        if (!nerrors)
            clang_getInclusions(tu, find_relocated, &rl);
        if (nerrors) {
            *err = kdc_xasprintf("%u compile error%s, the first: %s", nerrors,
                                 nerrors == 1 ? "" : "s", first);
            rc = -1;
        } else if (rl.name) {
            *err = kdc_xasprintf("%s: found through a path whose \"..\" a precompiled header "
                                 "would record as another",
                                 rl.name);
            free(rl.name);
            rc = -1;
        } else {
            int s = clang_saveTranslationUnit(tu, pch, CXSaveTranslationUnit_None);
            if (s != CXSaveError_None) {
                *err = kdc_xasprintf("libclang could not save it (error %d)", s);
                rc = -1;
            } else if (file_fn) {
                inclusion_ctx_t ic = {file_fn, arg};
                clang_getInclusions(tu, visit_inclusion, &ic);
            }
        }
        kdc_strmap_free(&c.file_names);
        kdc_program_free(c.p);
    }
    if (tu)
        clang_disposeTranslationUnit(tu);
    return rc;
}
