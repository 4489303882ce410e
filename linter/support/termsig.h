/*
 * A run ended by a signal leaves no temporary file.
 *
 * The termination signals are SIGINT, SIGTERM and SIGHUP. kdc-lint's driver holds them
 * in every thread and takes them in one (main.c), which ends the run cleanly: it waits
 * for a write in progress, ends and reaps the parser processes (jobs.h), then ends the
 * process with the same signal (a shell sees "killed by SIGINT", exit status 128 + N).
 *
 * A file kdc-lint writes by replacing another (a cache entry, the baseline) is written to
 * a temporary file renamed into place. That is a section: kdc_termsig_enter() before the
 * temporary file is created, kdc_termsig_leave() once it is renamed or removed. In a
 * section the termination signals are held in the calling thread (a parser process that
 * gets one ends when its write is done), and kdc_termsig_stop() waits for the section to
 * end and lets no other begin. So a signal ends a process between two writes, never in
 * one.
 */
#ifndef KDC_TERMSIG_H
#define KDC_TERMSIG_H

#include <signal.h>

/* SIGINT, SIGTERM, SIGHUP. */
void kdc_termsig_set(sigset_t *set);

/* Begins and ends a section in which a temporary file exists (see above). Sections do not
 * nest. */
void kdc_termsig_enter(void);
void kdc_termsig_leave(void);

/* Waits for the section in progress, if any, and keeps every later kdc_termsig_enter()
 * waiting for ever: for the thread that ends the process. */
void kdc_termsig_stop(void);

#endif
