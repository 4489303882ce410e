#define _GNU_SOURCE
#include "util.h"

#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

void kdc_oom(void) {
    fputs("kdc-lint: out of memory\n", stderr);
    exit(2);
}

double kdc_now_seconds(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void *kdc_xrealloc(void *p, size_t n) {
    void *r = realloc(p, n ? n : 1);
    if (!r)
        kdc_oom();
    return r;
}

char *kdc_xstrdup(const char *s) {
    char *r = strdup(s ? s : "");
    if (!r)
        kdc_oom();
    return r;
}

char *kdc_xasprintf(const char *fmt, ...) {
    va_list ap;
    char *r = NULL;
    va_start(ap, fmt);
    int n = vasprintf(&r, fmt, ap);
    va_end(ap);
    if (n < 0)
        kdc_oom();
    return r;
}

/* ---- real paths ---- */

void kdc_realpaths_init(kdc_realpaths_t *rp) {
    kdc_strset_init(&rp->dirs_seen);
    kdc_strmap_init(&rp->dirs);
}

void kdc_realpaths_free(kdc_realpaths_t *rp) {
    for (size_t i = 0; i < rp->dirs.cap; i++)
        if (rp->dirs.keys[i])
            free(rp->dirs.vals[i]);
    kdc_strmap_free(&rp->dirs);
    kdc_strset_free(&rp->dirs_seen);
}

char *kdc_realpath(kdc_realpaths_t *rp, const char *path) {
    const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
    struct stat sb;
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..") || lstat(path, &sb) != 0 ||
        S_ISLNK(sb.st_mode))
        return realpath(path, NULL);
    const char *dir = slash ? path : ".";
    size_t dlen = slash ? (slash == path ? 1 : (size_t)(slash - path)) : 1;
    const char *key = kdc_strset_add(&rp->dirs_seen, dir, dlen);
    char *real = kdc_strmap_get(&rp->dirs, key);
    if (!real) {
        if (!(real = realpath(key, NULL)))
            return realpath(path, NULL);
        kdc_strmap_put(&rp->dirs, key, real);
    }
    return kdc_xasprintf("%s%s%s", real, strcmp(real, "/") ? "/" : "", base);
}

/* ---- string set (open addressing, XXH3 hashes) ---- */

void kdc_strset_init(kdc_strset_t *s) {
    s->cap = 1024;
    s->n = 0;
    s->slots = calloc(s->cap, sizeof *s->slots);
    if (!s->slots)
        kdc_oom();
}

void kdc_strset_free(kdc_strset_t *s) {
    for (size_t i = 0; i < s->cap; i++)
        free(s->slots[i]);
    free(s->slots);
    s->slots = NULL;
}

static void strset_insert(char **slots, size_t cap, char *str) {
    size_t i = (size_t)XXH3_64bits(str, strlen(str)) & (cap - 1);
    while (slots[i])
        i = (i + 1) & (cap - 1);
    slots[i] = str;
}

const char *kdc_strset_find(const kdc_strset_t *s, const char *str, size_t len) {
    size_t i = (size_t)XXH3_64bits(str, len) & (s->cap - 1);
    while (s->slots[i]) {
        if (strlen(s->slots[i]) == len && memcmp(s->slots[i], str, len) == 0)
            return s->slots[i];
        i = (i + 1) & (s->cap - 1);
    }
    return NULL;
}

