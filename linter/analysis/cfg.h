/*
 * Per-function control-flow graph built from the model (libclang has no CFG API).
 *
 * Nodes are the events rules care about, in evaluation order: calls,
 * assignments and atomic conditions. `&&`, `||`, `?:` and `!` are
 * short-circuited into condition nodes, so every COND node tests one atomic
 * expression; its successor 0 is the true edge, successor 1 the false edge.
 */
#ifndef KDC_CFG_H
#define KDC_CFG_H

#include "model.h"

typedef enum {
    KDC_N_ENTRY,
    KDC_N_EXIT,
    KDC_N_CALL,   /* expr: the call */
    KDC_N_COND,   /* expr: the atomic condition; succ[0] true, succ[1] false */
    KDC_N_ASSIGN, /* expr: the assignment / increment */
    KDC_N_RETURN, /* expr: the value a return statement returns (after its evaluation) */
    KDC_N_NOP
} kdc_node_kind_t;

typedef struct kdc_node {
    const kdc_expr_t *expr;
    const int *succ;
    kdc_node_kind_t kind;
    unsigned loop_cond : 1; /* COND of a while/do/for condition */
    unsigned nsucc : 31;
} kdc_node_t;

/* A loop statement (while, do, for, range-for) and its nodes. */
typedef struct kdc_loop {
    const kdc_stmt_t *stmt; /* the loop statement */
    int head;               /* where each pass starts (before the condition) */
    int after;              /* the way out when its condition is false; breaks join it */
    int brk;                /* where its break statements go (on to `after`): a pass that
                               stops early reaches `after` through it */
    int parent;             /* the enclosing loop (index in loops), -1 none */
} kdc_loop_t;

typedef struct kdc_cfg {
    kdc_node_t *nodes;
    unsigned n;
    int entry, exit;
    int *call_node; /* call_id → node id (-1 if the call is unreachable) */
    kdc_loop_t *loops;
    unsigned nloops;
    int *node_loop; /* node id → innermost loop around it (index in loops), -1 none;
                       `after` and `brk` belong to the enclosing loop */
    const char **written; /* variables (usr, interned) written other than by a plain
                             assignment: &v, ++v, v += .., v[i] = .., a reference
                             parameter; sorted by address, nwritten of them */
    unsigned nwritten;
    unsigned stable_tests : 1; /* an if tests a variable for null that nothing but its
                                  initialisation writes (contradicting guards need one) */
} kdc_cfg_t;

/* Returns non-zero when a call never returns (exit(), abort(), a function whose exit is unreachable). */
typedef int (*kdc_noreturn_fn)(const kdc_expr_t *call, void *arg);

/* Builds f's CFG into program memory and stores it in f->cfg. */
kdc_cfg_t *kdc_cfg_build(kdc_program_t *p, kdc_func_t *f, kdc_noreturn_fn noreturn, void *arg);

/* Is node n inside loop l (directly, or in a loop nested in it)? */
int kdc_cfg_in_loop(const kdc_cfg_t *g, int n, int l);

/* Does the way from node n leave loop l through no-op nodes of the loop only
 * (n outside it, or the false side of a loop condition: its NOPs, then the
 * loop's `after`)? A bounded look (16 nodes). */
int kdc_cfg_leaves_loop(const kdc_cfg_t *g, int n, int l);

/* Is the exit node reachable from the entry node? */
int kdc_cfg_exit_reachable(const kdc_cfg_t *g);

/* Is `target` (a call; NULL: the exit) reached from node `from`? A bounded
 * look: after 64 distinct nodes without it, no. */
int kdc_cfg_leads_to(const kdc_cfg_t *g, int from, const kdc_expr_t *target);

/* Does the condition node n only choose whether a barrier call (a flush, a
 * close: `is_barrier`) comes before `target` (a call; NULL: the exit)? Every
 * way out of n meets a barrier that leads on to `target`, or `target`, as its
 * first call, passes no loop condition, and some way meets a barrier. A
 * barrier under a condition (`if (queued) flush(); destroy();`) then counts as
 * a barrier: the condition usually says whether there is anything to do, which
 * paths cannot tell. Bounded like kdc_cfg_leads_to (beyond 64 nodes: no). */
int kdc_cfg_chooses_barrier(const kdc_cfg_t *g, int n, const kdc_expr_t *target,
                            int (*is_barrier)(void *arg, const kdc_expr_t *call), void *arg);

/*
 * Path search: a breadth-first walk from `start` over (node, state) pairs,
 * each visited once. `visit` is called when a node is entered with a state and
 * returns the state to carry on with, or -1 to stop the path there (a barrier).
 * `edge` (optional) returns 0 to prune successor `i` of node `n`. States are
 * small integers in [0, nstates). The start node itself is not visited; the
 * walk begins at its successors with `start_state`.
 */
typedef struct kdc_search {
    int (*visit)(void *ctx, const kdc_cfg_t *g, int n, int state);
    int (*edge)(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int state);
    void *ctx;
    int nstates;
} kdc_search_t;

void kdc_cfg_search(const kdc_cfg_t *g, int start, int start_state, const kdc_search_t *s);

/* The same with `edge` replaced by edge_state: the state to carry on with after
 * taking successor i of node n (what a condition's outcome says), or -1 to
 * prune that successor. */
typedef int (*kdc_edge_state_fn)(void *ctx, const kdc_cfg_t *g, int n, unsigned i, int state);
void kdc_cfg_search_edges(const kdc_cfg_t *g, int start, int start_state, const kdc_search_t *s,
                          kdc_edge_state_fn edge_state);

/* The node of a call in g, or -1 (unreachable, or not a call of f). */
int kdc_cfg_node_of_call(const kdc_cfg_t *g, const kdc_expr_t *call);

/* Is node `to` reached from node `from` (not counting `from` itself) on a path
 * that passes no node `avoid(arg, node)` is true for? `to` == g->exit asks
 * whether the function can return that way. */
int kdc_cfg_reaches_avoiding(const kdc_cfg_t *g, int from, int to,
                             int (*avoid)(void *arg, int node), void *arg);

/* The assignments `var = value` of f's local variable `usr` (an interned USR)
 * that reach node `at`: those from which `at` is reached without another
 * assignment of it. Writes at most max of them to out and returns how many
 * reach; -1 when that cannot be told (the variable's address is taken, it is
 * written otherwise than by `=`, or more than max reach). 0: none reaches (the
 * value at `at` is the one it had on entry, or none). */
int kdc_cfg_reaching_assignments(const kdc_func_t *f, const char *usr, int at,
                                 const kdc_expr_t **out, int max);

#endif
