#define _GNU_SOURCE
#include "fingerprint.h"
#include "paths.h"
#include "regfile.h"
#include "util.h"

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

/* The source line, whitespace runs collapsed to one space and trimmed. */
static char *normalised_line(const char *file, unsigned line) {
    FILE *f = file ? kdc_fopen_regular(file) : NULL;
    if (!f)
        return kdc_xstrdup("");
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = -1;
    for (unsigned i = 0; i < line; i++)
        if ((len = getline(&buf, &cap, f)) < 0)
            break;
    fclose(f);
    if (len < 0) {
        free(buf);
        return kdc_xstrdup("");
    }
    char *out = kdc_xrealloc(NULL, (size_t)len + 1);
    size_t n = 0;
    int space = 0;
    for (ssize_t i = 0; i < len; i++) {
        unsigned char ch = (unsigned char)buf[i];
        if (isspace(ch)) {
            space = n > 0;
            continue;
        }
        if (space)
            out[n++] = ' ';
        space = 0;
        out[n++] = (char)ch;
    }
    out[n] = 0;
    free(buf);
    return out;
}

typedef struct keyed {
    XXH128_hash_t key;
    int suppressed;
    size_t index;
} keyed_t;

/* By key, then the shown before the suppressed, then report order. */
static int cmp_keyed(const void *a, const void *b) {
    const keyed_t *x = a, *y = b;
    int c = XXH128_cmp(&x->key, &y->key);
    if (c)
        return c;
    if (x->suppressed != y->suppressed)
        return x->suppressed - y->suppressed;
    return x->index < y->index ? -1 : x->index > y->index;
}

void kdc_fingerprints(const kdc_findings_t *fs, const char *cwd,
                      char (*fps)[KDC_FINGERPRINT_LEN + 1]) {
    keyed_t *k = kdc_xrealloc(NULL, (fs->n ? fs->n : 1) * sizeof *k);
    for (size_t i = 0; i < fs->n; i++) {
        const kdc_finding_t *f = &fs->v[i];
        char *text = normalised_line(f->loc.file, f->loc.line);
        char *key = kdc_xasprintf("%s\n%s\n%s\n%s", f->rule, kdc_display_path(cwd, f->loc.file),
                                  f->function ? f->function : "", text);
        k[i] = (keyed_t){XXH3_128bits(key, strlen(key)), f->suppressed != NULL, i};
        free(key);
        free(text);
    }
    /* the n-th finding with this key in the file, counted in report order, the shown
     * findings first: a suppressed finding never changes a shown one's fingerprint (the
     * baseline's, computed without the suppressed) */
    qsort(k, fs->n, sizeof *k, cmp_keyed);
    unsigned occurrence = 0;
    for (size_t i = 0; i < fs->n; i++) {
        occurrence = i && XXH128_isEqual(k[i - 1].key, k[i].key) ? occurrence + 1 : 0;
        XXH128_hash_t h = k[i].key;
        if (occurrence) {
            unsigned char mix[sizeof h + sizeof occurrence];
            memcpy(mix, &h, sizeof h);
            memcpy(mix + sizeof h, &occurrence, sizeof occurrence);
            h = XXH3_128bits(mix, sizeof mix);
        }
        snprintf(fps[k[i].index], KDC_FINGERPRINT_LEN + 1, "%016llx%016llx",
                 (unsigned long long)h.high64, (unsigned long long)h.low64);
    }
    free(k);
}
