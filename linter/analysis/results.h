/*
 * What a program does with a call's result: whether it is used at all, and
 * what a condition says about the call's outcome (directly, or through the
 * variables the result or a success flag derived from it is stored in:
 * `e = rd_kafka_producev(..); if (e) ...`, `ok = write_row(m) == 0; if (ok)`).
 */
#ifndef KDC_RESULTS_H
#define KDC_RESULTS_H

#include "model.h"

typedef enum {
    KDC_USE_DISCARDED,     /* an expression statement: the value is dropped */
    KDC_USE_STORED_UNREAD, /* assigned to a variable nobody reads */
    KDC_USE_USED           /* tested, stored and read, returned, passed on */
} kdc_use_t;

/* How call's value is used in f. */
kdc_use_t kdc_result_use(kdc_program_t *p, const kdc_func_t *f, const kdc_expr_t *call);

/* Does the call report failure with a true value (error codes, rd_kafka_error_t *, C++
 * ErrorCode: 1) or success with a true value (bool, pointers: 0)? From its type. */
int kdc_result_error_truthy(const kdc_expr_t *call);

typedef struct kdc_outcome {
    kdc_program_t *p;
    const kdc_expr_t *call;
    int error_truthy;
    struct {
        const char *key; /* variable (lvalue key) */
        int polarity;    /* +1: true means the call succeeded; -1: true means it failed */
    } vars[16];
    size_t nvars;
} kdc_outcome_t;

/* Prepares the outcome tracking of call in f (collects the variables). */
void kdc_outcome_init(kdc_outcome_t *o, kdc_program_t *p, const kdc_func_t *f,
                      const kdc_expr_t *call);

/* What a (condition) expression being true says about the call: +1 it
 * succeeded, -1 it failed, 0 nothing. A result compared with 0, or with the
 * success value of an API whose success is not 0 (sqlite3_step() ==
 * SQLITE_DONE), says it. */
int kdc_outcome_polarity(const kdc_outcome_t *o, const kdc_expr_t *cond);

/* The successor index of a CFG condition node taken when the call failed
 * (0 true, 1 false), or -1 when the condition says nothing about it. */
int kdc_outcome_failure_edge(const kdc_outcome_t *o, const kdc_expr_t *cond);

#endif
