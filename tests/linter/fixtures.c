/* Discovery of fixture inputs; see fixtures.h. */
#define _GNU_SOURCE
#include "fixtures.h"

#include <dirent.h>
#include <errno.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

static char *xstrdup(const char *s) {
    char *d = strdup(s);
    if (!d)
        abort();
    return d;
}

static char *xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *xasprintf(const char *fmt, ...) {
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

static void push(char ***v, size_t *n, char *s) {
    char **nv = realloc(*v, (*n + 1) * sizeof *nv);
    if (!nv)
        abort();
    *v = nv;
    (*v)[(*n)++] = s;
}

static int has_suffix(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcmp(s + a - b, suf);
}

int kdc_is_cxx_name(const char *name) {
    return has_suffix(name, ".cc") || has_suffix(name, ".cpp") || has_suffix(name, ".cxx") ||
           has_suffix(name, ".hpp");
}

int kdc_is_source_name(const char *name, int with_headers) {
    if (name[0] == '.')
        return 0;
    if (has_suffix(name, ".c") || has_suffix(name, ".cc") || has_suffix(name, ".cpp") ||
        has_suffix(name, ".cxx"))
        return 1;
    return with_headers && (has_suffix(name, ".h") || has_suffix(name, ".hpp"));
}

static int is_dir(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int is_file(const char *path) {
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

/* Sorted names of dir's entries (without . and ..); returns count or -1. */
static long list_dir(const char *dir, char ***names) {
    struct dirent **ents = NULL;
    int n = scandir(dir, &ents, NULL, alphasort);
    *names = NULL;
    if (n < 0)
        return -1;
    size_t cnt = 0;
    for (int i = 0; i < n; i++) {
        if (strcmp(ents[i]->d_name, ".") && strcmp(ents[i]->d_name, ".."))
            push(names, &cnt, xstrdup(ents[i]->d_name));
        free(ents[i]);
    }
    free(ents);
    return (long)cnt;
}

void kdc_free_names(char **names, size_t n) {
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
}

long kdc_list_subdirs(const char *dir, char ***out) {
    char **names;
    long n = list_dir(dir, &names);
    *out = NULL;
    if (n < 0)
        return -1;
    size_t cnt = 0;
    for (long i = 0; i < n; i++) {
        char *p = xasprintf("%s/%s", dir, names[i]);
        if (names[i][0] != '.' && is_dir(p))
            push(out, &cnt, xstrdup(names[i]));
        free(p);
    }
    kdc_free_names(names, (size_t)n);
    return (long)cnt;
}

/* Fills a multi-file fixture from DIR/compile_commands.json. */
static void load_multi(kdc_fixture_t *fx, const char *dir) {
    char *db_path = xasprintf("%s/compile_commands.json", dir);
    json_error_t jerr;
    json_t *db = NULL;
    char **names = NULL;
    long nnames = -1;
    if (!is_file(db_path)) {
        fx->error = xasprintf("%s: missing compile_commands.json", fx->name);
        goto out;
    }
    db = json_load_file(db_path, JSON_REJECT_DUPLICATES, &jerr);
    if (!db || !json_is_array(db) || json_array_size(db) == 0) {
        fx->error = xasprintf("%s: compile_commands.json is not a non-empty JSON array%s%s",
                              fx->name, db ? "" : ": ", db ? "" : jerr.text);
        goto out;
    }
    size_t i;
    json_t *e;
    json_array_foreach(db, i, e) {
        const char *d = json_string_value(json_object_get(e, "directory"));
        const char *f = json_string_value(json_object_get(e, "file"));
        json_t *cmd = json_object_get(e, "command"), *args = json_object_get(e, "arguments");
        if (!d || !f || !(json_is_string(cmd) || json_is_array(args))) {
            fx->error = xasprintf("%s: compile_commands.json entry %zu lacks directory, file "
                                  "or command/arguments", fx->name, i);
            goto out;
        }
        if (strcmp(d, ".") != 0 || f[0] == '/' || strchr(f, '/')) {
            fx->error = xasprintf("%s: entry %zu must use \"directory\": \".\" and a file name in "
                                  "the fixture folder (got \"%s\", \"%s\")", fx->name, i, d, f);
            goto out;
        }
        char *p = xasprintf("%s/%s", dir, f);
        if (!is_file(p)) {
            fx->error = xasprintf("%s: compile_commands.json names missing file %s", fx->name, f);
            free(p);
            goto out;
        }
        push(&fx->tus, &fx->ntus, p);
    }
    nnames = list_dir(dir, &names);
    for (long k = 0; k < nnames; k++) {
        if (!kdc_is_source_name(names[k], 1))
            continue;
        char *p = xasprintf("%s/%s", dir, names[k]);
        push(&fx->sources, &fx->nsources, xstrdup(p));
        if (kdc_is_source_name(names[k], 0)) {
            int listed = 0;
            for (size_t t = 0; t < fx->ntus; t++)
                listed |= !strcmp(fx->tus[t], p);
            if (!listed) {
                fx->error = xasprintf("%s: %s is not listed in compile_commands.json", fx->name,
                                      names[k]);
                free(p);
                goto out;
            }
        }
        free(p);
    }
out:
    if (nnames > 0)
        kdc_free_names(names, (size_t)nnames);
    json_decref(db);
    free(db_path);
}

int kdc_fixtures_discover(const char *root, kdc_fixture_set_t *set, char *err, size_t errlen) {
    memset(set, 0, sizeof *set);
    char resolved[PATH_MAX];
    if (!realpath(root, resolved)) {
        snprintf(err, errlen, "fixtures folder %s: %s", root, strerror(errno));
        return -1;
    }
    char **rules;
    long nrules = kdc_list_subdirs(resolved, &rules);
    if (nrules < 0) {
        snprintf(err, errlen, "fixtures folder %s: %s", resolved, strerror(errno));
        return -1;
    }
    set->rules = rules;
    set->nrules = (size_t)nrules;
    for (size_t r = 0; r < set->nrules; r++) {
        char *rule_dir = xasprintf("%s/%s", resolved, rules[r]);
        char **names;
        long n = list_dir(rule_dir, &names);
        for (long k = 0; k < n; k++) {
            char *p = xasprintf("%s/%s", rule_dir, names[k]);
            int dir = is_dir(p);
            if (names[k][0] == '.' || (!dir && !kdc_is_source_name(names[k], 0))) {
                free(p);
                continue;
            }
            kdc_fixture_t *nv = realloc(set->v, (set->n + 1) * sizeof *nv);
            if (!nv)
                abort();
            set->v = nv;
            kdc_fixture_t *fx = &set->v[set->n++];
            memset(fx, 0, sizeof *fx);
            fx->name = xasprintf("%s/%s", rules[r], names[k]);
            fx->rule = xstrdup(rules[r]);
            fx->rule_dir = xstrdup(rule_dir);
            fx->entry = xstrdup(names[k]);
            fx->multi = dir;
            if (dir) {
                load_multi(fx, p);
            } else {
                push(&fx->tus, &fx->ntus, xstrdup(p));
                push(&fx->sources, &fx->nsources, xstrdup(p));
            }
            free(p);
        }
        if (n > 0)
            kdc_free_names(names, (size_t)n);
        free(rule_dir);
    }
    return 0;
}

void kdc_fixtures_free(kdc_fixture_set_t *set) {
    for (size_t i = 0; i < set->n; i++) {
        kdc_fixture_t *fx = &set->v[i];
        free(fx->name);
        free(fx->rule);
        free(fx->rule_dir);
        free(fx->entry);
        kdc_free_names(fx->tus, fx->ntus);
        kdc_free_names(fx->sources, fx->nsources);
        free(fx->error);
    }
    free(set->v);
    kdc_free_names(set->rules, set->nrules);
    memset(set, 0, sizeof *set);
}
