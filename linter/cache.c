/* The unit cache (see cache.h). */
#define _GNU_SOURCE
#include "cache.h"
#include "filesig.h"
#include "libclang_lazy.h"
#include "rule.h"
#include "util.h"

#include <elf.h>
#include <link.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

#define ENTRY_MAGIC "KDCC"
#define ENTRY_FORMAT 2u
#define RUN_MAGIC "KDCR" /* the analysis of a whole program */
#define RUN_FORMAT 1u
#define ENTRY_MAX ((size_t)1 << 30) /* larger than any model: a damaged length */

/* What this process knows of a file's current state: each file is stat'ed at most once,
 * and read at most once, per process. */
typedef struct file_now {
    int stated, stat_ok;
    kdc_filesig_t sig;
    int read, read_ok;
    kdc_fileseen_t seen;
} file_now_t;

struct kdc_cache {
    char *dir;       /* as given: messages name it so */
    char *units;     /* dir/units */
    char *runs;      /* dir/runs */
    XXH128_hash_t salt; /* the executable, libclang, environment */
    kdc_strset_t paths;
    kdc_strmap_t files; /* interned path → file_now_t* */
    int write_failed;   /* a write failed (noted once): none is tried again */
};

static void hash_str(XXH3_state_t *st, const char *s) {
    s = s ? s : "";
    XXH3_128bits_update(st, s, strlen(s) + 1);
}

/* A program file's identity: its contents (XXH3-128), so that a rebuild or an upgrade
 * makes new keys while the same build installed again (in a new CI job: another inode and
 * modification time) keeps them; its path, device, inode, size and mtime when it cannot be
 * read. */
static void hash_file_identity(XXH3_state_t *st, const char *path) {
    struct stat sb;
    int fd = path ? open(path, O_RDONLY | O_CLOEXEC) : -1;
    if (fd >= 0 && fstat(fd, &sb) == 0 && S_ISREG(sb.st_mode) && sb.st_size > 0) {
        void *m = mmap(NULL, (size_t)sb.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (m != MAP_FAILED) {
            XXH128_hash_t h = XXH3_128bits(m, (size_t)sb.st_size);
            munmap(m, (size_t)sb.st_size);
            close(fd);
            XXH3_128bits_update(st, &h, sizeof h);
            return;
        }
    }
    if (fd >= 0)
        close(fd);
    hash_str(st, path);
    if (path && stat(path, &sb) == 0) {
        uint64_t v[5] = {(uint64_t)sb.st_dev, (uint64_t)sb.st_ino, (uint64_t)sb.st_size,
                         (uint64_t)sb.st_mtim.tv_sec, (uint64_t)sb.st_mtim.tv_nsec};
        XXH3_128bits_update(st, v, sizeof v);
    }
}

/* The GNU build ID of an ELF file (NT_GNU_BUILD_ID), read from its program headers on
 * disk without loading it: its length, 0 when it has none or cannot be read. */
static size_t file_build_id(const char *path, unsigned char id[64]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    size_t len = 0;
    ElfW(Ehdr) eh;
    ElfW(Phdr) ph[64];
    if (pread(fd, &eh, sizeof eh, 0) != (ssize_t)sizeof eh || memcmp(eh.e_ident, ELFMAG, SELFMAG) ||
        eh.e_ident[EI_CLASS] != (sizeof(void *) == 8 ? ELFCLASS64 : ELFCLASS32) ||
        eh.e_phentsize != sizeof ph[0] || eh.e_phnum > sizeof ph / sizeof ph[0] ||
        pread(fd, ph, eh.e_phnum * sizeof ph[0], (off_t)eh.e_phoff) !=
            (ssize_t)(eh.e_phnum * sizeof ph[0])) {
        close(fd);
        return 0;
    }
    for (int i = 0; i < eh.e_phnum && !len; i++) {
        if (ph[i].p_type != PT_NOTE || ph[i].p_filesz > 65536)
            continue;
        unsigned char notes[65536];
        if (pread(fd, notes, ph[i].p_filesz, (off_t)ph[i].p_offset) != (ssize_t)ph[i].p_filesz)
            continue;
        for (size_t at = 0; ph[i].p_filesz - at >= sizeof(ElfW(Nhdr));) {
            ElfW(Nhdr) n;
            memcpy(&n, notes + at, sizeof n);
            size_t name = (n.n_namesz + 3) & ~(size_t)3, desc = (n.n_descsz + 3) & ~(size_t)3;
            if (ph[i].p_filesz - at < sizeof n + name + desc)
                break;
            if (n.n_type == NT_GNU_BUILD_ID && n.n_namesz == 4 &&
                !memcmp(notes + at + sizeof n, "GNU", 4) && n.n_descsz <= 64) {
                memcpy(id, notes + at + sizeof n + name, n.n_descsz);
                len = n.n_descsz;
                break;
            }
            at += sizeof n + name + desc;
        }
    }
    close(fd);
    return len;
}

/* libclang's identity: the GNU build ID and size of the file a first parse would load
 * (libclang_lazy.h), read from disk: libclang is not loaded for it; its contents as
 * hash_file_identity when it has no build ID. */
static void hash_libclang_identity(XXH3_state_t *st) {
    char *lib = kdc_libclang_file();
    unsigned char id[64];
    size_t n = lib ? file_build_id(lib, id) : 0;
    struct stat sb;
    hash_str(st, "libclang");
    if (n && stat(lib, &sb) == 0) {
        uint64_t size = (uint64_t)sb.st_size;
        XXH3_128bits_update(st, id, n);
        XXH3_128bits_update(st, &size, sizeof size);
    } else {
        hash_file_identity(st, lib);
    }
    free(lib);
}

static XXH128_hash_t compute_salt(void) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    hash_str(st, "kdc-lint unit cache");
    hash_str(st, KDC_VERSION);
    uint32_t fmt = ENTRY_FORMAT;
    XXH3_128bits_update(st, &fmt, sizeof fmt);
    char *self = realpath("/proc/self/exe", NULL);
    hash_file_identity(st, self);
    free(self);
    hash_libclang_identity(st);
    static const char *const env[] = {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                                      "OBJC_INCLUDE_PATH", "CCC_OVERRIDE_OPTIONS", NULL};
    for (size_t i = 0; env[i]; i++)
        hash_str(st, getenv(env[i]) ? getenv(env[i]) : "\001unset");
    XXH128_hash_t h = XXH3_128bits_digest(st);
    XXH3_freeState(st);
    return h;
}

