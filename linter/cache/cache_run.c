/* The stored analysis of a whole program (see cache.h). */
#define _GNU_SOURCE
#include "cache_int.h"
#include "rule.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define RUN_MAGIC "KDCR"
#define RUN_FORMAT 2u

static void hash_str(XXH3_state_t *st, const char *s) {
    s = s ? s : "";
    XXH3_128bits_update(st, s, strlen(s) + 1);
}

static void hash_list(XXH3_state_t *st, const char *const *list) {
    uint32_t n = 0;
    for (const char *const *p = list; p && *p; p++)
        n++;
    XXH3_128bits_update(st, &n, sizeof n);
    for (const char *const *p = list; p && *p; p++)
        hash_str(st, *p);
}

static void to_bytes(XXH128_hash_t h, unsigned char out[16]) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(out, canon.digest, 16);
}

static XXH3_state_t *new_state(void) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    return st;
}

void kdc_cache_analysis_key(const kdc_cache_t *c, const unsigned char program[16],
                            const kdc_options_t *opts, const unsigned char *const need[2],
                            size_t nrules, unsigned char key[16]) {
    XXH3_state_t *st = new_state();
    XXH3_128bits_update(st, c->salt, sizeof c->salt);
    hash_str(st, "analysis");
    XXH3_128bits_update(st, program, 16);
    int32_t strict = opts->strict;
    XXH3_128bits_update(st, &strict, sizeof strict);
    hash_list(st, opts->dlq_topic_patterns);
    hash_list(st, opts->dlq_name_patterns);
    for (int r = 0; r < KDC_NROLES; r++)
        hash_list(st, opts->functions[r]);
    hash_list(st, opts->ack_returns);
    hash_list(st, opts->ack_calls);
    uint64_t n = nrules;
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, need[0], nrules);
    XXH3_128bits_update(st, need[1], nrules);
    to_bytes(XXH3_128bits_digest(st), key);
    XXH3_freeState(st);
}

/* runs/<hex>: one entry per set of units (paths and arguments, in order). */
static char *run_path(const kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                      size_t ntodo) {
    XXH3_state_t *st = new_state();
    XXH3_128bits_update(st, c->salt, sizeof c->salt);
    uint64_t n = ntodo;
    XXH3_128bits_update(st, &n, sizeof n);
    for (size_t i = 0; i < ntodo; i++) {
        const kdc_tu_job_t *job = &jobs[todo[i]];
        hash_str(st, job->file);
        uint32_t argc = (uint32_t)job->argc;
        XXH3_128bits_update(st, &argc, sizeof argc);
        for (int k = 0; k < job->argc; k++)
            hash_str(st, job->argv[k]);
    }
    unsigned char d[16];
    to_bytes(XXH3_128bits_digest(st), d);
    XXH3_freeState(st);
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return kdc_xasprintf("%s/%s", c->runs, hex);
}

/*
 * An entry: magic, format, key[16], the manifest's length (u64) and the
 * manifest (none when empty), the count of findings per profile (u32 x 2),
 * the findings, and XXH3-128 of everything before it. A string is written by
 * kdc_buf_str; a location is its file and four u32; a finding its rule,
 * severity, message, location, function, and its related locations with
 * messages.
 *
 * The manifest (what a run needs to take the analysis without loading a
 * model): the program's digest[16]; the unit count, then each unit's entry
 * file as seen (filesig.h) when its model went into the program; the count of
 * files the units read, then each one's absolute path and how it was seen;
 * the program's translation units (file, incomplete, errors, first error,
 * too deep) and its analysed files (kdc_program_files). Checks come first, so
 * a run that finds a change reads no further.
 */

/* ---------- findings as bytes ---------- */

static void put_loc(kdc_buf_t *b, const kdc_loc_t *l) {
    kdc_buf_str(b, l->file);
    uint32_t v[4] = {l->line, l->col, l->end_line, l->end_col};
    kdc_buf_put(b, v, sizeof v);
}

static void put_finding(kdc_buf_t *b, const kdc_finding_t *f) {
    kdc_buf_str(b, f->rule);
    kdc_buf_u32(b, (uint32_t)f->severity);
    kdc_buf_str(b, f->message);
    put_loc(b, &f->loc);
    kdc_buf_str(b, f->function);
    kdc_buf_u32(b, (uint32_t)f->nrelated);
    for (size_t k = 0; k < f->nrelated; k++) {
        put_loc(b, &f->related[k].loc);
        kdc_buf_str(b, f->related[k].message);
    }
}

