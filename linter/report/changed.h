/*
 * --changed-since=REV: report only findings in the files changed since a git
 * revision (pull requests). Every translation unit is still analysed, so facts
 * that cross files (a producer created in an unchanged file) stay complete;
 * only what is reported is narrowed.
 */
#ifndef KDC_CHANGED_H
#define KDC_CHANGED_H

#include "findings.h"

typedef struct kdc_changed {
    char *rev;     /* as given */
    char *commit;  /* what it resolved to (full hash) */
    char **files;  /* absolute paths (realpath when the file exists), sorted */
    size_t n;
} kdc_changed_t;

/*
 * Collects the files of the git repository holding `dir` that differ between
 * `rev` and the working tree (committed since, staged or not), plus untracked
 * files that are not ignored. Runs git (found on PATH). Returns 0, or -1 with a
 * message in *err (malloc'd): not a repository, an unknown revision, no git.
 */
int kdc_changed_collect(const char *rev, const char *dir, kdc_changed_t *out, char **err);

/* Whether git tracks a file in the directory `dir` (it came with the checkout): 1 yes, 0
 * no (also when dir is in no repository, or git cannot be run). */
int kdc_git_tracks_files_in(const char *dir);

/* Whether `file` (any spelling of the path) is one of the changed files. */
int kdc_changed_has(const kdc_changed_t *c, const char *file);

/*
 * Keeps in fs the findings in changed files: those whose location, or one of
 * whose related locations, is in a changed file (a change in a DLQ helper
 * shows at the commit that follows it in an unchanged file). Frees the others.
 * Returns how many were dropped (suppressed findings not counted).
 */
size_t kdc_changed_select(const kdc_changed_t *c, kdc_findings_t *fs);

void kdc_changed_free(kdc_changed_t *c);

#endif
