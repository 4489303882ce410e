/* Threads and repetition, shared by the rules that ask "does this run
 * concurrently?" (out-of-order-offset-store) and "does this run on a thread
 * of its own?" (delivery-reports-not-served): thread start routines, calls
 * made in a loop, functions that run more than once, and what a function
 * reaches. */
#ifndef KDC_RULES_THREADS_H
#define KDC_RULES_THREADS_H

#include "../rule.h"

/* A thread start routine: a function (or C++ lambda) given to
 * pthread_create, thrd_create, std::thread, std::jthread, std::async, or a
 * std::vector<std::thread> emplace_back. */
typedef struct kdc_thread_entry {
    const kdc_func_t *func;
    unsigned nsites;        /* thread-creating calls that start it */
    int pool;               /* started at several places or repeatedly: a worker pool */
    const kdc_expr_t *site; /* the first thread-creating call */
    const kdc_expr_t *sites[8]; /* the first eight thread-creating calls */
    const kdc_func_t *site_funcs[8]; /* ... and the functions making them */
} kdc_thread_entry_t;

typedef KDC_VEC(kdc_thread_entry_t) kdc_thread_entry_vec_t;
typedef KDC_VEC(const kdc_func_t *) kdc_func_vec_t;

/* Every thread start routine of the program, each once. Free out->v. */
void kdc_thread_entries(kdc_rule_ctx_t *ctx, kdc_thread_entry_vec_t *out);

/* Appends entry and every function reachable from it (direct calls and
 * function pointers), each once. */
void kdc_func_closure(kdc_rule_ctx_t *ctx, const kdc_func_t *entry, kdc_func_vec_t *out);

/* The function argument of a thread-creating call (pthread_create,
 * thrd_create, std::thread, std::jthread, std::async, emplace_back on a vector
 * of threads), or NULL. */
const kdc_expr_t *kdc_thread_fn_arg(const kdc_expr_t *call);

/* The C++ lambda whose body starts where e is, or NULL. */
const kdc_func_t *kdc_lambda_at(kdc_rule_ctx_t *ctx, const kdc_expr_t *e);

/* Is f in v? */
int kdc_func_vec_has(const kdc_func_vec_t *v, const kdc_func_t *f);

#endif
