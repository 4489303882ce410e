/* kdc-lint merge (see merge.h and shard.h). */
#define _GNU_SOURCE
#include "merge.h"
#include "shard.h"
#include "regfile.h"
#include "util.h"

#include <jansson.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct report {
    const char *path;
    json_t *doc;
    int sarif;
    json_t *findings; /* borrowed: "findings" or runs[0].results */
    json_t *meta;     /* borrowed: "shard" or runs[0].properties.kdcShard */
    unsigned index, count;
    size_t total;
} report_t;

static int fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int fail(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("kdc-lint merge: error: ", stderr);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    return -1;
}

static json_t *sarif_run(json_t *doc) {
    json_t *runs = json_object_get(doc, "runs");
    return json_is_array(runs) && json_array_size(runs) == 1 ? json_array_get(runs, 0) : NULL;
}

static const char *tool_version(const report_t *r) {
    json_t *tool = r->sarif ? json_object_get(json_object_get(json_object_get(
                                  sarif_run(r->doc), "tool"), "driver"), "version")
                            : json_object_get(json_object_get(r->doc, "tool"), "version");
    return json_string_value(tool);
}

static int load(report_t *r) {
    json_error_t e;
    char *why = NULL;
    size_t len = 0;
    char *text = kdc_read_regular(r->path, 0, &len, &why);
    if (!text) {
        fail("%s: %s", r->path, why);
        free(why);
        return -1;
    }
    r->doc = json_loadb(text, len, 0, &e);
    free(text);
    if (!r->doc)
        return fail("%s: not JSON (line %d, column %d: %s)", r->path, e.line, e.column, e.text);
    json_t *run = sarif_run(r->doc);
    const char *name = NULL;
    if (json_is_string(json_object_get(r->doc, "version")) && run) {
        r->sarif = 1;
        name = json_string_value(
            json_object_get(json_object_get(json_object_get(run, "tool"), "driver"), "name"));
        r->findings = json_object_get(run, "results");
        r->meta = json_object_get(json_object_get(run, "properties"), "kdcShard");
    } else {
        name = json_string_value(json_object_get(json_object_get(r->doc, "tool"), "name"));
        r->findings = json_object_get(r->doc, "findings");
        r->meta = json_object_get(r->doc, "shard");
    }
    if (!name || strcmp(name, "kdc-lint") || !json_is_array(r->findings))
        return fail("%s: not a kdc-lint JSON or SARIF report", r->path);
    if (!json_is_object(r->meta))
        return fail("%s: not a shard's report (it was written without --shard=K/N)", r->path);
    json_t *idx = json_object_get(r->meta, "index"), *cnt = json_object_get(r->meta, "count");
    json_t *tot = json_object_get(r->meta, "total"), *pos = json_object_get(r->meta, "findings");
    if (!json_is_integer(idx) || !json_is_integer(cnt) || !json_is_integer(tot) ||
        !json_is_array(pos) || !json_is_string(json_object_get(r->meta, "run")) ||
        json_integer_value(cnt) < 1 || json_integer_value(idx) < 1 ||
        json_integer_value(idx) > json_integer_value(cnt) || json_integer_value(tot) < 0)
        return fail("%s: its shard description is damaged", r->path);
    if (json_integer_value(cnt) > KDC_SHARD_MAX)
        return fail("%s: its shard description is damaged (shard %" JSON_INTEGER_FORMAT
                    " of %" JSON_INTEGER_FORMAT "; N is at most %d)",
                    r->path, json_integer_value(idx), json_integer_value(cnt), KDC_SHARD_MAX);
    r->index = (unsigned)json_integer_value(idx);
    r->count = (unsigned)json_integer_value(cnt);
    r->total = (size_t)json_integer_value(tot);
    if (json_array_size(pos) != json_array_size(r->findings))
        return fail("%s: %zu findings but %zu positions in its shard description", r->path,
                    json_array_size(r->findings), json_array_size(pos));
    return 0;
}

/* The report without what differs between shards: findings, shard, seconds. */
static json_t *common_part(const report_t *r) {
    json_t *c = json_deep_copy(r->doc);
    if (r->sarif) {
        json_t *run = sarif_run(c);
        json_object_del(run, "results");
        json_object_del(json_object_get(run, "properties"), "kdcShard");
    } else {
        json_object_del(c, "findings");
        json_object_del(c, "shard");
        json_object_del(json_object_get(c, "stats"), "seconds");
    }
    return c;
}

