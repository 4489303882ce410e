/* The scenario table: what each scenario injects, when (drawn from the
 * seed), what a correct service does, and where the mock cluster falls
 * short, and whether it needs control of the brokers (the embedded mock: such a
 * scenario cannot run on an existing cluster). `kdc-harness list` prints this
 * table; docs/kdc-harness.md documents it
 * (testkit.docs checks that both name the same scenarios). */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static double uniform(unsigned short rng[3], double lo, double hi) {
        return lo + (hi - lo) * erand48(rng);
}

static int irange(unsigned short rng[3], int lo, int hi) {
        return lo + (int)((hi - lo + 1) * erand48(rng)) % (hi - lo + 1);
}

static struct tk_step *add(struct tk_plan *p, double at, int after_ms, enum tk_action a) {
        struct tk_step *s = &p->steps[p->nsteps++];

        memset(s, 0, sizeof *s);
        s->at = at;
        s->after_ms = after_ms;
        s->action = a;
        return s;
}

static void push(struct tk_plan *p, double at, int broker, int16_t apikey, int count,
                 rd_kafka_resp_err_t err, int rtt_ms) {
        struct tk_step *s = add(p, at, 0, TK_PUSH_ERRORS);

        s->broker = broker;
        s->apikey = apikey;
        s->count = count;
        s->err = err;
        s->rtt_ms = rtt_ms;
}

static void down_up(struct tk_plan *p, double at, int broker, int down_ms) {
        add(p, at, 0, TK_BROKER_DOWN)->broker = broker;
        add(p, -1, down_ms, TK_BROKER_UP)->broker = broker;
}

static void plan_baseline(struct tk_plan *p, unsigned short rng[3]) {
        (void)p;
        (void)rng;
}

static void plan_broker_down(struct tk_plan *p, unsigned short rng[3]) {
        down_up(p, uniform(rng, 0.25, 0.4), TK_BROKER_OUTPUT, irange(rng, 1500, 3500));
        down_up(p, uniform(rng, 0.55, 0.7), -1, irange(rng, 1500, 3000));
}

static void plan_not_enough_replicas(struct tk_plan *p, unsigned short rng[3]) {
        p->message_timeout_ms = 5000;
        push(p, uniform(rng, 0.3, 0.6), TK_BROKER_OUTPUT, TK_APIKEY_PRODUCE,
             irange(rng, 30, 45), RD_KAFKA_RESP_ERR_NOT_ENOUGH_REPLICAS, 200);
}

static void plan_msg_timed_out(struct tk_plan *p, unsigned short rng[3]) {
        p->message_timeout_ms = 2000;
        down_up(p, uniform(rng, 0.3, 0.6), TK_BROKER_OUTPUT, irange(rng, 4000, 6000));
}

static void plan_topic_authorization(struct tk_plan *p, unsigned short rng[3]) {
        push(p, uniform(rng, 0.3, 0.6), TK_BROKER_OUTPUT, TK_APIKEY_PRODUCE, irange(rng, 2, 4),
             RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 0);
}

static void plan_dlq_failing(struct tk_plan *p, unsigned short rng[3]) {
        p->poison_ratio = 0.03;
        push(p, uniform(rng, 0.3, 0.5), TK_BROKER_DLQ, TK_APIKEY_PRODUCE, irange(rng, 2, 4),
             RD_KAFKA_RESP_ERR_TOPIC_AUTHORIZATION_FAILED, 0);
}

static void plan_commit(struct tk_plan *p, unsigned short rng[3], rd_kafka_resp_err_t err) {
        push(p, uniform(rng, 0.3, 0.6), TK_BROKER_INPUT, TK_APIKEY_OFFSET_COMMIT,
             irange(rng, 3, 6), err, 0);
}

static void plan_commit_rebalance(struct tk_plan *p, unsigned short rng[3]) {
        plan_commit(p, rng, RD_KAFKA_RESP_ERR_REBALANCE_IN_PROGRESS);
}

static void plan_commit_unknown_member(struct tk_plan *p, unsigned short rng[3]) {
        plan_commit(p, rng, RD_KAFKA_RESP_ERR_UNKNOWN_MEMBER_ID);
}

