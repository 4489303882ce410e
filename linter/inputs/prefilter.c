/* The prefilter (see prefilter.h). */
#define _GNU_SOURCE
#include "prefilter.h"
#include "filesig.h"
#include "regfile.h"
#include "util.h"

#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

typedef KDC_VEC(const char *) names_t; /* interned */

typedef struct include {
    const char *name; /* as written, interned */
    int angle;
} include_t;

typedef struct macro {
    const char *name;
    names_t body; /* identifiers of its replacement list */
} macro_t;

/* What one file says, whichever unit includes it. */
typedef struct file_info {
    const char *path; /* real path, interned */
    const char *dir;  /* its directory, interned */
    int readable;
    int mentions;       /* (1) of prefilter.h */
    int macro_include;  /* #include of a macro: cannot be followed */
    int defines_function;
    KDC_VEC(include_t) includes;
    names_t ext_defs;   /* defined here with external linkage */
    names_t all_defs;   /* every function and global defined here */
    names_t uses;       /* used in bodies and initialisers */
    KDC_VEC(macro_t) macros;
} file_info_t;

/* What the verdicts depend on (the cache keeps them while these are unchanged): every
 * file read, and the directories in which include paths were looked up. */
typedef struct file_dep {
    const char *path; /* interned */
    int readable;
    kdc_fileseen_t seen;
} file_dep_t;

typedef struct dir_dep {
    const char *path; /* interned; the nearest existing directory above a path looked up */
    kdc_filesig_t sig;
    int racy;         /* changed within the clock's tick: the signature proves nothing */
    unsigned char listing[16]; /* its entries: names, types, symbolic links' targets */
} dir_dep_t;

typedef struct pf {
    kdc_strset_t strs;
    kdc_strmap_t files;       /* interned real path → file_info_t* */
    kdc_strmap_t lookups;     /* interned "dir/name" → interned real path, or &not_found */
    kdc_strmap_t mention;     /* interned identifier → (void*)1 mentions, (void*)2 not */
    const char *const *roles; /* last components of the role patterns */
    size_t nroles;
    int record;               /* keep what the verdicts depend on (there is a cache to fill) */
    KDC_VEC(file_dep_t) file_deps;
    KDC_VEC(dir_dep_t) dir_deps;
    kdc_strmap_t dirs;        /* interned directory → (void*)1 once in dir_deps */
} pf_t;

static const char *intern(pf_t *p, const char *s, size_t n) { return kdc_strset_add(&p->strs, s, n); }

static void push_name(names_t *v, const char *s) { KDC_VEC_PUSH(*v, s); }

/* ---------- does an identifier mention Kafka? ---------- */

static int mentions_kafka(pf_t *p, const char *id) {
    void *m = kdc_strmap_get(&p->mention, id);
    if (m)
        return m == (void *)1;
    int yes = !strncmp(id, "rd_kafka", 8) || !strncmp(id, "RD_KAFKA", 8) ||
              !strncmp(id, "kdc_", 4) || strstr(id, "RdKafka") != NULL ||
              !strcmp(id, "cppkafka"); /* the wrapper library of the built-in presets */
    for (size_t i = 0; !yes && i < p->nroles; i++)
        yes = fnmatch(p->roles[i], id, 0) == 0;
    kdc_strmap_put(&p->mention, id, yes ? (void *)1 : (void *)2);
    return yes;
}

/* ---------- the scanner ---------- */

static int is_id_start(int c) { return isalpha(c) || c == '_' || c == '$'; }
static int is_id_char(int c) { return isalnum(c) || c == '_' || c == '$'; }

/* Words followed by '(' that never name a function being defined. */
static int not_a_function(const char *w) {
    static const char *const kw[] = {
        "if", "while", "for", "switch", "return", "sizeof", "alignof", "_Alignof",
        "__alignof__", "__attribute__", "__attribute", "__declspec", "decltype", "typeof",
        "__typeof__", "__typeof", "_Static_assert", "static_assert", "__asm__", "asm", "__asm",
        "defined", "noexcept", "throw", "catch", "alignas", "_Alignas", "_Generic", "do",
        "else", "case", "new", "delete", "__extension__", "__builtin_offsetof", "offsetof",
        "va_arg", "__builtin_va_arg", "void", "char", "short", "int", "long", "float",
        "double", "signed", "unsigned", "_Bool", "bool", "const", "volatile", "struct", "union",
        "enum", "class", "auto", "register", "restrict", "__restrict", "inline", "__inline",
        "__inline__", "static", "extern", "typedef", NULL};
    for (size_t i = 0; kw[i]; i++)
        if (!strcmp(w, kw[i]))
            return 1;
    return 0;
}

enum { B_BODY, B_INIT, B_AGGREGATE, B_ENUM, B_TRANSPARENT };

/* The declaration being read at file scope (or in a struct, class, namespace). */
typedef struct decl {
    int is_static, is_typedef, is_extern, is_aggregate, is_enum, is_transparent;
    int paren, bracket;   /* depth inside this declaration */
    const char *fn;       /* X in `X (` at paren depth 0: the function it may define */
    int fn_closed;        /* X's parameter list has been closed */
    const char *last;     /* the last identifier at depth 0 */
    int in_init;          /* after '=': an initialiser, up to ',' or ';' */
} decl_t;

typedef struct scan {
    pf_t *p;
    file_info_t *fi;
    const char *s;
    size_t n, i;
    KDC_VEC(int) braces;  /* kinds of the open braces */
    KDC_VEC(decl_t) saved; /* declarations around open aggregates */
    decl_t d;
    int body_depth;       /* open braces inside a function body or an initialiser */
} scan_t;

static void skip_block_comment(scan_t *sc) {
    size_t start = sc->i;
    sc->i += 2;
    while (sc->i + 1 < sc->n && !(sc->s[sc->i] == '*' && sc->s[sc->i + 1] == '/'))
        sc->i++;
    sc->i = sc->i + 1 < sc->n ? sc->i + 2 : sc->n;
    if (memmem(sc->s + start, sc->i - start, "kdc-lint:", 9))
        sc->fi->mentions = 1;
}

