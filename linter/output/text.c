/* clang-style text: file:line:col: warning: message [rule], the source line
 * with a caret, and note: lines for related locations. With run->color, the
 * colours of gcc/clang diagnostics (ANSI SGR): bold location and message,
 * magenta warning, red error, cyan note, green caret. */
#include "output.h"
#include "escape.h"
#include "regfile.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* Returns line `line` (1-based) of `file` without its newline, or NULL. */
static char *source_line(const char *file, unsigned line) {
    FILE *f = kdc_fopen_regular(file);
    if (!f)
        return NULL;
    char *buf = NULL;
    size_t cap = 0;
    ssize_t len = 0;
    for (unsigned i = 0; i < line; i++) {
        len = getline(&buf, &cap, f);
        if (len < 0) {
            free(buf);
            fclose(f);
            return NULL;
        }
    }
    fclose(f);
    while (len > 0 && (buf[len - 1] == '\n' || buf[len - 1] == '\r'))
        buf[--len] = 0;
    return buf;
}

/* Longest source line shown whole; a longer one (generated or minified code)
 * is cut to this many bytes around the caret, with "..." where it was cut. */
#define SNIPPET_MAX 160

/* SGR sequences, or "" without colour */
typedef struct palette {
    const char *bold, *warning, *error, *note, *caret, *reset;
} palette_t;

static const palette_t colours = {"\033[1m", "\033[1;35m", "\033[1;31m",
                                  "\033[1;36m", "\033[1;32m", "\033[0m"};
static const palette_t plain = {"", "", "", "", "", ""};

static const char *severity_colour(const palette_t *c, kdc_severity_t s) {
    return s == KDC_SEV_ERROR ? c->error : s == KDC_SEV_WARNING ? c->warning : c->note;
}

static void print_snippet(FILE *o, const kdc_loc_t *loc, const palette_t *c) {
    char *text = source_line(loc->file, loc->line);
    if (!text)
        return;
    size_t len = strlen(text), caret = loc->col ? loc->col - 1 : 0, from = 0, to = len;
    if (caret > len)
        caret = len;
    if (len > SNIPPET_MAX) {
        from = caret > SNIPPET_MAX / 2 ? caret - SNIPPET_MAX / 2 : 0;
        to = from + SNIPPET_MAX < len ? from + SNIPPET_MAX : len;
        while (from < caret && ((unsigned char)text[from] & 0xC0) == 0x80)
            from++; /* never start or end inside a UTF-8 sequence */
        while (to < len && ((unsigned char)text[to] & 0xC0) == 0x80)
            to++;
    }
    const char *pre = from ? "..." : "", *post = to < len ? "..." : "";
    text[to] = 0;
    fprintf(o, "  %s", pre);
    kdc_fputs_shown(text + from, o); /* a source line's control characters too */
    fprintf(o, "%s\n  %s", post, from ? "   " : "");
    for (size_t i = from; i < caret; i++)
        if (text[i] == '\t')
            fputc('\t', o);
        else
            for (size_t w = kdc_shown_width(text, i); w; w--)
                fputc(' ', o);
    fprintf(o, "%s^%s\n", c->caret, c->reset);
    free(text);
}

int kdc_output_text(FILE *o, const kdc_run_t *run) {
    const palette_t *c = run->color ? &colours : &plain;
    for (size_t i = 0; i < run->findings->n; i++) {
        const kdc_finding_t *f = &run->findings->v[i];
        /* paths and messages escaped: a file name cannot forge a line (escape.h) */
        fputs(c->bold, o);
        kdc_fputs_shown(kdc_display_path(run->cwd, f->loc.file), o);
        fprintf(o, ":%u:%u: %s%s:%s%s ", f->loc.line, f->loc.col, severity_colour(c, f->severity),
                kdc_severity_name(f->severity), c->reset, c->bold);
        kdc_fputs_shown(f->message, o);
        fprintf(o, " [%s]%s\n", f->rule, c->reset);
        print_snippet(o, &f->loc, c);
        for (size_t k = 0; k < f->nrelated; k++) {
            const kdc_related_t *r = &f->related[k];
            fputs(c->bold, o);
            kdc_fputs_shown(kdc_display_path(run->cwd, r->loc.file), o);
            fprintf(o, ":%u:%u: %snote:%s ", r->loc.line, r->loc.col, c->note, c->reset);
            kdc_fputs_shown(r->message, o);
            fputc('\n', o);
            print_snippet(o, &r->loc, c);
        }
    }
    return ferror(o) ? -1 : 0;
}
