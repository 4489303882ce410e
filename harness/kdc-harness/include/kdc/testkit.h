/**
 * @file kdc/testkit.h
 * @brief kdc testkit: run a consume-process-produce service against
 *        librdkafka's mock cluster while faults are injected, and count what
 *        it lost, the way Jepsen counts.
 *
 * This is the C API behind the `kdc-harness` command (docs/kdc-harness.md). One
 * run (on an existing cluster instead, options->bootstrap_servers: step 1
 * creates topics and a group of unique names there, and only the scenarios
 * without needs_broker_control run):
 *  1. starts a mock cluster of three brokers on loopback
 *     (rd_kafka_mock_cluster_new()) and creates the input, output and
 *     dead-letter (DLQ) topics; broker 1 leads the input partitions and is
 *     the group coordinator, broker 2 leads the output partitions, broker 3
 *     the DLQ partition, so a fault can hit one role only;
 *  2. starts the service: a command (kdc_testkit_run_command(), a child
 *     process) or a loop function (kdc_testkit_run_loop(), a thread of the
 *     calling process), telling it the bootstrap servers, topics, group and
 *     client settings (kdc_testkit_env_t, or the environment variables named
 *     there);
 *  3. produces the input events, confirmed, at a steady rate: each has a
 *     unique id (key and header "event-id"); a scenario may mix in
 *     malformed (poison) ones;
 *  4. applies the scenario's faults on a schedule drawn from the seed, at
 *     fractions of the events produced;
 *  5. restarts the service whenever it exits (as an orchestrator would),
 *     and ends the run when every event is committed, when nothing moved
 *     for idle_ms, at the deadline, or when the service keeps exiting
 *     without ever doing anything (a crash loop); then stops the service
 *     (SIGTERM, or kdc_testkit_stopping() for a loop);
 *  6. reads back every output and DLQ record and the group's committed
 *     offsets, and counts (kdc_testkit_result_t):
 *     - lost: an event below its partition's committed offset with no
 *       output and no DLQ record (the service committed past it);
 *     - duplicated: an event with more than one output record;
 *     - unprocessed: an event at or above the committed offset at the end;
 *     - DLQ records without the original identity and coordinates (the
 *       kdc.* headers of kdc/dlq.h, checked with kdc_dlq_decode());
 *     a run is valid when nothing was lost and the service did something
 *     (kdc_testkit_result_t.valid, .failure).
 *
 * @par The service's side of the contract
 * - Read the input topic as a member of the given consumer group; write one
 *   output record per well-formed event to the output topic, and route
 *   poison events to the DLQ topic.
 * - An output record names its event by a header "event-id" (preferred) or
 *   by its key: copy the input's key or header.
 * - Input value: "amount=N" with N a decimal integer 1..1000000 is
 *   well-formed; anything else is poison.
 * - Honour the client settings it is given where it can (session timeout,
 *   heartbeat, max.poll.interval.ms, message.timeout.ms): scenarios use them
 *   to make faults bite within seconds.
 *
 * @par What the mock cluster can and cannot do (librdkafka 2.0.2)
 * Each scenario says, in kdc_testkit_scenario_t.mock_limits, where the mock
 * falls short and which equivalent is used. In general: error injection is
 * per request type (ApiKey) and per broker, not per topic; brokers can go
 * down and up and partitions and coordinators can move; offsets sent with
 * send_offsets_to_transaction() are not stored and read_committed consumers
 * see aborted records, so transactional (exactly-once) services cannot be
 * judged: every stored record counts as an output.
 *
 * @par Conventions
 * Functions that can fail return 0 or a negative KDC_ERR_* code
 * (kdc/error.h). Times are in milliseconds. The testkit is a separate
 * library (CMake target kdc::testkit) because, unlike libkdc, it starts
 * threads (a progress probe; loop services), spawns and signals child
 * processes, and hosts a mock cluster. It is installed with libkdc as a
 * static library, libkdc-testkit.a: find_package(kdc COMPONENTS testkit)
 * gives kdc::testkit (which also links jansson, libkdc and librdkafka).
 * Run one run at a time per process.
 */
