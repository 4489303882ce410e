/*
 * The cache's insides, shared by cache.c (the directory, keys, unit entries,
 * other entries) and cache_run.c (the stored analysis of a whole program).
 */
#ifndef KDC_CACHE_INT_H
#define KDC_CACHE_INT_H

#include "cache.h"
#include "filesig.h"
#include "util.h"

/* What this process knows of a file's current state: each file is stat'ed at
 * most once, and read at most once, per process. */
typedef struct kdc_file_now {
    int stated, stat_ok;
    kdc_filesig_t sig;
    int read, read_ok;
    kdc_fileseen_t seen;
} kdc_file_now_t;

struct kdc_cache {
    char *dir;                /* as given: messages name it so */
    char *units;              /* dir/units */
    char *runs;               /* dir/runs */
    unsigned char salt[16];   /* the executable, libclang, environment */
    char *cwd;                /* where kdc-lint runs: a unit without -working-directory
                                 has its relative paths resolved against it */
    kdc_strset_t paths;
    kdc_strmap_t files;       /* interned path → kdc_file_now_t* */
    int write_failed;         /* a write failed (noted once): none is tried again */
    unsigned char key[32];    /* the user's key that authenticates entries (kdc_cache_seal) */
    int foreign;              /* its entries were written under another key: none is read */
};

/* Every entry ends with a tag: HMAC-SHA-256 of everything before it under a key of the
 * user's, kept outside the checkout ($XDG_CACHE_HOME/kdc-lint/key, else
 * ~/.cache/kdc-lint/key; created 0600 with random bytes on first use). A cache that
 * arrives with a checkout, or that another user wrote, cannot make up an entry: one
 * whose tag does not verify is ignored (with a note) and computed again. */
#define KDC_CACHE_TAG_LEN 16

/* Appends the tag of b's bytes to b. */
void kdc_cache_seal(const kdc_cache_t *c, kdc_buf_t *b);

/* The length of an entry's bytes without its tag: what the entry's own checks (magic,
 * format, checksum) read, before kdc_cache_check_tag. */
static inline size_t kdc_cache_untagged(size_t len) {
    return len >= KDC_CACHE_TAG_LEN ? len - KDC_CACHE_TAG_LEN : 0;
}

/* NULL when the tag at the end of data[0..len) verifies, else what is wrong. */
const char *kdc_cache_check_tag(const kdc_cache_t *c, const unsigned char *data, size_t len);

/* A file's contents (malloc'd). 0; -1 when it cannot be opened; -2 when it is
 * not a regular file of a plausible size (a FIFO is not waited on). With
 * `seen` (may be NULL): the file as read (signature before reading, digest of
 * the bytes). */
int kdc_cache_read_file(const char *path, unsigned char **data, size_t *len,
                        kdc_fileseen_t *seen);

/* Writes b to path through a temporary file renamed over it. 0; -1 with *err;
 * -2 when only this entry cannot be written (its place holds a directory). */
int kdc_cache_write_entry(const char *path, const kdc_buf_t *b, char **err);

/* The unit entry of a job, and the directory its relative paths are in. */
char *kdc_cache_unit_path(const kdc_cache_t *c, const kdc_tu_job_t *job);
const char *kdc_cache_working_dir(const kdc_tu_job_t *job);

/* A unit entry's first bytes: its magic and format (kdc_cache_parse_unit). */
#define ENTRY_MAGIC "KDCC"
#define ENTRY_FORMAT 3u /* 3: with the paths that must stay absent */

/* A unit entry, read: the files the unit read (as stored: relative to the
 * working directory unless absolute) and its model (pointing into the bytes). */
typedef struct kdc_unit_file {
    char *file;
    kdc_fileseen_t seen;
} kdc_unit_file_t;

typedef struct kdc_unit_entry {
    KDC_VEC(kdc_unit_file_t) files;
    const unsigned char *model;
    size_t model_len;
} kdc_unit_entry_t;

/* Reads a unit entry's bytes: NULL, or what is wrong with them. */
const char *kdc_cache_parse_unit(const unsigned char *data, size_t len, kdc_unit_entry_t *e);
void kdc_cache_unit_entry_free(kdc_unit_entry_t *e);

/* The findings of a stored analysis at r (two counts, then the findings) appended to
 * runs[0] (default profile) and runs[1] (strict), their strings interned in prog: NULL,
 * or what is wrong with the bytes (runs are then as they were). */
const char *kdc_cache_parse_findings(kdc_reader_t *r, kdc_program_t *prog, kdc_findings_t runs[2]);

/* How this process last saw the file at path, when it read it (kdc_file_see) and found
 * the contents `stored` says; else `stored`. */
const kdc_fileseen_t *kdc_cache_latest_seen(kdc_cache_t *c, const char *path,
                                            const kdc_fileseen_t *stored);

#endif
