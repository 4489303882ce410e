/* The PostgreSQL sink (harness/kdc-harness/sink-postgresql.c): the harness
 * starts a server of its own (as nobody when root), and each fault is the real
 * error in another process's connection, as a service sees it; rows are read
 * back per event; nothing is left behind. Registered only where initdb and
 * postgres were found at configure time. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>
#include <libpq-fe.h>

#include "internal.h"

enum { WRITTEN = 0, REFUSED_CONNECTION = 10, DENIED = 11, OTHER = 12 };

/* In a forked process, as the service's role: connect (conninfo after
 * "postgresql:") and insert the row of event id. */
static int insert_elsewhere(const struct tk_sink *s, const char *id) {
        pid_t pid = fork();
        int status;

        assert_true(pid >= 0);
        if (pid == 0) {
                PGconn *c = PQconnectdb(s->env + strlen("postgresql:"));
                const char *params[1] = {id};

                if (PQstatus(c) != CONNECTION_OK)
                        _exit(REFUSED_CONNECTION);
                PGresult *r = PQexecParams(c,
                                           "INSERT INTO effects(event_id, amount) "
                                           "VALUES ($1, 7)",
                                           1, NULL, params, NULL, NULL, 0);
                const char *state = PQresultErrorField(r, PG_DIAG_SQLSTATE);
                _exit(PQresultStatus(r) == PGRES_COMMAND_OK  ? WRITTEN
                      : state && strcmp(state, "42501") == 0 ? DENIED
                                                             : OTHER);
        }
        assert_int_equal(waitpid(pid, &status, 0), pid);
        assert_true(WIFEXITED(status));
        return WEXITSTATUS(status);
}

static void apply(struct tk_sink *s, enum tk_action a) {
        struct tk_step st = {.action = a};

        assert_int_equal(tk_sink_apply(s, &st), 0);
}

static void a_stopped_server_refuses_another_process_until_it_is_started(void **state) {
        struct tk_sink s;

        (void)state;
        if (tk_sink_create(&s, TK_SINK_POSTGRESQL) != 0)
                fail_msg("%s", tk_sink_error(&s));
        assert_non_null(strstr(s.env, "user=kdc_service"));
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), WRITTEN);
        apply(&s, TK_SINK_STOP);
        assert_int_equal(tk_pg_server_pid(), 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), REFUSED_CONNECTION);
        apply(&s, TK_SINK_START);
        assert_true(tk_pg_server_pid() > 0);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), WRITTEN);
        tk_sink_destroy(&s);
}

static void a_revoked_insert_is_denied_to_another_process(void **state) {
        struct tk_sink s;

        (void)state;
        if (tk_sink_create(&s, TK_SINK_POSTGRESQL) != 0)
                fail_msg("%s", tk_sink_error(&s));
        apply(&s, TK_SINK_REVOKE);
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), DENIED);
        apply(&s, TK_SINK_GRANT);
        assert_int_equal(insert_elsewhere(&s, "evt-0000001"), WRITTEN);
        tk_sink_destroy(&s);
}

static void rows_are_read_back_and_the_server_and_its_directory_go(void **state) {
        struct tk_sink s;
        struct tk_event ev[3];
        struct tk_workload w = {.n = 3, .ev = ev};
        int64_t rows, foreign;
        char dir[sizeof s.dir];
        struct stat sb;
        pid_t server;

        (void)state;
        memset(ev, 0, sizeof ev);
        if (tk_sink_create(&s, TK_SINK_POSTGRESQL) != 0)
                fail_msg("%s", tk_sink_error(&s));
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), WRITTEN);
        assert_int_equal(insert_elsewhere(&s, "evt-0000002"), WRITTEN);
        assert_int_equal(insert_elsewhere(&s, "stranger"), WRITTEN);
        apply(&s, TK_SINK_STOP); /* read-back heals first */
        tk_sink_heal(&s);
        assert_int_equal(tk_sink_read(&s, &w, &rows, &foreign), 0);
        assert_int_equal(rows, 3);
        assert_int_equal(foreign, 1);
        assert_int_equal(ev[2].effects, 2);
        assert_int_equal(ev[0].effects, 0);
        server = tk_pg_server_pid();
        memcpy(dir, s.dir, sizeof dir);
        tk_sink_destroy(&s);
        assert_int_equal(tk_pg_server_pid(), 0);
        assert_int_equal(kill(server, 0), -1); /* reaped: no such process */
        assert_int_equal(stat(dir, &sb), -1);
}

int main(void) {
        const struct CMUnitTest tests[] = {
            cmocka_unit_test(a_stopped_server_refuses_another_process_until_it_is_started),
            cmocka_unit_test(a_revoked_insert_is_denied_to_another_process),
            cmocka_unit_test(rows_are_read_back_and_the_server_and_its_directory_go),
        };
        return cmocka_run_group_tests(tests, NULL, NULL);
}
