/* File signatures (see filesig.h). */
#define _GNU_SOURCE
#include "filesig.h"
#include "regfile.h"
#include "util.h"

#include <fcntl.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define NS 1000000000LL

int64_t kdc_filesig_clock(void) {
    struct timespec ts;
    if (clock_gettime(CLOCK_REALTIME_COARSE, &ts) != 0)
        clock_gettime(CLOCK_REALTIME, &ts);
    return (int64_t)ts.tv_sec * NS + ts.tv_nsec;
}

void kdc_filesig_of(const struct stat *sb, kdc_filesig_t *sig) {
    memset(sig, 0, sizeof *sig);
    sig->dev = (uint64_t)sb->st_dev;
    sig->ino = (uint64_t)sb->st_ino;
    sig->size = (uint64_t)sb->st_size;
    sig->mtime_ns = (int64_t)sb->st_mtim.tv_sec * NS + sb->st_mtim.tv_nsec;
    sig->ctime_ns = (int64_t)sb->st_ctim.tv_sec * NS + sb->st_ctim.tv_nsec;
}

int kdc_filesig_racy(const kdc_filesig_t *sig, int64_t clock) {
    /* whole seconds: a filesystem that keeps no more (FAT keeps two) */
    int64_t margin = sig->mtime_ns % NS == 0 && sig->ctime_ns % NS == 0 ? 2 * NS : 0;
    return sig->mtime_ns >= clock - margin || sig->ctime_ns >= clock - margin;
}

int kdc_filesig_equal(const kdc_filesig_t *a, const kdc_filesig_t *b) {
    return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

static void digest_bytes(XXH128_hash_t h, unsigned char out[16]) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(out, canon.digest, 16);
}

void kdc_file_seen_text(const kdc_filesig_t *sig, int64_t clock, const void *text, size_t len,
                        kdc_fileseen_t *seen) {
    memset(seen, 0, sizeof *seen);
    seen->sig = *sig;
    seen->racy = (uint8_t)kdc_filesig_racy(sig, clock);
    digest_bytes(XXH3_128bits(text, len), seen->digest);
}

/* XXH3-128 of what is left to read of fd, as 16 bytes; -1 on a read error. */
static int fd_digest(int fd, unsigned char digest[16]) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    static _Thread_local unsigned char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        XXH3_128bits_update(st, buf, (size_t)n);
    if (n == 0)
        digest_bytes(XXH3_128bits_digest(st), digest);
    XXH3_freeState(st);
    return n == 0 ? 0 : -1;
}

int kdc_file_digest(const char *path, unsigned char digest[16]) {
    char *why = NULL;
    int fd = kdc_open_regular(path, &why); /* a FIFO in a file's place must not block */
    free(why);
    if (fd < 0)
        return -1;
    int r = fd_digest(fd, digest);
    close(fd);
    return r;
}

int kdc_file_see(const char *path, kdc_fileseen_t *seen) {
    int64_t clock = kdc_filesig_clock();
    /* O_NONBLOCK: a FIFO in a file's place must not block the open (fstat refuses it) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode)) {
        close(fd);
        return -1;
    }
    memset(seen, 0, sizeof *seen);
    int r = fd_digest(fd, seen->digest);
    close(fd);
    if (r == 0) {
        kdc_filesig_of(&sb, &seen->sig);
        seen->racy = (uint8_t)kdc_filesig_racy(&seen->sig, clock);
    }
    return r;
}

int kdc_file_check(const char *path, const kdc_fileseen_t *seen, kdc_fileseen_t *now) {
    struct stat sb;
    if (path[0] == KDC_FILE_ABSENT)
        return stat(path + 1, &sb) != 0 ? KDC_FILE_SAME : KDC_FILE_CHANGED;
    if (!seen->racy && stat(path, &sb) == 0) {
        kdc_filesig_t sig;
        kdc_filesig_of(&sb, &sig);
        if (kdc_filesig_equal(&sig, &seen->sig))
            return KDC_FILE_SAME;
    }
    kdc_fileseen_t fresh;
    if (kdc_file_see(path, &fresh) != 0 || memcmp(fresh.digest, seen->digest, 16) != 0)
        return KDC_FILE_CHANGED;
    if (now)
        *now = fresh;
    return KDC_FILE_SAME_DATA;
}

void kdc_filesig_put(kdc_buf_t *b, const kdc_filesig_t *sig) {
    kdc_buf_u64(b, sig->dev);
    kdc_buf_u64(b, sig->ino);
    kdc_buf_u64(b, sig->size);
    kdc_buf_u64(b, (uint64_t)sig->mtime_ns);
    kdc_buf_u64(b, (uint64_t)sig->ctime_ns);
}

void kdc_filesig_get(kdc_reader_t *r, kdc_filesig_t *sig) {
    sig->dev = kdc_read_u64(r);
    sig->ino = kdc_read_u64(r);
    sig->size = kdc_read_u64(r);
    sig->mtime_ns = (int64_t)kdc_read_u64(r);
    sig->ctime_ns = (int64_t)kdc_read_u64(r);
}

void kdc_fileseen_put(kdc_buf_t *b, const kdc_fileseen_t *seen) {
    kdc_filesig_put(b, &seen->sig);
    kdc_buf_put(b, seen->digest, 16);
    kdc_buf_u8(b, seen->racy);
}

void kdc_fileseen_get(kdc_reader_t *r, kdc_fileseen_t *seen) {
    kdc_filesig_get(r, &seen->sig);
    kdc_read_bytes(r, seen->digest, 16);
    seen->racy = kdc_read_u8(r) != 0;
}
