/*
 * SARIF 2.1.0, shaped for GitHub code scanning: one run whose tool.driver
 * lists every rule with its embedded doc (help.markdown from rules/<name>.md),
 * precision (the rule's confidence) and default level (its severity); one
 * result per finding with locations relative to the repository root
 * (uriBaseId %SRCROOT%), related locations, a code flow for path rules, and
 * partialFingerprints that survive line shifts (fingerprint.h). Input errors,
 * incomplete translation units and notes become tool execution notifications.
 */
#define _GNU_SOURCE
#include "fingerprint.h"
#include "output.h"
#include "jsontext.h"
#include "ruledocs.h"
#include "rule.h"
#include "regfile.h"
#include "util.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SRCROOT "%SRCROOT%"
#define SCHEMA_URI "https://json.schemastore.org/sarif-2.1.0.json"
#define FINGERPRINT_KEY "kdcFindingHash/v1"

/* Path rules: their related locations are the other steps of an execution
 * path through the finding, and their results carry a code flow. The order
 * says where the finding stands on the path. (A property of the rule; until
 * the rule descriptor says it, this table does, and lint.output checks that
 * its names are rules.) */
typedef enum { NOTES_THEN_FINDING, FINDING_THEN_NOTES } flow_order_t;

static const struct {
    const char *rule;
    flow_order_t order;
} path_rules[] = {
    {"unconfirmed-dlq-routing", NOTES_THEN_FINDING},       /* DLQ produce (via helper) -> commit */
    {"commit-before-delivery-report", NOTES_THEN_FINDING}, /* output produce -> input commit */
    {"flush-as-confirmation", FINDING_THEN_NOTES},         /* flush -> checkpoint */
    {"txn-error-not-aborted", FINDING_THEN_NOTES},         /* failing call -> transaction goes on */
    {"partial-batch-commit", NOTES_THEN_FINDING},          /* loop stops early -> whole batch committed */
};

/* Whether `name` is a path rule; *order says how its steps run. */
static int path_rule(const char *name, flow_order_t *order) {
    for (size_t i = 0; i < sizeof path_rules / sizeof path_rules[0]; i++)
        if (!strcmp(path_rules[i].rule, name)) {
            *order = path_rules[i].order;
            return 1;
        }
    return 0;
}

/* ---------- paths and URIs ---------- */

typedef struct sarif {
    const kdc_run_t *run;
    char *root; /* repository root, absolute, no trailing slash (except "/") */
    /* one source file's lines, for byte -> UTF-16 column conversion */
    char *cached_file;
    char **lines;
    size_t nlines;
} sarif_t;

/* RFC 3986: keep unreserved characters and '/', percent-encode every other byte
 * (which also makes file names that are not UTF-8 valid URIs). */
