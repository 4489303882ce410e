/* kdc testkit internals: the objects of one run, one file each.
 *
 *   scenarios.c  the scenario table and each scenario's fault plan
 *   cluster.c    the mock cluster, its topics, and the faults applied to it
 *   remote.c     or an existing cluster: the run's own topics and group
 *   workload.c   the input events: ids, poison, paced confirmed production
 *   service.c    service instances: child processes or loop threads
 *   probe.c      a thread that watches committed offsets and outputs
 *   history.c    reading back outputs, DLQ records and committed offsets
 *   sink.c       the downstream store of a sink scenario (SQLite) and its faults
 *   checker.c    the verdict, from events and what was read back
 *   report.c     text and JSON reports
 *   run.c        one run, start to verdict (the public run functions)
 */
#ifndef KDC_TESTKIT_INTERNAL_H
#define KDC_TESTKIT_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <librdkafka/rdkafka.h>
#include <librdkafka/rdkafka_mock.h>
#include <sqlite3.h>
#include <kdc/testkit.h>

/* Broker roles in the mock cluster (ids start at 1). */
#define TK_BROKERS 3
#define TK_BROKER_INPUT 1 /* input partition leader, group coordinator */
#define TK_BROKER_OUTPUT 2
#define TK_BROKER_DLQ 3

/* Kafka protocol ApiKeys (not in a public librdkafka header). */
#define TK_APIKEY_PRODUCE 0
#define TK_APIKEY_OFFSET_COMMIT 8

#define TK_MAX_INSTANCES 2
#define TK_MAX_STEPS 32

/* Milliseconds on the monotonic clock. */
int64_t tk_now_ms(void);

/* ---- scenarios.c ------------------------------------------------------ */

enum tk_action {
        TK_BROKER_DOWN, /* broker (or -1: all) stops accepting connections */
        TK_BROKER_UP,
        TK_PUSH_ERRORS,     /* count errors on broker's apikey request stack */
        TK_SET_COORDINATOR, /* group coordinator -> broker */
        TK_SET_LEADERS,     /* every partition of a topic role -> broker */
        TK_KILL,            /* SIGKILL an instance (restarted after delay_ms) */
        TK_PAUSE,           /* SIGSTOP an instance */
        TK_RESUME,          /* SIGCONT */
        TK_START,           /* start an instance */
        TK_STOP,            /* stop an instance (SIGTERM / stopping flag) */
        TK_REDEPLOY,        /* stop an instance, then start it again after delay_ms */
        TK_SINK_LOCK,       /* the sink's database locked (writes: SQLITE_BUSY) */
        TK_SINK_UNLOCK,
        TK_SINK_FULL, /* the sink's table full (inserts: SQLITE_FULL) */
        TK_SINK_ROOM,
        TK_SINK_REJECT, /* one event id in ten rejected (SQLITE_CONSTRAINT) */
        TK_SINK_ACCEPT,
        TK_SINK_STOP, /* the PostgreSQL server stopped (fast shutdown) */
        TK_SINK_START,
        TK_SINK_REVOKE, /* the service's INSERT privilege revoked */
        TK_SINK_GRANT
};

/* The downstream store a scenario gives the service (KDC_HARNESS_SINK). */
enum tk_sink_kind { TK_SINK_NONE = 0, TK_SINK_SQLITE, TK_SINK_POSTGRESQL };

enum tk_topic_role { TK_INPUT, TK_OUTPUT, TK_DLQ };

struct tk_step {
        /* When: at >= 0: once this fraction of the events is produced (and
         * not before the previous step); otherwise after_ms after the
         * previous step. */
        double at;
        int after_ms;
        enum tk_action action;
        int broker;
        int16_t apikey;
        int count;
        rd_kafka_resp_err_t err;
        int rtt_ms;
        enum tk_topic_role role;
        int instance;  /* 0-based */
        int delay_ms;  /* TK_KILL, TK_REDEPLOY: restart delay */
};

