/* Runs one kdc-harness command (its JSON report on stdout) and checks the
 * verdict the test expects:
 *   harness_check valid -- kdc-harness run ... --format json -- SERVICE
 *     exit status 0; every run: lost 0, unprocessed 0, no DLQ record
 *     without identity, no output naming no event; every event processed
 *     or dead-lettered (in a sink run: every event with a row or dead-lettered,
 *     no event with two rows, no row naming no event)
 *   harness_check lost -- kdc-harness run ... --format json -- SERVICE
 *     exit status 1; every run: lost > 0, and the lost events listed
 *   harness_check expect STATUS FIELD=VALUE... -- kdc-harness run ...
 *     exit status STATUS; every run has each FIELD (a run's field, or
 *     service.FIELD) equal to VALUE (an integer, true, false, null or a
 *     string); FIELD>=N and FIELD<=N compare integers; a list field
 *     (lost_events, ...) compares its length
 * It prints one line per run with the counts, so a failing ctest shows
 * what the harness saw. */
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

extern char **environ;

static long long num(json_t *run, const char *key) {
        return json_integer_value(json_object_get(run, key));
}

/* FIELD=VALUE, FIELD>=N or FIELD<=N against one run: 0 when it holds. */
static int expect_one(json_t *run, const char *spec) {
        char field[64];
        size_t flen = strcspn(spec, "=<>");
        const char *op = spec + flen, *value;
        json_t *v;

        if (flen >= sizeof field || !*op)
                return -1;
        memcpy(field, spec, flen);
        field[flen] = '\0';
        value = op + (op[0] == '=' ? 1 : 2);
        if (strncmp(field, "service.", 8) == 0)
                v = json_object_get(json_object_get(run, "service"), field + 8);
        else
                v = json_object_get(run, field);
        if (!v)
                return -1;
        long long have = json_is_array(v) ? (long long)json_array_size(v)
                                           : json_is_true(v) ? 1 : json_integer_value(v);
        if (op[0] == '>' || op[0] == '<') {
                if (op[1] != '=')
                        return -1;
                long long want = atoll(value);
                return (op[0] == '>' ? have >= want : have <= want) ? 0 : -1;
        }
        if (!strcmp(value, "true") || !strcmp(value, "false"))
                return json_is_boolean(v) && json_is_true(v) == !strcmp(value, "true") ? 0 : -1;
        if (!strcmp(value, "null"))
                return json_is_null(v) ? 0 : -1;
        if (json_is_string(v))
                return strcmp(json_string_value(v), value) == 0 ? 0 : -1;
        return (json_is_integer(v) || json_is_array(v)) && have == atoll(value) ? 0 : -1;
}

int main(int argc, char **argv) {
        int want_status = -1, first = 2;
        char **expect = NULL;
        int nexpect = 0;

        if (argc >= 3 && strcmp(argv[1], "expect") == 0) {
                want_status = atoi(argv[2]);
                expect = argv + 3;
                for (first = 3; first < argc && strcmp(argv[first], "--") != 0; first++)
                        nexpect++;
        }
        if (first + 1 >= argc || strcmp(argv[first], "--") != 0 ||
            (want_status < 0 && strcmp(argv[1], "valid") != 0 && strcmp(argv[1], "lost") != 0)) {
                fprintf(stderr, "usage: harness_check valid|lost|expect STATUS FIELD=VALUE... -- "
                                "KDC-HARNESS ARGS...\n");
                return 2;
        }
        argv += first - 2; /* argv[3] is the command, as for valid and lost */
        int want_valid = strcmp(argv[1], "valid") == 0;
        int out[2];
        posix_spawn_file_actions_t fa;
        pid_t pid;

        if (pipe(out) != 0)
                return 2;
        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_adddup2(&fa, out[1], 1);
        posix_spawn_file_actions_addclose(&fa, out[0]);
        int spawned = posix_spawnp(&pid, argv[3], &fa, NULL, argv + 3, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (spawned != 0) {
                fprintf(stderr, "harness_check: %s: %s\n", argv[3], strerror(spawned));
                return 2;
        }
        close(out[1]);
        FILE *f = fdopen(out[0], "r");
        json_error_t jerr;
        json_t *doc = json_loadf(f, 0, &jerr);
        fclose(f);
        int status;
        waitpid(pid, &status, 0);
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (!doc) {
                fprintf(stderr, "harness_check: no JSON report (exit %d): %s\n", code, jerr.text);
                return 1;
        }

        int failures = 0;
        json_t *runs = json_object_get(doc, "runs"), *run;
        size_t i;
        if (!json_array_size(runs)) {
                fprintf(stderr, "harness_check: no runs in the report\n");
                failures++;
        }
        json_array_foreach(runs, i, run) {
                long long events = num(run, "events"), lost = num(run, "lost");
                printf("%s: events %lld, lost %lld, duplicated %lld, unprocessed %lld, "
                       "processed %lld, dead-lettered %lld, DLQ without identity %lld, "
                       "starts %lld, kills %lld (%s)\n",
                       json_string_value(json_object_get(run, "scenario")), events, lost,
                       num(run, "duplicated"), num(run, "unprocessed"), num(run, "processed"),
                       num(run, "dead_lettered"), num(run, "dlq_without_identity"),
                       (long long)json_integer_value(
                           json_object_get(json_object_get(run, "service"), "starts")),
                       (long long)json_integer_value(
                           json_object_get(json_object_get(run, "service"), "kills")),
                       json_string_value(json_object_get(run, "end_reason")));
                int sink = json_is_string(json_object_get(run, "sink"));
                if (sink)
                        printf("  sink %s: %lld rows for %lld events, duplicate effects %lld, "
                               "rows naming no event %lld\n",
                               json_string_value(json_object_get(run, "sink")),
                               num(run, "effect_rows"), num(run, "effected"),
                               num(run, "duplicate_effects"), num(run, "foreign_effects"));
                if (events <= 0) {
                        fprintf(stderr, "  no events\n");
                        failures++;
                }
                if (want_status >= 0) {
                        for (int e = 0; e < nexpect; e++)
                                if (expect_one(run, expect[e]) != 0) {
                                        fprintf(stderr, "  expected %s\n", expect[e]);
                                        failures++;
                                }
                } else if (want_valid) {
                        if (lost != 0 || num(run, "unprocessed") != 0 ||
                            num(run, "dlq_without_identity") != 0 ||
                            num(run, "foreign_records") != 0 ||
                            num(run, sink ? "effected" : "processed") + num(run, "dead_lettered") <
                                events ||
                            (sink && (num(run, "duplicate_effects") != 0 ||
                                      num(run, "foreign_effects") != 0)) ||
                            !json_is_true(json_object_get(run, "valid"))) {
                                fprintf(stderr, "  expected nothing lost, everything processed\n");
                                failures++;
                        }
                } else if (lost <= 0 ||
                           json_array_size(json_object_get(run, "lost_events")) != (size_t)lost ||
                           !json_is_false(json_object_get(run, "valid"))) {
                        fprintf(stderr, "  expected lost events, listed\n");
                        failures++;
                }
        }
        if (want_status < 0)
                want_status = want_valid ? 0 : 1;
        if (code != want_status) {
                fprintf(stderr, "harness_check: kdc-harness exited %d, expected %d\n", code,
                        want_status);
                failures++;
        }
        json_decref(doc);
        return failures ? 1 : 0;
}
