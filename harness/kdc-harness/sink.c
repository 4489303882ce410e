/* The downstream store of a sink scenario: an SQLite database in a temporary
 * directory of the run's own, whose schema the harness creates before the
 * service starts, whose faults it injects from its own connection (another
 * process than the service's, as a real outage is), and whose rows it reads
 * back at the end.
 *
 * Each fault is a real error of the real library in the service's process
 * (tests/harness/kdc-harness/test_sink.c checks each from a forked process):
 *   lock    BEGIN EXCLUSIVE held: the service's writes get SQLITE_BUSY;
 *   full    the table's AUTOINCREMENT key set to its largest value: every
 *           insert gets SQLITE_FULL ("database or disk is full"). PRAGMA
 *           max_page_count would not do: it limits only the connection that
 *           sets it;
 *   reject  a trigger that raises for one event id in ten: those inserts get
 *           SQLITE_CONSTRAINT (SQLITE_CONSTRAINT_TRIGGER), the others succeed. */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "internal.h"

#define TK_SINK_BUSY_MS 5000 /* the harness waits this long for its own locks */

static const char schema[] =
    "PRAGMA journal_mode=WAL;"
    "CREATE TABLE effects("
    " seq INTEGER PRIMARY KEY AUTOINCREMENT,"
    " event_id TEXT NOT NULL,"
    " amount INTEGER NOT NULL,"
    " written_at TEXT NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f', 'now')));"
    "CREATE INDEX effects_event_id ON effects(event_id);";

/* The files of the sink in progress, for tk_sink_remove_interrupted() (a
 * signal handler's): written before `live` is set, read only once it is. */
static const char *const suffix[] = {"", "-wal", "-shm", "-journal"};
static char live_files[4][sizeof((struct tk_sink *)0)->path + 16];
static char live_dir[sizeof((struct tk_sink *)0)->dir];
static volatile sig_atomic_t live;

void tk_sink_remove_interrupted(void) {
        tk_pg_remove_interrupted();
        if (!live)
                return;
        for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++)
                unlink(live_files[i]);
        rmdir(live_dir);
}

static int exec(struct tk_sink *s, const char *sql) {
        return sqlite3_exec(s->db, sql, NULL, NULL, NULL) == SQLITE_OK ? 0 : KDC_ERR_NOENT;
}

int tk_sink_create(struct tk_sink *s, enum tk_sink_kind kind) {
        const char *tmp = getenv("TMPDIR");

        memset(s, 0, sizeof *s);
        s->kind = kind;
        if (kind == TK_SINK_POSTGRESQL)
                return tk_pg_create(s);
        snprintf(s->dir, sizeof s->dir, "%s/kdc-harness-sink-XXXXXX", tmp && *tmp ? tmp : "/tmp");
        if (!mkdtemp(s->dir)) {
                s->dir[0] = '\0';
                return KDC_ERR_NOENT;
        }
        snprintf(s->path, sizeof s->path, "%s/effects.db", s->dir);
        snprintf(s->env, sizeof s->env, "sqlite:%s", s->path);
        live = 0;
        for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++)
                snprintf(live_files[i], sizeof live_files[i], "%s%s", s->path, suffix[i]);
        snprintf(live_dir, sizeof live_dir, "%s", s->dir);
        live = 1;
        if (sqlite3_open_v2(s->path, &s->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) !=
                SQLITE_OK ||
            sqlite3_busy_timeout(s->db, TK_SINK_BUSY_MS) != SQLITE_OK || exec(s, schema) != 0) {
                tk_sink_destroy(s);
                return KDC_ERR_NOENT;
        }
        return 0;
}

const char *tk_sink_error(const struct tk_sink *s) {
        if (s->kind == TK_SINK_POSTGRESQL)
                return s->error;
        return s->db ? sqlite3_errmsg(s->db) : "no database";
}

int tk_sink_apply(struct tk_sink *s, const struct tk_step *st) {
        if (s->kind == TK_SINK_POSTGRESQL)
                return tk_pg_apply(s, st);
        switch (st->action) {
        case TK_SINK_LOCK:
                if (s->locked)
                        return 0;
                if (exec(s, "BEGIN EXCLUSIVE") != 0)
                        return KDC_ERR_NOENT;
                s->locked = 1;
                return 0;
        case TK_SINK_UNLOCK:
                if (!s->locked)
                        return 0;
                s->locked = 0;
                return exec(s, "COMMIT");
        case TK_SINK_FULL:
                if (exec(s, "UPDATE sqlite_sequence SET seq = 9223372036854775807 "
                            "WHERE name = 'effects';"
                            "INSERT INTO sqlite_sequence(name, seq) SELECT 'effects', "
                            "9223372036854775807 WHERE NOT EXISTS "
                            "(SELECT 1 FROM sqlite_sequence WHERE name = 'effects')") != 0)
                        return KDC_ERR_NOENT;
                s->full = 1;
                return 0;
        case TK_SINK_ROOM:
                s->full = 0;
                return exec(s,
                            "UPDATE sqlite_sequence SET seq = "
                            "(SELECT coalesce(max(seq), 0) FROM effects) WHERE name = 'effects'");
        case TK_SINK_REJECT:
                /* evt-NNNNNNN with NNNNNNN % 10 == 3: one event in ten */
                if (exec(s, "CREATE TRIGGER IF NOT EXISTS kdc_harness_reject BEFORE INSERT ON "
                            "effects WHEN CAST(substr(NEW.event_id, 5) AS INTEGER) % 10 = 3 "
                            "BEGIN SELECT RAISE(ABORT, 'kdc-harness: rejected by the sink'); "
                            "END") != 0)
                        return KDC_ERR_NOENT;
                s->rejecting = 1;
                return 0;
        case TK_SINK_ACCEPT:
                s->rejecting = 0;
                return exec(s, "DROP TRIGGER IF EXISTS kdc_harness_reject");
        default:
                return KDC_ERR_INVALID;
        }
}

