/* Paths as reports show them. */
#ifndef KDC_PATHS_H
#define KDC_PATHS_H

/* Path as shown to the user: relative to the working directory when below it. */
const char *kdc_display_path(const char *cwd, const char *path);

/* The repository root findings are reported against (SARIF %SRCROOT%, GitHub
 * annotations): the nearest directory at or above cwd holding .git, else cwd.
 * malloc'd. */
char *kdc_source_root(const char *cwd);

#endif
