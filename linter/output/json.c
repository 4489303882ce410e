/* One JSON document per run (jansson). */
#include "output.h"

#include <jansson.h>

static json_t *str_or_null(const char *s) { return s ? json_string(s) : json_null(); }

int kdc_output_json(FILE *o, const kdc_run_t *run) {
    json_t *root = json_object();
    json_object_set_new(root, "tool", json_pack("{s:s, s:s}", "name", "kdc-lint", "version",
                                                 KDC_VERSION));
    json_t *findings = json_array();
    for (size_t i = 0; i < run->findings->n; i++) {
        const kdc_finding_t *f = &run->findings->v[i];
        json_t *rel = json_array();
        for (size_t k = 0; k < f->nrelated; k++) {
            const kdc_related_t *r = &f->related[k];
            json_array_append_new(rel, json_pack("{s:s, s:I, s:I, s:s}", "file",
                                                 kdc_display_path(run->cwd, r->loc.file), "line",
                                                 (json_int_t)r->loc.line, "column",
                                                 (json_int_t)r->loc.col, "message", r->message));
        }
        json_t *jf = json_pack("{s:s, s:s, s:s, s:s, s:I, s:I, s:I, s:I}", "rule", f->rule,
                               "severity", kdc_severity_name(f->severity), "message", f->message,
                               "file", kdc_display_path(run->cwd, f->loc.file), "line",
                               (json_int_t)f->loc.line, "column", (json_int_t)f->loc.col,
                               "end_line", (json_int_t)f->loc.end_line, "end_column",
                               (json_int_t)f->loc.end_col);
        json_object_set_new(jf, "function", str_or_null(f->function));
        json_object_set_new(jf, "related", rel);
        json_array_append_new(findings, jf);
    }
    json_object_set_new(root, "findings", findings);

    json_t *errors = json_array();
    for (size_t i = 0; i < run->inputs->nerrors; i++)
        json_array_append_new(errors, json_pack("{s:s, s:s}", "file",
                                                kdc_display_path(run->cwd, run->inputs->errors[i].file),
                                                "message", run->inputs->errors[i].message));
    json_object_set_new(root, "errors", errors);

    json_t *incomplete = json_array();
    size_t nincomplete = 0, ntus = kdc_program_ntus(run->program);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(run->program, i);
        if (!tu->incomplete)
            continue;
        nincomplete++;
        json_array_append_new(incomplete,
                              json_pack("{s:s, s:I, s:s}", "file", kdc_display_path(run->cwd, tu->file),
                                        "compile_errors", (json_int_t)tu->nerrors, "first_error",
                                        tu->first_error ? tu->first_error : ""));
    }
    json_object_set_new(root, "incomplete", incomplete);
    json_object_set_new(root, "stats",
                        json_pack("{s:I, s:I, s:f}", "translation_units", (json_int_t)ntus,
                                  "incomplete", (json_int_t)nincomplete, "seconds", run->seconds));
    int rc = json_dumpf(root, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
    fputc('\n', o);
    json_decref(root);
    return rc == 0 && !ferror(o) ? 0 : -1;
}
