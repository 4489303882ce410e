/*
 * The owned per-function model kdc-lint analyses.
 *
 * parse.c turns a libclang translation unit into these plain structs; nothing
 * from libclang survives past that step. Every string is interned in the
 * program (compare pointers, not contents). Identities across translation
 * units are clang USRs, which are stable for the same declaration everywhere.
 */
#ifndef KDC_MODEL_H
#define KDC_MODEL_H

#include <stddef.h>
#include <stdint.h>

typedef struct kdc_loc {
    const char *file; /* interned path as the translation unit names it */
    unsigned line, col, end_line, end_col;
} kdc_loc_t;

typedef enum {
    KDC_E_OTHER,  /* anything else: its subexpressions are kids */
    KDC_E_CALL,   /* call: kids = arguments; recv = C++ object; callee = kids of callee_expr */
    KDC_E_REF,    /* reference to a declaration (variable, parameter, function, enumerator) */
    KDC_E_MEMBER, /* a.f / a->f / implicit this->f: kids[0] = base (may be absent) */
    KDC_E_STRING, /* string literal: str */
    KDC_E_INT,    /* integer constant: ival */
    KDC_E_NULL,   /* NULL / nullptr / __null */
    KDC_E_UNARY,  /* op, kids[0] */
    KDC_E_BINARY, /* op, kids[0], kids[1]; assignments too */
    KDC_E_COND,   /* c ? a : b: kids[0..2] */
    KDC_E_INDEX,  /* a[i]: kids[0], kids[1] */
    KDC_E_THIS,   /* C++ this */
    KDC_E_INIT    /* {..} initializer: kids, and fields[i] = the struct field kid i initialises */
} kdc_expr_kind_t;

typedef enum {
    KDC_OP_NONE,
    KDC_OP_UNKNOWN,
    /* unary */
    KDC_OP_NOT, KDC_OP_NEG, KDC_OP_PLUS, KDC_OP_BITNOT, KDC_OP_DEREF, KDC_OP_ADDR,
    KDC_OP_PREINC, KDC_OP_PREDEC, KDC_OP_POSTINC, KDC_OP_POSTDEC,
    /* binary */
    KDC_OP_ASSIGN, KDC_OP_COMPOUND_ASSIGN,
    KDC_OP_EQ, KDC_OP_NE, KDC_OP_LT, KDC_OP_GT, KDC_OP_LE, KDC_OP_GE,
    KDC_OP_LAND, KDC_OP_LOR, KDC_OP_COMMA,
    KDC_OP_ADD, KDC_OP_SUB, KDC_OP_MUL, KDC_OP_DIV, KDC_OP_MOD,
    KDC_OP_AND, KDC_OP_OR, KDC_OP_XOR, KDC_OP_SHL, KDC_OP_SHR
} kdc_op_t;

typedef enum {
    KDC_REF_OTHER,
    KDC_REF_LOCAL,
    KDC_REF_PARAM,
    KDC_REF_GLOBAL,
    KDC_REF_FUNCTION,
    KDC_REF_ENUMERATOR
} kdc_ref_kind_t;

typedef struct kdc_expr kdc_expr_t;
struct kdc_expr {              /* fields ordered by size: hundreds of thousands in a large program */
    const char *name;         /* CALL: qualified callee name ("rd_kafka_commit",
                                 "RdKafka::KafkaConsumer::commitSync"); REF: spelling;
                                 MEMBER: field name */
    const char *usr;          /* CALL: callee USR; REF: declaration USR; MEMBER: field USR */
    const char *str;          /* STRING: contents; CALL: callee type spelling */
    const char *type;         /* spelling of the expression's type (may be NULL) */
    kdc_expr_t *recv;         /* CALL: C++ object expression (NULL when none) */
    kdc_expr_t *callee_expr;  /* CALL: callee expression when the call is indirect */
    kdc_expr_t **kids;
    const char **fields;      /* INIT of a struct: field USR per kid (NULL entries: unknown) */
    const void *api_memo;     /* CALL: kdc_api_lookup's answer (analysis/api.c), valid while
                                 api_memo_gen is its current generation: a model is not
                                 changed once built */
    long long ival;
    kdc_loc_t loc;
    int param_index;          /* REF to a parameter: its index */
    int call_id;              /* CALL: index in kdc_func_t.calls */
    unsigned nkids;
    unsigned api_memo_gen; /* 0: no answer kept */
    kdc_expr_kind_t kind : 8;
    kdc_op_t op : 8;
    kdc_ref_kind_t ref : 8;
    unsigned has_ival : 1;    /* ival holds the constant value */
    unsigned is_method : 1;   /* CALL: callee is a C++ member function */
    unsigned is_ctor : 1;     /* CALL: callee is a C++ constructor */
    unsigned arrow : 1;       /* MEMBER: a->f */
    unsigned callee_system : 1; /* CALL: callee declared in a system header */
    unsigned callee_noreturn : 1; /* CALL: callee declared never to return (GNU noreturn,
                                     C11 _Noreturn, C++ [[noreturn]]) */
};

