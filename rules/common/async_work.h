/* Work that finishes later than the code that started it, and the offsets it
 * stores (out-of-order-offset-store, offset-store-after-revoke): thread start
 * routines (pthread_create, thrd_create, std::thread, std::jthread,
 * std::async, emplace_back on a std::vector<std::thread>), callbacks handed
 * to an asynchronous API of code outside the program (a timer, a work queue,
 * a request's completion), and delivery-report callbacks; each with the
 * functions it reaches, and the stores and commits there that pick a
 * message's own position. */
#ifndef KDC_RULES_ASYNC_WORK_H
#define KDC_RULES_ASYNC_WORK_H

#include "../rule.h"

typedef enum {
    KDC_ASYNC_THREAD,   /* a thread start routine */
    KDC_ASYNC_CALLBACK, /* a callback given to an asynchronous API outside the program */
    KDC_ASYNC_DR        /* a delivery-report callback */
} kdc_async_kind_t;

#define KDC_ASYNC_SITES 8

typedef struct kdc_async_entry {
    const kdc_func_t *func;   /* the routine or callback */
    const kdc_func_t *caller; /* the function that starts or registers it (NULL: DR) */
    const kdc_expr_t *site;   /* the starting or registering call (NULL: C++ dr_cb) */
    unsigned nsites;
    /* every starting call and its function, the first KDC_ASYNC_SITES of nsites */
    const kdc_func_t *callers[KDC_ASYNC_SITES];
    const kdc_expr_t *sites[KDC_ASYNC_SITES];
    int pool;                 /* started at several places, in a loop, or by a function that
                                 runs several times: instances run concurrently */
    kdc_async_kind_t kind;
} kdc_async_entry_t;

typedef KDC_VEC(kdc_async_entry_t) kdc_async_vec_t;
typedef KDC_VEC(const kdc_func_t *) kdc_func_list_t;

/* Every entry of the program (free v). */
void kdc_async_entries(kdc_rule_ctx_t *ctx, kdc_async_vec_t *out);

/* The entry and every function it reaches (free v). */
void kdc_async_closure(kdc_rule_ctx_t *ctx, const kdc_func_t *entry, kdc_func_list_t *out);

/* Does some function of the list consume messages itself (a thread running its
 * own consume loop: its offsets are in order, and revokes reach it in poll)? */
int kdc_async_consumes(const kdc_func_list_t *funcs);

/* Is the call executed repeatedly: in a loop, or in a function called at
 * several places or in a loop (callers followed `depth` levels up)? */
int kdc_call_repeats(kdc_rule_ctx_t *ctx, const kdc_func_t *f, const kdc_expr_t *call, int depth);

/* Variables and fields holding a message's offset (j->offset = m->offset),
 * computed once for the program. */
typedef struct kdc_offset_vars kdc_offset_vars_t;
kdc_offset_vars_t *kdc_offset_vars_new(kdc_rule_ctx_t *ctx);
void kdc_offset_vars_free(kdc_offset_vars_t *v);

/* Does the store or commit (api: its entry) in f pick a message's own
 * position (commit_message, offset_store of a message's offset, C++
 * commitSync(msg), an offset list from a message's offset), rather than
 * commit the stored offsets or a position a watermark computed? */
int kdc_stores_message_position(const kdc_offset_vars_t *v, const kdc_func_t *f,
                                const kdc_expr_t *call, const kdc_api_t *api);

#endif
