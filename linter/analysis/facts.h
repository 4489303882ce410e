/*
 * Program-wide facts the rules read: client configurations, delivery-report
 * callbacks and the state they write, per-function summaries, and the path
 * walk "from a produce to a commit without a confirmation". Computed once,
 * after every translation unit was parsed; rules never walk the AST.
 */
#ifndef KDC_FACTS_H
#define KDC_FACTS_H

#include "cfg.h"
#include "model.h"
#include "pts.h"

#include <stdio.h>

/* Roles a service's own functions can be given in the configuration. */
typedef enum {
    KDC_ROLE_PRODUCE,    /* produces a message (its delivery needs confirming) */
    KDC_ROLE_COMMIT,     /* commits or stores the input's offset */
    KDC_ROLE_CONFIRM,    /* waits for delivery reports and reports their outcome */
    KDC_ROLE_ACK,        /* acknowledges upstream (counts as a checkpoint) */
    KDC_ROLE_EFFECT,     /* performs a side effect (database write, HTTP call, ...) */
    KDC_ROLE_CLASSIFIER, /* classifies a failure (poison or transient) */
    KDC_ROLE_CONSUME,    /* consumes: returns the next input message */
    KDC_NROLES
} kdc_role_t;

typedef struct kdc_options {
    int strict;                       /* --profile=strict */
    const char *const *dlq_topic_patterns; /* fnmatch, case-insensitive; NULL-terminated */
    const char *const *dlq_name_patterns;  /* variable/field names; NULL-terminated */
    /* Per role, fnmatch patterns on a callee's qualified name ("svc_commit",
     * "app::Sink::write*"); NULL-terminated; NULL for none. */
    const char *const *functions[KDC_NROLES];
    /* Upstream acknowledgements a callee's name alone does not say (a framework's
     * output callback telling it a message is done), NULL-terminated, NULL for none:
     * "FUNCTION=VALUE", a return of VALUE from a function whose qualified name
     * matches FUNCTION (fnmatch); "FUNCTION(VALUE)", a call of a function matching
     * FUNCTION whose first argument is VALUE. VALUE is an enumerator's name or an
     * integer (a macro's value). kdc_ack_presets_*: rsyslog, syslog-ng, fluent-bit. */
    const char *const *ack_returns;
    const char *const *ack_calls;
} kdc_options_t;

/* Does the call's callee have `role` in the configuration? */
int kdc_options_has_role(const kdc_options_t *o, const kdc_expr_t *call, kdc_role_t role);

extern const char *const kdc_default_dlq_topic_patterns[];
extern const char *const kdc_default_dlq_name_patterns[];
extern const char *const kdc_ack_presets_returns[];
extern const char *const kdc_ack_presets_calls[];
/* Roles of wrapper libraries' functions, per role (NULL-terminated): cppkafka. */
extern const char *const *const kdc_function_presets[KDC_NROLES];

/* Is s a well-formed acknowledgement: "FUNCTION=VALUE" (returns) or
 * "FUNCTION(VALUE)" (calls)? */
int kdc_ack_spec_valid(const char *s, int call);

typedef struct kdc_summary {
    unsigned noreturn : 1;        /* exit unreachable */
    unsigned commits : 1;         /* may commit or store offsets */
    unsigned serves_dr : 1;       /* may serve delivery reports (poll/flush) */
    unsigned effects : 1;         /* may perform a side effect (write, send, database, produce) */
    uint32_t stream_params;       /* writes to the streams it is given (bit per parameter): a
                                     side effect where a caller passes something other than
                                     stdout, stderr or a log */
    unsigned routes_dlq : 1;      /* may produce to a dead-letter destination */
    unsigned consumes : 1;        /* may consume messages */
    unsigned confirms : 1;        /* every path to its exit passes a delivery confirmation */
    unsigned reads_dr : 1;        /* reads delivery-report state (batch_delivered(b)) */
    unsigned pending_produce : 1; /* may return with a produced message unconfirmed (and
                                     no commit after it on that path) */
    unsigned pending_dlq : 1;     /* ... a message produced to a dead-letter destination */
    const kdc_func_t *pending_func; /* where that produce is (for notes) */
    const kdc_expr_t *pending_site;
} kdc_summary_t;

typedef enum { KDC_TRI_NO = 0, KDC_TRI_YES = 1, KDC_TRI_UNKNOWN = 2 } kdc_tri_t;