#ifndef KDC_TESTKIT_H
#define KDC_TESTKIT_H

#include <stdint.h>
#include <stdio.h>

#include <kdc/error.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__) && __GNUC__ >= 4
#define KDC_TESTKIT_EXPORT __attribute__((visibility("default")))
#else
#define KDC_TESTKIT_EXPORT
#endif

/** Environment variables a command service receives (see kdc_testkit_env_t). */
#define KDC_TESTKIT_ENV_BOOTSTRAP "KAFKA_BOOTSTRAP_SERVERS"
#define KDC_TESTKIT_ENV_INPUT "KAFKA_INPUT_TOPIC"
#define KDC_TESTKIT_ENV_OUTPUT "KAFKA_OUTPUT_TOPIC"
#define KDC_TESTKIT_ENV_DLQ "KAFKA_DLQ_TOPIC"
#define KDC_TESTKIT_ENV_GROUP "KAFKA_GROUP_ID"
#define KDC_TESTKIT_ENV_SESSION_TIMEOUT "KAFKA_SESSION_TIMEOUT_MS"
#define KDC_TESTKIT_ENV_HEARTBEAT "KAFKA_HEARTBEAT_INTERVAL_MS"
#define KDC_TESTKIT_ENV_MAX_POLL "KAFKA_MAX_POLL_INTERVAL_MS"
#define KDC_TESTKIT_ENV_MESSAGE_TIMEOUT "KAFKA_MESSAGE_TIMEOUT_MS"
#define KDC_TESTKIT_ENV_SCENARIO "KDC_HARNESS_SCENARIO"
#define KDC_TESTKIT_ENV_INSTANCE "KDC_HARNESS_INSTANCE"
#define KDC_TESTKIT_ENV_SINK "KDC_HARNESS_SINK"
/** A file the service may write its libkdc statistics to (JSON,
 *  kdc_stats_write_json_file(), kdc/stats.h), at exit and periodically; a
 *  new path for each start. The report sums what every start wrote. */
#define KDC_TESTKIT_ENV_STATS "KDC_HARNESS_STATS"

/** Header carrying the event id on every input event. */
#define KDC_TESTKIT_EVENT_ID_HEADER "event-id"

/** Output formats of kdc_testkit_results_print(). */
typedef enum kdc_testkit_format_e {
        KDC_TESTKIT_TEXT = 0, /**< a few lines per scenario, for people */
        KDC_TESTKIT_JSON = 1  /**< one JSON document (see docs/kdc-harness.md) */
} kdc_testkit_format_t;

/** The most input events of a run (kdc_testkit_options_t.events). */
#define KDC_TESTKIT_EVENTS_MAX 10000000
/** The most partitions of the input and output topics
 *  (kdc_testkit_options_t.partitions). */
#define KDC_TESTKIT_PARTITIONS_MAX 64

/**
 * @brief Options of a run. Initialise with kdc_testkit_options_init(), then
 *        change what you need. Strings are borrowed for the run's duration.
 *        New fields are only ever appended.
 */
