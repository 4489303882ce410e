/*
 * -j N and progress: translation units parsed by N worker processes give the
 * report of one process, byte for byte (the models are merged in input order
 * before the whole-program analysis).
 *
 *   test_parallel      (KDC_LINT, KDC_FIXTURES_DIR from the environment)
 *
 * The multi-directory tree (made at test time) is what a compilation database
 * of a real project looks like: twelve units, each compiled in a directory of
 * its own with `-Iinc`, each including <local.h> from its own inc/. libclang
 * applies a unit's -working-directory to the whole process, so units of two
 * directories parsed at once in one process would read each other's local.h;
 * local.h decides whether the unit produces to a dead-letter topic, so a mixed
 * up header shows as a finding in the wrong unit.
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <poll.h>
#include <pty.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scale.h"

#define NDIRS 12

static const char unit_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "#include <local.h>\n"
    "\n"
    "/* Messages go to OUT_TOPIC (local.h), then the input is committed. */\n"
    "void route(rd_kafka_t *consumer, rd_kafka_t *producer, rd_kafka_message_t *m) {\n"
    "    if (rd_kafka_producev(producer, RD_KAFKA_V_TOPIC(OUT_TOPIC),\n"
    "                          RD_KAFKA_V_VALUE(m->payload, m->len), RD_KAFKA_V_END))\n"
    "        return;\n"
    "    rd_kafka_commit_message(consumer, m, 0);\n"
    "}\n";

static struct {
    char *tree; /* the twelve directories and build/compile_commands.json */
    char *work; /* an empty directory to run in */
} g;

static int setup(void **state) {
    (void)state;
    g.tree = scratch_dir("parallel");
    g.work = scratch_dir("parallel-cwd");
    char *db = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&db, &len);
    fputs("[", f);
    for (int k = 0; k < NDIRS; k++) {
        char rel[64];
        snprintf(rel, sizeof rel, "d%02d/unit.c", k);
        scratch_write(g.tree, rel, unit_c);
        snprintf(rel, sizeof rel, "d%02d/inc/local.h", k);
        /* odd directories route to a dead-letter topic */
        scratch_write(g.tree, rel,
                      k % 2 ? "#define OUT_TOPIC \"orders.dlq\"\n"
                            : "#define OUT_TOPIC \"orders.audit\"\n");
        fprintf(f,
                "%s{\"directory\": \"%s/d%02d\", \"file\": \"unit.c\", "
                "\"arguments\": [\"cc\", \"-Iinc\", \"-c\", \"unit.c\", \"-o\", \"unit.o\"]}",
                k ? ",\n " : "", g.tree, k);
    }
    fputs("]\n", f);
    fclose(f);
    scratch_write(g.tree, "build/compile_commands.json", db);
    free(db);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    scratch_remove(g.tree);
    scratch_remove(g.work);
    free(g.tree);
    free(g.work);
    return 0;
}

static void the_fixtures_give_the_same_json_and_sarif_with_1_2_and_4_jobs(void **state) {
    (void)state;
    const char *live = getenv("KDC_FIXTURES_DIR");
    assert_non_null(live);
    /* a copy: the runs compare one tree, whatever happens to the source tree meanwhile */
    char *fixtures = scratch_path(g.work, "fixtures");
    kdc_run_t j1, r;
    assert_int_equal(scratch_run(&r, NULL, "cp", "-a", live, fixtures, (const char *)NULL), 0);
    kdc_run_free(&r);
    LINT(&j1, g.work, "--no-cache", "-j1", "--format=json", fixtures);
    if (j1.exit_code != 1) {
        scale_show(&j1);
        fail_msg("the fixtures must have findings (exit 1)");
    }
    kdc_report_t rep;
    char err[256];
    assert_int_equal(kdc_report_parse(j1.out, g.work, &rep, err, sizeof err), 0);
    assert_true(rep.nfindings > 100);
    assert_true(rep.translation_units > 100);
    kdc_report_free(&rep);
    const char *jobs[] = {"-j2", "-j4"};
    for (size_t i = 0; i < 2; i++) {
        LINT(&r, g.work, "--no-cache", jobs[i], "--format=json", fixtures);
        assert_int_equal(r.exit_code, 1);
        scale_same_report(jobs[i], j1.out, r.out);
        kdc_run_free(&r);
    }
    kdc_run_free(&j1);

    LINT(&j1, g.work, "--no-cache", "-j1", "--format=sarif", fixtures);
    LINT(&r, g.work, "--no-cache", "-j4", "--format=sarif", fixtures);
    assert_int_equal(j1.exit_code, 1);
    assert_int_equal(r.exit_code, 1);
    scale_same_report("SARIF -j4", j1.out, r.out);
    kdc_run_free(&j1);
    kdc_run_free(&r);
    free(fixtures);
}