static void skip_line_comment(scan_t *sc) {
    size_t start = sc->i;
    while (sc->i < sc->n && sc->s[sc->i] != '\n') {
        if (sc->s[sc->i] == '\\' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '\n')
            sc->i++;
        sc->i++;
    }
    if (memmem(sc->s + start, sc->i - start, "kdc-lint:", 9))
        sc->fi->mentions = 1;
}

static void skip_quoted(scan_t *sc, char q) {
    sc->i++;
    while (sc->i < sc->n && sc->s[sc->i] != q && sc->s[sc->i] != '\n') {
        if (sc->s[sc->i] == '\\')
            sc->i++;
        sc->i++;
    }
    if (sc->i < sc->n)
        sc->i++;
}

/* C++ R"delim( ... )delim" (sc->i at the quote). */
static void skip_raw_string(scan_t *sc) {
    size_t j = sc->i + 1;
    while (j < sc->n && sc->s[j] != '(' && j - sc->i < 18)
        j++;
    if (j >= sc->n || sc->s[j] != '(') {
        skip_quoted(sc, '"');
        return;
    }
    char end[20];
    size_t dl = j - sc->i - 1;
    end[0] = ')';
    memcpy(end + 1, sc->s + sc->i + 1, dl);
    end[dl + 1] = '"';
    const char *e = memmem(sc->s + j, sc->n - j, end, dl + 2);
    sc->i = e ? (size_t)(e - sc->s) + dl + 2 : sc->n;
}

/* Reads an identifier at sc->i and returns it interned. */
static const char *read_id(scan_t *sc) {
    size_t b = sc->i;
    while (sc->i < sc->n && is_id_char((unsigned char)sc->s[sc->i]))
        sc->i++;
    return intern(sc->p, sc->s + b, sc->i - b);
}

static void skip_blanks_in_line(scan_t *sc) {
    while (sc->i < sc->n) {
        char c = sc->s[sc->i];
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v')
            sc->i++;
        else if (c == '\\' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '\n')
            sc->i += 2;
        else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '*')
            skip_block_comment(sc);
        else
            break;
    }
}

/* A preprocessor directive, from after its '#' to the end of its line. */
static void directive(scan_t *sc) {
    skip_blanks_in_line(sc);
    const char *word = sc->i < sc->n && is_id_start((unsigned char)sc->s[sc->i]) ? read_id(sc) : "";
    int is_include = !strcmp(word, "include") || !strcmp(word, "include_next") ||
                     !strcmp(word, "import");
    macro_t *m = NULL;
    if (is_include) {
        skip_blanks_in_line(sc);
        char open = sc->i < sc->n ? sc->s[sc->i] : 0, close = open == '<' ? '>' : '"';
        if (open == '<' || open == '"') {
            size_t b = ++sc->i;
            while (sc->i < sc->n && sc->s[sc->i] != close && sc->s[sc->i] != '\n')
                sc->i++;
            include_t inc = {intern(sc->p, sc->s + b, sc->i - b), open == '<'};
            KDC_VEC_PUSH(sc->fi->includes, inc);
        } else {
            sc->fi->macro_include = 1;
        }
    } else if (!strcmp(word, "define")) {
        skip_blanks_in_line(sc);
        if (sc->i < sc->n && is_id_start((unsigned char)sc->s[sc->i])) {
            macro_t mm = {read_id(sc), {0}};
            if (mentions_kafka(sc->p, mm.name))
                sc->fi->mentions = 1;
            KDC_VEC_PUSH(sc->fi->macros, mm);
            m = &sc->fi->macros.v[sc->fi->macros.n - 1];
        }
    }
    /* the rest of the line: identifiers (mentions; a macro's body) */
    while (sc->i < sc->n && sc->s[sc->i] != '\n') {
        unsigned char c = (unsigned char)sc->s[sc->i];
        if (c == '\\' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '\n') {
            sc->i += 2;
        } else if (c == '\\' && sc->i + 2 < sc->n && sc->s[sc->i + 1] == '\r' &&
                   sc->s[sc->i + 2] == '\n') {
            sc->i += 3;
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '*') {
            skip_block_comment(sc);
        } else if (c == '/' && sc->i + 1 < sc->n && sc->s[sc->i + 1] == '/') {
            skip_line_comment(sc);
        } else if (c == '"' || c == '\'') {
            skip_quoted(sc, (char)c);
        } else if (isdigit(c)) {
            while (sc->i < sc->n && (is_id_char((unsigned char)sc->s[sc->i]) || sc->s[sc->i] == '.'))
                sc->i++;
        } else if (is_id_start(c)) {
            const char *id = read_id(sc);
            if (mentions_kafka(sc->p, id))
                sc->fi->mentions = 1;
            if (m)
                push_name(&m->body, id);
        } else {
            sc->i++;
        }
    }
}

static void define_name(scan_t *sc, const char *name, int is_static) {
    push_name(&sc->fi->all_defs, name);
    if (!is_static)
        push_name(&sc->fi->ext_defs, name);
}

static void reset_decl(decl_t *d) { memset(d, 0, sizeof *d); }

/* A global variable declarator ends (',' ';' or '='): d->last names it. */
static void declarator_end(scan_t *sc) {
    decl_t *d = &sc->d;
    int in_aggregate = sc->braces.n && sc->braces.v[sc->braces.n - 1] != B_TRANSPARENT;
    if (d->last && !d->fn && !d->is_typedef && !d->is_extern && !d->is_aggregate &&
        !in_aggregate)
        define_name(sc, d->last, d->is_static);
    d->last = NULL;
}

