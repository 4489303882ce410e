/*
 * kdc-lint and libkdc in lockstep: every function libkdc exports declares what
 * it means to the durability contract (KDC_CONTRACT, kdc/export.h), kdc-lint
 * reads that meaning from the parsed header, and its own table (used for
 * declarations without it: a service's own prototypes) says the same.
 *
 *   test_libkdc_contracts HEADER... -- CLANG_ARGS...
 *
 * (KDC_LINT, KDC_CLI_INPUTS and KDC_LIBKDC_INCLUDE from the environment.)
 *
 * - every exported function (visibility default: KDC_EXPORT) of every public
 *   header carries a contract kdc-lint understands, and kdc-lint's table entry
 *   of that name has the same roles and argument positions (none when the
 *   meaning has no role);
 * - a service using libkdc's watermark gets the same findings whether libkdc's
 *   headers are included with -I (pkg-config) or -isystem (CMake): none for a
 *   correct one, commit-on-failure for one that marks a failed message done.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <clang-c/Index.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "api.h"
#include "lintrun.h"

static struct {
    const char **headers;
    int nheaders;
    const char **clang_args;
    int nclang_args;
} g;

typedef struct exported {
    char *name, *contract, *header; /* contract NULL: none declared */
} exported_t;

static exported_t *fns;
static size_t nfns;

static enum CXChildVisitResult attr_visit(CXCursor c, CXCursor parent, CXClientData arg) {
    (void)parent;
    struct {
        int visible;
        char *contract;
    } *a = arg;
    enum CXCursorKind k = clang_getCursorKind(c);
    if (k == CXCursor_VisibilityAttr)
        a->visible = 1;
    if (k == CXCursor_AnnotateAttr) {
        CXString s = clang_getCursorSpelling(c);
        const char *t = clang_getCString(s);
        if (t && !strncmp(t, "kdc.contract:", 13) && !a->contract)
            a->contract = strdup(t + 13);
        clang_disposeString(s);
    }
    return CXChildVisit_Continue;
}

static enum CXChildVisitResult visit(CXCursor c, CXCursor parent, CXClientData header) {
    (void)parent;
    if (clang_getCursorKind(c) != CXCursor_FunctionDecl)
        return CXChildVisit_Continue;
    CXFile f;
    clang_getSpellingLocation(clang_getCursorLocation(c), &f, NULL, NULL, NULL);
    CXString fn = clang_getFileName(f);
    int here = clang_getCString(fn) && !strcmp(clang_getCString(fn), header);
    clang_disposeString(fn);
    struct {
        int visible;
        char *contract;
    } a = {0, NULL};
    if (here)
        clang_visitChildren(c, attr_visit, &a);
    if (!here || !a.visible) {
        free(a.contract);
        return CXChildVisit_Continue;
    }
    CXString name = clang_getCursorSpelling(c);
    fns = realloc(fns, (nfns + 1) * sizeof *fns);
    fns[nfns++] = (exported_t){strdup(clang_getCString(name)), a.contract, strdup(header)};
    clang_disposeString(name);
    return CXChildVisit_Continue;
}

static int setup(void **state) {
    (void)state;
    CXIndex index = clang_createIndex(0, 1);
    for (int i = 0; i < g.nheaders; i++) {
        CXTranslationUnit tu = NULL;
        if (clang_parseTranslationUnit2(index, g.headers[i], g.clang_args, g.nclang_args, NULL, 0,
                                        CXTranslationUnit_SkipFunctionBodies,
                                        &tu) != CXError_Success) {
            fprintf(stderr, "libclang could not parse %s\n", g.headers[i]);
            return -1;
        }
        clang_visitChildren(clang_getTranslationUnitCursor(tu), visit, (CXClientData)g.headers[i]);
        clang_disposeTranslationUnit(tu);
    }
    clang_disposeIndex(index);
    return 0;
}

