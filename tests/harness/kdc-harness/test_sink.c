/* The sink of the sink scenarios (harness/kdc-harness/sink.c): each fault the
 * harness injects from its own connection is the real SQLite error in another
 * process, as a service sees it; rows are read back per event, a row written
 * twice counted twice; nothing is left behind. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <sqlite3.h>

#include "internal.h"

/* In a forked process (a service's own connection, no busy wait), insert the
 * row of event id: 0 when it was written, else the extended result code of
 * the insert (254 for SQLITE_CONSTRAINT_TRIGGER, too wide for an exit status;
 * 253 another wide one; 255: the database could not be opened). */
static int insert_elsewhere(const struct tk_sink *s, const char *id) {
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
                sqlite3 *db;
                sqlite3_stmt *st;
                int rc;

                if (sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK ||
                    sqlite3_extended_result_codes(db, 1) != SQLITE_OK ||
                    sqlite3_prepare_v2(db, "INSERT INTO effects(event_id, amount) VALUES (?1, 7)",
                                       -1, &st, NULL) != SQLITE_OK)
                        _exit(255);
                sqlite3_bind_text(st, 1, id, -1, SQLITE_STATIC);
                rc = sqlite3_step(st);
                sqlite3_finalize(st);
                sqlite3_close(db);
                _exit(rc == SQLITE_DONE                 ? 0
                      : rc == SQLITE_CONSTRAINT_TRIGGER ? 254
                      : rc < 254                        ? rc
                                                        : 253);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void apply(struct tk_sink *s, enum tk_action a) {
        struct tk_step st = {.action = a};

        assert_int_equal(tk_sink_apply(s, &st), 0);
}

static void a_locked_sink_answers_busy_to_another_process(void **state) {
        struct tk_sink s;

        (void)state;
        assert_int_equal(tk_sink_create(&s, TK_SINK_SQLITE), 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), 0);
        apply(&s, TK_SINK_LOCK);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), SQLITE_BUSY);
        apply(&s, TK_SINK_UNLOCK);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), 0);
        tk_sink_destroy(&s);
}

static void a_full_sink_answers_full_to_another_process(void **state) {
        struct tk_sink s;

        (void)state;
        assert_int_equal(tk_sink_create(&s, TK_SINK_SQLITE), 0);
        apply(&s, TK_SINK_FULL); /* before any row: the sequence does not exist yet */
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), SQLITE_FULL);
        apply(&s, TK_SINK_ROOM);
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), 0);
        apply(&s, TK_SINK_FULL);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), SQLITE_FULL);
        apply(&s, TK_SINK_ROOM);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), 0);
        tk_sink_destroy(&s);
}

static void a_rejecting_sink_refuses_one_id_in_ten_with_a_constraint(void **state) {
        struct tk_sink s;

        (void)state;
        assert_int_equal(tk_sink_create(&s, TK_SINK_SQLITE), 0);
        apply(&s, TK_SINK_REJECT);
        /* 254: SQLITE_CONSTRAINT_TRIGGER (an extended code, too wide for an exit status) */
        assert_int_equal(insert_elsewhere(&s, "evt-0000013"), 254);
        assert_int_equal(insert_elsewhere(&s, "evt-0000014"), 0);
        apply(&s, TK_SINK_ACCEPT);
        assert_int_equal(insert_elsewhere(&s, "evt-0000013"), 0);
        tk_sink_destroy(&s);
}

static void rows_are_read_back_per_event_and_a_replayed_row_counts_twice(void **state) {
        struct tk_sink s;
        struct tk_event ev[3];
        struct tk_workload w = {.n = 3, .ev = ev};
        int64_t rows, foreign;
        char dir[sizeof s.dir];
        struct stat sb;

        (void)state;
        memset(ev, 0, sizeof ev);
        assert_int_equal(tk_sink_create(&s, TK_SINK_SQLITE), 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000000"), 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), 0);
        assert_int_equal(insert_elsewhere(&s, "not-an-event"), 0);
        apply(&s, TK_SINK_LOCK); /* read-back heals first: the run's own lock is no obstacle */
        tk_sink_heal(&s);
        assert_int_equal(tk_sink_read(&s, &w, &rows, &foreign), 0);
        assert_int_equal(rows, 4);
        assert_int_equal(foreign, 1);
        assert_int_equal(ev[0].effects, 1);
        assert_int_equal(ev[1].effects, 0);
        assert_int_equal(ev[2].effects, 2);
        memcpy(dir, s.dir, sizeof dir);
        tk_sink_destroy(&s);
        assert_int_equal(stat(dir, &sb), -1); /* database, WAL and directory removed */
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_locked_sink_answers_busy_to_another_process),
            cmocka_unit_test(a_full_sink_answers_full_to_another_process),
            cmocka_unit_test(a_rejecting_sink_refuses_one_id_in_ten_with_a_constraint),
            cmocka_unit_test(rows_are_read_back_per_event_and_a_replayed_row_counts_twice),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
