/*
 * The cache: each translation unit's parsed model (unitio.h), and what the
 * rules found in the whole program, stored in a directory (`.kdc-cache/` by
 * default, --cache-dir: units/ and runs/; other entries below) and reused
 * while nothing that decides them has changed.
 *
 * An entry is found by a key over everything that decides how the unit is
 * parsed: the kdc-lint executable and the libclang library (identified by
 * their GNU build IDs and sizes, read from their files, libclang's from the
 * file a parse would load without loading it; by their contents when they
 * have no build ID: a rebuild or an upgrade makes new keys, the same build
 * installed again keeps them), the unit's path, its
 * compiler arguments and the environment variables clang reads include paths
 * from (CPATH, C_INCLUDE_PATH, CPLUS_INCLUDE_PATH, OBJC_INCLUDE_PATH). The
 * entry lists every file the unit read (main file, project and system headers)
 * with an XXH3-128 digest of its contents and its signature (filesig.h); it is
 * used only when all of them are unchanged: by their signatures where those
 * are trusted, else by their contents. The configuration (.kdc-lint.yaml, profile, rules) is not part of
 * the key: it applies to the whole program after parsing, never to a model.
 *
 * Findings are whole-program (a helper in one file is followed from callers
 * in another), so the analysis is cached for the whole program only: the
 * findings the rules reported (before configuration, suppressions and the
 * baseline filter them, which happens on every run) are stored under a key
 * over the program itself (the bytes of every model merged, in order: a
 * change in any unit is a new program), the analysis options (DLQ patterns,
 * function roles, profile: from the configuration), the rules run in each
 * profile, and the executable. A re-run on an unchanged tree then neither
 * parses nor analyses; any other run analyses the whole program again. One
 * entry is kept per set of units (their paths and arguments), so the
 * directory does not grow with every edit.
 *
 * Units with compile errors are not stored (a missing header that appears
 * later would not invalidate them). Entries are written to a temporary file
 * and renamed, so concurrent runs sharing a directory see whole entries only;
 * an entry that is truncated or damaged fails its checksum and is ignored
 * with a note.
 */
#ifndef KDC_CACHE_H
#define KDC_CACHE_H

#include "facts.h"
#include "findings.h"
#include "model.h"
#include "parse.h"
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
 * written, -2 when only this entry cannot (its place holds a non-empty
 * directory; an empty one is removed). */
int kdc_cache_store(kdc_cache_t *c, const kdc_tu_job_t *job, const char *const *files,
                    size_t nfiles, const void *model, size_t len, char **err);

/* The key of the analysis of `program` (kdc_jobs_stats_t.program) with these
 * options and rules (need[p][r], p 0 default and 1 strict, r an index of
 * kdc_rules, for nrules rules). */
void kdc_cache_analysis_key(const kdc_cache_t *c, const unsigned char program[16],
                            const kdc_options_t *opts, const unsigned char *const need[2],
                            size_t nrules, unsigned char key[16]);

/* The rules' findings stored under `key` for the units jobs[todo[0..ntodo)],
 * appended to runs[0] (default profile) and runs[1] (strict), their strings
 * interned in prog: 1 when there is such an entry, 0 otherwise. *note
 * (malloc'd) is set when an entry was found damaged (it is then ignored). */
int kdc_cache_lookup_findings(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                              size_t ntodo, const unsigned char key[16], kdc_program_t *prog,
                              kdc_findings_t runs[2], char **note);

/* Stores the rules' findings under `key` (replacing the entry of an earlier
 * analysis of the same units), with a manifest of `prog` (whose digest is
 * `program`, kdc_jobs_stats_t.program) when every unit's entry holds the model
 * merged into it: the entries as they are now, every file they list, the
 * program's translation units and analysed files (kdc_program_files). With
 * only_with_manifest, nothing is written when there can be no manifest (a
 * unit with compile errors has no entry). Returns 0, or -1 with *err
 * (malloc'd). */
int kdc_cache_store_findings(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                             size_t ntodo, const unsigned char key[16],
                             const unsigned char program[16], const kdc_program_t *prog,
                             const kdc_findings_t runs[2], int only_with_manifest, char **err);

/* What a stored analysis keeps of its program, so that a run taking it needs
 * no model. */
typedef struct kdc_run_summary {
    unsigned char program[16]; /* the program's digest (kdc_jobs_stats_t.program) */
    unsigned char key[16];     /* the analysis key the findings were stored under */
    kdc_files_t files;         /* the program's analysed files, interned in prog */
} kdc_run_summary_t;

/* The stored analysis of the units jobs[todo[0..ntodo)], when it applies
 * without loading any model: every unit's entry is still the one whose model
 * went into the stored program, and every file those units read is unchanged
 * (both by their trusted signatures, else by their contents; filesig.h). Then
 * 1: prog (a new program) has the stored program's translation units, *sum
 * its digest, key and analysed files (sum->files.v malloc'd), runs[0] and
 * runs[1] the stored findings; the caller checks that the analysis key of
 * these options and rules (kdc_cache_analysis_key with sum->program) is
 * sum->key. 0 otherwise, silently (kdc_cache_lookup_findings notes damage);
 * prog may then hold translation units and strings: discard it. When files
 * were unchanged by their contents only, the entry is written again with
 * their new signatures. */
int kdc_cache_lookup_run(kdc_cache_t *c, const kdc_tu_job_t *jobs, const size_t *todo,
                         size_t ntodo, kdc_program_t *prog, kdc_run_summary_t *sum,
                         kdc_findings_t runs[2]);

/* ---------- other entries ----------
 *
 * What a run computes before it parses (the compilation database as libclang
 * read it, the prefilter's verdicts) is stored under DIR/KIND/<key>, in bytes
 * the caller encodes (bytes.h), under a key the caller makes (with the salt
 * of kdc_cache_salt in it: the executable, libclang, the environment), with a
 * checksum like every entry. */

/* The cache's salt: what every key of this kdc-lint and libclang starts from. */
void kdc_cache_salt(const kdc_cache_t *c, unsigned char salt[16]);

/* The bytes stored under KIND/key, appended to out: 1 when there is such an
 * entry, 0 otherwise. *note (malloc'd) is set when the entry was found damaged:
 * "cache entry PATH: WHAT; ignored, REDO". */
int kdc_cache_get(kdc_cache_t *c, const char *kind, const unsigned char key[16], kdc_buf_t *out,
                  const char *redo, char **note);

/* Stores data[0..len) under KIND/key. 0, or -1 with *err (malloc'd). */
int kdc_cache_put(kdc_cache_t *c, const char *kind, const unsigned char key[16],
                  const void *data, size_t len, char **err);

/* Whether the run may still write to the cache: once a write has failed (a
 * full disk) and been noted, kdc_cache_stop_writes makes every later write be
 * skipped, so the failure is noted once. */
int kdc_cache_writable(const kdc_cache_t *c);
void kdc_cache_stop_writes(kdc_cache_t *c);

#endif