static void plan_commit_illegal_generation(struct tk_plan *p, unsigned short rng[3]) {
        plan_commit(p, rng, RD_KAFKA_RESP_ERR_ILLEGAL_GENERATION);
}

static void plan_coordinator_moved(struct tk_plan *p, unsigned short rng[3]) {
        add(p, uniform(rng, 0.3, 0.6), 0, TK_SET_COORDINATOR)->broker = TK_BROKER_DLQ;
        add(p, -1, 100, TK_BROKER_DOWN)->broker = TK_BROKER_INPUT;
        add(p, -1, irange(rng, 1500, 3000), TK_BROKER_UP)->broker = TK_BROKER_INPUT;
}

static void plan_leader_change(struct tk_plan *p, unsigned short rng[3]) {
        struct tk_step *s;

        s = add(p, uniform(rng, 0.25, 0.45), 0, TK_SET_LEADERS);
        s->role = TK_INPUT;
        s->broker = TK_BROKER_OUTPUT;
        s = add(p, -1, 0, TK_SET_LEADERS);
        s->role = TK_OUTPUT;
        s->broker = TK_BROKER_DLQ;
        s = add(p, uniform(rng, 0.55, 0.75), 0, TK_SET_LEADERS);
        s->role = TK_INPUT;
        s->broker = TK_BROKER_DLQ;
        s = add(p, -1, 0, TK_SET_LEADERS);
        s->role = TK_OUTPUT;
        s->broker = TK_BROKER_INPUT;
}

static void plan_second_consumer(struct tk_plan *p, unsigned short rng[3]) {
        add(p, uniform(rng, 0.2, 0.35), 0, TK_START)->instance = 1;
        add(p, uniform(rng, 0.65, 0.8), 0, TK_STOP)->instance = 1;
}

static void plan_sigkill(struct tk_plan *p, unsigned short rng[3]) {
        static const double at[3][2] = {{0.2, 0.35}, {0.45, 0.6}, {0.7, 0.85}};

        for (int i = 0; i < 3; i++) {
                struct tk_step *s = add(p, uniform(rng, at[i][0], at[i][1]), 0, TK_KILL);
                s->instance = 0;
                s->delay_ms = irange(rng, 200, 1500);
        }
}

static void plan_sigterm_redeploy(struct tk_plan *p, unsigned short rng[3]) {
        struct tk_step *s = add(p, uniform(rng, 0.3, 0.5), 0, TK_REDEPLOY);

        s->instance = 0;
        s->delay_ms = irange(rng, 200, 1000);
}

static void plan_poison(struct tk_plan *p, unsigned short rng[3]) {
        (void)rng;
        p->poison_ratio = 0.05;
}

static void plan_slow_processing(struct tk_plan *p, unsigned short rng[3]) {
        p->max_poll_interval_ms = 5000;
        add(p, uniform(rng, 0.3, 0.5), 0, TK_PAUSE)->instance = 0;
        add(p, -1, irange(rng, 7000, 8000), TK_RESUME)->instance = 0;
}

/* A sink fault from at for window_ms: the step, then the one that undoes it. */
static void sink_window(struct tk_plan *p, double at, enum tk_action fault, enum tk_action undo,
                        int window_ms) {
        p->sink =
            fault == TK_SINK_STOP || fault == TK_SINK_REVOKE ? TK_SINK_POSTGRESQL : TK_SINK_SQLITE;
        add(p, at, 0, fault);
        add(p, -1, window_ms, undo);
}

static void plan_sink_outage(struct tk_plan *p, unsigned short rng[3]) {
        sink_window(p, uniform(rng, 0.3, 0.5), TK_SINK_LOCK, TK_SINK_UNLOCK,
                    irange(rng, 2000, 4000));
}

static void plan_sink_full(struct tk_plan *p, unsigned short rng[3]) {
        sink_window(p, uniform(rng, 0.3, 0.5), TK_SINK_FULL, TK_SINK_ROOM, irange(rng, 2000, 4000));
}

