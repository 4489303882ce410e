#define _GNU_SOURCE
#include "inputs.h"
#include "regfile.h"
#include "compdb.h"
#include "util.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define GROW(arr, n, cap)                                                                       \
    do {                                                                                        \
        if ((n) == (cap)) {                                                                     \
            (cap) = (cap) ? (cap) * 2 : 16;                                                     \
            (arr) = kdc_xrealloc((arr), (cap) * sizeof *(arr));                                 \
        }                                                                                       \
    } while (0)

void kdc_inputs_add_error(kdc_inputs_t *in, const char *file, const char *fmt, ...) {
    GROW(in->errors, in->nerrors, in->caperrors);
    kdc_input_error_t *e = &in->errors[in->nerrors++];
    e->file = kdc_xstrdup(file);
    va_list ap;
    va_start(ap, fmt);
    if (vasprintf(&e->message, fmt, ap) < 0)
        kdc_oom();
    va_end(ap);
}

static void add_note(kdc_inputs_t *in, const char *file, const char *msg) {
    GROW(in->notes, in->nnotes, in->capnotes);
    in->notes[in->nnotes].file = kdc_xstrdup(file);
    in->notes[in->nnotes].message = kdc_xstrdup(msg);
    in->nnotes++;
}

void kdc_inputs_free(kdc_inputs_t *in) {
    for (size_t i = 0; i < in->njobs; i++) {
        free(in->jobs[i].file);
        for (int k = 0; k < in->jobs[i].argc; k++)
            free(in->jobs[i].argv[k]);
        free(in->jobs[i].argv);
    }
    for (size_t i = 0; i < in->nerrors; i++) {
        free(in->errors[i].file);
        free(in->errors[i].message);
    }
    for (size_t i = 0; i < in->nnotes; i++) {
        free(in->notes[i].file);
        free(in->notes[i].message);
    }
    free(in->jobs);
    free(in->errors);
    free(in->notes);
    memset(in, 0, sizeof *in);
}

int kdc_source_language(const char *path) {
    const char *dot = strrchr(path, '.');
    if (!dot || strchr(dot, '/'))
        return 0;
    if (!strcmp(dot, ".c"))
        return 1;
    if (!strcmp(dot, ".cc") || !strcmp(dot, ".cpp") || !strcmp(dot, ".cxx") ||
        !strcmp(dot, ".c++") || !strcmp(dot, ".C"))
        return 2;
    return 0;
}

static int is_header(const char *path) {
    const char *dot = strrchr(path, '.');
    return dot && (!strcmp(dot, ".h") || !strcmp(dot, ".hh") || !strcmp(dot, ".hpp") ||
                   !strcmp(dot, ".hxx") || !strcmp(dot, ".inc"));
}

static const char header_note[] =
    "headers are analysed through the translation units that include them; name those units "
    "(or their directory) to analyse it";

/* A unit's compiler arguments, each a copy. */
typedef KDC_VEC(char *) argv_b;

static void argv_push(argv_b *a, const char *s) {
    KDC_VEC_PUSH(*a, kdc_xstrdup(s));
}

static int has_job(const kdc_inputs_t *in, const char *file) {
    for (size_t i = 0; i < in->njobs; i++)
        if (!strcmp(in->jobs[i].file, file))
            return 1;
    return 0;
}

static void add_job(kdc_inputs_t *in, const char *file, argv_b *args) {
    if (has_job(in, file)) {
        for (size_t i = 0; i < args->n; i++)
            free(args->v[i]);
        free(args->v);
        return;
    }
    GROW(in->jobs, in->njobs, in->capjobs);
    in->jobs[in->njobs].file = kdc_xstrdup(file);
    in->jobs[in->njobs].argv = args->v;
    in->jobs[in->njobs].argc = (int)args->n;
    in->njobs++;
}

/* Readable text? Reports why not. O_NONBLOCK: a FIFO must not hang the run. */
static int check_source(kdc_inputs_t *in, const char *shown, const char *path) {
    int fd = open(path, O_RDONLY | O_NONBLOCK);
    if (fd < 0) {
        kdc_inputs_add_error(in, shown, "cannot read: %s", strerror(errno));
        return 0;
    }
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        kdc_inputs_add_error(in, shown, "not a regular file (device, FIFO or socket): not analysed");
        return 0;
    }
    char buf[8192];
    ssize_t n = read(fd, buf, sizeof buf);
    close(fd);
    if (n < 0) {
        kdc_inputs_add_error(in, shown, "cannot read: %s", strerror(errno));
        return 0;
    }
    if (memchr(buf, 0, (size_t)n)) {
        kdc_inputs_add_error(in, shown, "binary file, not C or C++ source: not analysed");
        return 0;
    }
    return 1;
}