static void open_brace(scan_t *sc) {
    decl_t *d = &sc->d;
    int kind;
    if (sc->body_depth) {
        sc->body_depth++;
        KDC_VEC_PUSH(sc->braces, B_BODY);
        return;
    }
    if (d->in_init) {
        kind = B_INIT;
    } else if (d->fn && d->fn_closed && d->paren == 0) {
        kind = B_BODY;
        define_name(sc, d->fn, d->is_static);
        sc->fi->defines_function = 1;
    } else if (d->is_transparent) {
        kind = B_TRANSPARENT;
    } else {
        kind = d->is_enum ? B_ENUM : B_AGGREGATE;
    }
    KDC_VEC_PUSH(sc->braces, kind);
    if (kind == B_BODY || kind == B_INIT) {
        sc->body_depth = 1;
        if (kind == B_BODY)
            reset_decl(d); /* a function definition ends with its body */
        return;
    }
    KDC_VEC_PUSH(sc->saved, *d);
    reset_decl(d);
}

static void close_brace(scan_t *sc) {
    if (!sc->braces.n)
        return; /* unbalanced (an #if with two openings): ignore */
    int kind = sc->braces.v[--sc->braces.n];
    if (sc->body_depth) {
        sc->body_depth--;
        return;
    }
    if (kind == B_BODY || kind == B_INIT)
        return;
    if (sc->saved.n)
        sc->d = sc->saved.v[--sc->saved.n];
    else
        reset_decl(&sc->d);
    if (kind == B_TRANSPARENT)
        reset_decl(&sc->d);
    else
        sc->d.is_aggregate = 1; /* `struct s {..} x;` still declares x */
}

/* One token of code outside directives. */
static void code_id(scan_t *sc, const char *id) {
    if (mentions_kafka(sc->p, id))
        sc->fi->mentions = 1;
    /* in bodies and initialisers; after a parameter list (initialiser lists, trailing types) */
    if (sc->body_depth || sc->d.in_init || (sc->d.fn && sc->d.fn_closed)) {
        push_name(&sc->fi->uses, id);
        return;
    }
    decl_t *d = &sc->d;
    int in_aggregate = sc->braces.n && sc->braces.v[sc->braces.n - 1] == B_AGGREGATE;
    if (!strcmp(id, "static"))
        d->is_static = !in_aggregate; /* a static member has external linkage */
    else if (!strcmp(id, "typedef"))
        d->is_typedef = 1;
    else if (!strcmp(id, "extern"))
        d->is_extern = 1;
    else if (!strcmp(id, "struct") || !strcmp(id, "union") || !strcmp(id, "class"))
        d->is_aggregate = 1;
    else if (!strcmp(id, "enum"))
        d->is_enum = d->is_aggregate = 1;
    else if (!strcmp(id, "namespace"))
        d->is_transparent = 1;
    else if (d->paren == 0 && d->bracket == 0)
        d->last = id;
    if (d->paren > 0 || d->bracket > 0)
        return;
    /* `X (` names a function when X is the first such word of the declaration */
    size_t j = sc->i;
    while (j < sc->n && (sc->s[j] == ' ' || sc->s[j] == '\t' || sc->s[j] == '\n' || sc->s[j] == '\r'))
        j++;
    if (j < sc->n && sc->s[j] == '(' && !d->fn && !not_a_function(id))
        d->fn = id;
}

static void code_punct(scan_t *sc, char c) {
    decl_t *d = &sc->d;
    if (sc->body_depth) {
        if (c == '{') {
            open_brace(sc);
        } else if (c == '}') {
            /* A '}' in column 0 ends a function: an #if with an opening brace in both
             * branches must not swallow the rest of the file. */
            if ((sc->i == 0 || sc->s[sc->i - 1] == '\n') && sc->body_depth > 1) {
                sc->braces.n -= (size_t)(sc->body_depth - 1);
                sc->body_depth = 1;
            }
            close_brace(sc);
        }
        return;
    }
    switch (c) {
    case '(':
        d->paren++;
        break;
    case ')':
        if (d->paren > 0 && --d->paren == 0 && d->fn)
            d->fn_closed = 1;
        break;
    case '[':
        d->bracket++;
        break;
    case ']':
        if (d->bracket > 0)
            d->bracket--;
        break;
    case '{':
        open_brace(sc);
        break;
    case '}':
        close_brace(sc);
        break;
    case '=':
        /* not ==, <=, +=, ...: `operator==` of a C++ class */
        if (sc->i + 1 < sc->n && sc->s[sc->i + 1] == '=')
            break;
        if (sc->i > 0 && strchr("=!<>+-*/%&|^", sc->s[sc->i - 1]))
            break;
        if (d->paren == 0 && d->bracket == 0 && !d->in_init) {
            if (d->fn && d->fn_closed) {
                /* `= default`, `= 0` of a method; `int (*p)(void) = f` */
                d->in_init = 1;
                break;
            }
            declarator_end(sc);
            d->in_init = 1;
        }
        break;
    case ',':
        if (d->paren == 0 && d->bracket == 0) {
            if (!d->in_init)
                declarator_end(sc);
            d->in_init = 0;
        }
        break;
    case ';':
        if (d->paren == 0 && d->bracket == 0) {
            if (!d->in_init)
                declarator_end(sc);
            reset_decl(d);
        }
        break;
    default:
        break;
    }
}

