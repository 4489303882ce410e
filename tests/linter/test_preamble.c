/*
 * Shared precompiled preambles (linter/frontend/preamble.h): units that begin with the same
 * includes, with the same flags, in the same directory when their quoted includes find files
 * next to them, share one precompiled header; the
 * report is the same, byte for byte, as without them (--no-preambles), with -j1 and -j2, with
 * and without the cache; --stats says what was built and used; nothing is left behind, and
 * what a killed run left (its owner.lock free) the next run removes, and nothing else (no
 * mount is entered: that test needs root for a mount namespace of its own).
 *
 *   test_preamble      (KDC_LINT from the environment)
 *
 * The tree (made at test time), its compilation database in build/:
 *   a/common.h  an inline function with a bare commit (line 5); with WITH_HELPER defined,
 *               another (line 8)
 *   a/u1.c a/u2.c a/u5.c a/u7.c  begin with #include "common.h", then differ (partly shared
 *               prefixes); u2 has a comment over two lines first; u5 has an #include inside
 *               #ifdef; u7 has a compile error after the prefix (its parse against the
 *               preamble is kept)
 *   a/u3.c a/u4.c  #define WITH_HELPER before the first include
 *   a/u6.c      #include "solo.h": a prefix no other unit has
 *   b/common.h  another header of the same name (a bare commit on line 3), included by
 *               b/b1.c b/b2.c: quoted includes are looked up next to the unit
 *   c/m.c (-DMODE=1), c/n.c c/o.c (-DMODE=2)  the same include, other flags
 *   d/d1.c d/d2.c  include d/bad.h, which does not compile: their preamble fails, and they are
 *               parsed as without one
 *   e/e1.c e/e2.c  include <h.h> then <h2.h> through -Ilnk/../inc, lnk a symbolic link to
 *               real/sub: the file system finds real/inc, a textual clean-up of the path
 *               e/inc, which is what a precompiled header would record (their later headers
 *               would be named by paths that name nothing, and the cache could not keep
 *               them): their preamble is refused, and they are parsed as without one
 *   f/f1.cpp f/f2.cpp  C++: #include <iostream>, then <cstdlib> or <cstring>. libclang's driver,
 *               left without an installation directory, finds libstdc++ through
 *               "/../lib/gcc/x86_64-linux-gnu/12/../../../../include/c++/12", which a
 *               precompiled header records as "/include/c++/12": the units' later headers
 *               would be named by paths that name nothing and the cache could never keep
 *               them. C++ preambles give the driver LLVM's bin/ (-ccc-install-dir), so it
 *               is built, and the units are cached (the second test)
 *   g/g1.c g/g2.c g/g3.c  #include "base.h", then "more.h" (g3: then <stdio.h>); g/g4.c
 *               base.h, then <string.h>: the group's preamble holds base.h, and a preamble
 *               chained on it holds more.h for the three units that share it
 *               (KDC_PREAMBLE_CHAIN_MIN): only more.h is parsed to build it. base.h and
 *               more.h each have an inline function with a bare commit (line 2)
 *   h/x/h1.c h/y/h2.c h/inc/h4.c h/z/h3.c  compiled in h/ with -Iinc, each in a directory of
 *               its own, all #include "shared.h": h/inc/shared.h on the search path (an inline
 *               function with a bare commit, line 2), which h4 also finds next to it (the same
 *               file); h/z/shared.h is another (a bare commit, line 3), which h3 finds next to
 *               it. h1, h2 and h4 share a preamble across their directories; h3 does not
 *   x/x1.cpp x/x2.cpp  C++: #include "tmpl.h", a function template (line 2) and an inline
 *               function with a bare commit (line 3); x1 instantiates the template with a type
 *               it does not fit: a compile error in tmpl.h, a file of the preamble, so x1 is
 *               parsed again without it
 *   i/  compiled in i/ with -Iinc -Iinc2 (two arguments), each unit in a directory of its own:
 *     s/s1.c t/t1.c u/u1.c  #include "shared.h": inc/shared.h includes "nested.h"; s/shared.h
 *               is a symbolic link to it, so s1's nested.h is s/nested.h (a bare commit, line
 *               3), t1's and u1's inc/nested.h (line 2): t1 and u1 share a preamble, s1 not
 *     d/d1.c d/d2.c  #include "a.h" (inc/a.h, which includes "cfg.h": inc2/cfg.h, a bare
 *               commit on line 2), then "local.h", next to them: they share a preamble of d/,
 *               in which d/cfg.h (line 3) must not be what a.h finds
 *     p/p1.c q/q1.c  #include "p.h" (inc/p.h, line 2): the name of the preamble's own header,
 *               so they get none
 *     v/w/v1.c v/w/v2.c  #include "../up.h" (v/up.h, line 2): a preamble of v/w/
 * So 14 preambles are planned (a: 2, b, c, d, e, f, g: 2, h, x, i: 3), 12 are built, 26 units
 * are parsed against one (u1 u2 u5 u3 u4 u7 b1 b2 n o f1 f2 g1 g2 g3 g4 h1 h2 h4 x2 t1 u1 d1
 * d2 v1 v2), and 1 (x1) again without it.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "scale.h"

static const char common_h[] =
    "#ifndef COMMON_H\n"
    "#define COMMON_H\n"
    "#include <librdkafka/rdkafka.h>\n"
    "static inline void drain_all(rd_kafka_t *c) {\n"
    "    rd_kafka_commit(c, NULL, 0);\n"
    "}\n"
    "#ifdef WITH_HELPER\n"
    "static inline void helper(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); }\n"
    "#endif\n"
    "#endif\n";

static char *fmt(const char *f, ...) __attribute__((format(printf, 1, 2)));
static char *fmt(const char *f, ...) {
    va_list ap;
    va_start(ap, f);
    char *s = NULL;
    if (vasprintf(&s, f, ap) < 0)
        abort();
    va_end(ap);
    return s;
}

/* a unit: its prefix, then a function with a bare commit on the prefix's line count + 2 */
static char *unit(const char *prefix, const char *name) {
    return fmt("%svoid %s(rd_kafka_t *c) {\n    rd_kafka_commit(c, NULL, 0);\n}\n", prefix, name);
}