struct tk_plan {
        struct tk_step steps[TK_MAX_STEPS];
        int nsteps;
        double poison_ratio;
        /* client settings for the service (0: librdkafka default) */
        int session_timeout_ms, heartbeat_interval_ms;
        int max_poll_interval_ms, message_timeout_ms;
        enum tk_sink_kind sink;
};

struct tk_scenario {
        kdc_testkit_scenario_t pub;
        void (*plan)(struct tk_plan *plan, unsigned short rng[3]);
};

const struct tk_scenario *tk_scenario_find(const char *name);
/* The plan of a scenario for a seed: defaults, then the scenario's steps. */
void tk_plan_make(const struct tk_scenario *s, uint64_t seed, struct tk_plan *plan);
/* "broker 2 down", ... (for the fault log) */
void tk_step_describe(const struct tk_step *step, const char *const topics[3],
                      char *buf, size_t size);

/* ---- cluster.c -------------------------------------------------------- */

#define TK_NAME_MAX 512 /* a unique topic or group name on an existing cluster */

struct tk_cluster {
        rd_kafka_t *host; /* owns the mock cluster */
        rd_kafka_mock_cluster_t *mcluster;
        const char *bootstraps; /* owned by mcluster */
        const char *topics[3];  /* by enum tk_topic_role */
        int partitions[3];
        const char *group;
        /* librdkafka 2.0.2's mock thread serves control calls (leaders,
         * errors, brokers down) only when it wakes up for I/O or a timer,
         * up to a second later; a client asking for metadata every 20 ms
         * keeps it awake, so that a fault lands when it is scheduled. */
        rd_kafka_t *waker;
        pthread_t waker_thread;
        int waker_stop;
        /* An existing cluster (options.bootstrap_servers, remote.c): no
         * mcluster; topics and group of unique names, created and deleted
         * by the admin client. */
        int remote;
        rd_kafka_t *admin;
        struct {
                char input[TK_NAME_MAX], output[TK_NAME_MAX], dlq[TK_NAME_MAX];
                char group[TK_NAME_MAX];
        } names;
        int created[3];        /* by enum tk_topic_role: to delete at the end */
        unsigned char api[64]; /* by ApiKey: the cluster supports the request */
        FILE *log;
};

int tk_cluster_start(struct tk_cluster *c, const kdc_testkit_options_t *o);
void tk_cluster_stop(struct tk_cluster *c);
/* Apply one cluster fault (not the instance ones). */
void tk_cluster_apply(struct tk_cluster *c, const struct tk_step *step);
/* Every broker up. Error stacks cannot be cleared per broker in 2.0.2:
 * they drain as requests consume them. */
void tk_cluster_heal(struct tk_cluster *c);
/* Client configuration for the testkit's own clients on the cluster. */
rd_kafka_conf_t *tk_cluster_conf(const struct tk_cluster *c);

/* ---- remote.c --------------------------------------------------------- */

/* The run's topics and group on options->bootstrap_servers (c->partitions set
 * before: what is asked; after: what the topics have). 0; KDC_ERR_INVALID
 * (the names are too long, or the cluster refused them: said on c->log);
 * KDC_ERR_TIMEOUT (no bootstrap server answered, or the topics got no
 * leaders). What was created stays for tk_remote_stop(). */
int tk_remote_start(struct tk_cluster *c, const kdc_testkit_options_t *o);
/* Deletes the topics created and the group; says on c->log what is left. */
void tk_remote_stop(struct tk_cluster *c);

/* ---- workload.c ------------------------------------------------------- */

struct tk_event {
        int32_t partition;
        int64_t offset;   /* -1 until the broker confirmed it */
        uint8_t poison;
        uint8_t failed;   /* the testkit's own produce failed */
        int64_t stored_ms; /* tk_now_ms() of its delivery report, when stored */
        int32_t outputs;  /* output records naming it */
        int32_t dlq;      /* DLQ records naming it */
        int32_t effects;  /* rows naming it in the sink */
};

