#include "findings.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

const char *kdc_severity_name(kdc_severity_t s) {
    switch (s) {
    case KDC_SEV_NOTE: return "note";
    case KDC_SEV_WARNING: return "warning";
    case KDC_SEV_ERROR: return "error";
    }
    return "warning";
}

void kdc_finding_free(kdc_finding_t *f) {
    free(f->message);
    for (size_t i = 0; i < f->nrelated; i++)
        free((char *)f->related[i].message);
    free(f->related);
    free(f->suppressed);
}

size_t kdc_findings_nshown(const kdc_findings_t *fs) {
    size_t n = 0;
    for (size_t i = 0; i < fs->n; i++)
        n += !fs->v[i].suppressed;
    return n;
}

/* What makes two findings one: the same rule at the same place (interned pointers). */
static int same_place(const kdc_finding_t *a, const kdc_finding_t *b) {
    return a->rule == b->rule && a->loc.file == b->loc.file && a->loc.line == b->loc.line &&
           a->loc.col == b->loc.col;
}

static size_t place_hash(const kdc_finding_t *f) {
    struct {
        const void *rule, *file;
        unsigned line, col;
    } key;
    memset(&key, 0, sizeof key);
    key.rule = f->rule;
    key.file = f->loc.file;
    key.line = f->loc.line;
    key.col = f->loc.col;
    return (size_t)XXH3_64bits(&key, sizeof key);
}

/* The slot of f's place: the one holding an equal finding, or the empty one to use. */
static size_t *slot_of(const kdc_findings_t *fs, const kdc_finding_t *f) {
    size_t mask = fs->nslots - 1;
    for (size_t i = place_hash(f) & mask;; i = (i + 1) & mask)
        if (!fs->slots[i] || same_place(&fs->v[fs->slots[i] - 1], f))
            return &fs->slots[i];
}

/* Indexes v[0..n), with room for twice as many; a first finding of each place wins. */
static void reindex(kdc_findings_t *fs, size_t want) {
    size_t nslots = 64;
    while (nslots < 2 * want)
        nslots *= 2;
    free(fs->slots);
    fs->slots = calloc(nslots, sizeof *fs->slots);
    if (!fs->slots)
        kdc_oom();
    fs->nslots = nslots;
    for (size_t i = 0; i < fs->n; i++) {
        size_t *s = slot_of(fs, &fs->v[i]);
        if (!*s)
            *s = i + 1;
    }
    fs->indexed = fs->n;
}

void kdc_findings_add(kdc_findings_t *fs, kdc_finding_t *f) {
    /* a hash of the place, not a scan of the list: 200,000 suppression comments each
     * adding a finding must not take quadratic time */
    if (!fs->slots || fs->indexed != fs->n || 2 * (fs->n + 1) > fs->nslots)
        reindex(fs, fs->n + 1);
    size_t *s = slot_of(fs, f);
    if (*s) {
        kdc_finding_free(f);
        return;
    }
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 16;
        fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
    }
    fs->v[fs->n++] = *f;
    *s = fs->n;
    fs->indexed = fs->n;
}

static int cmp(const void *a, const void *b) {
    const kdc_finding_t *x = a, *y = b;
    int r = strcmp(x->loc.file ? x->loc.file : "", y->loc.file ? y->loc.file : "");
    if (r)
        return r;
    if (x->loc.line != y->loc.line)
        return x->loc.line < y->loc.line ? -1 : 1;
    if (x->loc.col != y->loc.col)
        return x->loc.col < y->loc.col ? -1 : 1;
    return strcmp(x->rule, y->rule);
}

void kdc_findings_sort(kdc_findings_t *fs) {
    if (fs->n > 1)
        qsort(fs->v, fs->n, sizeof *fs->v, cmp);
    fs->indexed = (size_t)-1; /* positions moved: the index is rebuilt on the next add */
}

void kdc_findings_free(kdc_findings_t *fs) {
    for (size_t i = 0; i < fs->n; i++)
        kdc_finding_free(&fs->v[i]);
    free(fs->v);
    free(fs->slots);
    fs->v = NULL;
    fs->slots = NULL;
    fs->n = fs->cap = fs->nslots = fs->indexed = 0;
}