static struct {
    char *tree;
    char *tmp;    /* TMPDIR of the runs: must be empty after each */
    char *tmpdir; /* the test's own TMPDIR, or NULL */
} g;

#define RK "#include <librdkafka/rdkafka.h>\n"

/* Writes rel in the tree: before, then an inline function fn holding a bare commit (its line
 * is the one after before's). */
static void drain_header(const char *rel, const char *before, const char *fn) {
    char *text = fmt("%sstatic inline void %s(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); }\n",
                     before, fn);
    scratch_write(g.tree, rel, text);
    free(text);
}

static void write_tree(void) {
    scratch_write(g.tree, "a/common.h", common_h);
    scratch_write(g.tree, "a/solo.h", "#include <librdkafka/rdkafka.h>\n");
    char *s;
    s = unit("#include \"common.h\"\n#include <string.h>\n", "u1");
    scratch_write(g.tree, "a/u1.c", s);
    free(s);
    s = unit("/* a comment\n   over two lines */\n#include \"common.h\"\n#include <stdio.h>\n",
             "u2");
    scratch_write(g.tree, "a/u2.c", s);
    free(s);
    s = unit("#define WITH_HELPER 1\n#include \"common.h\"\n", "u3");
    scratch_write(g.tree, "a/u3.c", s);
    free(s);
    s = unit("#define WITH_HELPER 1\n#include \"common.h\"\n#include <stdlib.h>\n", "u4");
    scratch_write(g.tree, "a/u4.c", s);
    free(s);
    s = unit("#include \"common.h\"\n#ifdef NOT_DEFINED\n#include \"missing.h\"\n#endif\n", "u5");
    scratch_write(g.tree, "a/u5.c", s);
    free(s);
    s = unit("#include \"solo.h\"\n", "u6");
    scratch_write(g.tree, "a/u6.c", s);
    free(s);
    scratch_write(g.tree, "a/u7.c", "#include \"common.h\"\nint broken( {\n");
    drain_header("b/common.h", RK "/* another common.h */\n", "b_drain");
    s = unit("#include \"common.h\"\n", "b1");
    scratch_write(g.tree, "b/b1.c", s);
    free(s);
    s = unit("#include \"common.h\"\n", "b2");
    scratch_write(g.tree, "b/b2.c", s);
    free(s);
    scratch_write(g.tree, "c/mode.h",
                  "#include <librdkafka/rdkafka.h>\n"
                  "#if MODE == 2\n"
                  "static inline void two(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); }\n"
                  "#endif\n");
    for (const char *const *n = (const char *const[]){"m", "n", "o", NULL}; *n; n++) {
        char *rel = fmt("c/%s.c", *n);
        s = unit("#include \"mode.h\"\n", *n);
        scratch_write(g.tree, rel, s);
        free(s);
        free(rel);
    }
    scratch_write(g.tree, "d/bad.h", "#include <librdkafka/rdkafka.h>\nint bad = ;\n");
    s = unit("#include \"bad.h\"\n", "d1");
    scratch_write(g.tree, "d/d1.c", s);
    free(s);
    s = unit("#include \"bad.h\"\n", "d2");
    scratch_write(g.tree, "d/d2.c", s);
    free(s);
    scratch_write(g.tree, "e/real/inc/h.h", "#include <librdkafka/rdkafka.h>\n");
    drain_header("e/real/inc/h2.h", "", "e_drain");
    scratch_write(g.tree, "e/real/sub/.keep", "");
    char *lnk = scratch_path(g.tree, "e/lnk");
    assert_int_equal(symlink("real/sub", lnk), 0);
    free(lnk);
    s = unit("#include <h.h>\n#include <h2.h>\n", "e1");
    scratch_write(g.tree, "e/e1.c", s);
    free(s);
    s = unit("#include <h.h>\n#include <stdio.h>\n#include <h2.h>\n", "e2");
    scratch_write(g.tree, "e/e2.c", s);
    free(s);
    scratch_write(g.tree, "f/f1.cpp",
                  "#include <iostream>\n#include <cstdlib>\n#include <librdkafka/rdkafka.h>\n"
                  "void f1(rd_kafka_t *c) { rd_kafka_commit(c, NULL, 0); std::abort(); }\n");
    scratch_write(g.tree, "f/f2.cpp",
                  "#include <iostream>\n#include <cstring>\n#include <librdkafka/rdkafka.h>\n"
                  "void f2(rd_kafka_t *c) { rd_kafka_commit(c, NULL, std::strlen(\"\")); }\n");
    drain_header("g/base.h", RK, "g_base");
    drain_header("g/more.h", "#include <string.h>\n", "g_more");
    s = unit("#include \"base.h\"\n#include \"more.h\"\n", "g1");
    scratch_write(g.tree, "g/g1.c", s);
    free(s);
    s = unit("#include \"base.h\"\n#include \"more.h\"\n", "g2");
    scratch_write(g.tree, "g/g2.c", s);
    free(s);
    s = unit("#include \"base.h\"\n#include \"more.h\"\n#include <stdio.h>\n", "g3");
    scratch_write(g.tree, "g/g3.c", s);
    free(s);
    s = unit("#include \"base.h\"\n#include <string.h>\n", "g4");
    scratch_write(g.tree, "g/g4.c", s);
    free(s);
    drain_header("h/inc/shared.h", RK, "h_shared");
    drain_header("h/z/shared.h", RK "/* z's own */\n", "z_own");
    for (const char *const *n = (const char *const[]){"x/h1", "y/h2", "z/h3", "inc/h4", NULL}; *n;
         n++) {
        char *rel = fmt("h/%s.c", *n);
        s = unit("#include \"shared.h\"\n", strchr(*n, '/') + 1);
        scratch_write(g.tree, rel, s);
        free(s);
        free(rel);
    }
    drain_header("x/tmpl.h", RK "template <class T> int twice(T t) { return t.twice(); }\n",
                 "x_drain");
    s = unit("#include \"tmpl.h\"\n", "x1");
    char *x1 = fmt("%sint x1_use() { return twice(1); }\n", s);
    scratch_write(g.tree, "x/x1.cpp", x1);
    free(x1);
    free(s);
    s = unit("#include \"tmpl.h\"\n", "x2");
    scratch_write(g.tree, "x/x2.cpp", s);
    free(s);
    scratch_write(g.tree, "i/inc/shared.h", "#include \"nested.h\"\n");
    drain_header("i/inc/nested.h", RK, "n_inc");
    drain_header("i/s/nested.h", RK "/* s's own */\n", "n_s");
    char *link = scratch_path(g.tree, "i/s/shared.h");
    assert_int_equal(symlink("../inc/shared.h", link), 0);
    free(link);
    scratch_write(g.tree, "i/inc/a.h", "#include \"cfg.h\"\n");
    drain_header("i/inc2/cfg.h", RK, "cfg2");
    drain_header("i/d/cfg.h", RK "/* d's own */\n", "cfg_d");
    scratch_write(g.tree, "i/d/local.h", RK);
    drain_header("i/inc/p.h", RK, "p_h");
    drain_header("i/v/up.h", RK, "up");
    static const char *const i_units[][2] = {
        {"s/s1", "#include \"shared.h\"\n"},
        {"t/t1", "#include \"shared.h\"\n"},
        {"u/u1", "#include \"shared.h\"\n"},
        {"d/d1", "#include \"a.h\"\n#include \"local.h\"\n"},
        {"d/d2", "#include \"a.h\"\n#include \"local.h\"\n"},
        {"p/p1", "#include \"p.h\"\n"},
        {"q/q1", "#include \"p.h\"\n"},
        {"v/w/v1", "#include \"../up.h\"\n"},
        {"v/w/v2", "#include \"../up.h\"\n"},
    };
    for (size_t i = 0; i < sizeof i_units / sizeof i_units[0]; i++) {
        char *rel = fmt("i/%s.c", i_units[i][0]);
        s = unit(i_units[i][1], strrchr(i_units[i][0], '/') + 1);
        scratch_write(g.tree, rel, s);
        free(s);
        free(rel);
    }
    /* the compilation database: each unit compiled in its own directory (h/'s in h/, i/'s in
     * i/) */
    static const char *const units[][3] = {
        {"a", "u1.c", ""},
        {"a", "u2.c", ""},
        {"a", "u3.c", ""},
        {"a", "u4.c", ""},
        {"a", "u5.c", ""},
        {"a", "u6.c", ""},
        {"a", "u7.c", ""},
        {"b", "b1.c", ""},
        {"b", "b2.c", ""},
        {"c", "m.c", "-DMODE=1"},
        {"c", "n.c", "-DMODE=2"},
        {"c", "o.c", "-DMODE=2"},
        {"d", "d1.c", ""},
        {"d", "d2.c", ""},
        {"e", "e1.c", "-Ilnk/../inc"},
        {"e", "e2.c", "-Ilnk/../inc"},
        {"f", "f1.cpp", ""},
        {"f", "f2.cpp", ""},
        {"g", "g1.c", ""},
        {"g", "g2.c", ""},
        {"g", "g3.c", ""},
        {"g", "g4.c", ""},
        {"h", "x/h1.c", "-Iinc"},
        {"h", "y/h2.c", "-Iinc"},
        {"h", "z/h3.c", "-Iinc"},
        {"h", "inc/h4.c", "-Iinc"},
        {"x", "x1.cpp", ""},
        {"x", "x2.cpp", ""},
        {"i", "s/s1.c", "-Iinc\", \"-Iinc2"},
        {"i", "t/t1.c", "-Iinc\", \"-Iinc2"},
        {"i", "u/u1.c", "-Iinc\", \"-Iinc2"},
        {"i", "d/d1.c", "-Iinc\", \"-Iinc2"},
        {"i", "d/d2.c", "-Iinc\", \"-Iinc2"},
        {"i", "p/p1.c", "-Iinc\", \"-Iinc2"},
        {"i", "q/q1.c", "-Iinc\", \"-Iinc2"},
        {"i", "v/w/v1.c", "-Iinc\", \"-Iinc2"},
        {"i", "v/w/v2.c", "-Iinc\", \"-Iinc2"},
    };
    char *db = fmt("[");
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        char *flag = *units[i][2] ? fmt("\"%s\", ", units[i][2]) : fmt("%s", "");
        char *next = fmt(
            "%s%s{\"directory\": \"%s/%s\", \"file\": \"%s\", \"arguments\": [\"cc\", %s\"-c\", "
            "\"%s\"]}",
            db, i ? ",\n" : "\n", g.tree, units[i][0], units[i][1], flag, units[i][1]);
        free(db);
        free(flag);
        db = next;
    }
    char *all = fmt("%s\n]\n", db);
    scratch_write(g.tree, "build/compile_commands.json", all);
    free(all);
    free(db);
}

