/* A run ended by a signal leaves no temporary file (see termsig.h). */
#include "termsig.h"

#include <pthread.h>

/* One section at a time in a process: writes of temporary files are short (an entry, a
 * baseline), and the lock is what kdc_termsig_stop() waits on. */
static pthread_mutex_t section = PTHREAD_MUTEX_INITIALIZER;
static sigset_t held_before; /* the caller's mask, restored by kdc_termsig_leave() */

void kdc_termsig_set(sigset_t *set) {
    sigemptyset(set);
    sigaddset(set, SIGINT);
    sigaddset(set, SIGTERM);
    sigaddset(set, SIGHUP);
}

void kdc_termsig_enter(void) {
    sigset_t term, before;
    kdc_termsig_set(&term);
    pthread_sigmask(SIG_BLOCK, &term, &before);
    pthread_mutex_lock(&section);
    held_before = before;
}

void kdc_termsig_leave(void) {
    sigset_t before = held_before;
    pthread_mutex_unlock(&section);
    pthread_sigmask(SIG_SETMASK, &before, NULL); /* a signal held meanwhile arrives now */
}

void kdc_termsig_stop(void) {
    pthread_mutex_lock(&section); /* never unlocked: the process is ending */
}