typedef struct kdc_testkit_options_s {
        /** Input events to produce (default 1000; 1..KDC_TESTKIT_EVENTS_MAX). */
        int64_t events;
        /** Seed of the fault schedule and of the poison events (default 1;
         *  at most INT64_MAX). The same seed gives the same schedule and the
         *  same events. */
        uint64_t seed;
        /** Partitions of the input and output topics (default 4;
         *  1..KDC_TESTKIT_PARTITIONS_MAX). */
        int partitions;
        /** Topic names (defaults "kdc.input", "kdc.output", "kdc.dlq"). */
        const char *input_topic, *output_topic, *dlq_topic;
        /** The service's consumer group (default "kdc-service"). */
        const char *group;
        /** Events per second produced after the warm-up (default 1000). */
        int rate;
        /** Whole run deadline, ms (default 300000). */
        int timeout_ms;
        /** After the last fault and the last event: end the run when the
         *  committed offsets and outputs have not moved for this long, ms
         *  (default 20000). */
        int idle_ms;
        /** Time a stopped service gets to exit before SIGKILL, ms (default
         *  10000). For a loop: how long to wait before reporting it stuck. */
        int stop_grace_ms;
        /** Non-zero: a duplicated event also makes the run invalid. */
        int exactly_once;
        /** Where to write one line per fault, restart and phase; NULL: none. */
        FILE *log;
        /** File descriptor for a command service's stdout and stderr; -1
         *  (default): the service writes to this process's stderr. */
        int service_fd;
        /** Non-zero: an event left unprocessed (not committed at the end)
         *  also makes the run invalid. */
        int require_complete;
        /** NULL (default): each run starts its own mock cluster. Otherwise
         *  "HOST:PORT,..." of an existing cluster: each run creates topics and
         *  a group of its own there (input_topic, output_topic, dlq_topic and
         *  group suffixed with "-PID-TIME-RANDOM", through the Admin API:
         *  rd_kafka_CreateTopics(), or auto-creation by a Metadata request
         *  where the cluster does not support it, as librdkafka 2.0.2's mock)
         *  and deletes them at the end (rd_kafka_DeleteTopics(),
         *  rd_kafka_DeleteGroups(); what the cluster refuses is said
         *  on log and left). Only scenarios without needs_broker_control
         *  run there. */
        const char *bootstrap_servers;
} kdc_testkit_options_t;

/** @brief Set every option to its default. NULL is ignored. */
KDC_TESTKIT_EXPORT void kdc_testkit_options_init(kdc_testkit_options_t *options);

/**
 * @brief Check @p options as kdc_testkit_run_command() does, and say what is
 *        wrong in words.
 * @param errstr       receives one sentence naming the first bad option
 *                     (NUL-terminated, truncated to @p errstr_size), or ""
 *                     when they are valid; may be NULL.
 * @returns 0, or KDC_ERR_INVALID (also for NULL @p options).
 */
KDC_TESTKIT_EXPORT int kdc_testkit_options_validate(const kdc_testkit_options_t *options,
                                                    char *errstr, size_t errstr_size);

/**
 * @brief A documented scenario (static storage, read-only).
 */
typedef struct kdc_testkit_scenario_s {
        const char *name;        /**< e.g. "produce-topic-authorization-failed" */
        const char *summary;     /**< one line */
        const char *faults;      /**< what is injected, and when */
        const char *expect;      /**< what a correct service does here */
        const char *mock_limits; /**< what the mock cannot do here ("" if
                                      nothing), and the equivalent used */
        int needs_process;       /**< SIGKILL/SIGSTOP: command services only */
        const char *sink;        /**< the database it gives the service
                                      (KDC_HARNESS_SINK): "sqlite",
                                      "postgresql" (needs a PostgreSQL
                                      server installed), or NULL: none */
        int needs_broker_control; /**< brokers down, injected request errors,
                                       moved leaders or coordinator: only on
                                       the embedded mock cluster, refused
                                       with options->bootstrap_servers */
} kdc_testkit_scenario_t;

/** @brief Number of scenarios. */
KDC_TESTKIT_EXPORT size_t kdc_testkit_scenario_count(void);

/** @brief Scenario @p i (0-based, in `kdc-harness list` order); NULL when
 *         out of range. */
KDC_TESTKIT_EXPORT const kdc_testkit_scenario_t *kdc_testkit_scenario(size_t i);

/** @brief The scenario named @p name; NULL if there is none. */
KDC_TESTKIT_EXPORT const kdc_testkit_scenario_t *
kdc_testkit_scenario_find(const char *name);

/**
 * @brief What a service instance is told; for a command service, the same
 *        values arrive as environment variables (KDC_TESTKIT_ENV_*; the
 *        client settings only when non-zero).
 */