void tk_sink_heal(struct tk_sink *s) {
        static const struct tk_step undo[] = {
            {.action = TK_SINK_UNLOCK}, {.action = TK_SINK_ROOM}, {.action = TK_SINK_ACCEPT}};
        static const struct tk_step pg_undo[] = {{.action = TK_SINK_START},
                                                 {.action = TK_SINK_GRANT}};

        if (s->kind == TK_SINK_POSTGRESQL) {
                for (size_t i = 0; i < sizeof pg_undo / sizeof pg_undo[0]; i++)
                        (void)tk_pg_apply(s, &pg_undo[i]);
                return;
        }
        if (!s->db)
                return;
        for (size_t i = 0; i < sizeof undo / sizeof undo[0]; i++)
                (void)tk_sink_apply(s, &undo[i]);
}

int tk_sink_read(struct tk_sink *s, struct tk_workload *w, int64_t *rows, int64_t *foreign) {
        sqlite3_stmt *st = NULL;
        int rc;

        if (s->kind == TK_SINK_POSTGRESQL)
                return tk_pg_read(s, w, rows, foreign);
        *rows = *foreign = 0;
        if (!s->db ||
            sqlite3_prepare_v2(s->db, "SELECT event_id, count(*) FROM effects GROUP BY event_id",
                               -1, &st, NULL) != SQLITE_OK)
                return KDC_ERR_NOENT;
        while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
                const unsigned char *id = sqlite3_column_text(st, 0);
                int64_t count = sqlite3_column_int64(st, 1);
                int64_t i = id ? tk_event_index(id, (size_t)sqlite3_column_bytes(st, 0), w->n) : -1;

                *rows += count;
                if (i < 0)
                        *foreign += count;
                else
                        w->ev[i].effects += (int32_t)count;
        }
        sqlite3_finalize(st);
        return rc == SQLITE_DONE ? 0 : KDC_ERR_NOENT;
}

/* The counter's connection is read-only and in WAL mode: it never blocks the
 * service's writes, nor the harness's exclusive transaction (in WAL mode
 * BEGIN EXCLUSIVE still lets readers read), and its statement is reset after
 * each count so that it holds no snapshot between samples (a snapshot kept
 * open would keep checkpoints from recycling the WAL). A busy WAL index
 * (a checkpoint restarting the WAL, or recovery) is waited for this long,
 * then the sample is skipped. */
#define TK_SINK_COUNT_BUSY_MS 20

int tk_sink_counter_open(struct tk_sink_counter *c, const struct tk_sink *s) {
        memset(c, 0, sizeof *c);
        c->kind = s->kind;
        if (s->kind == TK_SINK_POSTGRESQL)
                return tk_pg_counter_open(c, s);
        if (s->kind != TK_SINK_SQLITE || !s->path[0])
                return KDC_ERR_INVALID;
        if (sqlite3_open_v2(s->path, &c->db, SQLITE_OPEN_READONLY, NULL) != SQLITE_OK ||
            sqlite3_busy_timeout(c->db, TK_SINK_COUNT_BUSY_MS) != SQLITE_OK ||
            sqlite3_prepare_v2(c->db, "SELECT count(*) FROM effects", -1, &c->count, NULL) !=
                SQLITE_OK) {
                tk_sink_counter_close(c);
                return KDC_ERR_NOENT;
        }
        return 0;
}

int tk_sink_count(struct tk_sink_counter *c, int64_t *rows) {
        int rc;

        if (c->kind == TK_SINK_POSTGRESQL)
                return tk_pg_count(c, rows);
        if (!c->count)
                return KDC_ERR_INVALID;
        rc = sqlite3_step(c->count);
        if (rc == SQLITE_ROW)
                *rows = sqlite3_column_int64(c->count, 0);
        sqlite3_reset(c->count); /* ends the read transaction */
        return rc == SQLITE_ROW ? 0 : KDC_ERR_NOENT;
}

void tk_sink_counter_close(struct tk_sink_counter *c) {
        if (c->kind == TK_SINK_POSTGRESQL) {
                tk_pg_counter_close(c);
                return;
        }
        sqlite3_finalize(c->count);
        sqlite3_close(c->db);
        memset(c, 0, sizeof *c);
}

void tk_sink_destroy(struct tk_sink *s) {
        char path[sizeof s->path + 16];

        if (s->kind == TK_SINK_POSTGRESQL) {
                tk_pg_destroy(s);
                return;
        }
        if (s->db) {
                tk_sink_heal(s);
                sqlite3_close(s->db);
                s->db = NULL;
        }
        if (!s->dir[0])
                return;
        for (size_t i = 0; i < sizeof suffix / sizeof suffix[0]; i++) {
                snprintf(path, sizeof path, "%s%s", s->path, suffix[i]);
                unlink(path);
        }
        rmdir(s->dir);
        s->dir[0] = '\0';
        live = 0;
}