typedef enum {
    KDC_S_COMPOUND, KDC_S_EXPR, KDC_S_IF, KDC_S_WHILE, KDC_S_DO, KDC_S_FOR, KDC_S_SWITCH,
    KDC_S_CASE, KDC_S_DEFAULT, KDC_S_BREAK, KDC_S_CONTINUE, KDC_S_RETURN, KDC_S_GOTO,
    KDC_S_LABEL, KDC_S_TRY, KDC_S_NULL
} kdc_stmt_kind_t;

typedef struct kdc_stmt kdc_stmt_t;
struct kdc_stmt {
    kdc_loc_t loc;
    kdc_expr_t *expr;   /* EXPR: the expression; IF/WHILE/DO/FOR/SWITCH: condition (NULL = none);
                           RETURN: value (may be NULL) */
    kdc_stmt_t *init;   /* FOR/IF/SWITCH: init statement; FOR-range: range evaluation */
    kdc_expr_t *inc;    /* FOR: increment */
    kdc_stmt_t *body;   /* loops, SWITCH, CASE, DEFAULT, LABEL, IF then-branch, TRY body */
    kdc_stmt_t *els;    /* IF else-branch */
    kdc_stmt_t **kids;  /* COMPOUND statements; TRY handlers */
    const char *label;  /* GOTO/LABEL: label name (interned) */
    unsigned nkids;
    kdc_stmt_kind_t kind : 8;
    unsigned unknown_cond : 1; /* FOR: the loop may end at any iteration (range-for,
                                  or a header hidden in a macro) */
};

typedef struct kdc_func kdc_func_t;
struct kdc_func {
    const char *usr;
    const char *id;         /* unique in the program: the USR, or USR@file:line for a second
                               definition of the same symbol in another program of the run */
    kdc_func_t *next_def;   /* other definitions with the same USR */
    const char *name;       /* qualified name */
    const char *class_usr;  /* C++ method: its class USR; else NULL */
    kdc_loc_t loc;
    unsigned is_static : 1; /* internal linkage */
    unsigned nparams;
    const char **param_usrs;
    const char **param_names;
    const char **param_types;
    kdc_stmt_t *body;
    kdc_expr_t **calls;     /* every call in the body, in source order */
    unsigned ncalls;
    int tu;                 /* index of the translation unit that defined it */
    unsigned index;         /* position in the program's function list */
    void *cfg;              /* kdc_cfg_t, built by cfg.c */
};

/* One global variable initialised at file scope (value flows matter for handles). */
typedef struct kdc_global_init {
    const char *usr;
    kdc_expr_t *init;
} kdc_global_init_t;

typedef struct kdc_tu_info {
    const char *file;
    unsigned incomplete : 1;   /* compile errors or too deep: analysed partially */
    unsigned nerrors;
    const char *first_error;   /* "file:line:col: message" of the first error */
    const char *too_deep;      /* "file:line:col: message" where the model stopped nesting */
} kdc_tu_info_t;

/* A function definition a unit's parse left out because an earlier unit parsed
 * by the same process had it (kdc_parser_omit_seen): a shared header's inline
 * function is converted once per process, not once per unit. Its identity is
 * the one kdc_program_add_func compares definitions by. */
typedef struct kdc_omitted {
    const char *usr;
    const char *file;
    unsigned line;
} kdc_omitted_t;

typedef struct kdc_program kdc_program_t;

kdc_program_t *kdc_program_new(void);
void kdc_program_free(kdc_program_t *p);

