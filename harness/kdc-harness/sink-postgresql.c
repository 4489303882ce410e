/* The PostgreSQL sink: a server of the run's own, started with initdb and
 * postgres in a temporary directory, listening only on a unix socket in that
 * directory (no TCP port, so runs never collide), stopped and removed at the
 * end. PostgreSQL refuses to run as root: when this process is root, initdb
 * and the server run as the user "nobody", in a directory it owns.
 *
 * The server is a child of this process (not daemonized by pg_ctl), in a
 * process group of its own, with PR_SET_PDEATHSIG: it dies with the thread
 * that started it, even when kdc-harness is SIGKILLed; kdc-harness's signal
 * handler shuts it down (tk_sink_remove_interrupted()).
 *
 * Faults, from the harness's side, each a real error in the service's
 * process (tests/harness/kdc-harness/test_sink.c checks them):
 *   stop    fast shutdown (SIGINT to the postmaster): open transactions are
 *           rolled back, connections are closed ("server closed the
 *           connection unexpectedly"), new ones refused (no socket);
 *   start   the server again, on the same socket;
 *   revoke  REVOKE INSERT ON effects FROM the service's role: its inserts
 *           fail with SQLSTATE 42501 (insufficient_privilege);
 *   grant   GRANT INSERT again. */
/* close_range() (glibc >= 2.34) */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glob.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <libpq-fe.h>

#include "internal.h"

#define TK_PG_PORT "5432" /* the socket's name in the run's directory */
#define TK_PG_ADMIN "kdc" /* the harness's role (superuser) */
#define TK_PG_ROLE "kdc_service"
#define TK_PG_START_MS 30000 /* for the server to accept connections */
#define TK_PG_STOP_MS 10000  /* for a fast shutdown, then SIGKILL */

static volatile pid_t live_server;
static char live_dir[sizeof((struct tk_sink *)0)->dir];
static volatile sig_atomic_t live;

pid_t tk_pg_server_pid(void) {
        return live_server;
}

