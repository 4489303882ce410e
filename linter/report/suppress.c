#define _GNU_SOURCE
/* Suppression comments (see suppress.h). */
#include "suppress.h"
#include "regfile.h"
#include "rule.h"
#include "util.h"

#include <ctype.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char kdc_rule_invalid_suppression[] = "invalid-suppression";
const char kdc_rule_unused_suppression[] = "unused-suppression";

typedef struct supp {
    const char *file;
    unsigned line, col;     /* the directive's comment */
    unsigned first, last;   /* lines it covers */
    int block;              /* ignore-begin ... ignore-end */
    int valid;              /* an ignore-begin becomes valid at its ignore-end */
    const char **rules;     /* registry names */
    unsigned char *used;    /* per rule */
    size_t nrules;
    char *reason; /* owned: the text after the rules, white space runs made one space */
} supp_t;

typedef struct bad {
    const char *file;
    unsigned line, col;
    char *message;
} bad_t;

struct kdc_suppressions {
    KDC_VEC(supp_t) v;
    KDC_VEC(bad_t) bad;
    KDC_VEC(const char *) scanned;
};

kdc_suppressions_t *kdc_suppressions_new(void) {
    kdc_suppressions_t *s = calloc(1, sizeof *s);
    if (!s)
        kdc_oom();
    return s;
}

void kdc_suppressions_free(kdc_suppressions_t *s) {
    if (!s)
        return;
    for (size_t i = 0; i < s->v.n; i++) {
        free(s->v.v[i].rules);
        free(s->v.v[i].used);
        free(s->v.v[i].reason);
    }
    for (size_t i = 0; i < s->bad.n; i++)
        free(s->bad.v[i].message);
    free(s->v.v);
    free(s->bad.v);
    free(s->scanned.v);
    free(s);
}

/* ---------- one file's directives ---------- */

typedef struct scan {
    kdc_suppressions_t *s;
    const char *file;
    KDC_VEC(size_t) open; /* indexes of ignore-begin directives not closed yet */
} scan_t;

static void bad(scan_t *sc, unsigned line, unsigned col, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
static void bad(scan_t *sc, unsigned line, unsigned col, const char *fmt, ...) {
    bad_t b = {sc->file, line, col, NULL};
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&b.message, fmt, ap) < 0)
        kdc_oom();
    va_end(ap);
    KDC_VEC_PUSH(sc->s->bad, b);
}

static int same_rules(const supp_t *a, const supp_t *b) {
    if (a->nrules != b->nrules)
        return 0;
    for (size_t i = 0; i < a->nrules; i++) {
        size_t k = 0;
        while (k < b->nrules && b->rules[k] != a->rules[i])
            k++;
        if (k == b->nrules)
            return 0;
    }
    return 1;
}

/* Parses "[a, b]" at *p into d's rules; returns 0, or -1 after reporting. */
static int parse_rules(scan_t *sc, const char **p, const char *end, supp_t *d, const char *word) {
    const char *close = memchr(*p, ']', (size_t)(end - *p));
    if (!close) {
        bad(sc, d->line, d->col, "%s[ without a closing ']'", word);
        return -1;
    }
    for (const char *q = *p + 1; q <= close;) {
        const char *comma = memchr(q, ',', (size_t)(close - q));
        const char *stop = comma ? comma : close;
        const char *a = q, *b = stop;
        while (a < b && isspace((unsigned char)*a))
            a++;
        while (b > a && isspace((unsigned char)b[-1]))
            b--;
        if (a == b) {
            bad(sc, d->line, d->col,
                "suppression without a rule name: write %s[rule-name] reason", word);
            return -1;
        }
        char *name = kdc_xasprintf("%.*s", (int)(b - a), a);
        const kdc_rule_t *r = kdc_rule_find(name);
        if (!r) {
            bad(sc, d->line, d->col, "%s[%s]: unknown rule '%s' (see kdc-lint --list-rules)",
                word, name, name);
            free(name);
            return -1;
        }
        free(name);
        d->rules = kdc_xrealloc(d->rules, (d->nrules + 1) * sizeof *d->rules);
        d->rules[d->nrules++] = r->name;
        q = stop + 1;
    }
    *p = close + 1;
    return 0;
}

