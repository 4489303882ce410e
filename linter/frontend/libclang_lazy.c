/* libclang, loaded when something is first parsed (see libclang_lazy.h). */
#define _GNU_SOURCE
#include "libclang_lazy.h"

#include <clang-c/CXCompilationDatabase.h>
#include <clang-c/Index.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifndef KDC_LIBCLANG_PATH
#error "KDC_LIBCLANG_PATH (the libclang found at build time) must be defined"
#endif
#ifndef KDC_LIBCLANG_REAL
#error "KDC_LIBCLANG_REAL (the file KDC_LIBCLANG_PATH points to) must be defined"
#endif
#ifndef KDC_LIBCLANG_SONAME
#error "KDC_LIBCLANG_SONAME (that libclang's soname) must be defined"
#endif

/*
 * Every libclang function kdc-lint calls: F(return type, name, (parameters),
 * (arguments)), V(name, (parameters), (arguments)) for those returning void.
 * The stubs below are definitions of the functions clang-c/ declares, so the
 * compiler checks each signature against the headers of the libclang found.
 */
/* clang-format off */ /* a table, aligned by hand */
#define KDC_LIBCLANG_FUNCTIONS(F, V)                                                            \
    V(clang_CompilationDatabase_dispose, (CXCompilationDatabase a), (a))                        \
    F(CXCompilationDatabase, clang_CompilationDatabase_fromDirectory,                           \
      (const char *a, CXCompilationDatabase_Error *b), (a, b))                                  \
    F(CXCompileCommands, clang_CompilationDatabase_getAllCompileCommands,                       \
      (CXCompilationDatabase a), (a))                                                           \
    F(CXString, clang_CompileCommand_getArg, (CXCompileCommand a, unsigned b), (a, b))          \
    F(CXString, clang_CompileCommand_getDirectory, (CXCompileCommand a), (a))                   \
    F(CXString, clang_CompileCommand_getFilename, (CXCompileCommand a), (a))                    \
    F(unsigned, clang_CompileCommand_getNumArgs, (CXCompileCommand a), (a))                     \
    V(clang_CompileCommands_dispose, (CXCompileCommands a), (a))                                \
    F(CXCompileCommand, clang_CompileCommands_getCommand, (CXCompileCommands a, unsigned b),    \
      (a, b))                                                                                   \
    F(unsigned, clang_CompileCommands_getSize, (CXCompileCommands a), (a))                      \
    F(CXEvalResult, clang_Cursor_Evaluate, (CXCursor a), (a))                                   \
    F(CXCursor, clang_Cursor_getArgument, (CXCursor a, unsigned b), (a, b))                     \
    F(int, clang_Cursor_getNumArguments, (CXCursor a), (a))                                     \
    F(enum CX_StorageClass, clang_Cursor_getStorageClass, (CXCursor a), (a))                    \
    F(int, clang_Cursor_isNull, (CXCursor a), (a))                                              \
    V(clang_EvalResult_dispose, (CXEvalResult a), (a))                                          \
    F(long long, clang_EvalResult_getAsLongLong, (CXEvalResult a), (a))                         \
    F(CXEvalResultKind, clang_EvalResult_getKind, (CXEvalResult a), (a))                        \
    F(CXString, clang_File_tryGetRealPathName, (CXFile a), (a))                                 \
    F(int, clang_Location_isInSystemHeader, (CXSourceLocation a), (a))                          \
    F(unsigned, clang_Type_visitFields, (CXType a, CXFieldVisitor b, CXClientData c),           \
      (a, b, c))                                                                                \
    F(CXIndex, clang_createIndex, (int a, int b), (a, b))                                       \
    V(clang_disposeDiagnostic, (CXDiagnostic a), (a))                                           \
    V(clang_disposeIndex, (CXIndex a), (a))                                                     \
    V(clang_disposeString, (CXString a), (a))                                                   \
    V(clang_disposeTokens, (CXTranslationUnit a, CXToken *b, unsigned c), (a, b, c))            \
    V(clang_disposeTranslationUnit, (CXTranslationUnit a), (a))                                 \
    F(CXString, clang_formatDiagnostic, (CXDiagnostic a, unsigned b), (a, b))                   \
    F(const char *, clang_getCString, (CXString a), (a))                                        \
    F(CXType, clang_getCanonicalType, (CXType a), (a))                                          \
    F(CXSourceRange, clang_getCursorExtent, (CXCursor a), (a))                                  \
    F(enum CXCursorKind, clang_getCursorKind, (CXCursor a), (a))                                \
    F(enum CXLinkageKind, clang_getCursorLinkage, (CXCursor a), (a))                            \
    F(CXSourceLocation, clang_getCursorLocation, (CXCursor a), (a))                             \
    F(CXCursor, clang_getCursorReferenced, (CXCursor a), (a))                                   \
    F(CXCursor, clang_getCursorSemanticParent, (CXCursor a), (a))                               \
    F(CXString, clang_getCursorSpelling, (CXCursor a), (a))                                     \
    F(CXType, clang_getCursorType, (CXCursor a), (a))                                           \
    F(CXString, clang_getCursorUSR, (CXCursor a), (a))                                          \
    F(CXDiagnostic, clang_getDiagnostic, (CXTranslationUnit a, unsigned b), (a, b))             \
    F(CXSourceLocation, clang_getDiagnosticLocation, (CXDiagnostic a), (a))                     \
    F(enum CXDiagnosticSeverity, clang_getDiagnosticSeverity, (CXDiagnostic a), (a))            \
    F(long long, clang_getEnumConstantDeclValue, (CXCursor a), (a))                             \
    F(const char *, clang_getFileContents, (CXTranslationUnit a, CXFile b, size_t *c),         \
      (a, b, c))                                                                                \
    V(clang_getExpansionLocation,                                                               \
      (CXSourceLocation a, CXFile *b, unsigned *c, unsigned *d, unsigned *e), (a, b, c, d, e))  \
    F(CXString, clang_getFileName, (CXFile a), (a))                                             \
    V(clang_getInclusions, (CXTranslationUnit a, CXInclusionVisitor b, CXClientData c),         \
      (a, b, c))                                                                                \
    F(CXSourceLocation, clang_getLocationForOffset,                                             \
      (CXTranslationUnit a, CXFile b, unsigned c), (a, b, c))                                   \
    F(CXCursor, clang_getNullCursor, (void), ())                                                \
    F(unsigned, clang_getNumOverloadedDecls, (CXCursor a), (a))                                 \
    F(unsigned, clang_getNumDiagnostics, (CXTranslationUnit a), (a))                            \
    F(CXCursor, clang_getOverloadedDecl, (CXCursor a, unsigned b), (a, b))                      \
    F(CXSourceRange, clang_getRange, (CXSourceLocation a, CXSourceLocation b), (a, b))          \
    F(CXSourceLocation, clang_getRangeEnd, (CXSourceRange a), (a))                              \
    F(CXSourceLocation, clang_getRangeStart, (CXSourceRange a), (a))                            \
    F(CXCursor, clang_getSpecializedCursorTemplate, (CXCursor a), (a))                          \
    V(clang_getSpellingLocation,                                                                \
      (CXSourceLocation a, CXFile *b, unsigned *c, unsigned *d, unsigned *e), (a, b, c, d, e))  \
    F(enum CXCursorKind, clang_getTemplateCursorKind, (CXCursor a), (a))                        \
    F(CXTokenKind, clang_getTokenKind, (CXToken a), (a))                                        \
    F(CXSourceLocation, clang_getTokenLocation, (CXTranslationUnit a, CXToken b), (a, b))       \
    F(CXString, clang_getTokenSpelling, (CXTranslationUnit a, CXToken b), (a, b))               \
    F(CXCursor, clang_getTranslationUnitCursor, (CXTranslationUnit a), (a))                     \
    F(CXString, clang_getTypeSpelling, (CXType a), (a))                                         \
    F(unsigned, clang_isAttribute, (enum CXCursorKind a), (a))                                  \
    F(unsigned, clang_isCursorDefinition, (CXCursor a), (a))                                    \
    F(unsigned, clang_isExpression, (enum CXCursorKind a), (a))                                 \
    F(enum CXErrorCode, clang_createTranslationUnit2,                                               \
      (CXIndex a, const char *b, CXTranslationUnit *c), (a, b, c))                                  \
    F(enum CXErrorCode, clang_parseTranslationUnit2,                                            \
      (CXIndex a, const char *b, const char *const *c, int d, struct CXUnsavedFile *e,         \
       unsigned f, unsigned g, CXTranslationUnit *h),                                           \
      (a, b, c, d, e, f, g, h))                                                                 \
    F(int, clang_saveTranslationUnit, (CXTranslationUnit a, const char *b, unsigned c),             \
      (a, b, c))                                                                                    \
    V(clang_tokenize, (CXTranslationUnit a, CXSourceRange b, CXToken **c, unsigned *d),         \
      (a, b, c, d))                                                                             \
    F(unsigned, clang_visitChildren, (CXCursor a, CXCursorVisitor b, CXClientData c), (a, b, c))