/* One property setting of a configuration, as the code shows it. A setting
 * made through helpers is seen at each chain of calls of the helper that
 * decides its configuration, name or value (up to eight calls out); a table
 * of key/value pairs applied in a loop (rows of a 2-D or struct table, a flat
 * NULL-terminated {"key", "value", ..} list, the variadic arguments of a
 * helper) gives one setting per pair. */
#define KDC_SETTING_PATH 10
typedef struct kdc_setting {
    const char *key;        /* NULL: a property whose name is not a literal (a file, argv,
                               a user's key=value list: it may set any property) */
    const char *value;      /* NULL: a value that is not a literal (getenv, a buffer, ...) */
    const char *fallback;   /* value NULL: the one literal it holds when the outside leaves
                               it alone (`getenv("X") ? getenv("X") : "false"`), or NULL */
    unsigned conditional : 1;  /* set on some paths only */
    unsigned from_outside : 1; /* the value is a parameter of a function no analysed code
                                  calls (a plugin entry point, an exported API): its
                                  callers decide it */
    unsigned escape : 1;       /* not a setting: the configuration is handed here to code
                                  outside the analysis, which may set anything (key NULL) */
    unsigned inherited : 1;    /* made on the configuration this one copies (rd_kafka_conf_dup),
                                  so before every setting of the copy */
    unsigned overridden : 1;   /* followed on every path by a setting of the same property
                                  made on every path (settings.c): it never holds */
    const char *prop;       /* key NULL: NULL; else the property it sets, one interned
                               name for a property and its alias (settings.c) */
    const kdc_func_t *func; /* where the value is written: the conf_set call, or the
                               outermost helper call that passes the value */
    kdc_loc_t loc;
    /* The calls that made it, innermost first: path[0] (the conf_set call, or the
     * hand-over) in pathf[0], path[i] (the call of pathf[i-1]) in pathf[i]; npath (at most
     * KDC_SETTING_PATH) of each, in the program's memory: a configuration's copies (most
     * settings of a test suite) share them. */
    const kdc_expr_t **path;
    const kdc_func_t **pathf;
    unsigned npath;
} kdc_setting_t;

typedef struct kdc_facts kdc_facts_t;

kdc_facts_t *kdc_facts_build(kdc_program_t *p, const kdc_options_t *opts);
void kdc_facts_free(kdc_facts_t *fx);

const kdc_options_t *kdc_facts_options(const kdc_facts_t *fx);
const kdc_summary_t *kdc_facts_summary(const kdc_facts_t *fx, const kdc_func_t *f);

/* Client handles (KDC_OBJ_CLIENT indices) an rd_kafka_t, rd_kafka_topic_t or
 * C++ handle expression may denote. *unknown is set when some value comes from
 * outside the analysed code or cannot be followed. */
void kdc_facts_clients_of(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                          kdc_bits_t *clients, int *unknown);

/* The same for e as it is at `call` (a call of f holding e; NULL: anywhere): a
 * local variable denotes what the assignments of it that reach the call give. */
void kdc_facts_clients_at(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                          const kdc_expr_t *e, kdc_bits_t *clients, int *unknown);

/* 0 producer, 1 consumer, -1 unknown. */
int kdc_facts_client_type(const kdc_facts_t *fx, size_t client);

/* A call of the program: the calling function and its call. */
typedef struct kdc_call_site {
    const kdc_func_t *f;
    const kdc_expr_t *call;
} kdc_call_site_t;

/* The calls of the program's helper g (no API call, no system header's function) that
 * name it: their callee, by name in the caller's translation unit, is g. In program order
 * (function index, then call index); *n of them. Indexed on the first question, once the
 * facts are complete (before: NULL, 0). */
const kdc_call_site_t *kdc_facts_named_callers(const kdc_facts_t *fx, const kdc_func_t *g,
                                               size_t *n);

/* Answers to yes/no questions about one client that the rules ask again and again (at
 * every call of it, for each client the call may be on) and that depend on the program
 * alone: does it commit offsets itself, is it in a consumer group. Question q is a slot
 * below KDC_FACTS_CLIENT_MEMOS that its asker (rules/common) numbers.
 * kdc_facts_client_memo gives 0 or 1, or -1 when q was not answered yet for the client. */
#define KDC_FACTS_CLIENT_MEMOS 8
int kdc_facts_client_memo(const kdc_facts_t *fx, unsigned q, size_t client);
void kdc_facts_client_memo_set(const kdc_facts_t *fx, unsigned q, size_t client, int yes);

/* Did any configuration of the client register a delivery report (any form)?
 * UNKNOWN when its configuration cannot be followed or was handed to code
 * outside the analysis. */
