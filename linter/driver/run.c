/* One run of kdc-lint, step by step (see run.h). */
#define _GNU_SOURCE
#include "run.h"
#include "escape.h"
#include "dump.h"
#include "facts.h"
#include "filesig.h"
#include "output.h"
#include "paths.h"
#include "rule.h"
#include "summary.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* What a step returns when the run goes on; anything else is the exit status. */
#define GO_ON (-1)

/* --config and --baseline; --dump-config ends the run here. */
static int open_filter(kdc_lint_run_t *r) {
    const kdc_lint_opts_t *o = r->o;
    char *err = NULL;
    if (!(r->filter = kdc_filter_new(&o->filter, NULL, &err))) {
        fprintf(stderr, "kdc-lint: error: %s\n", err);
        free(err);
        return 2;
    }
    if (o->dump_config)
        return kdc_filter_dump_config(r->filter, o->dump_config, stdout);
    if (!o->paths.n && !o->db_dir) {
        fprintf(stderr, "kdc-lint: error: no input paths (see kdc-lint --help)\n");
        return 2;
    }
    return GO_ON;
}

/* --changed-since=REV: the files changed since REV. */
static int read_changed(kdc_lint_run_t *r) {
    char *err = NULL;
    if (r->o->changed_since && kdc_changed_collect(r->o->changed_since, ".", &r->changed, &err)) {
        fprintf(stderr, "kdc-lint: error: --changed-since: %s\n", err);
        free(err);
        return 2;
    }
    return GO_ON;
}

/* The cache: --cache-dir must work; the default one is used when it can be. */
static int open_cache(kdc_lint_run_t *r) {
    const kdc_lint_opts_t *o = r->o;
    if (o->no_cache)
        return GO_ON;
    char *err = NULL;
    struct stat st;
    const char *dir = o->cache_dir ? o->cache_dir : KDC_CACHE_DEFAULT_DIR;
    /* A cache that came with the checkout, or another user's, could hide a finding: not
     * used (entries are also authenticated with the user's own key: cache_int.h). */
    if (lstat(dir, &st) == 0 && st.st_uid != geteuid()) {
        fprintf(stderr,
                "kdc-lint: note: %s: not trusted: owned by another user (uid %u); running "
                "without a cache\n",
                dir, (unsigned)st.st_uid);
        return GO_ON;
    }
    if (lstat(dir, &st) == 0 && S_ISDIR(st.st_mode) && kdc_git_tracks_files_in(dir)) {
        fprintf(stderr,
                "kdc-lint: note: %s: not trusted: git tracks files in it (it came with the "
                "checkout); running without a cache\n",
                dir);
        return GO_ON;
    }
    /* The default one is not created in a directory nobody may write to (root may). */
    if (!o->cache_dir && stat(KDC_CACHE_DEFAULT_DIR, &st) != 0 &&
        (stat(".", &st) != 0 || !(st.st_mode & 0222)))
        err = kdc_xstrdup("not created: the working directory is read-only");
    else
        r->cache = kdc_cache_open(dir, &err);
    if (!r->cache && o->cache_dir) {
        fprintf(stderr, "kdc-lint: error: --cache-dir %s: %s\n", o->cache_dir, err);
        free(err);
        return 2;
    }
    if (!r->cache)
        fprintf(stderr, "kdc-lint: note: %s: %s; running without a cache (--no-cache: no note)\n",
                KDC_CACHE_DEFAULT_DIR, err);
    free(err);
    return GO_ON;
}

/* The input a report would overwrite: -o naming one of the files to analyse. */
static const char *output_is_input(const char *out_path, const kdc_inputs_t *in) {
    char *real = realpath(out_path, NULL);
    const char *hit = NULL;
    for (size_t i = 0; real && i < in->njobs && !hit; i++)
        if (!strcmp(in->jobs[i].file, real))
            hit = in->jobs[i].file;
    free(real);
    return hit;
}

/* The translation units, then the report file: opened once the inputs are
 * known, and never over one of them (nor is the baseline written there). */