static void append_uri_path(FILE *m, const char *path) {
    for (const unsigned char *p = (const unsigned char *)path; *p; p++) {
        if ((*p >= 'A' && *p <= 'Z') || (*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
            strchr("-._~/", *p))
            fputc(*p, m);
        else
            fprintf(m, "%%%02X", *p);
    }
}

static char *uri_encode(const char *prefix, const char *path) {
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        kdc_oom();
    fputs(prefix, m);
    append_uri_path(m, path);
    fclose(m);
    return buf;
}

/* An absolute path for a reported path (inputs may be named relative to cwd). */
static char *absolute(const sarif_t *s, const char *path) {
    if (path[0] == '/' || !s->run->cwd)
        return kdc_xstrdup(path);
    return kdc_xasprintf("%s/%s", s->run->cwd, path);
}

/* The part of `abs` below the repository root, or NULL when it is outside. */
static const char *below_root(const sarif_t *s, const char *abs) {
    size_t n = strlen(s->root);
    if (n == 1 && abs[0] == '/')
        return abs[1] ? abs + 1 : NULL;
    if (!strncmp(abs, s->root, n) && abs[n] == '/' && abs[n + 1])
        return abs + n + 1;
    return NULL;
}

/* {"uri": ..., "uriBaseId": "%SRCROOT%"} below the root, an absolute file URI outside it. */
static json_t *artifact_location(const sarif_t *s, const char *path) {
    char *abs = absolute(s, path ? path : "");
    const char *rel = below_root(s, abs);
    json_t *j;
    if (rel) {
        char *uri = uri_encode("", rel);
        j = json_pack("{s:s, s:s}", "uri", uri, "uriBaseId", SRCROOT);
        free(uri);
    } else {
        char *uri = uri_encode("file://", abs);
        j = json_pack("{s:s}", "uri", uri);
        free(uri);
    }
    free(abs);
    return j;
}

/* ---------- columns ---------- */

static void drop_cached_lines(sarif_t *s) {
    for (size_t i = 0; i < s->nlines; i++)
        free(s->lines[i]);
    free(s->lines);
    free(s->cached_file);
    s->lines = NULL;
    s->nlines = 0;
    s->cached_file = NULL;
}

static const char *line_text(sarif_t *s, const char *file, unsigned line) {
    if (!s->cached_file || strcmp(s->cached_file, file)) {
        drop_cached_lines(s);
        s->cached_file = kdc_xstrdup(file);
        FILE *f = kdc_fopen_regular(file);
        char *buf = NULL;
        size_t cap = 0, alloc = 0;
        while (f && getline(&buf, &cap, f) >= 0) {
            if (s->nlines == alloc) {
                alloc = alloc ? alloc * 2 : 256;
                s->lines = kdc_xrealloc(s->lines, alloc * sizeof *s->lines);
            }
            s->lines[s->nlines++] = kdc_xstrdup(buf);
        }
        free(buf);
        if (f)
            fclose(f);
    }
    return line >= 1 && line <= s->nlines ? s->lines[line - 1] : NULL;
}

/* clang's columns count bytes; SARIF's (columnKind utf16CodeUnits, the
 * default GitHub reads) count UTF-16 code units. */
static unsigned utf16_column(sarif_t *s, const char *file, unsigned line, unsigned col) {
    const char *text = file ? line_text(s, file, line) : NULL;
    if (!text || col <= 1)
        return col;
    size_t len = strlen(text);
    unsigned units = 0;
    for (size_t i = 0; i < (size_t)col - 1; i++) {
        if (i >= len) {
            units += (unsigned)(col - 1 - i); /* past the end: as bytes */
            break;
        }
        unsigned char ch = (unsigned char)text[i];
        if ((ch & 0xC0) == 0x80)
            continue;          /* continuation byte */
        units += ch >= 0xF0 ? 2 : 1; /* 4-byte sequences are surrogate pairs */
    }
    return units + 1;
}

/* ---------- locations ---------- */

static json_t *physical_location(sarif_t *s, const kdc_loc_t *loc, int with_end) {
    json_t *pl = json_object();
    json_object_set_new(pl, "artifactLocation", artifact_location(s, loc->file));
    if (loc->line) {
        json_t *region = json_pack("{s:I}", "startLine", (json_int_t)loc->line);
        if (loc->col)
            json_object_set_new(region, "startColumn",
                                json_integer(utf16_column(s, loc->file, loc->line, loc->col)));
        int has_end = with_end && loc->end_line &&
                      (loc->end_line > loc->line || (loc->end_line == loc->line && loc->end_col > loc->col));
        if (has_end) {
            json_object_set_new(region, "endLine", json_integer(loc->end_line));
            json_object_set_new(region, "endColumn", json_integer(utf16_column(
                                                         s, loc->file, loc->end_line, loc->end_col)));
        }
        json_object_set_new(pl, "region", region);
    }
    return pl;
}

static json_t *message(const char *text) {
    json_t *m = json_object();
    json_object_set_new(m, "text", kdc_json_text(text ? text : ""));
    return m;
}

static json_t *location(sarif_t *s, const kdc_loc_t *loc, int with_end, const char *msg) {
    json_t *l = json_object();
    json_object_set_new(l, "physicalLocation", physical_location(s, loc, with_end));
    if (msg)
        json_object_set_new(l, "message", message(msg));
    return l;
}

/* ---------- rules ---------- */

static const char *level_of(kdc_severity_t sev) {
    switch (sev) {
    case KDC_SEV_ERROR: return "error";
    case KDC_SEV_WARNING: return "warning";
    case KDC_SEV_NOTE: return "note";
    }
    return "warning";
}

/* GitHub's own severity vocabulary for non-security alerts. */
static const char *problem_severity_of(kdc_severity_t sev) {
    return sev == KDC_SEV_ERROR ? "error" : sev == KDC_SEV_WARNING ? "warning" : "recommendation";
}

/* bare-commit -> BareCommit: SARIF's friendly rule name. */
static char *pascal_name(const char *id) {
    char *out = kdc_xstrdup(id), *o = out;
    int up = 1;
    for (const char *p = id; *p; p++) {
        if (*p == '-' || *p == '_') {
            up = 1;
            continue;
        }
        *o++ = up && *p >= 'a' && *p <= 'z' ? (char)(*p - 'a' + 'A') : *p;
        up = 0;
    }
    *o = 0;
    return out;
}

/* The doc's first paragraph below its title ("**Finds** ..."), lines joined. */
static char *first_paragraph(const char *md) {
    const char *p = md;
    /* skip the title and blank lines */
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        int blank = strspn(p, " \t\r") >= n;
        if (!blank && p[0] != '#')
            break;
        p = eol ? eol + 1 : p + n;
    }
    char *buf = NULL;
    size_t len = 0;
    FILE *m = open_memstream(&buf, &len);
    if (!m)
        kdc_oom();
    int first = 1;
    while (*p) {
        const char *eol = strchr(p, '\n');
        size_t n = eol ? (size_t)(eol - p) : strlen(p);
        while (n && (p[n - 1] == '\r' || p[n - 1] == ' '))
            n--;
        if (!n || p[0] == '#')
            break;
        if (!first)
            fputc(' ', m);
        first = 0;
        fwrite(p, 1, n, m);
        p = eol ? eol + 1 : p + strlen(p);
    }
    fclose(m);
    return buf;
}

