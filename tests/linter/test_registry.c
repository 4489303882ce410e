/*
 * The rule registry stays in step with its siblings: `kdc-lint --list-rules`,
 * the doc pages rules/<name>.md and the fixture folders fixtures/<name>/ name
 * the same set of rules, and every fixture folder exercises its rule both
 * ways (at least one expected finding and one near-miss marked ok). The
 * README's rule table lists the same rules too.
 *
 *   test_registry [--kdc-lint PATH] [--rules DIR] [--fixtures DIR]
 *
 * Defaults come from the environment: KDC_LINT, KDC_RULES_DIR, KDC_FIXTURES_DIR.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fixtures.h"
#include "lintrun.h"
#include "markers.h"
#include "score.h"

static struct {
    const char *lint, *rules_dir, *fixtures_dir, *readme;
} g;

typedef struct nameset {
    char **v;
    size_t n;
} nameset_t;

static void nameset_free(nameset_t *s) {
    kdc_free_names(s->v, s->n);
    s->v = NULL;
    s->n = 0;
}

static int nameset_has(const nameset_t *s, const char *name) {
    for (size_t i = 0; i < s->n; i++)
        if (!strcmp(s->v[i], name))
            return 1;
    return 0;
}

/* rules/<name>.md, without README.md. */
static int load_rule_docs(nameset_t *s, char *err, size_t errlen) {
    struct dirent **ents = NULL;
    int n = scandir(g.rules_dir, &ents, NULL, alphasort);
    if (n < 0) {
        snprintf(err, errlen, "cannot read rules folder %s", g.rules_dir);
        return -1;
    }
    for (int i = 0; i < n; i++) {
        const char *d = ents[i]->d_name;
        size_t len = strlen(d);
        if (len > 3 && !strcmp(d + len - 3, ".md") && strcmp(d, "README.md")) {
            s->v = realloc(s->v, (s->n + 1) * sizeof *s->v);
            s->v[s->n++] = strndup(d, len - 3);
        }
        free(ents[i]);
    }
    free(ents);
    return 0;
}

static void report_missing(const nameset_t *from, const char *from_what, const nameset_t *in,
                           const char *in_what, kdc_problems_t *p) {
    for (size_t i = 0; i < from->n; i++)
        if (!nameset_has(in, from->v[i]))
            kdc_problems_add(p, "%s is %s but %s", from->v[i], from_what, in_what);
}

static void list_rules_docs_and_fixture_folders_name_the_same_rules(void **state) {
    (void)state;
    char err[1024];
    nameset_t listed = {0}, docs = {0}, folders = {0};
    long n = kdc_list_rules(g.lint, &listed.v, err, sizeof err);
    if (n < 0)
        fail_msg("%s", err);
    listed.n = (size_t)n;
    if (load_rule_docs(&docs, err, sizeof err))
        fail_msg("%s", err);
    long nf = kdc_list_subdirs(g.fixtures_dir, &folders.v);
    if (nf < 0)
        fail_msg("cannot read fixtures folder %s", g.fixtures_dir);
    folders.n = (size_t)nf;

    kdc_problems_t p = {0};
    if (!listed.n)
        kdc_problems_add(&p, "kdc-lint --list-rules lists no rules");
    report_missing(&listed, "listed by --list-rules", &docs, "has no rules/<name>.md", &p);
    report_missing(&listed, "listed by --list-rules", &folders, "has no fixtures/<name>/ folder", &p);
    report_missing(&docs, "documented in rules/", &listed, "not listed by --list-rules", &p);
    report_missing(&folders, "a fixtures/ folder", &listed, "not listed by --list-rules", &p);
    print_message("--list-rules: %zu, rules/*.md: %zu, fixtures/*/: %zu\n", listed.n, docs.n,
                  folders.n);
    nameset_free(&listed);
    nameset_free(&docs);
    nameset_free(&folders);
    if (p.n) {
        for (size_t i = 0; i < p.n; i++)
            print_error("  %s\n", p.v[i]);
        size_t cnt = p.n;
        kdc_problems_free(&p);
        fail_msg("%zu mismatch(es) between --list-rules, rules/*.md and fixtures/*/", cnt);
    }
}