/* The first top-level key (of the run, for SARIF) whose value differs. */
static const char *first_difference(json_t *a, json_t *b, int sarif) {
    if (sarif) {
        if (!json_equal(json_object_get(a, "$schema"), json_object_get(b, "$schema")))
            return "$schema";
        a = sarif_run(a);
        b = sarif_run(b);
    }
    const char *key;
    json_t *v;
    json_object_foreach(a, key, v) {
        if (!json_equal(v, json_object_get(b, key)))
            return key;
    }
    json_object_foreach(b, key, v) {
        if (!json_object_get(a, key))
            return key;
    }
    return NULL;
}

static int check_and_merge(report_t *rs, size_t n, json_t **out) {
    const report_t *a = &rs[0];
    const char *ver = tool_version(a);
    const char *run = json_string_value(json_object_get(a->meta, "run"));
    for (size_t i = 1; i < n; i++) {
        const report_t *b = &rs[i];
        if (b->sarif != a->sarif)
            return fail("%s is %s but %s is %s: merge reports of one format", b->path,
                        b->sarif ? "SARIF" : "JSON", a->path, a->sarif ? "SARIF" : "JSON");
        const char *vb = tool_version(b);
        if (!ver || !vb || strcmp(ver, vb))
            return fail("%s is from kdc-lint %s but %s from kdc-lint %s", b->path,
                        vb ? vb : "?", a->path, ver ? ver : "?");
        if (b->count != a->count)
            return fail("%s is shard %u/%u but %s is shard %u/%u: not the shards of one run",
                        b->path, b->index, b->count, a->path, a->index, a->count);
        if (strcmp(json_string_value(json_object_get(b->meta, "run")), run))
            return fail("%s and %s are shards of different runs (other options, units or "
                        "sources)",
                        b->path, a->path);
        if (b->total != a->total)
            return fail("%s and %s disagree on the run's number of findings", b->path, a->path);
    }
    const char **by_index = calloc(a->count + 1, sizeof *by_index);
    if (!by_index)
        kdc_oom();
    int rc = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        if (by_index[rs[i].index])
            rc = fail("shard %u/%u is given twice: %s and %s", rs[i].index, a->count,
                      by_index[rs[i].index], rs[i].path);
        by_index[rs[i].index] = rs[i].path;
    }
    for (unsigned k = 1; k <= a->count && !rc; k++)
        if (!by_index[k])
            rc = fail("shard %u/%u is missing (%zu of %u reports given)", k, a->count, n,
                      a->count);
    free(by_index);
    if (rc)
        return rc;
    json_t *common = common_part(a);
    for (size_t i = 1; i < n && !rc; i++) {
        json_t *c = common_part(&rs[i]);
        const char *key = first_difference(common, c, a->sarif);
        if (key)
            rc = fail("%s and %s are shards of different runs: their \"%s\" differ", rs[i].path,
                      a->path, key);
        json_decref(c);
    }
    json_decref(common);
    if (rc)
        return rc;

    /* the positions the shards hold must be the run's findings before a slot is made for
     * each: a damaged "total" must not decide how much memory is asked for */
    size_t held = 0;
    for (size_t i = 0; i < n; i++)
        held += json_array_size(json_object_get(rs[i].meta, "findings"));
    if (held != a->total)
        return fail("the shards hold %zu of the run's %zu findings", held, a->total);
    json_t **slots = calloc(a->total ? a->total : 1, sizeof *slots);
    if (!slots)
        kdc_oom();
    size_t placed = 0;
    double seconds = 0;
    for (size_t i = 0; i < n && !rc; i++) {
        json_t *pos = json_object_get(rs[i].meta, "findings");
        for (size_t k = 0; k < json_array_size(pos) && !rc; k++) {
            json_t *p = json_array_get(pos, k);
            json_int_t at = json_is_integer(p) ? json_integer_value(p) : -1;
            if (at < 0 || (size_t)at >= a->total || slots[at])
                rc = fail("%s: finding %zu has a bad or repeated position", rs[i].path, k + 1);
            else {
                slots[at] = json_array_get(rs[i].findings, k);
                placed++;
            }
        }
        json_t *secs = json_object_get(json_object_get(rs[i].doc, "stats"), "seconds");
        if (json_is_number(secs) && json_number_value(secs) > seconds)
            seconds = json_number_value(secs);
    }
    if (!rc && placed != a->total)
        rc = fail("the shards hold %zu of the run's %zu findings", placed, a->total);
    if (!rc) {
        json_t *merged = json_array();
        for (size_t i = 0; i < a->total; i++)
            json_array_append(merged, slots[i]);
        json_t *doc = json_deep_copy(a->doc);
        if (a->sarif) {
            json_t *runobj = sarif_run(doc), *props = json_object_get(runobj, "properties");
            json_object_set_new(runobj, "results", merged);
            json_object_del(props, "kdcShard");
            if (props && !json_object_size(props))
                json_object_del(runobj, "properties");
        } else {
            json_object_set_new(doc, "findings", merged);
            json_object_del(doc, "shard");
            json_t *stats = json_object_get(doc, "stats");
            if (json_object_get(stats, "seconds"))
                json_object_set_new(stats, "seconds", json_real(seconds));
        }
        *out = doc;
    }
    free(slots);
    return rc;
}

