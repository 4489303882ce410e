/*
 * --changed-since=REV in a real git repository: only findings in files
 * changed since REV are reported (committed since, staged, unstaged or new),
 * while every unit is still analysed so that facts crossing files stay
 * complete; a finding whose related location is in a changed file counts.
 *
 *   test_changed_since     (KDC_LINT from the environment; git on PATH)
 *
 * The repository (made at test time):
 *   src/producer.c  creates the service's producer without a delivery report
 *   src/send.c      produces on it: produce-without-delivery-callback at 7:12,
 *                   with a note at producer.c:6 (found only with producer.c analysed)
 *   src/consumer.c  a bare commit at 4:5
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lintrun.h"
#include "scratch.h"

static const char producer_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "\n"
    "/* The service's producer: no delivery-report callback registered. */\n"
    "rd_kafka_t *make_producer(void) {\n"
    "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
    "    return rd_kafka_new(RD_KAFKA_PRODUCER, conf, NULL, 0);\n"
    "}\n";
static const char send_c[] =
    "#include <librdkafka/rdkafka.h>\n"
    "\n"
    "rd_kafka_t *make_producer(void);\n"
    "\n"
    "rd_kafka_resp_err_t send_order(const char *payload, size_t len) {\n"
    "    rd_kafka_t *p = make_producer();\n"
    "    return rd_kafka_producev(p, RD_KAFKA_V_TOPIC(\"orders\"), RD_KAFKA_V_VALUE((void *)payload, len),\n"
    "                      RD_KAFKA_V_END);\n"
    "}\n";
static const char consumer_c[] = "#include <librdkafka/rdkafka.h>\n"
                                 "\n"
                                 "void drain(rd_kafka_t *consumer) {\n"
                                 "    rd_kafka_commit(consumer, NULL, 0);\n"
                                 "}\n";

static const char produce_finding[] = "src/send.c:7:12: warning: rd_kafka_producev on a producer "
                                      "without a delivery-report callback";
static const char commit_finding[] = "src/consumer.c:4:5: warning: rd_kafka_commit without an "
                                     "offset list";

static struct {
    const char *lint;
    char *repo;
} g;

static void must(int code, const kdc_run_t *r, const char *what) {
    if (code != 0)
        fail_msg("%s failed (%d):\n%s\n%s", what, code, r->out, r->err);
}

static void git(const char *cwd, ...) {
    const char *argv[16] = {"git"};
    size_t n = 1;
    va_list ap;
    va_start(ap, cwd);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 15;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    kdc_run_t r;
    must(scratch_runv(&r, cwd, argv), &r, argv[1]);
    kdc_run_free(&r);
}
#define GIT(...) git(g.repo, __VA_ARGS__, (const char *)NULL)

static void commit_all(const char *message) {
    GIT("add", "-A");
    GIT("commit", "-q", "-m", message);
}

/* A repository with the three files committed (one commit, "base"). */
static int setup(void **state) {
    (void)state;
    g.lint = getenv("KDC_LINT");
    if (!g.lint) {
        fprintf(stderr, "test_changed_since: KDC_LINT must be set\n");
        return -1;
    }
    /* hermetic git: no user or system configuration, a fixed identity */
    setenv("GIT_CONFIG_GLOBAL", "/dev/null", 1);
    setenv("GIT_CONFIG_NOSYSTEM", "1", 1);
    setenv("GIT_AUTHOR_NAME", "kdc test", 1);
    setenv("GIT_AUTHOR_EMAIL", "kdc@example.invalid", 1);
    setenv("GIT_COMMITTER_NAME", "kdc test", 1);
    setenv("GIT_COMMITTER_EMAIL", "kdc@example.invalid", 1);
    return 0;
}

static int each_setup(void **state) {
    (void)state;
    g.repo = scratch_dir("changed");
    scratch_write(g.repo, "src/producer.c", producer_c);
    scratch_write(g.repo, "src/send.c", send_c);
    scratch_write(g.repo, "src/consumer.c", consumer_c);
    GIT("init", "-q", "-b", "main");
    commit_all("base");
    GIT("tag", "base");
    return 0;
}

static int each_teardown(void **state) {
    (void)state;
    scratch_remove(g.repo);
    free(g.repo);
    return 0;
}

/* kdc-lint in the repository (or cwd below it); returns its exit code. */
static int lint(kdc_run_t *r, const char *cwd, ...) {
    const char *argv[16] = {g.lint};
    size_t n = 1;
    va_list ap;
    va_start(ap, cwd);
    for (const char *a; (a = va_arg(ap, const char *)) && n < 15;)
        argv[n++] = a;
    va_end(ap);
    argv[n] = NULL;
    kdc_run_opts_t o = {.timeout = 300};
    if (kdc_run_ex(cwd, (char *const *)argv, &o, r) != 0)
        fail_msg("cannot run %s", g.lint);
    return r->exit_code;
}
#define LINT(r, ...) lint((r), g.repo, __VA_ARGS__, (const char *)NULL)