static void every_exported_function_declares_a_contract_kdc_lint_models_alike(void **state) {
    (void)state;
    /* libkdc exports some 60 functions: far fewer means the headers were not read */
    if (nfns < 50)
        fail_msg("only %zu exported functions found in %d headers", nfns, g.nheaders);
    int bad = 0;
    for (size_t i = 0; i < nfns; i++) {
        const exported_t *f = &fns[i];
        kdc_api_t declared;
        if (!f->contract) {
            print_error("%s: %s declares no KDC_CONTRACT\n", f->header, f->name);
            bad++;
            continue;
        }
        if (kdc_api_from_contract(f->name, f->contract, &declared) != 0) {
            print_error("%s: %s: KDC_CONTRACT(\"%s\") is not a contract kdc-lint reads\n",
                        f->header, f->name, f->contract);
            bad++;
            continue;
        }
        kdc_expr_t call = {0};
        call.kind = KDC_E_CALL;
        call.name = f->name;
        const kdc_api_t *table = kdc_api_lookup(&call);
        if (!declared.roles && table) {
            print_error("%s: declared \"%s\", which has no role, but kdc-lint's table has one\n",
                        f->name, f->contract);
            bad++;
        } else if (declared.roles &&
                   (!table || table->roles != declared.roles || table->handle != declared.handle ||
                    table->topic != declared.topic || table->list != declared.list ||
                    table->varargs != declared.varargs)) {
            print_error("%s: declared \"%s\"; kdc-lint's table %s\n", f->name, f->contract,
                        table ? "says otherwise (roles or argument positions)" : "lacks it");
            bad++;
        }
    }
    if (bad)
        fail_msg("%d of %zu exported functions disagree with kdc-lint", bad, nfns);
}

/* kdc-lint on FILE with libkdc's headers included by `flag`: its exit code, its text
 * report (the findings) in *out. */
static int lint(const char *file, const char *flag, char **out) {
    const char *lint = getenv("KDC_LINT"), *inputs = getenv("KDC_CLI_INPUTS"),
               *inc = getenv("KDC_LIBKDC_INCLUDE");
    char *dir = NULL;
    assert_true(asprintf(&dir, "%s/libkdc-watermark", inputs) > 0);
    char *const argv[] = {(char *)lint, "--no-cache", "--color=never", (char *)file,
                          "--",         (char *)flag, (char *)inc,     NULL};
    kdc_run_t r;
    assert_int_equal(kdc_run(dir, argv, &r), 0);
    *out = strdup(r.out);
    int code = r.exit_code;
    if (code > 1)
        fail_msg("kdc-lint %s %s: exit %d\n%s", file, flag, code, r.err);
    kdc_run_free(&r);
    free(dir);
    return code;
}

static void a_service_gets_the_same_findings_whatever_the_include_flag(void **state) {
    (void)state;
    char *a, *b;
    assert_int_equal(lint("service.c", "-I", &a), 0);
    assert_int_equal(lint("service.c", "-isystem", &b), 0);
    assert_string_equal(a, b);
    free(a);
    free(b);
    assert_int_equal(lint("marks-failed-done.c", "-I", &a), 1);
    assert_int_equal(lint("marks-failed-done.c", "-isystem", &b), 1);
    assert_string_equal(a, b);
    assert_non_null(strstr(a, "marks-failed-done.c:31:9: warning: committed on a path where "
                              "processing failed"));
    assert_non_null(strstr(a, "[commit-on-failure]"));
    assert_null(strstr(a, "marks-failed-done.c:33:")); /* the forced commit: nothing failed */
    free(a);
    free(b);
}

int main(int argc, char **argv) {
    int i = 1;
    g.headers = (const char **)argv + 1;
    while (i < argc && strcmp(argv[i], "--"))
        i++;
    g.nheaders = i - 1;
    g.clang_args = i < argc ? (const char **)argv + i + 1 : NULL;
    g.nclang_args = i < argc ? argc - i - 1 : 0;
    if (!g.nheaders || !getenv("KDC_LINT") || !getenv("KDC_CLI_INPUTS") ||
        !getenv("KDC_LIBKDC_INCLUDE")) {
        fprintf(stderr, "usage: test_libkdc_contracts HEADER... -- CLANG_ARGS... (KDC_LINT, "
                        "KDC_CLI_INPUTS and KDC_LIBKDC_INCLUDE set)\n");
        return 2;
    }
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(every_exported_function_declares_a_contract_kdc_lint_models_alike),
        cmocka_unit_test(a_service_gets_the_same_findings_whatever_the_include_flag),
    };
    return cmocka_run_group_tests_name("linter.libkdc_contracts", tests, setup, NULL);
}