/* "" names nothing: say so (stat would say "No such file or directory" about ''). */
static int empty_path(kdc_inputs_t *in, const char *path) {
    if (*path)
        return 0;
    kdc_inputs_add_error(in, "''", "empty path");
    return 1;
}

/* ---------- paths with default flags ---------- */

static void default_job(kdc_inputs_t *in, const char *shown, const char *path,
                        const kdc_input_opts_t *o) {
    if (!check_source(in, shown, path))
        return;
    char *real = realpath(path, NULL);
    argv_b a = {0};
    int lang = kdc_source_language(path);
    argv_push(&a, lang == 2 ? "-xc++" : "-xc");
    argv_push(&a, lang == 2 ? "-std=gnu++17" : "-std=gnu11");
    argv_push(&a, "-isystem");
    argv_push(&a, KDC_RDKAFKA_INCLUDE_DIR "/librdkafka");
    for (size_t i = 0; i < o->nextra; i++)
        argv_push(&a, o->extra_args[i]);
    add_job(in, real ? real : path, &a);
    free(real);
}

typedef KDC_VEC(char *) pathvec_t;

static int cmp_str(const void *a, const void *b) {
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Directories are searched this deep below a path given (a deeper one is an input error). */
#define KDC_WALK_DEPTH_MAX 64

static void walk_dir(kdc_inputs_t *in, const char *dir, pathvec_t *out, int depth) {
    if (depth > KDC_WALK_DEPTH_MAX) {
        kdc_inputs_add_error(in, dir,
                             "more than %d directory levels below the path given: not searched",
                             KDC_WALK_DEPTH_MAX);
        return;
    }
    DIR *d = opendir(dir);
    if (!d) {
        kdc_inputs_add_error(in, dir, "cannot read directory: %s", strerror(errno));
        return;
    }
    struct dirent *de;
    pathvec_t local = {0};
    while ((de = readdir(d))) {
        if (de->d_name[0] == '.')
            continue; /* ., .., .git and other hidden folders */
        KDC_VEC_PUSH(local, kdc_xasprintf("%s/%s", dir, de->d_name));
    }
    closedir(d);
    if (local.n)
        qsort(local.v, local.n, sizeof *local.v, cmp_str);
    for (size_t i = 0; i < local.n; i++) {
        struct stat st;
        if (lstat(local.v[i], &st) == 0 && S_ISDIR(st.st_mode)) {
            walk_dir(in, local.v[i], out, depth + 1);
        } else if (kdc_source_language(local.v[i])) {
            /* a source by its name: a regular file is analysed; a link that names nothing,
             * a FIFO or a device is an input error (check_source says which), never
             * skipped without a word */
            if (stat(local.v[i], &st) != 0) {
                kdc_inputs_add_error(in, local.v[i], "%s%s: not analysed", strerror(errno),
                                     errno == ENOENT ? " (a symbolic link that names nothing)"
                                                     : "");
            } else if (!S_ISDIR(st.st_mode)) {
                KDC_VEC_PUSH(*out, kdc_xstrdup(local.v[i]));
            }
        }
        free(local.v[i]);
    }
    free(local.v);
}

static void collect_paths(const char *const *paths, size_t npaths, const kdc_input_opts_t *o,
                          kdc_inputs_t *in) {
    for (size_t i = 0; i < npaths; i++) {
        struct stat st;
        if (empty_path(in, paths[i]))
            continue;
        if (stat(paths[i], &st) != 0) {
            kdc_inputs_add_error(in, paths[i], "%s", strerror(errno));
            continue;
        }
        if (S_ISDIR(st.st_mode)) {
            pathvec_t files = {0};
            size_t before = in->nerrors;
            walk_dir(in, paths[i], &files, 0);
            if (!files.n && in->nerrors == before)
                kdc_inputs_add_error(in, paths[i],
                                     "no C or C++ sources (.c, .cc, .cpp, .cxx) in this directory");
            for (size_t k = 0; k < files.n; k++) {
                default_job(in, files.v[k], files.v[k], o);
                free(files.v[k]);
            }
            free(files.v);
        } else if (kdc_source_language(paths[i])) {
            default_job(in, paths[i], paths[i], o);
        } else if (is_header(paths[i])) {
            add_note(in, paths[i], header_note);
        } else {
            kdc_inputs_add_error(in, paths[i], "not a C or C++ source file (.c, .cc, .cpp, .cxx)");
        }
    }
}

/* ---------- compilation database ---------- */

/* Compiler arguments that change how a file parses; everything else (codegen,
 * warnings, outputs, linker flags) is dropped so gcc-only flags cannot break
 * libclang. */
static int keep_arg(const char *a, int *takes_value) {
    static const char *const with_value[] = {"-I", "-D", "-U", "-isystem", "-iquote",
                                             "-idirafter", "-include", "-imacros", "-x",
                                             "--sysroot", "-isysroot", "-target", "-imultilib",
                                             "-iprefix", "-iwithprefix", NULL};
    static const char *const exact[] = {"-m32", "-m64", "-ansi", "-pthread", "-fms-extensions",
                                        "-fsigned-char", "-funsigned-char", "-nostdinc",
                                        "-nostdinc++", "-fopenmp", "-fgnu89-inline", "-w",
                                        "-fno-signed-char", "-fno-unsigned-char", "-trigraphs",
                                        NULL};
    static const char *const prefixes[] = {"-I", "-D", "-U", "-std=", "-isystem", "-iquote",
                                           "-idirafter", "--sysroot=", "--target=", "-stdlib=",
                                           "-include", "-imacros", "-x", NULL};
    *takes_value = 0;
    for (size_t i = 0; with_value[i]; i++)
        if (!strcmp(a, with_value[i])) {
            *takes_value = 1;
            return 1;
        }
    for (size_t i = 0; exact[i]; i++)
        if (!strcmp(a, exact[i]))
            return 1;
    for (size_t i = 0; prefixes[i]; i++)
        if (!strncmp(a, prefixes[i], strlen(prefixes[i])))
            return 1;
    return 0;
}

static int drops_value(const char *a) {
    static const char *const v[] = {"-o", "-MF", "-MT", "-MQ", "-Xlinker", "-Xassembler",
                                    "-Xpreprocessor", "-L", "-l", "-aux-info", "--param", NULL};
    for (size_t i = 0; v[i]; i++)
        if (!strcmp(a, v[i]))
            return 1;
    return 0;
}

static char *resolve(kdc_realpaths_t *rp, const char *base, const char *path) {
    char *joined = path[0] == '/' ? kdc_xstrdup(path) : kdc_xasprintf("%s/%s", base, path);
    char *real = rp ? kdc_realpath(rp, joined) : realpath(joined, NULL);
    if (real) {
        free(joined);
        return real;
    }
    return joined;
}

static int under(const char *file, const char *root) {
    size_t n = strlen(root);
    return !strncmp(file, root, n) && (file[n] == 0 || file[n] == '/' || root[n - 1] == '/');
}

/* The database's bytes (malloc'd, *len), or NULL with *why when it cannot be read or is
 * no regular file (a FIFO must not block the run: regfile.h). */
static char *read_db(const char *db_file, size_t *len, char **why) {
    return kdc_read_regular(db_file, 0, len, why);
}

/* Validate with jansson first: libclang only says "cannot load". `json` is the
 * database's bytes, or NULL when they could not be read (why says why). */
static int validate_db(kdc_inputs_t *in, const char *db_file, const char *json, size_t len,
                       const char *why) {
    if (!json) {
        kdc_inputs_add_error(in, db_file, "cannot read the compilation database: %s", why);
        return 0;
    }
    json_error_t jerr;
    json_t *root = json_loadb(json, len, 0, &jerr);
    if (!root) {
        kdc_inputs_add_error(in, db_file, "invalid compilation database: line %d, column %d: %s",
                             jerr.line, jerr.column, jerr.text);
        return 0;
    }
    int ok = 1;
    if (!json_is_array(root)) {
        kdc_inputs_add_error(in, db_file,
                             "invalid compilation database: expected a JSON array of entries");
        ok = 0;
    } else {
        size_t i;
        json_t *e;
        json_array_foreach(root, i, e) {
            json_t *file = json_object_get(e, "file"), *dir = json_object_get(e, "directory");
            json_t *cmd = json_object_get(e, "command"), *args = json_object_get(e, "arguments");
            if (!json_is_object(e) || !json_is_string(file) || !json_is_string(dir) ||
                !(json_is_string(cmd) || json_is_array(args))) {
                kdc_inputs_add_error(in, db_file,
                                     "invalid compilation database: entry %zu needs \"directory\", "
                                     "\"file\" and \"command\" or \"arguments\"",
                                     i + 1);
                ok = 0;
                break;
            }
            size_t k;
            json_t *a;
            json_array_foreach(args, k, a) {
                if (!json_is_string(a)) {
                    kdc_inputs_add_error(in, db_file,
                                         "invalid compilation database: entry %zu: \"arguments\" "
                                         "item %zu is not a string",
                                         i + 1, k + 1);
                    ok = 0;
                    break;
                }
            }
            if (!ok)
                break;
        }
        if (ok && json_array_size(root) == 0) {
            kdc_inputs_add_error(in, db_file, "the compilation database has no entries");
            ok = 0;
        }
    }
    json_decref(root);
    return ok;
}

/* Options whose value is a path, longest first ("-isystem" before "-I"). */
static const char *const path_opts[] = {"-iwithprefixbefore", "-iwithprefix", "-idirafter",
                                        "-isysroot", "-isystem", "-imacros", "-include-pch", "-include",
                                        "-iprefix", "-iquote", "--sysroot=", "--sysroot", "-I",
                                        NULL};

/* Extra arguments come from the command line: a relative path in them is
 * relative to where kdc-lint runs, not to an entry's "directory" (which
 * -working-directory applies to every argument of the unit). */
static void push_extra_args(argv_b *a, const kdc_input_opts_t *o, const char *cwd) {
    for (size_t i = 0; i < o->nextra; i++) {
        const char *arg = o->extra_args[i], *opt = NULL;
        for (size_t k = 0; path_opts[k] && !opt; k++)
            if (!strncmp(arg, path_opts[k], strlen(path_opts[k])))
                opt = path_opts[k];
        if (opt && !arg[strlen(opt)] && i + 1 < o->nextra) { /* -I dir */
            argv_push(a, arg);
            opt = "";
            arg = o->extra_args[++i];
        }
        if (!opt || !cwd || !arg[strlen(opt)]) {
            argv_push(a, arg);
            continue;
        }
        char *path = resolve(NULL, cwd, arg + strlen(opt));
        char *joined = kdc_xasprintf("%s%s", opt, path);
        argv_push(a, joined);
        free(joined);
        free(path);
    }
}

/* libclang expands an entry's @response files: an argument still starting with '@' names
 * one it could not read, or would not (a FIFO or a device, openguard.h). The unit is then
 * an input error rather than analysed with other flags than its build's. */
static int response_files_read(kdc_inputs_t *in, const char *file, const char *dir,
                               const kdc_compdb_entry_t *cmd) {
    for (unsigned k = 1; k < cmd->argc; k++) {
        if (cmd->argv[k][0] != '@' || !cmd->argv[k][1])
            continue;
        const char *rf = cmd->argv[k] + 1;
        char *path = rf[0] == '/' ? kdc_xstrdup(rf) : kdc_xasprintf("%s/%s", dir, rf);
        char *why = NULL;
        int fd = kdc_open_regular(path, &why);
        if (fd >= 0)
            close(fd);
        kdc_inputs_add_error(in, file, "response file %s: %s: not analysed", rf,
                             why ? why : "not expanded");
        free(why);
        free(path);
        return 0;
    }
    return 1;
}

static void collect_db(const char *const *paths, size_t npaths, const kdc_input_opts_t *o,
                       kdc_inputs_t *in) {
    char *db_dir = realpath(o->db_dir, NULL);
    char *db_file = kdc_xasprintf("%s/compile_commands.json", o->db_dir);
    if (!db_dir) {
        kdc_inputs_add_error(in, o->db_dir, "-p: %s", strerror(errno));
        free(db_file);
        return;
    }
    size_t json_len = 0;
    char *why = NULL;
    char *json = read_db(db_file, &json_len, &why);
    kdc_compdb_t db;
    /* a database libclang read before (the same bytes) was valid: taken from the cache */
    int cached = json && kdc_compdb_cached(db_dir, json, json_len, o->cache, &db);
    int valid = cached || validate_db(in, db_file, json, json_len, why);
    free(why);
    if (!valid) {
        free(json);
        free(db_dir);
        free(db_file);
        return;
    }
    if (!cached && kdc_compdb_read(db_dir, json, json_len, o->cache, &db) != 0) {
        kdc_inputs_add_error(in, db_file, "libclang cannot load this compilation database");
        free(json);
        free(db_dir);
        free(db_file);
        return;
    }
    free(json);
    /* PATHs filter the database's translation units. */
    char **roots = npaths ? calloc(npaths, sizeof *roots) : NULL;
    size_t *matched = npaths ? calloc(npaths, sizeof *matched) : NULL;
    for (size_t i = 0; i < npaths; i++) {
        if (o->db_found) { /* what PATHs are, the walk of collect_found says */
            roots[i] = realpath(paths[i], NULL);
            continue;
        }
        if (empty_path(in, paths[i]))
            continue;
        struct stat st;
        if (is_header(paths[i]) && stat(paths[i], &st) == 0 && S_ISREG(st.st_mode)) {
            add_note(in, paths[i], header_note);
            continue;
        }
        roots[i] = realpath(paths[i], NULL);
        if (!roots[i])
            kdc_inputs_add_error(in, paths[i], "%s", strerror(errno));
    }
    char *cwd = getcwd(NULL, 0);
    size_t jobs_before = in->njobs, errors_before = in->nerrors;
    const char *dir_raw = NULL;
    char *dir = NULL;
    kdc_realpaths_t rp; /* entries share directories */
    kdc_realpaths_init(&rp);
    for (size_t i = 0; i < db.n; i++) {
        const kdc_compdb_entry_t *cmd = &db.v[i];
        if (!dir_raw || strcmp(dir_raw, cmd->directory)) {
            free(dir);
            dir_raw = cmd->directory;
            dir = resolve(&rp, db_dir, *dir_raw ? dir_raw : ".");
        }
        char *file = resolve(&rp, dir, cmd->file);
        /* Headers (analysed through their units), assembler, ... are not units. */
        int source = kdc_source_language(file) != 0;
        int wanted = !npaths && source;
        for (size_t k = 0; k < npaths; k++)
            if (source && roots[k] && under(file, roots[k])) {
                wanted = 1;
                matched[k]++;
            }
        if (wanted && check_source(in, file, file) && response_files_read(in, file, dir, cmd)) {
            argv_b a = {0};
            unsigned na = cmd->argc;
            for (unsigned k = 1; k < na; k++) { /* 0 is the compiler */
                const char *arg = cmd->argv[k];
                int tv = 0;
                if (drops_value(arg)) {
                    k++;
                } else if (keep_arg(arg, &tv)) {
                    argv_push(&a, arg);
                    if (tv && k + 1 < na)
                        argv_push(&a, cmd->argv[++k]);
                }
            }
            char *wd = kdc_xasprintf("-working-directory=%s", dir);
            argv_push(&a, wd);
            free(wd);
            push_extra_args(&a, o, cwd);
            add_job(in, file, &a);
        }
        free(file);
    }
    free(dir);
    kdc_realpaths_free(&rp);
    for (size_t k = 0; k < npaths; k++)
        if (roots[k] && !matched[k] && !o->db_found)
            kdc_inputs_add_error(in, paths[k], "no translation unit of %s is in this path",
                                 db_file);
    if (o->db_found)
        add_note(in, db_file,
                 "compilation database found as clangd finds it: its units are analysed with "
                 "their build flags, other files with default flags (-p DIR chooses another, "
                 "`--` none)");
    if (!npaths && in->njobs == jobs_before && in->nerrors == errors_before)
        kdc_inputs_add_error(in, db_file,
                             "no C or C++ translation units (.c, .cc, .cpp, .cxx) in this "
                             "compilation database");
    free(cwd);
    kdc_compdb_free(&db);
    for (size_t k = 0; k < npaths; k++)
        free(roots[k]);
    free(roots);
    free(matched);
    free(db_dir);
    free(db_file);
}

/* DIR/compile_commands.json or DIR/build/compile_commands.json as a regular file: the
 * directory holding it (malloc'd), or NULL. */
static char *db_in(const char *dir) {
    static const char *const sub[] = {"", "/build"};
    for (size_t i = 0; i < 2; i++) {
        char *d = kdc_xasprintf("%s%s", dir, sub[i]);
        char *f = kdc_xasprintf("%s/compile_commands.json", d);
        struct stat st;
        int found = stat(f, &st) == 0 && S_ISREG(st.st_mode);
        free(f);
        if (found)
            return d;
        free(d);
    }
    return NULL;
}

/* Cuts the last component of an absolute path ("/a/b" to "/a", "/a" to "/"). */
static void cut_last(char *path) {
    char *slash = strrchr(path, '/');
    slash[slash == path ? 1 : 0] = 0;
}

/* The database found for one PATH (see inputs.h), or NULL. */
static char *find_for(const char *path) {
    char *dir = realpath(path, NULL);
    struct stat st;
    if (!dir || stat(dir, &st) != 0) {
        free(dir);
        return NULL;
    }
    if (!S_ISDIR(st.st_mode))
        cut_last(dir);
    /* the directory and its parents, nearest first, up to the repository root */
    KDC_VEC(char *) chain = {0};
    int in_repo = 0;
    for (;;) {
        KDC_VEC_PUSH(chain, kdc_xstrdup(dir));
        char *git = kdc_xasprintf("%s/.git", strcmp(dir, "/") ? dir : "");
        in_repo = access(git, F_OK) == 0;
        free(git);
        if (in_repo || !strcmp(dir, "/"))
            break;
        cut_last(dir);
    }
    char *found = NULL;
    for (size_t i = 0; in_repo && i < chain.n && !found; i++)
        found = db_in(chain.v[i]);
    for (size_t i = 0; i < chain.n; i++)
        free(chain.v[i]);
    free(chain.v);
    free(dir);
    return found;
}

char *kdc_compdb_find(const char *const *paths, size_t npaths) {
    char *found = NULL;
    for (size_t i = 0; i < npaths; i++) {
        char *f = find_for(paths[i]);
        if (!f || (found && strcmp(f, found))) {
            free(f);
            free(found);
            return NULL;
        }
        free(found);
        found = f;
    }
    return found;
}

/* A database found, not given: PATHs' units in it with their build flags, every other
 * source file of PATHs (a new file, a test the build skips) as without -p. */
static void collect_found(const char *const *paths, size_t npaths, const kdc_input_opts_t *o,
                          kdc_inputs_t *in) {
    size_t first = in->njobs;
    collect_db(paths, npaths, o, in);
    kdc_strset_t have;
    kdc_strset_init(&have);
    for (size_t i = first; i < in->njobs; i++)
        kdc_strset_add(&have, in->jobs[i].file, strlen(in->jobs[i].file));
    kdc_inputs_t walked = {0};
    collect_paths(paths, npaths, o, &walked);
    for (size_t i = 0; i < walked.njobs; i++) {
        char *real = realpath(walked.jobs[i].file, NULL);
        int dup = real && kdc_strset_find(&have, real, strlen(real));
        free(real);
        if (dup) {
            kdc_tu_job_t *j = &walked.jobs[i];
            free(j->file);
            for (int k = 0; k < j->argc; k++)
                free(j->argv[k]);
            free(j->argv);
            continue;
        }
        GROW(in->jobs, in->njobs, in->capjobs);
        in->jobs[in->njobs++] = walked.jobs[i];
    }
    for (size_t i = 0; i < walked.nerrors; i++) {
        GROW(in->errors, in->nerrors, in->caperrors);
        in->errors[in->nerrors++] = walked.errors[i];
    }
    for (size_t i = 0; i < walked.nnotes; i++) {
        GROW(in->notes, in->nnotes, in->capnotes);
        in->notes[in->nnotes++] = walked.notes[i];
    }
    free(walked.jobs);
    free(walked.errors);
    free(walked.notes);
    kdc_strset_free(&have);
}

void kdc_inputs_collect(const char *const *paths, size_t npaths, const kdc_input_opts_t *o,
                        kdc_inputs_t *out) {
    if (o->db_found)
        collect_found(paths, npaths, o, out);
    else if (o->db_dir)
        collect_db(paths, npaths, o, out);
    else
        collect_paths(paths, npaths, o, out);
}