static int each_setup(void **state) {
    (void)state;
    g.tree = scratch_dir("preamble");
    g.tmp = scratch_dir("preamble-tmp");
    write_tree();
    setenv("TMPDIR", g.tmp, 1);
    return 0;
}

static int each_teardown(void **state) {
    (void)state;
    if (g.tmpdir)
        setenv("TMPDIR", g.tmpdir, 1);
    else
        unsetenv("TMPDIR");
    scratch_remove(g.tree);
    scratch_remove(g.tmp);
    free(g.tree);
    free(g.tmp);
    return 0;
}

/* Nothing is left in the runs' TMPDIR. */
static void expect_tmp_empty(void) {
    DIR *d = opendir(g.tmp);
    assert_non_null(d);
    struct dirent *de;
    while ((de = readdir(d)))
        if (strcmp(de->d_name, ".") && strcmp(de->d_name, ".."))
            fail_msg("%s/%s is left behind", g.tmp, de->d_name);
    closedir(d);
}

static void expect_in(const kdc_run_t *r, const char *where, const char *want) {
    if (!strstr(where, want)) {
        scale_show(r);
        fail_msg("the output lacks \"%s\"", want);
    }
}

static const char *const all_units[] = {
    "a/u1.c",     "a/u2.c",    "a/u3.c",   "a/u4.c",   "a/u5.c",     "a/u6.c",   "a/u7.c",
    "b/b1.c",     "b/b2.c",    "c/m.c",    "c/n.c",    "c/o.c",      "d/d1.c",   "d/d2.c",
    "e/e1.c",     "e/e2.c",    "f/f1.cpp", "f/f2.cpp", "g/g1.c",     "g/g2.c",   "g/g3.c",
    "g/g4.c",     "h/x/h1.c",  "h/y/h2.c", "h/z/h3.c", "h/inc/h4.c", "x/x1.cpp", "x/x2.cpp",
    "i/s/s1.c",   "i/t/t1.c",  "i/u/u1.c", "i/d/d1.c", "i/d/d2.c",   "i/p/p1.c", "i/q/q1.c",
    "i/v/w/v1.c", "i/v/w/v2.c"};