static int mkdir_p(const char *dir) {
    char *copy = kdc_xstrdup(dir);
    for (char *p = copy + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = 0;
        if (mkdir(copy, 0777) != 0 && errno != EEXIST) {
            free(copy);
            return -1;
        }
        *p = '/';
    }
    int rc = mkdir(copy, 0777) != 0 && errno != EEXIST ? -1 : 0;
    free(copy);
    return rc;
}

/* Writes `text` to dir/name unless it exists. */
static int write_marker(const char *dir, const char *name, const char *text) {
    char *path = kdc_xasprintf("%s/%s", dir, name);
    int rc = 0;
    if (access(path, F_OK) != 0) {
        FILE *f = fopen(path, "w");
        if (!f || fputs(text, f) < 0)
            rc = -1;
        if (f && fclose(f) != 0)
            rc = -1;
    }
    free(path);
    return rc;
}

kdc_cache_t *kdc_cache_open(const char *dir, char **err) {
    struct stat sb;
    *err = NULL;
    if (!*dir) {
        *err = kdc_xstrdup("an empty path");
        return NULL;
    }
    if (stat(dir, &sb) == 0 && !S_ISDIR(sb.st_mode)) {
        *err = kdc_xstrdup("not a directory");
        return NULL;
    }
    char *units = kdc_xasprintf("%s/units", dir), *runs = kdc_xasprintf("%s/runs", dir);
    if (mkdir_p(units) != 0 || access(dir, R_OK | W_OK | X_OK) != 0 ||
        access(units, R_OK | W_OK | X_OK) != 0 || mkdir_p(runs) != 0 ||
        access(runs, R_OK | W_OK | X_OK) != 0) {
        *err = kdc_xasprintf("cannot create, read or write it: %s", strerror(errno));
        free(units);
        free(runs);
        return NULL;
    }
    if (write_marker(dir, "CACHEDIR.TAG",
                     "Signature: 8a477f597d28d172789f06886806bc55\n"
                     "# This file is a cache directory tag created by kdc-lint.\n"
                     "# For information about cache directory tags see https://bford.info/cachedir/\n") ||
        write_marker(dir, ".gitignore", "# created by kdc-lint: a cache, never committed\n*\n")) {
        *err = kdc_xasprintf("cannot write in it: %s", strerror(errno));
        free(units);
        free(runs);
        return NULL;
    }
    kdc_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        kdc_oom();
    c->dir = kdc_xstrdup(dir);
    c->units = units;
    c->runs = runs;
    c->salt = compute_salt();
    kdc_strset_init(&c->paths);
    kdc_strmap_init(&c->files);
    return c;
}

