/*
 * File signatures: whether a file can have changed since it was read, told
 * from stat(2) alone when that is safe, from its contents otherwise.
 *
 * A signature is what stat says of a file: device, inode, size, and the
 * modification and status-change times in nanoseconds. Writing a file changes
 * its status-change time (ctime), which no user can set back (touch -d and
 * utimes set the modification time only), and replacing it (rename) changes
 * its inode: a file rewritten with the same size and its modification time
 * forged back still has another signature. A file seen with a signature is
 * unchanged while stat gives that signature again.
 *
 * Racily clean files (git's "racy git"): timestamps have the granularity of
 * the kernel's coarse clock (a few milliseconds; a second on some
 * filesystems), so a file written again within that tick after it was seen
 * can keep its signature. A signature is trusted only when both times are
 * older than the moment it was taken (the coarse clock, read before the
 * stat; two seconds older when the filesystem keeps whole seconds); a file
 * seen otherwise is racy, and its contents are compared (XXH3-128) whenever
 * it is checked. So are files whose signature differs (a cache restored on
 * another machine: other inodes and times): they are unchanged when their
 * contents are.
 */
#ifndef KDC_FILESIG_H
#define KDC_FILESIG_H

#include "bytes.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

typedef struct kdc_filesig {
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns;
} kdc_filesig_t;

/* A file as it was read: its signature, taken before its contents were
 * read, and the XXH3-128 digest of those contents. */
typedef struct kdc_fileseen {
    kdc_filesig_t sig;
    unsigned char digest[16];
    uint8_t racy; /* the signature proves nothing: compare the contents */
} kdc_fileseen_t;

/* The coarse clock the kernel stamps files with, now, in nanoseconds: read it
 * before the stat whose signature is to be trusted. */
int64_t kdc_filesig_clock(void);

/* The signature stat gave. */
void kdc_filesig_of(const struct stat *sb, kdc_filesig_t *sig);

/* Is a signature taken at `clock` (kdc_filesig_clock before the stat) racy? */
int kdc_filesig_racy(const kdc_filesig_t *sig, int64_t clock);

int kdc_filesig_equal(const kdc_filesig_t *a, const kdc_filesig_t *b);

/* XXH3-128 of a file's contents as 16 bytes; -1 when it cannot be read. */
int kdc_file_digest(const char *path, unsigned char digest[16]);

/* Reads the file at `path` into *seen (signature by fstat before reading, the
 * digest of what was read). 0, or -1 when it is not a regular file that can
 * be read. */
int kdc_file_see(const char *path, kdc_fileseen_t *seen);

/* *seen for contents already read (`len` bytes at `text`) from a file whose
 * signature `sig` was taken at `clock`. */
void kdc_file_seen_text(const kdc_filesig_t *sig, int64_t clock, const void *text, size_t len,
                        kdc_fileseen_t *seen);

/* What checking a file against how it was seen found. */
enum {
    KDC_FILE_CHANGED = 0,   /* other contents, or gone */
    KDC_FILE_SAME = 1,      /* the same signature, trusted */
    KDC_FILE_SAME_DATA = 2, /* the same contents (the signature differs, or is racy):
                               `now` holds how it is seen now */
};

/* A path starting with this byte (then an absolute path) names a file that did not
 * exist when it was seen, and is unchanged while it still does not (kdc_file_check):
 * where a header could be found first on an include path. */
#define KDC_FILE_ABSENT '\001'

/* Checks the file at `path` against *seen: KDC_FILE_SAME when stat gives the
 * same, trusted signature; else its contents are read and compared:
 * KDC_FILE_SAME_DATA (with *now, when not NULL, as it was seen this time) or
 * KDC_FILE_CHANGED. */
int kdc_file_check(const char *path, const kdc_fileseen_t *seen, kdc_fileseen_t *now);

/* As bytes (bytes.h): a signature, and a file seen (its signature, digest, racy). */
void kdc_filesig_put(kdc_buf_t *b, const kdc_filesig_t *sig);
void kdc_filesig_get(kdc_reader_t *r, kdc_filesig_t *sig);
void kdc_fileseen_put(kdc_buf_t *b, const kdc_fileseen_t *seen);
void kdc_fileseen_get(kdc_reader_t *r, kdc_fileseen_t *seen);

#endif
