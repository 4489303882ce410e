/* The confirmed watermark's data structure (harness/libkdc/watermark.c) without a
 * broker: track / done / position need no librdkafka client, so these tests
 * start no librdkafka thread and run under ThreadSanitizer (tsan preset)
 * with every thread known to it. Commits against the mock cluster are in
 * test_watermark.c. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include <cmocka.h>

#include <kdc/kdc.h>

static void out_of_order_marks_advance_only_the_contiguous_done_prefix(
    void **state) {
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        for (int64_t o = 0; o < 10; o++)
                assert_int_equal(kdc_watermark_track(wm, "t", 0, o, 1), 0);
        for (int64_t o = 9; o >= 3; o--)
                assert_int_equal(kdc_watermark_done(wm, "t", 0, o, 1), 0);
        /* 0, 1, 2 are still in flight: nothing may be committed. */
        assert_int_equal(kdc_watermark_position(wm, "t", 0), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 1);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 2);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 2, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 10);
        /* Another partition is independent. */
        assert_int_equal(kdc_watermark_position(wm, "t", 1), KDC_ERR_NOENT);
        kdc_watermark_destroy(wm);
}

static void offsets_never_polled_do_not_wedge_the_watermark(void **state) {
        static const int64_t polled[] = {0, 1, 5, 6, 100}; /* gaps */
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        for (size_t i = 0; i < 5; i++)
                assert_int_equal(kdc_watermark_track(wm, "t", 0, polled[i], 7),
                                 0);
        for (size_t i = 5; i-- > 0;)
                assert_int_equal(kdc_watermark_done(wm, "t", 0, polled[i], 7),
                                 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 101);
        /* An offset in a gap was never polled: nothing to mark. */
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 3, 7), KDC_ERR_NOENT);
        kdc_watermark_destroy(wm);
}

static void a_new_epoch_discards_the_old_state_and_refuses_its_marks(
    void **state) {
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        for (int64_t o = 0; o < 5; o++)
                assert_int_equal(kdc_watermark_track(wm, "t", 0, o, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 1);

        /* Re-assigned: polling resumes at the committed offset, 1. */
        assert_int_equal(kdc_watermark_track(wm, "t", 0, 1, 2), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 2, 1), KDC_ERR_STALE);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 1), KDC_ERR_STALE);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 2), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 2);
        kdc_watermark_destroy(wm);
}

static void marking_twice_or_an_untracked_offset_is_noent(void **state) {
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_track(wm, "t", 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_track(wm, "t", 0, 1, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 1), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), 0);
        /* Already passed by the watermark. */
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 2);
        kdc_watermark_destroy(wm);
}

static void seeking_back_discards_the_entries_that_will_be_polled_again(
    void **state) {
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        for (int64_t o = 0; o < 6; o++)
                assert_int_equal(kdc_watermark_track(wm, "t", 0, o, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 0, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 4, 1), 0);
        /* The application seeks back to 3: 3, 4, 5 come again. */
        assert_int_equal(kdc_watermark_track(wm, "t", 0, 3, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 5, 1), KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 1, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 2, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 3);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, 3, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), 4);
        kdc_watermark_destroy(wm);
}