static void scan_text(pf_t *p, file_info_t *fi, const char *s, size_t n) {
    scan_t sc = {.p = p, .fi = fi, .s = s, .n = n};
    int line_start = 1;
    while (sc.i < n) {
        unsigned char c = (unsigned char)s[sc.i];
        if (c == '\n') {
            line_start = 1;
            sc.i++;
            continue;
        }
        if (c == ' ' || c == '\t' || c == '\r' || c == '\f' || c == '\v') {
            sc.i++;
            continue;
        }
        if (c == '\\' && sc.i + 1 < n && s[sc.i + 1] == '\n') {
            sc.i += 2;
            continue;
        }
        if (c == '#' && line_start) {
            sc.i++;
            directive(&sc);
            continue;
        }
        line_start = 0;
        if (c == '/' && sc.i + 1 < n && s[sc.i + 1] == '*') {
            skip_block_comment(&sc);
        } else if (c == '/' && sc.i + 1 < n && s[sc.i + 1] == '/') {
            skip_line_comment(&sc);
        } else if (c == '"') {
            skip_quoted(&sc, '"');
        } else if (c == '\'') {
            skip_quoted(&sc, '\'');
        } else if (isdigit(c) || (c == '.' && sc.i + 1 < n && isdigit((unsigned char)s[sc.i + 1]))) {
            while (sc.i < n && (is_id_char((unsigned char)s[sc.i]) || s[sc.i] == '.' ||
                                s[sc.i] == '\'' ||
                                ((s[sc.i] == '+' || s[sc.i] == '-') &&
                                 strchr("eEpP", s[sc.i - 1]))))
                sc.i++;
        } else if (is_id_start(c)) {
            const char *id = read_id(&sc);
            /* raw and prefixed string literals: R"x(..)x", u8"..", L'..' */
            if (sc.i < n && (s[sc.i] == '"' || s[sc.i] == '\'')) {
                size_t len = strlen(id);
                if (len && id[len - 1] == 'R' && s[sc.i] == '"' &&
                    (len == 1 || !strcmp(id, "u8R") || !strcmp(id, "uR") || !strcmp(id, "UR") ||
                     !strcmp(id, "LR"))) {
                    skip_raw_string(&sc);
                    continue;
                }
                if (!strcmp(id, "u8") || !strcmp(id, "u") || !strcmp(id, "U") || !strcmp(id, "L")) {
                    skip_quoted(&sc, s[sc.i]);
                    continue;
                }
            }
            /* extern "C" { ... } is file scope */
            if (!strcmp(id, "extern") && !sc.body_depth) {
                size_t j = sc.i;
                while (j < n && isspace((unsigned char)s[j]))
                    j++;
                if (j + 2 < n && s[j] == '"' && s[j + 1] == 'C' && s[j + 2] == '"') {
                    size_t k = j + 3;
                    while (k < n && isspace((unsigned char)s[k]))
                        k++;
                    if (k < n && s[k] == '{') {
                        sc.d.is_transparent = 1;
                        sc.i = k;
                        continue;
                    }
                    sc.i = j + 3; /* extern "C" int f(void); */
                }
            }
            code_id(&sc, id);
        } else {
            code_punct(&sc, (char)c);
            sc.i++;
        }
    }
    free(sc.braces.v);
    free(sc.saved.v);
}

