/*
 * The prefilter: which translation units cannot involve Kafka, so that
 * parsing them is skipped (--no-prefilter turns it off).
 *
 * It reads each unit's main file and its project headers (those found through
 * the file's own directory, -iquote and -I; not -isystem or the system's
 * directories) as text, without preprocessing: both sides of every #if are
 * read, every #include that can be resolved is followed, and an #include of a
 * macro keeps its unit. From the tokens outside comments and strings it takes
 * the identifiers, the functions and global variables defined at file scope
 * (static or not), the names used in function bodies and initialisers (with
 * the bodies of the macros used there), and the macro definitions.
 *
 * A unit is analysed when
 *   1. its files mention Kafka: an identifier starting with rd_kafka,
 *      RD_KAFKA or kdc_, or containing RdKafka; or an identifier matching a
 *      configured function role (the last component of each `functions.*`
 *      pattern); or a `kdc-lint:` comment (a suppression must be checked);
 *   2. or it uses a function or global defined, with external linkage, by a
 *      unit of (1) or (2): a caller of Kafka code, whose call sites decide
 *      parameters, factories and "no analysed code calls it";
 *   3. or it defines, with external linkage, a function or global used by an
 *      analysed unit (1-3) and not defined in that unit: a helper of Kafka code,
 *      whose body decides whether a call is an effect, a failure or a
 *      confirmation (an unanalysed helper counts as code outside the program).
 * Every other unit is skipped. What that can miss (documented in docs/kdc-lint.md):
 * a skipped unit that passes values to a shared helper of Kafka code without
 * naming any Kafka code itself, or writes a field of a plain struct that
 * Kafka code reads, through no function or global the rules above link.
 */
#ifndef KDC_PREFILTER_H
#define KDC_PREFILTER_H

#include "cache.h"
#include "inputs.h"

#include <stddef.h>

typedef struct kdc_prefilter_result {
    unsigned char *keep;  /* per entry of `todo`: 1 analyse, 0 skip (malloc'd) */
    size_t nskipped;
    int from_cache;       /* the verdicts came from the cache */
    /* Files of the skipped units that kdc-lint would have counted as analysed
     * (their main files and the project headers defining a function): the
     * configuration union takes them, so skipping changes no option. */
    char **files;
    size_t nfiles;
} kdc_prefilter_result_t;

/* Decides for inputs->jobs[todo[i]], i < ntodo. `roles` are the configured
 * function-role patterns (fnmatch, qualified names; NULL-terminated).
 *
 * With a cache (NULL: none), the verdicts are stored (DIR/prefilter/) under a
 * key over the units (paths and arguments, in order), the role patterns and
 * the cache's salt, with what they depend on: every file read, with its
 * signature and digest (filesig.h), and the nearest existing directory above
 * every path an #include was looked up at, with its signature (an entry added
 * or removed there changes it) and a digest of its listing (its entries'
 * names and types, symbolic links' targets). They are taken from there while
 * every such file and directory is unchanged: by its trusted signature, else
 * by its contents or listing (the entry is then stored again with the new
 * signatures). Otherwise the sources are read again and the verdicts stored
 * again. Damaged entries are noted on stderr and ignored. */
void kdc_prefilter(const kdc_inputs_t *inputs, const size_t *todo, size_t ntodo,
                   const char *const *roles, kdc_cache_t *cache, kdc_prefilter_result_t *out);
void kdc_prefilter_result_free(kdc_prefilter_result_t *r);

#endif