/* clang-format on */

/* The real functions, resolved all at once when libclang is loaded. */
static struct {
#define FIELD(ret, name, params, args) ret(*name) params;
#define FIELD_VOID(name, params, args) void(*name) params;
    KDC_LIBCLANG_FUNCTIONS(FIELD, FIELD_VOID)
#undef FIELD
#undef FIELD_VOID
} real;

static pthread_once_t load_once = PTHREAD_ONCE_INIT;
static atomic_int loaded; /* set (release) once `real` is complete */

const char *kdc_libclang_name(void) {
    const char *env = getenv("KDC_LINT_LIBCLANG");
    if (env && *env)
        return env;
    if (access(KDC_LIBCLANG_PATH, F_OK) == 0)
        return KDC_LIBCLANG_PATH;
    return access(KDC_LIBCLANG_REAL, F_OK) == 0 ? KDC_LIBCLANG_REAL : KDC_LIBCLANG_SONAME;
}

static _Noreturn void cannot_load(const char *name, const char *why) {
    fprintf(stderr, "kdc-lint: cannot load libclang (%s): %s\n", name, why);
    exit(2);
}

static void *handle;

static void load(void) {
    const char *name = kdc_libclang_name();
    handle = dlopen(name, RTLD_LAZY | RTLD_LOCAL);
    if (!handle) {
        const char *why = dlerror();
        cannot_load(name, why ? why : "unknown error");
    }
#define RESOLVE(ret, name_, params, args) RESOLVE_VOID(name_, params, args)
#define RESOLVE_VOID(name_, params, args)                                                       \
    if (!(*(void **)&real.name_ = dlsym(handle, #name_)))                                       \
        cannot_load(name, "it has no " #name_);
    KDC_LIBCLANG_FUNCTIONS(RESOLVE, RESOLVE_VOID)
#undef RESOLVE
#undef RESOLVE_VOID
    atomic_store_explicit(&loaded, 1, memory_order_release);
}

void kdc_libclang_load(void) {
    if (!atomic_load_explicit(&loaded, memory_order_acquire))
        pthread_once(&load_once, load);
}

char *kdc_libclang_file(void) {
    const char *name = kdc_libclang_name();
    if (strchr(name, '/'))
        return realpath(name, NULL);
    /* a soname: where the dynamic loader finds it is known once it is loaded */
    kdc_libclang_load();
    struct link_map *map = NULL;
    if (dlinfo(handle, RTLD_DI_LINKMAP, &map) != 0 || !map || !map->l_name || !*map->l_name)
        return NULL;
    return realpath(map->l_name, NULL);
}

static int is_libclang(struct dl_phdr_info *info, size_t size, void *arg) {
    (void)size;
    (void)arg;
    const char *base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
    base = base ? base + 1 : info->dlpi_name;
    return base && !strncmp(base, "libclang", 8) && (base[8] == '-' || base[8] == '.');
}

int kdc_libclang_mapped(void) { return dl_iterate_phdr(is_libclang, NULL) != 0; }

/* The stubs: load libclang on the first call, then call the real function. */
#define STUB(ret, name, params, args)                                                           \
    ret name params {                                                                           \
        kdc_libclang_load();                                                                    \
        return real.name args;                                                                  \
    }
#define STUB_VOID(name, params, args)                                                           \
    void name params {                                                                          \
        kdc_libclang_load();                                                                    \
        real.name args;                                                                         \
    }
KDC_LIBCLANG_FUNCTIONS(STUB, STUB_VOID)
