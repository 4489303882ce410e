/*
 * ThreadSanitizer support for tests that run librdkafka threads (tsan
 * preset only; linked into the harness tests by tests/harness/libkdc/CMakeLists.txt
 * when the build uses -fsanitize=thread).
 *
 * Debian's librdkafka 2.0.2 creates its threads with C11 thrd_create() and
 * synchronizes with mtx_*()/cnd_*(). glibc implements those without going
 * through pthread_create()/pthread_mutex_lock(), which is where
 * ThreadSanitizer intercepts, so TSan never learns those threads exist (it
 * crashes as soon as one runs instrumented code, e.g. a log callback) nor
 * sees librdkafka's locks. Defining the C11 functions here, in the test
 * executable, interposes them for librdkafka (an executable's definitions
 * win symbol lookup, the same way TSan's own interceptors do): each maps to
 * its pthread equivalent, which TSan does intercept. glibc lays mtx_t,
 * cnd_t, once_flag and thrd_t out as pthread_mutex_t, pthread_cond_t,
 * pthread_once_t and pthread_t.
 *
 * librdkafka itself stays uninstrumented: its plain and atomic memory
 * accesses are invisible to TSan, which is why tests/harness/libkdc/tsan.supp
 * suppresses reports whose stack is inside librdkafka. Races in libkdc and
 * in the tests are still reported, with librdkafka's threads and locks
 * known to TSan.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <threads.h>

_Static_assert(sizeof(mtx_t) == sizeof(pthread_mutex_t), "mtx_t layout");
_Static_assert(sizeof(cnd_t) == sizeof(pthread_cond_t), "cnd_t layout");
_Static_assert(sizeof(thrd_t) == sizeof(pthread_t), "thrd_t layout");
_Static_assert(sizeof(once_flag) == sizeof(pthread_once_t), "once layout");

struct start {
        thrd_start_t func;
        void *arg;
};

static void *trampoline(void *p) {
        struct start s = *(struct start *)p;

        free(p);
        return (void *)(intptr_t)s.func(s.arg);
}

int thrd_create(thrd_t *thr, thrd_start_t func, void *arg) {
        struct start *s = malloc(sizeof(*s));
        int r;

        if (!s)
                return thrd_nomem;
        s->func = func;
        s->arg = arg;
        r = pthread_create((pthread_t *)thr, NULL, trampoline, s);
        if (r) {
                free(s);
                return r == ENOMEM ? thrd_nomem : thrd_error;
        }
        return thrd_success;
}

int thrd_join(thrd_t thr, int *res) {
        void *ret;

        if (pthread_join((pthread_t)thr, &ret))
                return thrd_error;
        if (res)
                *res = (int)(intptr_t)ret;
        return thrd_success;
}

int thrd_detach(thrd_t thr) {
        return pthread_detach((pthread_t)thr) ? thrd_error : thrd_success;
}

int mtx_init(mtx_t *m, int type) {
        pthread_mutexattr_t a;
        int r;

        pthread_mutexattr_init(&a);
        if (type & mtx_recursive)
                pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
        r = pthread_mutex_init((pthread_mutex_t *)m, &a);
        pthread_mutexattr_destroy(&a);
        return r ? thrd_error : thrd_success;
}

void mtx_destroy(mtx_t *m) { pthread_mutex_destroy((pthread_mutex_t *)m); }

int mtx_lock(mtx_t *m) {
        return pthread_mutex_lock((pthread_mutex_t *)m) ? thrd_error
                                                        : thrd_success;
}

int mtx_trylock(mtx_t *m) {
        int r = pthread_mutex_trylock((pthread_mutex_t *)m);

        return r == 0 ? thrd_success : r == EBUSY ? thrd_busy : thrd_error;
}

int mtx_unlock(mtx_t *m) {
        return pthread_mutex_unlock((pthread_mutex_t *)m) ? thrd_error
                                                          : thrd_success;
}

int cnd_init(cnd_t *c) {
        return pthread_cond_init((pthread_cond_t *)c, NULL) ? thrd_error
                                                            : thrd_success;
}

void cnd_destroy(cnd_t *c) { pthread_cond_destroy((pthread_cond_t *)c); }

int cnd_signal(cnd_t *c) {
        return pthread_cond_signal((pthread_cond_t *)c) ? thrd_error
                                                        : thrd_success;
}

int cnd_broadcast(cnd_t *c) {
        return pthread_cond_broadcast((pthread_cond_t *)c) ? thrd_error
                                                           : thrd_success;
}

int cnd_wait(cnd_t *c, mtx_t *m) {
        return pthread_cond_wait((pthread_cond_t *)c, (pthread_mutex_t *)m)
                   ? thrd_error
                   : thrd_success;
}

int cnd_timedwait(cnd_t *c, mtx_t *m, const struct timespec *ts) {
        int r = pthread_cond_timedwait((pthread_cond_t *)c,
                                       (pthread_mutex_t *)m, ts);

        return r == 0 ? thrd_success : r == ETIMEDOUT ? thrd_timedout
                                                      : thrd_error;
}

void call_once(once_flag *flag, void (*func)(void)) {
        pthread_once((pthread_once_t *)flag, func);
}
