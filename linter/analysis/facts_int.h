/* Internals shared by facts.c (summaries, delivery paths) and clientconf.c
 * (configurations, clients, topics). Not for rules: they use facts.h. */
#ifndef KDC_FACTS_INT_H
#define KDC_FACTS_INT_H

#include <stdint.h>
#include "facts.h"
#include "util.h"

typedef KDC_VEC(kdc_setting_t) setting_vec_t;

typedef struct frame {
    const kdc_func_t *f;    /* the calling function */
    const kdc_expr_t *call; /* its call of the function we came from */
} frame_t;

typedef KDC_VEC(frame_t) frame_vec_t;

typedef struct objinfo {
    /* CONF (global or topic configuration) */
    unsigned dr : 1, escaped : 1, rebalance : 1;
    unsigned dr_unseen : 1;        /* a delivery report registered otherwise than by a C
                                      callback function (events, C++ DeliveryReportCb) */
    unsigned copied : 2;           /* rd_kafka_conf_dup(): 1 inheriting, 2 done */
    setting_vec_t settings;
    size_t *by_prop;               /* indices of the settings of a named property, ordered by
                                      (prop, first call): settings.c's index */
    size_t nby_prop;
    kdc_bits_t drcbs;              /* delivery-report callbacks (FUNC objects) registered */
    kdc_bits_t parents;            /* the configurations a copy (rd_kafka_conf_dup) copies */
    kdc_bits_t linked;             /* topic configurations attached as default topic conf */
    kdc_loc_t dr_loc, escaped_loc; /* first registration / first hand-over to unseen code */
    /* CLIENT */
    int type; /* 0 producer, 1 consumer, -1 unknown */
    unsigned null_conf : 1, unknown_conf : 1;
    unsigned produces : 1, produces_dlq : 1; /* used by a produce / a dead-letter produce */
    unsigned handed_out : 1;       /* the handle is given to code outside the analysis */
    kdc_bits_t confs;
    /* TOPIC */
    kdc_bits_t clients;
    unsigned unknown_client : 1;
    const kdc_expr_t *name_expr;
    const kdc_func_t *name_func;
    kdc_bits_t tconfs;             /* topic configuration it was created with */
} objinfo_t;

struct kdc_facts {
    kdc_program_t *p;
    kdc_options_t opts;
    kdc_pts_t *pts;
    objinfo_t *info;            /* per object */
    kdc_strset_t props;         /* property names of settings, interned (settings.c) */
    kdc_summary_t *sum;         /* per function index */
    frame_vec_t *callers;       /* per function index: the call sites that may reach it */
    unsigned char *repeats[3];  /* per depth and function index: runs repeatedly? 0 not yet
                                   known, 1 no, 2 yes (kdc_facts_func_runs_repeatedly) */
    unsigned consumes : 1;      /* the program consumes messages somewhere */
    unsigned unknown_produce : 1; /* a produce on a handle that cannot be followed */
    uint64_t *mains;            /* per function index: which main()s reach it (bit per main,
                                   up to 64; NULL when there are fewer than two mains) */
    uint64_t mains_consuming;   /* the main()s whose program consumes */
    unsigned dr_reads_opaque : 1; /* a delivery-report callback reads the message opaque */
    kdc_strmap_t dr_state;      /* keys written by delivery-report callbacks → (void*)1 */
    kdc_strmap_t dr_funcs;      /* id → function, delivery-report callbacks and their callees */
    KDC_VEC(const kdc_func_t *) dr_callbacks; /* the registered callbacks themselves */
    KDC_VEC(const kdc_expr_t *) dr_sites;     /* ... and where each was registered */
    const kdc_func_t *building; /* function whose CFG is being built */
    struct kdc_ckpt *ckpt;      /* per function index: what it checkpoints (checkpoint.c) */
    kdc_strmap_t derived;       /* storage keys holding values derived from consumed
                                   messages → (void*)1 (input_flow.c) */
    kdc_strmap_t carriers;      /* storage keys of object handles a library call stored
                                   such a value into → (void*)1 (input_flow.c) */
    struct flow_absent *flow_absent; /* while input_flow.c propagates: the keys the walk of
                                   one function found in neither map */
    uint64_t *param_writes;     /* per function index: parameters (the first 64) it assigns,
                                   increments or takes the address of (noreturn.c) */
    kdc_strmap_t call_guards;   /* configuration call → conditions on parameters it is under */
    unsigned complete : 1;      /* built: answers no longer change, so they may be kept */
    struct clients_memo *clients_memo; /* kdc_facts_clients_at's answers, once complete */
    unsigned char *client_memo[KDC_FACTS_CLIENT_MEMOS]; /* per client: 0 not asked, 1 no, 2 yes */
    KDC_VEC(kdc_call_site_t) * named_callers; /* per function index (kdc_facts_named_callers) */
};