struct tk_workload {
        int64_t n;
        struct tk_event *ev;
        int64_t enqueued;  /* produce calls made */
        int64_t confirmed; /* delivery reports with PERSISTED */
        int64_t failed;
        rd_kafka_t *producer;
        const char *topic;
        int partitions;
};

/* Event id of index i, e.g. "evt-0000042" (buf >= 32 bytes). */
void tk_event_id(int64_t i, char *buf, size_t size);
/* Value of event i ("amount=N", or a malformed one for poison); its length. */
int tk_event_value(const struct tk_workload *w, int64_t i, char *buf, size_t size);
/* Index of an event id, -1 if it is not one of n ids. */
int64_t tk_event_index(const void *id, size_t len, int64_t n);

int tk_workload_new(struct tk_workload *w, struct tk_cluster *c, int64_t n,
                    double poison_ratio, uint64_t seed);
/* Produce events up to index `upto` (exclusive), as many as the producer's
 * queue takes now (never waits for room); serves delivery reports. */
void tk_workload_produce(struct tk_workload *w, int64_t upto);
/* Serve delivery reports for up to timeout_ms. */
void tk_workload_poll(struct tk_workload *w, int timeout_ms);
/* Wait for every outstanding report; 0 when all events are confirmed. */
int tk_workload_drain(struct tk_workload *w, int timeout_ms);
void tk_workload_destroy(struct tk_workload *w);

/* ---- service.c -------------------------------------------------------- */

struct tk_instance {
        int index; /* 0-based; env.instance = index + 1 */
        kdc_testkit_env_t env;
        /* process mode */
        char *const *argv;
        char **envp;
        int out_fd;
        pid_t pid;
        int paused;
        /* loop mode */
        kdc_testkit_loop_t *loop;
        void *opaque;
        pthread_t thread;
        int thread_live;
        int stopping;        /* read by kdc_testkit_stopping() */
        int finished;        /* the loop returned (atomic) */
        int loop_status;
        int live;            /* registered for kdc_testkit_stopping() */
        /* supervision */
        int wanted;          /* should be running */
        int running;
        int64_t restart_at;  /* ms: start again then */
        int64_t started_at;  /* ms: last start */
        int starts, exits, kills, stuck;
        int failed_starts;   /* restarts posix_spawnp() refused */
        FILE *log;
        int64_t t0;
        const char *stats_dir; /* the run's statistics directory, or NULL */
        char stats_path[4096]; /* this start's KDC_HARNESS_STATS */
};

/* ---- the services' statistics (service_stats.c) --------------------------- */

/* A fresh directory under $TMPDIR (or /tmp): 0, KDC_ERR_NOMEM, KDC_ERR_NOENT. */
int tk_stats_dir_new(char **dirp);
/* The file of one start of one instance (1-based both). */
void tk_stats_path(const char *dir, int instance, int start, char *buf, size_t size);
/* Sum the documents found in dir into *jsonp (NULL if none; free()), then
 * remove them and dir: 0 or KDC_ERR_NOMEM. */
int tk_stats_collect(const char *dir, char **jsonp);

int tk_instance_init(struct tk_instance *in, int index, const kdc_testkit_env_t *env,
                     char *const *argv, kdc_testkit_loop_t *loop, void *opaque,
                     int out_fd, FILE *log, int64_t t0);
int tk_instance_start(struct tk_instance *in);
/* Reap an exited instance; schedules a restart if it is wanted. */
void tk_instance_check(struct tk_instance *in, int64_t now);
void tk_instance_kill(struct tk_instance *in, int restart_delay_ms);
void tk_instance_pause(struct tk_instance *in, int pause);
/* Stop (SIGTERM / stopping flag), wait up to grace_ms, then SIGKILL. */
void tk_instance_stop(struct tk_instance *in, int grace_ms);
/* A redeploy: stop as tk_instance_stop(), then start again restart_delay_ms
 * after it exited (or was killed at the end of its grace period). */