static file_info_t *file_info(pf_t *p, const char *real) {
    const char *key = intern(p, real, strlen(real));
    file_info_t *fi = kdc_strmap_get(&p->files, key);
    if (fi)
        return fi;
    fi = calloc(1, sizeof *fi);
    if (!fi)
        kdc_oom();
    fi->path = key;
    const char *slash = strrchr(real, '/');
    fi->dir = slash ? intern(p, real, slash > real ? (size_t)(slash - real) : 1) : intern(p, ".", 1);
    kdc_strmap_put(&p->files, key, fi);
    file_dep_t dep = {key, 0, {{0}, {0}, 0}};
    int64_t clock = kdc_filesig_clock();
    char *why = NULL;
    int fd = kdc_open_regular(real, &why); /* a FIFO must not block (regfile.h) */
    free(why);
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        if (fd >= 0)
            close(fd);
        if (p->record)
            KDC_VEC_PUSH(p->file_deps, dep);
        return fi;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    char *text = malloc(n + 1);
    if (!text)
        kdc_oom();
    while (got < n) {
        ssize_t r = read(fd, text + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    text[got] = 0;
    fi->readable = 1;
    if (p->record) {
        dep.readable = 1;
        kdc_filesig_t sig;
        kdc_filesig_of(&sb, &sig);
        kdc_file_seen_text(&sig, clock, text, got, &dep.seen);
        KDC_VEC_PUSH(p->file_deps, dep);
    }
    scan_text(p, fi, text, got);
    free(text);
    return fi;
}

static void file_info_free(file_info_t *fi) {
    free(fi->includes.v);
    free(fi->ext_defs.v);
    free(fi->all_defs.v);
    free(fi->uses.v);
    for (size_t i = 0; i < fi->macros.n; i++)
        free(fi->macros.v[i].body.v);
    free(fi->macros.v);
    free(fi);
}

/* ---------- units: include paths, closure ---------- */

typedef struct unit {
    KDC_VEC(file_info_t *) files;
    int mentions;
    names_t ext_defs, refs; /* refs: used, not defined in the unit */
    int kafka, keep;
} unit_t;

typedef struct paths {
    KDC_VEC(char *) quote, angle; /* -iquote, then -I (angle: -I only) */
    KDC_VEC(char *) forced;       /* -include, -imacros */
    char *wd;
} paths_t;

static char *join(const char *base, const char *p) {
    if (p[0] == '/' || !base)
        return kdc_xstrdup(p);
    return kdc_xasprintf("%s/%s", base, p);
}

/* The default system directories: given with -I they stay system directories. */
static int system_dir(const char *d) {
    return !strcmp(d, "/usr/include") || !strcmp(d, "/usr/local/include") ||
           !strcmp(d, "/usr/include/") || !strcmp(d, "/usr/local/include/");
}

static void unit_paths(const kdc_tu_job_t *job, paths_t *ps) {
    static const char wdopt[] = "-working-directory=";
    for (int i = 0; i < job->argc; i++)
        if (!strncmp(job->argv[i], wdopt, sizeof wdopt - 1))
            ps->wd = kdc_xstrdup(job->argv[i] + sizeof wdopt - 1);
    for (int i = 0; i < job->argc; i++) {
        const char *a = job->argv[i], *v = NULL;
        int which = 0; /* 1 -I, 2 -iquote, 3 -include */
        if (!strncmp(a, "-I", 2))
            which = 1, v = a[2] ? a + 2 : (i + 1 < job->argc ? job->argv[++i] : NULL);
        else if (!strcmp(a, "-iquote"))
            which = 2, v = i + 1 < job->argc ? job->argv[++i] : NULL;
        else if (!strncmp(a, "-iquote", 7))
            which = 2, v = a + 7;
        else if (!strcmp(a, "-include") || !strcmp(a, "-imacros"))
            which = 3, v = i + 1 < job->argc ? job->argv[++i] : NULL;
        else if (!strncmp(a, "-include", 8) && strcmp(a, "-include-pch"))
            which = 3, v = a + 8;
        else if (!strcmp(a, "-isystem") || !strcmp(a, "-idirafter") || !strcmp(a, "-isysroot") ||
                 !strcmp(a, "-iprefix") || !strcmp(a, "-iwithprefix") || !strcmp(a, "-imultilib") ||
                 !strcmp(a, "-include-pch") || !strcmp(a, "--sysroot") || !strcmp(a, "-x") ||
                 !strcmp(a, "-target"))
            i++; /* their value is not ours */
        if (!v || !*v)
            continue;
        char *p = join(ps->wd, v);
        if (which == 1 && system_dir(p))
            free(p);
        else if (which == 1) {
            char *q = kdc_xstrdup(p);
            KDC_VEC_PUSH(ps->quote, p);
            KDC_VEC_PUSH(ps->angle, q);
        } else if (which == 2)
            KDC_VEC_PUSH(ps->quote, p);
        else
            KDC_VEC_PUSH(ps->forced, p);
    }
}

static void paths_free(paths_t *ps) {
    for (size_t i = 0; i < ps->quote.n; i++)
        free(ps->quote.v[i]);
    for (size_t i = 0; i < ps->angle.n; i++)
        free(ps->angle.v[i]);
    for (size_t i = 0; i < ps->forced.n; i++)
        free(ps->forced.v[i]);
    free(ps->quote.v);
    free(ps->angle.v);
    free(ps->forced.v);
    free(ps->wd);
}

static const char not_found[] = "";

static int by_name(const struct dirent **a, const struct dirent **b) {
    return strcmp((*a)->d_name, (*b)->d_name);
}

/* A directory's contents as far as looking a path up in it goes: XXH3-128 over its real
 * path (a symbolic link on the way to it, retargeted, makes it another directory whose
 * entries may have the same names and types), its entries' names and types and its
 * symbolic links' targets, in name order. -1 when it cannot be read. */
static int dir_listing(const char *dir, unsigned char out[16]) {
    char *real = realpath(dir, NULL);
    struct dirent **list = NULL;
    int n = real ? scandir(dir, &list, NULL, by_name) : -1;
    if (n < 0) {
        free(real);
        return -1;
    }
    kdc_buf_t b = {0};
    kdc_buf_str(&b, real);
    free(real);
    for (int i = 0; i < n; i++) {
        kdc_buf_str(&b, list[i]->d_name);
        unsigned type = list[i]->d_type;
        char *path = kdc_xasprintf("%s/%s", dir, list[i]->d_name);
        struct stat sb;
        if (type == DT_UNKNOWN && lstat(path, &sb) == 0)
            type = S_ISLNK(sb.st_mode) ? DT_LNK : S_ISDIR(sb.st_mode) ? DT_DIR
                                                  : S_ISREG(sb.st_mode) ? DT_REG : DT_UNKNOWN;
        kdc_buf_u8(&b, (uint8_t)type);
        if (type == DT_LNK) {
            char target[4096];
            ssize_t len = readlink(path, target, sizeof target - 1);
            target[len > 0 ? len : 0] = 0;
            kdc_buf_str(&b, target);
        }
        free(path);
        free(list[i]);
    }
    free(list);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits(b.v, b.n));
    memcpy(out, canon.digest, 16);
    kdc_buf_free(&b);
    return 0;
}

/* A path is about to be looked up: what it resolves to can change only by a change in the
 * nearest existing directory above it (an entry added, removed or renamed there changes
 * that directory's times), whose signature is kept. */
static void note_lookup(pf_t *p, const char *path) {
    if (!p->record)
        return;
    char *dir = kdc_xasprintf("%s%s", path[0] == '/' ? "" : "./", path);
    for (;;) {
        char *slash = strrchr(dir, '/');
        if (!slash || !strcmp(dir, "."))
            break;
        slash[slash == dir ? 1 : 0] = 0;
        const char *key = intern(p, dir, strlen(dir));
        void *known = kdc_strmap_get(&p->dirs, key); /* 1: kept; 2: not a directory */
        if (known == (void *)1)
            break;
        if (!known) {
            int64_t clock = kdc_filesig_clock();
            struct stat sb;
            if (stat(dir, &sb) == 0 && S_ISDIR(sb.st_mode)) {
                kdc_strmap_put(&p->dirs, key, (void *)1);
                dir_dep_t dep = {key, {0}, 0, {0}};
                kdc_filesig_of(&sb, &dep.sig);
                dep.racy = kdc_filesig_racy(&dep.sig, clock);
                if (dir_listing(dir, dep.listing) != 0)
                    dep.racy = 1, memset(dep.listing, 0xff, 16); /* matches no listing */
                KDC_VEC_PUSH(p->dir_deps, dep);
                break;
            }
            kdc_strmap_put(&p->dirs, key, (void *)2);
        }
        if (slash == dir)
            break;
    }
    free(dir);
}

/* The real path of dir/name when it is a regular file, else NULL (a copy). Units share
 * include paths: each path is looked up once per run. */
static char *found(pf_t *p, const char *dir, const char *name) {
    char *joined = join(dir, name);
    const char *key = intern(p, joined, strlen(joined));
    const char *hit = kdc_strmap_get(&p->lookups, key);
    if (!hit) {
        struct stat sb;
        note_lookup(p, joined);
        char *real = stat(joined, &sb) == 0 && S_ISREG(sb.st_mode) ? realpath(joined, NULL) : NULL;
        hit = real ? intern(p, real, strlen(real)) : not_found;
        free(real);
        kdc_strmap_put(&p->lookups, key, (void *)hit);
    }
    free(joined);
    return hit == not_found ? NULL : kdc_xstrdup(hit);
}

static char *resolve_include(pf_t *p, const file_info_t *from, const include_t *inc,
                             const paths_t *ps) {
    if (inc->name[0] == '/')
        return found(p, NULL, inc->name);
    char *r = NULL;
    if (!inc->angle) {
        r = found(p, from->dir, inc->name);
        for (size_t i = 0; !r && i < ps->quote.n; i++)
            r = found(p, ps->quote.v[i], inc->name);
    } else {
        for (size_t i = 0; !r && i < ps->angle.n; i++)
            r = found(p, ps->angle.v[i], inc->name);
    }
    return r; /* NULL: a system header, or missing */
}

static void add_file(pf_t *p, unit_t *u, kdc_strmap_t *seen, file_info_t *fi,
                     const paths_t *ps) {
    if (kdc_strmap_get(seen, fi->path))
        return;
    kdc_strmap_put(seen, fi->path, fi);
    KDC_VEC_PUSH(u->files, fi);
    for (size_t i = 0; i < fi->includes.n; i++) {
        char *r = resolve_include(p, fi, &fi->includes.v[i], ps);
        if (r) {
            add_file(p, u, seen, file_info(p, r), ps);
            free(r);
        }
    }
}

static void build_unit(pf_t *p, const kdc_tu_job_t *job, unit_t *u) {
    paths_t ps = {0};
    unit_paths(job, &ps);
    kdc_strmap_t seen;
    kdc_strmap_init(&seen);
    for (size_t i = 0; i < ps.forced.n; i++) {
        note_lookup(p, ps.forced.v[i]);
        char *r = realpath(ps.forced.v[i], NULL);
        for (size_t k = 0; !r && k < ps.quote.n; k++)
            r = found(p, ps.quote.v[k], ps.forced.v[i]);
        if (r) {
            add_file(p, u, &seen, file_info(p, r), &ps);
            free(r);
        }
    }
    note_lookup(p, job->file);
    char *real = realpath(job->file, NULL);
    file_info_t *main_fi = file_info(p, real ? real : job->file);
    free(real);
    add_file(p, u, &seen, main_fi, &ps);
    kdc_strmap_free(&seen);
    paths_free(&ps);

    /* the unit's names: macros used in bodies expand to their bodies */
    kdc_strmap_t defs, macros, used;
    kdc_strmap_init(&defs);
    kdc_strmap_init(&macros);
    kdc_strmap_init(&used);
    u->mentions = !main_fi->readable;
    names_t uses = {0};
    for (size_t i = 0; i < u->files.n; i++) {
        file_info_t *fi = u->files.v[i];
        u->mentions |= fi->mentions || fi->macro_include;
        for (size_t k = 0; k < fi->all_defs.n; k++)
            kdc_strmap_put(&defs, fi->all_defs.v[k], (void *)1);
        for (size_t k = 0; k < fi->ext_defs.n; k++)
            push_name(&u->ext_defs, fi->ext_defs.v[k]);
        for (size_t k = 0; k < fi->macros.n; k++)
            if (!kdc_strmap_get(&macros, fi->macros.v[k].name))
                kdc_strmap_put(&macros, fi->macros.v[k].name, &fi->macros.v[k]);
        for (size_t k = 0; k < fi->uses.n; k++)
            push_name(&uses, fi->uses.v[k]);
    }
    for (size_t k = 0; k < uses.n; k++) { /* grows while macros expand */
        const char *id = uses.v[k];
        if (kdc_strmap_get(&used, id))
            continue;
        kdc_strmap_put(&used, id, (void *)1);
        macro_t *m = kdc_strmap_get(&macros, id);
        if (m)
            for (size_t b = 0; b < m->body.n; b++)
                push_name(&uses, m->body.v[b]);
        else if (!kdc_strmap_get(&defs, id))
            push_name(&u->refs, id);
    }
    free(uses.v);
    kdc_strmap_free(&defs);
    kdc_strmap_free(&macros);
    kdc_strmap_free(&used);
}

static int any_in(const names_t *names, const kdc_strmap_t *set) {
    for (size_t i = 0; i < names->n; i++)
        if (kdc_strmap_get(set, names->v[i]))
            return 1;
    return 0;
}

static void add_all(const names_t *names, kdc_strmap_t *set) {
    for (size_t i = 0; i < names->n; i++)
        kdc_strmap_put(set, names->v[i], (void *)1);
}

/* The verdicts, computed; p (initialised) keeps what they depend on. */
static void decide(pf_t *p, const kdc_inputs_t *inputs, const size_t *todo, size_t ntodo,
                   const char *const *roles, kdc_prefilter_result_t *out) {
    /* a role pattern applies to qualified names: its last component to identifiers */
    names_t role_words = {0};
    for (size_t i = 0; roles && roles[i]; i++) {
        const char *last = roles[i], *c;
        while ((c = strstr(last, "::")))
            last = c + 2;
        push_name(&role_words, intern(p, last, strlen(last)));
    }
    p->roles = role_words.v;
    p->nroles = role_words.n;

    unit_t *units = calloc(ntodo ? ntodo : 1, sizeof *units);
    if (!units)
        kdc_oom();
    for (size_t i = 0; i < ntodo; i++)
        build_unit(p, &inputs->jobs[todo[i]], &units[i]);

    /* (1), then (2): callers of Kafka code, to a fixpoint */
    kdc_strmap_t kafka_defs, refs;
    kdc_strmap_init(&kafka_defs);
    kdc_strmap_init(&refs);
    for (size_t i = 0; i < ntodo; i++)
        if (units[i].mentions) {
            units[i].kafka = units[i].keep = 1;
            add_all(&units[i].ext_defs, &kafka_defs);
        }
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < ntodo; i++)
            if (!units[i].kafka && any_in(&units[i].refs, &kafka_defs)) {
                units[i].kafka = units[i].keep = 1;
                add_all(&units[i].ext_defs, &kafka_defs);
                changed = 1;
            }
    }
    /* (3): helpers of analysed units, to a fixpoint */
    for (size_t i = 0; i < ntodo; i++)
        if (units[i].keep)
            add_all(&units[i].refs, &refs);
    for (int changed = 1; changed;) {
        changed = 0;
        for (size_t i = 0; i < ntodo; i++)
            if (!units[i].keep && any_in(&units[i].ext_defs, &refs)) {
                units[i].keep = 1;
                add_all(&units[i].refs, &refs);
                changed = 1;
            }
    }

    memset(out, 0, sizeof *out);
    out->keep = calloc(ntodo ? ntodo : 1, 1);
    if (!out->keep)
        kdc_oom();
    kdc_strmap_t listed;
    kdc_strmap_init(&listed);
    for (size_t i = 0; i < ntodo; i++) {
        out->keep[i] = (unsigned char)units[i].keep;
        if (units[i].keep)
            continue;
        out->nskipped++;
        for (size_t k = 0; k < units[i].files.n; k++) {
            file_info_t *fi = units[i].files.v[k];
            if ((k + 1 == units[i].files.n || fi->defines_function) &&
                !kdc_strmap_get(&listed, fi->path)) {
                kdc_strmap_put(&listed, fi->path, (void *)1);
                out->files = kdc_xrealloc(out->files, (out->nfiles + 1) * sizeof *out->files);
                out->files[out->nfiles++] = kdc_xstrdup(fi->path);
            }
        }
    }
    kdc_strmap_free(&listed);

    for (size_t i = 0; i < ntodo; i++) {
        free(units[i].files.v);
        free(units[i].ext_defs.v);
        free(units[i].refs.v);
    }
    free(units);
    kdc_strmap_free(&kafka_defs);
    kdc_strmap_free(&refs);
    free(role_words.v);
    p->roles = NULL;
    p->nroles = 0;
}

