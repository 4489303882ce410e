/*
 * The one error convention of kdc/error.h, checked on every public header:
 * libclang reads each header's function declarations, their return types and
 * their doc comments, and a function whose documented errors do not follow
 * the rule fails the test:
 *
 *   - a signed integer return (int, int32_t, int64_t) documents its errors as
 *     KDC_ERR_* codes, or says it is never negative; it never documents -1;
 *   - a pointer return says when it is NULL;
 *   - any other return (an unsigned or enum value) is one of the "values, not
 *     statuses" that error.h lists, and every function that list names is
 *     declared with such a type;
 *   - every function has a doc comment.
 *
 *   test_error_convention ERROR_H HEADER... -- CLANG_ARGS...
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <clang-c/Index.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static struct {
        const char *error_h;
        const char **headers;
        int nheaders;
        const char **clang_args;
        int nclang_args;
} g;

enum ret_kind { RET_VOID, RET_SIGNED, RET_POINTER, RET_VALUE };

typedef struct decl {
        char *name;
        char *comment; /* NULL: none */
        enum ret_kind kind;
        char *header;
} decl_t;

static decl_t *decls;
static size_t ndecls;

static enum ret_kind kind_of(CXType t) {
        t = clang_getCanonicalType(t);
        switch (t.kind) {
        case CXType_Void:
                return RET_VOID;
        case CXType_Pointer:
                return RET_POINTER;
        case CXType_SChar:
        case CXType_Char_S:
        case CXType_Short:
        case CXType_Int:
        case CXType_Long:
        case CXType_LongLong:
                return RET_SIGNED;
        default:
                return RET_VALUE;
        }
}

static char *take(CXString s) {
        const char *c = clang_getCString(s);
        char *copy = c ? strdup(c) : NULL;
        clang_disposeString(s);
        return copy;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent,
                                     CXClientData data) {
        (void)parent;
        const char *header = data;
        if (clang_getCursorKind(c) != CXCursor_FunctionDecl ||
            !clang_Location_isFromMainFile(clang_getCursorLocation(c)))
                return CXChildVisit_Continue;
        decls = realloc(decls, (ndecls + 1) * sizeof *decls);
        assert_non_null(decls);
        decls[ndecls++] =
            (decl_t){take(clang_getCursorSpelling(c)),
                     take(clang_Cursor_getRawCommentText(c)),
                     kind_of(clang_getCursorResultType(c)), strdup(header)};
        return CXChildVisit_Continue;
}

static int setup(void **state) {
        (void)state;
        CXIndex index = clang_createIndex(0, 1);
        for (int i = 0; i < g.nheaders; i++) {
                CXTranslationUnit tu = NULL;
                enum CXErrorCode rc = clang_parseTranslationUnit2(
                    index, g.headers[i], g.clang_args, g.nclang_args, NULL, 0,
                    CXTranslationUnit_SkipFunctionBodies, &tu);
                if (rc != CXError_Success || !tu) {
                        fprintf(stderr, "libclang could not parse %s (%d)\n",
                                g.headers[i], (int)rc);
                        return -1;
                }
                for (unsigned d = 0; d < clang_getNumDiagnostics(tu); d++) {
                        CXDiagnostic diag = clang_getDiagnostic(tu, d);
                        if (clang_getDiagnosticSeverity(diag) >=
                            CXDiagnostic_Error) {
                                char *text = take(clang_formatDiagnostic(
                                    diag,
                                    clang_defaultDiagnosticDisplayOptions()));
                                fprintf(stderr, "%s\n", text);
                                free(text);
                                return -1;
                        }
                        clang_disposeDiagnostic(diag);
                }
                clang_visitChildren(clang_getTranslationUnitCursor(tu), visit,
                                    (CXClientData)g.headers[i]);
                clang_disposeTranslationUnit(tu);
        }
        clang_disposeIndex(index);
        return ndecls ? 0 : -1;
}

/* The names error.h lists under "Values, not statuses": "kdc_x()" in its items. */
static char *values_section(void) {
        FILE *f = fopen(g.error_h, "r");
        assert_non_null(f);
        static char text[1 << 16];
        size_t n = fread(text, 1, sizeof text - 1, f);
        fclose(f);
        text[n] = '\0';
        char *start = strstr(text, "@par Values, not statuses");
        assert_non_null(start);
        char *end = strstr(start, "*/");
        assert_non_null(end);
        *end = '\0';
        return start;
}