static int collect_inputs(kdc_lint_run_t *r) {
    const kdc_lint_opts_t *o = r->o;
    /* without -p (and without `--`, as clang-tidy), the database clangd would find */
    r->db_dir = o->db_dir;
    if (!o->db_dir && !o->dashdash && (r->db_found = kdc_compdb_find(o->paths.v, o->paths.n)))
        r->db_dir = r->db_found;
    kdc_input_opts_t io = {r->db_dir, o->extra.v, o->extra.n, r->cache, r->db_found != NULL};
    kdc_inputs_collect(o->paths.v, o->paths.n, &io, &r->inputs);
    if (o->out_path) {
        if (output_is_input(o->out_path, &r->inputs)) {
            fprintf(stderr,
                    "kdc-lint: error: -o %s: is a source file to analyse; not overwriting it\n",
                    o->out_path);
            return 2;
        }
        if (!(r->out = fopen(o->out_path, "w"))) {
            fprintf(stderr, "kdc-lint: error: -o %s: %m\n", o->out_path);
            r->out = stdout;
            return 2;
        }
    }
    if (o->filter.write_baseline && output_is_input(o->filter.write_baseline, &r->inputs)) {
        fprintf(stderr,
                "kdc-lint: error: --write-baseline %s: is a source file to analyse; not "
                "overwriting it\n",
                o->filter.write_baseline);
        return 2;
    }
    return GO_ON;
}

/* The configured function-role patterns of every unit's configuration (the
 * prefilter keeps units naming them), NULL-terminated; strings borrowed. */
static const char **role_patterns(kdc_filter_t *filter, const kdc_inputs_t *in) {
    KDC_VEC(const char *) v = {0};
    KDC_VEC(const kdc_config_t *) seen = {0};
    for (size_t i = 0; i < in->njobs; i++) {
        const kdc_config_t *c = kdc_configs_for(kdc_filter_configs(filter), in->jobs[i].file);
        size_t k = 0;
        while (c && k < seen.n && seen.v[k] != c)
            k++;
        if (!c || k < seen.n)
            continue;
        KDC_VEC_PUSH(seen, c);
        for (int role = 0; role < KDC_NROLES; role++)
            for (char **pat = c->functions[role]; pat && *pat; pat++)
                KDC_VEC_PUSH(v, *pat);
    }
    KDC_VEC_PUSH(v, NULL);
    free(seen.v);
    return v.v;
}

/* The units to parse: not those of broken configurations (named with the
 * errors), nor those the prefilter finds cannot involve Kafka. */
static int select_units(kdc_lint_run_t *r) {
    const kdc_inputs_t *in = &r->inputs;
    r->cwd = getcwd(NULL, 0);
    r->todo = kdc_xrealloc(NULL, (in->njobs ? in->njobs : 1) * sizeof *r->todo);
    for (size_t i = 0; i < in->njobs; i++)
        if (!kdc_filter_skips(r->filter, in->jobs[i].file))
            r->todo[r->ntodo++] = i;
    r->nunits = r->ntodo;
    r->t_prefilter = kdc_now_seconds();
    if (!r->o->no_prefilter && r->ntodo) {
        const char **roles = role_patterns(r->filter, in);
        kdc_prefilter(in, r->todo, r->ntodo, roles, r->cache, &r->pre);
        free(roles);
        size_t kept = 0;
        for (size_t i = 0; i < r->ntodo; i++) {
            if (r->pre.keep[i])
                r->todo[kept++] = r->todo[i];
            else if (r->o->want_stats) {
                fputs("kdc-lint: stats: skipped by the prefilter: ", stderr);
                kdc_fputs_shown(kdc_display_path(r->cwd, in->jobs[r->todo[i]].file), stderr);
                fputc('\n', stderr);
            }
        }
        r->ntodo = kept;
    }
    r->t_prefilter = kdc_now_seconds() - r->t_prefilter;
    return GO_ON;
}

/* The analysis options of the analysed files and of the files of the units the prefilter
 * skipped (they count as if they were parsed, so skipping changes no option). */
static void analysis_options(kdc_lint_run_t *r) {
    const kdc_prefilter_result_t *pre = &r->pre;
    const char **more = kdc_xrealloc(NULL, (pre->nfiles ? pre->nfiles : 1) * sizeof *more);
    for (size_t i = 0; i < pre->nfiles; i++)
        more[i] = kdc_intern(r->prog, pre->files[i]);
    kdc_filter_options_with(r->filter, &r->files, more, pre->nfiles, &r->opts);
    free(more);
}