static void show(const kdc_run_t *r) {
    print_error("exit %d\n--- stdout\n%.6000s\n--- stderr\n%.3000s\n---\n", r->exit_code, r->out,
                r->err);
}

static void expect(const kdc_run_t *r, int code, const char *in_out, const char *not_in_out,
                   const char *in_err) {
    if (r->exit_code != code) {
        show(r);
        fail_msg("exit %d, expected %d", r->exit_code, code);
    }
    if (in_out && !strstr(r->out, in_out)) {
        show(r);
        fail_msg("stdout lacks \"%s\"", in_out);
    }
    if (not_in_out && strstr(r->out, not_in_out)) {
        show(r);
        fail_msg("stdout has \"%s\"", not_in_out);
    }
    if (in_err && !strstr(r->err, in_err)) {
        show(r);
        fail_msg("stderr lacks \"%s\"", in_err);
    }
}

static void without_the_option_every_finding_is_reported(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, "src");
    expect(&r, 1, produce_finding, NULL, "kdc-lint: 2 findings in 3 translation units");
    expect(&r, 1, commit_finding, NULL, NULL);
    kdc_run_free(&r);
}

static void nothing_changed_reports_nothing_and_exits_0(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, "--changed-since=HEAD", "src");
    expect(&r, 0, NULL, "warning:", "kdc-lint: 2 findings in files unchanged since HEAD not shown");
    kdc_run_free(&r);
    /* the JSON report is empty too */
    LINT(&r, "--changed-since=base", "--format=json", "src");
    json_t *doc = json_loads(r.out, 0, NULL);
    assert_non_null(doc);
    assert_int_equal(json_array_size(json_object_get(doc, "findings")), 0);
    json_decref(doc);
    expect(&r, 0, NULL, NULL, NULL);
    kdc_run_free(&r);
}

static void an_unstaged_change_reports_that_file_with_facts_from_unchanged_files(void **state) {
    (void)state;
    char *edited = NULL;
    assert_true(asprintf(&edited, "/* retry later */\n%s", send_c) > 0);
    scratch_write(g.repo, "src/send.c", edited);
    kdc_run_t r;
    /* the producer is created in producer.c (unchanged): the finding needs its facts */
    LINT(&r, "--changed-since=HEAD", "src");
    expect(&r, 1, "src/send.c:8:12: warning: rd_kafka_producev on a producer without a "
                  "delivery-report callback",
           "consumer.c", "kdc-lint: 1 finding in files unchanged since HEAD not shown");
    expect(&r, 1, "src/producer.c:6:12: note: producer created here", NULL,
           "kdc-lint: 1 finding in 3 translation units");
    kdc_run_free(&r);
    free(edited);
}

static void a_change_at_a_related_location_reports_the_finding(void **state) {
    (void)state;
    char *edited = NULL;
    assert_true(asprintf(&edited, "%s/* owned by the payments team */\n", producer_c) > 0);
    scratch_write(g.repo, "src/producer.c", edited);
    GIT("add", "src/producer.c"); /* staged, not committed */
    kdc_run_t r;
    LINT(&r, "--changed-since=HEAD", "src");
    expect(&r, 1, produce_finding, "consumer.c", NULL);
    kdc_run_free(&r);
    free(edited);
}

/* A configuration helper in a file of its own turns automatic offset stores on: the
 * bare commit in consumer.c depends on it, so a change there reports the finding (it is
 * a related location: "enable.auto.offset.store=true set here"). */
static void a_change_to_a_configuration_helper_reports_the_findings_it_decides(void **state) {
    (void)state;
    scratch_write(g.repo, "src/defaults.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void apply_defaults(rd_kafka_conf_t *conf) {\n"
                  "    rd_kafka_conf_set(conf, \"enable.auto.offset.store\", \"false\", NULL, 0);\n"
                  "}\n");
    scratch_write(g.repo, "src/kafka.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void apply_defaults(rd_kafka_conf_t *conf);\n"
                  "rd_kafka_t *make_consumer(void) {\n"
                  "    rd_kafka_conf_t *conf = rd_kafka_conf_new();\n"
                  "    apply_defaults(conf);\n"
                  "    return rd_kafka_new(RD_KAFKA_CONSUMER, conf, NULL, 0);\n"
                  "}\n");
    scratch_write(g.repo, "src/consumer.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "rd_kafka_t *make_consumer(void);\n"
                  "void drain(void) {\n"
                  "    rd_kafka_t *consumer = make_consumer();\n"
                  "    rd_kafka_commit(consumer, NULL, 0);\n"
                  "}\n");
    commit_all("consumer with its own defaults");
    kdc_run_t r;
    LINT(&r, "src");
    expect(&r, 1, NULL, "src/consumer.c:5:5: warning", NULL); /* stores are manual: no finding */
    kdc_run_free(&r);
    /* the pull request: one line in the helper */
    scratch_write(g.repo, "src/defaults.c",
                  "#include <librdkafka/rdkafka.h>\n"
                  "void apply_defaults(rd_kafka_conf_t *conf) {\n"
                  "    rd_kafka_conf_set(conf, \"enable.auto.offset.store\", \"true\", NULL, 0);\n"
                  "}\n");
    LINT(&r, "--changed-since=HEAD", "src");
    expect(&r, 1, "src/consumer.c:5:5: warning: rd_kafka_commit without an offset list", NULL,
           NULL);
    expect(&r, 1, "src/defaults.c:3:5: note: enable.auto.offset.store=true set here", NULL, NULL);
    kdc_run_free(&r);
}

