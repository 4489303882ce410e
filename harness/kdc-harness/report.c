/* Reports of runs: a few lines of text per scenario, or one JSON document
 * (jansson) that tools read. */
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "internal.h"

#ifndef KDC_VERSION
#define KDC_VERSION "0.0.0"
#endif

#define TK_TEXT_IDS 10 /* ids shown per list in text */

static void text_ids(FILE *out, const kdc_testkit_result_t *r, kdc_testkit_list_t l,
                     const char *label, int64_t count) {
        const char *id;

        if (count == 0)
                return;
        fprintf(out, "  %s:", label);
        for (size_t i = 0; i < TK_TEXT_IDS && (id = kdc_testkit_result_event(r, l, i)); i++)
                fprintf(out, " %s", id);
        if (count > TK_TEXT_IDS)
                fprintf(out, " ... (%" PRId64 " in all)", count);
        fputc('\n', out);
}

static void text_one(FILE *out, const kdc_testkit_result_t *r) {
        const char *f;

        fprintf(out, "scenario %s (seed %" PRIu64 "): %s", r->scenario, r->seed,
                r->valid ? "PASS" : "FAIL");
        if (r->dropped_records)
                fprintf(out, ", no verdict: the mock cluster dropped %" PRId64
                             " records (it keeps 5 MiB and 100,000 messages per partition)",
                        r->dropped_records);
        else if (r->lost)
                fprintf(out, ", %" PRId64 " event%s LOST", r->lost, r->lost == 1 ? "" : "s");
        else if (r->failure && !strcmp(r->failure, "nothing processed"))
                fputs(", nothing processed: no event committed, no output, no DLQ record", out);
        else if (r->failure && !strcmp(r->failure, "events duplicated"))
                fprintf(out, ", %" PRId64 " events duplicated (exactly-once)", r->duplicated);
        else if (r->failure && !strcmp(r->failure, "effects duplicated"))
                fprintf(out, ", %" PRId64 " events with duplicate effects (exactly-once)",
                        r->duplicate_effects);
        else if (r->failure && !strcmp(r->failure, "events unprocessed"))
                fprintf(out, ", %" PRId64 " events unprocessed (require-complete)",
                        r->unprocessed);
        fputc('\n', out);
        fprintf(out,
                "  events %" PRId64 " (%" PRId64 " poison); committed %" PRId64
                ", unprocessed %" PRId64 "\n",
                r->events, r->poison, r->committed, r->unprocessed);
        fprintf(out,
                "  lost %" PRId64 ", duplicated %" PRId64 "; outputs %" PRId64 " records for %" PRId64
                " events; DLQ %" PRId64 " records for %" PRId64 " events, %" PRId64
                " without identity\n",
                r->lost, r->duplicated, r->output_records, r->processed, r->dlq_records,
                r->dead_lettered, r->dlq_without_identity);
        if (r->foreign_records)
                fprintf(out, "  %" PRId64 " output records name no event\n", r->foreign_records);
        if (r->sink)
                fprintf(out,
                        "  effects (%s sink): %" PRId64 " rows for %" PRId64 " events, %" PRId64
                        " events with duplicate effects, %" PRId64 " rows naming no event\n",
                        r->sink, r->effect_rows, r->effected, r->duplicate_effects,
                        r->foreign_effects);
        text_ids(out, r, KDC_TESTKIT_LOST, "lost", r->lost);
        text_ids(out, r, KDC_TESTKIT_DUPLICATED, "duplicated", r->duplicated);
        text_ids(out, r, KDC_TESTKIT_UNPROCESSED, "unprocessed", r->unprocessed);
        text_ids(out, r, KDC_TESTKIT_DUPLICATE_EFFECTS, "duplicate effects", r->duplicate_effects);
        fprintf(out, "  service: %d start%s, %d exit%s, %d kill%s%s; %s after %.1f s\n", r->starts,
                r->starts == 1 ? "" : "s", r->exits, r->exits == 1 ? "" : "s", r->kills,
                r->kills == 1 ? "" : "s", r->stuck ? ", did not stop when asked" : "",
                r->end_reason ? r->end_reason : "?", r->duration_ms / 1000.0);
        for (size_t i = 0; (f = kdc_testkit_result_fault(r, i)); i++)
                fprintf(out, "  fault %s\n", f);
}

static json_t *ids(const kdc_testkit_result_t *r, kdc_testkit_list_t l) {
        json_t *a = json_array();
        const char *id;

        for (size_t i = 0; a && (id = kdc_testkit_result_event(r, l, i)); i++)
                json_array_append_new(a, json_string(id));
        return a;
}

/* The sink's counts, added to a run's object (nothing when it had no sink,
 * "sink": null). */