void kdc_cache_close(kdc_cache_t *c) {
    if (!c)
        return;
    for (size_t i = 0; i < c->files.cap; i++)
        free(c->files.vals[i]);
    kdc_strmap_free(&c->files);
    kdc_strset_free(&c->paths);
    free(c->units);
    free(c->runs);
    free(c->dir);
    free(c);
}

int kdc_file_digest(const char *path, unsigned char digest[16]) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    static _Thread_local unsigned char buf[1 << 16];
    ssize_t n;
    while ((n = read(fd, buf, sizeof buf)) > 0)
        XXH3_128bits_update(st, buf, (size_t)n);
    close(fd);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(st));
    XXH3_freeState(st);
    if (n < 0)
        return -1;
    memcpy(digest, canon.digest, 16);
    return 0;
}

static file_now_t *file_now(kdc_cache_t *c, const char *path) {
    const char *key = kdc_strset_add(&c->paths, path, strlen(path));
    file_now_t *f = kdc_strmap_get(&c->files, key);
    if (!f) {
        f = calloc(1, sizeof *f);
        if (!f)
            kdc_oom();
        kdc_strmap_put(&c->files, key, f);
    }
    return f;
}

/* How the file at `path` is seen now (read once per process); NULL when it cannot be
 * read. */
static const kdc_fileseen_t *seen_now(kdc_cache_t *c, const char *path) {
    file_now_t *f = file_now(c, path);
    if (!f->read) {
        f->read = 1;
        f->read_ok = kdc_file_see(path, &f->seen) == 0;
    }
    return f->read_ok ? &f->seen : NULL;
}

/* Is the file at `path` as `then` saw it? By its signature when that is trusted and
 * stat gives it again, else by its contents. */
static int unchanged(kdc_cache_t *c, const char *path, const kdc_fileseen_t *then) {
    file_now_t *f = file_now(c, path);
    if (!then->racy && !f->read) {
        if (!f->stated) {
            struct stat sb;
            f->stated = 1;
            f->stat_ok = stat(path, &sb) == 0;
            if (f->stat_ok)
                kdc_filesig_of(&sb, &f->sig);
        }
        if (f->stat_ok && kdc_filesig_equal(&f->sig, &then->sig))
            return 1;
    }
    const kdc_fileseen_t *now = seen_now(c, path);
    return now && !memcmp(now->digest, then->digest, 16);
}

/* The bytes of a file seen (kdc_fileseen_put). */
#define SEEN_BYTES (5 * 8 + 16 + 1)

/* The working directory libclang resolved the unit's relative paths against. */
static const char *working_dir(const kdc_tu_job_t *job) {
    static const char opt[] = "-working-directory=";
    for (int i = job->argc - 1; i >= 0; i--)
        if (!strncmp(job->argv[i], opt, sizeof opt - 1))
            return job->argv[i] + sizeof opt - 1;
    return NULL;
}

static char *entry_path(const kdc_cache_t *c, const kdc_tu_job_t *job) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &c->salt, sizeof c->salt);
    hash_str(st, job->file);
    uint32_t argc = (uint32_t)job->argc;
    XXH3_128bits_update(st, &argc, sizeof argc);
    for (int i = 0; i < job->argc; i++)
        hash_str(st, job->argv[i]);
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, XXH3_128bits_digest(st));
    XXH3_freeState(st);
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", canon.digest[i]);
    return kdc_xasprintf("%s/%s", c->units, hex);
}

/* ---------- entries ---------- */