int kdc__match_any(const char *const *pats, const char *s);
const kdc_func_t *kdc__callee_func(const kdc_facts_t *fx, const kdc_func_t *caller,
                                   const kdc_expr_t *call);
const char *kdc__lkey(const kdc_facts_t *fx, const kdc_expr_t *e);
/* A string literal, seen through std::string construction; NULL otherwise. */
const kdc_expr_t *kdc__literal(const kdc_expr_t *e);
/* Calls fn for each object of `kind` e may denote; *unknown (optional) is set
 * when a value comes from outside or nothing of that kind is found. */
void kdc__for_each_obj(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e,
                       kdc_obj_kind_t kind, void (*fn)(kdc_facts_t *, size_t, void *), void *arg,
                       int *unknown);
/* The same at a call of f (the value a local variable holds there: only the
 * assignments of it that reach the call count). */
void kdc__for_each_obj_at(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                          const kdc_expr_t *call, const kdc_expr_t *e, kdc_obj_kind_t kind,
                          void (*fn)(kdc_facts_t *, size_t, void *), void *arg, int *unknown);
/* The same in one instance of a factory (ctx from kdc_obj_t.ctx); NULL: all. */
void kdc__for_each_obj_ctx(const kdc_facts_t *fx, const kdc_func_t *f, const char *ctx,
                           const kdc_expr_t *e, kdc_obj_kind_t kind,
                           void (*fn)(kdc_facts_t *, size_t, void *), void *arg, int *unknown);
void kdc__add_dr_func(kdc_facts_t *fx, const kdc_func_t *f);
int kdc__strings_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e);
/* Does e (in f) name a dead-letter destination: a DLQ topic string, a topic
 * handle created with one, or a variable/field named like a DLQ? */
int kdc__expr_names_dlq(const kdc_facts_t *fx, const kdc_func_t *f, const kdc_expr_t *e);

/* noreturn.c: every function's CFG, with calls that never return ending their
 * paths (declared so, known C library functions, functions of the program
 * whose exit is unreachable, per call site with the constant arguments
 * bound); sets summary.noreturn. */
void kdc__build_cfgs(kdc_facts_t *fx);

/* Does parameter i of f hold its argument's value all through f's body (never
 * assigned, incremented or its address taken)? Parameters past the 64th never do. */
int kdc__param_fixed(const kdc_facts_t *fx, const kdc_func_t *f, int i);

/* Is the call one of the C library's or a common client's durable writes
 * (file, database, network; not stdout, stderr or a log)? */
int kdc__side_effect_api(const kdc_expr_t *call);

/* Is the stream a standard one (stdout, stderr, fd 1 or 2) or a log (log_fp,
 * logfile, trace_out)? Writing to it is not the message's effect. */
int kdc__is_console_or_log(const kdc_expr_t *stream);

/* checkpoint.c: per-function checkpoint summaries (after handle tracking). */
void kdc__summarize_checkpoints(kdc_facts_t *fx);
void kdc__free_checkpoints(kdc_facts_t *fx);

/* input_flow.c: values derived from consumed messages (after the summaries). */
void kdc__compute_input_flow(kdc_facts_t *fx);
void kdc__free_input_flow(kdc_facts_t *fx);

/* clientconf.c: configurations, clients and topics (after handle tracking). */
void kdc__describe_clients(kdc_facts_t *fx);
/* Marks each setting of a named property that a later one overrides (settings.c). */
void kdc__settings_mark_overridden(kdc_facts_t *fx);
void kdc__free_clients(kdc_facts_t *fx);

#endif
