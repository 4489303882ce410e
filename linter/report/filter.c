#define _GNU_SOURCE
/* What the driver reports (see filter.h). */
#include "filter.h"
#include "escape.h"
#include "baseline.h"
#include "fingerprint.h"
#include "paths.h"
#include "rule.h"
#include "suppress.h"
#include "util.h"

#include <string.h>
#include <unistd.h>

typedef struct skipped {
    const kdc_config_t *config;
    size_t n;
} skipped_t;

struct kdc_filter {
    kdc_filter_opts_t o;
    char *cwd;
    kdc_configs_t *configs;
    kdc_baseline_t *baseline;
    kdc_strmap_t cache; /* file name pointer → configuration, or &none */
    kdc_options_union_t u;
    KDC_VEC(skipped_t) skipped; /* translation units not analysed, per broken configuration */
    size_t nsuppressed, nbaselined, nwritten;
    int wrote;
    kdc_strset_t incomplete; /* main files of units with compile errors */
};

static const kdc_config_t none; /* cache marker: no configuration */

kdc_filter_t *kdc_filter_new(const kdc_filter_opts_t *o, const char *cwd, char **err) {
    *err = NULL;
    kdc_filter_t *fl = calloc(1, sizeof *fl);
    if (!fl)
        kdc_oom();
    fl->o = *o;
    fl->cwd = cwd ? kdc_xstrdup(cwd) : getcwd(NULL, 0);
    if (!fl->cwd)
        fl->cwd = kdc_xstrdup("/");
    kdc_strmap_init(&fl->cache);
    fl->configs = kdc_configs_new(o->overrides.config_path, fl->cwd);
    if (o->baseline && !(fl->baseline = kdc_baseline_read(o->baseline, err))) {
        kdc_filter_free(fl);
        return NULL;
    }
    return fl;
}

void kdc_filter_free(kdc_filter_t *fl) {
    if (!fl)
        return;
    if (fl->incomplete.slots)
        kdc_strset_free(&fl->incomplete);
    kdc_configs_free(fl->configs);
    kdc_baseline_free(fl->baseline);
    kdc_strmap_free(&fl->cache);
    kdc_options_union_free(&fl->u);
    free(fl->skipped.v);
    free(fl->cwd);
    free(fl);
}

kdc_configs_t *kdc_filter_configs(kdc_filter_t *fl) { return fl->configs; }

/* The configuration of a file, cached by the name's pointer (names are interned). */
static const kdc_config_t *config_of(kdc_filter_t *fl, const char *file) {
    if (!file)
        return NULL;
    const kdc_config_t *c = kdc_strmap_get(&fl->cache, file);
    if (!c) {
        c = kdc_configs_for(fl->configs, file);
        kdc_strmap_put(&fl->cache, file, (void *)(c ? c : &none));
    }
    return c == &none ? NULL : c;
}

int kdc_filter_skips(kdc_filter_t *fl, const char *file) {
    const kdc_config_t *c = config_of(fl, file);
    if (!c || !c->broken)
        return 0;
    size_t i = 0;
    while (i < fl->skipped.n && fl->skipped.v[i].config != c)
        i++;
    if (i == fl->skipped.n)
        KDC_VEC_PUSH(fl->skipped, ((skipped_t){c, 0}));
    fl->skipped.v[i].n++;
    return 1;
}

/* Calls fn for each analysed file. */
static void each_analysed_file(const kdc_files_t *files, void (*fn)(void *, const char *),
                               void *arg) {
    for (size_t i = 0; i < files->n; i++)
        fn(arg, files->v[i]);
}

typedef struct union_ctx {
    kdc_filter_t *fl;
    KDC_VEC(const kdc_config_t *) cfgs;
    int unconfigured, nfiles, nstrict;
} union_ctx_t;

static void union_visit(void *arg, const char *file) {
    union_ctx_t *u = arg;
    const kdc_config_t *c = config_of(u->fl, file);
    if (c && c->broken)
        return;
    u->nfiles++;
    u->nstrict += kdc_config_strict(c, &u->fl->o.overrides);
    if (!c) {
        u->unconfigured = 1;
        return;
    }
    for (size_t i = 0; i < u->cfgs.n; i++)
        if (u->cfgs.v[i] == c)
            return;
    KDC_VEC_PUSH(u->cfgs, c);
}

