/* Writes the README's matrix table from the reports scripts/harness-matrix.sh
 * collected: for the reference service and each broken variant, kdc-lint's
 * findings (its JSON report), how many scenarios kdc-harness ran and how many
 * of them gave the service a sink (a variant without a database runs none of
 * those), and the scenarios in which it counted lost events (its JSON
 * report), as Markdown on stdout.
 * Usage: kdc-harness-matrix-table DIR VARIANT...
 *   DIR/reference.json, DIR/reference.lint.json, DIR/VARIANT.json and
 *   DIR/VARIANT.lint.json must exist.
 * A report that is missing or not what kdc-lint and kdc-harness write (a
 * finding without a rule or line, a run without a scenario or counts) is
 * named on stderr with what is wrong, its row is left out, and the exit
 * status is 2; the other rows are still written. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static json_t *load(const char *dir, const char *name, const char *suffix, char *path,
                    size_t size) {
        json_error_t err;
        json_t *doc;

        snprintf(path, size, "%s/%s%s", dir, name, suffix);
        if (!(doc = json_load_file(path, 0, &err)))
                fprintf(stderr, "kdc-harness-matrix-table: %s: %s\n", path, err.text);
        return doc;
}

/* A finding as kdc-lint writes it: a rule and a line. */
static int unpack_finding(json_t *e, json_error_t *err) {
        const char *rule;
        json_int_t line;

        return json_unpack_ex(e, err, 0, "{s:s, s:I}", "rule", &rule, "line", &line);
}

/* A run as kdc-harness writes it: a scenario, its counts, and its sink (a
 * name, or null or absent: none). */
static int unpack_run(json_t *e, json_error_t *err) {
        const char *scenario;
        json_int_t lost, events;
        json_t *sink = NULL;

        if (json_unpack_ex(e, err, 0, "{s:s, s:I, s:I, s?o}", "scenario", &scenario, "lost", &lost,
                           "events", &events, "sink", &sink) != 0)
                return -1;
        if (sink && !json_is_string(sink) && !json_is_null(sink)) {
                snprintf(err->text, sizeof err->text, "\"sink\" is not a string or null");
                return -1;
        }
        return 0;
}

/* Does every element of doc's array `key` unpack? Says what does not. */
static int each_unpacks(json_t *doc, const char *key, int (*unpack)(json_t *, json_error_t *),
                        const char *path) {
        json_t *a = json_object_get(doc, key), *e;
        json_error_t err;
        size_t i;

        if (!json_is_array(a)) {
                fprintf(stderr, "kdc-harness-matrix-table: %s: no \"%s\" array\n", path, key);
                return 0;
        }
        json_array_foreach(a, i, e) {
                if (unpack(e, &err) != 0) {
                        fprintf(stderr, "kdc-harness-matrix-table: %s: %s[%zu]: %s\n", path, key, i,
                                err.text);
                        return 0;
                }
        }
        return 1;
}

/* "`rule` (line N), ..." of the findings in one source file. */
static void lint_cell(json_t *lint) {
        json_t *f;
        size_t i, n = 0;

        json_array_foreach(json_object_get(lint, "findings"), i, f) {
                printf("%s`%s` (line %" JSON_INTEGER_FORMAT ")", n++ ? ", " : "",
                       json_string_value(json_object_get(f, "rule")),
                       json_integer_value(json_object_get(f, "line")));
        }
        if (!n)
                printf("none");
}

/* "21 (5 with a sink)", "16, none with a sink" or "3, all with a sink": what
 * the row was judged on. */
static void scenarios_cell(json_t *runs) {
        json_t *run;
        size_t i, sinks = 0;

        json_array_foreach(runs, i, run) {
                if (json_is_string(json_object_get(run, "sink")))
                        sinks++;
        }
        if (!sinks)
                printf("%zu, none with a sink", json_array_size(runs));
        else if (sinks == json_array_size(runs))
                printf("%zu, all with a sink", sinks);
        else
                printf("%zu (%zu with a sink)", json_array_size(runs), sinks);
}

static void report_cells(json_t *report) {
        json_t *runs = json_object_get(report, "runs"), *run;
        size_t i, losing = 0;

        scenarios_cell(runs);
        printf(" | ");
        json_array_foreach(runs, i, run) {
                if (json_integer_value(json_object_get(run, "lost")) > 0)
                        printf("%s`%s`", losing++ ? "<br>" : "",
                               json_string_value(json_object_get(run, "scenario")));
        }
        if (!losing)
                printf("none of %zu", json_array_size(runs));
        printf(" | ");
        losing = 0;
        json_array_foreach(runs, i, run) {
                json_int_t lost = json_integer_value(json_object_get(run, "lost"));
                if (lost > 0)
                        printf("%s%" JSON_INTEGER_FORMAT " of %" JSON_INTEGER_FORMAT,
                               losing++ ? "<br>" : "", lost,
                               json_integer_value(json_object_get(run, "events")));
        }
        if (!losing)
                printf("0");
}

/* One row; 0, or -1 when a report is missing or malformed (no row). */
static int row(const char *dir, const char *name, const char *source) {
        char rpath[4096], lpath[4096];
        json_t *report = load(dir, name, ".json", rpath, sizeof rpath);
        json_t *lint = load(dir, name, ".lint.json", lpath, sizeof lpath);
        int ok = report && lint && each_unpacks(lint, "findings", unpack_finding, lpath) &&
                 each_unpacks(report, "runs", unpack_run, rpath);

        if (ok) {
                printf("| [`%s`](%s) | ", source, source);
                lint_cell(lint);
                printf(" | ");
                report_cells(report);
                printf(" |\n");
        }
        json_decref(report);
        json_decref(lint);
        return ok ? 0 : -1;
}

int main(int argc, char **argv) {
        int rc = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: kdc-harness-matrix-table DIR VARIANT...\n");
                return 2;
        }
        printf("| variant | kdc-lint finding | scenarios run | scenario that loses data | events "
               "lost |\n");
        printf("|---|---|---|---|---|\n");
        rc |= row(argv[1], "reference", "examples/reference-service.c");
        for (int i = 2; i < argc; i++) {
                char source[512];
                snprintf(source, sizeof source, "examples/broken/%s.c", argv[i]);
                rc |= row(argv[1], argv[i], source);
        }
        return rc ? 2 : 0;
}
