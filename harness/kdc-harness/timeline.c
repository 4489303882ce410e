/* What the run looked like over time, for the HTML report (see internal.h). */
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "internal.h"

int tk_timeline_sample(struct tk_timeline *tl, const struct tk_sample *s) {
        if (tl->nsamples == tl->capsamples) {
                size_t cap = tl->capsamples ? tl->capsamples * 2 : 256;
                struct tk_sample *p = realloc(tl->samples, cap * sizeof *p);
                if (!p)
                        return KDC_ERR_NOMEM;
                tl->samples = p;
                tl->capsamples = cap;
        }
        tl->samples[tl->nsamples++] = *s;
        return 0;
}

/* Does step `undo` end the window `m` opened? */
static int undoes(const struct tk_step *undo, const struct tk_mark *m) {
        const struct tk_step *st = &m->step;
        switch (undo->action) {
        case TK_BROKER_UP:
                return st->action == TK_BROKER_DOWN &&
                       (undo->broker < 0 || st->broker == undo->broker);
        case TK_RESUME:
                return st->action == TK_PAUSE && st->instance == undo->instance;
        case TK_START:
                return st->action == TK_STOP && st->instance == undo->instance;
        case TK_SINK_UNLOCK:
                return st->action == TK_SINK_LOCK;
        case TK_SINK_ROOM:
                return st->action == TK_SINK_FULL;
        case TK_SINK_ACCEPT:
                return st->action == TK_SINK_REJECT;
        case TK_SINK_START:
                return st->action == TK_SINK_STOP;
        case TK_SINK_GRANT:
                return st->action == TK_SINK_REVOKE;
        default:
                return 0;
        }
}

int tk_timeline_mark(struct tk_timeline *tl, int32_t t_ms, const struct tk_step *st,
                     const char *what) {
        /* the step that undoes a window ends it, and is no mark of its own */
        int closed = 0;
        for (size_t i = 0; i < tl->nmarks; i++)
                if (tl->marks[i].end_ms == INT32_MAX && undoes(st, &tl->marks[i])) {
                        tl->marks[i].end_ms = t_ms;
                        closed = 1;
                }
        if (closed)
                return 0;
        struct tk_mark *p = realloc(tl->marks, (tl->nmarks + 1) * sizeof *p);
        if (!p)
                return KDC_ERR_NOMEM;
        tl->marks = p;
        struct tk_mark *m = &tl->marks[tl->nmarks++];
        memset(m, 0, sizeof *m);
        m->t_ms = t_ms;
        m->step = *st;
        snprintf(m->what, sizeof m->what, "%s", what);
        switch (st->action) {
        case TK_BROKER_DOWN:
        case TK_PAUSE:
        case TK_STOP:
        case TK_SINK_LOCK:
        case TK_SINK_FULL:
        case TK_SINK_REJECT:
        case TK_SINK_STOP:
        case TK_SINK_REVOKE:
                m->end_ms = INT32_MAX; /* open until undone, or the end */
                break;
        case TK_KILL: /* down until its restart */
                m->end_ms = t_ms + (st->delay_ms > 0 ? st->delay_ms : 0);
                break;
        default:
                m->end_ms = -1;
        }
        return 0;
}

static int32_t *times_of(const struct tk_event *ev, int64_t events, int64_t t0, const int64_t *idx,
                         size_t n) {
        int32_t *at = malloc((n ? n : 1) * sizeof *at);
        if (!at)
                return NULL;
        for (size_t i = 0; i < n; i++) {
                int64_t k = idx[i];
                int64_t ms = k >= 0 && k < events && ev[k].stored_ms ? ev[k].stored_ms - t0 : 0;
                at[i] = (int32_t)(ms < 0 ? 0 : ms > INT32_MAX ? INT32_MAX : ms);
        }
        return at;
}

int tk_timeline_end(struct tk_timeline *tl, int32_t end_ms, int64_t t0, const struct tk_event *ev,
                    int64_t events, const int64_t *lost, size_t nlost, const int64_t *dup,
                    size_t ndup) {
        tl->end_ms = end_ms;
        tl->events = events;
        for (size_t i = 0; i < tl->nmarks; i++)
                if (tl->marks[i].end_ms > end_ms)
                        tl->marks[i].end_ms = end_ms;
        if (!(tl->at[0] = times_of(ev, events, t0, lost, nlost)) ||
            !(tl->at[1] = times_of(ev, events, t0, dup, ndup)))
                return KDC_ERR_NOMEM;
        tl->nat[0] = nlost;
        tl->nat[1] = ndup;
        return 0;
}

void tk_timeline_free(struct tk_timeline *tl) {
        free(tl->samples);
        free(tl->marks);
        free(tl->at[0]);
        free(tl->at[1]);
        memset(tl, 0, sizeof *tl);
}