typedef struct kdc_testkit_env_s {
        const char *bootstrap_servers; /**< KAFKA_BOOTSTRAP_SERVERS */
        const char *input_topic;       /**< KAFKA_INPUT_TOPIC */
        const char *output_topic;      /**< KAFKA_OUTPUT_TOPIC */
        const char *dlq_topic;         /**< KAFKA_DLQ_TOPIC */
        const char *group;             /**< KAFKA_GROUP_ID */
        /** Client settings the scenario wants (0: keep librdkafka's
         *  default): session.timeout.ms, heartbeat.interval.ms,
         *  max.poll.interval.ms, message.timeout.ms. */
        int session_timeout_ms, heartbeat_interval_ms;
        int max_poll_interval_ms, message_timeout_ms;
        const char *scenario; /**< KDC_HARNESS_SCENARIO */
        int instance;         /**< KDC_HARNESS_INSTANCE: 1, or 2 for a
                                   second consumer */
        /** KDC_HARNESS_SINK: in a sink scenario the store the service
         *  writes each well-formed event's effect to: "sqlite:PATH"
         *  (sink-outage, sink-full, sink-rejects) or "postgresql:CONNINFO"
         *  (sink-postgresql-down, sink-postgresql-revoked: a libpq
         *  connection string to a server of the run's own), a database
         *  whose table the harness created (
         *  effects(seq INTEGER PRIMARY KEY AUTOINCREMENT, event_id TEXT NOT
         *  NULL, amount INTEGER NOT NULL, written_at TEXT DEFAULT now), one
         *  row per effect, no unique key: a service that writes a row twice
         *  leaves two). NULL in the other scenarios (the variable is unset). */
        const char *sink;
        const char *stats_path; /**< KDC_HARNESS_STATS: where this start
                                     of the instance may write its libkdc
                                     statistics (JSON); NULL: nowhere */
} kdc_testkit_env_t;

/**
 * @brief A service loop run in a thread by kdc_testkit_run_loop().
 *
 * It must consume, process and commit until kdc_testkit_stopping(env) is
 * non-zero, then close its clients and return. Returning earlier is an exit:
 * the testkit starts it again (as an orchestrator restarts a halted
 * service). The return value is recorded as the exit status. A thread
 * cannot be killed: a loop that never returns after the stop is reported
 * stuck after options->stop_grace_ms, and the run then waits for it.
 * @param env    valid until the loop returns.
 * @param opaque as given to kdc_testkit_run_loop().
 */
typedef int(kdc_testkit_loop_t)(const kdc_testkit_env_t *env, void *opaque);

/** @brief 1 once the loop running with @p env should return, else 0
 *         (never negative: it cannot fail).
 *         @p env is the pointer the loop was given or a copy of it; for
 *         any other env (or NULL), 1. Thread-safe; cheap enough to
 *         call once per poll (a mutex and a few comparisons). */
KDC_TESTKIT_EXPORT int kdc_testkit_stopping(const kdc_testkit_env_t *env);

/**
 * @brief The verdict of one run (owned by the testkit until
 *        kdc_testkit_result_destroy()). Every field is public; new fields
 *        are only ever appended.
 */