/* ---------- the verdicts, cached ---------- */

#define KIND "prefilter"

/* Over the cache's salt, the working directory, the role patterns and the units (paths and
 * arguments, in order). */
static void key_of(const kdc_cache_t *cache, const kdc_inputs_t *inputs, const size_t *todo,
                   size_t ntodo, const char *const *roles, unsigned char key[16]) {
    kdc_buf_t b = {0};
    unsigned char salt[16];
    kdc_cache_salt(cache, salt);
    kdc_buf_put(&b, salt, sizeof salt);
    kdc_buf_str(&b, KIND);
    char *cwd = getcwd(NULL, 0); /* relative include paths are looked up from it */
    kdc_buf_str(&b, cwd);
    free(cwd);
    for (size_t i = 0; roles && roles[i]; i++)
        kdc_buf_str(&b, roles[i]);
    kdc_buf_str(&b, NULL);
    kdc_buf_u64(&b, ntodo);
    for (size_t i = 0; i < ntodo; i++) {
        const kdc_tu_job_t *job = &inputs->jobs[todo[i]];
        kdc_buf_str(&b, job->file);
        kdc_buf_u32(&b, (uint32_t)job->argc);
        for (int k = 0; k < job->argc; k++)
            kdc_buf_str(&b, job->argv[k]);
    }
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits(b.v, b.n));
    memcpy(key, canon.digest, 16);
    kdc_buf_free(&b);
}