static int fail(struct tk_sink *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static int fail(struct tk_sink *s, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(s->error, sizeof s->error, fmt, ap);
        va_end(ap);
        return KDC_ERR_NOENT;
}

int tk_pg_find(char *bin, size_t size) {
        const char *env = getenv("KDC_HARNESS_PG_BIN");
        char path[512];
        glob_t g;
        long best = -1;

        if (env && *env) {
                snprintf(bin, size, "%s", env);
        } else {
                bin[0] = '\0';
                if (glob("/usr/lib/postgresql/*/bin/initdb", 0, NULL, &g) == 0) {
                        for (size_t i = 0; i < g.gl_pathc; i++) {
                                long v = strtol(g.gl_pathv[i] + strlen("/usr/lib/postgresql/"),
                                                NULL, 10);
                                if (v > best) {
                                        best = v;
                                        snprintf(bin, size, "/usr/lib/postgresql/%ld/bin", v);
                                }
                        }
                        globfree(&g);
                }
                /* else the first directory of PATH with an initdb */
                for (const char *p = getenv("PATH"); !bin[0] && p && *p;) {
                        size_t n = strcspn(p, ":");
                        snprintf(path, sizeof path, "%.*s/initdb", (int)n, p);
                        if (n && access(path, X_OK) == 0)
                                snprintf(bin, size, "%.*s", (int)n, p);
                        p += n + (p[n] == ':');
                }
        }
        snprintf(path, sizeof path, "%s/initdb", bin);
        if (!bin[0] || access(path, X_OK) != 0)
                return KDC_ERR_NOENT;
        snprintf(path, sizeof path, "%s/postgres", bin);
        return access(path, X_OK) == 0 ? 0 : KDC_ERR_NOENT;
}

/* Who runs the server: this process's user, or nobody for root. */
struct who {
        int drop;
        uid_t uid;
        gid_t gid;
};

/* Start argv (output appended to log) as `who`; a server (daemon) dies with
 * this thread. The child's pid, or -1. */
static pid_t spawn(char *const argv[], const char *log, const struct who *who, int daemon) {
        pid_t pid = fork();

        if (pid != 0)
                return pid;
        /* the child: async-signal-safe calls only (this process has threads) */
        int in = open("/dev/null", O_RDONLY);
        int out = open(log, O_WRONLY | O_CREAT | O_APPEND, 0644);
        if (in < 0 || out < 0 || dup2(in, 0) < 0 || dup2(out, 1) < 0 || dup2(out, 2) < 0)
                _exit(126);
        close_range(3, ~0U, 0);
        setpgid(0, 0);
        if (who->drop &&
            (setgroups(0, NULL) != 0 || setgid(who->gid) != 0 || setuid(who->uid) != 0))
                _exit(126);
        /* after the credentials change, which clears it */
        if (daemon && prctl(PR_SET_PDEATHSIG, SIGQUIT) != 0)
                _exit(126);
        execv(argv[0], argv);
        _exit(127);
}

static int run_tool(struct tk_sink *s, char *const argv[], const struct who *who) {
        char log[sizeof s->dir + 16];
        int status;
        pid_t pid;

        snprintf(log, sizeof log, "%s/tools.log", s->dir);
        if ((pid = spawn(argv, log, who, 0)) < 0)
                return fail(s, "%s: %s", argv[0], strerror(errno));
        while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
                ;
        if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
                return fail(s, "%s failed (status %d): see %s", argv[0], status, log);
        return 0;
}

static void conninfo(const struct tk_sink *s, const char *role, char *buf, size_t size) {
        snprintf(buf, size, "host=%s port=" TK_PG_PORT " user=%s dbname=postgres", s->dir, role);
}

static int64_t now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int who_of(struct tk_sink *s, struct who *who) {
        memset(who, 0, sizeof *who);
        if (geteuid() != 0)
                return 0;
        struct passwd *pw = getpwnam("nobody");
        if (!pw)
                return fail(s, "running as root, and no user 'nobody' to run PostgreSQL as");
        who->drop = 1;
        who->uid = pw->pw_uid;
        who->gid = pw->pw_gid;
        return 0;
}

/* The server, started and accepting connections; the harness connected. */
static int server_start(struct tk_sink *s) {
        char data[sizeof s->dir + 8], log[sizeof s->dir + 16], ci[sizeof s->dir + 96];
        char postgres[sizeof s->bin + 16];
        char *argv[] = {
            postgres, "-D",        data, "-k", s->dir, "-p", TK_PG_PORT, "-c", "listen_addresses=",
            "-c",     "fsync=off", NULL};
        struct who who;
        int status;

        if (who_of(s, &who) != 0)
                return KDC_ERR_NOENT;
        snprintf(postgres, sizeof postgres, "%s/postgres", s->bin);
        snprintf(data, sizeof data, "%s/data", s->dir);
        snprintf(log, sizeof log, "%s/server.log", s->dir);
        conninfo(s, TK_PG_ADMIN, ci, sizeof ci);
        if ((s->server = spawn(argv, log, &who, 1)) < 0) {
                s->server = 0;
                return fail(s, "%s: %s", postgres, strerror(errno));
        }
        live_server = s->server;
        for (int64_t deadline = now_ms() + TK_PG_START_MS; PQping(ci) != PQPING_OK;) {
                if (waitpid(s->server, &status, WNOHANG) == s->server) {
                        s->server = live_server = 0;
                        return fail(s, "the PostgreSQL server exited at its start: see %s", log);
                }
                if (now_ms() > deadline)
                        return fail(s, "the PostgreSQL server did not accept connections in %d s",
                                    TK_PG_START_MS / 1000);
                usleep(50 * 1000);
        }
        s->pg = PQconnectdb(ci);
        if (PQstatus(s->pg) != CONNECTION_OK)
                return fail(s, "connecting to the sink: %s", PQerrorMessage(s->pg));
        s->stopped = 0;
        return 0;
}

/* Fast shutdown: transactions rolled back, clients disconnected. */
static void server_stop(struct tk_sink *s, int sig) {
        int status;

        if (s->pg) {
                PQfinish(s->pg);
                s->pg = NULL;
        }
        if (!s->server)
                return;
        kill(s->server, sig);
        for (int64_t deadline = now_ms() + TK_PG_STOP_MS;
             waitpid(s->server, &status, WNOHANG) != s->server;) {
                if (now_ms() > deadline) {
                        kill(-s->server, SIGKILL);
                        waitpid(s->server, &status, 0);
                        break;
                }
                usleep(20 * 1000);
        }
        s->server = live_server = 0;
}

static int sql(struct tk_sink *s, const char *q) {
        PGresult *r = PQexec(s->pg, q);
        int ok =
            r && (PQresultStatus(r) == PGRES_COMMAND_OK || PQresultStatus(r) == PGRES_TUPLES_OK);

        if (!ok)
                fail(s, "%s", PQerrorMessage(s->pg));
        PQclear(r);
        return ok ? 0 : KDC_ERR_NOENT;
}

int tk_pg_create(struct tk_sink *s) {
        const char *tmp = getenv("TMPDIR");
        char data[sizeof s->dir + 8], initdb[sizeof s->bin + 16], ci[sizeof s->dir + 96];
        char *argv[] = {initdb,      "-D", data,   "-A",        "trust", "-U",
                        TK_PG_ADMIN, "-E", "UTF8", "--no-sync", NULL};
        struct who who;

        if (tk_pg_find(s->bin, sizeof s->bin) != 0)
                return fail(
                    s, "no PostgreSQL server (initdb, postgres) in /usr/lib/postgresql/*/bin, PATH "
                       "or KDC_HARNESS_PG_BIN (Debian: apt-get install postgresql)");
        if (who_of(s, &who) != 0)
                return KDC_ERR_NOENT;
        snprintf(s->dir, sizeof s->dir, "%s/kdc-harness-sink-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(s->dir)) {
                s->dir[0] = '\0';
                return fail(s, "mkdtemp: %s", strerror(errno));
        }
        snprintf(live_dir, sizeof live_dir, "%s", s->dir);
        live = 1;
        /* the server's user owns its directory; others may reach the socket */
        if ((who.drop && chown(s->dir, who.uid, who.gid) != 0) || chmod(s->dir, 0755) != 0) {
                fail(s, "%s: %s", s->dir, strerror(errno));
                tk_pg_destroy(s);
                return KDC_ERR_NOENT;
        }
        snprintf(initdb, sizeof initdb, "%s/initdb", s->bin);
        snprintf(data, sizeof data, "%s/data", s->dir);
        conninfo(s, TK_PG_ROLE, ci, sizeof ci);
        snprintf(s->env, sizeof s->env, "postgresql:%s", ci);
        if (run_tool(s, argv, &who) != 0 || server_start(s) != 0 ||
            sql(s, "CREATE TABLE effects("
                   " seq bigserial PRIMARY KEY,"
                   " event_id text NOT NULL,"
                   " amount bigint NOT NULL,"
                   " written_at timestamptz NOT NULL DEFAULT clock_timestamp());"
                   "CREATE INDEX effects_event_id ON effects(event_id);"
                   "CREATE ROLE " TK_PG_ROLE " LOGIN;"
                   "GRANT SELECT, INSERT ON effects TO " TK_PG_ROLE ";"
                   "GRANT USAGE ON SEQUENCE effects_seq_seq TO " TK_PG_ROLE) != 0) {
                char why[sizeof s->error];
                memcpy(why, s->error, sizeof why);
                tk_pg_destroy(s);
                memcpy(s->error, why, sizeof why);
                return KDC_ERR_NOENT;
        }
        return 0;
}

int tk_pg_apply(struct tk_sink *s, const struct tk_step *st) {
        switch (st->action) {
        case TK_SINK_STOP:
                if (!s->stopped)
                        server_stop(s, SIGINT);
                s->stopped = 1;
                return 0;
        case TK_SINK_START:
                return s->stopped ? server_start(s) : 0;
        case TK_SINK_REVOKE:
                if (s->revoked)
                        return 0;
                s->revoked = 1;
                return s->pg ? sql(s, "REVOKE INSERT ON effects FROM " TK_PG_ROLE) : KDC_ERR_NOENT;
        case TK_SINK_GRANT:
                if (!s->revoked)
                        return 0;
                s->revoked = 0;
                return s->pg ? sql(s, "GRANT INSERT ON effects TO " TK_PG_ROLE) : KDC_ERR_NOENT;
        default:
                return KDC_ERR_INVALID;
        }
}

int tk_pg_read(struct tk_sink *s, struct tk_workload *w, int64_t *rows, int64_t *foreign) {
        PGresult *r;

        *rows = *foreign = 0;
        if (!s->pg)
                return fail(s, "no connection to the sink");
        r = PQexec(s->pg, "SELECT event_id, count(*) FROM effects GROUP BY event_id");
        if (!r || PQresultStatus(r) != PGRES_TUPLES_OK) {
                fail(s, "%s", PQerrorMessage(s->pg));
                PQclear(r);
                return KDC_ERR_NOENT;
        }
        for (int i = 0; i < PQntuples(r); i++) {
                const char *id = PQgetvalue(r, i, 0);
                int64_t count = strtoll(PQgetvalue(r, i, 1), NULL, 10);
                int64_t k = tk_event_index(id, (size_t)PQgetlength(r, i, 0), w->n);

                *rows += count;
                if (k < 0)
                        *foreign += count;
                else
                        w->ev[k].effects += (int32_t)count;
        }
        PQclear(r);
        return 0;
}

/* The counter connects as the harness's role, on the server's socket; while
 * the server is stopped the connection fails at once (no socket) and the
 * sample is skipped; after a restart it connects again. */
#define TK_PG_COUNT_TIMEOUT "2" /* s: connect_timeout */

int tk_pg_counter_open(struct tk_sink_counter *c, const struct tk_sink *s) {
        if (!s->dir[0])
                return KDC_ERR_INVALID;
        snprintf(c->conninfo, sizeof c->conninfo,
                 "host=%s port=" TK_PG_PORT " user=" TK_PG_ADMIN
                 " dbname=postgres connect_timeout=" TK_PG_COUNT_TIMEOUT
                 " application_name=kdc-harness-probe",
                 s->dir);
        return 0;
}

int tk_pg_count(struct tk_sink_counter *c, int64_t *rows) {
        PGresult *r;
        int ok;

        if (!c->conninfo[0])
                return KDC_ERR_INVALID;
        if (c->pg && PQstatus(c->pg) != CONNECTION_OK) {
                PQfinish(c->pg);
                c->pg = NULL;
        }
        if (!c->pg && PQstatus(c->pg = PQconnectdb(c->conninfo)) != CONNECTION_OK) {
                PQfinish(c->pg);
                c->pg = NULL;
                return KDC_ERR_NOENT;
        }
        r = PQexec(c->pg, "SELECT count(*) FROM effects");
        ok = r && PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1;
        if (ok)
                *rows = strtoll(PQgetvalue(r, 0, 0), NULL, 10);
        PQclear(r);
        return ok ? 0 : KDC_ERR_NOENT;
}

void tk_pg_counter_close(struct tk_sink_counter *c) {
        PQfinish(c->pg);
        memset(c, 0, sizeof *c);
}

static int remove_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
        (void)sb;
        (void)flag;
        (void)ftw;
        remove(path);
        return 0;
}

void tk_pg_destroy(struct tk_sink *s) {
        server_stop(s, SIGINT);
        if (s->dir[0])
                nftw(s->dir, remove_one, 16, FTW_DEPTH | FTW_PHYS);
        s->dir[0] = '\0';
        live = 0;
}

/* For kdc-harness's signal handler (async-signal-safe): shut the server down
 * at once, and remove its directory from a process of its own once it is
 * gone. */
void tk_pg_remove_interrupted(void) {
        static char *const rm[] = {"/bin/sh", "-c", "sleep 1; rm -rf \"$0\"", live_dir, NULL};
        pid_t server = live_server;

        if (!live)
                return;
        if (server > 0)
                kill(server, SIGQUIT);
        if (fork() == 0) {
                setsid();
                execv(rm[0], rm);
                _exit(127);
        }
}
