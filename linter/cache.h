/*
 * The unit cache: each translation unit's parsed model (unitio.h), stored in
 * a directory (`.kdc-cache/` by default, --cache-dir) and reused while
 * nothing that decides it has changed.
 *
 * Findings are whole-program (a helper in one file is followed from callers
 * in another), so they are never cached: the models are, and the analysis runs
 * on them every time. An entry is found by a key over everything that decides
 * how the unit is parsed: the kdc-lint executable and the libclang library
 * (identified by path, size and modification time: a rebuild or an upgrade
 * makes new keys), libclang's version, the unit's path, its compiler
 * arguments and the environment variables clang reads include paths from
 * (CPATH, C_INCLUDE_PATH, CPLUS_INCLUDE_PATH, OBJC_INCLUDE_PATH). The entry
 * lists every file the unit read (main file, project and system headers) with
 * an XXH3-128 digest of its contents; it is used only when all of them are
 * unchanged. The configuration (.kdc-lint.yaml, profile, rules) is not part of
 * the key: it applies to the whole program after parsing, never to a model.
 *
 * Units with compile errors are not stored (a missing header that appears
 * later would not invalidate them). Entries are written to a temporary file
 * and renamed, so concurrent runs sharing a directory see whole entries only;
 * an entry that is truncated or damaged fails its checksum and is ignored
 * with a note.
 */
#ifndef KDC_CACHE_H
#define KDC_CACHE_H

#include "inputs.h"
#include "unitio.h"

#include <stddef.h>

#define KDC_CACHE_DEFAULT_DIR ".kdc-cache"

typedef struct kdc_cache kdc_cache_t;

/* Opens the cache in `dir`, creating it (with CACHEDIR.TAG and a .gitignore
 * of its own) when missing. NULL with *err (malloc'd) when dir is not a
 * directory or cannot be created, read or written. */
kdc_cache_t *kdc_cache_open(const char *dir, char **err);
void kdc_cache_close(kdc_cache_t *c);

/* The model stored for this unit, appended to `model`: 1 when the entry is
 * there and every file it lists is unchanged, 0 otherwise. *note (malloc'd)
 * is set when an entry was found damaged (it is then ignored). */
int kdc_cache_lookup(kdc_cache_t *c, const kdc_tu_job_t *job, kdc_buf_t *model, char **note);

/* Stores the model of a unit that read `files` (the main file and its
 * includes). Returns 0, or -1 with *err (malloc'd) when the entry cannot be
 * written. */
int kdc_cache_store(kdc_cache_t *c, const kdc_tu_job_t *job, const char *const *files,
                    size_t nfiles, const void *model, size_t len, char **err);

/* XXH3-128 of a file's contents as 16 bytes; -1 when it cannot be read. */
int kdc_file_digest(const char *path, unsigned char digest[16]);

#endif
