/*
 * Scratch directories and commands for tests that build a small world on disk
 * (a git repository, a pre-commit configuration, sources to lint): create,
 * write, read and remove files, find programs on PATH, and run commands with
 * their output captured (lintrun.h's kdc_run_t). I/O failures abort with a
 * message: they are failures of the test machine, not of the code under test.
 */
#ifndef KDC_TEST_SCRATCH_H
#define KDC_TEST_SCRATCH_H

#include "lintrun.h"

/* A new empty directory $TMPDIR/kdc-<name>-XXXXXX (realpath); malloc'd. */
char *scratch_dir(const char *name);
/* Removes dir and everything below it. */
void scratch_remove(const char *dir);

/* dir/rel, malloc'd. */
char *scratch_path(const char *dir, const char *rel);
/* Writes text to dir/rel, creating parent directories. */
void scratch_write(const char *dir, const char *rel, const char *text);
/* Contents of dir/rel (malloc'd), or NULL when it cannot be read. */
char *scratch_read(const char *dir, const char *rel);

/* The program's path found on PATH (or prog itself when it has a '/' and is
 * executable), malloc'd; NULL when not found. */
char *scratch_which(const char *prog);

/* Runs the NULL-terminated command (argv[0] looked up on PATH) in cwd with a
 * timeout of 600 s. Returns the exit code, or -1 when it could not start or
 * timed out; r holds its output (kdc_run_free). */
int scratch_run(kdc_run_t *r, const char *cwd, const char *prog, ...);
/* The same with a NULL-terminated argv. */
int scratch_runv(kdc_run_t *r, const char *cwd, const char *const argv[]);

/* Number of non-overlapping occurrences of needle in text. */
size_t scratch_count(const char *text, const char *needle);

#endif