/* The verdicts and what they depend on, as bytes: ntodo, keep[ntodo], the skipped units'
 * files, the files read (path, readable, how seen), the directories (path, signature,
 * racy, listing). */
static void encode(const kdc_prefilter_result_t *r, size_t ntodo, const file_dep_t *files,
                   size_t nfiles, const dir_dep_t *dirs, size_t ndirs, kdc_buf_t *b) {
    kdc_buf_u32(b, (uint32_t)ntodo);
    kdc_buf_put(b, r->keep, ntodo);
    kdc_buf_u32(b, (uint32_t)r->nfiles);
    for (size_t i = 0; i < r->nfiles; i++)
        kdc_buf_str(b, r->files[i]);
    kdc_buf_u32(b, (uint32_t)nfiles);
    for (size_t i = 0; i < nfiles; i++) {
        kdc_buf_str(b, files[i].path);
        kdc_buf_u8(b, (uint8_t)files[i].readable);
        if (files[i].readable)
            kdc_fileseen_put(b, &files[i].seen);
    }
    kdc_buf_u32(b, (uint32_t)ndirs);
    for (size_t i = 0; i < ndirs; i++) {
        kdc_buf_str(b, dirs[i].path);
        kdc_filesig_put(b, &dirs[i].sig);
        kdc_buf_u8(b, (uint8_t)dirs[i].racy);
        kdc_buf_put(b, dirs[i].listing, 16);
    }
}

/* Is the directory as it was? As kdc_file_check: by its trusted signature, else by its
 * listing (then *d takes how it is now). */
static int dir_check(dir_dep_t *d) {
    struct stat sb;
    kdc_filesig_t now;
    if (!d->racy && stat(d->path, &sb) == 0) {
        kdc_filesig_of(&sb, &now);
        if (kdc_filesig_equal(&now, &d->sig))
            return KDC_FILE_SAME;
    }
    int64_t clock = kdc_filesig_clock();
    unsigned char listing[16];
    if (stat(d->path, &sb) != 0 || !S_ISDIR(sb.st_mode) || dir_listing(d->path, listing) != 0 ||
        memcmp(listing, d->listing, 16))
        return KDC_FILE_CHANGED;
    kdc_filesig_of(&sb, &d->sig);
    d->racy = kdc_filesig_racy(&d->sig, clock);
    return KDC_FILE_SAME_DATA;
}

/* The stored verdicts into *out when every file and directory they depend on is
 * unchanged: 1; 0 otherwise (-1 when the bytes are damaged). *resign is set when files
 * were unchanged by their contents only (another signature: the entry is worth writing
 * again with the new ones, in *again). */