static void invalid_arguments_are_refused(void **state) {
        kdc_watermark_t *wm;

        (void)state;
        assert_int_equal(kdc_watermark_new(NULL, NULL, 0), KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_new(&wm, NULL, -1), KDC_ERR_INVALID);
        assert_null(wm);
        assert_int_equal(kdc_watermark_new(&wm, NULL, 1000), 0);
        assert_int_equal(kdc_watermark_track(NULL, "t", 0, 0, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_track(wm, NULL, 0, 0, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_track(wm, "t", 0, -1, 1),
                         KDC_ERR_INVALID);
        /* No partition -1 (RD_KAFKA_PARTITION_UA is no message's), and no
         * offset whose next offset is not one. */
        assert_int_equal(kdc_watermark_track(wm, "t", -1, 0, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_done(wm, "t", -1, 0, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_track(wm, "t", 0, INT64_MAX, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_done(wm, "t", 0, INT64_MAX, 1),
                         KDC_ERR_NOENT);
        assert_int_equal(kdc_watermark_position(wm, "t", 0), KDC_ERR_NOENT);
        /* The largest trackable offset commits INT64_MAX. */
        assert_int_equal(kdc_watermark_track(wm, "t", 1, INT64_MAX - 1, 1), 0);
        assert_int_equal(kdc_watermark_done(wm, "t", 1, INT64_MAX - 1, 1), 0);
        assert_int_equal(kdc_watermark_position(wm, "t", 1), INT64_MAX);
        assert_int_equal(kdc_watermark_done(wm, NULL, 0, 0, 1),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_position(NULL, "t", 0),
                         KDC_ERR_INVALID);
        assert_int_equal(kdc_watermark_commit(wm, NULL, 1, NULL, NULL),
                         KDC_ERR_INVALID);
        kdc_watermark_destroy(wm);
        kdc_watermark_destroy(NULL);
}

/* ---- workers marking concurrently with the polling thread tracking ---- */

enum { PARTS = 16, PER_PART = 4096, WORKERS = 8, WINDOW = 256 };
_Static_assert(PER_PART % WINDOW == 0, "whole windows");

struct work {
        int32_t partition;
        int64_t offset;
};

/* Work handed from the polling thread to the workers: a window of polled
 * messages at a time, in shuffled order. */
struct feed {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct work *items;
        size_t len, next;
        int finished;
};

static struct work *take(struct feed *f, struct work *out) {
        struct work *w = NULL;

        pthread_mutex_lock(&f->lock);
        while (f->next == f->len && !f->finished)
                pthread_cond_wait(&f->cond, &f->lock);
        if (f->next < f->len) {
                *out = f->items[f->next++];
                w = out;
        }
        pthread_mutex_unlock(&f->lock);
        return w;
}

struct worker {
        kdc_watermark_t *wm;
        struct feed *feed;
        char topics[PARTS][8];
        long marked;
        long errors;
};

static void *mark_done(void *arg) {
        struct worker *w = arg;
        struct work item;

        while (take(w->feed, &item))
                if (kdc_watermark_done(w->wm, "orders", item.partition,
                                       item.offset, 1) == 0)
                        w->marked++;
                else
                        w->errors++;
        return NULL;
}

static uint64_t rng_state = 0x243f6a8885a308d3ull;

static uint64_t rng(void) {
        rng_state ^= rng_state >> 12;
        rng_state ^= rng_state << 25;
        rng_state ^= rng_state >> 27;
        return rng_state * 0x2545f4914f6cdd1dull;
}

static void workers_marking_while_the_poller_tracks_end_at_every_last_offset(
    void **state) {
        struct worker workers[WORKERS];
        pthread_t threads[WORKERS];
        struct feed feed = {0};
        kdc_watermark_t *wm;
        long marked = 0, errors = 0;
        const size_t total = (size_t)PARTS * PER_PART;

        (void)state;
        assert_int_equal(kdc_watermark_new(&wm, NULL, 0), 0);
        pthread_mutex_init(&feed.lock, NULL);
        pthread_cond_init(&feed.cond, NULL);
        feed.items = calloc(total, sizeof(*feed.items));
        assert_non_null(feed.items);
        for (int i = 0; i < WORKERS; i++) {
                workers[i] = (struct worker){.wm = wm, .feed = &feed};
                assert_int_equal(
                    pthread_create(&threads[i], NULL, mark_done, &workers[i]),
                    0);
        }

        /* Poll order: partitions interleaved, offsets ascending per
         * partition with a gap every 10 (compaction). Track a window, then
         * hand it to the workers shuffled, while they still mark earlier
         * windows. */
        for (int64_t base = 0; base < PER_PART; base += WINDOW) {
                struct work window[PARTS * WINDOW];
                size_t n = 0;

                for (int64_t o = base; o < base + WINDOW; o++)
                        for (int32_t p = 0; p < PARTS; p++) {
                                int64_t offset = o + o / 10; /* gaps */

                                assert_int_equal(kdc_watermark_track(wm,
                                                                     "orders",
                                                                     p, offset,
                                                                     1),
                                                 0);
                                window[n++] = (struct work){p, offset};
                        }
                for (size_t i = n; i > 1; i--) {
                        size_t j = (size_t)(rng() % i);
                        struct work tmp = window[i - 1];

                        window[i - 1] = window[j];
                        window[j] = tmp;
                }
                pthread_mutex_lock(&feed.lock);
                for (size_t i = 0; i < n; i++)
                        feed.items[feed.len++] = window[i];
                pthread_cond_broadcast(&feed.cond);
                pthread_mutex_unlock(&feed.lock);
        }
        pthread_mutex_lock(&feed.lock);
        feed.finished = 1;
        pthread_cond_broadcast(&feed.cond);
        pthread_mutex_unlock(&feed.lock);
        for (int i = 0; i < WORKERS; i++) {
                pthread_join(threads[i], NULL);
                marked += workers[i].marked;
                errors += workers[i].errors;
        }

        assert_int_equal(errors, 0);
        assert_int_equal(marked, (long)total);
        for (int32_t p = 0; p < PARTS; p++) {
                int64_t last = (PER_PART - 1) + (PER_PART - 1) / 10;

                assert_int_equal(kdc_watermark_position(wm, "orders", p),
                                 last + 1);
        }
        free(feed.items);
        pthread_mutex_destroy(&feed.lock);
        pthread_cond_destroy(&feed.cond);
        kdc_watermark_destroy(wm);
}

#define SENTENCE(text, fn) {text, fn, NULL, NULL, NULL}

int main(void) {
        const struct CMUnitTest tests[] = {
            SENTENCE("out-of-order marks advance only the contiguous done "
                     "prefix",
                     out_of_order_marks_advance_only_the_contiguous_done_prefix),
            SENTENCE("offsets never polled (compaction, transaction markers) "
                     "do not wedge the watermark",
                     offsets_never_polled_do_not_wedge_the_watermark),
            SENTENCE("a new epoch discards the old epoch's state and refuses "
                     "its marks",
                     a_new_epoch_discards_the_old_state_and_refuses_its_marks),
            SENTENCE("marking twice, or an offset never tracked, is "
                     "KDC_ERR_NOENT",
                     marking_twice_or_an_untracked_offset_is_noent),
            SENTENCE("seeking back discards the tracked entries that will be "
                     "polled again",
                     seeking_back_discards_the_entries_that_will_be_polled_again),
            SENTENCE("invalid arguments are refused",
                     invalid_arguments_are_refused),
            SENTENCE("eight workers marking 65,536 offsets of 16 partitions in "
                     "shuffled order while the poller tracks end at every "
                     "partition's last offset + 1",
                     workers_marking_while_the_poller_tracks_end_at_every_last_offset),
        };

        return cmocka_run_group_tests_name("confirmed watermark core (threads)",
                                           tests, NULL, NULL);
}