void kdc_filter_options_with(kdc_filter_t *fl, const kdc_files_t *files,
                             const char *const *more, size_t nmore, kdc_options_t *opts) {
    union_ctx_t u = {fl, {0}, 0, 0, 0};
    each_analysed_file(files, union_visit, &u);
    for (size_t i = 0; i < nmore; i++)
        union_visit(&u, more[i]);
    opts->strict = u.nfiles ? u.nstrict == u.nfiles : kdc_config_strict(NULL, &fl->o.overrides);
    kdc_options_union_free(&fl->u);
    kdc_options_union(u.cfgs.v, u.cfgs.n, u.unconfigured || !u.cfgs.n, opts, &fl->u);
    free(u.cfgs.v);
}

/* ---------- running and filtering ---------- */

static size_t rule_index(const char *name) {
    for (size_t i = 0; i < kdc_nrules; i++)
        if (kdc_rules[i]->name == name || !strcmp(kdc_rules[i]->name, name))
            return i;
    return kdc_nrules;
}

/* Appends f to fs (taking its memory), without kdc_findings_add's merging. */
static void move(kdc_findings_t *fs, kdc_finding_t *f) {
    if (fs->n == fs->cap) {
        fs->cap = fs->cap ? fs->cap * 2 : 16;
        fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
    }
    fs->v[fs->n++] = *f;
}

typedef struct need_ctx {
    kdc_filter_t *fl;
    unsigned char *need[2]; /* per profile (0 default, 1 strict): rules on in some file */
} need_ctx_t;

static void need_visit(void *arg, const char *file) {
    need_ctx_t *n = arg;
    const kdc_config_t *c = config_of(n->fl, file);
    if (c && c->broken)
        return;
    int p = kdc_config_strict(c, &n->fl->o.overrides);
    for (size_t r = 0; r < kdc_nrules; r++)
        if (kdc_config_rule_on(c, &n->fl->o.overrides, r))
            n->need[p][r] = 1;
}

static void scan_visit(void *arg, const char *file) {
    void **a = arg;
    kdc_filter_t *fl = a[0];
    const kdc_config_t *c = config_of(fl, file);
    if (!(c && c->broken) && !kdc_config_excludes(c, file))
        kdc_suppressions_scan(a[1], file);
}

void kdc_filter_set_incomplete(kdc_filter_t *fl, const kdc_program_t *prog) {
    if (!fl->incomplete.slots)
        kdc_strset_init(&fl->incomplete);
    for (size_t i = 0; i < kdc_program_ntus(prog); i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(prog, i);
        if (tu->nerrors && tu->file)
            kdc_strset_add(&fl->incomplete, tu->file, strlen(tu->file));
    }
}

static int want_unused(void *arg, const char *file, const char *rule) {
    kdc_filter_t *fl = arg;
    /* a unit parsed with compile errors may have missed the finding a suppression in it
     * is for (wrong flags): no verdict on its suppressions */
    if (fl->incomplete.slots && file && kdc_strset_find(&fl->incomplete, file, strlen(file)))
        return 0;
    const kdc_config_t *c = config_of(fl, file);
    size_t r = rule_index(rule);
    return r < kdc_nrules && kdc_config_report_unused(c, &fl->o.overrides) &&
           kdc_config_rule_on(c, &fl->o.overrides, r);
}

static void move_config_errors(kdc_filter_t *fl, kdc_inputs_t *in) {
    for (size_t i = 0; i < kdc_configs_nerrors(fl->configs); i++) {
        const kdc_config_error_t *e = kdc_configs_error(fl->configs, i);
        kdc_inputs_add_error(in, e->where, "%s", e->message);
    }
    for (size_t i = 0; i < fl->skipped.n; i++)
        kdc_inputs_add_error(in, fl->skipped.v[i].config->path,
                             "invalid configuration: the %zu translation unit%s it governs %s "
                             "not analysed",
                             fl->skipped.v[i].n, fl->skipped.v[i].n == 1 ? "" : "s",
                             fl->skipped.v[i].n == 1 ? "was" : "were");
}

