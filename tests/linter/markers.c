/* Parser for inline expectation markers; see markers.h. */
#define _GNU_SOURCE
#include "markers.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void set_err(char *err, size_t errlen, const char *fmt, ...) {
    if (!err || !errlen)
        return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, errlen, fmt, ap);
    va_end(ap);
}

int kdc_rule_name_valid(const char *s) {
    /* [a-z][a-z0-9]*(-[a-z0-9]+)* */
    if (!s || !(*s >= 'a' && *s <= 'z'))
        return 0;
    int prev_dash = 0;
    for (; *s; s++) {
        if (*s == '-') {
            if (prev_dash)
                return 0;
            prev_dash = 1;
        } else if ((*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')) {
            prev_dash = 0;
        } else {
            return 0;
        }
    }
    return !prev_dash;
}

int kdc_markers_has(const kdc_markers_t *ms, kdc_mark_kind_t kind, const char *file,
                    unsigned line, const char *rule) {
    for (size_t i = 0; i < ms->n; i++) {
        const kdc_marker_t *m = &ms->v[i];
        if (m->kind == kind && m->line == line && !strcmp(m->rule, rule) && !strcmp(m->file, file))
            return 1;
    }
    return 0;
}

size_t kdc_markers_count(const kdc_markers_t *ms, kdc_mark_kind_t kind, const char *rule) {
    size_t n = 0;
    for (size_t i = 0; i < ms->n; i++)
        if (ms->v[i].kind == kind && (!rule || !strcmp(ms->v[i].rule, rule)))
            n++;
    return n;
}

static int add_marker(kdc_markers_t *ms, const char *file, unsigned line, const char *rule,
                      kdc_mark_kind_t kind, char *err, size_t errlen) {
    kdc_mark_kind_t other = kind == KDC_MARK_EXPECT ? KDC_MARK_OK : KDC_MARK_EXPECT;
    if (kdc_markers_has(ms, other, file, line, rule)) {
        set_err(err, errlen, "%s:%u: rule %s is marked both expect and ok", file, line, rule);
        return -1;
    }
    if (kdc_markers_has(ms, kind, file, line, rule))
        return 0;
    if (ms->n == ms->cap) {
        size_t cap = ms->cap ? ms->cap * 2 : 16;
        kdc_marker_t *v = realloc(ms->v, cap * sizeof *v);
        if (!v)
            abort();
        ms->v = v;
        ms->cap = cap;
    }
    kdc_marker_t *m = &ms->v[ms->n++];
    m->file = strdup(file);
    m->rule = strdup(rule);
    m->line = line;
    m->kind = kind;
    if (!m->file || !m->rule)
        abort();
    return 0;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = '\0';
    return s;
}

static int starts_with(const char *s, const char *prefix) {
    return !strncmp(s, prefix, strlen(prefix));
}

/* "expect bare-commit" / "ok bare-commit": a marker with its colon missing. */
static int looks_like_broken_marker(const char *s) {
    const char *rest = NULL;
    if (starts_with(s, "expect") && !starts_with(s, "expect:"))
        rest = s + 6;
    else if (starts_with(s, "ok") && !starts_with(s, "ok:"))
        rest = s + 2;
    if (!rest || !isspace((unsigned char)*rest))
        return 0;
    while (isspace((unsigned char)*rest))
        rest++;
    char word[128];
    size_t n = 0;
    while (rest[n] && !isspace((unsigned char)rest[n]) && rest[n] != ',' && rest[n] != ';' &&
           n + 1 < sizeof word) {
        word[n] = rest[n];
        n++;
    }
    word[n] = '\0';
    return strchr(word, '-') && kdc_rule_name_valid(word);
}

/* Handles one comment's text (without the comment delimiters). */
static int handle_comment(kdc_markers_t *ms, const char *file, unsigned line, int multiline,
                          const char *body, char *err, size_t errlen) {
    char *copy = strdup(body);
    if (!copy)
        abort();
    char *s = trim(copy);
    int rc = 0;

    if (starts_with(s, "kdc-fixture:")) {
        if (line != 1 || multiline) {
            set_err(err, errlen, "%s:%u: a kdc-fixture: comment must be a one-line comment on line 1",
                    file, line);
            rc = -1;
            goto out;
        }
        if (ms->has_args) {
            set_err(err, errlen, "%s:%u: more than one kdc-fixture: comment", file, line);
            rc = -1;
            goto out;
        }
        ms->has_args = 1;
        char *save = NULL;
        for (char *tok = strtok_r(s + strlen("kdc-fixture:"), " \t", &save); tok;
             tok = strtok_r(NULL, " \t", &save)) {
            char **a = realloc(ms->args, (ms->nargs + 1) * sizeof *a);
            if (!a || !(a[ms->nargs] = strdup(tok)))
                abort();
            ms->args = a;
            ms->nargs++;
        }
        goto out;
    }
    if (!starts_with(s, "expect:") && !starts_with(s, "ok:")) {
        if (looks_like_broken_marker(s)) {
            set_err(err, errlen, "%s:%u: marker without ':' in comment \"%s\"", file, line, s);
            rc = -1;
        }
        goto out;
    }
    if (multiline) {
        set_err(err, errlen, "%s:%u: a marker comment must fit on one line", file, line);
        rc = -1;
        goto out;
    }
    char *save_part = NULL;
    for (char *part = strtok_r(s, ";", &save_part); part; part = strtok_r(NULL, ";", &save_part)) {
        part = trim(part);
        kdc_mark_kind_t kind;
        if (starts_with(part, "expect:")) {
            kind = KDC_MARK_EXPECT;
            part += strlen("expect:");
        } else if (starts_with(part, "ok:")) {
            kind = KDC_MARK_OK;
            part += strlen("ok:");
        } else {
            set_err(err, errlen, "%s:%u: \"%s\" is neither \"expect:\" nor \"ok:\"", file, line, part);
            rc = -1;
            goto out;
        }
        int nrules = 0;
        char *save_rule = NULL;
        for (char *r = strtok_r(part, ",", &save_rule); r; r = strtok_r(NULL, ",", &save_rule)) {
            r = trim(r);
            if (!kdc_rule_name_valid(r)) {
                set_err(err, errlen, "%s:%u: \"%s\" is not a rule name", file, line, r);
                rc = -1;
                goto out;
            }
            if (add_marker(ms, file, line, r, kind, err, errlen)) {
                rc = -1;
                goto out;
            }
            nrules++;
        }
        if (!nrules) {
            set_err(err, errlen, "%s:%u: marker names no rule", file, line);
            rc = -1;
            goto out;
        }
    }
out:
    free(copy);
    return rc;
}

int kdc_markers_parse_text(kdc_markers_t *ms, const char *file, const char *text,
                           char *err, size_t errlen) {
    unsigned line = 1;
    const char *p = text;
    while (*p) {
        if (p[0] == '/' && p[1] == '*') {
            unsigned start = line;
            const char *b = p + 2, *e = strstr(b, "*/");
            if (!e) {
                set_err(err, errlen, "%s:%u: unterminated comment", file, start);
                return -1;
            }
            int multiline = 0;
            for (const char *q = b; q < e; q++)
                if (*q == '\n') {
                    line++;
                    multiline = 1;
                }
            char *body = strndup(b, (size_t)(e - b));
            if (!body)
                abort();
            int rc = handle_comment(ms, file, start, multiline, body, err, errlen);
            free(body);
            if (rc)
                return -1;
            p = e + 2;
        } else if (p[0] == '/' && p[1] == '/') {
            const char *b = p + 2, *e = strchr(b, '\n');
            if (!e)
                e = b + strlen(b);
            char *body = strndup(b, (size_t)(e - b));
            if (!body)
                abort();
            int rc = handle_comment(ms, file, line, 0, body, err, errlen);
            free(body);
            if (rc)
                return -1;
            p = e;
        } else if (*p == '"' || *p == '\'') {
            char quote = *p++;
            while (*p && *p != quote && *p != '\n') {
                if (*p == '\\' && p[1]) {
                    if (p[1] == '\n')
                        line++;
                    p++;
                }
                p++;
            }
            if (*p == quote)
                p++;
        } else {
            if (*p == '\n')
                line++;
            p++;
        }
    }
    return 0;
}

int kdc_markers_parse_file(kdc_markers_t *ms, const char *path, char *err, size_t errlen) {
    char resolved[PATH_MAX];
    if (!realpath(path, resolved)) {
        set_err(err, errlen, "%s: %s", path, strerror(errno));
        return -1;
    }
    FILE *f = fopen(resolved, "rb");
    if (!f) {
        set_err(err, errlen, "%s: %s", resolved, strerror(errno));
        return -1;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&buf, &len);
    if (!mem)
        abort();
    char chunk[8192];
    size_t got;
    while ((got = fread(chunk, 1, sizeof chunk, f)) > 0)
        fwrite(chunk, 1, got, mem);
    int rerr = ferror(f);
    fclose(f);
    fclose(mem);
    if (rerr) {
        set_err(err, errlen, "%s: read error", resolved);
        free(buf);
        return -1;
    }
    int rc = kdc_markers_parse_text(ms, resolved, buf, err, errlen);
    free(buf);
    return rc;
}

void kdc_markers_free(kdc_markers_t *ms) {
    for (size_t i = 0; i < ms->n; i++) {
        free(ms->v[i].file);
        free(ms->v[i].rule);
    }
    for (size_t i = 0; i < ms->nargs; i++)
        free(ms->args[i]);
    free(ms->v);
    free(ms->args);
    memset(ms, 0, sizeof *ms);
}
