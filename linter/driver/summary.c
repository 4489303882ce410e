/* What a run of kdc-lint says on stderr at its end (see summary.h). */
#define _GNU_SOURCE
#include "summary.h"
#include "escape.h"
#include "libclang_lazy.h"
#include "paths.h"
#include "util.h"

#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

/* Notes about inputs, incomplete units and input errors: on stderr in every
 * format. Returns how many units are incomplete. */
static size_t print_diagnostics(const kdc_lint_run_t *r) {
    const kdc_inputs_t *in = &r->inputs;
    const char *cwd = r->cwd;
    size_t nincomplete = 0, ntus = kdc_program_ntus(r->prog);
    /* paths and messages escaped: a file name cannot forge a line (escape.h) */
    for (size_t i = 0; i < in->nnotes; i++) {
        kdc_fputs_shown(kdc_display_path(cwd, in->notes[i].file), stderr);
        fputs(": note: ", stderr);
        kdc_fputs_shown(in->notes[i].message, stderr);
        fputc('\n', stderr);
    }
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(r->prog, i);
        if (!tu->incomplete)
            continue;
        nincomplete++;
        if (tu->nerrors) {
            kdc_fputs_shown(kdc_display_path(cwd, tu->file), stderr);
            fprintf(stderr,
                    ": warning: %u compile error%s; analysed partially (first: ", tu->nerrors,
                    tu->nerrors == 1 ? "" : "s");
            kdc_fputs_shown(tu->first_error ? kdc_display_path(cwd, tu->first_error) : "?", stderr);
            fputs(")\n  hint: pass -p BUILD_DIR with the project's compile_commands.json for "
                  "its exact flags, or --extra-arg=-I...\n",
                  stderr);
        }
        if (tu->too_deep) {
            kdc_fputs_shown(kdc_display_path(cwd, tu->file), stderr);
            fputs(": warning: analysed partially: ", stderr);
            kdc_fputs_shown(kdc_display_path(cwd, tu->too_deep), stderr);
            fputc('\n', stderr);
        }
    }
    for (size_t i = 0; i < in->nerrors; i++) {
        fputs("kdc-lint: error: ", stderr);
        kdc_fputs_shown(kdc_display_path(cwd, in->errors[i].file), stderr);
        fputs(": ", stderr);
        kdc_fputs_shown(in->errors[i].message, stderr);
        fputc('\n', stderr);
    }
    return nincomplete;
}

/* The summary lines: findings (text format), and what was not shown or not parsed. */
static void print_summary(const kdc_lint_run_t *r, size_t nincomplete) {
    const kdc_lint_opts_t *o = r->o;
    size_t nfind = kdc_findings_nshown(&r->findings), ntus = kdc_program_ntus(r->prog),
           nerr = r->inputs.nerrors;
    if (!strcmp(o->format, "text")) {
        fprintf(stderr, "kdc-lint: %zu finding%s in %zu translation unit%s (%zu incomplete, %zu input error%s)\n",
                nfind, nfind == 1 ? "" : "s", ntus, ntus == 1 ? "" : "s", nincomplete, nerr,
                nerr == 1 ? "" : "s");
        if (nfind)
            fputs("kdc-lint: what a rule's finding means and how to fix it: kdc-lint --explain "
                  "RULE\n",
                  stderr);
    }
    if (o->changed_since)
        fprintf(stderr, "kdc-lint: %zu finding%s in files unchanged since %s not shown\n",
                r->unchanged_findings, r->unchanged_findings == 1 ? "" : "s", o->changed_since);
    if (r->shard.count)
        fprintf(stderr, "kdc-lint: shard %u/%u: %zu of the run's %zu finding%s are in this "
                        "shard's files\n",
                r->shard.index, r->shard.count, nfind, r->run_findings,
                r->run_findings == 1 ? "" : "s");
    if (r->pre.nskipped)
        fprintf(stderr,
                "kdc-lint: %zu of %zu translation unit%s skipped: they cannot involve Kafka "
                "(prefilter; --no-prefilter analyses them)\n",
                r->pre.nskipped, r->nunits, r->nunits == 1 ? "" : "s");
}

static double mib(long kib) { return (double)kib / 1024.0; }