/* Writes b to path through a temporary file renamed over it: readers see a
 * whole entry or none. The temporary file is new (O_EXCL) and its name random
 * besides the pid: runs in other containers sharing the directory may have
 * the same pid, and must not write into one file. */
static int write_entry(const char *path, const kdc_buf_t *b, char **err) {
    char *tmp = NULL;
    int fd = -1, rc = -1;
    for (int attempt = 0; attempt < 64 && fd < 0; attempt++) {
        uint64_t r = 0;
        if (getrandom(&r, sizeof r, GRND_NONBLOCK) != (ssize_t)sizeof r) {
            struct timespec ts;
            clock_gettime(CLOCK_REALTIME, &ts);
            r = (uint64_t)ts.tv_nsec * 0x9E3779B97F4A7C15ull ^ (uint64_t)attempt;
        }
        free(tmp);
        tmp = kdc_xasprintf("%s.tmp.%ld.%016llx", path, (long)getpid(), (unsigned long long)r);
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    if (fd >= 0) {
        size_t done = 0;
        while (done < b->n) {
            ssize_t w = write(fd, b->v + done, b->n - done);
            if (w <= 0)
                break;
            done += (size_t)w;
        }
        int ok = done == b->n;
        if (close(fd) != 0)
            ok = 0;
        if (ok && rename(tmp, path) == 0)
            rc = 0;
        /* something that is no entry in the entry's place (an empty directory is
         * removed; anything else makes this one entry fail, not the cache) */
        else if (ok && (errno == EISDIR || errno == ENOTEMPTY || errno == EEXIST)) {
            if (rmdir(path) == 0 && rename(tmp, path) == 0)
                rc = 0;
            else
                rc = -2, errno = EISDIR;
        }
    }
    if (rc != 0) {
        *err = kdc_xasprintf("cannot write cache entry %s: %s", path, strerror(errno));
        if (fd >= 0)
            unlink(tmp); /* ours: never another run's */
    }
    free(tmp);
    return rc;
}

/* magic, format, nfiles, {len, path, seen (SEEN_BYTES)}..., model length (u64), model,
 * XXH3-128 of everything before it */

static int read_all(const char *path, unsigned char **data, size_t *len) {
    /* O_NONBLOCK: an entry that is a FIFO must not block the open (fstat refuses it) */
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return -1;
    struct stat sb;
    if (fstat(fd, &sb) != 0 || !S_ISREG(sb.st_mode) || (size_t)sb.st_size > ENTRY_MAX) {
        close(fd);
        return -2;
    }
    size_t n = (size_t)sb.st_size, got = 0;
    unsigned char *buf = malloc(n ? n : 1);
    if (!buf)
        kdc_oom();
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r <= 0)
            break;
        got += (size_t)r;
    }
    close(fd);
    *data = buf;
    *len = got;
    return 0;
}

typedef struct reader {
    const unsigned char *at, *end;
} reader_t;

static int rd(reader_t *r, void *out, size_t n) {
    if ((size_t)(r->end - r->at) < n)
        return -1;
    memcpy(out, r->at, n);
    r->at += n;
    return 0;
}

