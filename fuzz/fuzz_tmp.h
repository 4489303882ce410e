/*
 * A fuzz target's private temporary directory, for the inputs kdc-lint reads only from a
 * path: made once per process (mkdtemp under $TMPDIR or /tmp), removed at exit, never the
 * repository's corpus.
 */
#ifndef KDC_FUZZ_TMP_H
#define KDC_FUZZ_TMP_H

#include <stddef.h>

/* The directory (made on first use; the process aborts when it cannot be). */
const char *kdc_fuzz_dir(void);

/* Writes data[0..len) to dir/name (replacing it) and returns its path (malloc'd);
 * aborts when it cannot. */
char *kdc_fuzz_write(const char *name, const void *data, size_t len);

#endif