/* Markdown's strong emphasis (**) and code marks removed: the plain-text
 * description (a lone '*' stays: it is C's). */
static char *plain_text(const char *md) {
    char *out = kdc_xstrdup(md), *o = out;
    for (const char *p = md; *p; p++) {
        if (p[0] == '*' && p[1] == '*')
            p++;
        else if (*p != '`')
            *o++ = *p;
    }
    *o = 0;
    return out;
}

static json_t *rule_descriptor(const kdc_rule_t *r) {
    char *name = pascal_name(r->name);
    char *help_uri = kdc_xasprintf("%s/blob/main/rules/%s.md", KDC_HOMEPAGE_URL, r->name);
    json_t *j = json_pack("{s:s, s:s, s:{s:s}}", "id", r->name, "name", name, "shortDescription",
                          "text", r->summary);
    const char *doc = kdc_rule_doc(r->name);
    if (doc) {
        char *para = first_paragraph(doc);
        char *text = plain_text(para);
        json_object_set_new(j, "fullDescription",
                            json_pack("{s:o, s:o}", "text", kdc_json_text(text), "markdown",
                                      kdc_json_text(para)));
        json_object_set_new(j, "help", json_pack("{s:o, s:o}", "text", kdc_json_text(doc),
                                                 "markdown", kdc_json_text(doc)));
        free(text);
        free(para);
    }
    json_object_set_new(j, "helpUri", json_string(help_uri));
    json_object_set_new(j, "defaultConfiguration",
                        json_pack("{s:s}", "level", level_of(r->severity)));
    json_object_set_new(
        j, "properties",
        json_pack("{s:[s,s,s], s:s, s:s, s:s}", "tags", "reliability", "correctness", "kafka",
                  "precision", r->confidence ? r->confidence : "medium", "problem.severity",
                  problem_severity_of(r->severity), "kind", "problem"));
    free(help_uri);
    free(name);
    return j;
}