static void every_fixture_folder_expects_and_rejects_its_rule(void **state) {
    (void)state;
    char err[1024];
    kdc_fixture_set_t set;
    if (kdc_fixtures_discover(g.fixtures_dir, &set, err, sizeof err))
        fail_msg("%s", err);
    kdc_problems_t p = {0};
    if (!set.nrules)
        kdc_problems_add(&p, "no fixture folders under %s", g.fixtures_dir);
    for (size_t r = 0; r < set.nrules; r++) {
        size_t inputs = 0, ex = 0, ok = 0;
        for (size_t i = 0; i < set.n; i++) {
            if (strcmp(set.v[i].rule, set.rules[r]))
                continue;
            inputs++;
            /* one marker set per input: each input may have its own kdc-fixture: line */
            kdc_markers_t ms = {0};
            for (size_t k = 0; k < set.v[i].nsources; k++)
                if (kdc_markers_parse_file(&ms, set.v[i].sources[k], err, sizeof err))
                    kdc_problems_add(&p, "%s", err);
            ex += kdc_markers_count(&ms, KDC_MARK_EXPECT, set.rules[r]);
            ok += kdc_markers_count(&ms, KDC_MARK_OK, set.rules[r]);
            kdc_markers_free(&ms);
        }
        print_message("fixtures/%s/: %zu input(s), %zu expect and %zu ok marker(s) of its rule\n",
                      set.rules[r], inputs, ex, ok);
        if (!ex)
            kdc_problems_add(&p, "fixtures/%s/ has no \"expect: %s\" marker", set.rules[r],
                             set.rules[r]);
        if (!ok)
            kdc_problems_add(&p, "fixtures/%s/ has no \"ok: %s\" near-miss marker", set.rules[r],
                             set.rules[r]);
    }
    kdc_fixtures_free(&set);
    if (p.n) {
        for (size_t i = 0; i < p.n; i++)
            print_error("  %s\n", p.v[i]);
        size_t cnt = p.n;
        kdc_problems_free(&p);
        fail_msg("%zu fixture folder problem(s)", cnt);
    }
}

/* Rule names of the README's rule table: rows "| [`name`](rules/name.md) | ...". */
static int load_readme_rules(nameset_t *s, char *err, size_t errlen) {
    FILE *f = fopen(g.readme, "r");
    if (!f) {
        snprintf(err, errlen, "cannot read %s", g.readme);
        return -1;
    }
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        if (strncmp(line, "| [`", 4))
            continue;
        const char *name = line + 4, *end = strchr(name, '`');
        char link[512];
        if (!end || (size_t)(end - name) >= 200)
            continue;
        snprintf(link, sizeof link, "](rules/%.*s.md)", (int)(end - name), name);
        if (!strstr(line, link))
            continue; /* a table row of another kind */
        s->v = realloc(s->v, (s->n + 1) * sizeof *s->v);
        s->v[s->n++] = strndup(name, (size_t)(end - name));
    }
    fclose(f);
    return 0;
}

static void readme_rule_table_lists_the_same_rules(void **state) {
    (void)state;
    char err[1024];
    nameset_t listed = {0}, readme = {0};
    long n = kdc_list_rules(g.lint, &listed.v, err, sizeof err);
    if (n < 0)
        fail_msg("%s", err);
    listed.n = (size_t)n;
    if (load_readme_rules(&readme, err, sizeof err))
        fail_msg("%s", err);
    kdc_problems_t p = {0};
    report_missing(&listed, "listed by --list-rules", &readme, "not in README.md's rule table", &p);
    report_missing(&readme, "in README.md's rule table", &listed, "not listed by --list-rules", &p);
    for (size_t i = 0; i < p.n; i++)
        print_error("  %s\n", p.v[i]);
    size_t cnt = p.n;
    kdc_problems_free(&p);
    nameset_free(&listed);
    nameset_free(&readme);
    if (cnt)
        fail_msg("%zu mismatch(es) between --list-rules and README.md", cnt);
}

static void usage(void) {
    fprintf(stderr, "usage: test_registry [--kdc-lint PATH] [--rules DIR] [--fixtures DIR] "
                    "[--readme FILE]\n");
    exit(2);
}

int main(int argc, char **argv) {
    g.lint = getenv("KDC_LINT");
    g.rules_dir = getenv("KDC_RULES_DIR");
    g.fixtures_dir = getenv("KDC_FIXTURES_DIR");
    g.readme = getenv("KDC_README");
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--kdc-lint") && i + 1 < argc)
            g.lint = argv[++i];
        else if (!strcmp(argv[i], "--rules") && i + 1 < argc)
            g.rules_dir = argv[++i];
        else if (!strcmp(argv[i], "--fixtures") && i + 1 < argc)
            g.fixtures_dir = argv[++i];
        else if (!strcmp(argv[i], "--readme") && i + 1 < argc)
            g.readme = argv[++i];
        else
            usage();
    }
    if (!g.lint || !g.rules_dir || !g.fixtures_dir || !g.readme) {
        fprintf(stderr, "test_registry: kdc-lint, rules, fixtures and README paths are all "
                        "required\n");
        usage();
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(list_rules_docs_and_fixture_folders_name_the_same_rules),
        cmocka_unit_test(every_fixture_folder_expects_and_rejects_its_rule),
        cmocka_unit_test(readme_rule_table_lists_the_same_rules),
    };
    return cmocka_run_group_tests_name("rule registry, docs and fixtures agree", tests, NULL, NULL);
}
