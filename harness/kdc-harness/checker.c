/* The verdict, Jepsen-style: from the events the broker stored (each with
 * its partition and offset) and what the service left behind (outputs and
 * DLQ records per event, committed offsets per partition), count
 *   lost        below the committed offset, no output and no DLQ record
 *   duplicated  more than one output record
 *   unprocessed at or above the committed offset
 * and, in a run with a sink, the effects: lost is then committed with no row
 * and no DLQ record, and an event with more than one row has a duplicate
 * effect (a non-idempotent write replayed).
 * No Kafka here: tests feed it histories directly. */
#include <stdlib.h>
#include <string.h>

#include "internal.h"

static int append(struct tk_verdict *v, int list, int64_t i) {
        size_t n = v->nlists[list];

        /* grow at powers of two */
        if ((n & (n - 1)) == 0) {
                int64_t *p = realloc(v->lists[list], (n ? 2 * n : 1) * sizeof *p);
                if (!p)
                        return -1;
                v->lists[list] = p;
        }
        v->lists[list][n] = i;
        v->nlists[list] = n + 1;
        return 0;
}

int tk_check(const struct tk_event *ev, int64_t n, const int64_t *committed, int partitions,
             struct tk_verdict *v) {
        return tk_check_effects(ev, n, committed, partitions, 0, v);
}

int tk_check_effects(const struct tk_event *ev, int64_t n, const int64_t *committed, int partitions,
                     int sink, struct tk_verdict *v) {
        memset(v, 0, sizeof *v);
        for (int64_t i = 0; i < n; i++) {
                const struct tk_event *e = &ev[i];
                int covered;

                if (e->offset < 0 || e->partition < 0 || e->partition >= partitions)
                        continue; /* never stored: not an event of this run */
                v->events++;
                v->poison += e->poison;
                v->processed += e->outputs > 0;
                v->dead_lettered += e->dlq > 0;
                covered = committed[e->partition] >= 0 && e->offset < committed[e->partition];
                if (covered) {
                        v->committed++;
                        if ((sink ? e->effects : e->outputs) == 0 && e->dlq == 0) {
                                v->lost++;
                                if (append(v, KDC_TESTKIT_LOST, i))
                                        return KDC_ERR_NOMEM;
                        }
                } else {
                        v->unprocessed++;
                        if (append(v, KDC_TESTKIT_UNPROCESSED, i))
                                return KDC_ERR_NOMEM;
                }
                if (e->outputs > 1) {
                        v->duplicated++;
                        if (append(v, KDC_TESTKIT_DUPLICATED, i))
                                return KDC_ERR_NOMEM;
                }
                v->effected += e->effects > 0;
                if (e->effects > 1) {
                        v->duplicate_effects++;
                        if (append(v, KDC_TESTKIT_DUPLICATE_EFFECTS, i))
                                return KDC_ERR_NOMEM;
                }
        }
        return 0;
}

const char *tk_judge(const struct tk_verdict *v, int64_t output_records, int64_t dlq_records,
                     int64_t dropped_records, int exactly_once, int require_complete) {
        /* Records the mock cluster deleted cannot be read back: an event
         * whose only output was deleted would look lost. No verdict. */
        if (dropped_records > 0)
                return "records dropped by the mock cluster";
        if (v->lost > 0)
                return "events lost";
        /* Nothing lost because nothing was done is no evidence: a service
         * that crash-loops, hangs or reads another topic must not pass. */
        if (v->events > 0 && v->committed == 0 && output_records == 0 && dlq_records == 0)
                return "nothing processed";
        if (exactly_once && v->duplicated > 0)
                return "events duplicated";
        if (exactly_once && v->duplicate_effects > 0)
                return "effects duplicated";
        if (require_complete && v->unprocessed > 0)
                return "events unprocessed";
        return NULL;
}

void tk_verdict_free(struct tk_verdict *v) {
        for (int i = 0; i < 4; i++)
                free(v->lists[i]);
        memset(v, 0, sizeof *v);
}