static int listed(const char *section, const char *name) {
        char needle[160];
        snprintf(needle, sizeof needle, " %s()", name);
        return strstr(section, needle) != NULL;
}

static int mentions(const char *comment, const char *pattern) {
        regex_t re;
        assert_int_equal(regcomp(&re, pattern, REG_EXTENDED | REG_NOSUB), 0);
        int hit = regexec(&re, comment, 0, NULL, 0) == 0;
        regfree(&re);
        return hit;
}

/* What a comment says the function returns: from "@returns" (or "@return") to the next
 * tag; the whole comment when it has none (a one-line "@brief"). malloc'd. */
static char *returns_of(const char *comment) {
        const char *at = strstr(comment, "@return");
        if (!at)
                return strdup(comment);
        const char *end = strstr(at + 1, "@");
        return strndup(at, end ? (size_t)(end - at) : strlen(at));
}

static void every_public_function_documents_errors_by_the_one_rule(
    void **state) {
        (void)state;
        const char *section = values_section();
        int bad = 0;
        for (size_t i = 0; i < ndecls; i++) {
                const decl_t *d = &decls[i];
                const char *why = NULL;
                char *c = returns_of(d->comment ? d->comment : "");
                if (!d->comment)
                        why = "has no doc comment";
                else if (d->kind == RET_SIGNED &&
                         mentions(c, "(^|[^0-9A-Za-z_<])-1([^0-9]|$)"))
                        why = "returns a signed integer and documents -1 (use "
                              "a KDC_ERR_* code)";
                else if (d->kind == RET_SIGNED &&
                         !mentions(c, "KDC_ERR_[A-Z]+|never negative"))
                        why = "returns a signed integer but names no KDC_ERR_* "
                              "code it returns "
                              "(nor says it is never negative)";
                else if (d->kind == RET_POINTER && !strstr(c, "NULL"))
                        why = "returns a pointer but does not say when it is "
                              "NULL";
                else if (d->kind == RET_VALUE && !listed(section, d->name))
                        why = "returns a value that cannot be negative, and "
                              "error.h's \"Values, "
                              "not statuses\" does not list it";
                else if (d->kind != RET_VALUE && listed(section, d->name))
                        why = "is listed under error.h's \"Values, not "
                              "statuses\" but returns "
                              "a signed integer, a pointer or void";
                if (why) {
                        fprintf(stderr, "%s: %s() %s\n", d->header, d->name,
                                why);
                        bad++;
                }
                free(c);
        }
        /* every name of the list is a declared function */
        for (const char *p = section; (p = strstr(p, "kdc_"));) {
                size_t len = strspn(p, "abcdefghijklmnopqrstuvwxyz_0123456789");
                int found = 0;
                if (!strncmp(p + len, "()", 2)) {
                        for (size_t i = 0; i < ndecls; i++)
                                found |= strlen(decls[i].name) == len &&
                                         !strncmp(decls[i].name, p, len);
                        if (!found) {
                                fprintf(stderr,
                                        "error.h lists %.*s(), which no header "
                                        "declares\n",
                                        (int)len, p);
                                bad++;
                        }
                }
                p += len;
        }
        fprintf(stderr, "%zu public functions read\n", ndecls);
        assert_true(ndecls > 50);
        assert_int_equal(bad, 0);
}

int main(int argc, char **argv) {
        int i = 1;
        if (argc < 3)
                return fprintf(stderr,
                               "usage: %s ERROR_H HEADER... -- CLANG_ARGS...\n",
                               argv[0]),
                       2;
        g.error_h = argv[i++];
        g.headers = (const char **)argv + i;
        for (; i < argc && strcmp(argv[i], "--"); i++)
                g.nheaders++;
        if (i < argc)
                i++;
        g.clang_args = (const char **)argv + i;
        g.nclang_args = argc - i;
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(
                every_public_function_documents_errors_by_the_one_rule),
        };
        return cmocka_run_group_tests_name(
            "the error convention of kdc/error.h", tests, setup, NULL);
}