int kdc_cache_lookup(kdc_cache_t *c, const kdc_tu_job_t *job, kdc_buf_t *model, char **note) {
    *note = NULL;
    char *path = entry_path(c, job);
    unsigned char *data = NULL;
    size_t len = 0;
    int got = read_all(path, &data, &len), hit = 0;
    const char *damage = NULL;
    if (got == -2)
        damage = "not a regular file of a plausible size";
    if (got == 0) {
        reader_t r = {data, data + len};
        char magic[4];
        uint32_t fmt = 0, nfiles = 0;
        uint64_t mlen = 0;
        XXH128_canonical_t want;
        if (len < 4 + 4 + 4 + 8 + 16 || rd(&r, magic, 4) || memcmp(magic, ENTRY_MAGIC, 4))
            damage = "not a kdc-lint cache entry";
        else if (rd(&r, &fmt, 4) || fmt != ENTRY_FORMAT)
            damage = "an entry of another format";
        if (!damage) {
            memcpy(want.digest, data + len - 16, 16);
            XXH128_hash_t sum = XXH3_128bits(data, len - 16);
            if (!XXH128_isEqual(sum, XXH128_hashFromCanonical(&want)))
                damage = "checksum mismatch (truncated or damaged)";
        }
        r.end = data + len - 16;
        if (!damage && rd(&r, &nfiles, 4))
            damage = "truncated file list";
        int fresh = 1;
        const char *wd = working_dir(job);
        for (uint32_t i = 0; i < nfiles && !damage; i++) {
            uint32_t plen = 0;
            if (rd(&r, &plen, 4) || plen > (size_t)(r.end - r.at) || plen == 0 ||
                (size_t)(r.end - r.at) - plen < SEEN_BYTES) {
                damage = "truncated file list";
                break;
            }
            char *file = kdc_xasprintf("%.*s", (int)plen, (const char *)r.at);
            kdc_fileseen_t then;
            kdc_reader_t sr = {r.at + plen, r.at + plen + SEEN_BYTES, 0};
            kdc_fileseen_get(&sr, &then);
            r.at += plen + SEEN_BYTES;
            if (fresh) {
                char *abs = file[0] == '/' || !wd ? NULL : kdc_xasprintf("%s/%s", wd, file);
                fresh = unchanged(c, abs ? abs : file, &then);
                free(abs);
            }
            free(file);
        }
        if (!damage && (rd(&r, &mlen, 8) || mlen != (uint64_t)(r.end - r.at)))
            damage = "model length mismatch";
        if (!damage && fresh) {
            kdc_buf_put(model, r.at, (size_t)mlen);
            hit = 1;
        }
    }
    if (damage)
        *note = kdc_xasprintf("cache entry %s: %s; ignored, the unit is parsed again", path,
                              damage);
    free(data);
    free(path);
    return hit;
}

int kdc_cache_store(kdc_cache_t *c, const kdc_tu_job_t *job, const char *const *files,
                    size_t nfiles, const void *model, size_t len, char **err) {
    kdc_buf_t b = {0};
    kdc_buf_put(&b, ENTRY_MAGIC, 4);
    uint32_t fmt = ENTRY_FORMAT, n = 0;
    kdc_buf_put(&b, &fmt, 4);
    size_t count_at = b.n;
    kdc_buf_put(&b, &n, 4);
    const char *wd = working_dir(job);
    for (size_t i = 0; i < nfiles; i++) {
        char *abs = files[i][0] == '/' || !wd ? NULL : kdc_xasprintf("%s/%s", wd, files[i]);
        const kdc_fileseen_t *seen = seen_now(c, abs ? abs : files[i]);
        free(abs);
        if (!seen) /* gone already: an entry naming it could never be used */
            goto skip;
        uint32_t plen = (uint32_t)strlen(files[i]);
        kdc_buf_put(&b, &plen, 4);
        kdc_buf_put(&b, files[i], plen);
        kdc_fileseen_put(&b, seen);
        n++;
    }
    memcpy(b.v + count_at, &n, 4);
    uint64_t mlen = len;
    kdc_buf_put(&b, &mlen, 8);
    kdc_buf_put(&b, model, len);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b.v, b.n));
    kdc_buf_put(&b, sum.digest, 16);

    char *path = entry_path(c, job);
    int rc = write_entry(path, &b, err);
    free(path);
    kdc_buf_free(&b);
    return rc;
skip:
    kdc_buf_free(&b);
    return 0;
}

/* ---------- other entries ---------- */

#define BLOB_MAGIC "KDCB"
#define BLOB_FORMAT 1u

void kdc_cache_salt(const kdc_cache_t *c, unsigned char salt[16]) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, c->salt);
    memcpy(salt, canon.digest, 16);
}

static char *blob_path(const kdc_cache_t *c, const char *kind, const unsigned char key[16]) {
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    return kdc_xasprintf("%s/%s/%s", c->dir, kind, hex);
}

/* magic, format, key[16], data length (u64), data, XXH3-128 of everything before it */

