/* --shard=K/N (see shard.h). */
#define _GNU_SOURCE
#include "shard.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

int kdc_shard_parse(const char *spec, kdc_shard_t *sh, char **err) {
    memset(sh, 0, sizeof *sh);
    char *end = NULL;
    unsigned long k = 0, n = 0;
    const char *slash = strchr(spec, '/');
    if (slash && slash > spec && spec[0] >= '0' && spec[0] <= '9') {
        k = strtoul(spec, &end, 10);
        if (end == slash && slash[1] >= '0' && slash[1] <= '9') {
            n = strtoul(slash + 1, &end, 10);
            if (*end)
                n = 0;
        }
    }
    if (!n || !k) {
        *err = kdc_xasprintf("'%s' is not K/N (shard K of N, both from 1)", spec);
        return -1;
    }
    if (n > KDC_SHARD_MAX || k > n) {
        *err = kdc_xasprintf("'%s': K must be from 1 to N, and N at most %d", spec, KDC_SHARD_MAX);
        return -1;
    }
    sh->index = (unsigned)k;
    sh->count = (unsigned)n;
    return 0;
}

static const char *relative(const char *file, const char *root) {
    size_t n = root ? strlen(root) : 0;
    if (n && !strncmp(file, root, n) && file[n] == '/')
        return file + n + 1;
    if (n == 1 && root[0] == '/' && file[0] == '/')
        return file + 1;
    return file;
}

unsigned kdc_shard_of(const char *file, const char *root, unsigned count) {
    const char *rel = relative(file ? file : "", root);
    return 1 + (unsigned)(XXH3_64bits(rel, strlen(rel)) % count);
}

void kdc_shard_select(kdc_shard_t *sh, kdc_findings_t *fs, const char *root) {
    sh->total = fs->n;
    sh->order = kdc_xrealloc(NULL, (fs->n ? fs->n : 1) * sizeof *sh->order);
    size_t kept = 0;
    for (size_t i = 0; i < fs->n; i++) {
        kdc_finding_t *f = &fs->v[i];
        if (kdc_shard_of(f->loc.file, root, sh->count) == sh->index) {
            sh->order[kept] = i;
            fs->v[kept++] = *f;
        } else {
            kdc_finding_free(f);
        }
    }
    fs->n = kept;
}

void kdc_shard_free(kdc_shard_t *sh) {
    free(sh->order);
    sh->order = NULL;
}

void kdc_shard_run_id(const char *const *parts, size_t n, char out[33]) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    for (size_t i = 0; i < n; i++) {
        const char *p = parts[i] ? parts[i] : "\001";
        XXH3_128bits_update(st, p, strlen(p) + 1);
    }
    XXH128_canonical_t c;
    XXH128_canonicalFromHash(&c, XXH3_128bits_digest(st));
    XXH3_freeState(st);
    for (int i = 0; i < 16; i++)
        snprintf(out + 2 * i, 3, "%02x", c.digest[i]);
}