const char *kdc_strset_add(kdc_strset_t *s, const char *str, size_t len) {
    size_t i = (size_t)XXH3_64bits(str, len) & (s->cap - 1);
    while (s->slots[i]) {
        if (strlen(s->slots[i]) == len && memcmp(s->slots[i], str, len) == 0)
            return s->slots[i];
        i = (i + 1) & (s->cap - 1);
    }
    char *copy = malloc(len + 1);
    if (!copy)
        kdc_oom();
    memcpy(copy, str, len);
    copy[len] = 0;
    if ((s->n + 1) * 2 > s->cap) {
        size_t ncap = s->cap * 2;
        char **nslots = calloc(ncap, sizeof *nslots);
        if (!nslots)
            kdc_oom();
        for (size_t j = 0; j < s->cap; j++)
            if (s->slots[j])
                strset_insert(nslots, ncap, s->slots[j]);
        free(s->slots);
        s->slots = nslots;
        s->cap = ncap;
    }
    strset_insert(s->slots, s->cap, copy);
    s->n++;
    return copy;
}

/* ---- pointer-keyed map ---- */

static size_t ptr_hash(const void *p) {
    uintptr_t x = (uintptr_t)p;
    return (size_t)XXH3_64bits(&x, sizeof x);
}

void kdc_strmap_init(kdc_strmap_t *m) {
    m->cap = 256;
    m->n = 0;
    m->keys = calloc(m->cap, sizeof *m->keys);
    m->vals = calloc(m->cap, sizeof *m->vals);
    if (!m->keys || !m->vals)
        kdc_oom();
}

void kdc_strmap_free(kdc_strmap_t *m) {
    free(m->keys);
    free(m->vals);
    m->keys = NULL;
    m->vals = NULL;
}

void *kdc_strmap_get(const kdc_strmap_t *m, const char *key) {
    size_t i = ptr_hash(key) & (m->cap - 1);
    while (m->keys[i]) {
        if (m->keys[i] == key)
            return m->vals[i];
        i = (i + 1) & (m->cap - 1);
    }
    return NULL;
}

static void strmap_insert(const char **keys, void **vals, size_t cap, const char *key, void *val) {
    size_t i = ptr_hash(key) & (cap - 1);
    while (keys[i] && keys[i] != key)
        i = (i + 1) & (cap - 1);
    keys[i] = key;
    vals[i] = val;
}

void kdc_strmap_put(kdc_strmap_t *m, const char *key, void *val) {
    if ((m->n + 1) * 2 > m->cap) {
        size_t ncap = m->cap * 2;
        const char **nk = calloc(ncap, sizeof *nk);
        void **nv = calloc(ncap, sizeof *nv);
        if (!nk || !nv)
            kdc_oom();
        for (size_t j = 0; j < m->cap; j++)
            if (m->keys[j])
                strmap_insert(nk, nv, ncap, m->keys[j], m->vals[j]);
        free(m->keys);
        free(m->vals);
        m->keys = nk;
        m->vals = nv;
        m->cap = ncap;
    }
    if (!kdc_strmap_get(m, key))
        m->n++;
    strmap_insert(m->keys, m->vals, m->cap, key, val);
}

/* ---- bitsets ---- */

void kdc_bits_init(kdc_bits_t *b, size_t nbits) {
    b->nwords = (nbits + 63) / 64;
    b->w = NULL;
}

void kdc_bits_alloc(kdc_bits_t *b) {
    if (b->w)
        return;
    b->w = calloc(b->nwords ? b->nwords : 1, sizeof *b->w);
    if (!b->w)
        kdc_oom();
}

void kdc_bits_free(kdc_bits_t *b) {
    free(b->w);
    b->w = NULL;
}

int kdc_bits_or(kdc_bits_t *dst, const kdc_bits_t *src) {
    int changed = 0;
    if (!src->w)
        return 0;
    for (size_t i = 0; i < dst->nwords; i++) {
        if (!src->w[i])
            continue;
        if (!dst->w)
            kdc_bits_alloc(dst);
        uint64_t nw = dst->w[i] | src->w[i];
        if (nw != dst->w[i]) {
            dst->w[i] = nw;
            changed = 1;
        }
    }
    return changed;
}

int kdc_bits_empty(const kdc_bits_t *b) {
    for (size_t i = 0; b->w && i < b->nwords; i++)
        if (b->w[i])
            return 0;
    return 1;
}
