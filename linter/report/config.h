/*
 * .kdc-lint.yaml: a service's configuration of kdc-lint.
 *
 * A configuration file applies to the files of its directory and every
 * directory below it; the nearest one wins (no merging with files further
 * up), and `--config FILE` makes one file apply to everything. Files are
 * parsed with libyaml; every problem (YAML syntax, unknown key, wrong type,
 * bad value) is an error at FILE:LINE:COLUMN, and a configuration with errors
 * is "broken": the driver does not check the files it governs.
 *
 * Precedence for one analysed file: the command line (--profile, --enable,
 * --disable, --report-unused-suppressions) over its nearest configuration
 * over the built-in defaults. The per-rule settings of the configuration
 * apply on top of whichever profile is in force; --enable/--disable last.
 */
#ifndef KDC_CONFIG_H
#define KDC_CONFIG_H

#include "facts.h"
#include "findings.h"

#include <stdio.h>

#define KDC_CONFIG_NAME ".kdc-lint.yaml"

typedef struct kdc_config {
    char *path;         /* absolute path of the file */
    char *dir;          /* its directory: exclude globs are relative to it */
    int broken;         /* had errors: the files it governs are not checked */
    int profile;        /* -1 unset, 0 default, 1 strict */
    int report_unused;  /* report-unused-suppressions: -1 unset, 0, 1 */
    int *rule_enabled;  /* per registry index (kdc_rules[]): -1 unset, 0, 1 */
    int *rule_severity; /* per registry index: -1 unset, else a kdc_severity_t */
    char **exclude;     /* globs, NULL-terminated */
    char **dlq_topics;  /* fnmatch patterns, NULL-terminated */
    char **dlq_names;   /* fnmatch patterns, NULL-terminated */
    int dlq_defaults;   /* keep the built-in DLQ patterns (default 1) */
    char **functions[KDC_NROLES]; /* fnmatch patterns per role, NULL-terminated */
    char **ack_returns; /* acknowledge: returns ("FUNCTION=VALUE"), NULL-terminated */
    char **ack_calls;   /* acknowledge: calls ("FUNCTION(VALUE)"), NULL-terminated */
    int ack_presets;    /* keep the built-in acknowledgements (default 1) */
    int function_presets; /* keep the built-in wrapper-library roles (default 1) */
} kdc_config_t;

/* What the command line says; it overrides every configuration file. */
typedef struct kdc_overrides {
    const char *config_path; /* --config FILE, or NULL: discovery */
    int profile;             /* --profile: -1 not given, 0 default, 1 strict */
    const int *rule_on;      /* per registry index: -1 not given, 0 --disable, 1 --enable */
    int report_unused;       /* --report-unused-suppressions given */
} kdc_overrides_t;

/* A configuration error: where ("FILE:LINE:COLUMN", or FILE) and what. */
typedef struct kdc_config_error {
    char *where;
    char *message;
} kdc_config_error_t;

/* The configurations of one run: discovery, cache, errors. */
typedef struct kdc_configs kdc_configs_t;

/* `explicit_path` (--config) makes that file the configuration of every
 * file; NULL: discovery from each file's directory upward. `cwd` resolves
 * relative paths. */
kdc_configs_t *kdc_configs_new(const char *explicit_path, const char *cwd);
void kdc_configs_free(kdc_configs_t *cs);

/* The configuration governing `file` (a file or directory path; relative to
 * the working directory when not absolute), loading it on first use; NULL
 * when none applies. The result may be broken (see kdc_config_t). */
const kdc_config_t *kdc_configs_for(kdc_configs_t *cs, const char *file);

/* The configuration whose contents are text[0..len) (it need not end in a NUL), as if
 * loaded from `path` (absolute; its directory is the excludes' base): recorded in cs as
 * loaded, errors included; never discovered for a file. For tests and the fuzz target
 * (fuzz/). */
const kdc_config_t *kdc_configs_parse(kdc_configs_t *cs, const char *path, const char *text,
                                      size_t len);

/* Errors of every configuration loaded so far, in the order found. */
size_t kdc_configs_nerrors(const kdc_configs_t *cs);
const kdc_config_error_t *kdc_configs_error(const kdc_configs_t *cs, size_t i);

/* Every configuration loaded so far (broken ones included). */
size_t kdc_configs_count(const kdc_configs_t *cs);
const kdc_config_t *kdc_configs_get(const kdc_configs_t *cs, size_t i);

/* Effective settings for a file governed by `c` (NULL: no configuration). */
int kdc_config_strict(const kdc_config_t *c, const kdc_overrides_t *o);
int kdc_config_rule_on(const kdc_config_t *c, const kdc_overrides_t *o, size_t rule);
kdc_severity_t kdc_config_severity(const kdc_config_t *c, size_t rule);
int kdc_config_report_unused(const kdc_config_t *c, const kdc_overrides_t *o);
/* Does one of c's exclude globs match `file` (absolute)? */
int kdc_config_excludes(const kdc_config_t *c, const char *file);

/*
 * The analysis options of a run: facts are computed once, so DLQ patterns and
 * function roles are the union over `cfgs` (the configurations governing the
 * analysed files); the built-in DLQ patterns are included unless every file
 * is governed by a configuration with `dlq: {defaults: false}`
 * (`unconfigured`: some analysed file has no configuration). Fills `opts`
 * (strict is left alone); the arrays live in `u` until kdc_options_union_free.
 */
typedef struct kdc_options_union {
    const char **lists[4 + KDC_NROLES];
} kdc_options_union_t;
void kdc_options_union(const kdc_config_t *const *cfgs, size_t n, int unconfigured,
                       kdc_options_t *opts, kdc_options_union_t *u);
void kdc_options_union_free(kdc_options_union_t *u);

/* --dump-config: the effective configuration of `path` as one JSON document.
 * Returns 0, or -1 when it cannot be written. */
int kdc_config_dump(FILE *out, const char *path, const kdc_config_t *c, const kdc_overrides_t *o,
                    const char *cwd);

/* Configuration key names of the roles ("produce", ..., "poison-classifier"),
 * indexed by kdc_role_t; NULL-terminated. */
extern const char *const kdc_role_names[KDC_NROLES + 1];

#endif