/* The key the analysis of r->prog (whose digest is `program`) is stored under. */
static void analysis_key(const kdc_lint_run_t *r, const unsigned char program[16],
                         unsigned char key[16]) {
    kdc_cache_analysis_key(r->cache, program, &r->opts,
                           (const unsigned char *const *)r->plan.need, kdc_nrules, key);
}

/* A re-run on an unchanged tree: the stored analysis applies without loading a
 * model (the stored program's units and files stand in for it). */
static void reuse_stored_analysis(kdc_lint_run_t *r) {
    kdc_run_summary_t sum;
    if (kdc_cache_lookup_run(r->cache, r->inputs.jobs, r->todo, r->ntodo, r->prog, &sum,
                             r->runs)) {
        unsigned char key[16];
        r->files = sum.files;
        analysis_options(r);
        kdc_filter_plan(r->filter, &r->files, &r->plan);
        analysis_key(r, sum.program, key);
        r->models_skipped = !memcmp(key, sum.key, 16);
        if (!r->models_skipped) { /* other options or rules: the analysis runs */
            kdc_findings_free(&r->runs[0]);
            kdc_findings_free(&r->runs[1]);
            kdc_rule_plan_free(&r->plan);
            free(r->files.v);
            r->files = (kdc_files_t){0};
        }
    }
    if (!r->models_skipped) {
        kdc_program_free(r->prog);
        r->prog = kdc_program_new();
    } else {
        r->analysis_cached = 1;
        r->js.from_cache = r->ntodo;
        memcpy(r->js.program, sum.program, sizeof r->js.program);
    }
}

/* Every unit's model: parsed (in worker processes with -j), or from the cache. */
static void parse_units(kdc_lint_run_t *r) {
    const kdc_lint_opts_t *o = r->o;
    kdc_jobs_opts_t jo = {o->njobs ? o->njobs : kdc_jobs_cpus(),
                          r->cache,
                          0,
                          r->cwd,
                          o->unit_time_s,
                          o->unit_memory_mib,
                          !o->no_preambles};
    if (!strcmp(o->progress_when, "always"))
        jo.progress = isatty(STDERR_FILENO) ? 3 : 2;
    else if (!strcmp(o->progress_when, "auto") && isatty(STDERR_FILENO))
        jo.progress = 1;
    kdc_jobs_run(&jo, &r->inputs, r->todo, r->ntodo, r->prog, &r->js);
}

