/*
 * Running kdc-lint (or a compiler) from a test and reading its JSON report.
 *
 * kdc_run() executes a program directly (no shell) in a given working
 * directory and captures its exit status, stdout and stderr. kdc_report_parse()
 * checks a --format=json document against the kdc-lint JSON contract and
 * returns its findings with every file resolved through realpath(3) against
 * the directory kdc-lint ran in.
 */
#ifndef KDC_TEST_LINTRUN_H
#define KDC_TEST_LINTRUN_H

#include <stddef.h>

typedef struct kdc_run {
    int exit_code;   /* exit status, or 128 + signal number when killed */
    int signaled;
    int timed_out;   /* killed after kdc_run_opts_t.timeout (exit_code 128 + SIGKILL) */
    double seconds;  /* wall time */
    char *out;       /* captured stdout (NUL-terminated) */
    char *err;       /* captured stderr (NUL-terminated) */
} kdc_run_t;

typedef struct kdc_run_opts {
    int timeout;             /* seconds; 0: none */
    const char *stdout_path; /* stdout goes to this file instead of being captured */
    int as_nobody;           /* when root, run as uid/gid 65534 (permission tests) */
    int stdin_pipe;          /* stdin is a pipe that stays open, empty, until the program
                                exits (a reader of stdin blocks) */
} kdc_run_opts_t;

/*
 * Runs argv[0] with argv in cwd (NULL: the current directory). Returns 0 when
 * the program ran (whatever its exit status), -1 when it could not be started.
 */
int kdc_run(const char *cwd, char *const argv[], kdc_run_t *r);
/* The same with options (NULL: none). */
int kdc_run_ex(const char *cwd, char *const argv[], const kdc_run_opts_t *o, kdc_run_t *r);
void kdc_run_free(kdc_run_t *r);

/* Renders argv as one shell-like line into buf, for failure messages. */
const char *kdc_argv_str(char *const argv[], char *buf, size_t len);

typedef struct kdc_finding {
    char *file;      /* realpath when the file exists, else the path as reported */
    unsigned line;
    char *rule;
} kdc_finding_t;

typedef struct kdc_report {
    kdc_finding_t *findings;
    size_t nfindings;
    size_t nerrors;              /* entries of "errors" */
    char *errors_text;           /* "file: message" lines of "errors", or NULL */
    long long translation_units;
    long long incomplete;
} kdc_report_t;

/*
 * Parses and validates a kdc-lint JSON document: one object with "tool"
 * {name "kdc-lint", version}, "findings" (rule, severity, message, file,
 * line, column, end_line, end_column, function, related[]), "errors"
 * ({file, message}) and "stats" (translation_units, incomplete, seconds).
 * Relative finding paths are resolved against cwd. Returns 0, or -1 with the
 * first contract violation in err.
 */
int kdc_report_parse(const char *json_text, const char *cwd, kdc_report_t *rep,
                     char *err, size_t errlen);
void kdc_report_free(kdc_report_t *rep);

/*
 * Runs `lint --list-rules` and returns the rule names (malloc'd array of
 * malloc'd strings) in *names. Each output line must be a kebab-case name,
 * whitespace and a non-empty one-line summary; names must be unique and the
 * exit code 0. Returns the count, or -1 with err set.
 */
long kdc_list_rules(const char *lint, char ***names, char *err, size_t errlen);

/* Resolves path (relative to cwd when not absolute) with realpath(3); malloc'd. */
char *kdc_resolve_path(const char *cwd, const char *path);

#endif
