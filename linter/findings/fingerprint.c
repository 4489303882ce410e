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

void kdc_fingerprints(const kdc_findings_t *fs, const char *cwd,
                      char (*fps)[KDC_FINGERPRINT_LEN + 1]) {
    XXH128_hash_t *keys = kdc_xrealloc(NULL, (fs->n ? fs->n : 1) * sizeof *keys);
    for (size_t i = 0; i < fs->n; i++) {
        const kdc_finding_t *f = &fs->v[i];
        char *text = normalised_line(f->loc.file, f->loc.line);
        char *key = kdc_xasprintf("%s\n%s\n%s\n%s", f->rule, kdc_display_path(cwd, f->loc.file),
                                  f->function ? f->function : "", text);
        keys[i] = XXH3_128bits(key, strlen(key));
        free(key);
        free(text);
        /* the n-th finding with this key in the file, counted in report order */
        unsigned occurrence = 0;
        for (size_t j = 0; j < i; j++)
            if (XXH128_isEqual(keys[j], keys[i]))
                occurrence++;
        XXH128_hash_t h = keys[i];
        if (occurrence) {
            unsigned char mix[sizeof h + sizeof occurrence];
            memcpy(mix, &h, sizeof h);
            memcpy(mix + sizeof h, &occurrence, sizeof occurrence);
            h = XXH3_128bits(mix, sizeof mix);
        }
        snprintf(fps[i], KDC_FINGERPRINT_LEN + 1, "%016llx%016llx", (unsigned long long)h.high64,
                 (unsigned long long)h.low64);
    }
    free(keys);
}