/* This process's resident set now (KiB), or 0. */
static long current_rss_kib(void) {
    FILE *f = fopen("/proc/self/statm", "r");
    long size = 0, resident = 0;
    if (f && fscanf(f, "%ld %ld", &size, &resident) != 2)
        resident = 0;
    if (f)
        fclose(f);
    return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

/* --explain-config=FILE:LINE: 0 when a client is created there, 2 otherwise. */
static int explain(const kdc_facts_t *facts, const char *where, FILE *out) {
    char *file = kdc_xstrdup(where), *colon = strrchr(file, ':'), *end = NULL;
    unsigned long line = colon ? strtoul(colon + 1, &end, 10) : 0;
    int rc = 2;
    if (!colon || !line || !end || *end) {
        fprintf(stderr, "kdc-lint: error: --explain-config: '%s' is not FILE:LINE\n", where);
    } else {
        *colon = 0;
        char *cwd = getcwd(NULL, 0);
        if (kdc_facts_explain(facts, file, (unsigned)line, out, cwd))
            rc = 0;
        else
            fprintf(stderr,
                    "kdc-lint: error: --explain-config: no client (rd_kafka_new, "
                    "Producer::create, KafkaConsumer::create) is created at %s:%lu in the "
                    "analysed files\n",
                    file, line);
        free(cwd);
    }
    free(file);
    return rc;
}

/* The rules' findings: from the cache when this program was analysed with these
 * options before, else from the analysis (then stored). */
/* "kdc-lint: note: ..." on stderr, control characters escaped (escape.h). */
static void note_line(const char *note) {
    fputs("kdc-lint: note: ", stderr);
    kdc_fputs_shown(note, stderr);
    fputc('\n', stderr);
}

static void run_rules(kdc_lint_run_t *r) {
    unsigned char key[16] = {0};
    kdc_filter_plan(r->filter, &r->files, &r->plan);
    if (r->cache) {
        char *note = NULL;
        analysis_key(r, r->js.program, key);
        r->analysis_cached = kdc_cache_lookup_findings(r->cache, r->inputs.jobs, r->todo,
                                                       r->ntodo, key, r->prog, r->runs, &note);
        if (note)
            note_line(note);
        free(note);
    }
    if (!r->analysis_cached) {
        kdc_facts_t *facts = kdc_facts_build(r->prog, &r->opts);
        kdc_filter_check(&r->plan, facts, r->prog, r->runs);
        kdc_facts_free(facts); /* what the rules found is all that is needed of it */
    }
    /* Stored with what the next run needs to take it without loading the models;
     * stored again when it was found by loading them (another file's signature, a
     * unit parsed again into the same model). After a failed write (noted once)
     * nothing is stored. */
    char *err = NULL;
    if (kdc_cache_writable(r->cache) &&
        kdc_cache_store_findings(r->cache, r->inputs.jobs, r->todo, r->ntodo, key, r->js.program,
                                 r->prog, r->runs, r->analysis_cached, &err)) {
        note_line(err);
        free(err);
    }
}

/* The program's models and the rules' findings on it; --dump-model and
 * --explain-config end the run here. */
static int analyse(kdc_lint_run_t *r) {
    const kdc_lint_opts_t *o = r->o;
    r->prog = kdc_program_new();
    if (r->cache && !o->dump_model && !o->explain_config)
        reuse_stored_analysis(r);
    if (!r->models_skipped)
        parse_units(r);
    r->t_parsed = kdc_now_seconds();
    r->rss_parsed_kib = current_rss_kib();
    if (o->dump_model) {
        kdc_dump_program(r->out, r->prog);
        return 0;
    }
    if (!r->models_skipped) {
        kdc_program_files(r->prog, &r->files);
        analysis_options(r);
        if (o->explain_config) {
            kdc_facts_t *facts = kdc_facts_build(r->prog, &r->opts);
            int rc = explain(facts, o->explain_config, r->out);
            kdc_facts_free(facts);
            return rc;
        }
        run_rules(r);
    }
    r->t_analysed = kdc_now_seconds();
    return GO_ON;
}

/* What identifies this run for kdc-lint merge: the version, the options that
 * decide findings, and each unit (path shown, arguments, main file contents). */
static void run_id(const kdc_lint_run_t *r, char out[33]) {
    const kdc_lint_opts_t *o = r->o;
    /* pairs of name and value */
    /* clang-format off */
    const char *const opts[] = {
        "format", o->format, "profile", o->profile, "config", o->filter.overrides.config_path,
        "baseline", o->filter.baseline, "changed-since", o->changed_since, "prefilter",
        o->no_prefilter ? "off" : "on", "-p", r->db_dir, "shards",
        o->shard_spec ? strchr(o->shard_spec, '/') : NULL};
    /* clang-format on */
    KDC_VEC(const char *) parts = {0};
    KDC_VEC(char *) owned = {0};
    KDC_VEC_PUSH(parts, "kdc-lint " KDC_VERSION);
    for (size_t i = 0; i < sizeof opts / sizeof *opts; i++)
        KDC_VEC_PUSH(parts, opts[i]);
    for (size_t i = 0; i < o->enables.n; i++)
        KDC_VEC_PUSH(parts, o->enables.v[i]);
    KDC_VEC_PUSH(parts, "--disable");
    for (size_t i = 0; i < o->disables.n; i++)
        KDC_VEC_PUSH(parts, o->disables.v[i]);
    KDC_VEC_PUSH(parts, "paths");
    for (size_t i = 0; i < o->paths.n; i++)
        KDC_VEC_PUSH(parts, o->paths.v[i]);
    for (size_t i = 0; i < r->inputs.njobs; i++) {
        const kdc_tu_job_t *j = &r->inputs.jobs[i];
        KDC_VEC_PUSH(parts, kdc_display_path(r->cwd, j->file));
        for (int k = 0; k < j->argc; k++)
            KDC_VEC_PUSH(parts, j->argv[k]);
        unsigned char d[16];
        char *hex = kdc_xstrdup("unreadable................................");
        if (kdc_file_digest(j->file, d) == 0)
            for (int k = 0; k < 16; k++)
                snprintf(hex + 2 * k, 3, "%02x", d[k]);
        KDC_VEC_PUSH(owned, hex);
        KDC_VEC_PUSH(parts, hex);
    }
    kdc_shard_run_id(parts.v, parts.n, out);
    for (size_t i = 0; i < owned.n; i++)
        free(owned.v[i]);
    free(owned.v);
    free(parts.v);
}

/* What is reported: configuration, suppressions and the baseline (on every
 * run); then only findings in changed files (every unit was analysed); then
 * only those of this shard. */
static void select_findings(kdc_lint_run_t *r) {
    kdc_filter_set_incomplete(r->filter, r->prog);
    kdc_filter_run(r->filter, &r->plan, r->runs, &r->files, &r->inputs, &r->findings);
    if (r->o->changed_since)
        r->unchanged_findings = kdc_changed_select(&r->changed, &r->findings);
    r->run_findings = kdc_findings_nshown(&r->findings);
    if (r->shard.count) {
        run_id(r, r->shard.run_id);
        char *root = kdc_source_root(r->cwd);
        kdc_shard_select(&r->shard, &r->findings, root);
        free(root);
    }
}

/* --color: always, never, or auto: on a terminal unless NO_COLOR is set (no-color.org). */
static int use_color(const char *when, FILE *out) {
    if (!strcmp(when, "always"))
        return 1;
    if (!strcmp(when, "never"))
        return 0;
    const char *no_color = getenv("NO_COLOR");
    return !(no_color && *no_color) && isatty(fileno(out));
}

/* The report in the chosen format. A full disk or a closed pipe shows at the
 * flush, also on stdout. */
static void write_report(kdc_lint_run_t *r) {
    kdc_run_t run = {&r->findings, &r->inputs, r->prog, kdc_now_seconds() - r->t0, r->cwd, 0,
                     r->pre.nskipped, r->shard.count ? &r->shard : NULL};
    run.color = use_color(r->o->color_when, r->out);
    int rc = kdc_output_format(r->o->format)(r->out, &run);
    if (r->out != stdout) {
        if (fclose(r->out) != 0)
            rc = -1;
        r->out = stdout;
    } else if (fflush(r->out) != 0 || ferror(r->out)) {
        rc = -1;
    }
    r->write_failed = rc != 0;
}

static int report(kdc_lint_run_t *r) {
    select_findings(r);
    write_report(r);
    return kdc_lint_summary(r);
}

static void run_free(kdc_lint_run_t *r) {
    if (r->out != stdout)
        fclose(r->out);
    kdc_cache_close(r->cache);
    kdc_prefilter_result_free(&r->pre);
    kdc_shard_free(&r->shard);
    free(r->todo);
    kdc_findings_free(&r->findings);
    kdc_findings_free(&r->runs[0]);
    kdc_findings_free(&r->runs[1]);
    kdc_rule_plan_free(&r->plan);
    free(r->files.v);
    kdc_program_free(r->prog);
    kdc_inputs_free(&r->inputs);
    kdc_changed_free(&r->changed);
    free(r->db_found);
    free(r->cwd);
    kdc_filter_free(r->filter);
}

int kdc_lint_run(const kdc_lint_opts_t *o) {
    static int (*const steps[])(kdc_lint_run_t *) = {
        open_filter, read_changed, open_cache, collect_inputs, select_units, analyse, report,
    };
    kdc_lint_run_t r = {.o = o, .t0 = kdc_now_seconds(), .out = stdout, .shard = o->shard};
    int rc = GO_ON;
    for (size_t i = 0; i < sizeof steps / sizeof *steps && rc == GO_ON; i++)
        rc = steps[i](&r);
    run_free(&r);
    return rc;
}
