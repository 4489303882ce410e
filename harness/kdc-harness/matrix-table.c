/* Writes the README's matrix table from the reports scripts/harness-matrix.sh
 * collected: for the reference service and each broken variant, kdc-lint's
 * findings (its JSON report) and the scenarios in which kdc-harness counted
 * lost events (its JSON report), as Markdown on stdout.
 * Usage: kdc-harness-matrix-table DIR VARIANT...
 *   DIR/reference.json, DIR/reference.lint.json, DIR/VARIANT.json and
 *   DIR/VARIANT.lint.json must exist. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

static json_t *load(const char *dir, const char *name, const char *suffix) {
        char path[4096];
        json_error_t err;
        json_t *doc;

        snprintf(path, sizeof path, "%s/%s%s", dir, name, suffix);
        if (!(doc = json_load_file(path, 0, &err)))
                fprintf(stderr, "kdc-harness-matrix-table: %s: %s\n", path, err.text);
        return doc;
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

static int row(const char *dir, const char *name, const char *source) {
        json_t *report = load(dir, name, ".json"), *lint = load(dir, name, ".lint.json");
        json_t *run;
        size_t i, losing = 0;
        int64_t lost_all = 0;

        if (!report || !lint)
                return -1;
        printf("| [`%s`](%s) | ", source, source);
        lint_cell(lint);
        printf(" | ");
        json_array_foreach(json_object_get(report, "runs"), i, run) {
                int64_t lost = json_integer_value(json_object_get(run, "lost"));
                if (lost > 0) {
                        printf("%s`%s`", losing++ ? "<br>" : "",
                               json_string_value(json_object_get(run, "scenario")));
                        lost_all += lost;
                }
        }
        if (!losing)
                printf("none of %zu", json_array_size(json_object_get(report, "runs")));
        printf(" | ");
        losing = 0;
        json_array_foreach(json_object_get(report, "runs"), i, run) {
                int64_t lost = json_integer_value(json_object_get(run, "lost"));
                if (lost > 0)
                        printf("%s%" PRId64 " of %" JSON_INTEGER_FORMAT, losing++ ? "<br>" : "",
                               lost, json_integer_value(json_object_get(run, "events")));
        }
        if (!losing)
                printf("0");
        printf(" |\n");
        json_decref(report);
        json_decref(lint);
        return 0;
}

int main(int argc, char **argv) {
        int rc = 0;

        if (argc < 2) {
                fprintf(stderr, "usage: kdc-harness-matrix-table DIR VARIANT...\n");
                return 2;
        }
        printf("| variant | kdc-lint finding | scenario that loses data | events lost |\n");
        printf("|---|---|---|---|\n");
        rc |= row(argv[1], "reference", "examples/reference-service.c");
        for (int i = 2; i < argc; i++) {
                char source[512];
                snprintf(source, sizeof source, "examples/broken/%s.c", argv[i]);
                rc |= row(argv[1], argv[i], source);
        }
        return rc ? 1 : 0;
}
