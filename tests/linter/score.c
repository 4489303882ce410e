/* Comparing findings with markers; see score.h. */
#define _GNU_SOURCE
#include "score.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void kdc_problems_add(kdc_problems_t *p, const char *fmt, ...) {
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&s, fmt, ap) < 0)
        abort();
    va_end(ap);
    char **v = realloc(p->v, (p->n + 1) * sizeof *v);
    if (!v)
        abort();
    p->v = v;
    p->v[p->n++] = s;
}

void kdc_problems_free(kdc_problems_t *p) {
    for (size_t i = 0; i < p->n; i++)
        free(p->v[i]);
    free(p->v);
    p->v = NULL;
    p->n = 0;
}

const char *kdc_display_path(const char *path, const char *base) {
    size_t n = base ? strlen(base) : 0;
    if (n && !strncmp(path, base, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

static int reported(const kdc_finding_t *f, size_t nf, const char *file, unsigned line,
                    const char *rule) {
    for (size_t i = 0; i < nf; i++)
        if (f[i].line == line && !strcmp(f[i].rule, rule) && !strcmp(f[i].file, file))
            return 1;
    return 0;
}

/* Returns 1 when finding i repeats an earlier finding's (file, line, rule). */
static int seen_before(const kdc_finding_t *f, size_t i) {
    for (size_t j = 0; j < i; j++)
        if (f[j].line == f[i].line && !strcmp(f[j].rule, f[i].rule) &&
            !strcmp(f[j].file, f[i].file))
            return 1;
    return 0;
}

size_t kdc_score_fixture(const kdc_markers_t *ms, const kdc_finding_t *f, size_t nf,
                         const char *display_base, kdc_problems_t *out) {
    size_t before = out->n;
    for (size_t i = 0; i < ms->n; i++) {
        const kdc_marker_t *m = &ms->v[i];
        if (m->kind == KDC_MARK_EXPECT && !reported(f, nf, m->file, m->line, m->rule))
            kdc_problems_add(out, "missing: %s:%u: %s expected but not reported",
                             kdc_display_path(m->file, display_base), m->line, m->rule);
    }
    for (size_t i = 0; i < nf; i++) {
        if (seen_before(f, i) ||
            kdc_markers_has(ms, KDC_MARK_EXPECT, f[i].file, f[i].line, f[i].rule))
            continue;
        int ok = kdc_markers_has(ms, KDC_MARK_OK, f[i].file, f[i].line, f[i].rule);
        kdc_problems_add(out, "extra:   %s:%u: %s reported %s",
                         kdc_display_path(f[i].file, display_base), f[i].line, f[i].rule,
                         ok ? "on a line marked ok" : "without an expect marker");
    }
    return out->n - before;
}

static int scored(const char *rule, const char *const *rules, size_t nrules) {
    for (size_t i = 0; i < nrules; i++)
        if (!strcmp(rules[i], rule))
            return 1;
    return 0;
}

void kdc_score_acceptance(const kdc_markers_t *ms, const kdc_finding_t *f, size_t nf,
                          const char *const *rules, size_t nrules, int ok_file,
                          const char *display_base, kdc_score_t *s, kdc_problems_t *out) {
    for (size_t i = 0; i < ms->n; i++) {
        const kdc_marker_t *m = &ms->v[i];
        if (!scored(m->rule, rules, nrules))
            continue;
        int hit = reported(f, nf, m->file, m->line, m->rule);
        if (m->kind == KDC_MARK_EXPECT) {
            s->expected_total++;
            if (hit)
                s->expected_found++;
            else
                kdc_problems_add(out, "missing: %s:%u: %s expected but not reported",
                                 kdc_display_path(m->file, display_base), m->line, m->rule);
        } else if (hit && !ok_file) {
            s->false_positives++;
            kdc_problems_add(out, "false positive: %s:%u: %s reported on a line marked ok",
                             kdc_display_path(m->file, display_base), m->line, m->rule);
        }
    }
    if (!ok_file)
        return;
    for (size_t i = 0; i < nf; i++) {
        if (seen_before(f, i))
            continue;
        s->false_positives++;
        kdc_problems_add(out, "false positive: %s:%u: %s reported in a compliant-only case",
                         kdc_display_path(f[i].file, display_base), f[i].line, f[i].rule);
    }
}

int kdc_case_is_ok_file(const char *path) {
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    const char *p = base;
    if (!isdigit((unsigned char)*p))
        return 0;
    while (isdigit((unsigned char)*p))
        p++;
    return !strncmp(p, "-ok-", 4);
}
