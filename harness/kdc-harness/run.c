/* One run, start to verdict: cluster, service, warm-up, paced events and
 * the fault schedule, the end of the run, read-back and the checker. */
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <kdc/dlq.h>

#include "internal.h"

#define TK_WARMUP_MS 60000     /* wait this long at most for the service to start working */
#define TK_SETTLE_MS 1000      /* after every event is committed, let outputs land */
#define TK_DRAIN_MS 60000      /* for the input events' own delivery reports */

int64_t tk_now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

void kdc_testkit_options_init(kdc_testkit_options_t *o) {
        if (!o)
                return;
        memset(o, 0, sizeof *o);
        o->events = 1000;
        o->seed = 1;
        o->partitions = 4;
        o->input_topic = "kdc.input";
        o->output_topic = "kdc.output";
        o->dlq_topic = "kdc.dlq";
        o->group = "kdc-service";
        o->rate = 1000;
        o->timeout_ms = 300000;
        o->idle_ms = 20000;
        o->stop_grace_ms = 10000;
        o->service_fd = -1;
}

static int problem(char *errstr, size_t size, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int problem(char *errstr, size_t size, const char *fmt, ...) {
        va_list ap;

        if (errstr && size) {
                va_start(ap, fmt);
                vsnprintf(errstr, size, fmt, ap);
                va_end(ap);
        }
        return KDC_ERR_INVALID;
}

int kdc_testkit_options_validate(const kdc_testkit_options_t *o, char *errstr,
                                 size_t errstr_size) {
        static const char *const role[3] = {"input", "output", "DLQ"};

        if (errstr && errstr_size)
                errstr[0] = '\0';
        if (!o)
                return problem(errstr, errstr_size, "no options");
        if (o->seed > (uint64_t)INT64_MAX)
                return problem(errstr, errstr_size,
                               "seed: %" PRIu64 " is above %" PRId64 " (reports and the command "
                               "line carry it as a signed 64-bit integer)",
                               o->seed, INT64_MAX);
        if (o->events < 1 || o->events > KDC_TESTKIT_EVENTS_MAX)
                return problem(errstr, errstr_size, "events: %" PRId64 " is not in 1..%d",
                               o->events, KDC_TESTKIT_EVENTS_MAX);
        if (o->partitions < 1 || o->partitions > KDC_TESTKIT_PARTITIONS_MAX)
                return problem(errstr, errstr_size, "partitions: %d is not in 1..%d", o->partitions,
                               KDC_TESTKIT_PARTITIONS_MAX);
        const char *topics[3] = {o->input_topic, o->output_topic, o->dlq_topic};
        for (int i = 0; i < 3; i++) {
                if (kdc_topic_name_check(topics[i]) < 0)
                        return problem(errstr, errstr_size,
                                       "%s topic '%.*s' is not a topic name (1 to %d "
                                       "characters of A-Z a-z 0-9 . _ -, not . or ..)",
                                       role[i], 260, topics[i] ? topics[i] : "(null)",
                                       KDC_DLQ_TOPIC_MAX);
                for (int j = 0; j < i; j++)
                        if (!strcmp(topics[i], topics[j]))
                                return problem(errstr, errstr_size,
                                               "the %s and %s topics are both '%s': each role "
                                               "needs a topic of its own",
                                               role[j], role[i], topics[i]);
        }
        if (!o->group || !*o->group)
                return problem(errstr, errstr_size, "the consumer group is empty");
        if (o->rate < 1)
                return problem(errstr, errstr_size, "rate: %d events per second is not >= 1",
                               o->rate);
        if (o->timeout_ms < 1000)
                return problem(errstr, errstr_size, "timeout: %d ms is not >= 1000",
                               o->timeout_ms);
        if (o->idle_ms < 100)
                return problem(errstr, errstr_size, "idle: %d ms is not >= 100", o->idle_ms);
        if (o->bootstrap_servers && !*o->bootstrap_servers)
                return problem(errstr, errstr_size, "the bootstrap servers are empty");
        if (o->stop_grace_ms < 0)
                return problem(errstr, errstr_size, "stop grace: %d ms is negative",
                               o->stop_grace_ms);
        return 0;
}

/* A service that exited (or could not be started again) this many times
 * without ever committing or writing anything is crash-looping: the run
 * ends there rather than at the idle timeout. */
#define TK_CRASH_LOOP_EXITS 5

struct tk_run {
        kdc_testkit_options_t o;
        const struct tk_scenario *scenario;
        struct tk_plan plan;
        struct tk_cluster cluster;
        struct tk_workload w;
        struct tk_probe probe;
        struct tk_sink sink; /* plan.sink: the service's downstream store */
        struct tk_instance inst[TK_MAX_INSTANCES];
        int ninst;
        struct tk_result *r;
        int64_t t0;
        int64_t sampled_at; /* the timeline's last sample (ms) */
        int crash_loop; /* TK_CRASH_LOOP_EXITS exits, nothing ever moved */
        char *stats_dir; /* the services' KDC_HARNESS_STATS files */
};

/* A point of the timeline: what the probe and the workload say now. */
static void sample(struct tk_run *run, int64_t now) {
        struct tk_sample s = {(int32_t)(now - run->t0), run->w.confirmed, 0, 0, -1};
        int64_t changed_at;

        tk_probe_read(&run->probe, &s.committed, &s.written, &changed_at);
        s.effects = tk_probe_effects(&run->probe);
        run->sampled_at = now;
        (void)tk_timeline_sample(&run->r->tl, &s); /* a point short is no harm */
}

static void run_log(struct tk_run *run, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void run_log(struct tk_run *run, const char *fmt, ...) {
        va_list ap;

        if (!run->o.log)
                return;
        fprintf(run->o.log, "kdc-harness: +%.2fs ", (tk_now_ms() - run->t0) / 1000.0);
        va_start(ap, fmt);
        vfprintf(run->o.log, fmt, ap);
        va_end(ap);
        fputc('\n', run->o.log);
        fflush(run->o.log);
}

int tk_result_add_fault(struct tk_result *r, const char *line) {
        char **p = realloc(r->faults, (r->nfaults + 1) * sizeof *p);

        if (!p)
                return KDC_ERR_NOMEM;
        r->faults = p;
        if (!(p[r->nfaults] = strdup(line)))
                return KDC_ERR_NOMEM;
        r->nfaults++;
        return 0;
}

static void apply(struct tk_run *run, const struct tk_step *st) {
        char what[192], line[448];
        struct tk_instance *in = &run->inst[st->instance];

        switch (st->action) {
        case TK_KILL:
                tk_instance_kill(in, st->delay_ms);
                break;
        case TK_PAUSE:
                tk_instance_pause(in, 1);
                break;
        case TK_RESUME:
                tk_instance_pause(in, 0);
                break;
        case TK_START:
                tk_instance_start(in);
                break;
        case TK_STOP:
                tk_instance_stop(in, run->o.stop_grace_ms);
                break;
        case TK_REDEPLOY:
                tk_instance_redeploy(in, run->o.stop_grace_ms, st->delay_ms);
                break;
        case TK_SINK_LOCK:
        case TK_SINK_UNLOCK:
        case TK_SINK_FULL:
        case TK_SINK_ROOM:
        case TK_SINK_REJECT:
        case TK_SINK_ACCEPT:
        case TK_SINK_STOP:
        case TK_SINK_START:
        case TK_SINK_REVOKE:
        case TK_SINK_GRANT:
                if (tk_sink_apply(&run->sink, st) != 0)
                        run_log(run, "the sink's fault could not be applied: %s",
                                tk_sink_error(&run->sink));
                break;
        default:
                tk_cluster_apply(&run->cluster, st);
        }
        int64_t committed, outputs, changed_at;

        tk_probe_read(&run->probe, &committed, &outputs, &changed_at);
        tk_step_describe(st, run->cluster.topics, what, sizeof what);
        snprintf(line, sizeof line,
                 "+%.2fs (%" PRId64 "%% of the events produced, %" PRId64 " committed, %" PRId64
                 " output and DLQ records) %s",
                 (tk_now_ms() - run->t0) / 1000.0, run->w.enqueued * 100 / run->w.n, committed,
                 outputs, what);
        run->r->pub.faults++; /* applied, whether or not its line fits in the log */
        sample(run, tk_now_ms());
        (void)tk_timeline_mark(&run->r->tl, (int32_t)(tk_now_ms() - run->t0), st, what);
        if (tk_result_add_fault(run->r, line) < 0)
                run_log(run, "fault: %s (not in the fault log: out of memory)", what);
        else
                run_log(run, "fault: %s", what);
}

/* Set by kdc_testkit_interrupt() (a signal handler): every run ends. */
static volatile sig_atomic_t interrupted;

void kdc_testkit_interrupt(void) {
        interrupted = 1;
}

static void supervise(struct tk_run *run) {
        int64_t now = tk_now_ms();

        if (interrupted)
                return; /* no restart: the run is ending */

        for (int i = 0; i < run->ninst; i++)
                tk_instance_check(&run->inst[i], now);
}

/* Serve the producer and the instances for about ms; notice a crash loop. */
static void tick(struct tk_run *run, int ms) {
        int64_t committed, outputs, changed_at;
        int exits = 0;

        tk_workload_poll(&run->w, ms);
        supervise(run);
        if (tk_now_ms() - run->sampled_at >= TK_TIMELINE_PERIOD_MS)
                sample(run, tk_now_ms());
        for (int i = 0; i < run->ninst; i++)
                exits += run->inst[i].exits + run->inst[i].failed_starts;
        if (!run->crash_loop && exits >= TK_CRASH_LOOP_EXITS) {
                tk_probe_read(&run->probe, &committed, &outputs, &changed_at);
                if (committed == 0 && outputs == 0) {
                        run->crash_loop = 1;
                        run_log(run, "the service exited or could not be started %d times "
                                     "without committing or writing anything: a crash loop",
                                exits);
                }
        }
}

static int result_new(struct tk_run *run) {
        struct tk_result *r = calloc(1, sizeof *r);

        if (!r || !(r->scenario = strdup(run->scenario->pub.name))) {
                free(r);
                return KDC_ERR_NOMEM;
        }
        r->pub.scenario = r->scenario;
        r->pub.seed = run->o.seed;
        r->exactly_once = run->o.exactly_once;
        r->require_complete = run->o.require_complete;
        r->events_requested = run->o.events;
        run->r = r;
        return 0;
}

static int fill_result(struct tk_run *run, const struct tk_history *h, const struct tk_verdict *v) {
        struct tk_result *r = run->r;
        kdc_testkit_result_t *p = &r->pub;

        p->events = v->events;
        p->poison = v->poison;
        p->committed = v->committed;
        p->output_records = h->output_records;
        p->dlq_records = h->dlq_records;
        p->processed = v->processed;
        p->dead_lettered = v->dead_lettered;
        p->lost = v->lost;
        p->duplicated = v->duplicated;
        p->unprocessed = v->unprocessed;
        p->dlq_without_identity = h->dlq_without_identity;
        p->foreign_records = h->foreign_records;
        for (int i = 0; i < run->ninst; i++) {
                p->starts += run->inst[i].starts;
                p->exits += run->inst[i].exits;
                p->kills += run->inst[i].kills;
                p->stuck += run->inst[i].stuck;
        }
        p->dropped_records = h->dropped_records;
        if (run->plan.sink != TK_SINK_NONE) {
                p->sink = run->plan.sink == TK_SINK_SQLITE ? "sqlite" : "postgresql";
                p->effected = v->effected;
                p->duplicate_effects = v->duplicate_effects;
        }
        p->failure = tk_judge(v, h->output_records, h->dlq_records, h->dropped_records,
                              r->exactly_once, r->require_complete);
        p->valid = p->failure == NULL;
        r->partitions = h->partitions;
        r->committed = malloc((size_t)h->partitions * sizeof *r->committed);
        if (!r->committed)
                return KDC_ERR_NOMEM;
        memcpy(r->committed, h->committed, (size_t)h->partitions * sizeof *r->committed);
        /* the last point: what was read back */
        struct tk_sample last = {(int32_t)(tk_now_ms() - run->t0), v->events, v->committed,
                                 h->output_records + h->dlq_records,
                                 run->plan.sink != TK_SINK_NONE ? p->effect_rows : -1};
        (void)tk_timeline_sample(&r->tl, &last);
        if (tk_timeline_end(&r->tl, (int32_t)(tk_now_ms() - run->t0), run->t0, run->w.ev, run->w.n,
                            v->lists[KDC_TESTKIT_LOST], v->nlists[KDC_TESTKIT_LOST],
                            v->lists[KDC_TESTKIT_DUPLICATED],
                            v->nlists[KDC_TESTKIT_DUPLICATED]) != 0)
                return KDC_ERR_NOMEM;
        for (int l = 0; l < 4; l++) {
                r->ids[l] = calloc(v->nlists[l] + 1, sizeof *r->ids[l]);
                if (!r->ids[l])
                        return KDC_ERR_NOMEM;
                for (size_t i = 0; i < v->nlists[l]; i++) {
                        char id[32];
                        tk_event_id(v->lists[l][i], id, sizeof id);
                        if (!(r->ids[l][i] = strdup(id)))
                                return KDC_ERR_NOMEM;
                        r->nids[l]++;
                }
        }
        return 0;
}

/* A SIGKILL, SIGSTOP or redeploy is meant for a service at work: it waits
 * until the instance runs and has moved something (a commit, an output)
 * since it started, or has run for TK_BUSY_WAIT_MS without. */
#define TK_BUSY_WAIT_MS 10000

static int instance_busy(struct tk_run *run, const struct tk_instance *in) {
        int64_t committed, outputs, changed_at;

        if (!in->running)
                return 0;
        tk_probe_read(&run->probe, &committed, &outputs, &changed_at);
        return changed_at > in->started_at || tk_now_ms() - in->started_at >= TK_BUSY_WAIT_MS;
}

static int step_due(struct tk_run *run, const struct tk_step *st, int64_t last_step_at) {
        int64_t now = tk_now_ms();
        int due = st->at >= 0 ? now >= last_step_at &&
                                    (double)run->w.enqueued >= st->at * (double)run->w.n
                              : now >= last_step_at + st->after_ms;

        if (due && (st->action == TK_KILL || st->action == TK_PAUSE || st->action == TK_REDEPLOY))
                due = instance_busy(run, &run->inst[st->instance]);
        return due;
}

static int run_scenario(struct tk_run *run) {
        const kdc_testkit_options_t *o = &run->o;
        int64_t deadline = run->t0 + o->timeout_ms;
        int64_t warm = o->events / 20 > 0 ? o->events / 20 : 1;
        int64_t committed, outputs, changed_at, now, last_step_at, quiet_since;
        int k = 0, rc;

        run_log(run, "scenario %s, seed %" PRIu64 ", %" PRId64 " events, %s %s",
                run->scenario->pub.name, o->seed, o->events,
                run->cluster.remote ? "cluster" : "mock cluster", run->cluster.bootstraps);
        if ((rc = tk_instance_start(&run->inst[0])) != 0)
                return rc;

        /* Warm-up: the first 5% of the events, then wait until the service
         * shows it works (a commit or an output), so that faults hit a
         * service that is processing, not one still joining its group. */
        tk_workload_produce(&run->w, warm);
        do {
                tick(run, 20);
                tk_probe_read(&run->probe, &committed, &outputs, &changed_at);
        } while (committed == 0 && outputs == 0 && tk_now_ms() < run->t0 + TK_WARMUP_MS &&
                 tk_now_ms() < deadline && !run->crash_loop && !interrupted);
        run_log(run, "warm-up done (%s)",
                committed || outputs ? "the service works" : "no sign of the service yet");

        /* The rest of the events at the configured rate; the plan's steps
         * when their time comes. */
        int64_t start = tk_now_ms();
        last_step_at = start;
        while ((run->w.enqueued < run->w.n || k < run->plan.nsteps) && tk_now_ms() < deadline &&
               !run->crash_loop && !interrupted) {
                int64_t target = warm + (tk_now_ms() - start) * o->rate / 1000;
                tk_workload_produce(&run->w, target);
                while (k < run->plan.nsteps && step_due(run, &run->plan.steps[k], last_step_at)) {
                        apply(run, &run->plan.steps[k++]);
                        last_step_at = tk_now_ms();
                }
                tick(run, 10);
        }
        /* Every fault is over: brokers up (error stacks drain by use), the
         * sink unlocked, with room, accepting every row. */
        tk_cluster_heal(&run->cluster);
        tk_sink_heal(&run->sink);
        for (int i = 0; i < run->ninst; i++)
                tk_instance_pause(&run->inst[i], 0);
        run_log(run, "%" PRId64 " of %" PRId64 " events produced, %d of %d fault steps applied",
                run->w.enqueued, run->w.n, k, run->plan.nsteps);
        if (interrupted) {
                run_log(run, "interrupted: no verdict");
                return KDC_ERR_TIMEOUT;
        }
        if (tk_workload_drain(&run->w, TK_DRAIN_MS) != 0 && run->w.confirmed == 0)
                return KDC_ERR_TIMEOUT;

        /* The end: every event committed (then a moment for outputs to land),
         * or nothing moves for idle_ms, or the deadline. */
        quiet_since = tk_now_ms();
        int64_t all_done_at = -1;
        for (;;) {
                tick(run, 50);
                now = tk_now_ms();
                if (interrupted) {
                        run_log(run, "interrupted: no verdict");
                        return KDC_ERR_TIMEOUT;
                }
                if (run->crash_loop) {
                        run->r->pub.end_reason = "crash loop";
                        break;
                }
                tk_probe_read(&run->probe, &committed, &outputs, &changed_at);
                if (committed >= run->w.confirmed) {
                        if (all_done_at < 0)
                                all_done_at = now;
                        if (now - all_done_at >= TK_SETTLE_MS) {
                                run->r->pub.end_reason = "all events committed";
                                break;
                        }
                } else {
                        all_done_at = -1;
                }
                if (now - (changed_at > quiet_since ? changed_at : quiet_since) >= o->idle_ms) {
                        run->r->pub.end_reason = "idle";
                        break;
                }
                if (now >= deadline) {
                        run->r->pub.end_reason = "deadline";
                        break;
                }
        }
        run_log(run, "end: %s", run->r->pub.end_reason);
        return 0;
}

/* A Kafka broker refuses a session timeout below its
 * group.min.session.timeout.ms, 6 s by default (INVALID_SESSION_TIMEOUT: the
 * service could never join); the mock accepts the 4 s the plans ask for. And
 * librdkafka refuses max.poll.interval.ms below session.timeout.ms. */
#define TK_BROKER_MIN_SESSION_TIMEOUT_MS 6000

static void plan_for_existing_cluster(struct tk_plan *p) {
        if (p->session_timeout_ms < TK_BROKER_MIN_SESSION_TIMEOUT_MS)
                p->session_timeout_ms = TK_BROKER_MIN_SESSION_TIMEOUT_MS;
        if (p->max_poll_interval_ms && p->max_poll_interval_ms < p->session_timeout_ms)
                p->max_poll_interval_ms = p->session_timeout_ms;
}

static int run(const kdc_testkit_options_t *options, const char *scenario, char *const argv[],
               kdc_testkit_loop_t *loop, void *opaque, kdc_testkit_result_t **resultp) {
        struct tk_run *run;
        struct tk_history h = {0};
        struct tk_verdict v = {0};
        kdc_testkit_env_t env;
        int rc;

        if (!resultp)
                return KDC_ERR_INVALID;
        *resultp = NULL;
        if ((argv && !argv[0]) || (!argv && !loop))
                return KDC_ERR_INVALID;
        if (!(run = calloc(1, sizeof *run)))
                return KDC_ERR_NOMEM;
        if (options)
                run->o = *options;
        else
                kdc_testkit_options_init(&run->o);
        run->scenario = tk_scenario_find(scenario);
        if (!run->scenario || kdc_testkit_options_validate(&run->o, NULL, 0) != 0 ||
            (loop && run->scenario->pub.needs_process) ||
            (run->o.bootstrap_servers && run->scenario->pub.needs_broker_control)) {
                free(run);
                return KDC_ERR_INVALID;
        }
        if ((rc = result_new(run)) != 0) {
                free(run);
                return rc;
        }
        run->t0 = tk_now_ms();
        tk_plan_make(run->scenario, run->o.seed, &run->plan);
        if (run->o.bootstrap_servers)
                plan_for_existing_cluster(&run->plan);
        if (interrupted) {
                rc = KDC_ERR_TIMEOUT;
                goto out;
        }

        if ((rc = tk_cluster_start(&run->cluster, &run->o)) != 0)
                goto out;
        if ((rc = tk_workload_new(&run->w, &run->cluster, run->o.events, run->plan.poison_ratio,
                                  run->o.seed)) != 0)
                goto out_cluster;
        memset(&env, 0, sizeof env);
        env.bootstrap_servers = run->cluster.bootstraps;
        /* the names the cluster has: unique ones on an existing cluster */
        env.input_topic = run->cluster.topics[TK_INPUT];
        env.output_topic = run->cluster.topics[TK_OUTPUT];
        env.dlq_topic = run->cluster.topics[TK_DLQ];
        env.group = run->cluster.group;
        env.session_timeout_ms = run->plan.session_timeout_ms;
        env.heartbeat_interval_ms = run->plan.heartbeat_interval_ms;
        env.max_poll_interval_ms = run->plan.max_poll_interval_ms;
        env.message_timeout_ms = run->plan.message_timeout_ms;
        env.scenario = run->scenario->pub.name;
        if (run->plan.sink != TK_SINK_NONE) {
                if ((rc = tk_sink_create(&run->sink, run->plan.sink)) != 0) {
                        run_log(run, "could not create the sink's database: %s",
                                tk_sink_error(&run->sink));
                        goto out_workload;
                }
                env.sink = run->sink.env;
        }
        run->ninst = TK_MAX_INSTANCES;
        for (int i = 0; i < run->ninst; i++)
                if ((rc = tk_instance_init(&run->inst[i], i, &env, argv, loop, opaque,
                                           run->o.service_fd, run->o.log, run->t0)) != 0)
                        goto out_instances;
        /* Without a directory the services are told no statistics path. */
        if (tk_stats_dir_new(&run->stats_dir) != 0)
                run_log(run, "no directory for the services' statistics");
        for (int i = 0; i < run->ninst; i++)
                run->inst[i].stats_dir = run->stats_dir;
        if ((rc = tk_probe_start(&run->probe, &run->cluster,
                                 run->plan.sink != TK_SINK_NONE ? &run->sink : NULL)) != 0)
                goto out_instances;

        rc = run_scenario(run);

        for (int i = 0; i < run->ninst; i++)
                tk_instance_stop(&run->inst[i], run->o.stop_grace_ms);
        tk_probe_stop(&run->probe); /* joined: its counts are read below */
        if (run->probe.counting)
                run_log(run,
                        "the sink's rows counted %d times (%d skipped: busy or stopped), "
                        "%.3f ms per count",
                        run->probe.effects_samples, run->probe.effects_skipped,
                        run->probe.effects_samples
                            ? run->probe.effects_us / 1000.0 / run->probe.effects_samples
                            : 0.0);
        else if (run->plan.sink != TK_SINK_NONE)
                run_log(run, "the sink's rows could not be counted during the run: no timeline "
                             "of them");
        if (run->stats_dir && tk_stats_collect(run->stats_dir, &run->r->service_stats) == 0)
                run->r->pub.service_stats = run->r->service_stats;
        if (rc == 0) {
                tk_cluster_heal(&run->cluster);
                if (tk_history_read(&h, &run->cluster, &run->w) != 0) {
                        run_log(run, "could not read back outputs and committed offsets");
                        rc = KDC_ERR_TIMEOUT;
                }
        }
        if (rc == 0 && run->plan.sink != TK_SINK_NONE) {
                tk_sink_heal(&run->sink);
                if (tk_sink_read(&run->sink, &run->w, &run->r->pub.effect_rows,
                                 &run->r->pub.foreign_effects) != 0) {
                        run_log(run, "could not read back the sink: %s", tk_sink_error(&run->sink));
                        rc = KDC_ERR_TIMEOUT;
                }
        }
        if (rc == 0 && (rc = tk_check_effects(run->w.ev, run->w.n, h.committed, h.partitions,
                                              run->plan.sink != TK_SINK_NONE, &v)) == 0)
                rc = fill_result(run, &h, &v);
        tk_verdict_free(&v);
        tk_history_free(&h);
out_instances:
        for (int i = 0; i < run->ninst; i++)
                tk_instance_destroy(&run->inst[i]);
        if (run->stats_dir) {
                char *unread = NULL;

                /* Not collected (the run failed before): removed all the same. */
                if (!run->r->service_stats)
                        (void)tk_stats_collect(run->stats_dir, &unread);
                free(unread);
                free(run->stats_dir);
        }
        tk_sink_destroy(&run->sink);
out_workload:
        tk_workload_destroy(&run->w);
out_cluster:
        tk_cluster_stop(&run->cluster);
out:
        run->r->pub.duration_ms = tk_now_ms() - run->t0;
        if (rc == 0) {
                *resultp = &run->r->pub;
        } else {
                kdc_testkit_result_destroy(&run->r->pub);
        }
        free(run);
        return rc;
}

int kdc_testkit_run_command(const kdc_testkit_options_t *options, const char *scenario,
                            char *const argv[], kdc_testkit_result_t **resultp) {
        if (resultp)
                *resultp = NULL;
        if (!argv)
                return KDC_ERR_INVALID;
        return run(options, scenario, argv, NULL, NULL, resultp);
}

int kdc_testkit_run_loop(const kdc_testkit_options_t *options, const char *scenario,
                         kdc_testkit_loop_t *loop, void *opaque, kdc_testkit_result_t **resultp) {
        if (resultp)
                *resultp = NULL;
        if (!loop)
                return KDC_ERR_INVALID;
        return run(options, scenario, NULL, loop, opaque, resultp);
}

static const struct tk_result *priv(const kdc_testkit_result_t *r) {
        return (const struct tk_result *)r; /* pub is the first member */
}

const char *kdc_testkit_result_event(const kdc_testkit_result_t *result, kdc_testkit_list_t list,
                                     size_t i) {
        if (!result || (unsigned)list > 3 || i >= priv(result)->nids[list])
                return NULL;
        return priv(result)->ids[list][i];
}

const char *kdc_testkit_result_fault(const kdc_testkit_result_t *result, size_t i) {
        if (!result || i >= priv(result)->nfaults)
                return NULL;
        return priv(result)->faults[i];
}

int64_t kdc_testkit_result_committed(const kdc_testkit_result_t *result, int32_t partition) {
        if (!result || partition < 0 || partition >= priv(result)->partitions)
                return KDC_ERR_INVALID;
        return priv(result)->committed[partition] >= 0 ? priv(result)->committed[partition]
                                                       : KDC_ERR_NOENT;
}

void kdc_testkit_result_destroy(kdc_testkit_result_t *result) {
        struct tk_result *r = (struct tk_result *)result;

        if (!r)
                return;
        for (int l = 0; l < 4; l++) {
                for (size_t i = 0; i < r->nids[l]; i++)
                        free(r->ids[l][i]);
                free(r->ids[l]);
        }
        for (size_t i = 0; i < r->nfaults; i++)
                free(r->faults[i]);
        free(r->faults);
        free(r->committed);
        free(r->service_stats);
        tk_timeline_free(&r->tl);
        free(r->scenario);
        free(r);
}
