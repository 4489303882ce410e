/*
 * A compilation database as libclang reads it, cached.
 *
 * libclang's JSONCompilationDatabase splits each "command" string as clang
 * does, expands @response files, and adds the target and driver mode a
 * compiler's name implies (x86_64-linux-gnu-gcc: --target=x86_64-linux-gnu);
 * kdc-lint takes each entry's directory, file and arguments exactly as
 * libclang gives them. That costs loading libclang, so with a cache the list
 * is stored (DIR/compdb/) under a key over the database's bytes, its
 * directory and the cache's salt (this kdc-lint and libclang), and taken from
 * there while those bytes are the same. A database whose list depends on
 * other files is never stored: one with an '@' in a command or argument (a
 * response file), or a directory that also holds compile_flags.txt.
 */
#ifndef KDC_COMPDB_H
#define KDC_COMPDB_H

#include "cache.h"

#include <stddef.h>

typedef struct kdc_compdb_entry {
    char *directory; /* as written in the database */
    char *file;      /* as written */
    char **argv;     /* argv[0] is the compiler */
    unsigned argc;
} kdc_compdb_entry_t;

typedef struct kdc_compdb {
    kdc_compdb_entry_t *v;
    size_t n;
} kdc_compdb_t;

/* The entries of db_dir/compile_commands.json, whose contents are json[0..len),
 * from the cache (NULL: none): 1 when it has them (those bytes were valid when
 * they were stored), 0 otherwise. A damaged entry is noted on stderr. */
int kdc_compdb_cached(const char *db_dir, const void *json, size_t len, kdc_cache_t *cache,
                      kdc_compdb_t *out);

/* The same from libclang, for bytes checked to be valid JSON of the right shape;
 * stored in the cache (a failed store is noted on stderr once,
 * kdc_cache_writable). Returns 0, or -1 when libclang cannot load the
 * database. */
int kdc_compdb_read(const char *db_dir, const void *json, size_t len, kdc_cache_t *cache,
                    kdc_compdb_t *out);
/* The entries as the cache stores them (a count, then per entry its directory, file,
 * argc and arguments; bytes.h), decoded from data[0..len) into *db: 0, or -1 when the
 * bytes are not a whole list (*db is then empty). For kdc_compdb_cached and the fuzz
 * target (fuzz/). */
int kdc_compdb_decode(const void *data, size_t len, kdc_compdb_t *db);
void kdc_compdb_free(kdc_compdb_t *db);

#endif