/* A string interned in p; NULL for none (or when r is bad). */
static const char *get_interned(kdc_reader_t *r, kdc_program_t *p) {
    size_t len;
    const char *at = kdc_read_span(r, &len);
    return at ? kdc_intern_n(p, at, len) : NULL;
}

static void get_loc(kdc_reader_t *r, kdc_program_t *p, kdc_loc_t *l) {
    uint32_t v[4];
    l->file = get_interned(r, p);
    kdc_read_bytes(r, v, sizeof v);
    l->line = v[0];
    l->col = v[1];
    l->end_line = v[2];
    l->end_col = v[3];
}

/* 0, or -1 when the bytes are bad (f is then partly filled: free it). */
static int get_finding(kdc_reader_t *r, kdc_program_t *p, kdc_finding_t *f) {
    memset(f, 0, sizeof *f);
    const char *rule = get_interned(r, p);
    uint32_t sev = kdc_read_u32(r);
    if (r->bad || !rule || sev > KDC_SEV_ERROR)
        return -1;
    const kdc_rule_t *known = kdc_rule_find(rule);
    f->rule = known ? known->name : rule;
    f->severity = (kdc_severity_t)sev;
    f->message = kdc_read_str(r);
    get_loc(r, p, &f->loc);
    f->function = get_interned(r, p);
    uint32_t nrel = kdc_read_count(r, 24); /* each takes at least 24 bytes */
    if (r->bad)
        return -1;
    if (nrel) {
        f->related = calloc(nrel, sizeof *f->related);
        if (!f->related)
            kdc_oom();
    }
    for (uint32_t i = 0; i < nrel && !r->bad; i++) {
        f->nrelated++;
        get_loc(r, p, &f->related[i].loc);
        f->related[i].message = kdc_read_str(r);
    }
    return r->bad ? -1 : 0;
}

static void push_finding(kdc_findings_t *fs, const kdc_finding_t *f) {
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 16;
        fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
    }
    fs->v[fs->n++] = *f;
}

/* The findings at r (two counts, then the findings) into runs[0] and runs[1]: NULL, or
 * what is wrong with the bytes (runs are then as they were). */
const char *kdc_cache_parse_findings(kdc_reader_t *r, kdc_program_t *prog, kdc_findings_t runs[2]) {
    kdc_findings_t got[2] = {{0}};
    const char *damage = NULL;
    uint32_t count[2];
    count[0] = kdc_read_u32(r);
    count[1] = kdc_read_u32(r);
    if (r->bad)
        damage = "truncated findings";
    for (int p = 0; p < 2 && !damage; p++)
        for (uint32_t i = 0; i < count[p] && !damage; i++) {
            kdc_finding_t f;
            int bad = get_finding(r, prog, &f);
            push_finding(&got[p], &f); /* freed with the others when bad */
            if (bad)
                damage = "truncated findings";
        }
    if (!damage && r->at != r->end)
        damage = "findings length mismatch";
    for (int p = 0; p < 2; p++) {
        if (damage) {
            kdc_findings_free(&got[p]);
            continue;
        }
        for (size_t i = 0; i < got[p].n; i++)
            push_finding(&runs[p], &got[p].v[i]);
        free(got[p].v);
    }
    return damage;
}

/* ---------- the entry ---------- */

typedef struct run_entry {
    unsigned char *data;
    size_t len;
    const unsigned char *key; /* [16] */
    kdc_reader_t manifest;    /* empty: none */
    kdc_reader_t findings;    /* the counts and the findings */
} run_entry_t;

/* Reads runs/<units>: 0 with *e, -1 when there is none, 1 with *damage when it is not a
 * whole entry of this format. */
