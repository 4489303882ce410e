/*
 * File signatures (linter/support/filesig.c): a file is unchanged by its stat
 * signature only when that signature is trusted; a racily clean one (its
 * times not older than the moment it was seen) and one whose signature
 * differs are compared by their contents.
 *
 *   test_filesig
 */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "filesig.h"

#define NS 1000000000LL

static char path[] = "/tmp/kdc-filesig-XXXXXX";

static int setup(void **state) {
    (void)state;
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    close(fd);
    return 0;
}

static int teardown(void **state) {
    (void)state;
    unlink(path);
    return 0;
}

static void write_text(const char *text) {
    FILE *f = fopen(path, "r+");
    if (!f)
        f = fopen(path, "w");
    assert_non_null(f);
    assert_true(ftruncate(fileno(f), 0) == 0);
    assert_true(fputs(text, f) >= 0);
    assert_int_equal(fclose(f), 0);
}

static void sig_now(kdc_filesig_t *sig) {
    struct stat sb;
    assert_int_equal(stat(path, &sb), 0);
    kdc_filesig_of(&sb, sig);
}

static void a_signature_is_racy_unless_both_times_are_older_than_when_it_was_taken(
    void **state) {
    (void)state;
    int64_t clock = 1700000000 * NS + 500;
    kdc_filesig_t s = {1, 2, 3, clock - 1, clock - 1};
    assert_false(kdc_filesig_racy(&s, clock));
    s.mtime_ns = clock;
    assert_true(kdc_filesig_racy(&s, clock));
    s.mtime_ns = clock - 1;
    s.ctime_ns = clock + 7;
    assert_true(kdc_filesig_racy(&s, clock));
    /* whole seconds (a filesystem that keeps no more): two seconds older */
    kdc_filesig_t whole = {1, 2, 3, 1700000000 * NS - NS, 1700000000 * NS - NS};
    assert_true(kdc_filesig_racy(&whole, clock));
    whole.mtime_ns = whole.ctime_ns = 1700000000 * NS - 3 * NS;
    assert_false(kdc_filesig_racy(&whole, clock));
}

static void a_file_seen_is_unchanged_by_its_signature_and_changed_by_new_contents(
    void **state) {
    (void)state;
    write_text("int a;\n");
    kdc_fileseen_t seen, now;
    assert_int_equal(kdc_file_see(path, &seen), 0);
    seen.racy = 0; /* as if seen a while after it was written */
    assert_int_equal(kdc_file_check(path, &seen, &now), KDC_FILE_SAME);
    /* the same size, the modification time set back: the ctime tells */
    struct stat before;
    assert_int_equal(stat(path, &before), 0);
    usleep(20000); /* past the coarse clock's tick */
    write_text("int b;\n");
    struct timespec times[2] = {before.st_atim, before.st_mtim};
    assert_int_equal(utimensat(AT_FDCWD, path, times, 0), 0);
    assert_int_equal(kdc_file_check(path, &seen, &now), KDC_FILE_CHANGED);
    /* touched: another signature, the same contents */
    kdc_fileseen_t b;
    assert_int_equal(kdc_file_see(path, &b), 0);
    b.racy = 0;
    usleep(20000);
    assert_int_equal(utimensat(AT_FDCWD, path, NULL, 0), 0);
    assert_int_equal(kdc_file_check(path, &b, &now), KDC_FILE_SAME_DATA);
    assert_memory_equal(now.digest, b.digest, 16);
    kdc_filesig_t cur;
    sig_now(&cur);
    assert_true(kdc_filesig_equal(&now.sig, &cur));
    /* gone */
    unlink(path);
    assert_int_equal(kdc_file_check(path, &b, &now), KDC_FILE_CHANGED);
    write_text("");
}

/* A racy signature is never trusted: a file rewritten within the same tick keeps its
 * signature (simulated: the signature recorded is the one it has after the rewrite), and
 * only its contents show the change. */
static void a_racy_signature_is_checked_by_the_contents(void **state) {
    (void)state;
    write_text("int a;\n");
    kdc_fileseen_t seen;
    assert_int_equal(kdc_file_see(path, &seen), 0);
    write_text("int b;\n");
    sig_now(&seen.sig); /* what stat would give had the rewrite kept the times */
    seen.racy = 1;
    assert_int_equal(kdc_file_check(path, &seen, NULL), KDC_FILE_CHANGED);
    seen.racy = 0; /* trusted, the same signature: taken as unchanged (why racy matters) */
    assert_int_equal(kdc_file_check(path, &seen, NULL), KDC_FILE_SAME);
    /* a file read right after it was written is racy */
    write_text("int c;\n");
    kdc_fileseen_t fresh;
    int64_t before = kdc_filesig_clock();
    assert_int_equal(kdc_file_see(path, &fresh), 0);
    if (fresh.sig.mtime_ns >= before)
        assert_true(fresh.racy);
}

int main(void) {
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(a_signature_is_racy_unless_both_times_are_older_than_when_it_was_taken),
        cmocka_unit_test(a_file_seen_is_unchanged_by_its_signature_and_changed_by_new_contents),
        cmocka_unit_test(a_racy_signature_is_checked_by_the_contents),
    };
    return cmocka_run_group_tests_name("file signatures", tests, setup, teardown);
}
