#include "findings.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const char *kdc_severity_name(kdc_severity_t s) {
    switch (s) {
    case KDC_SEV_NOTE: return "note";
    case KDC_SEV_WARNING: return "warning";
    case KDC_SEV_ERROR: return "error";
    }
    return "warning";
}

static void free_one(kdc_finding_t *f) {
    free(f->message);
    for (size_t i = 0; i < f->nrelated; i++)
        free((char *)f->related[i].message);
    free(f->related);
}

void kdc_findings_add(kdc_findings_t *fs, kdc_finding_t *f) {
    for (size_t i = 0; i < fs->n; i++) {
        kdc_finding_t *g = &fs->v[i];
        if (g->rule == f->rule && g->loc.file == f->loc.file && g->loc.line == f->loc.line &&
            g->loc.col == f->loc.col) {
            free_one(f);
            return;
        }
    }
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 16;
        fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
    }
    fs->v[fs->n++] = *f;
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
}

void kdc_findings_free(kdc_findings_t *fs) {
    for (size_t i = 0; i < fs->n; i++)
        free_one(&fs->v[i]);
    free(fs->v);
    fs->v = NULL;
    fs->n = fs->cap = 0;
}