static void plan_sink_rejects(struct tk_plan *p, unsigned short rng[3]) {
        sink_window(p, uniform(rng, 0.2, 0.4), TK_SINK_REJECT, TK_SINK_ACCEPT,
                    irange(rng, 3000, 5000));
}

static void plan_postgresql_down(struct tk_plan *p, unsigned short rng[3]) {
        sink_window(p, uniform(rng, 0.3, 0.5), TK_SINK_STOP, TK_SINK_START,
                    irange(rng, 2000, 4000));
}

static void plan_postgresql_revoked(struct tk_plan *p, unsigned short rng[3]) {
        sink_window(p, uniform(rng, 0.3, 0.5), TK_SINK_REVOKE, TK_SINK_GRANT,
                    irange(rng, 2000, 4000));
}

static const struct tk_scenario scenarios[] = {
    {{"baseline", "no fault: every event must come out once", "none",
      "every event processed once, all committed", "", 0, NULL, 0},
     plan_baseline},
    {{"broker-down", "the output partitions' leader goes down, then every broker",
      "at 25-40% of the events broker 2 (output leader) is down for 1.5-3.5 s; at 55-70% "
      "all three brokers are down for 1.5-3 s",
      "produces wait (librdkafka retries within message.timeout.ms); nothing is committed "
      "before its output is confirmed",
      "", 0, NULL, 1},
     plan_broker_down},
    {{"produce-not-enough-replicas", "output produce requests fail with NOT_ENOUGH_REPLICAS",
      "message.timeout.ms=5000 is asked for; at 30-60% 30-45 Produce requests to broker 2 "
      "fail with NOT_ENOUGH_REPLICAS, each after 200 ms",
      "librdkafka retries the error; messages that run out of message.timeout.ms are "
      "reported failed (_MSG_TIMED_OUT): their inputs are not committed and are redone",
      "the mock cannot fail one topic's produces: the errors go on the output leader's "
      "request stack (broker 2), which only output produces reach",
      0, NULL, 1},
     plan_not_enough_replicas},
    {{"produce-msg-timed-out", "output messages time out (_MSG_TIMED_OUT)",
      "message.timeout.ms=2000 is asked for; at 30-60% broker 2 (output leader) is down for "
      "4-6 s",
      "outputs queued while the broker is down fail with _MSG_TIMED_OUT; their inputs are "
      "not committed and are processed again",
      "", 0, NULL, 1},
     plan_msg_timed_out},
    {{"produce-topic-authorization-failed",
      "output produce requests are refused "
      "(TOPIC_AUTHORIZATION_FAILED)",
      "at 30-60% 2-4 Produce requests to broker 2 fail with TOPIC_AUTHORIZATION_FAILED (and "
      "librdkafka then refuses the topic locally for about a second)",
      "the failed outputs are reported; their inputs are not committed (the error is "
      "fatal by kdc's classification: a service may halt and be restarted)",
      "the mock has no ACLs: the error is injected on the output leader's Produce requests", 0,
      NULL, 1},
     plan_topic_authorization},
    {{"dlq-failing", "3% poison events while DLQ produces are refused",
      "3% of the events are malformed; at 30-50% 2-4 Produce requests to broker 3 (DLQ "
      "leader) fail with TOPIC_AUTHORIZATION_FAILED",
      "a poison event is committed only after its DLQ copy is confirmed",
      "the mock cannot fail one topic's produces: the errors go on the DLQ leader's request "
      "stack (broker 3)",
      0, NULL, 1},
     plan_dlq_failing},
    {{"commit-rebalance-in-progress", "offset commits fail with REBALANCE_IN_PROGRESS",
      "at 30-60% 3-6 OffsetCommit requests to the coordinator fail with "
      "REBALANCE_IN_PROGRESS",
      "a failed commit leaves the offset where it was: the events are redelivered, never "
      "skipped",
      "", 0, NULL, 1},
     plan_commit_rebalance},
    {{"commit-unknown-member-id", "offset commits fail with UNKNOWN_MEMBER_ID",
      "at 30-60% 3-6 OffsetCommit requests to the coordinator fail with UNKNOWN_MEMBER_ID "
      "(librdkafka then rejoins the group)",
      "membership errors end the assignment epoch; its uncommitted work is redone",
      "the mock's answer is injected: the member really is still in the group", 0, NULL, 1},
     plan_commit_unknown_member},
    {{"commit-illegal-generation", "offset commits fail with ILLEGAL_GENERATION",
      "at 30-60% 3-6 OffsetCommit requests to the coordinator fail with ILLEGAL_GENERATION "
      "(librdkafka then rejoins the group)",
      "as commit-unknown-member-id",
      "the mock's answer is injected: the generation really is still current", 0, NULL, 1},
     plan_commit_illegal_generation},
    {{"coordinator-moved", "the group coordinator moves to another broker",
      "at 30-60% the group's coordinator moves from broker 1 to broker 3, and broker 1 is "
      "down for 1.5-3 s",
      "heartbeats and commits find the new coordinator; nothing is committed twice or "
      "past unconfirmed work",
      "the 2.0.2 mock answers NOT_COORDINATOR to JoinGroup, Heartbeat and SyncGroup on the "
      "old coordinator but still accepts OffsetCommit there; taking broker 1 down makes the "
      "move visible to commits too",
      0, NULL, 1},
     plan_coordinator_moved},
    {{"leader-change", "input and output partition leaders move twice",
      "at 25-45% the input partitions move to broker 2 and the output ones to broker 3; at "
      "55-75% the input ones move to broker 3 and the output ones to broker 1",
      "fetches and produces follow the new leaders (NOT_LEADER_FOR_PARTITION, metadata "
      "refresh); no event is skipped",
      "the mock moves leadership instantly (no ISR, no data to replicate)", 0, NULL, 1},
     plan_leader_change},
    {{"second-consumer", "a second instance joins the group, later leaves",
      "at 20-35% a second instance of the service starts (rebalance: partitions are "
      "revoked and shared); at 65-80% it is stopped (another rebalance)",
      "work of a revoked partition is not committed by its old owner; the new owner "
      "resumes from the committed offset",
      "", 0, NULL, 0},
     plan_second_consumer},
    {{"sigkill-restart", "the service is killed mid-batch, three times",
      "at 20-35%, 45-60% and 70-85% the service's process group gets SIGKILL; it is "
      "restarted 0.2-1.5 s later",
      "nothing committed before its effect is confirmed: the killed batch is redone "
      "(duplicates allowed, losses not)",
      "command services only: a thread cannot be killed", 1, NULL, 0},
     plan_sigkill},
    {{"sigterm-redeploy", "the service is redeployed: SIGTERM, a grace period, a new start",
      "at 30-50% the service's process group gets SIGTERM (a loop: kdc_testkit_stopping()), "
      "as an orchestrator stops it to redeploy; it has the run's stop grace period (10 s) to "
      "exit, then gets SIGKILL; it is started again 0.2-1 s after it ended",
      "on SIGTERM the service finishes its batch, commits the offsets of what it confirmed "
      "and closes its consumer: the new instance resumes where it stopped and no event is "
      "processed twice (duplicated 0, --exactly-once holds); a service that commits "
      "periodically (enable.auto.commit) and dies on SIGTERM redoes what it processed since "
      "its last commit (duplicates, not losses)",
      "the orchestrator stops, then starts (a recreate, not a rolling update: an instance "
      "that starts before the old one stopped is second-consumer)",
      0, NULL, 0},
     plan_sigterm_redeploy},
    {{"poison-events", "5% malformed events mixed in",
      "5% of the events (drawn from the seed) have a malformed value",
      "each poison event is in the DLQ, with its identity and coordinates, before it is "
      "committed",
      "", 0, NULL, 0},
     plan_poison},
    {{"slow-processing", "the service stalls longer than max.poll.interval.ms",
      "max.poll.interval.ms=5000 is asked for; at 30-50% the service is stopped (SIGSTOP) "
      "for 7-8 s, then continued",
      "the stalled member loses its assignment (_MAX_POLL_EXCEEDED, session timeout); the "
      "batch it held is not committed by it",
      "a stall is made with SIGSTOP, which also stops librdkafka's heartbeats: the session "
      "times out too, as it would for a process stalled by a GC pause or swapping; command "
      "services only",
      1, NULL, 0},
     plan_slow_processing},
    {{"sink-outage", "the service's database is locked by another process for a while",
      "the service writes each event's effect to an SQLite database (KDC_HARNESS_SINK); at "
      "30-50% the harness holds an exclusive lock on it (BEGIN EXCLUSIVE) for 2-4 s: the "
      "service's writes fail with SQLITE_BUSY",
      "a busy database is a transient failure: the event is not committed; it is retried "
      "or the service halts, and its row is written once the lock is gone",
      "", 0, "sqlite", 0},
     plan_sink_outage},
    {{"sink-full", "the service's database is full for a while",
      "the service writes each event's effect to an SQLite database (KDC_HARNESS_SINK); at "
      "30-50%, for 2-4 s, every insert into its table fails with SQLITE_FULL",
      "a full database is a transient failure (a full disk is freed): the event is not "
      "committed; it is retried or the service halts",
      "without root no filesystem can be filled for one process, and PRAGMA max_page_count "
      "limits only the connection that sets it: the harness sets the table's AUTOINCREMENT "
      "sequence to its largest value, so SQLite itself answers SQLITE_FULL to every insert",
      0, "sqlite", 0},
     plan_sink_full},
    {{"sink-rejects", "the service's database rejects some writes while others succeed",
      "the service writes each event's effect to an SQLite database (KDC_HARNESS_SINK); at "
      "20-40%, for 3-5 s, a trigger rejects the rows of one event id in ten (those ending "
      "in 3): their inserts fail with SQLITE_CONSTRAINT, the others succeed",
      "a write the database refuses for the event's content is a poison message: the event "
      "goes to the DLQ (confirmed) before it is committed; never committed without a row "
      "or a DLQ record",
      "", 0, "sqlite", 0},
     plan_sink_rejects},
    {{"sink-postgresql-down", "the service's PostgreSQL server is stopped for a while",
      "the service writes each event's effect to a PostgreSQL server of the run's own "
      "(KDC_HARNESS_SINK=postgresql:CONNINFO); at 30-50% the server is stopped (fast "
      "shutdown: open transactions rolled back, connections closed, new ones refused) and "
      "started again 2-4 s later",
      "a database that is down is a transient failure: the event is not committed; the "
      "service reconnects and retries, or halts",
      "", 0, "postgresql", 0},
     plan_postgresql_down},
    {{"sink-postgresql-revoked", "the service's INSERT privilege is revoked for a while",
      "the service writes each event's effect to a PostgreSQL server of the run's own; at "
      "30-50% its role's INSERT privilege on the table is revoked for 2-4 s: inserts fail "
      "with SQLSTATE 42501 (insufficient_privilege)",
      "a refused write that is not the event's fault is not a poison message: the event "
      "is not committed; it is retried, or the service halts",
      "", 0, "postgresql", 0},
     plan_postgresql_revoked},
};