/* --stats: what was parsed, cached and skipped, memory, time. */
static void print_stats(const kdc_lint_run_t *r) {
    const kdc_jobs_stats_t *js = &r->js;
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    fprintf(stderr,
            "kdc-lint: stats: %zu translation unit%s: %zu parsed, %zu from the cache%s, %zu "
            "skipped by the prefilter, %zu not parsable; ",
            r->nunits, r->nunits == 1 ? "" : "s", js->parsed, js->from_cache,
            r->cache ? "" : " (no cache)", r->pre.nskipped, js->failed);
    fprintf(stderr, "the analysis %s; ",
            r->analysis_cached ? "from the cache (the same program and options)"
            : r->cache         ? "run (and stored in the cache)"
                               : "run");
    if (js->workers)
        fprintf(stderr, "%u worker process%s (peak RSS: this process %.1f MiB, %.1f MiB "
                        "of it once the models were merged; largest worker %.1f MiB, "
                        "workers together at most %.1f MiB); ",
                js->workers, js->workers == 1 ? "" : "es", mib(ru.ru_maxrss),
                mib(r->rss_parsed_kib), mib(js->worker_peak_rss_kib), mib(js->worker_sum_rss_kib));
    else
        fprintf(stderr, "parsed in this process (peak RSS %.1f MiB; %.1f MiB resident once "
                        "parsed); ",
                mib(ru.ru_maxrss), mib(r->rss_parsed_kib));
    if (js->preambles)
        fprintf(stderr,
                "%zu shared preamble%s (%zu built in %.2f s, %.1f MiB on disk; %zu unit%s "
                "parsed against one, %zu parsed again without it); ",
                js->preambles, js->preambles == 1 ? "" : "s", js->preambles_built,
                js->preamble_build_s, (double)js->preamble_disk_bytes / (1024.0 * 1024.0),
                js->preamble_units, js->preamble_units == 1 ? "" : "s", js->preamble_fallbacks);
    else
        fprintf(stderr, "no shared preamble; ");
    if (r->models_skipped)
        fprintf(stderr, "no model loaded (the stored analysis applies); ");
    fprintf(stderr, "libclang %s; ", kdc_libclang_mapped() ? "loaded" : "not loaded");
    double now = kdc_now_seconds();
    fprintf(stderr, "%.2f s in all (the prefilter %.2f s%s; models merged after %.2f s; "
                    "analysis %.2f s; report %.2f s)\n",
            now - r->t0, r->t_prefilter, r->pre.from_cache ? ", from the cache" : "",
            r->t_parsed - r->t0, r->t_analysed - r->t_parsed, now - r->t_analysed);
}

/* The files the run analysed, as a baseline names them (relative to the
 * directory kdc-lint runs in): its units' files and the files of the
 * functions it modelled, headers included (also kept with a stored analysis). */
static void analysed_files(const kdc_lint_run_t *r, kdc_strset_t *out) {
    kdc_strset_init(out);
    for (size_t i = 0; i < r->files.n; i++) {
        const char *p = r->files.v[i] ? kdc_display_path(r->cwd, r->files.v[i]) : NULL;
        if (p)
            kdc_strset_add(out, p, strlen(p));
    }
}

static int was_analysed(const char *file, void *arg) {
    return kdc_strset_find(arg, file, strlen(file)) != NULL;
}

int kdc_lint_summary(const kdc_lint_run_t *r) {
    size_t nincomplete = print_diagnostics(r);
    print_summary(r, nincomplete);
    if (r->o->want_stats)
        print_stats(r);
    kdc_strset_t analysed;
    analysed_files(r, &analysed);
    kdc_filter_summary(r->filter, stderr, was_analysed, &analysed);
    kdc_strset_free(&analysed);

    int rc = kdc_findings_nshown(&r->findings) ? 1 : 0;
    if (r->inputs.nerrors || r->write_failed || (r->o->fail_incomplete && nincomplete))
        rc = 2;
    if (r->write_failed)
        fprintf(stderr, "kdc-lint: error: cannot write the report%s%s\n",
                r->o->out_path ? " to " : "", r->o->out_path ? r->o->out_path : "");
    return rc;
}
