/* Small containers shared by the linter: growable vectors, string sets and maps, bitsets. */
#ifndef KDC_UTIL_H
#define KDC_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

_Noreturn void kdc_oom(void);

/* CLOCK_MONOTONIC, in seconds: for durations. */
double kdc_now_seconds(void);
void *kdc_xrealloc(void *p, size_t n);
char *kdc_xstrdup(const char *s);
char *kdc_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

#define KDC_VEC(T) struct { T *v; size_t n, cap; }
#define KDC_VEC_PUSH(vec, x)                                                                    \
    do {                                                                                        \
        if ((vec).n == (vec).cap) {                                                             \
            (vec).cap = (vec).cap ? (vec).cap * 2 : 8;                                          \
            (vec).v = kdc_xrealloc((vec).v, (vec).cap * sizeof *(vec).v);                       \
        }                                                                                       \
        (vec).v[(vec).n++] = (x);                                                               \
    } while (0)

/* Set of strings; kdc_strset_add returns the stored copy (interning). */
typedef struct kdc_strset {
    char **slots;
    size_t cap, n;
} kdc_strset_t;
void kdc_strset_init(kdc_strset_t *s);
void kdc_strset_free(kdc_strset_t *s);
const char *kdc_strset_add(kdc_strset_t *s, const char *str, size_t len);
/* The stored copy of str, or NULL when it was never added. */
const char *kdc_strset_find(const kdc_strset_t *s, const char *str, size_t len);

/* Map keyed by interned string pointers (identity), to a pointer value. */
typedef struct kdc_strmap {
    const char **keys;
    void **vals;
    size_t cap, n;
} kdc_strmap_t;
void kdc_strmap_init(kdc_strmap_t *m);
void kdc_strmap_free(kdc_strmap_t *m);
void *kdc_strmap_get(const kdc_strmap_t *m, const char *key);
void kdc_strmap_put(kdc_strmap_t *m, const char *key, void *val);

/* realpath(3) for many files in few directories: each directory's real path is
 * resolved once; a file's is that plus its name unless the file is a symbolic
 * link (one lstat instead of a readlink per path component). */
typedef struct kdc_realpaths {
    kdc_strset_t dirs_seen;
    kdc_strmap_t dirs; /* interned directory → its real path (malloc'd) */
} kdc_realpaths_t;
void kdc_realpaths_init(kdc_realpaths_t *rp);
void kdc_realpaths_free(kdc_realpaths_t *rp);
/* As realpath(path, NULL): malloc'd, or NULL with errno. */
char *kdc_realpath(kdc_realpaths_t *rp, const char *path);

/* Fixed-size bitset. Its words are allocated when the first bit is set (w is
 * NULL while the set is empty): the analysis keeps sets over all objects for
 * every object and location, and most of them stay empty. */
typedef struct kdc_bits {
    uint64_t *w;
    size_t nwords;
} kdc_bits_t;
void kdc_bits_init(kdc_bits_t *b, size_t nbits);
void kdc_bits_free(kdc_bits_t *b);
/* Allocates b's words (all clear) if they are not yet. */
void kdc_bits_alloc(kdc_bits_t *b);
static inline void kdc_bits_set(kdc_bits_t *b, size_t i) {
    if (!b->w)
        kdc_bits_alloc(b);
    b->w[i >> 6] |= (uint64_t)1 << (i & 63);
}
static inline int kdc_bits_get(const kdc_bits_t *b, size_t i) {
    return b->w ? (int)((b->w[i >> 6] >> (i & 63)) & 1) : 0;
}
/* The first set bit at index i or after it; b->nwords * 64 when there is none. Walks a set's
 * members a word at a time: for (k = kdc_bits_next(&b, 0); k < b.nwords * 64;
 * k = kdc_bits_next(&b, k + 1)). */
static inline size_t kdc_bits_next(const kdc_bits_t *b, size_t i) {
    size_t end = b->nwords * 64, wi = i >> 6;
    if (!b->w || i >= end)
        return end;
    uint64_t w = b->w[wi] & (~(uint64_t)0 << (i & 63));
    while (!w) {
        if (++wi == b->nwords)
            return end;
        w = b->w[wi];
    }
    return wi * 64 + (size_t)__builtin_ctzll(w);
}
/* dst |= src; returns non-zero when dst changed. */
int kdc_bits_or(kdc_bits_t *dst, const kdc_bits_t *src);
int kdc_bits_empty(const kdc_bits_t *b);

#endif
