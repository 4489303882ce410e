/*
 * kdc-bench-watermark: the cost of marking messages done in a confirmed
 * watermark, out of order.
 *
 * 10,000,000 messages over 64 partitions are tracked in poll order, a
 * window of 1024 messages per partition at a time (64 partitions
 * interleaved, like a consumer's batches), then marked done in a random
 * order within the window (workers finishing in any order). Only the marks
 * are timed (the shuffle happens outside the clock): ns per mark. The same
 * is then done with one thread per CPU (2 to 8) marking one window
 * concurrently (the watermark has one mutex): wall-clock ns per mark, all
 * threads together.
 * Every partition's position is checked at the end.
 *
 * Usage: kdc-bench-watermark [marks (10000000)] [partitions (64)]
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include <kdc/kdc.h>

#define WINDOW 1024 /* messages per partition per poll window */
#define MAX_THREADS 8

struct mark {
        int32_t partition;
        int64_t offset;
};

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t rng(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dull;
}

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

struct worker {
        kdc_watermark_t *wm;
        const struct mark *marks;
        size_t from, to;
        long failed;
};

static void *mark_range(void *arg) {
        struct worker *w = arg;

        for (size_t i = w->from; i < w->to; i++)
                if (kdc_watermark_done(w->wm, "orders", w->marks[i].partition,
                                       w->marks[i].offset, 1) != 0)
                        w->failed++;
        return NULL;
}

/* Track and mark `total` messages; returns seconds spent marking (wall
 * clock), or -1 on a wrong result. */
static double run(long total, int partitions, int threads, double *track_s) {
        size_t per_window = (size_t)WINDOW * (size_t)partitions;
        struct mark *marks = malloc(per_window * sizeof(*marks));
        int64_t per_part = total / partitions;
        double marking = 0, tracking = 0;
        kdc_watermark_t *wm;
        long failed = 0;

        if (!marks || kdc_watermark_new(&wm, NULL, 0) != 0)
                return -1;
        for (int64_t base = 0; base < per_part; base += WINDOW) {
                int64_t end = base + WINDOW < per_part ? base + WINDOW : per_part;
                size_t n = 0;
                double t0;

                t0 = now();
                for (int64_t o = base; o < end; o++)
                        for (int32_t p = 0; p < partitions; p++)
                                if (kdc_watermark_track(wm, "orders", p, o, 1) != 0)
                                        return -1;
                tracking += now() - t0;
                for (int64_t o = base; o < end; o++)
                        for (int32_t p = 0; p < partitions; p++)
                                marks[n++] = (struct mark){p, o};
                for (size_t i = n; i > 1; i--) {
                        size_t j = (size_t)(rng() % i);
                        struct mark tmp = marks[i - 1];

                        marks[i - 1] = marks[j];
                        marks[j] = tmp;
                }

                t0 = now();
                if (threads == 1) {
                        struct worker one = {wm, marks, 0, n, 0};

                        mark_range(&one);
                        failed += one.failed;
                } else {
                        struct worker ws[MAX_THREADS];
                        pthread_t th[MAX_THREADS];

                        for (int i = 0; i < threads; i++) {
                                ws[i] = (struct worker){wm, marks, n * (size_t)i / (size_t)threads,
                                                        n * (size_t)(i + 1) / (size_t)threads, 0};
                                pthread_create(&th[i], NULL, mark_range, &ws[i]);
                        }
                        for (int i = 0; i < threads; i++) {
                                pthread_join(th[i], NULL);
                                failed += ws[i].failed;
                        }
                }
                marking += now() - t0;
        }
        for (int32_t p = 0; p < partitions; p++)
                if (kdc_watermark_position(wm, "orders", p) != per_part)
                        failed++;
        kdc_watermark_destroy(wm);
        free(marks);
        *track_s = tracking;
        return failed ? -1 : marking;
}

int main(int argc, char **argv) {
        long total = argc > 1 ? atol(argv[1]) : 10000000;
        int partitions = argc > 2 ? atoi(argv[2]) : 64;
        long marks;
        int threads = (int)sysconf(_SC_NPROCESSORS_ONLN);
        double track_s, s1, sn;

        if (total <= 0 || partitions <= 0) {
                fprintf(stderr, "usage: %s [marks] [partitions]\n", argv[0]);
                return 2;
        }
        marks = total / partitions * partitions;
        threads = threads < 2 ? 2 : threads > MAX_THREADS ? MAX_THREADS : threads;
        printf("kdc-bench-watermark: %ld out-of-order marks over %d partitions "
               "(windows of %d messages per partition, shuffled)\n",
               marks, partitions, WINDOW);
        s1 = run(total, partitions, 1, &track_s);
        if (s1 < 0) {
                fprintf(stderr, "wrong watermark positions (1 thread)\n");
                return 1;
        }
        printf("  1 thread : %6.1f ns per mark (%.2f s), %6.1f ns per track\n",
               s1 * 1e9 / (double)marks, s1, track_s * 1e9 / (double)marks);
        sn = run(total, partitions, threads, &track_s);
        if (sn < 0) {
                fprintf(stderr, "wrong watermark positions (%d threads)\n", threads);
                return 1;
        }
        printf("  %d threads: %6.1f ns per mark, wall clock, all threads "
               "together (%.2f s)\n",
               threads, sn * 1e9 / (double)marks, sn);
        return 0;
}