static void apply_baseline(kdc_filter_t *fl, kdc_inputs_t *in, kdc_findings_t *fs,
                           kdc_findings_t *dropped) {
    if (!fl->baseline && !fl->o.write_baseline)
        return;
    char(*fps)[KDC_FINGERPRINT_LEN + 1] = kdc_xrealloc(NULL, (fs->n ? fs->n : 1) * sizeof *fps);
    kdc_fingerprints(fs, fl->cwd, fps);
    if (fl->o.write_baseline) {
        char *err = NULL;
        if (kdc_baseline_write(fl->o.write_baseline, fs, fps, fl->cwd, &err) == 0) {
            /* what was written is known from now on: the run shows what --baseline would */
            fl->wrote = 1;
            fl->nwritten = fl->nbaselined = fs->n;
            for (size_t i = 0; i < fs->n; i++)
                move(dropped, &fs->v[i]);
            fs->n = 0;
        } else {
            kdc_inputs_add_error(in, fl->o.write_baseline, "%s",
                                 err + strlen(fl->o.write_baseline) + 2);
            free(err);
        }
    } else {
        size_t kept = 0;
        for (size_t i = 0; i < fs->n; i++) {
            if (kdc_baseline_take(fl->baseline, fps[i])) {
                fl->nbaselined++;
                move(dropped, &fs->v[i]);
            } else {
                fs->v[kept++] = fs->v[i];
            }
        }
        fs->n = kept;
    }
    free(fps);
}

void kdc_filter_plan(kdc_filter_t *fl, const kdc_files_t *files, kdc_rule_plan_t *plan) {
    need_ctx_t nc = {fl, {calloc(kdc_nrules + 1, 1), calloc(kdc_nrules + 1, 1)}};
    if (!nc.need[0] || !nc.need[1])
        kdc_oom();
    each_analysed_file(files, need_visit, &nc);
    plan->need[0] = nc.need[0];
    plan->need[1] = nc.need[1];
}

void kdc_rule_plan_free(kdc_rule_plan_t *plan) {
    free(plan->need[0]);
    free(plan->need[1]);
    plan->need[0] = plan->need[1] = NULL;
}

void kdc_filter_check(const kdc_rule_plan_t *plan, const kdc_facts_t *facts, kdc_program_t *prog,
                      kdc_findings_t runs[2]) {
    /* The rules, once per profile in force (rules know a profile, not configurations). */
    for (int p = 0; p < 2; p++) {
        kdc_options_t opts = *kdc_facts_options(facts);
        opts.strict = p;
        for (size_t r = 0; r < kdc_nrules; r++) {
            if (!plan->need[p][r])
                continue;
            kdc_rule_ctx_t ctx = {facts, prog, &opts, &runs[p], kdc_rules[r], NULL};
            kdc_rules[r]->check(&ctx);
        }
    }
}

