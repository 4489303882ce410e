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
 * Factories (functions that create such objects and are called from several
 * places, e.g. `new_producer(brokers, acks)`) are analysed once per call site,
 * so each call gets objects of its own; their locals and parameters are
 * context-qualified ("#<site>"). Everything else is context-insensitive.
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

/* The instance of f that `call` (a call of f) selects, or NULL when f is not
 * analysed per call site. */
const char *kdc_pts_context_of_call(const kdc_pts_t *t, const kdc_func_t *f,
                                    const kdc_expr_t *call);

/* Functions a call may reach: the direct callee, or function pointers' targets. */
typedef KDC_VEC(kdc_func_t *) kdc_funcvec_t;
void kdc_pts_callees(const kdc_pts_t *t, const kdc_func_t *f, const kdc_expr_t *call,
                     kdc_funcvec_t *out);

/* Number of call sites in the program that may reach f. */
unsigned kdc_pts_ncallers(const kdc_pts_t *t, const kdc_func_t *f);

/* Key for the storage an lvalue names (variable, field, *ptr), or NULL. */
const char *kdc_pts_lvalue_key(kdc_program_t *p, const kdc_expr_t *e);

#endif