/* Writes into args, from args[0] on: the NULL-terminated words, then every unit, then NULL
 * (64 entries are enough). */
static void with_units(const char **args, const char *const *words) {
    size_t n = 0;
    for (; *words; words++)
        args[n++] = *words;
    for (size_t i = 0; i < sizeof all_units / sizeof all_units[0]; i++)
        args[n++] = all_units[i];
    args[n] = NULL;
}

/* kdc-lint -p build --format=json --stats [extra...] on every unit (extra: at most 8) */
static int lint(kdc_run_t *r, const char *const *extra) {
    const char *words[16] = {"-p", "build", "--format=json", "--stats"};
    for (size_t n = 4; *extra; extra++)
        words[n++] = *extra;
    const char *args[64];
    with_units(args, words);
    return scale_lintv(r, g.tree, args);
}

static int has_finding(const kdc_run_t *r, const char *file, unsigned line, const char *rule) {
    kdc_report_t rep;
    char err[256];
    if (kdc_report_parse(r->out, g.tree, &rep, err, sizeof err)) {
        scale_show(r);
        fail_msg("not a report: %s", err);
    }
    char *path = scratch_path(g.tree, file);
    int found = 0;
    for (size_t i = 0; i < rep.nfindings; i++)
        if (!strcmp(rep.findings[i].file, path) && rep.findings[i].line == line &&
            !strcmp(rep.findings[i].rule, rule))
            found = 1;
    free(path);
    kdc_report_free(&rep);
    return found;
}