int kdc_cache_get(kdc_cache_t *c, const char *kind, const unsigned char key[16], kdc_buf_t *out,
                  const char *redo, char **note) {
    *note = NULL;
    char *path = blob_path(c, kind, key);
    unsigned char *data = NULL;
    size_t len = 0;
    int got = read_all(path, &data, &len), hit = 0;
    const char *damage = got == -2 ? "not a regular file of a plausible size" : NULL;
    if (got == 0) {
        kdc_reader_t r = {data, data + (len >= 16 ? len - 16 : 0), 0};
        char magic[4];
        unsigned char stored[16];
        kdc_read_bytes(&r, magic, 4);
        uint32_t fmt = kdc_read_u32(&r);
        kdc_read_bytes(&r, stored, 16);
        uint64_t dlen = kdc_read_u64(&r);
        XXH128_canonical_t want;
        if (r.bad || memcmp(magic, BLOB_MAGIC, 4))
            damage = "not a kdc-lint cache entry";
        else if (fmt != BLOB_FORMAT)
            damage = "an entry of another format";
        if (!damage) {
            memcpy(want.digest, data + len - 16, 16);
            if (!XXH128_isEqual(XXH3_128bits(data, len - 16), XXH128_hashFromCanonical(&want)))
                damage = "checksum mismatch (truncated or damaged)";
            else if (memcmp(stored, key, 16) || dlen != (uint64_t)(r.end - r.at))
                damage = "not the entry its name says";
        }
        if (!damage) {
            kdc_buf_put(out, r.at, (size_t)dlen);
            hit = 1;
        }
    }
    if (damage)
        *note = kdc_xasprintf("cache entry %s: %s; ignored, %s", path, damage, redo);
    free(data);
    free(path);
    return hit;
}

int kdc_cache_put(kdc_cache_t *c, const char *kind, const unsigned char key[16],
                  const void *data, size_t len, char **err) {
    *err = NULL;
    char *dir = kdc_xasprintf("%s/%s", c->dir, kind);
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        *err = kdc_xasprintf("cannot write cache entry %s: %s", dir, strerror(errno));
        free(dir);
        return -1;
    }
    free(dir);
    kdc_buf_t b = {0};
    kdc_buf_put(&b, BLOB_MAGIC, 4);
    kdc_buf_u32(&b, BLOB_FORMAT);
    kdc_buf_put(&b, key, 16);
    kdc_buf_u64(&b, len);
    kdc_buf_put(&b, data, len);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b.v, b.n));
    kdc_buf_put(&b, sum.digest, 16);
    char *path = blob_path(c, kind, key);
    int rc = write_entry(path, &b, err);
    free(path);
    kdc_buf_free(&b);
    return rc;
}

int kdc_cache_writable(const kdc_cache_t *c) { return c && !c->write_failed; }

void kdc_cache_stop_writes(kdc_cache_t *c) {
    if (c)
        c->write_failed = 1;
}

/* ---------- the analysis of a whole program ---------- */

static void hash_list(XXH3_state_t *st, const char *const *list) {
    uint32_t n = 0;
    for (const char *const *p = list; p && *p; p++)
        n++;
    XXH3_128bits_update(st, &n, sizeof n);
    for (const char *const *p = list; p && *p; p++)
        hash_str(st, *p);
}

static void to_bytes(XXH128_hash_t h, unsigned char out[16]) {
    XXH128_canonical_t canon;
    XXH128_canonicalFromHash(&canon, h);
    memcpy(out, canon.digest, 16);
}

void kdc_cache_analysis_key(const kdc_cache_t *c, const unsigned char program[16],
                            const kdc_options_t *opts, const unsigned char *const need[2],
                            size_t nrules, unsigned char key[16]) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &c->salt, sizeof c->salt);
    hash_str(st, "analysis");
    XXH3_128bits_update(st, program, 16);
    int32_t strict = opts->strict;
    XXH3_128bits_update(st, &strict, sizeof strict);
    hash_list(st, opts->dlq_topic_patterns);
    hash_list(st, opts->dlq_name_patterns);
    for (int r = 0; r < KDC_NROLES; r++)
        hash_list(st, opts->functions[r]);
    uint64_t n = nrules;
    XXH3_128bits_update(st, &n, sizeof n);
    XXH3_128bits_update(st, need[0], nrules);
    XXH3_128bits_update(st, need[1], nrules);
    to_bytes(XXH3_128bits_digest(st), key);
    XXH3_freeState(st);
}

