/* Runs one kdc-harness command (its JSON report on stdout) and checks the
 * verdict the test expects:
 *   harness_check valid -- kdc-harness run ... --format json -- SERVICE
 *     exit status 0; every run: lost 0, unprocessed 0, no DLQ record
 *     without identity, no output naming no event; every event processed
 *     or dead-lettered
 *   harness_check lost -- kdc-harness run ... --format json -- SERVICE
 *     exit status 1; every run: lost > 0, and the lost events listed
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

int main(int argc, char **argv) {
        if (argc < 4 || strcmp(argv[2], "--") != 0 ||
            (strcmp(argv[1], "valid") != 0 && strcmp(argv[1], "lost") != 0)) {
                fprintf(stderr, "usage: harness_check valid|lost -- KDC-HARNESS ARGS...\n");
                return 2;
        }
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
                if (events <= 0) {
                        fprintf(stderr, "  no events\n");
                        failures++;
                }
                if (want_valid) {
                        if (lost != 0 || num(run, "unprocessed") != 0 ||
                            num(run, "dlq_without_identity") != 0 ||
                            num(run, "foreign_records") != 0 ||
                            num(run, "processed") + num(run, "dead_lettered") < events ||
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
        if (code != (want_valid ? 0 : 1)) {
                fprintf(stderr, "harness_check: kdc-harness exited %d, expected %d\n", code,
                        want_valid ? 0 : 1);
                failures++;
        }
        json_decref(doc);
        return failures ? 1 : 0;
}
