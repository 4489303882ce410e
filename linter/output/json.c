/* One JSON document per run (jansson). */
#include "output.h"
#include "jsontext.h"
#include "shard.h"

#include <jansson.h>

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
            json_array_append_new(
                rel, json_pack("{s:o, s:I, s:I, s:o}", "file",
                               kdc_json_text(kdc_display_path(run->cwd, r->loc.file)), "line",
                               (json_int_t)r->loc.line, "column", (json_int_t)r->loc.col,
                               "message", kdc_json_text(r->message)));
        }
        json_t *jf = json_pack("{s:s, s:s, s:o, s:o, s:I, s:I, s:I, s:I}", "rule", f->rule,
                               "severity", kdc_severity_name(f->severity), "message",
                               kdc_json_text(f->message), "file",
                               kdc_json_text(kdc_display_path(run->cwd, f->loc.file)), "line",
                               (json_int_t)f->loc.line, "column", (json_int_t)f->loc.col,
                               "end_line", (json_int_t)f->loc.end_line, "end_column",
                               (json_int_t)f->loc.end_col);
        json_object_set_new(jf, "function", kdc_json_text(f->function));
        json_object_set_new(jf, "related", rel);
        json_array_append_new(findings, jf);
    }
    json_object_set_new(root, "findings", findings);

    json_t *errors = json_array();
    for (size_t i = 0; i < run->inputs->nerrors; i++)
        json_array_append_new(
            errors,
            json_pack("{s:o, s:o}", "file",
                      kdc_json_text(kdc_display_path(run->cwd, run->inputs->errors[i].file)),
                      "message", kdc_json_text(run->inputs->errors[i].message)));
    json_object_set_new(root, "errors", errors);

    json_t *incomplete = json_array();
    size_t nincomplete = 0, ntus = kdc_program_ntus(run->program);
    for (size_t i = 0; i < ntus; i++) {
        const kdc_tu_info_t *tu = kdc_program_tu(run->program, i);
        if (!tu->incomplete)
            continue;
        nincomplete++;
        json_t *ji = json_pack(
            "{s:o, s:I, s:o}", "file", kdc_json_text(kdc_display_path(run->cwd, tu->file)),
            "compile_errors", (json_int_t)tu->nerrors, "first_error",
            kdc_json_text(tu->first_error ? kdc_display_path(run->cwd, tu->first_error) : ""));
        if (tu->too_deep)
            json_object_set_new(ji, "too_deep",
                                kdc_json_text(kdc_display_path(run->cwd, tu->too_deep)));
        json_array_append_new(incomplete, ji);
    }
    json_object_set_new(root, "incomplete", incomplete);
    json_object_set_new(root, "stats",
                        json_pack("{s:I, s:I, s:I, s:f}", "translation_units", (json_int_t)ntus,
                                  "incomplete", (json_int_t)nincomplete, "skipped_by_prefilter",
                                  (json_int_t)run->skipped, "seconds", run->seconds));
    if (run->shard)
        json_object_set_new(root, "shard", kdc_output_shard_json(run));
    int rc = json_dumpf(root, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(6));
    fputc('\n', o);
    json_decref(root);
    return rc == 0 && !ferror(o) ? 0 : -1;
}

json_t *kdc_output_shard_json(const kdc_run_t *run) {
    const kdc_shard_t *sh = run->shard;
    json_t *order = json_array();
    for (size_t i = 0; i < run->findings->n; i++)
        json_array_append_new(order, json_integer((json_int_t)sh->order[i]));
    return json_pack("{s:I, s:I, s:s, s:I, s:o}", "index", (json_int_t)sh->index, "count",
                     (json_int_t)sh->count, "run", sh->run_id, "total", (json_int_t)sh->total,
                     "findings", order);
}