static json_t *with_sink(json_t *run, const kdc_testkit_result_t *r) {
        if (!run)
                return NULL;
        if (!r->sink) {
                json_object_set_new(run, "sink", json_null());
                return run;
        }
        json_object_set_new(run, "sink", json_string(r->sink));
        json_object_set_new(run, "effect_rows", json_integer(r->effect_rows));
        json_object_set_new(run, "effected", json_integer(r->effected));
        json_object_set_new(run, "duplicate_effects", json_integer(r->duplicate_effects));
        json_object_set_new(run, "foreign_effects", json_integer(r->foreign_effects));
        json_object_set_new(run, "duplicate_effect_events", ids(r, KDC_TESTKIT_DUPLICATE_EFFECTS));
        return run;
}

static json_t *json_one(const kdc_testkit_result_t *r) {
        json_t *committed = json_array(), *faults = json_array();
        const char *f;

        for (int32_t p = 0; p < ((const struct tk_result *)r)->partitions; p++) {
                int64_t c = kdc_testkit_result_committed(r, p);

                /* none (KDC_ERR_NOENT) is -1 in the report, as it always was */
                json_array_append_new(committed, json_integer(c >= 0 ? c : -1));
        }
        for (size_t i = 0; (f = kdc_testkit_result_fault(r, i)); i++)
                json_array_append_new(faults, json_string(f));
        return json_pack(
            "{s:s, s:I, s:b, s:o, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o, s:o,"
            " s:o, s:o, s:{s:i, s:i, s:i, s:b}, s:o, s:s, s:I, s:I}",
            "scenario", r->scenario, "seed", (json_int_t)r->seed, "valid", r->valid, "failure",
            r->failure ? json_string(r->failure) : json_null(), "events",
            (json_int_t)r->events, "poison", (json_int_t)r->poison, "committed",
            (json_int_t)r->committed, "output_records", (json_int_t)r->output_records,
            "dlq_records", (json_int_t)r->dlq_records, "processed", (json_int_t)r->processed,
            "dead_lettered", (json_int_t)r->dead_lettered, "lost", (json_int_t)r->lost,
            "duplicated", (json_int_t)r->duplicated, "unprocessed", (json_int_t)r->unprocessed,
            "dlq_without_identity", (json_int_t)r->dlq_without_identity, "foreign_records",
            (json_int_t)r->foreign_records, "lost_events", ids(r, KDC_TESTKIT_LOST),
            "duplicated_events", ids(r, KDC_TESTKIT_DUPLICATED), "unprocessed_events",
            ids(r, KDC_TESTKIT_UNPROCESSED), "committed_offsets", committed, "service", "starts",
            r->starts, "exits", r->exits, "kills", r->kills, "stuck", r->stuck, "faults", faults,
            "end_reason", r->end_reason ? r->end_reason : "", "duration_ms",
            (json_int_t)r->duration_ms, "dropped_records", (json_int_t)r->dropped_records);
}

int kdc_testkit_results_print(const kdc_testkit_result_t *const *results, size_t n, FILE *out,
                              kdc_testkit_format_t format) {
        size_t valid = 0;
        int64_t lost = 0;

        if (!results || !out || (format != KDC_TESTKIT_TEXT && format != KDC_TESTKIT_JSON))
                return KDC_ERR_INVALID;
        for (size_t i = 0; i < n; i++) {
                if (!results[i])
                        return KDC_ERR_INVALID;
                valid += results[i]->valid != 0;
                lost += results[i]->lost;
        }
        if (format == KDC_TESTKIT_JSON) {
                json_t *runs = json_array();
                for (size_t i = 0; runs && i < n; i++) {
                        json_t *one = with_sink(json_one(results[i]), results[i]);
                        if (!one || json_array_append_new(runs, one)) {
                                json_decref(runs);
                                return KDC_ERR_NOMEM;
                        }
                }
                json_t *doc = json_pack("{s:{s:s, s:s}, s:o, s:b, s:I}", "tool", "name",
                                        "kdc-harness", "version", KDC_VERSION, "runs", runs,
                                        "valid", valid == n, "lost", (json_int_t)lost);
                if (!doc || json_dumpf(doc, out, JSON_INDENT(1) | JSON_PRESERVE_ORDER)) {
                        json_decref(doc);
                        return KDC_ERR_NOMEM;
                }
                fputc('\n', out);
                json_decref(doc);
                return 0;
        }
        for (size_t i = 0; i < n; i++)
                text_one(out, results[i]);
        if (n > 1)
                fprintf(out, "kdc-harness: %zu scenario%s, %zu passed, %zu failed, %" PRId64
                             " event%s lost in all\n",
                        n, n == 1 ? "" : "s", valid, n - valid, lost, lost == 1 ? "" : "s");
        return 0;
}