/* runs/<hex>: one entry per set of units (paths and arguments, in order). */
static char *run_path(const kdc_cache_t *c, const kdc_inputs_t *in, const size_t *todo,
                      size_t ntodo) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, &c->salt, sizeof c->salt);
    uint64_t n = ntodo;
    XXH3_128bits_update(st, &n, sizeof n);
    for (size_t i = 0; i < ntodo; i++) {
        const kdc_tu_job_t *job = &in->jobs[todo[i]];
        hash_str(st, job->file);
        uint32_t argc = (uint32_t)job->argc;
        XXH3_128bits_update(st, &argc, sizeof argc);
        for (int k = 0; k < job->argc; k++)
            hash_str(st, job->argv[k]);
    }
    unsigned char d[16];
    to_bytes(XXH3_128bits_digest(st), d);
    XXH3_freeState(st);
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", d[i]);
    return kdc_xasprintf("%s/%s", c->runs, hex);
}

/* magic, format, key[16], count per profile (u32 x 2), findings, XXH3-128 of
 * everything before it. A string is a u32 length (UINT32_MAX: none) and its
 * bytes; a location its file and four u32; a finding its rule, severity,
 * message, location, function, and its related locations with messages. */

static void put_u32(kdc_buf_t *b, uint32_t v) { kdc_buf_put(b, &v, 4); }

static void put_str(kdc_buf_t *b, const char *s) {
    uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
    put_u32(b, len);
    if (s)
        kdc_buf_put(b, s, len);
}

static void put_loc(kdc_buf_t *b, const kdc_loc_t *l) {
    put_str(b, l->file);
    uint32_t v[4] = {l->line, l->col, l->end_line, l->end_col};
    kdc_buf_put(b, v, sizeof v);
}

/* A string read from r: *out NULL for none; malloc'd copy when `copy`, else
 * interned in p. -1 when truncated. */
static int get_str(reader_t *r, kdc_program_t *p, int copy, const char **out) {
    uint32_t len;
    *out = NULL;
    if (rd(r, &len, 4))
        return -1;
    if (len == UINT32_MAX)
        return 0;
    if (len > (size_t)(r->end - r->at))
        return -1;
    *out = copy ? kdc_xasprintf("%.*s", (int)len, (const char *)r->at)
                : kdc_intern_n(p, (const char *)r->at, len);
    r->at += len;
    return 0;
}

static int get_loc(reader_t *r, kdc_program_t *p, kdc_loc_t *l) {
    uint32_t v[4];
    if (get_str(r, p, 0, &l->file) || rd(r, v, sizeof v))
        return -1;
    l->line = v[0];
    l->col = v[1];
    l->end_line = v[2];
    l->end_col = v[3];
    return 0;
}

static int get_finding(reader_t *r, kdc_program_t *p, kdc_finding_t *f) {
    const char *rule, *message;
    uint32_t sev, nrel;
    memset(f, 0, sizeof *f);
    if (get_str(r, p, 0, &rule) || !rule || rd(r, &sev, 4) || sev > KDC_SEV_ERROR)
        return -1;
    const kdc_rule_t *known = kdc_rule_find(rule);
    f->rule = known ? known->name : rule;
    f->severity = (kdc_severity_t)sev;
    if (get_str(r, p, 1, &message))
        return -1;
    f->message = (char *)message;
    if (get_loc(r, p, &f->loc) || get_str(r, p, 0, &f->function) || rd(r, &nrel, 4) ||
        nrel > (size_t)(r->end - r->at) / 24) /* each takes at least 24 bytes */
        return -1;
    if (nrel) {
        f->related = calloc(nrel, sizeof *f->related);
        if (!f->related)
            kdc_oom();
    }
    for (uint32_t i = 0; i < nrel; i++) {
        f->nrelated++;
        if (get_loc(r, p, &f->related[i].loc) || get_str(r, p, 1, &f->related[i].message))
            return -1;
    }
    return 0;
}