void tk_instance_redeploy(struct tk_instance *in, int grace_ms, int restart_delay_ms);
void tk_instance_destroy(struct tk_instance *in);
/* Kill and reap the children of this process that are none of its services'
 * processes: what services left outside their process groups (a daemon
 * started with setsid, a double fork), handed to this process because it is
 * the child subreaper (kdc-harness sets PR_SET_CHILD_SUBREAPER). Does nothing
 * in a process that is not one. Returns how many were killed. */
int tk_services_collect_strays(void);

/* ---- guard.c ---------------------------------------------------------- */

/* The services' cgroup: every service process joins it before exec
 * (tk_guard_procs_fd(), written "0"), and a guard process, which outlives
 * kdc-harness, kills what is in it and removes it once kdc-harness ends, by
 * tk_guard_end() or by any signal, SIGKILL included. Start it before any thread
 * or service. 0, or KDC_ERR_NOENT with why set (no writable cgroup v2 hierarchy: services
 * then run as before, and a daemon one starts with setsid survives a SIGKILLed
 * kdc-harness). */
int tk_guard_start(char *why, size_t len);
/* cgroup.procs of the services' cgroup, open for writing, or -1. */
int tk_guard_procs_fd(void);
/* The guard process (a child of this process, never a service's stray), or -1. */
pid_t tk_guard_pid(void);
/* The cgroup's directory, "" when there is none. */
const char *tk_guard_cgroup(void);
/* Ends the guard: the cgroup is emptied and removed when this returns. */
void tk_guard_end(void);

/* ---- sink.c ---------------------------------------------------------- */

/* An SQLite database in a temporary directory of its own, with the table
 *   effects(seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT NULL,
 *           amount INTEGER NOT NULL, written_at TEXT)
 * in WAL mode. No unique key on event_id: a row written twice stays two rows
 * (a duplicate effect); an idempotent service inserts only when no row names
 * the event. */
struct pg_conn; /* libpq's PGconn */

struct tk_sink {
        enum tk_sink_kind kind;
        char dir[256];
        char path[300];
        char env[420]; /* "sqlite:PATH" or "postgresql:CONNINFO": KDC_HARNESS_SINK */
        sqlite3 *db;   /* the harness's connection: schema, faults, read-back */
        int locked, full, rejecting;
        /* PostgreSQL (sink-postgresql.c): a server of the run's own, a child of
         * this process, on a unix socket in dir, as an unprivileged user when
         * this process is root (PostgreSQL refuses to run as root). */
        struct pg_conn *pg; /* the harness's connection, as superuser */
        pid_t server;       /* the postmaster, 0 when stopped */
        char bin[256];      /* where initdb and postgres are */
        char error[256];
        int stopped, revoked;
};

/* 0, or KDC_ERR_NOENT (the database could not be made; nothing is left). */
int tk_sink_create(struct tk_sink *s, enum tk_sink_kind kind);
/* sink-postgresql.c: the same for TK_SINK_POSTGRESQL (tk_sink_create()
 * calls them). */
int tk_pg_create(struct tk_sink *s);
int tk_pg_apply(struct tk_sink *s, const struct tk_step *st);
int tk_pg_read(struct tk_sink *s, struct tk_workload *w, int64_t *rows, int64_t *foreign);
void tk_pg_destroy(struct tk_sink *s);
/* The postmaster of the run in progress (never a service's stray), or 0. */
pid_t tk_pg_server_pid(void);
/* As tk_sink_remove_interrupted(), for the PostgreSQL sink: the server shut
 * down (SIGQUIT), its directory removed by a process of its own. */
void tk_pg_remove_interrupted(void);
/* Where initdb and postgres are (KDC_HARNESS_PG_BIN, else the newest
 * /usr/lib/postgresql/N/bin, else PATH): 0, or KDC_ERR_NOENT. */
