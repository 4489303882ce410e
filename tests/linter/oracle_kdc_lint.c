/*
 * A stand-in for kdc-lint that answers from the fixtures' own markers, used
 * to test the fixture runner itself (not kdc-lint):
 *   KDC_ORACLE_MODE=exact   reports exactly the expect markers: the runner must pass;
 *   KDC_ORACLE_MODE=silent  reports nothing: the runner must fail;
 *   KDC_ORACLE_MODE=noisy   also reports every ok marker: the runner must fail.
 * It accepts kdc-lint's command line (--format=json, --profile=..., -p DIR,
 * files and directories) and prints a contract-shaped JSON report with paths
 * relative to its working directory, like kdc-lint.
 */
#define _GNU_SOURCE
#include <dirent.h>
#include <jansson.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "markers.h"

static const char *relative(const char *path, const char *cwd) {
    size_t n = strlen(cwd);
    if (!strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

static int has_ext(const char *n, int headers) {
    const char *e = strrchr(n, '.');
    if (!e)
        return 0;
    return !strcmp(e, ".c") || !strcmp(e, ".cpp") || !strcmp(e, ".cc") || !strcmp(e, ".cxx") ||
           (headers && (!strcmp(e, ".h") || !strcmp(e, ".hpp")));
}

int main(int argc, char **argv) {
    const char *mode = getenv("KDC_ORACLE_MODE") ? getenv("KDC_ORACLE_MODE") : "exact";
    kdc_markers_t ms = {0};
    long tus = 0;
    char err[1024];
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--list-rules")) {
            puts("oracle-rule  answers from fixture markers");
            return 0;
        }
        if (!strcmp(argv[i], "-p")) {
            i++;
            continue;
        }
        if (argv[i][0] == '-')
            continue;
        struct stat st;
        if (stat(argv[i], &st) != 0) {
            fprintf(stderr, "oracle: %s: no such file\n", argv[i]);
            return 2;
        }
        if (!S_ISDIR(st.st_mode)) {
            tus++;
            if (kdc_markers_parse_file(&ms, argv[i], err, sizeof err)) {
                fprintf(stderr, "oracle: %s\n", err);
                return 2;
            }
            continue;
        }
        char db[PATH_MAX];
        snprintf(db, sizeof db, "%s/compile_commands.json", argv[i]);
        json_t *j = json_load_file(db, 0, NULL);
        tus += j ? (long)json_array_size(j) : 0;
        json_decref(j);
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            if (!has_ext(e->d_name, 1))
                continue;
            char p[PATH_MAX];
            snprintf(p, sizeof p, "%s/%s", argv[i], e->d_name);
            if (kdc_markers_parse_file(&ms, p, err, sizeof err)) {
                fprintf(stderr, "oracle: %s\n", err);
                return 2;
            }
        }
        if (d)
            closedir(d);
    }
    char cwd[PATH_MAX];
    if (!getcwd(cwd, sizeof cwd))
        return 2;
    json_t *findings = json_array();
    for (size_t i = 0; i < ms.n; i++) {
        const kdc_marker_t *m = &ms.v[i];
        int report = !strcmp(mode, "exact") ? m->kind == KDC_MARK_EXPECT
                     : !strcmp(mode, "noisy") ? 1
                                              : 0;
        if (!report)
            continue;
        json_array_append_new(findings,
            json_pack("{s:s, s:s, s:s, s:s, s:i, s:i, s:i, s:i, s:n, s:[]}", "rule", m->rule,
                      "severity", "warning", "message", "reported from the marker", "file",
                      relative(m->file, cwd), "line", (int)m->line, "column", 1, "end_line",
                      (int)m->line, "end_column", 2, "function", "related"));
    }
    size_t n = json_array_size(findings);
    json_t *doc = json_pack("{s:{s:s, s:s}, s:o, s:[], s:{s:I, s:i, s:f}}", "tool", "name",
                            "kdc-lint", "version", "oracle", "findings", findings, "errors",
                            "stats", "translation_units", (json_int_t)tus, "incomplete", 0,
                            "seconds", 0.0);
    char *out = json_dumps(doc, JSON_INDENT(1));
    puts(out);
    free(out);
    json_decref(doc);
    kdc_markers_free(&ms);
    return n ? 1 : 0;
}