typedef struct kdc_testkit_result_s {
        const char *scenario;   /**< scenario name */
        uint64_t seed;          /**< the seed used */
        int64_t events;         /**< input events stored (broker-confirmed) */
        int64_t poison;         /**< of which poison */
        int64_t committed;      /**< events below the committed offsets */
        int64_t output_records; /**< records read back from the output topic */
        int64_t dlq_records;    /**< records read back from the DLQ topic */
        int64_t processed;      /**< events with at least one output */
        int64_t dead_lettered;  /**< events with at least one DLQ record */
        int64_t lost;           /**< committed, no output, no DLQ record */
        int64_t duplicated;     /**< more than one output record */
        int64_t unprocessed;    /**< at or above the committed offset */
        int64_t dlq_without_identity; /**< DLQ records kdc_dlq_decode()
                                           rejects, or whose coordinates name
                                           no input event */
        int64_t foreign_records; /**< output records naming no event */
        int starts;     /**< service instances started (restarts included) */
        int exits;      /**< instances that exited on their own before the end */
        int kills;      /**< SIGKILLs sent by the scenario */
        int stuck;      /**< instances that ignored the stop (killed) */
        int faults;     /**< fault steps applied */
        int64_t duration_ms; /**< wall time of the run */
        const char *end_reason; /**< "all events committed", "idle",
                                     "deadline", or "crash loop": the
                                     service exited (or could not be
                                     started again) 5 times without having
                                     committed or written anything */
        int valid;      /**< 1: nothing lost (and, with exactly_once, nothing
                             duplicated; with require_complete, nothing
                             unprocessed), and the service did something
                             (a commit, an output or a DLQ record); 0
                             otherwise, and failure says why */
        const char *failure;     /**< NULL when valid; else the first of
                                  "records dropped by the mock cluster"
                                  (dropped_records: no verdict), "events
                                  lost", "nothing processed" (no event
                                  committed, no output and no DLQ record:
                                  a service that never worked shows
                                  nothing), "events duplicated", "effects
                                  duplicated", "events
                                  unprocessed" that applies */
        int64_t dropped_records; /**< records the mock cluster deleted from
                                      the input, output or DLQ topic before
                                      they were read back (it keeps 5 MiB
                                      and 100,000 messages per partition):
                                      when non-zero, the counts above cannot
                                      be trusted (kdc-harness exits 2) */
        /** The run's sink ("sqlite" or "postgresql"), NULL when it had none. With a sink, an
         *  event's effect is its row: lost counts committed events with no
         *  row and no DLQ record, and output records are counted, not
         *  judged. */
        const char *sink;
        int64_t effect_rows;       /**< rows read back from the sink */
        int64_t effected;          /**< events with at least one row */
        int64_t duplicate_effects; /**< events with more than one row (a
                                        write replayed; fails the run with
                                        exactly_once: "effects duplicated") */
        int64_t foreign_effects;   /**< rows naming no event */
        const char *service_stats; /**< the libkdc statistics the service
                                        wrote to KDC_HARNESS_STATS, as one
                                        JSON object: every count summed
                                        over every start of every instance,
                                        lag_peak the largest, "files" the
                                        number of documents read; NULL when
                                        no start wrote one */
} kdc_testkit_result_t;

/** Which events kdc_testkit_result_event() lists. */
typedef enum kdc_testkit_list_e {
        KDC_TESTKIT_LOST = 0,
        KDC_TESTKIT_DUPLICATED = 1,
        KDC_TESTKIT_UNPROCESSED = 2,
        KDC_TESTKIT_DUPLICATE_EFFECTS = 3 /**< more than one row in the sink */
} kdc_testkit_list_t;

/** @brief The id of the @p i-th event (0-based, in id order) of @p list;
 *         NULL past the end. Valid until the result is destroyed. */
KDC_TESTKIT_EXPORT const char *
kdc_testkit_result_event(const kdc_testkit_result_t *result,
                         kdc_testkit_list_t list, size_t i);

/** @brief The @p i-th line of the fault log ("+3.20s (41% of the events
 *         produced, 380 committed, 395 output and DLQ records) broker 2
 *         down");
 *         NULL past the end. */
KDC_TESTKIT_EXPORT const char *
kdc_testkit_result_fault(const kdc_testkit_result_t *result, size_t i);

/** @brief The group's committed offset of input partition @p partition at
 *         the end.
 *  @returns the offset (>= 0); KDC_ERR_NOENT when the group committed none
 *           for it; KDC_ERR_INVALID for a NULL @p result or a partition out
 *           of range.
 *  @note libkdc 0.1 returned -1 for "none"; the JSON report still writes
 *        -1 there (committed_offsets). */