/* [p, r) with each run of white space (a block comment's line breaks and their leading
 * stars included) made one space: a reason as one line. */
static char *one_line(const char *p, const char *r) {
    char *out = kdc_xrealloc(NULL, (size_t)(r - p) + 1), *o = out;
    while (p < r) {
        if (isspace((unsigned char)*p)) {
            const char *q = p;
            int newline = 0;
            while (q < r && (isspace((unsigned char)*q) || (newline && *q == '*'))) {
                newline |= *q == '\n';
                q++;
            }
            *o++ = ' ';
            p = q;
        } else {
            *o++ = *p++;
        }
    }
    *o = 0;
    return out;
}

/* A comment's text [t, end), starting at line:col and ending on end_line;
 * `own_line`: nothing but white space before it on its line. */
static void directive(scan_t *sc, const char *t, const char *end, unsigned line, unsigned col,
                      unsigned end_line, int own_line) {
    static const char marker[] = "kdc-lint:";
    while (t < end && (isspace((unsigned char)*t) || *t == '/' || *t == '*' || *t == '!'))
        t++;
    if ((size_t)(end - t) < sizeof marker - 1 || memcmp(t, marker, sizeof marker - 1))
        return;
    const char *p = t + sizeof marker - 1;
    while (p < end && isspace((unsigned char)*p))
        p++;
    const char *w = p;
    while (p < end && (isalnum((unsigned char)*p) || *p == '-' || *p == '_'))
        p++;
    char *word = kdc_xasprintf("%.*s", (int)(p - w), w);
    const char *after = p;
    while (after < end && isspace((unsigned char)*after))
        after++;
    int bracket = after < end && *after == '[';
    supp_t d = {.file = sc->file, .line = line, .col = col};
    if (strcmp(word, "ignore") && strcmp(word, "ignore-begin") && strcmp(word, "ignore-end")) {
        /* prose after "kdc-lint:" is not a directive; a directive-like word is */
        if (bracket || !strncmp(word, "ignore", 6))
            bad(sc, line, col, "unknown kdc-lint directive '%s' (ignore, ignore-begin, ignore-end)",
                word);
        free(word);
        return;
    }
    p = after;
    if (!strcmp(word, "ignore-end")) {
        if (bracket && parse_rules(sc, &p, end, &d, word)) {
            free(d.rules);
        } else if (!sc->open.n) {
            bad(sc, line, col, "ignore-end without an ignore-begin before it");
            free(d.rules);
        } else {
            supp_t *b = &sc->s->v.v[sc->open.v[sc->open.n - 1]];
            if (d.nrules && !same_rules(&d, b)) {
                bad(sc, line, col, "ignore-end names other rules than the ignore-begin at line %u",
                    b->line);
            } else {
                b->last = end_line;
                b->valid = 1;
                sc->open.n--;
            }
            free(d.rules);
        }
        free(word);
        return;
    }
    if (!bracket) {
        bad(sc, line, col, "suppression without a rule name: write %s[rule-name] reason", word);
        free(word);
        return;
    }
    if (parse_rules(sc, &p, end, &d, word)) {
        free(d.rules);
        free(word);
        return;
    }
    while (p < end && (isspace((unsigned char)*p) || *p == '*' || *p == '/'))
        p++; /* the comment's own closing stars and slashes are no reason */
    const char *r = end;
    while (r > p && (isspace((unsigned char)r[-1]) || r[-1] == '*' || r[-1] == '/'))
        r--;
    if (p == r) {
        bad(sc, line, col, "suppression without a reason: write why after %s[...]", word);
        free(d.rules);
        free(word);
        return;
    }
    d.used = calloc(d.nrules, 1);
    if (!d.used)
        kdc_oom();
    d.reason = one_line(p, r);
    d.block = !strcmp(word, "ignore-begin");
    d.first = line;
    /* ignore: its own line(s); on a line of its own, also the next one */
    d.last = end_line + (own_line ? 1 : 0);
    d.valid = !d.block;
    KDC_VEC_PUSH(sc->s->v, d);
    if (d.block)
        KDC_VEC_PUSH(sc->open, sc->s->v.n - 1);
    free(word);
}