static long rule_index(const char *name) {
    for (size_t i = 0; i < kdc_nrules; i++)
        if (!strcmp(kdc_rules[i]->name, name))
            return (long)i;
    return -1;
}

/* ---------- results ---------- */

/* SARIF messages are sentences: they end with a period. */
static char *sentence(const char *text) {
    size_t n = strlen(text ? text : "");
    if (!n || text[n - 1] == '.' || text[n - 1] == '!' || text[n - 1] == '?')
        return kdc_xstrdup(text ? text : "");
    return kdc_xasprintf("%s.", text);
}

static json_t *result(sarif_t *s, const kdc_finding_t *f, const char *fingerprint) {
    json_t *r = json_object();
    char *msg = sentence(f->message);
    json_object_set_new(r, "ruleId", json_string(f->rule));
    long idx = rule_index(f->rule);
    if (idx >= 0)
        json_object_set_new(r, "ruleIndex", json_integer(idx));
    json_object_set_new(r, "level", json_string(level_of(f->severity)));
    json_object_set_new(r, "message", message(msg));
    free(msg);

    json_t *loc = location(s, &f->loc, 1, NULL);
    if (f->function)
        json_object_set_new(loc, "logicalLocations",
                            json_pack("[{s:o, s:s}]", "name", kdc_json_text(f->function), "kind",
                                      "function"));
    json_object_set_new(r, "locations", json_pack("[o]", loc));

    if (f->nrelated) {
        json_t *rel = json_array();
        for (size_t k = 0; k < f->nrelated; k++) {
            json_t *l = location(s, &f->related[k].loc, 1, f->related[k].message);
            json_object_set_new(l, "id", json_integer((json_int_t)k + 1));
            json_array_append_new(rel, l);
        }
        json_object_set_new(r, "relatedLocations", rel);
    }

    flow_order_t order;
    if (f->nrelated && path_rule(f->rule, &order)) {
        json_t *steps = json_array();
        json_t *at = json_pack("{s:o}", "location", location(s, &f->loc, 1, "reported here"));
        if (order == FINDING_THEN_NOTES)
            json_array_append_new(steps, at);
        for (size_t k = 0; k < f->nrelated; k++)
            json_array_append_new(
                steps, json_pack("{s:o}", "location",
                                 location(s, &f->related[k].loc, 1, f->related[k].message)));
        if (order == NOTES_THEN_FINDING)
            json_array_append_new(steps, at);
        json_object_set_new(r, "codeFlows",
                            json_pack("[{s:[{s:o}]}]", "threadFlows", "locations", steps));
    }

    json_object_set_new(r, "partialFingerprints",
                        json_pack("{s:s}", FINGERPRINT_KEY, fingerprint));
    if (f->suppressed) /* a suppression comment in the source, with its reason */
        json_object_set_new(r, "suppressions",
                            json_pack("[{s:s, s:o}]", "kind", "inSource", "justification",
                                      kdc_json_text(f->suppressed)));
    return r;
}

/* ---------- invocation ---------- */

static json_t *notification(sarif_t *s, const char *level, const char *file, const char *text) {
    json_t *n = json_pack("{s:s, s:o}", "level", level, "message", message(text));
    if (file) {
        json_t *pl = json_object();
        json_object_set_new(pl, "artifactLocation", artifact_location(s, file));
        json_object_set_new(n, "locations", json_pack("[{s:o}]", "physicalLocation", pl));
    }
    return n;
}