static void usage(FILE *o) {
    fputs("usage: kdc-lint merge [-o FILE] REPORT...\n"
          "\n"
          "Joins the JSON or SARIF reports of the N shards of one run (kdc-lint\n"
          "--shard=K/N --format=json|sarif) into the report of the whole run.\n"
          "\n"
          "  -o, --output=FILE  write the merged report to FILE instead of standard output (-)\n"
          "\n"
          "Exit status: 0 no findings, 1 findings, 2 an error (or input errors in the\n"
          "reports, as the unsharded run).\n",
          o);
}

int kdc_merge_main(int argc, char **argv) {
    const char *out_path = NULL;
    report_t *rs = calloc((size_t)argc + 1, sizeof *rs);
    if (!rs)
        kdc_oom();
    size_t n = 0;
    int rc = 2, only_paths = 0;
    json_t *merged = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (only_paths || a[0] != '-' || !a[1]) {
            rs[n++].path = a;
        } else if (!strcmp(a, "--")) {
            only_paths = 1;
        } else if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
            usage(stdout);
            rc = 0;
            goto done;
        } else if (!strcmp(a, "-o") || !strcmp(a, "--output")) {
            if (i + 1 >= argc) {
                fail("option '%s' needs a value", a);
                goto done;
            }
            out_path = argv[++i];
        } else if (!strncmp(a, "--output=", 9)) {
            out_path = a + 9;
        } else if (!strncmp(a, "-o", 2)) {
            out_path = a + 2;
        } else {
            fail("unknown option '%s' (see kdc-lint merge --help)", a);
            goto done;
        }
    }
    if (out_path && !strcmp(out_path, "-"))
        out_path = NULL; /* -o -: standard output */
    if (!n) {
        fail("no reports to merge (see kdc-lint merge --help)");
        goto done;
    }
    if (out_path) {
        char *ro = realpath(out_path, NULL);
        for (size_t i = 0; ro && i < n; i++) {
            char *ri = realpath(rs[i].path, NULL);
            int same = ri && !strcmp(ri, ro);
            free(ri);
            if (same) {
                fail("-o %s: is one of the reports to merge; not overwriting it", out_path);
                free(ro);
                goto done;
            }
        }
        free(ro);
    }
    for (size_t i = 0; i < n; i++)
        if (load(&rs[i]))
            goto done;
    if (check_and_merge(rs, n, &merged))
        goto done;

    FILE *o = out_path ? fopen(out_path, "w") : stdout;
    if (!o) {
        fail("-o %s: %m", out_path);
        goto done;
    }
    size_t flags = JSON_INDENT(2) | JSON_PRESERVE_ORDER;
    if (!rs[0].sarif)
        flags |= JSON_REAL_PRECISION(6); /* as output/json.c writes it */
    int wrc = json_dumpf(merged, o, flags);
    fputc('\n', o);
    if (o != stdout ? fclose(o) != 0 : fflush(o) != 0 || ferror(o))
        wrc = -1;
    if (wrc) {
        fail("cannot write the merged report%s%s", out_path ? " to " : "",
             out_path ? out_path : "");
        goto done;
    }
    json_t *results = rs[0].sarif ? json_object_get(sarif_run(merged), "results")
                                  : json_object_get(merged, "findings");
    size_t nfindings = 0;
    for (size_t k = 0; k < json_array_size(results); k++) /* suppressed: not a problem */
        nfindings += !json_object_get(json_array_get(results, k), "suppressions");
    int input_errors =
        rs[0].sarif
            ? json_is_false(json_object_get(
                  json_array_get(json_object_get(sarif_run(merged), "invocations"), 0),
                  "executionSuccessful"))
            : json_array_size(json_object_get(merged, "errors")) > 0;
    rc = input_errors ? 2 : nfindings ? 1 : 0;
done:
    json_decref(merged);
    for (size_t i = 0; i < n; i++)
        json_decref(rs[i].doc);
    free(rs);
    return rc;
}
