/* clang-style text: file:line:col: warning: message [rule], the source line
 * with a caret, and note: lines for related locations. */
#include "output.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

const char *kdc_display_path(const char *cwd, const char *path) {
    if (!path)
        return "<unknown>";
    size_t n = cwd ? strlen(cwd) : 0;
    if (n && !strncmp(path, cwd, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

/* Returns line `line` (1-based) of `file` without its newline, or NULL. */
static char *source_line(const char *file, unsigned line) {
    FILE *f = fopen(file, "r");
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

static void print_snippet(FILE *o, const kdc_loc_t *loc) {
    char *text = source_line(loc->file, loc->line);
    if (!text)
        return;
    fprintf(o, "  %s\n  ", text);
    for (unsigned i = 1; i < loc->col && text[i - 1]; i++)
        fputc(text[i - 1] == '\t' ? '\t' : ' ', o);
    fputs("^\n", o);
    free(text);
}

int kdc_output_text(FILE *o, const kdc_run_t *run) {
    for (size_t i = 0; i < run->findings->n; i++) {
        const kdc_finding_t *f = &run->findings->v[i];
        fprintf(o, "%s:%u:%u: %s: %s [%s]\n", kdc_display_path(run->cwd, f->loc.file), f->loc.line,
                f->loc.col, kdc_severity_name(f->severity), f->message, f->rule);
        print_snippet(o, &f->loc);
        for (size_t k = 0; k < f->nrelated; k++) {
            const kdc_related_t *r = &f->related[k];
            fprintf(o, "%s:%u:%u: note: %s\n", kdc_display_path(run->cwd, r->loc.file), r->loc.line,
                    r->loc.col, r->message);
            print_snippet(o, &r->loc);
        }
    }
    return ferror(o) ? -1 : 0;
}