int tk_pg_find(char *bin, size_t size);
/* Apply a TK_SINK_* step: 0, KDC_ERR_NOENT (tk_sink_error() says why). */
int tk_sink_apply(struct tk_sink *s, const struct tk_step *st);
const char *tk_sink_error(const struct tk_sink *s);
/* Every fault undone. */
void tk_sink_heal(struct tk_sink *s);
/* Rows per event into w->ev[].effects; every row (rows) and those naming no
 * event (foreign). 0, or KDC_ERR_NOENT. */
int tk_sink_read(struct tk_sink *s, struct tk_workload *w, int64_t *rows, int64_t *foreign);
/* Close, and remove the database and its directory. */
void tk_sink_destroy(struct tk_sink *s);
/* Remove the files and directory of the sink in progress, if any, without
 * closing it: async-signal-safe (unlink(), rmdir()), for an interrupted run. */
void tk_sink_remove_interrupted(void);

/* The sink's rows counted from a connection of their own (the progress probe's
 * thread): SQLite read-only, PostgreSQL as the harness's role. A count never
 * waits on a fault: while the harness holds a lock or the server is stopped
 * it fails at once, and the sample is skipped. */
struct tk_sink_counter {
        enum tk_sink_kind kind;
        sqlite3 *db;
        sqlite3_stmt *count;
        struct pg_conn *pg; /* reconnected after a restart */
        char conninfo[sizeof((struct tk_sink *)0)->dir + 160];
};

/* 0, KDC_ERR_INVALID (no sink), KDC_ERR_NOENT (SQLite could not open it). */
int tk_sink_counter_open(struct tk_sink_counter *c, const struct tk_sink *s);
/* The rows in effects now: 0, or KDC_ERR_NOENT (busy, stopped: skip it). */
int tk_sink_count(struct tk_sink_counter *c, int64_t *rows);
void tk_sink_counter_close(struct tk_sink_counter *c);
int tk_pg_counter_open(struct tk_sink_counter *c, const struct tk_sink *s);
int tk_pg_count(struct tk_sink_counter *c, int64_t *rows);
void tk_pg_counter_close(struct tk_sink_counter *c);

/* ---- probe.c ---------------------------------------------------------- */

struct tk_probe {
        pthread_t thread;
        pthread_mutex_t lock;
        int stop;
        rd_kafka_t *consumer; /* group.id = the service's; never subscribes */
        const struct tk_cluster *cluster;
        int64_t committed;    /* sum of committed offsets of the input */
        int64_t outputs;      /* sum of output + DLQ high watermarks */
        int64_t changed_at;   /* ms of the last change of either */
        int samples;
        /* a sink scenario's rows (tk_sink_count()), -1 until one was counted */
        int counting;
        struct tk_sink_counter counter;
        int64_t effects;
        int effects_samples, effects_skipped; /* counts tried, failed */
        int64_t effects_us;                   /* time spent counting */
};

/* sink: NULL, or the run's sink, whose rows the probe counts too. */
int tk_probe_start(struct tk_probe *p, const struct tk_cluster *c, const struct tk_sink *sink);
/* The sink's rows at the last count that succeeded, or -1. */
int64_t tk_probe_effects(struct tk_probe *p);
void tk_probe_read(struct tk_probe *p, int64_t *committed, int64_t *outputs,
                   int64_t *changed_at);
void tk_probe_stop(struct tk_probe *p);

/* ---- history.c -------------------------------------------------------- */

struct tk_history {
        int64_t *committed; /* per input partition, -1 when none */
        int partitions;
        int64_t output_records, dlq_records;
        int64_t foreign_records, dlq_without_identity;
        /* Records the mock cluster deleted from the input, output and DLQ
         * topics (low watermarks above 0): it keeps 5 MiB and 100,000
         * messages per partition, then drops the oldest. */
        int64_t dropped_records;
        int complete; /* every partition read up to its high watermark */
};

/* Read back outputs and DLQ records into w->ev[].outputs/.dlq, and the
 * group's committed offsets. 0, or -1 when the cluster did not answer. */
int tk_history_read(struct tk_history *h, const struct tk_cluster *c,
                    struct tk_workload *w);
void tk_history_free(struct tk_history *h);

/* ---- checker.c -------------------------------------------------------- */