void kdc_filter_run(kdc_filter_t *fl, const kdc_rule_plan_t *plan, kdc_findings_t runs[2],
                    const kdc_files_t *files, kdc_inputs_t *in, kdc_findings_t *out) {
    const kdc_overrides_t *ov = &fl->o.overrides;
    kdc_findings_t kept = {0}, dropped = {0};
    /* a profile's run happened when some rule is on in it */
    int ran[2] = {0, 0};
    for (int p = 0; p < 2; p++)
        for (size_t r = 0; r < kdc_nrules && !ran[p]; r++)
            ran[p] = plan->need[p][r];

    /* Each finding against the configuration of its own file. */
    for (int p = 0; p < 2; p++) {
        for (size_t i = 0; i < runs[p].n; i++) {
            kdc_finding_t *f = &runs[p].v[i];
            const kdc_config_t *c = config_of(fl, f->loc.file);
            size_t r = rule_index(f->rule);
            int fp = kdc_config_strict(c, ov);
            int keep = !(c && c->broken) && r < kdc_nrules && !kdc_config_excludes(c, f->loc.file) &&
                       kdc_config_rule_on(c, ov, r) &&
                       (fp == p || !ran[fp] || !plan->need[fp][r]); /* else the other run has it */
            if (keep) {
                if (c && c->rule_severity[r] >= 0) /* else the rule's own (notes stay notes) */
                    f->severity = (kdc_severity_t)c->rule_severity[r];
                move(&kept, f);
            } else {
                move(&dropped, f);
            }
        }
        free(runs[p].v); /* the findings were moved */
        free(runs[p].slots);
        runs[p] = (kdc_findings_t){0};
    }

    /* Suppression comments: in every analysed file and every file with a finding. */
    kdc_suppressions_t *sup = kdc_suppressions_new();
    void *scan_arg[2] = {fl, sup};
    each_analysed_file(files, scan_visit, scan_arg);
    for (size_t i = 0; i < kept.n; i++)
        scan_visit(scan_arg, kept.v[i].loc.file);
    kdc_findings_t shown = {0}, suppressed = {0};
    for (size_t i = 0; i < kept.n; i++) {
        const char *reason = kdc_suppressions_match(sup, &kept.v[i]);
        if (reason) {
            fl->nsuppressed++;
            kept.v[i].suppressed = kdc_xstrdup(reason);
            move(fl->o.keep_suppressed ? &suppressed : &dropped, &kept.v[i]);
        } else {
            move(&shown, &kept.v[i]);
        }
    }
    free(kept.v);
    free(kept.slots);
    kdc_suppressions_report(sup, &shown, want_unused, fl);
    kdc_suppressions_free(sup);
    kdc_findings_sort(&shown);

    apply_baseline(fl, in, &shown, &dropped);
    kdc_findings_free(&dropped);
    if (suppressed.n) { /* after the baseline, which never holds a suppressed finding */
        for (size_t i = 0; i < suppressed.n; i++)
            move(&shown, &suppressed.v[i]);
        free(suppressed.v);
        kdc_findings_sort(&shown);
    }
    kdc_findings_free(out);
    *out = shown;
    move_config_errors(fl, in);
}

int kdc_filter_dump_config(kdc_filter_t *fl, const char *path, FILE *out) {
    const kdc_config_t *c = kdc_configs_for(fl->configs, path);
    size_t nerr = kdc_configs_nerrors(fl->configs);
    for (size_t i = 0; i < nerr; i++) {
        const kdc_config_error_t *e = kdc_configs_error(fl->configs, i);
        fputs("kdc-lint: error: ", stderr); /* control characters escaped (escape.h) */
        kdc_fputs_shown(kdc_display_path(fl->cwd, e->where), stderr);
        fputs(": ", stderr);
        kdc_fputs_shown(e->message, stderr);
        fputc('\n', stderr);
    }
    if (nerr || (c && c->broken))
        return 2;
    if (kdc_config_dump(out, path, c, &fl->o.overrides, fl->cwd) != 0) {
        fprintf(stderr, "kdc-lint: error: cannot write the configuration\n");
        return 2;
    }
    return 0;
}

void kdc_filter_summary(const kdc_filter_t *fl, FILE *err, int (*analysed)(const char *, void *),
                        void *arg) {
    if (fl->wrote)
        fprintf(err, "kdc-lint: wrote %zu finding%s to the baseline %s\n", fl->nwritten,
                fl->nwritten == 1 ? "" : "s", fl->o.write_baseline);
    size_t baselined = fl->wrote ? 0 : fl->nbaselined;
    size_t elsewhere = 0;
    size_t unmatched =
        fl->o.write_baseline ? 0 : kdc_baseline_unmatched(fl->baseline, analysed, arg, &elsewhere);
    if (fl->nsuppressed || baselined) {
        fprintf(err, "kdc-lint: not shown:");
        if (fl->nsuppressed)
            fprintf(err, " %zu suppressed by comments%s", fl->nsuppressed, baselined ? "," : "");
        if (baselined)
            fprintf(err, " %zu in the baseline", baselined);
        fputc('\n', err);
    }
    if (unmatched && !elsewhere)
        fprintf(err,
                "kdc-lint: %zu baseline entr%s no longer found (refresh it with "
                "--write-baseline)\n",
                unmatched, unmatched == 1 ? "y is" : "ies are");
    else if (unmatched) /* a run over some files: rewriting the baseline would drop the rest */
        fprintf(err,
                "kdc-lint: %zu baseline entr%s no longer found in the files analysed (refresh "
                "it with --write-baseline on a run over the whole project, not this one: it "
                "analysed only some of the baseline's files)\n",
                unmatched, unmatched == 1 ? "y is" : "ies are");
}