kdc_tri_t kdc_facts_client_has_dr(const kdc_facts_t *fx, size_t client);

/*
 * Settings the program does not determine (docs/kdc-lint.md has the policy):
 * what a client's configurations say about one property.
 *
 * - A property the code never sets, on configurations nothing outside the
 *   program can change: librdkafka's default (DEFAULT).
 * - A property the code sets to a literal (SET). A literal setting followed on
 *   every path by another literal setting of the property is overridden and
 *   does not count; neither does any setting from outside it follows.
 * - A property that may be set from outside the program after (or without)
 *   the program's own settings (OUTSIDE): a name that is not a literal (a
 *   config file, argv, a user's key=value list), a value that is not one
 *   (getenv, a field read from a file), a configuration handed to code outside
 *   the analysis or coming from it. The value assumed is the one it has when
 *   the outside settings leave it alone: the program's own literal made before
 *   them (or the literal fallback of its outside value), else the default. The
 *   rules report only when that value is the dangerous one, and name where the
 *   outside settings enter (`outside`).
 * - A property the program sets differently on different paths, or on
 *   different configurations of the client (VARIES).
 */
typedef enum {
    KDC_VALUE_DEFAULT,
    KDC_VALUE_SET,
    KDC_VALUE_OUTSIDE,
    KDC_VALUE_VARIES
} kdc_value_source_t;

typedef struct kdc_value {
    kdc_value_source_t source;
    const char *value;  /* the value assumed (booleans as "true"/"false"); NULL: VARIES */
    /* the settings of the property still in effect (value: a literal; NULL: from
     * outside, with or without a literal fallback), at most 16 */
    const kdc_setting_t *set[16];
    size_t nset;
    /* OUTSIDE: where the outside settings enter (a setting, or the creation of a
     * client whose whole configuration comes from outside) */
    const kdc_loc_t *outside;
    const char *outside_what; /* "the name is not a literal", ... (for notes) */
} kdc_value_t;

/* The property `key` (or its alias: acks and request.required.acks, retries
 * and message.send.max.retries) of the client's configurations, librdkafka's default
 * being dflt (NULL: unset). flags: KDC_VALUE_BOOL compares values as booleans
 * ("1", "t", "true"); KDC_VALUE_GLOBAL reads only the global configurations (a
 * default topic configuration's setting of the property does not count, as
 * for enable.auto.commit, which the high-level consumer reads globally). */
#define KDC_VALUE_BOOL 1
#define KDC_VALUE_GLOBAL 2
void kdc_facts_client_value(const kdc_facts_t *fx, size_t client, const char *key,
                            const char *dflt, int flags, kdc_value_t *out);

/* A sentence for a note on v (not DEFAULT/SET): "enable.auto.commit may be set
 * from outside the program (a name that is not a literal): assumed true, as
 * librdkafka's default". Written to buf. */
const char *kdc_value_note(const kdc_value_t *v, const char *key, char *buf, size_t size);

/* Boolean property of a client's configuration(s), by the policy above: the
 * value assumed (YES/NO), or UNKNOWN when it VARIES. */
kdc_tri_t kdc_facts_client_bool(const kdc_facts_t *fx, size_t client, const char *key, int dflt);

/* Calls fn (may be NULL) for each setting of `key` (every setting when NULL)
 * on the configurations the client may be created with, default topic
 * configurations included; returns how many. *unknown is set when the
 * client's configuration cannot be fully seen (it comes from outside, was
 * handed to code outside the analysis, or a property is set by a name that is
 * not a literal). */
size_t kdc_facts_client_settings(const kdc_facts_t *fx, size_t client, const char *key,
                                 void (*fn)(const kdc_setting_t *s, void *arg), void *arg,
                                 int *unknown);

/* Does some produce use the client (*dlq: to a dead-letter destination)? */
int kdc_facts_client_produces(const kdc_facts_t *fx, size_t client, int *dlq);

/* May a delivery report reach the callback (a function of the program)? No
 * only when every configuration registering it is followed, every client
 * created from those configurations is known and none of them produces (nor is
 * handed to code outside the analysis), and no produce of the program is on a
 * handle kdc-lint cannot follow. */
int kdc_facts_dr_callback_reachable(const kdc_facts_t *fx, const kdc_func_t *cb);

/* Calls fn for each string e may hold: a literal, constants reaching it
 * through variables, the name a topic handle was created with. Returns how
 * many; *unknown (optional) is set when some value cannot be followed. */
