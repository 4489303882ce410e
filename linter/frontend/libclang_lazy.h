/*
 * libclang, loaded when something is first parsed.
 *
 * kdc-lint is not linked against libclang: libclang_lazy.c defines every
 * clang_* function the linter calls as a stub that loads libclang (dlopen) on
 * the first call of any of them and then calls the real function. Mapping and
 * relocating libclang and libLLVM costs 10 to 15 ms, more than a run that
 * takes every model and the analysis from the cache needs in all; such a run
 * never loads them.
 *
 * Which libclang: the file named by the environment variable
 * KDC_LINT_LIBCLANG when it is set; else the libclang found at build time
 * (its path, KDC_LIBCLANG_PATH) when that file exists; else the file that
 * path pointed to at build time (KDC_LIBCLANG_REAL: the runtime package's,
 * still there when the -dev package is removed); else its soname
 * (KDC_LIBCLANG_SONAME), found as the dynamic loader finds libraries (its
 * identity for the cache is then known only once it is loaded). When it
 * cannot be loaded, or lacks a function kdc-lint calls, kdc-lint prints one
 * line, "kdc-lint: cannot load libclang (PATH): REASON", and exits with
 * status 2.
 *
 * Worker processes (jobs.h) are forked from the driver: the driver loads
 * libclang before it forks workers that parse (kdc_libclang_load), so they
 * share its pages and a failure is reported once.
 */
#ifndef KDC_LIBCLANG_LAZY_H
#define KDC_LIBCLANG_LAZY_H

/* The libclang a first parse would load (see above): a path or a bare soname;
 * a static string or the environment's, never NULL. */
const char *kdc_libclang_name(void);

/* The file kdc_libclang_name() names when it is a path to an existing file
 * (malloc'd, symbolic links resolved), so its identity can be read from disk
 * without loading it; NULL when only the soname is left. */
char *kdc_libclang_file(void);

/* Loads libclang now unless it is loaded; on failure prints the message above
 * and exits with status 2. Thread-safe. */
void kdc_libclang_load(void);

/* Is a libclang mapped in this process (by kdc_libclang_load or anything
 * else)? Read from the dynamic loader's list of loaded objects. */
int kdc_libclang_mapped(void);

#endif