static int decode_fresh(const kdc_buf_t *b, size_t ntodo, kdc_prefilter_result_t *out,
                        int *resign, kdc_buf_t *again) {
    kdc_reader_t r = {b->v, b->v + b->n, 0};
    KDC_VEC(file_dep_t) files = {0};
    KDC_VEC(dir_dep_t) dirs = {0};
    KDC_VEC(char *) owned = {0};
    int fresh = 1;
    memset(out, 0, sizeof *out);
    if (kdc_read_u32(&r) != ntodo)
        r.bad = 1;
    out->keep = calloc(ntodo ? ntodo : 1, 1);
    if (!out->keep)
        kdc_oom();
    kdc_read_bytes(&r, out->keep, r.bad ? 0 : ntodo);
    for (size_t i = 0; i < ntodo; i++)
        out->nskipped += !out->keep[i];
    uint32_t n = kdc_read_count(&r, 4);
    out->files = calloc(n ? n : 1, sizeof *out->files);
    if (!out->files)
        kdc_oom();
    for (uint32_t i = 0; i < n && !r.bad; i++)
        if ((out->files[out->nfiles] = kdc_read_str(&r)))
            out->nfiles++;
        else
            r.bad = 1;
    n = kdc_read_count(&r, 5);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        file_dep_t d = {kdc_read_str(&r), 0, {{0}, {0}, 0}};
        d.readable = kdc_read_u8(&r);
        if (d.readable)
            kdc_fileseen_get(&r, &d.seen);
        if (!d.path) {
            r.bad = 1;
            break;
        }
        KDC_VEC_PUSH(owned, (char *)d.path);
        KDC_VEC_PUSH(files, d);
    }
    n = kdc_read_count(&r, 5);
    for (uint32_t i = 0; i < n && !r.bad; i++) {
        dir_dep_t d = {kdc_read_str(&r), {0}, 0, {0}};
        kdc_filesig_get(&r, &d.sig);
        d.racy = kdc_read_u8(&r);
        kdc_read_bytes(&r, d.listing, 16);
        if (!d.path) {
            r.bad = 1;
            break;
        }
        KDC_VEC_PUSH(owned, (char *)d.path);
        KDC_VEC_PUSH(dirs, d);
    }
    if (r.bad || r.at != r.end)
        fresh = -1;
    for (size_t i = 0; fresh == 1 && i < dirs.n; i++) {
        int how = dir_check(&dirs.v[i]);
        fresh = how != KDC_FILE_CHANGED;
        *resign |= how == KDC_FILE_SAME_DATA;
    }
    for (size_t i = 0; fresh == 1 && i < files.n; i++) {
        file_dep_t *d = &files.v[i];
        if (!d->readable) {
            kdc_fileseen_t now;
            fresh = kdc_file_see(d->path, &now) != 0;
            continue;
        }
        int how = kdc_file_check(d->path, &d->seen, &d->seen);
        fresh = how != KDC_FILE_CHANGED;
        *resign |= how == KDC_FILE_SAME_DATA;
    }
    if (fresh == 1 && *resign)
        encode(out, ntodo, files.v, files.n, dirs.v, dirs.n, again);
    for (size_t i = 0; i < owned.n; i++)
        free(owned.v[i]);
    free(owned.v);
    free(files.v);
    free(dirs.v);
    if (fresh != 1)
        kdc_prefilter_result_free(out);
    return fresh;
}

static void store(kdc_cache_t *cache, const unsigned char key[16], const kdc_buf_t *b) {
    char *err = NULL;
    if (kdc_cache_put(cache, KIND, key, b->v, b->n, &err) != 0) {
        fprintf(stderr, "kdc-lint: note: %s (no further cache writes are tried)\n", err);
        kdc_cache_stop_writes(cache);
    }
    free(err);
}

void kdc_prefilter(const kdc_inputs_t *inputs, const size_t *todo, size_t ntodo,
                   const char *const *roles, kdc_cache_t *cache, kdc_prefilter_result_t *out) {
    unsigned char key[16];
    if (cache) {
        key_of(cache, inputs, todo, ntodo, roles, key);
        kdc_buf_t b = {0}, again = {0};
        char *note = NULL;
        int hit = kdc_cache_get(cache, KIND, key, &b, "the prefilter reads the sources again",
                                &note), resign = 0;
        if (hit && (hit = decode_fresh(&b, ntodo, out, &resign, &again)) < 0)
            note = kdc_xasprintf("the cached verdicts of the prefilter are damaged; it reads "
                                 "the sources again");
        if (note)
            fprintf(stderr, "kdc-lint: note: %s\n", note);
        free(note);
        if (hit == 1 && resign && kdc_cache_writable(cache))
            store(cache, key, &again);
        kdc_buf_free(&b);
        kdc_buf_free(&again);
        if (hit == 1) {
            out->from_cache = 1;
            return;
        }
    }
    pf_t p = {0};
    kdc_strset_init(&p.strs);
    kdc_strmap_init(&p.files);
    kdc_strmap_init(&p.lookups);
    kdc_strmap_init(&p.mention);
    kdc_strmap_init(&p.dirs);
    p.record = kdc_cache_writable(cache);
    decide(&p, inputs, todo, ntodo, roles, out);
    if (p.record) {
        kdc_buf_t b = {0};
        encode(out, ntodo, p.file_deps.v, p.file_deps.n, p.dir_deps.v, p.dir_deps.n, &b);
        store(cache, key, &b);
        kdc_buf_free(&b);
    }
    for (size_t i = 0; i < p.files.cap; i++)
        if (p.files.keys[i])
            file_info_free(p.files.vals[i]);
    kdc_strmap_free(&p.files);
    kdc_strmap_free(&p.lookups);
    kdc_strmap_free(&p.mention);
    kdc_strmap_free(&p.dirs);
    kdc_strset_free(&p.strs);
    free(p.file_deps.v);
    free(p.dir_deps.v);
}



void kdc_prefilter_result_free(kdc_prefilter_result_t *r) {
    free(r->keep);
    for (size_t i = 0; i < r->nfiles; i++)
        free(r->files[i]);
    free(r->files);
    memset(r, 0, sizeof *r);
}
