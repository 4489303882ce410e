/*
 * What to analyse: translation units and their compiler arguments, from the
 * command line's paths (default flags) or from a compilation database (-p).
 * Problems with an input become errors; the other inputs are still returned.
 */
#ifndef KDC_INPUTS_H
#define KDC_INPUTS_H

#include "parse.h" /* kdc_tu_job_t */
#include <stddef.h>

typedef struct kdc_input_error {
    char *file;    /* the path as the user gave it (or the database path) */
    char *message;
} kdc_input_error_t;

typedef struct kdc_note {
    char *file;
    char *message;
} kdc_note_t;

typedef struct kdc_inputs {
    kdc_tu_job_t *jobs;
    size_t njobs, capjobs;
    kdc_input_error_t *errors;
    size_t nerrors, caperrors;
    kdc_note_t *notes;
    size_t nnotes, capnotes;
} kdc_inputs_t;

struct kdc_cache;

typedef struct kdc_input_opts {
    const char *db_dir;             /* -p DIR, or NULL */
    const char *const *extra_args;  /* --extra-arg and `-- ARGS` */
    size_t nextra;
    struct kdc_cache *cache;        /* keeps the database as libclang read it (compdb.h), or NULL */
    int db_found;                   /* db_dir was found, not given (kdc_compdb_find): a PATH
                                     * with no unit in it is analysed with default flags */
} kdc_input_opts_t;

/* The directory of the compilation database a run without -p uses, found as clangd
 * finds it: from each PATH's directory up to the repository root (the nearest
 * directory holding .git), the first DIR with DIR/compile_commands.json or
 * DIR/build/compile_commands.json (a regular file). NULL (malloc'd otherwise) when a
 * PATH is in no repository, none is found, or PATHs find different ones. */
char *kdc_compdb_find(const char *const *paths, size_t npaths);

void kdc_inputs_collect(const char *const *paths, size_t npaths, const kdc_input_opts_t *o,
                        kdc_inputs_t *out);
void kdc_inputs_add_error(kdc_inputs_t *in, const char *file, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
void kdc_inputs_free(kdc_inputs_t *in);

/* Is this a C or C++ source file name (.c, .cc, .cpp, .cxx, .c++, .C)? 1 = C, 2 = C++. */
int kdc_source_language(const char *path);

#endif
