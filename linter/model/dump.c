/* Debug dump of the model: kdc-lint --dump-model FILE. */
#include "dump.h"

#include <stdio.h>

static const char *ekind[] = {"other", "call", "ref", "member", "string", "int",
                              "null", "unary", "binary", "cond", "index", "this", "init"};
static const char *skind[] = {"compound", "expr", "if", "while", "do", "for", "switch", "case",
                              "default", "break", "continue", "return", "goto", "label", "try",
                              "null"};

static void dump_expr(FILE *o, const kdc_expr_t *e, int d) {
    if (!e) {
        fprintf(o, "%*s(nil)\n", d * 2, "");
        return;
    }
    fprintf(o, "%*s%s", d * 2, "", ekind[e->kind]);
    if (e->op)
        fprintf(o, " op=%d", e->op);
    if (e->name && *e->name)
        fprintf(o, " name=%s", e->name);
    if (e->kind == KDC_E_STRING)
        fprintf(o, " str=\"%s\"", e->str);
    if (e->has_ival)
        fprintf(o, " ival=%lld", e->ival);
    if (e->kind == KDC_E_REF)
        fprintf(o, " ref=%d", e->ref);
    if (e->callee_noreturn)
        fprintf(o, " noreturn");
    fprintf(o, " @%u:%u\n", e->loc.line, e->loc.col);
    if (e->recv) {
        fprintf(o, "%*srecv:\n", d * 2 + 2, "");
        dump_expr(o, e->recv, d + 2);
    }
    if (e->callee_expr) {
        fprintf(o, "%*scallee:\n", d * 2 + 2, "");
        dump_expr(o, e->callee_expr, d + 2);
    }
    for (unsigned i = 0; i < e->nkids; i++)
        dump_expr(o, e->kids[i], d + 1);
}

static void dump_stmt(FILE *o, const kdc_stmt_t *s, int d) {
    if (!s)
        return;
    fprintf(o, "%*s[%s]%s%s @%u\n", d * 2, "", skind[s->kind], s->label ? " " : "",
            s->label ? s->label : "", s->loc.line);
    if (s->init) {
        fprintf(o, "%*sinit:\n", d * 2 + 2, "");
        dump_stmt(o, s->init, d + 2);
    }
    if (s->expr)
        dump_expr(o, s->expr, d + 1);
    if (s->inc) {
        fprintf(o, "%*sinc:\n", d * 2 + 2, "");
        dump_expr(o, s->inc, d + 2);
    }
    if (s->body)
        dump_stmt(o, s->body, d + 1);
    if (s->els) {
        fprintf(o, "%*selse:\n", d * 2 + 2, "");
        dump_stmt(o, s->els, d + 2);
    }
    for (unsigned i = 0; i < s->nkids; i++)
        dump_stmt(o, s->kids[i], d + 1);
}

void kdc_dump_program(FILE *o, const kdc_program_t *p) {
    for (size_t i = 0; i < kdc_program_nfuncs(p); i++) {
        const kdc_func_t *f = kdc_program_func(p, i);
        fprintf(o, "function %s usr=%s %s:%u params=%u\n", f->name, f->usr, f->loc.file,
                f->loc.line, f->nparams);
        dump_stmt(o, f->body, 1);
    }
}