static int read_run(const kdc_cache_t *c, const char *path, run_entry_t *e, const char **damage) {
    memset(e, 0, sizeof *e);
    *damage = NULL;
    int got = kdc_cache_read_file(path, &e->data, &e->len, NULL);
    if (got == -1)
        return -1;
    if (got == -2) {
        *damage = "not a regular file of a plausible size";
        return 1;
    }
    const unsigned char *d = e->data;
    size_t len = kdc_cache_untagged(e->len); /* the tag is checked last */
    kdc_reader_t r = {d, d + len, 0};
    char magic[4];
    kdc_read_bytes(&r, magic, 4);
    uint32_t fmt = kdc_read_u32(&r);
    if (len < 4 + 4 + 16 + 8 + 8 + 16 || memcmp(magic, RUN_MAGIC, 4)) {
        *damage = "not a kdc-lint cache entry";
        return 1;
    }
    if (fmt != RUN_FORMAT) {
        *damage = "an entry of another format";
        return 1;
    }
    XXH128_canonical_t want;
    memcpy(want.digest, d + len - 16, 16);
    if (!XXH128_isEqual(XXH3_128bits(d, len - 16), XXH128_hashFromCanonical(&want))) {
        *damage = "checksum mismatch (truncated or damaged)";
        return 1;
    }
    if ((*damage = kdc_cache_check_tag(c, d, e->len)))
        return 1;
    e->len = len; /* without the tag, as written again (resign) */
    r.end = d + len - 16;
    e->key = r.at;
    unsigned char key[16];
    kdc_read_bytes(&r, key, sizeof key);
    uint64_t mlen = kdc_read_u64(&r);
    if (r.bad || mlen > (uint64_t)(r.end - r.at)) {
        *damage = "truncated manifest";
        return 1;
    }
    e->manifest = (kdc_reader_t){r.at, r.at + mlen, 0};
    e->findings = (kdc_reader_t){r.at + mlen, r.end, 0};
    return 0;
}

int kdc_cache_lookup_findings(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                              size_t ntodo, const unsigned char key[16], kdc_program_t *prog,
                              kdc_findings_t runs[2], char **note) {
    *note = NULL;
    if (c->foreign)
        return 0;
    char *path = run_path(c, jobs, todo, ntodo);
    run_entry_t e;
    const char *damage = NULL;
    int hit = 0;
    /* another program, or other options: not damage, just not this analysis */
    if (read_run(c, path, &e, &damage) == 0 && !memcmp(e.key, key, 16)) {
        damage = kdc_cache_parse_findings(&e.findings, prog, runs);
        hit = !damage;
    }
    if (damage)
        *note = kdc_xasprintf("cache entry %s: %s; ignored, the program is analysed again", path,
                              damage);
    free(e.data);
    free(path);
    return hit;
}

/* ---------- the manifest ---------- */

/* A file that this process last saw as `stored` says (the same contents), seen then. */
static void put_dep(kdc_buf_t *b, kdc_strset_t *seen, const char *path,
                    const kdc_fileseen_t *how) {
    /* a file once per contents: two units that read it at different times keep both.
     * The key, "PATH\n" and the digest's first 8 bytes in hex, is written by hand: it is
     * built for every file every unit read (230 units of librdkafka: 1 % of its analysis
     * by kdc_xasprintf) */
    size_t n = strlen(path);
    char *key = kdc_xrealloc(NULL, n + 1 + 16 + 1);
    memcpy(key, path, n);
    key[n] = '\n';
    for (int i = 0; i < 8; i++) {
        key[n + 1 + 2 * i] = "0123456789abcdef"[how->digest[i] >> 4];
        key[n + 2 + 2 * i] = "0123456789abcdef"[how->digest[i] & 15];
    }
    key[n + 17] = 0;
    size_t before = seen->n;
    kdc_strset_add(seen, key, n + 17);
    free(key);
    if (seen->n == before)
        return;
    kdc_buf_str(b, path);
    kdc_fileseen_put(b, how);
}

/* The manifest of the program the units' entries give, in b: 0; -1 when an entry is
 * missing or damaged, or its model is not the one merged (the program's digest
 * differs), or a unit has none (compile errors): then a run must load the models. */