static json_t *invocation(sarif_t *s) {
    const kdc_run_t *run = s->run;
    json_t *notes = json_array();
    for (size_t i = 0; i < run->inputs->nerrors; i++)
        json_array_append_new(notes, notification(s, "error", run->inputs->errors[i].file,
                                                  run->inputs->errors[i].message));
    size_t ntus = kdc_program_ntus(run->program);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(run->program, i);
        if (!tu->incomplete)
            continue;
        char *text;
        if (tu->nerrors)
            text = kdc_xasprintf("%u compile error%s; analysed partially (first: %s)", tu->nerrors,
                                 tu->nerrors == 1 ? "" : "s",
                                 tu->first_error ? kdc_display_path(run->cwd, tu->first_error)
                                                 : "?");
        else
            text = kdc_xasprintf("analysed partially: %s",
                                 tu->too_deep ? kdc_display_path(run->cwd, tu->too_deep) : "?");
        json_array_append_new(notes, notification(s, "warning", tu->file, text));
        free(text);
    }
    for (size_t i = 0; i < run->inputs->nnotes; i++)
        json_array_append_new(notes, notification(s, "note", run->inputs->notes[i].file,
                                                  run->inputs->notes[i].message));
    json_t *inv = json_pack("{s:b}", "executionSuccessful", run->inputs->nerrors == 0);
    if (json_array_size(notes))
        json_object_set_new(inv, "toolExecutionNotifications", notes);
    else
        json_decref(notes);
    return inv;
}

int kdc_output_sarif(FILE *o, const kdc_run_t *run) {
    sarif_t s = {run, kdc_source_root(run->cwd), NULL, NULL, 0};

    json_t *rules = json_array();
    for (size_t i = 0; i < kdc_nrules; i++)
        json_array_append_new(rules, rule_descriptor(kdc_rules[i]));
    json_t *driver = json_pack("{s:s, s:s, s:s, s:s, s:o}", "name", "kdc-lint", "version",
                               KDC_VERSION, "semanticVersion", KDC_VERSION, "informationUri",
                               KDC_HOMEPAGE_URL, "rules", rules);

    /* fingerprints hash paths relative to the repository root, like the locations */
    size_t n = run->findings->n;
    char(*fps)[KDC_FINGERPRINT_LEN + 1] = kdc_xrealloc(NULL, (n ? n : 1) * sizeof *fps);
    kdc_fingerprints(run->findings, s.root, fps);
    json_t *results = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(results, result(&s, &run->findings->v[i], fps[i]));
    free(fps);

    char *root_uri = uri_encode("file://", s.root);
    if (root_uri[strlen(root_uri) - 1] != '/') {
        char *t = kdc_xasprintf("%s/", root_uri);
        free(root_uri);
        root_uri = t;
    }
    json_t *runobj = json_object();
    json_object_set_new(runobj, "tool", json_pack("{s:o}", "driver", driver));
    json_object_set_new(runobj, "invocations", json_pack("[o]", invocation(&s)));
    json_object_set_new(runobj, "originalUriBaseIds",
                        json_pack("{s:{s:s}}", SRCROOT, "uri", root_uri));
    json_object_set_new(runobj, "columnKind", json_string("utf16CodeUnits"));
    json_object_set_new(runobj, "results", results);
    if (run->shard) /* kdc-lint merge joins the shards' reports */
        json_object_set_new(runobj, "properties",
                            json_pack("{s:o}", "kdcShard", kdc_output_shard_json(run)));
    free(root_uri);

    json_t *root = json_pack("{s:s, s:s, s:[o]}", "$schema", SCHEMA_URI, "version", "2.1.0",
                             "runs", runobj);
    int rc = json_dumpf(root, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', o);
    json_decref(root);
    drop_cached_lines(&s);
    free(s.root);
    return rc == 0 && !ferror(o) ? 0 : -1;
}