KDC_TESTKIT_EXPORT int64_t
kdc_testkit_result_committed(const kdc_testkit_result_t *result,
                             int32_t partition);

/**
 * @brief Write @p results as one self-contained HTML page (no external file,
 *        font or script): per result its verdict, a timeline plot (input events
 *        stored, events committed, output and DLQ records written, sampled
 *        every 200 ms during the run), the fault windows shaded (a broker down
 *        until it is up, an instance stopped, paused or killed until it is
 *        started, resumed or due to restart; other faults as dashed lines), the
 *        lost events marked at the time they were stored (triangles, the first
 *        2,000) and the duplicated ones (circles), then the fault log and the
 *        event lists.
 *
 * An inline script records on each plot what the browser drew
 * (data-drawn: lines, data-marks-drawn, data-windows-drawn), for tests.
 * Write errors are left in @p out's error indicator (ferror()).
 *
 * @returns 0; KDC_ERR_INVALID for a NULL @p out, or a NULL @p results (or
 *          element) with @p n > 0.
 */
KDC_TESTKIT_EXPORT int kdc_testkit_report_html(FILE *out,
                                               const kdc_testkit_result_t *const *results,
                                               size_t n);

/** @brief Free a result; NULL is ignored. */
KDC_TESTKIT_EXPORT void kdc_testkit_result_destroy(kdc_testkit_result_t *result);

/**
 * @brief Run @p scenario with a command service.
 *
 * @p argv (NULL-terminated; argv[0] is looked up in PATH) is started with
 * fork() and execvpe() in a process group of its own, dying with the thread
 * that started it (PR_SET_PDEATHSIG, SIGKILL), with the environment of
 * this process plus the KDC_TESTKIT_ENV_* variables, stdin inherited,
 * stdout and stderr on options->service_fd (default: this process's
 * stderr), and no other descriptor (the mock's sockets stay here). SIGKILL, SIGSTOP and
 * SIGCONT of a scenario, and the final SIGTERM, go to that process group;
 * when the process ends, what is left of its group is SIGKILLed, and, in a
 * process that is the child subreaper (kdc-harness), what it started outside
 * the group (setsid, a double fork) too.
 *
 * @param options  NULL for the defaults.
 * @param scenario a name from kdc_testkit_scenario().
 * @param resultp  receives the verdict (also when events were lost: that is
 *                 a completed run); the caller destroys it. NULL when the
 *                 call fails.
 * @returns 0: the run completed; read (*resultp)->valid.
 *          KDC_ERR_INVALID: unknown scenario, bad options
 *          (kdc_testkit_options_validate() says which), empty argv; with
 *          options->bootstrap_servers, a scenario with needs_broker_control
 *          (refused before anything starts), or the cluster refused the
 *          run's topics (options->log says why).
 *          KDC_ERR_NOENT: the command could not be started, or the
 *          scenario's sink could not be made (a PostgreSQL scenario where
 *          no server is installed).
 *          KDC_ERR_TIMEOUT: the mock cluster did not confirm the input
 *          events, or the outputs and committed offsets could not be read
 *          back (nothing to judge); with options->bootstrap_servers, also:
 *          no bootstrap server answered, or the run's topics got no
 *          leaders; and a run ended by kdc_testkit_interrupt().
 *          KDC_ERR_NOMEM.
 * Blocks for the whole run (seconds to minutes). Relies on:
 * rdkafka_mock.h (cluster, broker up/down, per-broker error stacks,
 * coordinator and leader changes), rd_kafka_committed(),
 * rd_kafka_query_watermark_offsets().
 */
KDC_TESTKIT_EXPORT int kdc_testkit_run_command(const kdc_testkit_options_t *options,
                                               const char *scenario,
                                               char *const argv[],
                                               kdc_testkit_result_t **resultp);