static int build_manifest(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                          size_t ntodo, const unsigned char program[16],
                          const kdc_program_t *prog, kdc_buf_t *b) {
    kdc_buf_t deps = {0};
    kdc_strset_t seen;
    kdc_strset_init(&seen);
    XXH3_state_t *st = new_state();
    uint32_t ndeps = 0;
    int ok = 1;
    kdc_buf_put(b, program, 16);
    kdc_buf_u32(b, (uint32_t)ntodo);
    for (size_t k = 0; k < ntodo && ok; k++) {
        const kdc_tu_job_t *job = &jobs[todo[k]];
        char *path = kdc_cache_unit_path(c, job);
        unsigned char *data = NULL;
        size_t len = 0;
        kdc_fileseen_t entry;
        kdc_unit_entry_t u;
        ok = kdc_cache_read_file(path, &data, &len, &entry) == 0 &&
             !kdc_cache_check_tag(c, data, len) &&
             !kdc_cache_parse_unit(data, kdc_cache_untagged(len), &u);
        if (ok) {
            kdc_fileseen_put(b, &entry);
            uint64_t mlen = u.model_len;
            XXH3_128bits_update(st, &mlen, sizeof mlen);
            XXH3_128bits_update(st, u.model, u.model_len);
            const char *wd = kdc_cache_working_dir(job);
            for (size_t i = 0; i < u.files.n; i++) {
                const char *file = u.files.v[i].file;
                char *abs = file[0] == '/' || file[0] == KDC_FILE_ABSENT || !wd ? kdc_xstrdup(file)
                                                  : kdc_xasprintf("%s/%s", wd, file);
                size_t before = seen.n;
                put_dep(&deps, &seen, abs, kdc_cache_latest_seen(c, abs, &u.files.v[i].seen));
                ndeps += seen.n != before;
                free(abs);
            }
            kdc_cache_unit_entry_free(&u);
        }
        free(data);
        free(path);
    }
    unsigned char digest[16];
    to_bytes(XXH3_128bits_digest(st), digest);
    ok = ok && !memcmp(digest, program, 16);
    XXH3_freeState(st);
    kdc_strset_free(&seen);
    if (ok) {
        kdc_buf_u32(b, ndeps);
        kdc_buf_put(b, deps.v, deps.n);
        size_t ntus = kdc_program_ntus(prog);
        kdc_buf_u32(b, (uint32_t)ntus);
        for (size_t i = 0; i < ntus; i++) {
            const kdc_tu_info_t *tu = kdc_program_tu(prog, i);
            kdc_buf_str(b, tu->file);
            kdc_buf_u8(b, (uint8_t)tu->incomplete);
            kdc_buf_u32(b, tu->nerrors);
            kdc_buf_str(b, tu->first_error);
            kdc_buf_str(b, tu->too_deep);
        }
        kdc_files_t files;
        kdc_program_files(prog, &files);
        kdc_buf_u32(b, (uint32_t)files.n);
        for (size_t i = 0; i < files.n; i++)
            kdc_buf_str(b, files.v[i]);
        free(files.v);
    }
    kdc_buf_free(&deps);
    return ok ? 0 : -1;
}

/* Checks the file at `path` against how it was seen (the bytes at r): 0 unchanged, -1
 * changed. When unchanged by its contents only, how it is seen now is written over those
 * bytes, and *resign set. */
static int check_dep(const char *path, kdc_reader_t *r, int *resign) {
    unsigned char *at = (unsigned char *)r->at;
    kdc_fileseen_t then, now;
    kdc_fileseen_get(r, &then);
    if (r->bad || !path)
        return -1;
    int how = kdc_file_check(path, &then, &now);
    if (how == KDC_FILE_CHANGED)
        return -1;
    if (how == KDC_FILE_SAME_DATA) {
        kdc_buf_t b = {0};
        kdc_fileseen_put(&b, &now);
        memcpy(at, b.v, b.n);
        kdc_buf_free(&b);
        *resign = 1;
    }
    return 0;
}

