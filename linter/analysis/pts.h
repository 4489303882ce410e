/*
 * Handle tracking: where can a configuration, client handle, topic handle,
 * string or function pointer value come from?
 *
 * A flow-insensitive, field-based (struct type + field) inclusion analysis
 * over the whole program (every translation unit of the run): values flow
 * through assignments, initialisers, call arguments into parameters (also
 * across files), return values, out-parameters (`*out = rd_kafka_new(..)`)
 * and C++ constructors of library types (std::string, smart pointers).
 * Allocation sites are the calls that create objects: rd_kafka_conf_new(),
 * rd_kafka_new(), rd_kafka_topic_new() and their C++ counterparts.
 *
 * rd_kafka_conf_dup() creates an object of its own (facts.h: a copy keeps the
 * settings of the configuration it copies). C++ references are followed:
 * `Conf &make() { return *conf; }`, `&make()`, `Conf *&out` parameters.
 *
 * Factories (functions that create such objects, or call a factory, and are
 * reached by several chains of calls, e.g. `new_producer(brokers, acks)`, or
 * `test_create_consumer()` calling `test_create_handle()`) are analysed once
 * per chain of calls from code that is not a factory (a call string), so each
 * caller gets objects of its own; their locals and parameters are
 * context-qualified ("#<call>#<call>.."). Everything else is
 * context-insensitive.
 */
#ifndef KDC_PTS_H
#define KDC_PTS_H

#include "model.h"
#include "util.h"

typedef enum {
    KDC_OBJ_UNKNOWN, /* a value from outside the analysed code */
    KDC_OBJ_CONF,    /* site: the conf-creating call */
    KDC_OBJ_CLIENT,  /* site: rd_kafka_new() / Producer::create() / ... */
    KDC_OBJ_TOPIC,   /* site: rd_kafka_topic_new() / Topic::create() */
    KDC_OBJ_STRING,  /* str: the literal's contents */
    KDC_OBJ_FUNC     /* str: the function's USR */
} kdc_obj_kind_t;

typedef struct kdc_obj {
    kdc_obj_kind_t kind;
    const kdc_func_t *func;  /* function containing the site */
    const kdc_expr_t *site;  /* creating call (CONF/CLIENT/TOPIC) */
    const char *str;
    const char *ctx;          /* the factory instance it belongs to, or NULL */
    const kdc_expr_t *via;    /* ... that is, the call of the factory, or NULL */
} kdc_obj_t;

typedef struct kdc_pts kdc_pts_t;

kdc_pts_t *kdc_pts_build(kdc_program_t *p);
void kdc_pts_free(kdc_pts_t *t);

size_t kdc_pts_nobjs(const kdc_pts_t *t);
const kdc_obj_t *kdc_pts_obj(const kdc_pts_t *t, size_t i);

/* Objects e (evaluated in f, every instance of f) may denote; `out` is
 * initialised here and owned by the caller. */
void kdc_pts_expr(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *e, kdc_bits_t *out);

/* The same in one instance of a factory (ctx from an object or from
 * kdc_pts_context_of_call); ctx NULL means every instance. */
void kdc_pts_expr_ctx(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                      const kdc_expr_t *e, kdc_bits_t *out);

/* The same at a call of f (NULL: anywhere), flow-sensitively for a local
 * variable: only the assignments of it that reach the call count (a variable
 * reused for a second configuration denotes the one it holds there). */
void kdc_pts_expr_at(const kdc_pts_t *t, const kdc_func_t *f, const char *ctx,
                     const kdc_expr_t *call, const kdc_expr_t *e, kdc_bits_t *out);

/* The instance of f that `call` (a call of f, evaluated in the caller's
 * instance caller_ctx; NULL when the caller is not a factory) selects, or
 * NULL when f is not analysed per call site or the call does not select one
 * from there. */
const char *kdc_pts_context_of_call(const kdc_pts_t *t, const kdc_func_t *f,
                                    const char *caller_ctx, const kdc_expr_t *call);

/* Argument idx of the call that selects the factory instance ctx, with the
 * function holding that call and its own instance; NULL when ctx is none. */
const kdc_expr_t *kdc_pts_instance_arg(const kdc_pts_t *t, const char *ctx, unsigned idx,
                                       const kdc_func_t **caller, const char **caller_ctx);

/* The call that selects the factory instance ctx, with the function holding
 * it and that function's own instance (NULL when it has one); NULL when ctx
 * is none. */
const kdc_expr_t *kdc_pts_instance_call(const kdc_pts_t *t, const char *ctx,
                                        const kdc_func_t **caller, const char **caller_ctx);

/* Is f analysed per chain of calls (a factory)? */
int kdc_pts_is_factory(const kdc_pts_t *t, const kdc_func_t *f);

/* Functions a call may reach: the direct callee, or function pointers' targets. */
typedef KDC_VEC(kdc_func_t *) kdc_funcvec_t;
void kdc_pts_callees(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *call,
                     kdc_funcvec_t *out);

/* Number of call sites in the program that may reach f. */
unsigned kdc_pts_ncallers(const kdc_pts_t *t, const kdc_func_t *f);

/* Key for the storage an lvalue names (variable, field, *ptr), or NULL. */
const char *kdc_pts_lvalue_key(kdc_program_t *p, const kdc_expr_t *e);

#endif