/**
 * @brief SIGKILL the process group of every command service that a run in
 *        progress in this process has started.
 *
 * For the SIGINT / SIGTERM handler of a program interrupted mid-run: each
 * service runs in a process group of its own, so the terminal's signals do
 * not reach it, and it would outlive the program (and its mock cluster).
 * Also removes the temporary database of a sink scenario in progress
 * (KDC_HARNESS_SINK), so that an interrupted run leaves none behind.
 * Async-signal-safe (kill(), unlink(), rmdir()). The run itself is not ended: the
 * handler is expected to end the process (kdc-harness re-raises the
 * signal).
 */
KDC_TESTKIT_EXPORT void kdc_testkit_services_kill(void);

/**
 * @brief End the run in progress in this process, and any run started later
 *        in it, without a verdict, but through its clean-up.
 *
 * For the SIGINT / SIGTERM handler of a program that runs on an existing
 * cluster (options->bootstrap_servers): the run stops restarting its services
 * (call kdc_testkit_services_kill() too, to end them at once), stops them,
 * deletes the topics and group it created on the cluster, and
 * kdc_testkit_run_command() (or _run_loop()) returns KDC_ERR_TIMEOUT (nothing
 * to judge). Async-signal-safe (sets a flag); there is no way back: the
 * program is expected to end (kdc-harness re-raises the signal).
 */
KDC_TESTKIT_EXPORT void kdc_testkit_interrupt(void);

/**
 * @brief Keep every process the command services of this process start, however
 *        they detach, in a cgroup that is emptied and removed when this process
 *        ends, by kdc_testkit_services_release() or by any signal, SIGKILL
 *        included.
 *
 * A service that starts a daemon with setsid() leaves its process group; when
 * the program that started the service is killed with SIGKILL (no handler
 * runs), the service dies with it (PR_SET_PDEATHSIG) but such a daemon would
 * run on under init. Call this once, before any run and before the process
 * starts threads (it forks): it creates a cgroup (cgroup v2) under this
 * process's own, named kdc-harness-PID, that each command service joins before
 * exec, and starts a guard process that outlives this one: when this process
 * ends, the guard kills everything in the cgroup (cgroup.kill; on kernels
 * before 5.14, SIGKILL to each process it lists until none is left), removes
 * it and exits.
 *
 * @param why  on failure, why (NUL-terminated, at most @p len bytes).
 * @return 0; KDC_ERR_NOENT when no writable cgroup v2 hierarchy can hold the
 *         services (not root and no delegated subtree, no cgroup2 mount, or a
 *         cgroup with controllers that takes no process): the services then
 *         run as before.
 */
KDC_TESTKIT_EXPORT int kdc_testkit_services_contain(char *why, size_t len);

/**
 * @brief End what kdc_testkit_services_contain() started: the processes left
 *        in the cgroup are killed, and the cgroup is removed before this
 *        returns (at most about 6 s). Does nothing when there is none.
 */
KDC_TESTKIT_EXPORT void kdc_testkit_services_release(void);

/**
 * @brief Run @p scenario with a loop service in threads of this process (one
 *        per instance), for in-process tests of a service's loop.
 *
 * @returns as kdc_testkit_run_command(); KDC_ERR_INVALID also for a scenario
 *          with needs_process set (a thread cannot be SIGKILLed or stopped).
 */
KDC_TESTKIT_EXPORT int kdc_testkit_run_loop(const kdc_testkit_options_t *options,
                                            const char *scenario,
                                            kdc_testkit_loop_t *loop,
                                            void *opaque,
                                            kdc_testkit_result_t **resultp);

/**
 * @brief Print @p n results: text (one block each and a summary line) or
 *        one JSON document {"tool": .., "runs": [..], "valid": bool}.
 * @returns 0; KDC_ERR_INVALID for NULL arguments or an unknown format;
 *          KDC_ERR_NOMEM.
 */
KDC_TESTKIT_EXPORT int kdc_testkit_results_print(const kdc_testkit_result_t *const *results,
                                                 size_t n, FILE *out,
                                                 kdc_testkit_format_t format);

#ifdef __cplusplus
}
#endif

#endif /* KDC_TESTKIT_H */
