/*
 * Discovery of kdc-lint fixture inputs under fixtures/<rule>/.
 *
 * Each folder fixtures/<rule>/ holds the inputs of one rule: a single source
 * file (.c, .cc, .cpp, .cxx) is one input; a subfolder with its own
 * compile_commands.json is one multi-file input, analysed as
 * `kdc-lint -p DIR DIR`. Database entries must use "directory": "." and
 * relative file names so the fixture works from any checkout, and every
 * source file of the subfolder must be listed in its database.
 */
#ifndef KDC_TEST_FIXTURES_H
#define KDC_TEST_FIXTURES_H

#include <stddef.h>

typedef struct kdc_fixture {
    char *name;       /* "<rule>/<entry>", the test name */
    char *rule;       /* rule folder name */
    char *rule_dir;   /* absolute path of fixtures/<rule> */
    char *entry;      /* file or subfolder name inside rule_dir */
    int multi;        /* entry is a multi-file subfolder */
    char **tus;       /* absolute paths of its translation units */
    size_t ntus;
    char **sources;   /* absolute paths of every file whose markers count (TUs and headers) */
    size_t nsources;
    char *error;      /* malformed fixture (NULL when fine) */
} kdc_fixture_t;

typedef struct kdc_fixture_set {
    kdc_fixture_t *v;
    size_t n;
    char **rules;     /* names of the rule folders, sorted */
    size_t nrules;
} kdc_fixture_set_t;

/* Returns 1 for C/C++ source names; headers too when with_headers. */
int kdc_is_source_name(const char *name, int with_headers);

/* Returns 1 for C++ source names (.cc, .cpp, .cxx, .hpp). */
int kdc_is_cxx_name(const char *name);

/*
 * Lists the rule folders and inputs below root (absolute or relative), sorted
 * by name. Returns 0, or -1 with err set when root cannot be read. A
 * malformed input is still listed, with its error field set.
 */
int kdc_fixtures_discover(const char *root, kdc_fixture_set_t *set, char *err, size_t errlen);
void kdc_fixtures_free(kdc_fixture_set_t *set);

/* Names of the subfolders of dir, sorted; returns the count or -1. */
long kdc_list_subdirs(const char *dir, char ***names);
void kdc_free_names(char **names, size_t n);

#endif