/* The findings of a run: "dNN/unit.c:9:5: ... [rule]" lines of the text report. */
static void expect_dlq_findings_in_odd_directories(const kdc_run_t *r) {
    for (int k = 0; k < NDIRS; k++) {
        char where[64];
        snprintf(where, sizeof where, "d%02d/unit.c:9:5: warning:", k);
        int found = strstr(r->out, where) != NULL;
        if (found != (k % 2)) {
            scale_show(r);
            fail_msg("d%02d: %s", k,
                     found ? "a finding in a unit whose local.h names no dead-letter topic"
                           : "no unconfirmed-dlq-routing finding, though its local.h names one");
        }
    }
    assert_int_equal(scratch_count(r->out, "[unconfirmed-dlq-routing]"), NDIRS / 2);
}

static void units_of_twelve_directories_each_read_their_own_headers_with_any_job_count(
    void **state) {
    (void)state;
    kdc_run_t j1, j1json, r;
    LINT(&j1, g.tree, "--no-cache", "-j1", "-p", "build");
    EXPECT_ERR(&j1, 1, "6 findings in 12 translation units (0 incomplete, 0 input errors)");
    expect_dlq_findings_in_odd_directories(&j1);
    LINT(&j1json, g.tree, "--no-cache", "-j1", "--format=json", "-p", "build");
    const char *jobs[] = {"-j2", "-j4", "-j7", "-j12"};
    for (size_t i = 0; i < 4; i++) {
        LINT(&r, g.tree, "--no-cache", jobs[i], "-p", "build");
        expect_dlq_findings_in_odd_directories(&r);
        scale_same_report(jobs[i], j1.out, r.out);
        kdc_run_free(&r);
        LINT(&r, g.tree, "--no-cache", jobs[i], "--format=json", "-p", "build");
        scale_same_report(jobs[i], j1json.out, r.out);
        kdc_run_free(&r);
    }
    kdc_run_free(&j1);
    kdc_run_free(&j1json);
}

static void the_default_job_count_is_the_number_of_cpus(void **state) {
    (void)state;
    cpu_set_t set;
    assert_int_equal(sched_getaffinity(0, sizeof set, &set), 0);
    int cpus = CPU_COUNT(&set), expect = cpus < NDIRS ? cpus : NDIRS;
    kdc_run_t r;
    LINT(&r, g.tree, "--no-cache", "--stats", "-p", "build");
    char line[128];
    if (expect > 1)
        snprintf(line, sizeof line, "; %d worker processes (peak RSS", expect);
    else
        snprintf(line, sizeof line, "; parsed in this process (peak RSS");
    EXPECT_ERR(&r, 1, line, "kdc-lint: stats: 12 translation units: 12 parsed, 0 from the cache");
    kdc_run_free(&r);
}

static void a_bad_job_count_is_a_usage_error_naming_the_range(void **state) {
    (void)state;
    const char *bad[] = {"-j0", "-jmany", "-j5000", "--jobs=-1", "--jobs=2x", "-j"};
    const char *shown[] = {"'0'", "'many'", "'5000'", "'-1'", "'2x'", NULL};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        kdc_run_t r;
        LINT(&r, g.tree, "-p", "build", bad[i]);
        if (shown[i]) {
            char msg[128];
            snprintf(msg, sizeof msg,
                     "kdc-lint: error: -j: %s is not a number of parallel jobs from 1 to 4096",
                     shown[i]);
            EXPECT_ERR(&r, 2, msg);
        } else {
            EXPECT_ERR(&r, 2, "kdc-lint: error: option '-j' needs a value");
        }
        assert_string_equal(r.out, "");
        kdc_run_free(&r);
    }
}