static void the_same_report_with_and_without_preambles_for_j1_and_j2(void **state) {
    (void)state;
    kdc_run_t off, on1, on2;
    int rc = lint(&off, (const char *const[]){"--no-cache", "--no-preambles", "-j1", NULL});
    assert_int_equal(rc, 1);
    expect_in(&off, off.err, "no shared preamble;");
    /* what the tree must show: findings in headers and units, the #define's effect, the
     * flags' effect, the compile errors */
    assert_true(has_finding(&off, "a/common.h", 5, "bare-commit"));
    assert_true(has_finding(&off, "a/common.h", 8, "bare-commit"));
    assert_true(has_finding(&off, "a/u2.c", 6, "bare-commit"));
    assert_true(has_finding(&off, "b/common.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "c/mode.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "d/d1.c", 3, "bare-commit"));
    assert_true(has_finding(&off, "e/real/inc/h2.h", 1, "bare-commit"));
    assert_true(has_finding(&off, "g/base.h", 2, "bare-commit"));
    assert_true(has_finding(&off, "g/more.h", 2, "bare-commit"));
    assert_true(has_finding(&off, "g/g3.c", 5, "bare-commit"));
    assert_true(has_finding(&off, "h/inc/shared.h", 2, "bare-commit"));
    assert_true(has_finding(&off, "h/z/shared.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "h/inc/h4.c", 3, "bare-commit"));
    assert_true(has_finding(&off, "x/tmpl.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "x/x2.cpp", 3, "bare-commit"));
    assert_true(has_finding(&off, "i/s/nested.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "i/inc/nested.h", 2, "bare-commit"));
    assert_true(has_finding(&off, "i/inc2/cfg.h", 2, "bare-commit"));
    assert_false(has_finding(&off, "i/d/cfg.h", 3, "bare-commit"));
    assert_true(has_finding(&off, "i/inc/p.h", 2, "bare-commit"));
    assert_true(has_finding(&off, "i/v/up.h", 2, "bare-commit"));
    expect_in(&off, off.out, "\"incomplete\": 4");

    rc = lint(&on1, (const char *const[]){"--no-cache", "-j1", NULL});
    assert_int_equal(rc, 1);
    expect_in(&on1, on1.err, "14 shared preambles (12 built in ");
    expect_in(&on1, on1.err, "; 26 units parsed against one, 1 parsed again without it); ");
    scale_same_report("-j1 with and without preambles", off.out, on1.out);
    expect_tmp_empty();

    rc = lint(&on2, (const char *const[]){"--no-cache", "-j2", NULL});
    assert_int_equal(rc, 1);
    /* built once each, whichever worker came first */
    expect_in(&on2, on2.err, "14 shared preambles (12 built in ");
    expect_in(&on2, on2.err, "; 26 units parsed against one, 1 parsed again without it); ");
    scale_same_report("-j2 with preambles and -j1 without", off.out, on2.out);
    expect_tmp_empty();
    kdc_run_free(&off);
    kdc_run_free(&on1);
    kdc_run_free(&on2);
}

static void a_header_edited_between_runs_rebuilds_only_the_preambles_that_hold_it(void **state) {
    (void)state;
    char *cache = scratch_path(g.tree, "cache");
    char *cache_opt = fmt("--cache-dir=%s", cache);
    kdc_run_t first, second, fresh, warm;
    assert_int_equal(lint(&first, (const char *const[]){cache_opt, "-j2", NULL}), 1);
    expect_in(&first, first.err, ": 37 parsed, 0 from the cache,");
    assert_true(has_finding(&first, "a/common.h", 5, "bare-commit"));

    /* a/common.h loses its commit on line 5: the five units of a/ that include it are parsed
     * again, with their two preambles, and the four with compile errors as on every run (a
     * unit with errors is never stored): u7 with them, d1 and d2 (whose preamble fails), x1
     * (alone: x2 is stored) */
    char *edited = fmt("%s", common_h);
    char *at = strstr(edited, "    rd_kafka_commit(c, NULL, 0);\n}");
    assert_non_null(at);
    memset(at, ' ', strlen("    rd_kafka_commit(c, NULL, 0);"));
    memcpy(at, "    (void)c;", strlen("    (void)c;"));
    scratch_write(g.tree, "a/common.h", edited);
    assert_int_equal(lint(&second, (const char *const[]){cache_opt, "-j2", NULL}), 1);
    expect_in(&second, second.err, ": 9 parsed, 28 from the cache,");
    expect_in(&second, second.err, "3 shared preambles (2 built in ");
    expect_in(&second, second.err, "; 6 units parsed against one, 0 parsed again without it); ");
    assert_false(has_finding(&second, "a/common.h", 5, "bare-commit"));
    assert_int_equal(lint(&fresh, (const char *const[]){"--no-cache", "--no-preambles", NULL}), 1);
    scale_same_report("after the edit, cached and fresh", fresh.out, second.out);

    /* a warm run parses only the units with errors: d1 and d2's preamble fails again */
    assert_int_equal(lint(&warm, (const char *const[]){cache_opt, "-j2", NULL}), 1);
    expect_in(&warm, warm.err, ": 4 parsed, 33 from the cache,");
    expect_in(&warm, warm.err, "1 shared preamble (0 built in ");
    expect_in(&warm, warm.err, "; 0 units parsed against one, 0 parsed again without it); ");
    scale_same_report("warm and fresh", fresh.out, warm.out);
    expect_tmp_empty();
    kdc_run_free(&first);
    kdc_run_free(&second);
    kdc_run_free(&fresh);
    kdc_run_free(&warm);
    free(edited);
    free(cache_opt);
    free(cache);
}

/* A chained preamble's units read its parent's headers too: editing g/base.h, which only
 * the group's preamble holds, parses all four units of g/ again (the three of the chained
 * preamble among them, which is built again on the parent built again), and editing g/more.h
 * only the three. */
static void a_header_of_a_chained_preambles_parent_parses_its_units_again(void **state) {
    (void)state;
    char *cache = scratch_path(g.tree, "cache");
    char *cache_opt = fmt("--cache-dir=%s", cache);
    kdc_run_t first, base, more, fresh;
    assert_int_equal(lint(&first, (const char *const[]){cache_opt, "-j1", NULL}), 1);
    expect_in(&first, first.err, ": 37 parsed, 0 from the cache,");

    scratch_write(g.tree, "g/base.h",
                  "#include <librdkafka/rdkafka.h>\n"
                  "static inline void g_base(rd_kafka_t *c) { (void)c; }\n");
    assert_int_equal(lint(&base, (const char *const[]){cache_opt, "-j1", NULL}), 1);
    /* g1..g4, and u7, d1, d2, x1 (compile errors: never stored) */
    expect_in(&base, base.err, ": 8 parsed, 29 from the cache,");
    expect_in(&base, base.err, "3 shared preambles (2 built in ");
    /* (u7 and x1 are the only units of a/ and x/ parsed: no group, no preamble) */
    expect_in(&base, base.err, "; 4 units parsed against one, 0 parsed again without it); ");
    assert_false(has_finding(&base, "g/base.h", 2, "bare-commit"));
    assert_true(has_finding(&base, "g/more.h", 2, "bare-commit"));

    scratch_write(g.tree, "g/more.h",
                  "#include <string.h>\n"
                  "static inline void g_more(rd_kafka_t *c) { (void)c; }\n");
    assert_int_equal(lint(&more, (const char *const[]){cache_opt, "-j1", NULL}), 1);
    /* g1..g3 (one group of three with the same prefix now: no chain), u7, d1, d2, x1 */
    expect_in(&more, more.err, ": 7 parsed, 30 from the cache,");
    expect_in(&more, more.err, "2 shared preambles (1 built in ");
    expect_in(&more, more.err, "; 3 units parsed against one, 0 parsed again without it); ");
    assert_false(has_finding(&more, "g/more.h", 2, "bare-commit"));
    assert_int_equal(lint(&fresh, (const char *const[]){"--no-cache", "--no-preambles", NULL}), 1);
    scale_same_report("after the edits, cached and fresh", fresh.out, more.out);
    expect_tmp_empty();
    kdc_run_free(&first);
    kdc_run_free(&base);
    kdc_run_free(&more);
    kdc_run_free(&fresh);
    free(cache_opt);
    free(cache);
}

static void nap_ms(long ms) {
    struct timespec t = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&t, NULL);
}

/* The name of a run's directory in the runs' TMPDIR that has its owner.lock, or NULL. */
static char *run_dir_with_lock(void) {
    DIR *d = opendir(g.tmp);
    assert_non_null(d);
    char *found = NULL;
    struct dirent *de;
    while (!found && (de = readdir(d)))
        if (!strncmp(de->d_name, "kdc-lint-preambles.", 19)) {
            char *lock = fmt("%s/%s/owner.lock", g.tmp, de->d_name);
            if (access(lock, F_OK) == 0)
                found = strdup(de->d_name);
            free(lock);
        }
    closedir(d);
    return found;
}

/* Whether rel (in the runs' TMPDIR) exists, not following a symbolic link. */
static int in_tmp(const char *rel) {
    char *path = fmt("%s/%s", g.tmp, rel);
    struct stat st;
    int there = lstat(path, &st) == 0;
    free(path);
    return there;
}

static void a_run_killed_leaves_its_directory_and_the_next_run_removes_it(void **state) {
    (void)state;
    /* a run killed while it parses: its preambles' directory stays behind */
    const char *argv[64];
    with_units(argv, (const char *const[]){scale_lint_path(), "-p", "build", "--no-cache", "-j1",
                                           "-o", "/dev/null", NULL});
    pid_t driver = fork();
    assert_true(driver >= 0);
    if (driver == 0) {
        if (chdir(g.tree) != 0)
            _exit(127);
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDERR_FILENO);
        execv(scale_lint_path(), (char *const *)argv);
        _exit(127);
    }
    char *killed = NULL;
    for (int i = 0; i < 2000 && !killed; i++, nap_ms(10))
        killed = run_dir_with_lock();
    kill(driver, SIGKILL);
    waitpid(driver, NULL, 0);
    if (!killed)
        fail_msg("kdc-lint made no preambles' directory with an owner.lock within 20 s");
    /* its workers die with it (PR_SET_PDEATHSIG): then no process holds the lock */
    char *lock_path = fmt("%s/%s/owner.lock", g.tmp, killed);
    int lock = open(lock_path, O_RDWR);
    assert_true(lock >= 0);
    int free_now = 0;
    for (int i = 0; i < 500 && !free_now; i++, nap_ms(10))
        free_now = flock(lock, LOCK_EX | LOCK_NB) == 0;
    close(lock);
    if (!free_now)
        fail_msg("%s is still locked 5 s after kdc-lint was killed", lock_path);
    assert_true(in_tmp(killed));

    /* what a sweep must leave: a live run's directory (its lock held, here by this test), one
     * without owner.lock, one whose owner.lock is a FIFO (never opened: opening it for reading
     * would block), a symbolic link to a directory whose lock is free, a file */
    scratch_write(g.tmp, "kdc-lint-preambles.live/owner.lock", "");
    scratch_write(g.tmp, "kdc-lint-preambles.live/p0.pch", "x");
    char *live_lock = fmt("%s/kdc-lint-preambles.live/owner.lock", g.tmp);
    int held = open(live_lock, O_RDWR);
    assert_true(held >= 0);
    assert_int_equal(flock(held, LOCK_EX | LOCK_NB), 0);
    scratch_write(g.tmp, "kdc-lint-preambles.nolock/p0.pch", "x");
    scratch_write(g.tree, "victim/owner.lock", "");
    scratch_write(g.tree, "victim/keep", "x");
    char *victim = fmt("%s/victim", g.tree), *link = fmt("%s/kdc-lint-preambles.link", g.tmp);
    assert_int_equal(symlink(victim, link), 0);
    scratch_write(g.tmp, "kdc-lint-preambles.file", "x");
    /* one that holds more than a run writes (a directory two levels down): not a run's, left
     * whole (before, what could be removed was, the lock first, and the rest stayed for good) */
    scratch_write(g.tmp, "kdc-lint-preambles.deep/owner.lock", "");
    scratch_write(g.tmp, "kdc-lint-preambles.deep/top", "x");
    scratch_write(g.tmp, "kdc-lint-preambles.deep/sub/deeper/file", "x");
    scratch_write(g.tmp, "kdc-lint-preambles.fifo/p0.pch", "x");
    char *fifo = fmt("%s/kdc-lint-preambles.fifo/owner.lock", g.tmp);
    assert_int_equal(mkfifo(fifo, 0600), 0);

    kdc_run_t r;
    assert_int_equal(lint(&r, (const char *const[]){"--no-cache", "-j1", NULL}), 1);
    expect_in(&r, r.err, "14 shared preambles (12 built in ");
    assert_false(in_tmp(killed));
    assert_true(in_tmp("kdc-lint-preambles.live/p0.pch"));
    assert_true(in_tmp("kdc-lint-preambles.nolock/p0.pch"));
    assert_true(in_tmp("kdc-lint-preambles.link"));
    assert_true(in_tmp("kdc-lint-preambles.file"));
    assert_true(in_tmp("kdc-lint-preambles.fifo/p0.pch"));
    assert_true(in_tmp("kdc-lint-preambles.deep/owner.lock"));
    assert_true(in_tmp("kdc-lint-preambles.deep/top"));
    assert_true(in_tmp("kdc-lint-preambles.deep/sub/deeper/file"));
    char *keep = scratch_read(g.tree, "victim/keep");
    assert_string_equal(keep, "x");
    /* and its own directory is gone: only the six planted entries are left */
    DIR *d = opendir(g.tmp);
    assert_non_null(d);
    size_t left = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        left += strcmp(de->d_name, ".") && strcmp(de->d_name, "..");
    closedir(d);
    assert_int_equal(left, 6);
    close(held);
    kdc_run_free(&r);

    /* a relative TMPDIR: the preambles are built and used all the same (before, none was
     * built: the parses run in the units' directories) */
    const char *base = strrchr(g.tmp, '/') + 1;
    char *rel = fmt("../%s", base);
    setenv("TMPDIR", rel, 1);
    assert_int_equal(lint(&r, (const char *const[]){"--no-cache", "-j1", NULL}), 1);
    setenv("TMPDIR", g.tmp, 1);
    expect_in(&r, r.err, "14 shared preambles (12 built in ");
    expect_in(&r, r.err, "; 26 units parsed against one, 1 parsed again without it); ");
    free(rel);
    kdc_run_free(&r);
    free(keep);
    free(victim);
    free(link);
    free(live_lock);
    free(fifo);
    free(lock_path);
    free(killed);
}

/* A stale directory (its lock free) with a bind mount of another directory in it, or itself
 * the mount point of one: the sweep enters no mount and removes nothing in the mounted
 * directory (before, a bind mount of the same file system had the same device, and its files
 * were removed). Done in a child process in a mount namespace of its own, which needs root. */
static void a_sweep_enters_no_mount_point(void **state) {
    (void)state;
    scratch_write(g.tree, "outside/precious", "x");
    scratch_write(g.tree, "outside/owner.lock", "");
    scratch_write(g.tmp, "kdc-lint-preambles.in/owner.lock", "");
    scratch_write(g.tmp, "kdc-lint-preambles.in/sub/.keep", "");
    scratch_write(g.tmp, "kdc-lint-preambles.at/.keep", "");
    char *outside = fmt("%s/outside", g.tree);
    char *in = fmt("%s/kdc-lint-preambles.in/sub", g.tmp);
    char *at = fmt("%s/kdc-lint-preambles.at", g.tmp);
    char *err = fmt("%s/lint.err", g.tree);
    const char *argv[64];
    with_units(argv, (const char *const[]){scale_lint_path(), "-p", "build", "--stats",
                                           "--no-cache", "-j1", "-o", "/dev/null", NULL});
    /* the run is the child itself (no test code after the fork): the mounts end with it */
    pid_t child = fork();
    assert_true(child >= 0);
    if (child == 0) {
        if (unshare(CLONE_NEWNS) != 0 || mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) ||
            mount(outside, in, NULL, MS_BIND, NULL) || mount(outside, at, NULL, MS_BIND, NULL)) {
            fprintf(stderr, "a bind mount in a mount namespace of its own (root needed): %s\n",
                    strerror(errno));
            _exit(127);
        }
        int fd = open(err, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || dup2(fd, STDERR_FILENO) < 0 || chdir(g.tree) != 0)
            _exit(127);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    char *stats = scratch_read(g.tree, "lint.err");
    if (!strstr(stats, "14 shared preambles (12 built in "))
        fail_msg("the run's stats lack its preambles:\n%s", stats);
    char *keep = scratch_read(g.tree, "outside/precious");
    assert_string_equal(keep, "x");
    char *lock = scratch_read(g.tree, "outside/owner.lock");
    assert_string_equal(lock, "");
    /* the stale directories stay: one holds a mount point, the other is one */
    assert_true(in_tmp("kdc-lint-preambles.in/owner.lock"));
    assert_true(in_tmp("kdc-lint-preambles.at"));
    free(stats);
    free(keep);
    free(lock);
    free(outside);
    free(in);
    free(at);
    free(err);
}

int main(void) {
    g.tmpdir = getenv("TMPDIR") ? strdup(getenv("TMPDIR")) : NULL;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(the_same_report_with_and_without_preambles_for_j1_and_j2,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            a_header_edited_between_runs_rebuilds_only_the_preambles_that_hold_it, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_header_of_a_chained_preambles_parent_parses_its_units_again, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_run_killed_leaves_its_directory_and_the_next_run_removes_it, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(a_sweep_enters_no_mount_point, each_setup, each_teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
