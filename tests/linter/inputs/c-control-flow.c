/*
 * C control flow kdc-lint must get through (test_cli.c): goto-heavy error
 * handling, switch fallthrough, computed goto, setjmp/longjmp, a GNU
 * statement expression and K&R definitions. Every bare commit below whose
 * comment says "reported" is reported, each once; the file compiles with
 * gcc -std=gnu11 -fsyntax-only.
 */
#include <librdkafka/rdkafka.h>
#include <setjmp.h>
#include <stdlib.h>

static jmp_buf env;

int consume(rd_kafka_t *rk, rd_kafka_message_t *m) {
    int rc = -1;
    char *buf = malloc(16);
    if (!buf)
        goto out;
    if (m->err)
        goto free_buf;
    if (m->len == 0)
        goto free_buf;
    rd_kafka_commit(rk, NULL, 0); /* reported */
    rc = 0;
free_buf:
    free(buf);
out:
    return rc;
}

int classify(rd_kafka_t *rk, int k) {
    switch (k) {
    case 0:
    case 1:
        k++;
        /* fall through */
    case 2:
        rd_kafka_commit(rk, NULL, 1); /* reported */
        break;
    default:
        return -1;
    }
    return k;
}

int interp(rd_kafka_t *rk, const unsigned char *code) {
    static void *tbl[] = {&&op_commit, &&op_halt};
    goto *tbl[*code];
op_commit:
    rd_kafka_commit(rk, NULL, 0); /* reported */
    code++;
    goto *tbl[*code];
op_halt:
    return 0;
}

static void fail(void) { longjmp(env, 1); }

int guarded(rd_kafka_t *rk) {
    if (setjmp(env))
        return -1;
    fail();
    rd_kafka_commit(rk, NULL, 0); /* reported */
    return 0;
}

/* Every statement of a statement expression is modelled: the commit in the
 * macro is reported at the macro's use. */
#define COMMIT_AND(rk, v) ({ rd_kafka_commit(rk, NULL, 0); (v) + 1; })
int stmt_expr(rd_kafka_t *rk) { return COMMIT_AND(rk, 41); }

int knr(rk, n)
    rd_kafka_t *rk;
    int n;
{
    if (n)
        rd_kafka_commit(rk, NULL, 0); /* reported */
    return n;
}

int old_style();
int old_style(a) int a; { return a; }