/* Is this identifier run (ending at p) a string/char literal prefix? */
static int literal_prefix(const char *start, const char *p, int raw) {
    const char *q = p;
    while (q > start && (isalnum((unsigned char)q[-1]) || q[-1] == '_'))
        q--;
    size_t n = (size_t)(p - q);
    static const char *const plain[] = {"L", "u", "U", "u8", NULL};
    static const char *const rawp[] = {"R", "LR", "uR", "UR", "u8R", NULL};
    const char *const *set = raw ? rawp : plain;
    for (size_t i = 0; set[i]; i++)
        if (strlen(set[i]) == n && !memcmp(q, set[i], n))
            return 1;
    return 0;
}

static int blank_before(const char *line_start, const char *p) {
    while (line_start < p && isspace((unsigned char)*line_start))
        line_start++;
    return line_start == p;
}

/* Walks C/C++ text: strings, character literals and raw strings are skipped,
 * every comment goes to directive(). */
static void scan_text(scan_t *sc, const char *s, size_t len) {
    const char *p = s, *end = s + len;
    unsigned line = 1;
    const char *line_start = s;
#define NEWLINE(q) (line++, line_start = (q) + 1)
    while (p < end) {
        char c = *p;
        if (c == '\n') {
            NEWLINE(p);
            p++;
        } else if (c == '/' && p + 1 < end && p[1] == '/') {
            unsigned l0 = line, c0 = (unsigned)(p - line_start) + 1;
            const char *t = p + 2, *q = t;
            while (q < end && *q != '\n') {
                if (*q == '\\' && q + 1 < end && q[1] == '\n') {
                    q++;
                    NEWLINE(q);
                }
                q++;
            }
            directive(sc, t, q, l0, c0, line, blank_before(line_start, p));
            p = q;
        } else if (c == '/' && p + 1 < end && p[1] == '*') {
            unsigned l0 = line, c0 = (unsigned)(p - line_start) + 1;
            const char *t = p + 2, *q = t;
            while (q < end && !(*q == '*' && q + 1 < end && q[1] == '/')) {
                if (*q == '\n')
                    NEWLINE(q);
                q++;
            }
            directive(sc, t, q, l0, c0, line, blank_before(line_start, p));
            p = q < end ? q + 2 : end;
        } else if (c == '"' && p > s && p[-1] == 'R' && literal_prefix(s, p, 1)) {
            /* R"delim( ... )delim" */
            const char *open = memchr(p, '(', (size_t)(end - p) < 18 ? (size_t)(end - p) : 18);
            if (!open) {
                p++;
                continue;
            }
            size_t dl = (size_t)(open - p - 1);
            const char *q = open + 1;
            for (; q < end; q++) {
                if (*q == '\n')
                    NEWLINE(q);
                if (*q == ')' && (size_t)(end - q) > dl + 1 && !memcmp(q + 1, p + 1, dl) &&
                    q[1 + dl] == '"')
                    break;
            }
            p = q < end ? q + dl + 2 : end;
        } else if (c == '"' || (c == '\'' && (p == s || !(isalnum((unsigned char)p[-1]) ||
                                                          p[-1] == '_') ||
                                               literal_prefix(s, p, 0)))) {
            /* a string or character literal; a ' after a digit is a separator */
            const char *q = p + 1;
            while (q < end && *q != c && *q != '\n') {
                if (*q == '\\' && q + 1 < end) {
                    if (q[1] == '\n')
                        NEWLINE(q + 1);
                    q++;
                }
                q++;
            }
            p = q < end && *q == c ? q + 1 : q;
        } else {
            p++;
        }
    }
#undef NEWLINE
}

/* The directives of file, whose contents are text[0..len) (changed: CRs made LFs). */
static void scan_file_text(kdc_suppressions_t *s, const char *file, char *text, size_t len) {
    /* a lone CR ends a line for clang (classic Mac line endings), as CR LF and LF do: made
     * LF here, so that lines are counted as clang counts them (no offset moves) */
    for (size_t i = 0; i < len; i++)
        if (text[i] == '\r' && (i + 1 == len || text[i + 1] != '\n'))
            text[i] = '\n';
    /* every directive starts with the marker: a file without it has none (most files) */
    if (!memmem(text, len, "kdc-lint:", 9))
        return;
    scan_t sc = {s, file, {0}};
    scan_text(&sc, text, len);
    for (size_t i = 0; i < sc.open.n; i++) {
        const supp_t *b = &s->v.v[sc.open.v[i]];
        bad(&sc, b->line, b->col, "ignore-begin without an ignore-end after it");
    }
    free(sc.open.v);
}