/* Arena allocation; memory lives as long as the program. */
void *kdc_alloc(kdc_program_t *p, size_t n);
const char *kdc_intern(kdc_program_t *p, const char *s);
const char *kdc_intern_n(kdc_program_t *p, const char *s, size_t n);

/* Adds a function; the same definition seen again (a header included by two
 * units) is ignored and 0 returned. Different definitions of one symbol (two
 * programs analysed in one run, each with its own main) are all kept. */
int kdc_program_add_func(kdc_program_t *p, kdc_func_t *f);
void kdc_program_add_global_init(kdc_program_t *p, const char *usr, kdc_expr_t *init);
int kdc_program_add_tu(kdc_program_t *p, const kdc_tu_info_t *tu);
void kdc_program_add_omitted(kdc_program_t *p, const char *usr, const char *file, unsigned line);
/* What a callee means to the durability contract as its declaration says
 * (libkdc's KDC_CONTRACT, kdc/export.h): "MEANING [ARG=POS]...", by callee name
 * (interned strings; the first declaration met wins). */
void kdc_program_add_contract(kdc_program_t *p, const char *name, const char *contract);
size_t kdc_program_ncontracts(const kdc_program_t *p);
void kdc_program_contract(const kdc_program_t *p, size_t i, const char **name,
                          const char **contract);
size_t kdc_program_nomitted(const kdc_program_t *p);
const kdc_omitted_t *kdc_program_omitted(const kdc_program_t *p, size_t i);
/* Is this definition (USR, file, line) in the program? */
int kdc_program_has_def(const kdc_program_t *p, const char *usr, const char *file,
                        unsigned line);

size_t kdc_program_nfuncs(const kdc_program_t *p);
kdc_func_t *kdc_program_func(const kdc_program_t *p, size_t i);
/* By id (or USR: its first definition). */
kdc_func_t *kdc_program_find_func(const kdc_program_t *p, const char *id);
/* The definition a call from translation unit `tu` reaches: the one in that
 * unit if there is one, else the first. */
kdc_func_t *kdc_program_find_callee(const kdc_program_t *p, const char *usr, int tu);
size_t kdc_program_nglobal_inits(const kdc_program_t *p);
const kdc_global_init_t *kdc_program_global_init(const kdc_program_t *p, size_t i);
size_t kdc_program_ntus(const kdc_program_t *p);
const kdc_tu_info_t *kdc_program_tu(const kdc_program_t *p, size_t i);

/* The files a program analyses: every translation unit's main file, then the
 * file of each function definition (once per run of definitions in one file),
 * in program order; what configurations are looked up for (filter.h). The
 * strings are the program's; the array is malloc'd (free v). The cache keeps
 * this list with a stored analysis, so a run that takes it needs no model. */
typedef struct kdc_files {
    const char **v;
    size_t n;
} kdc_files_t;
void kdc_program_files(const kdc_program_t *prog, kdc_files_t *out);

/* Expression helpers used by facts and rules. */
/* e with C++ copies dropped as well: an unnamed construction of e's own type
 * from one value (the copy or move a by-value argument makes, elided or not). */
const kdc_expr_t *kdc_expr_strip_copy(const kdc_expr_t *e);
const kdc_expr_t *kdc_expr_strip(const kdc_expr_t *e); /* through no-op wrappers */
/* The lvalue an assignment, compound assignment or ++/-- writes; NULL for any other expression. */
const kdc_expr_t *kdc_expr_assigned(const kdc_expr_t *e);
int kdc_expr_is_null(const kdc_expr_t *e);             /* NULL, nullptr, 0 */
const kdc_expr_t *kdc_call_arg(const kdc_expr_t *call, unsigned i); /* NULL if absent */
/* Root name of an lvalue-ish expression: variable name, or the last field name. */
const char *kdc_expr_root_name(const kdc_expr_t *e);
/* Visits e and every subexpression (pre-order); stops early when fn returns non-zero. */
int kdc_expr_walk(const kdc_expr_t *e, int (*fn)(const kdc_expr_t *, void *), void *arg);

/* Visits every statement of a function body (pre-order). */
void kdc_stmt_walk(const kdc_stmt_t *s, void (*fn)(const kdc_stmt_t *, void *), void *arg);

/* Visits every expression of a function body and all their subexpressions. */
void kdc_func_walk_exprs(const kdc_func_t *f, int (*fn)(const kdc_expr_t *, void *), void *arg);

#endif