static void commits_since_the_revision_count_and_later_revisions_exclude_them(void **state) {
    (void)state;
    char *edited = NULL;
    assert_true(asprintf(&edited, "%s\nvoid idle(void) {}\n", consumer_c) > 0);
    scratch_write(g.repo, "src/consumer.c", edited);
    commit_all("consumer: idle");
    kdc_run_t r;
    LINT(&r, "--changed-since=base", "src");
    expect(&r, 1, commit_finding, "send.c", NULL);
    kdc_run_free(&r);
    LINT(&r, "--changed-since=HEAD~1", "src");
    expect(&r, 1, commit_finding, "send.c", NULL);
    kdc_run_free(&r);
    LINT(&r, "--changed-since=HEAD", "src");
    expect(&r, 0, NULL, "warning:", NULL);
    kdc_run_free(&r);
    free(edited);
}

static void a_new_untracked_file_counts_and_an_ignored_one_does_not(void **state) {
    (void)state;
    scratch_write(g.repo, "src/new.c", consumer_c);
    scratch_write(g.repo, "gen/ignored.c", consumer_c);
    scratch_write(g.repo, ".git/info/exclude", "gen/\n");
    kdc_run_t r;
    LINT(&r, "--changed-since=HEAD", "src", "gen");
    expect(&r, 1, "src/new.c:4:5: warning: rd_kafka_commit without", "gen/ignored.c",
           "kdc-lint: 3 findings in files unchanged since HEAD not shown");
    kdc_run_free(&r);
}

static void it_works_from_a_subdirectory_of_the_repository(void **state) {
    (void)state;
    char *edited = NULL, *src = scratch_path(g.repo, "src");
    assert_true(asprintf(&edited, "%s/* end */\n", consumer_c) > 0);
    scratch_write(g.repo, "src/consumer.c", edited);
    kdc_run_t r;
    lint(&r, src, "--changed-since=HEAD", ".", (const char *)NULL);
    expect(&r, 1, "consumer.c:4:5: warning: rd_kafka_commit without", "send.c", NULL);
    kdc_run_free(&r);
    free(edited);
    free(src);
}

static void a_bad_revision_or_no_repository_is_an_error(void **state) {
    (void)state;
    kdc_run_t r;
    LINT(&r, "--changed-since=no-such-branch", "src");
    expect(&r, 2, NULL, "warning:",
           "kdc-lint: error: --changed-since: 'no-such-branch' is not a commit in ");
    kdc_run_free(&r);
    /* never read as an option of git's */
    LINT(&r, "--changed-since=--output=/tmp/kdc-pwned", "src");
    expect(&r, 2, NULL, NULL, "'--output=/tmp/kdc-pwned' is not a commit");
    kdc_run_free(&r);
    /* outside any repository (git looks no further up than the scratch directory) */
    char *outside = scratch_dir("not-a-repo");
    scratch_write(outside, "c.c", consumer_c);
    setenv("GIT_CEILING_DIRECTORIES", outside, 1);
    lint(&r, outside, "--changed-since=HEAD", "c.c", (const char *)NULL);
    unsetenv("GIT_CEILING_DIRECTORIES");
    expect(&r, 2, NULL, NULL, "is not in a git repository");
    kdc_run_free(&r);
    scratch_remove(outside);
    free(outside);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(without_the_option_every_finding_is_reported, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(nothing_changed_reports_nothing_and_exits_0, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(
            an_unstaged_change_reports_that_file_with_facts_from_unchanged_files, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(
            a_change_to_a_configuration_helper_reports_the_findings_it_decides, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(a_change_at_a_related_location_reports_the_finding,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(
            commits_since_the_revision_count_and_later_revisions_exclude_them, each_setup,
            each_teardown),
        cmocka_unit_test_setup_teardown(a_new_untracked_file_counts_and_an_ignored_one_does_not,
                                        each_setup, each_teardown),
        cmocka_unit_test_setup_teardown(it_works_from_a_subdirectory_of_the_repository, each_setup,
                                        each_teardown),
        cmocka_unit_test_setup_teardown(a_bad_revision_or_no_repository_is_an_error, each_setup,
                                        each_teardown),
    };
    return cmocka_run_group_tests_name("lint.changed_since", tests, setup, NULL);
}