void kdc_suppressions_scan(kdc_suppressions_t *s, const char *file) {
    if (!file)
        return;
    for (size_t i = 0; i < s->scanned.n; i++)
        if (s->scanned.v[i] == file || !strcmp(s->scanned.v[i], file))
            return;
    KDC_VEC_PUSH(s->scanned, file);
    char *why = NULL;
    int fd = kdc_open_regular(file, &why); /* a FIFO since parsed must not block (regfile.h) */
    free(why);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0)
            close(fd);
        return; /* the file was analysed moments ago; nothing to suppress with */
    }
    size_t cap = (size_t)st.st_size + 1, len = 0;
    char *text = kdc_xrealloc(NULL, cap);
    ssize_t n;
    while ((n = read(fd, text + len, cap - len)) > 0)
        if ((len += (size_t)n) == cap)
            text = kdc_xrealloc(text, cap *= 2);
    close(fd);
    scan_file_text(s, file, text, len);
    free(text);
}

void kdc_suppressions_scan_text(kdc_suppressions_t *s, const char *file, const char *text,
                                size_t len) {
    if (!file)
        return;
    KDC_VEC_PUSH(s->scanned, file);
    char *copy = kdc_xrealloc(NULL, len ? len : 1); /* no NUL after it: none is read */
    if (len)
        memcpy(copy, text, len);
    scan_file_text(s, file, copy, len);
    free(copy);
}

static int same_file(const char *a, const char *b) {
    return a == b || (a && b && !strcmp(a, b));
}

const char *kdc_suppressions_match(kdc_suppressions_t *s, const kdc_finding_t *f) {
    unsigned from = f->loc.line, to = f->loc.end_line > from ? f->loc.end_line : from;
    const char *hit = NULL;
    for (size_t i = 0; i < s->v.n; i++) {
        supp_t *d = &s->v.v[i];
        if (!d->valid || d->last < from || d->first > to || !same_file(d->file, f->loc.file))
            continue;
        for (size_t k = 0; k < d->nrules; k++)
            if (!strcmp(d->rules[k], f->rule)) {
                d->used[k] = 1;
                if (!hit)
                    hit = d->reason;
            }
    }
    return hit;
}

static void add(kdc_findings_t *out, const char *rule, const char *file, unsigned line,
                unsigned col, char *message) {
    kdc_finding_t f = {0};
    f.rule = rule;
    f.severity = KDC_SEV_WARNING;
    f.message = message;
    f.loc.file = file;
    f.loc.line = f.loc.end_line = line;
    f.loc.col = f.loc.end_col = col;
    kdc_findings_add(out, &f);
}

void kdc_suppressions_report(const kdc_suppressions_t *s, kdc_findings_t *out,
                             int (*unused)(void *ctx, const char *file, const char *rule),
                             void *ctx) {
    for (size_t i = 0; i < s->bad.n; i++) {
        const bad_t *b = &s->bad.v[i];
        add(out, kdc_rule_invalid_suppression, b->file, b->line, b->col,
            kdc_xasprintf("%s; it suppresses nothing", b->message));
    }
    for (size_t i = 0; unused && i < s->v.n; i++) {
        const supp_t *d = &s->v.v[i];
        char *names = NULL;
        size_t len = 0, n = 0;
        FILE *m = open_memstream(&names, &len);
        for (size_t k = 0; d->valid && k < d->nrules; k++)
            if (!d->used[k] && unused(ctx, d->file, d->rules[k]))
                fprintf(m, "%s%s", n++ ? ", " : "", d->rules[k]);
        fclose(m);
        if (n)
            add(out, kdc_rule_unused_suppression, d->file, d->line, d->col,
                kdc_xasprintf("%s matches no finding of %s %s: %s%s%s", d->block ? "ignore-begin" : "ignore",
                              names,
                              d->block ? "before its ignore-end" : "on this line or the next",
                              n == d->nrules ? "remove the suppression" : "remove ",
                              n == d->nrules ? "" : names,
                              n == d->nrules ? "" : " from its list"));
        free(names);
    }
}