int kdc_cache_lookup_findings(kdc_cache_t *c, const kdc_inputs_t *in, const size_t *todo,
                              size_t ntodo, const unsigned char key[16], kdc_program_t *prog,
                              kdc_findings_t runs[2], char **note) {
    *note = NULL;
    char *path = run_path(c, in, todo, ntodo);
    unsigned char *data = NULL;
    size_t len = 0;
    int got = read_all(path, &data, &len), hit = 0;
    const char *damage = NULL;
    kdc_findings_t got_runs[2] = {{0}};
    if (got == -2)
        damage = "not a regular file of a plausible size";
    if (got == 0) {
        reader_t r = {data, data + len};
        char magic[4];
        uint32_t fmt = 0, count[2] = {0, 0};
        unsigned char stored[16];
        if (len < 4 + 4 + 16 + 8 + 16 || rd(&r, magic, 4) || memcmp(magic, RUN_MAGIC, 4))
            damage = "not a kdc-lint cache entry";
        else if (rd(&r, &fmt, 4) || fmt != RUN_FORMAT)
            damage = "an entry of another format";
        if (!damage) {
            XXH128_canonical_t want;
            memcpy(want.digest, data + len - 16, 16);
            if (!XXH128_isEqual(XXH3_128bits(data, len - 16), XXH128_hashFromCanonical(&want)))
                damage = "checksum mismatch (truncated or damaged)";
        }
        r.end = data + len - 16;
        /* another program, or other options: not damage, just not this analysis */
        if (!damage && !rd(&r, stored, 16) && !memcmp(stored, key, 16)) {
            if (rd(&r, count, sizeof count))
                damage = "truncated findings";
            for (int p = 0; p < 2 && !damage; p++)
                for (uint32_t i = 0; i < count[p] && !damage; i++) {
                    kdc_finding_t f;
                    int bad = get_finding(&r, prog, &f);
                    kdc_findings_t *fs = &got_runs[p];
                    if (fs->n == fs->cap) {
                        fs->cap = fs->cap ? fs->cap * 2 : 16;
                        fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
                    }
                    fs->v[fs->n++] = f; /* freed with the others when bad */
                    if (bad)
                        damage = "truncated findings";
                }
            if (!damage && r.at != r.end)
                damage = "findings length mismatch";
            hit = !damage;
        }
    }
    for (int p = 0; p < 2; p++) {
        if (hit) {
            for (size_t i = 0; i < got_runs[p].n; i++) {
                kdc_findings_t *fs = &runs[p];
                if (fs->n == fs->cap) {
                    fs->cap = fs->cap ? fs->cap * 2 : 16;
                    fs->v = kdc_xrealloc(fs->v, fs->cap * sizeof *fs->v);
                }
                fs->v[fs->n++] = got_runs[p].v[i];
            }
            free(got_runs[p].v);
        } else {
            kdc_findings_free(&got_runs[p]);
        }
    }
    if (damage)
        *note = kdc_xasprintf("cache entry %s: %s; ignored, the program is analysed again", path,
                              damage);
    free(data);
    free(path);
    return hit;
}

int kdc_cache_store_findings(kdc_cache_t *c, const kdc_inputs_t *in, const size_t *todo,
                             size_t ntodo, const unsigned char key[16],
                             const kdc_findings_t runs[2], char **err) {
    kdc_buf_t b = {0};
    kdc_buf_put(&b, RUN_MAGIC, 4);
    put_u32(&b, RUN_FORMAT);
    kdc_buf_put(&b, key, 16);
    put_u32(&b, (uint32_t)runs[0].n);
    put_u32(&b, (uint32_t)runs[1].n);
    for (int p = 0; p < 2; p++)
        for (size_t i = 0; i < runs[p].n; i++) {
            const kdc_finding_t *f = &runs[p].v[i];
            put_str(&b, f->rule);
            put_u32(&b, (uint32_t)f->severity);
            put_str(&b, f->message);
            put_loc(&b, &f->loc);
            put_str(&b, f->function);
            put_u32(&b, (uint32_t)f->nrelated);
            for (size_t k = 0; k < f->nrelated; k++) {
                put_loc(&b, &f->related[k].loc);
                put_str(&b, f->related[k].message);
            }
        }
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b.v, b.n));
    kdc_buf_put(&b, sum.digest, 16);
    char *path = run_path(c, in, todo, ntodo);
    int rc = write_entry(path, &b, err);
    free(path);
    kdc_buf_free(&b);
    return rc;
}