size_t kdc_testkit_scenario_count(void) {
        return sizeof scenarios / sizeof scenarios[0];
}

const kdc_testkit_scenario_t *kdc_testkit_scenario(size_t i) {
        return i < kdc_testkit_scenario_count() ? &scenarios[i].pub : NULL;
}

const struct tk_scenario *tk_scenario_find(const char *name) {
        for (size_t i = 0; name && i < kdc_testkit_scenario_count(); i++)
                if (strcmp(scenarios[i].pub.name, name) == 0)
                        return &scenarios[i];
        return NULL;
}

const kdc_testkit_scenario_t *kdc_testkit_scenario_find(const char *name) {
        const struct tk_scenario *s = tk_scenario_find(name);

        return s ? &s->pub : NULL;
}

void tk_plan_make(const struct tk_scenario *s, uint64_t seed, struct tk_plan *plan) {
        unsigned short rng[3];
        uint64_t h = 1469598103934665603ull; /* FNV-1a of the name, mixed with the seed */

        for (const char *c = s->pub.name; *c; c++)
                h = (h ^ (unsigned char)*c) * 1099511628211ull;
        h ^= seed * 0x9e3779b97f4a7c15ull;
        rng[0] = (unsigned short)h;
        rng[1] = (unsigned short)(h >> 16);
        rng[2] = (unsigned short)(h >> 32);

        memset(plan, 0, sizeof *plan);
        /* Fast rebalances on the mock: it waits session.timeout.ms - 1 s
         * for members to rejoin, and evicts a dead one after the session
         * timeout. */
        plan->session_timeout_ms = 4000;
        plan->heartbeat_interval_ms = 500;
        s->plan(plan, rng);
}