size_t kdc_facts_strings(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                         void (*fn)(const char *s, void *arg), void *arg, int *unknown);

/* The topic expression of a produce call (topic name or topic handle), or NULL. */
const kdc_expr_t *kdc_facts_produce_topic(const kdc_expr_t *call);

/* Does the expression read state the delivery-report callbacks write (a
 * status flag, a tracker counter, a per-message opaque cell)? */
int kdc_facts_reads_delivery_state(const kdc_facts_t *fx, const kdc_expr_t *e);

/* A condition of g (the function `call`, in f, reaches) decided by the
 * call's constant arguments bound to g's parameters (`try_produce(rk, 1234,
 * 1)` decides `if (expect_fail)`): 1 true, 0 false, -1 not decided. */
int kdc_facts_bound_cond(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call,
                         const kdc_func_t *g, const kdc_expr_t *cond);

/* What a call (in f) does, from the API table, a configured role or the
 * callee's summary (the union over a function pointer's targets), computed at
 * once: read the roles a question needs from one answer. */
typedef struct kdc_call_roles {
    /* produces a message (API, configured produce function, a helper that
     * returns with one unconfirmed) */
    unsigned produces : 1;
    /* commits or stores offsets, or acknowledges upstream, on some path */
    unsigned commits : 1;
    /* waits for delivery reports on every path (API, helper summary,
     * configured confirm function) */
    unsigned confirms : 1;
    /* consumes messages (directly or in a helper) */
    unsigned consumes : 1;
    /* routes a message to a dead-letter destination (directly or in a helper) */
    unsigned routes_dlq : 1;
} kdc_call_roles_t;
kdc_call_roles_t kdc_facts_call_roles(const kdc_facts_t *fx, const kdc_func_t *f,
                                      const kdc_expr_t *call);

/* Does the call perform a side effect: a produce; write, send, fwrite, pwrite,
 * fprintf, fputs, dprintf (not to stdout/stderr or a stream named like a log),
 * fsync; a database client call (PQexec*, sqlite3_step, mysql_query,
 * redisCommand); curl_easy_perform; a configured effect function; a helper
 * that does one of these? */
int kdc_facts_call_effect(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call);

/*
 * Checkpoints: where a service records how far it got, so that a restart
 * resumes after it. One definition for every rule; a durable write, never a
 * name (checkpoint.c):
 *   - a commit or offset store, a configured commit, ack or effect function;
 *   - a durable write: a file write, a database call, a network send (the APIs
 *     of kdc_facts_call_effect); not a produce, not stdout, stderr or a log;
 *   - program state that outlives the function: a value assigned (`=`; not
 *     a `++`, `+=` counter, a constant reset or a clock reading) to a
 *     global or static variable, a member of `this`, or storage reached through
 *     a pointer or reference parameter; not a local, not a field of a
 *     librdkafka structure (a partition list entry's `offset` is an argument of
 *     the call the list goes to: an assign, a DeleteRecords bound, offsets sent
 *     with a transaction);
 *   - a call of a function of the program that does one of these, where what
 *     it writes through its parameters (or its object) outlives the caller too.
 * kdc_facts_call_checkpoints: is the call (in f) one? kdc_facts_assign_checkpoints:
 * is the assignment or increment expression (in f) one?
 */
int kdc_facts_call_checkpoints(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call);
int kdc_facts_assign_checkpoints(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e);

/*
 * Is e (evaluated in f) derived from a consumed message: a message a consume
 * call returned or filled in, or a consume callback received, its fields,
 * values computed from them (strdup(m->payload), enrich(m), msg->payload()),
 * and storage they were copied or written into, through variables, fields,
 * parameters, return values and out-parameters (input_flow.c)?
 */
int kdc_facts_derived_from_input(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e);

/*
 * Is e an object handle (a variable or field of type `T *`, T a named
 * non-const type other than a number, a character buffer, void or FILE) that
 * a call outside the program was given, as its first argument, together with
 * a value derived from a consumed message in a later argument
 * (sqlite3_bind_text(stmt, 1, m->key, ..), curl_easy_setopt(h, opt, body),
 * json_object_set(o, k, v)), directly or in a helper given the handle? A
 * call on it then processes the message (sqlite3_step(stmt)). Not for handles
 * or storing calls named like a log (log, trace, debug). Flow-insensitive
 * (input_flow.c).
 */
int kdc_facts_handle_carries_input(const kdc_facts_t *fx, const kdc_expr_t *e);