/* Runs kdc-lint with stderr on a pseudo-terminal (stdout to /dev/null);
 * returns what the terminal received. */
static char *lint_on_a_terminal(const char *const *args, int *status) {
    int master;
    pid_t pid = forkpty(&master, NULL, NULL, NULL);
    assert_true(pid >= 0);
    if (pid == 0) {
        int null = open("/dev/null", O_WRONLY);
        dup2(null, STDOUT_FILENO);
        if (chdir(g.tree) != 0)
            _exit(126);
        const char *argv[32] = {scale_lint_path()};
        size_t n = 1;
        for (; args[n - 1] && n < 31; n++)
            argv[n] = args[n - 1];
        argv[n] = NULL;
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    char buf[4096];
    for (;;) {
        ssize_t got = read(master, buf, sizeof buf);
        if (got <= 0)
            break; /* EIO once the child has closed the terminal */
        fwrite(buf, 1, (size_t)got, mem);
    }
    fclose(mem);
    close(master);
    waitpid(pid, status, 0);
    return text;
}

static void progress_is_one_rewritten_line_on_a_terminal_and_cleared_at_the_end(void **state) {
    (void)state;
    const char *args[] = {"--no-cache", "--progress=always", "-j2", "-p", "build", NULL};
    int status = 0;
    char *tty = lint_on_a_terminal(args, &status);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 1);
    for (int k = 1; k <= NDIRS; k++) {
        char step[32];
        snprintf(step, sizeof step, "\r[%d/%d] d", k, NDIRS);
        if (scratch_count(tty, step) != 1)
            fail_msg("the terminal shows \"[%d/%d] ...\" %zu times, not once:\n%s", k, NDIRS,
                     scratch_count(tty, step), tty);
    }
    /* each unit's path is shown, and the line is cleared before the summary */
    for (int k = 0; k < NDIRS; k++) {
        char unit[32];
        snprintf(unit, sizeof unit, "] d%02d/unit.c\033[K", k);
        assert_int_equal(scratch_count(tty, unit), 1);
    }
    char *clear = strstr(tty, "[12/12]");
    assert_non_null(clear);
    assert_non_null(strstr(clear, "\r\033[K"));
    char *summary = strstr(tty, "kdc-lint: 6 findings in 12 translation units");
    assert_non_null(summary);
    assert_true(summary > strstr(clear, "\r\033[K"));
    free(tty);

    const char *never[] = {"--no-cache", "--progress=never", "-p", "build", NULL};
    tty = lint_on_a_terminal(never, &status);
    assert_int_equal(WEXITSTATUS(status), 1);
    assert_null(strstr(tty, "[1/12]"));
    assert_non_null(strstr(tty, "kdc-lint: 6 findings in 12 translation units"));
    free(tty);
}

static void progress_is_off_on_a_pipe_unless_asked_for_and_then_one_line_per_unit(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, g.tree, "--no-cache", "-p", "build"); /* auto: stderr is a pipe */
    assert_int_equal(r.exit_code, 1);
    assert_null(strstr(r.err, "[1/12]"));
    kdc_run_free(&r);
    LINT(&r, g.tree, "--no-cache", "--progress=always", "-p", "build");
    assert_int_equal(r.exit_code, 1);
    assert_null(strstr(r.err, "\r"));
    for (int k = 1; k <= NDIRS; k++) {
        char step[32];
        snprintf(step, sizeof step, "[%d/%d] d", k, NDIRS);
        assert_int_equal(scratch_count(r.err, step), 1);
    }
    for (int k = 0; k < NDIRS; k++) {
        char unit[32];
        snprintf(unit, sizeof unit, "] d%02d/unit.c\n", k);
        assert_int_equal(scratch_count(r.err, unit), 1);
    }
    kdc_run_free(&r);
    LINT(&r, g.tree, "--progress=sometimes", "-p", "build");
    EXPECT_ERR(&r, 2, "kdc-lint: error: --progress: 'sometimes' is not one of auto, always, never");
    kdc_run_free(&r);
}