struct tk_verdict {
        int64_t events, poison, committed, processed, dead_lettered;
        int64_t lost, duplicated, unprocessed;
        int64_t effected, duplicate_effects; /* sink runs: >= 1 row, > 1 row */
        int64_t *lists[4];                   /* event indexes by kdc_testkit_list_t */
        size_t nlists[4];
};

/* Count the verdict over n events (stored ones only) against the committed
 * offsets of `partitions` partitions (-1: none). */
int tk_check(const struct tk_event *ev, int64_t n, const int64_t *committed,
             int partitions, struct tk_verdict *v);
/* As tk_check(); with sink non-zero, an event's effect is its row in the
 * sink: lost is committed, no row and no DLQ record (outputs are counted,
 * not judged), and an event with more than one row is a duplicate effect. */
int tk_check_effects(const struct tk_event *ev, int64_t n, const int64_t *committed, int partitions,
                     int sink, struct tk_verdict *v);
void tk_verdict_free(struct tk_verdict *v);
/* Valid or not, and why not (kdc_testkit_result_t.failure; NULL: valid),
 * from the verdict and the records read back. */
const char *tk_judge(const struct tk_verdict *v, int64_t output_records, int64_t dlq_records,
                     int64_t dropped_records, int exactly_once, int require_complete);

/* ---- timeline.c ------------------------------------------------------- */

/* What the run looked like over time, for the HTML report: the progress probe's
 * values every TK_TIMELINE_PERIOD_MS, the faults (a window from a step to the
 * step that undoes it: a broker down until up, an instance stopped until started,
 * paused until resumed, killed until its restart; a point for the others), and
 * when the lost and duplicated events were stored. In a sink scenario, the
 * sink's rows too (the probe's count). Times in ms since the run
 * began. */
#define TK_TIMELINE_PERIOD_MS 200

struct tk_sample {
        int32_t t_ms;
        int64_t stored;    /* input events stored (broker-confirmed) */
        int64_t committed; /* events below the group's committed offsets */
        int64_t written;   /* output and DLQ records */
        int64_t effects;   /* rows in the sink; -1: no sink, or none counted yet */
};

struct tk_mark {
        int32_t t_ms, end_ms; /* end_ms < 0: a point, not a window */
        struct tk_step step;
        char what[160];
};

struct tk_timeline {
        struct tk_sample *samples;
        size_t nsamples, capsamples;
        struct tk_mark *marks;
        size_t nmarks;
        int32_t *at[2]; /* storage times of the lost [0] and duplicated [1] events */
        size_t nat[2];
        int64_t events; /* the run's event count: the plot's height */
        int32_t end_ms; /* the run's length: the plot's width */
};

/* 0, or KDC_ERR_NOMEM (the timeline is unchanged). */
int tk_timeline_sample(struct tk_timeline *tl, const struct tk_sample *s);
int tk_timeline_mark(struct tk_timeline *tl, int32_t t_ms, const struct tk_step *st,
                     const char *what);
/* Closes the windows still open at end_ms and takes the storage times of the
 * listed events (indexes into ev). */
int tk_timeline_end(struct tk_timeline *tl, int32_t end_ms, int64_t t0, const struct tk_event *ev,
                    int64_t events, const int64_t *lost, size_t nlost, const int64_t *dup,
                    size_t ndup);
void tk_timeline_free(struct tk_timeline *tl);

/* ---- result ----------------------------------------------------------- */

struct tk_result {
        kdc_testkit_result_t pub;
        char *scenario;
        char **ids[4];
        size_t nids[4];
        char **faults;
        size_t nfaults;
        int64_t *committed;
        int partitions;
        int64_t events_requested;
        int exactly_once, require_complete;
        char *service_stats; /* pub.service_stats */
        struct tk_timeline tl;
};

/* Appends a line to r's fault log: 0, or KDC_ERR_NOMEM (the log is unchanged). */
int tk_result_add_fault(struct tk_result *r, const char *line);

#endif