/*
 * Is the output of `produce` (a produce call, or a call of a helper that
 * leaves one pending) tied to the input that `commit` (a later call in the
 * same function f) commits? Yes when the output is derived from a consumed
 * message (an argument other than the producer handle, or the pending
 * produce's in a helper that consumes), when both calls are in one loop of f
 * that consumes or f handles one consumed message (a message parameter its
 * callers pass a consumed message to), or when f's program does not consume
 * from Kafka (the input
 * is acknowledged upstream by a configured function). No for output of
 * another origin: test data seeded before the consumer reads, another
 * sub-test's producer.
 */
int kdc_facts_output_tied_to_input(const kdc_facts_t *fx, const kdc_func_t *f,
                                   const kdc_expr_t *produce, const kdc_expr_t *commit);
/* Does returning `value` (a return statement's expression) from f acknowledge f's
 * input to its framework (kdc_options_t.ack_returns)? A local variable returned
 * counts when f sets it to the value somewhere. */
int kdc_facts_return_acks(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *value);
/* Does the call acknowledge upstream by its first argument (kdc_options_t.ack_calls)? */
int kdc_facts_call_acks(const kdc_facts_t *fx, const kdc_expr_t *call);

/* Did a configuration of the client register a rebalance callback? UNKNOWN
 * when its configuration cannot be followed. */
kdc_tri_t kdc_facts_client_has_rebalance_cb(const kdc_facts_t *fx, size_t client);

/* The registered delivery-report callbacks (C: dr_msg_cb/dr_cb functions;
 * C++: DeliveryReportCb::dr_cb overrides) and where each was registered (the
 * registration call; NULL for C++). Returns how many. */
size_t kdc_facts_dr_callbacks(const kdc_facts_t *fx, const kdc_func_t ***funcs,
                              const kdc_expr_t ***sites);

/* Does the program consume messages anywhere (consumer poll, consume calls)? */
int kdc_facts_program_consumes(const kdc_facts_t *fx);

/* Does the program f belongs to consume? When the analysis holds several
 * programs (two or more main() definitions, e.g. a monorepo's compile
 * database), only the programs whose main() reaches f count; code no main()
 * reaches (a library) and single-program analyses use the whole analysis. */
int kdc_facts_func_program_consumes(const kdc_facts_t *fx, const kdc_func_t *f);

/* Prints what kdc-lint believes about the clients created at file:line (their
 * configurations, each setting and where it comes from, callbacks);
 * returns how many clients were described. */
size_t kdc_facts_explain(const kdc_facts_t *fx, const char *file, unsigned line, FILE *out,
                         const char *cwd);

/* The objects handle tracking found (clients, configurations, topics, ...). */
const kdc_pts_t *kdc_facts_pts_of(const kdc_facts_t *fx);

/* Can the call run again after it ran in f (a loop, a goto back)? */
int kdc_call_in_loop(const kdc_func_t *f, const kdc_expr_t *call);

/* Does f run more than once: called at several places (directly or through
 * function pointers), or at one that can run again, its callers followed
 * `depth` levels up (0..2)? A function the program never calls (main, a
 * thread's start routine, a callback) does not, as far as the program shows. */
int kdc_facts_func_runs_repeatedly(const kdc_facts_t *fx, const kdc_func_t *f, int depth);

/* Where a client is created, as a user sees it: the factory call for a
 * client made by a factory function, else the creating call. */
const kdc_loc_t *kdc_facts_client_loc(const kdc_facts_t *fx, size_t client);

/* The creating call of a client/conf object and its function (for notes). */
const kdc_obj_t *kdc_facts_obj(const kdc_facts_t *fx, size_t i);

/* Is this call (in f) a produce to a dead-letter destination, directly or
 * through a helper that leaves such a produce unconfirmed? */
int kdc_facts_is_dlq_produce(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *call);

/*
 * Walks f's CFG from the node of `produce` (a produce call, or a call of a
 * helper that leaves one pending) along paths that pass no confirmation of
 * that message, and calls `reached` for the first commit/store call node on
 * each path (the path ends there: later commits are the same loss). Returns
 * non-zero when the function's exit is reached on such a path, i.e. the
 * message may still be unconfirmed, and the input uncommitted, on return.
 */
typedef void (*kdc_reached_fn)(void *ctx, const kdc_func_t *f, const kdc_expr_t *commit);
int kdc_facts_walk_unconfirmed(const kdc_facts_t *fx, const kdc_func_t *f,
                               const kdc_expr_t *produce, kdc_reached_fn reached, void *ctx);

#endif
