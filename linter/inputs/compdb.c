/* A compilation database as libclang reads it, cached (see compdb.h). */
#define _GNU_SOURCE
#include "compdb.h"
#include "openguard.h"
#include "util.h"

#include <clang-c/CXCompilationDatabase.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define KIND "compdb"

void kdc_compdb_free(kdc_compdb_t *db) {
    for (size_t i = 0; i < db->n; i++) {
        free(db->v[i].directory);
        free(db->v[i].file);
        for (unsigned k = 0; k < db->v[i].argc; k++)
            free(db->v[i].argv[k]);
        free(db->v[i].argv);
    }
    free(db->v);
    memset(db, 0, sizeof *db);
}

static char *take_string(CXString s) {
    const char *c = clang_getCString(s);
    char *copy = kdc_xstrdup(c ? c : "");
    clang_disposeString(s);
    return copy;
}

static int from_libclang(const char *db_dir, kdc_compdb_t *out) {
    CXCompilationDatabase_Error err;
    /* a response file (@file) that is a FIFO or a device is not read (openguard.h); its
     * argument stays as written, and the unit is refused when it is parsed */
    kdc_openguard_begin();
    CXCompilationDatabase db = clang_CompilationDatabase_fromDirectory(db_dir, &err);
    if (err != CXCompilationDatabase_NoError || !db) {
        free(kdc_openguard_end());
        return -1;
    }
    CXCompileCommands cmds = clang_CompilationDatabase_getAllCompileCommands(db);
    free(kdc_openguard_end());
    unsigned n = clang_CompileCommands_getSize(cmds);
    out->v = calloc(n ? n : 1, sizeof *out->v);
    if (!out->v)
        kdc_oom();
    for (unsigned i = 0; i < n; i++) {
        CXCompileCommand cmd = clang_CompileCommands_getCommand(cmds, i);
        kdc_compdb_entry_t *e = &out->v[out->n++];
        e->directory = take_string(clang_CompileCommand_getDirectory(cmd));
        e->file = take_string(clang_CompileCommand_getFilename(cmd));
        e->argc = clang_CompileCommand_getNumArgs(cmd);
        e->argv = calloc(e->argc ? e->argc : 1, sizeof *e->argv);
        if (!e->argv)
            kdc_oom();
        for (unsigned k = 0; k < e->argc; k++)
            e->argv[k] = take_string(clang_CompileCommand_getArg(cmd, k));
    }
    clang_CompileCommands_dispose(cmds);
    clang_CompilationDatabase_dispose(db);
    return 0;
}

/* Does libclang's list depend on nothing but the database's bytes? Not when an entry
 * names a response file (@file, expanded from disk), nor when compile_flags.txt is
 * next to it (another of libclang's databases). */
static int other_db_next_to(const char *db_dir) {
    char *flags = kdc_xasprintf("%s/compile_flags.txt", db_dir);
    int other_db = access(flags, F_OK) == 0;
    free(flags);
    return other_db;
}

static int storable(const char *db_dir, const void *json, size_t len) {
    if (other_db_next_to(db_dir))
        return 0;
    json_t *root = json_loadb(json, len, 0, NULL);
    int ok = root != NULL;
    size_t i, k;
    json_t *e, *a;
    json_array_foreach(root, i, e) {
        const char *cmd = json_string_value(json_object_get(e, "command"));
        if (cmd && strchr(cmd, '@'))
            ok = 0;
        json_array_foreach(json_object_get(e, "arguments"), k, a)
            if (json_string_value(a) && strchr(json_string_value(a), '@'))
                ok = 0;
    }
    json_decref(root);
    return ok;
}

static void key_of(const kdc_cache_t *cache, const char *db_dir, const void *json, size_t len,
                   unsigned char key[16]) {
    unsigned char salt[16];
    kdc_cache_salt(cache, salt);
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, salt, sizeof salt);
    XXH3_128bits_update(st, KIND, sizeof KIND);
    XXH3_128bits_update(st, db_dir, strlen(db_dir) + 1);
    XXH3_128bits_update(st, json, len);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(st));
    XXH3_freeState(st);
    memcpy(key, canon.digest, 16);
}

/* count, then per entry: directory, file, argc, the arguments */
static void encode(const kdc_compdb_t *db, kdc_buf_t *b) {
    kdc_buf_u32(b, (uint32_t)db->n);
    for (size_t i = 0; i < db->n; i++) {
        kdc_buf_str(b, db->v[i].directory);
        kdc_buf_str(b, db->v[i].file);
        kdc_buf_u32(b, db->v[i].argc);
        for (unsigned k = 0; k < db->v[i].argc; k++)
            kdc_buf_str(b, db->v[i].argv[k]);
    }
}

int kdc_compdb_decode(const void *data, size_t len, kdc_compdb_t *db) {
    memset(db, 0, sizeof *db);
    kdc_reader_t r = {data, (const unsigned char *)data + len, 0};
    uint32_t n = kdc_read_count(&r, 12);
    db->v = calloc(n ? n : 1, sizeof *db->v);
    if (!db->v)
        kdc_oom();
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        kdc_compdb_entry_t *e = &db->v[db->n++];
        e->directory = kdc_read_str(&r);
        e->file = kdc_read_str(&r);
        e->argc = kdc_read_count(&r, 4);
        e->argv = calloc(e->argc ? e->argc : 1, sizeof *e->argv);
        if (!e->argv)
            kdc_oom();
        for (unsigned k = 0; k < e->argc; k++)
            e->argv[k] = kdc_read_str(&r);
        if (!e->directory || !e->file)
            r.bad = 1;
        for (unsigned k = 0; k < e->argc; k++)
            if (!e->argv[k])
                r.bad = 1;
    }
    if (r.bad || r.at != r.end) {
        kdc_compdb_free(db);
        return -1;
    }
    return 0;
}

int kdc_compdb_cached(const char *db_dir, const void *json, size_t len, kdc_cache_t *cache,
                      kdc_compdb_t *out) {
    memset(out, 0, sizeof *out);
    /* a compile_flags.txt that appeared since the entry was stored: libclang reads it */
    if (!cache || other_db_next_to(db_dir))
        return 0;
    unsigned char key[16];
    key_of(cache, db_dir, json, len, key);
    kdc_buf_t b = {0};
    char *note = NULL;
    int hit = kdc_cache_get(cache, KIND, key, &b, "libclang reads the database again", &note);
    if (hit && kdc_compdb_decode(b.v, b.n, out) != 0) {
        hit = 0;
        note = kdc_xasprintf("the cached compilation database of %s is damaged; libclang "
                             "reads it again",
                             db_dir);
    }
    kdc_buf_free(&b);
    if (note)
        fprintf(stderr, "kdc-lint: note: %s\n", note);
    free(note);
    return hit;
}

int kdc_compdb_read(const char *db_dir, const void *json, size_t len, kdc_cache_t *cache,
                    kdc_compdb_t *out) {
    memset(out, 0, sizeof *out);
    if (from_libclang(db_dir, out) != 0)
        return -1;
    if (kdc_cache_writable(cache) && storable(db_dir, json, len)) {
        unsigned char key[16];
        key_of(cache, db_dir, json, len, key);
        kdc_buf_t b = {0};
        char *err = NULL;
        encode(out, &b);
        if (kdc_cache_put(cache, KIND, key, b.v, b.n, &err) != 0) {
            fprintf(stderr, "kdc-lint: note: %s (no further cache writes are tried)\n", err);
            kdc_cache_stop_writes(cache);
        }
        free(err);
        kdc_buf_free(&b);
    }
    return 0;
}