int kdc_cache_lookup_run(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                         size_t ntodo, kdc_program_t *prog, kdc_run_summary_t *sum,
                         kdc_findings_t runs[2]) {
    memset(sum, 0, sizeof *sum);
    if (c->foreign)
        return 0;
    char *path = run_path(c, jobs, todo, ntodo);
    run_entry_t e;
    const char *damage;
    int ok = read_run(c, path, &e, &damage) == 0 && e.manifest.at < e.manifest.end, resign = 0;
    kdc_reader_t *r = &e.manifest;
    if (ok) {
        kdc_read_bytes(r, sum->program, 16);
        ok = kdc_read_u32(r) == ntodo && !r->bad;
    }
    /* every unit's entry is the one whose model went into the program */
    for (size_t k = 0; ok && k < ntodo; k++) {
        char *unit = kdc_cache_unit_path(c, &jobs[todo[k]]);
        ok = check_dep(unit, r, &resign) == 0;
        free(unit);
    }
    /* and every file the units read is as it was */
    uint32_t ndeps = ok ? kdc_read_count(r, 4 + 5 * 8 + 16 + 1) : 0;
    for (uint32_t i = 0; ok && i < ndeps; i++) {
        char *file = kdc_read_str(r);
        ok = check_dep(file, r, &resign) == 0;
        free(file);
    }
    if (ok) {
        memcpy(sum->key, e.key, 16);
        uint32_t ntus = kdc_read_count(r, 4 + 1 + 4 + 4 + 4);
        for (uint32_t i = 0; i < ntus && !r->bad; i++) {
            kdc_tu_info_t tu = {0};
            tu.file = get_interned(r, prog);
            tu.incomplete = kdc_read_u8(r) != 0;
            tu.nerrors = kdc_read_u32(r);
            tu.first_error = get_interned(r, prog);
            tu.too_deep = get_interned(r, prog);
            if (!tu.file)
                r->bad = 1;
            else
                kdc_program_add_tu(prog, &tu);
        }
        uint32_t nfiles = kdc_read_count(r, 4);
        sum->files.v = calloc(nfiles ? nfiles : 1, sizeof *sum->files.v);
        if (!sum->files.v)
            kdc_oom();
        for (uint32_t i = 0; i < nfiles && !r->bad; i++)
            if (!(sum->files.v[sum->files.n++] = get_interned(r, prog)))
                r->bad = 1;
        ok = !r->bad && r->at == r->end && !kdc_cache_parse_findings(&e.findings, prog, runs);
    }
    if (ok && resign && kdc_cache_writable(c)) {
        /* the new signatures, so that the next run needs no contents */
        kdc_buf_t b = {0};
        kdc_buf_put(&b, e.data, e.len - 16);
        XXH128_canonical_t s;
        XXH128_canonicalFromHash(&s, XXH3_128bits(b.v, b.n));
        kdc_buf_put(&b, s.digest, 16);
        kdc_cache_seal(c, &b);
        char *err = NULL;
        if (kdc_cache_write_entry(path, &b, &err) != 0) {
            fprintf(stderr, "kdc-lint: note: %s (no further cache writes are tried)\n", err);
            kdc_cache_stop_writes(c);
        }
        free(err);
        kdc_buf_free(&b);
    }
    if (!ok) {
        free(sum->files.v);
        memset(sum, 0, sizeof *sum);
    }
    free(e.data);
    free(path);
    return ok;
}

int kdc_cache_store_findings(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                             size_t ntodo, const unsigned char key[16],
                             const unsigned char program[16], const kdc_program_t *prog,
                             const kdc_findings_t runs[2], int only_with_manifest,
                             char **err) {
    *err = NULL;
    kdc_buf_t manifest = {0};
    if (build_manifest(c, jobs, todo, ntodo, program, prog, &manifest) != 0) {
        manifest.n = 0;
        if (only_with_manifest) {
            kdc_buf_free(&manifest);
            return 0;
        }
    }
    kdc_buf_t b = {0};
    kdc_buf_put(&b, RUN_MAGIC, 4);
    kdc_buf_u32(&b, RUN_FORMAT);
    kdc_buf_put(&b, key, 16);
    kdc_buf_u64(&b, manifest.n);
    kdc_buf_put(&b, manifest.v, manifest.n);
    kdc_buf_free(&manifest);
    kdc_buf_u32(&b, (uint32_t)runs[0].n);
    kdc_buf_u32(&b, (uint32_t)runs[1].n);
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < runs[p].n; i++)
            put_finding(&b, &runs[p].v[i]);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b.v, b.n));
    kdc_buf_put(&b, sum.digest, 16);
    kdc_cache_seal(c, &b);
    char *path = run_path(c, jobs, todo, ntodo);
    int rc = kdc_cache_write_entry(path, &b, err);
    free(path);
    kdc_buf_free(&b);
    return rc;
}