void tk_step_describe(const struct tk_step *st, const char *const topics[3], char *buf,
                      size_t size) {
        switch (st->action) {
        case TK_BROKER_DOWN:
        case TK_BROKER_UP:
                if (st->broker < 0)
                        snprintf(buf, size, "every broker %s",
                                 st->action == TK_BROKER_DOWN ? "down" : "up");
                else
                        snprintf(buf, size, "broker %d %s", st->broker,
                                 st->action == TK_BROKER_DOWN ? "down" : "up");
                break;
        case TK_PUSH_ERRORS:
                snprintf(buf, size, "%d x %s on %s requests to broker %d%s", st->count,
                         rd_kafka_err2name(st->err),
                         st->apikey == TK_APIKEY_PRODUCE ? "Produce" : "OffsetCommit", st->broker,
                         st->rtt_ms ? " (each after a delay)" : "");
                break;
        case TK_SET_COORDINATOR:
                snprintf(buf, size, "group coordinator moved to broker %d", st->broker);
                break;
        case TK_SET_LEADERS:
                snprintf(buf, size, "leader of every %s partition moved to broker %d",
                         topics[st->role], st->broker);
                break;
        case TK_KILL:
                snprintf(buf, size, "SIGKILL instance %d (restart in %d ms)", st->instance + 1,
                         st->delay_ms);
                break;
        case TK_PAUSE:
                snprintf(buf, size, "SIGSTOP instance %d", st->instance + 1);
                break;
        case TK_RESUME:
                snprintf(buf, size, "SIGCONT instance %d", st->instance + 1);
                break;
        case TK_START:
                snprintf(buf, size, "start instance %d", st->instance + 1);
                break;
        case TK_STOP:
                snprintf(buf, size, "stop instance %d", st->instance + 1);
                break;
        case TK_REDEPLOY:
                snprintf(buf, size,
                         "redeploy instance %d: SIGTERM, its grace period, start "
                         "again %d ms after it ended",
                         st->instance + 1, st->delay_ms);
                break;
        case TK_SINK_LOCK:
                snprintf(buf, size, "sink locked by the harness (BEGIN EXCLUSIVE): SQLITE_BUSY");
                break;
        case TK_SINK_UNLOCK:
                snprintf(buf, size, "sink unlocked");
                break;
        case TK_SINK_FULL:
                snprintf(buf, size, "sink full: inserts fail with SQLITE_FULL");
                break;
        case TK_SINK_ROOM:
                snprintf(buf, size, "sink has room again");
                break;
        case TK_SINK_REJECT:
                snprintf(buf, size,
                         "sink rejects the rows of event ids ending in 3 "
                         "(SQLITE_CONSTRAINT)");
                break;
        case TK_SINK_ACCEPT:
                snprintf(buf, size, "sink accepts every row again");
                break;
        case TK_SINK_STOP:
                snprintf(buf, size, "sink's PostgreSQL server stopped (fast shutdown)");
                break;
        case TK_SINK_START:
                snprintf(buf, size, "sink's PostgreSQL server started");
                break;
        case TK_SINK_REVOKE:
                snprintf(buf, size, "INSERT on the sink's table revoked from the service");
                break;
        case TK_SINK_GRANT:
                snprintf(buf, size, "INSERT on the sink's table granted again");
                break;
        }
}
