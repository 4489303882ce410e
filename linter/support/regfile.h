/*
 * Inputs opened as what they claim to be, outputs that replace nothing else.
 *
 * Every file kdc-lint reads (sources, the headers it reads itself, compilation
 * databases, configurations, baselines, reports to merge) must be a regular file:
 * a FIFO, a device, a socket or a directory is refused before anything could block
 * (the open does not wait for a FIFO's writer, and nothing is read from it), with
 * one message naming what the path is. A file kdc-lint writes by replacing it (a
 * temporary file renamed into place: the baseline) may only replace a regular file
 * or create a new one; through a symbolic link, the file the link names is replaced.
 */
#ifndef KDC_REGFILE_H
#define KDC_REGFILE_H

#include <stddef.h>
#include <stdio.h>
#include <sys/types.h>

/* "a directory", "a FIFO", "a character device", "a block device", "a socket",
 * "a symbolic link" or "not a regular file", for messages about mode's file type. */
const char *kdc_file_kind(mode_t mode);

/* Opens path for reading (close-on-exec) when it is a regular file: returns the
 * descriptor, in blocking mode. Otherwise -1, with *why (malloc'd) saying why:
 * strerror(errno) when it cannot be opened, "a FIFO, not a regular file" and the
 * like when it is no regular file (errno EINVAL then). */
int kdc_open_regular(const char *path, char **why);

/* kdc_open_regular as a stdio stream ("r"), or NULL (why is not kept): for the
 * source lines a report shows. */
FILE *kdc_fopen_regular(const char *path);

/* The whole regular file path (malloc'd, NUL-terminated, *len bytes without the
 * NUL), or NULL with *why as kdc_open_regular's (or "larger than N bytes" when it
 * holds more than max bytes; max 0: no limit). */
char *kdc_read_regular(const char *path, size_t max, size_t *len, char **why);

/* 1 when the regular file path holds a NUL byte anywhere (binary, not text), 0 when
 * it holds none, -1 when it cannot be read as a regular file. */
int kdc_regular_has_nul(const char *path);

/* The file that writing path by replacement would replace: path itself when it
 * names nothing yet or a regular file; the file a symbolic link names when that is
 * a regular file or nothing yet (malloc'd). NULL with *why (malloc'd) when it names
 * anything else ("a character device, not a regular file: not replacing it"). */
char *kdc_replaceable_target(const char *path, char **why);

#endif
