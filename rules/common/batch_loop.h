/* Loops over a batch of consumed messages (partial-batch-commit): an array or
 * container of messages (rd_kafka_message_t *msgs[], std::vector<RdKafka::Message *>)
 * walked with an index bounded by the batch's count (`i < n`, `i < batch.size()`)
 * or with a range-for, and the ways such a loop can stop before its last
 * message (a break, a condition besides the bound, a goto or return out of it). */
#ifndef KDC_RULES_BATCH_LOOP_H
#define KDC_RULES_BATCH_LOOP_H

#include "../rule.h"

#define KDC_KEYSET_MAX 32

/* A small set of lvalue keys (kdc_pts_lvalue_key: variables, fields). */
typedef struct kdc_keyset {
    const char *v[KDC_KEYSET_MAX];
    size_t n;
} kdc_keyset_t;

void kdc_keyset_add(kdc_keyset_t *s, const char *key);
int kdc_keyset_has(const kdc_keyset_t *s, const char *key);
/* Does e read a variable or field of s? */
int kdc_keyset_mentioned(kdc_program_t *p, const kdc_expr_t *e, const kdc_keyset_t *s);

/* Is e an element of a batch of messages (batch[i], a container's
 * operator[](i) or at(i))? *batch and *index receive its parts. */
int kdc_batch_elem(const kdc_expr_t *e, const kdc_expr_t **batch, const kdc_expr_t **index);

/* A loop over a batch. */
typedef struct kdc_batch_loop {
    int loop;                  /* index in the CFG's loops */
    const char *batch;         /* key of the batch container */
    const kdc_expr_t *batch_expr; /* where it is named in the loop */
    kdc_keyset_t index;        /* keys that index the batch and move in the loop (i) */
    kdc_keyset_t count;        /* keys the bound test compares the index with (n) */
    int size_bound;            /* bounded by batch.size(), or a range-for */
    kdc_keyset_t assigned;     /* keys written in the loop */
    kdc_keyset_t guard;        /* keys a later test may read to learn where the loop stopped:
                                  those written in it and the flags and fields its conditions
                                  read, but not the batch and its count */
} kdc_batch_loop_t;

/* Is loop `l` of f (a CFG loop index) a loop over a batch of messages with a
 * bound test (or a range-for over the batch)? Fills *bl. */
int kdc_batch_loop_of(kdc_program_t *p, const kdc_func_t *f, int l, kdc_batch_loop_t *bl);

/* A way out of a batch loop before its last message: the path leaves node
 * `from` by its successor `succ` (a break, a condition other than the bound,
 * a goto or return). */
typedef struct kdc_early_exit {
    int from;
    unsigned succ;
} kdc_early_exit_t;

/* The early exits of bl's loop (at most max); returns how many. */
size_t kdc_batch_loop_early_exits(kdc_program_t *p, const kdc_func_t *f,
                                  const kdc_batch_loop_t *bl, kdc_early_exit_t *out, size_t max);

/* The source location nearest before node n (n itself when it is a call,
 * condition or assignment; else the closest such node on a way into it). */
const kdc_loc_t *kdc_cfg_node_loc(const kdc_func_t *f, int n);

#endif