/* A real fault in the driver's wait for its workers: once the first unit is merged, the
 * driver's open-file limit is lowered (prlimit, from outside) below the number of workers,
 * so its next poll() fails with EINVAL (and it can open no file). Every unit must still
 * end in the report: analysed, or an input error; none may vanish from the run. */
static void a_failed_wait_for_the_workers_loses_no_unit(void **state) {
    (void)state;
    char *out_path = scratch_path(g.work, "poll-fails.json");
    int err_pipe[2];
    assert_int_equal(pipe(err_pipe), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        int out = open(out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (out < 0 || dup2(out, STDOUT_FILENO) < 0 || dup2(err_pipe[1], STDERR_FILENO) < 0 ||
            chdir(g.tree) != 0)
            _exit(126);
        close(err_pipe[0]);
        /* LeakSanitizer (the asan preset) reads /proc/self/task at exit: with the open-file
         * limit lowered to 1 it cannot, and ends the process with a fatal error of its own */
        const char *asan = getenv("ASAN_OPTIONS");
        char *opts = NULL;
        if (asprintf(&opts, "%s%sdetect_leaks=0", asan ? asan : "", asan && *asan ? ":" : "") < 0 ||
            setenv("ASAN_OPTIONS", opts, 1) != 0)
            _exit(126);
        const char *argv[] = {scale_lint_path(), "--no-cache", "-j2",   "--progress=always",
                              "--format=json",   "-p",         "build", NULL};
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    close(err_pipe[1]);
    char *err = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&err, &len);
    int lowered = 0;
    char buf[4096];
    ssize_t got;
    while ((got = read(err_pipe[0], buf, sizeof buf)) > 0) {
        fwrite(buf, 1, (size_t)got, mem);
        fflush(mem);
        if (!lowered && strstr(err, "[1/12] ")) {
            struct rlimit one = {1, 1};
            assert_int_equal(prlimit(pid, RLIMIT_NOFILE, &one, NULL), 0);
            lowered = 1;
        }
    }
    fclose(mem);
    close(err_pipe[0]);
    int status = 0;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(lowered);
    kdc_run_t r = {.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128, .err = err};
    r.out = scratch_read(g.work, "poll-fails.json");
    kdc_report_t rep;
    char perr[256];
    if (kdc_report_parse(r.out, g.tree, &rep, perr, sizeof perr) != 0) {
        scale_show(&r);
        fail_msg("no JSON report: %s", perr);
    }
    if (!strstr(err, "waiting for the parser processes failed (poll: Invalid argument)") ||
        rep.nerrors == 0 || rep.translation_units + (long long)rep.nerrors != NDIRS ||
        r.exit_code != 2) {
        scale_show(&r);
        fail_msg("%lld units analysed and %zu input errors of %d units (exit %d)",
                 rep.translation_units, rep.nerrors, NDIRS, r.exit_code);
    }
    kdc_report_free(&rep);
    kdc_run_free(&r);
    free(out_path);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(the_fixtures_give_the_same_json_and_sarif_with_1_2_and_4_jobs),
        cmocka_unit_test(
            units_of_twelve_directories_each_read_their_own_headers_with_any_job_count),
        cmocka_unit_test(the_default_job_count_is_the_number_of_cpus),
        cmocka_unit_test(a_bad_job_count_is_a_usage_error_naming_the_range),
        cmocka_unit_test(progress_is_one_rewritten_line_on_a_terminal_and_cleared_at_the_end),
        cmocka_unit_test(progress_is_off_on_a_pipe_unless_asked_for_and_then_one_line_per_unit),
        cmocka_unit_test(a_failed_wait_for_the_workers_loses_no_unit),
    };
    return cmocka_run_group_tests_name("kdc-lint -j and progress", tests, setup, teardown);
}
