/*
 * Shared precompiled preambles: each distinct include prefix of a run's units parsed once.
 *
 * Most of a unit's parse is its headers, and most units of a tree begin with the same ones
 * (librdkafka's tests all start with `#include "test.h"`). A unit's preamble here is the run
 * of directives it starts with, as clang's preamble bounds it but narrower: `#include` of a
 * quoted or bracketed name, `#define` and `#undef`, with blank lines and comments between
 * them; anything else ends it (a conditional, `#pragma`, a line continued with a backslash,
 * a comment left open on a directive's line, any code).
 *
 * Units are grouped by what decides how that prefix is parsed: the same compiler arguments
 * (every one, so the same macros, include paths, language and working directory), the same
 * first directive, and the same directory when it matters. clang looks for a quoted name
 * next to the including file first (by the name it opened that file by: through a symbolic
 * link, next to the link), then on the search path (-iquote, -I). So a unit whose prefix has
 * a quoted name that finds a file next to it, other than the search path's or reached
 * through another directory, shares only with units of its directory; the others share
 * across directories (collectd's plugins and utilities, each utility in a directory of its
 * own), and one of them joins its own directory's group when that has units of the first
 * kind. A unit with a quoted name that climbs out with `..` and is not next to it shares
 * nothing. A group's shared prefix is the longest run of leading directives all its units
 * have, word for word; a run of at least KDC_PREAMBLE_CHAIN_MIN of its units that share a
 * longer prefix (`"test.h"` then `"testcpp.h"`) gets a preamble of its own, chained on the
 * group's: its header holds only the further directives and is parsed with the group's
 * precompiled header included, so what the group shares is parsed once for all of them.
 *
 * A group of two or more units to parse gets a preamble: the prefix written to a header of
 * its own (p.h, alone in a directory of its own), parsed once with the units' arguments (as a
 * C or C++ header) and saved as a precompiled header (clang_saveTranslationUnit). In a group
 * of one directory, a quoted name that finds a file next to the units is written with that
 * directory (`#include "/dir/name"`: the file the units' parse finds first, by the same name;
 * no -iquote, which would reach the headers' own includes too). A group whose header would
 * find itself (`#include "p.h"`) gets none. Each unit of the group is then parsed with
 * `-include-pch` and its own prefix blanked out (spaces, newlines kept: every line and column
 * of the file stays where it was), so its headers are read from the precompiled form instead
 * of being parsed again. A unit whose prefix is shared with no other is parsed as before.
 *
 * The model is the same either way: libclang visits the declarations read from a precompiled
 * header as it visits parsed ones, in the same order, at the same locations; a shared
 * header's functions are converted once per process as before (kdc_parser_omit_seen). A
 * parse against a preamble whose compile errors may be the preamble's (at no place: a header
 * edited since the preamble was built, a flag that changes its meaning; or in a file of the
 * preamble: a C++ template instantiated by the unit) is discarded and the unit parsed again
 * without it. Errors that all lie after the preamble, in the unit's own text and in headers
 * it includes later, are the unit's own, reported the same (their files named by real path),
 * and its parse is kept.
 *
 * Files: a private directory made for the run (mkdtemp in $TMPDIR, mode 0700), removed when
 * the run ends (kdc_preamble_plan_free). The run's processes hold an exclusive flock(2) on its
 * owner.lock while any of them lives; before making its own, a run removes the directories
 * of this user in $TMPDIR that runs killed before their end left, those whose owner.lock no
 * process holds. The planning reads the first KDC_PREAMBLE_SCAN_MAX
 * bytes of each unit's source and writes the prefix headers; the precompiled headers are
 * built by the first process that needs one (a worker, within that unit's budget), under an
 * exclusive lock on a file of the directory so concurrent workers build it once; a process
 * killed while building leaves no precompiled file, and the next one builds it. A preamble
 * whose build fails (a compile error in its headers, a file openguard.h refuses) is marked
 * failed, and its units are parsed as before, each reporting what it reports.
 */
#ifndef KDC_PREAMBLE_H
#define KDC_PREAMBLE_H

#include "parse.h"

#include <stddef.h>

/* How much of a source the planning reads to find its prefix. */
#define KDC_PREAMBLE_SCAN_MAX (64 * 1024)

/* Chained preambles: a run of at least KDC_PREAMBLE_CHAIN_MIN units of a group that share
 * more leading directives than the group gets a preamble of its own for those, built
 * against the group's (only the further directives parsed), up to this many deep. */
#define KDC_PREAMBLE_CHAIN_MIN 3
#define KDC_PREAMBLE_CHAIN_DEPTH 3

typedef struct kdc_preamble_plan kdc_preamble_plan_t;

/* The preambles of jobs[idx[0..n)] (the units a run will parse). NULL when no two of them
 * share a prefix, or when the directory cannot be made (a note in *note, malloc'd, then). */
kdc_preamble_plan_t *kdc_preamble_plan(const kdc_tu_job_t *jobs, const size_t *idx, size_t n,
                                       char **note);

/* Removes the plan's files and directory, and frees it. NULL is fine. */
void kdc_preamble_plan_free(kdc_preamble_plan_t *pl);

/* Removes the plan's files and directory only: for the thread that ends the process on a
 * signal (jobs.h), once the workers are gone. */
void kdc_preamble_remove_files(const kdc_preamble_plan_t *pl);

/* What one parse used (kdc_preamble_parse). */
typedef struct kdc_preamble_use {
    int with_preamble; /* 1: parsed against a preamble; 0: parsed as before */
    int fell_back;     /* a parse against the preamble had errors and was done again */
    int built;         /* this call built the preamble */
    double build_s;    /* ... in this many seconds */
} kdc_preamble_use_t;

/*
 * Parses jobs[job] (an index given to kdc_preamble_plan) as kdc_parse_tu_files does, against
 * its group's preamble when it has one (building it first when no process has), and reports
 * the files the unit read, the preamble's headers included. pl NULL: kdc_parse_tu_files.
 */
int kdc_preamble_parse(kdc_preamble_plan_t *pl, size_t job, kdc_parser_t *ps, kdc_program_t *p,
                       const kdc_tu_job_t *tu, kdc_parse_file_fn file_fn, void *arg, char **err,
                       kdc_preamble_use_t *use);

/* The run's totals, read in the driver once the units are parsed: preambles planned, bytes
 * the plan's directory holds (prefix headers and precompiled headers). */
size_t kdc_preamble_count(const kdc_preamble_plan_t *pl);
unsigned long long kdc_preamble_disk_bytes(const kdc_preamble_plan_t *pl);

#endif
