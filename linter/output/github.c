/*
 * GitHub Actions workflow commands: one annotation per finding,
 *
 *   ::warning file=src/w.c,line=42,endLine=42,col=5,endColumn=33,title=bare-commit::message
 *
 * with the related locations as further lines of the message. Paths are
 * relative to the repository root (GITHUB_WORKSPACE in a checkout). Input
 * errors and incomplete translation units are annotated too. Escaping follows
 * the runner: in the message %, CR and LF become %25, %0D and %0A; in
 * properties also ':' and ',' (%3A, %2C). Every other control character is
 * written as a C escape (escape.h), which the runner shows as it is.
 */
#include "output.h"
#include "escape.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void escape(FILE *o, const char *s, int property) {
    for (; s && *s; s++) {
        switch (*s) {
        case '%': fputs("%25", o); break;
        case '\r': fputs("%0D", o); break;
        case '\n': fputs("%0A", o); break;
        case ':':
            if (property)
                fputs("%3A", o);
            else
                fputc(':', o);
            break;
        case ',':
            if (property)
                fputs("%2C", o);
            else
                fputc(',', o);
            break;
        default:
            /* the runner decodes only %25, %0D, %0A (and %3A, %2C): any other control
             * character is shown as its escape (escape.h), never raw */
            if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f ||
                ((unsigned char)*s == 0xc2 && (unsigned char)s[1] >= 0x80 &&
                 (unsigned char)s[1] <= 0x9f)) {
                char one[3] = {s[0], (unsigned char)*s == 0xc2 ? s[1] : 0, 0};
                kdc_fputs_shown(one, o);
                s += one[1] != 0;
            } else {
                fputc(*s, o);
            }
        }
    }
}

/* A path relative to the repository root when below it (as annotations need). */
static const char *repo_path(const char *root, const char *path, const char *cwd, char **tmp) {
    *tmp = NULL;
    if (!path)
        return "";
    if (path[0] != '/' && cwd)
        path = *tmp = kdc_xasprintf("%s/%s", cwd, path);
    size_t n = strlen(root);
    if (n > 1 && !strncmp(path, root, n) && path[n] == '/')
        return path + n + 1;
    return path;
}

static const char *command_of(kdc_severity_t sev) {
    return sev == KDC_SEV_ERROR ? "error" : sev == KDC_SEV_WARNING ? "warning" : "notice";
}

/* `::cmd file=F[,line=L,col=C][,endLine=..,endColumn=..][,title=T]::` */
static void command(FILE *o, const char *cmd, const char *root, const kdc_run_t *run,
                    const char *file, const kdc_loc_t *loc, const char *title) {
    char *tmp;
    fprintf(o, "::%s file=", cmd);
    escape(o, repo_path(root, file, run->cwd, &tmp), 1);
    free(tmp);
    if (loc && loc->line) {
        fprintf(o, ",line=%u", loc->line);
        if (loc->end_line >= loc->line)
            fprintf(o, ",endLine=%u", loc->end_line);
        if (loc->col)
            fprintf(o, ",col=%u", loc->col);
        if (loc->end_line == loc->line && loc->end_col > loc->col)
            fprintf(o, ",endColumn=%u", loc->end_col);
    }
    if (title) {
        fputs(",title=", o);
        escape(o, title, 1);
    }
    fputs("::", o);
}

int kdc_output_github(FILE *o, const kdc_run_t *run) {
    char *root = kdc_source_root(run->cwd);
    for (size_t i = 0; i < run->findings->n; i++) {
        const kdc_finding_t *f = &run->findings->v[i];
        char *title = kdc_xasprintf("kdc-lint %s", f->rule);
        command(o, command_of(f->severity), root, run, f->loc.file, &f->loc, title);
        free(title);
        escape(o, f->message, 0);
        escape(o, " [", 0);
        escape(o, f->rule, 0);
        escape(o, "]", 0);
        for (size_t k = 0; k < f->nrelated; k++) {
            const kdc_related_t *r = &f->related[k];
            char *tmp, *line;
            line = kdc_xasprintf("\n%s:%u:%u: note: %s",
                                 repo_path(root, r->loc.file, run->cwd, &tmp), r->loc.line,
                                 r->loc.col, r->message);
            escape(o, line, 0);
            free(line);
            free(tmp);
        }
        fputc('\n', o);
    }
    for (size_t i = 0; i < run->inputs->nerrors; i++) {
        command(o, "error", root, run, run->inputs->errors[i].file, NULL, "kdc-lint input error");
        escape(o, run->inputs->errors[i].message, 0);
        fputc('\n', o);
    }
    size_t ntus = kdc_program_ntus(run->program);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(run->program, i);
        if (!tu->incomplete)
            continue;
        command(o, "warning", root, run, tu->file, NULL, "kdc-lint incomplete analysis");
        char *text;
        if (tu->nerrors)
            text = kdc_xasprintf("%u compile error%s; analysed partially (first: %s); pass -p "
                                 "BUILD_DIR for the project's exact flags",
                                 tu->nerrors, tu->nerrors == 1 ? "" : "s",
                                 tu->first_error ? kdc_display_path(run->cwd, tu->first_error)
                                                 : "?");
        else
            text = kdc_xasprintf("analysed partially: %s",
                                 tu->too_deep ? kdc_display_path(run->cwd, tu->too_deep) : "?");
        escape(o, text, 0);
        free(text);
        fputc('\n', o);
    }
    free(root);
    return ferror(o) ? -1 : 0;
}
