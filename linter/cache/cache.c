/* The unit cache (see cache.h). */
#define _GNU_SOURCE
#include "cache_int.h"
#include "filesig.h"
#include "libclang_lazy.h"
#include "termsig.h"
#include "util.h"

#include <dirent.h>
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

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#define ENTRY_MAX ((size_t)1 << 30) /* larger than any model: a damaged length */

typedef kdc_file_now_t file_now_t;

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

/* An ELF file's identity: its GNU build ID (a digest of what the linker wrote: a rebuild
 * makes another) and its size (a byte appended makes another), read without reading the
 * file; its contents as hash_file_identity when it has no build ID. */
static void hash_elf_identity(XXH3_state_t *st, const char *path) {
    unsigned char id[64];
    size_t n = path ? file_build_id(path, id) : 0;
    struct stat sb;
    if (n && stat(path, &sb) == 0) {
        uint64_t size = (uint64_t)sb.st_size;
        XXH3_128bits_update(st, id, n);
        XXH3_128bits_update(st, &size, sizeof size);
    } else {
        hash_file_identity(st, path);
    }
}

/* libclang's identity: that of the file a first parse would load (libclang_lazy.h), read
 * from disk: libclang is not loaded for it. */
static void hash_libclang_identity(XXH3_state_t *st) {
    char *lib = kdc_libclang_file();
    hash_str(st, "libclang");
    hash_elf_identity(st, lib);
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
    hash_str(st, "kdc-lint");
    hash_elf_identity(st, "/proc/self/exe"); /* the running file, even if replaced since */
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

/* Writes `text` to dir/name unless something is there already. The name is created, never
 * followed: a marker that is a symbolic link (one that names nothing included: a cache
 * that arrives with a checkout can hold one) is left as it is, and no file is created
 * where it points. */
static int write_marker(const char *dir, const char *name, const char *text) {
    char *path = kdc_xasprintf("%s/%s", dir, name);
    int rc = 0;
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
    if (fd < 0) {
        rc = errno == EEXIST ? 0 : -1;
    } else {
        size_t len = strlen(text);
        rc = write(fd, text, len) == (ssize_t)len ? 0 : -1;
        if (close(fd) != 0)
            rc = -1;
    }
    free(path);
    return rc;
}

/* ---------- the user's key (cache_int.h) ---------- */

/* Reads the key at path: 0; -1 when there is none; -2 when it is there but not the user's
 * own 32 bytes, readable by nobody else (then not trusted). */
static int read_key(const char *path, unsigned char key[32]) {
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return errno == ENOENT ? -1 : -2;
    struct stat st;
    int ok = fstat(fd, &st) == 0 && S_ISREG(st.st_mode) && st.st_uid == geteuid() &&
             !(st.st_mode & 077) && st.st_size == 32 && read(fd, key, 32) == 32;
    close(fd);
    return ok ? 0 : -2;
}

/* The user's key, created when there is none. 0, or -1 with *err (malloc'd). */
static int user_key(unsigned char key[32], char **err) {
    const char *xdg = getenv("XDG_CACHE_HOME"), *home = getenv("HOME");
    char *base = xdg && xdg[0] == '/'     ? kdc_xstrdup(xdg)
                 : home && home[0] == '/' ? kdc_xasprintf("%s/.cache", home)
                                          : NULL;
    if (!base) {
        *err = kdc_xstrdup("no place for the key that authenticates its entries (neither "
                           "XDG_CACHE_HOME nor HOME is an absolute path)");
        return -1;
    }
    char *dir = kdc_xasprintf("%s/kdc-lint", base), *path = kdc_xasprintf("%s/key", dir);
    mkdir(base, 0700);
    mkdir(dir, 0700);
    int rc = read_key(path, key);
    if (rc == -1) {
        /* a new key: written whole to a file of its own, then linked into place (of two
         * runs creating one at once, one key wins and both read it) */
        unsigned char fresh[32];
        char *tmp = kdc_xasprintf("%s/key.tmp.%ld", dir, (long)getpid());
        int fd = getrandom(fresh, sizeof fresh, 0) == (ssize_t)sizeof fresh
                     ? open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600)
                     : -1;
        if (fd >= 0) {
            int written = write(fd, fresh, sizeof fresh) == (ssize_t)sizeof fresh;
            written &= close(fd) == 0;
            if (written)
                link(tmp, path);
            unlink(tmp);
        }
        free(tmp);
        rc = read_key(path, key);
    }
    if (rc != 0)
        *err = kdc_xasprintf(rc == -2 ? "%s is not a key of this user's (32 bytes, mode 0600): "
                                        "entries cannot be authenticated"
                                      : "cannot create %s, the key that authenticates its "
                                        "entries",
                             path);
    free(base);
    free(dir);
    free(path);
    return rc ? -1 : 0;
}

/* Whether the entries in dir were written under this key (DIR/KEY-ID: a digest of the key,
 * which says nothing of it): 0 yes, or a new empty cache (then marked ours); 1 no (another
 * user's or machine's, restored by a CI cache without the key): not read, one note, and
 * marked ours, as its entries are written again. */
static int foreign_entries(const char *dir, const char *units, const unsigned char key[32]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    static const char what[] = "kdc-lint cache key id";
    if (!HMAC(EVP_sha256(), key, 32, (const unsigned char *)what, sizeof what - 1, md, &n))
        return 1;
    char id[2 * 8 + 2];
    for (int i = 0; i < 8; i++)
        snprintf(id + 2 * i, 3, "%02x", md[i]);
    strcat(id, "\n");
    char *path = kdc_xasprintf("%s/KEY-ID", dir);
    char held[sizeof id] = "";
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
    if (fd >= 0) {
        ssize_t got = read(fd, held, sizeof held - 1);
        held[got > 0 ? got : 0] = 0;
        close(fd);
    }
    int ours = !strcmp(held, id), foreign = 0;
    if (!ours) {
        /* no KEY-ID: a new cache, or one written before entries had tags */
        DIR *d = fd < 0 ? opendir(units) : NULL;
        struct dirent *de = NULL;
        if (d)
            while ((de = readdir(d)) && de->d_name[0] == '.') {
            }
        foreign = fd >= 0 || de != NULL;
        if (d)
            closedir(d);
        kdc_buf_t b = {0};
        kdc_buf_put(&b, id, strlen(id));
        char *err = NULL;
        kdc_cache_write_entry(path, &b, &err); /* when it cannot be written, nothing can */
        free(err);
        kdc_buf_free(&b);
    }
    free(path);
    return foreign;
}

static void tag_of(const kdc_cache_t *c, const void *data, size_t len,
                   unsigned char tag[KDC_CACHE_TAG_LEN]) {
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned int n = 0;
    if (!HMAC(EVP_sha256(), c->key, (int)sizeof c->key, data, len, md, &n) || n < KDC_CACHE_TAG_LEN)
        memset(md, 0, sizeof md); /* no tag: nothing verifies */
    memcpy(tag, md, KDC_CACHE_TAG_LEN);
}

void kdc_cache_seal(const kdc_cache_t *c, kdc_buf_t *b) {
    unsigned char tag[KDC_CACHE_TAG_LEN];
    tag_of(c, b->v, b->n, tag);
    kdc_buf_put(b, tag, sizeof tag);
}

const char *kdc_cache_check_tag(const kdc_cache_t *c, const unsigned char *data, size_t len) {
    unsigned char tag[KDC_CACHE_TAG_LEN];
    if (len < KDC_CACHE_TAG_LEN)
        return "checksum mismatch (truncated or damaged)";
    tag_of(c, data, len - KDC_CACHE_TAG_LEN, tag);
    if (CRYPTO_memcmp(tag, data + len - KDC_CACHE_TAG_LEN, KDC_CACHE_TAG_LEN))
        return "not written by this user's kdc-lint (its authentication tag does not verify)";
    return NULL;
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
    unsigned char key[32];
    if (user_key(key, err) != 0) {
        free(units);
        free(runs);
        return NULL;
    }
    kdc_cache_t *c = calloc(1, sizeof *c);
    if (!c)
        kdc_oom();
    memcpy(c->key, key, sizeof key);
    if ((c->foreign = foreign_entries(dir, units, key)))
        fprintf(stderr,
                "kdc-lint: note: %s: its entries were written under another key (another "
                "user's or machine's: a restored cache needs ~/.cache/kdc-lint too); not read, "
                "written again\n",
                dir);
    c->dir = kdc_xstrdup(dir);
    c->cwd = getcwd(NULL, 0);
    c->units = units;
    c->runs = runs;
    XXH128_canonical_t salt;
    XXH128_canonicalFromHash(&salt, compute_salt());
    memcpy(c->salt, salt.digest, sizeof c->salt);
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
    free(c->cwd);
    free(c);
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
    if (path[0] == KDC_FILE_ABSENT) { /* a path that must still name nothing */
        if (!f->stated) {
            struct stat sb;
            f->stated = 1;
            f->stat_ok = stat(path + 1, &sb) == 0;
        }
        return !f->stat_ok;
    }
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
const char *kdc_cache_working_dir(const kdc_tu_job_t *job) {
    static const char opt[] = "-working-directory=";
    for (int i = job->argc - 1; i >= 0; i--)
        if (!strncmp(job->argv[i], opt, sizeof opt - 1))
            return job->argv[i] + sizeof opt - 1;
    return NULL;
}

char *kdc_cache_unit_path(const kdc_cache_t *c, const kdc_tu_job_t *job) {
    XXH3_state_t *st = XXH3_createState();
    if (!st)
        kdc_oom();
    XXH3_128bits_reset(st);
    XXH3_128bits_update(st, c->salt, sizeof c->salt);
    hash_str(st, job->file);
    uint32_t argc = (uint32_t)job->argc;
    XXH3_128bits_update(st, &argc, sizeof argc);
    for (int i = 0; i < job->argc; i++)
        hash_str(st, job->argv[i]);
    /* without -working-directory (no -p), libclang resolves a relative -I or -include
     * against the directory kdc-lint runs in: run elsewhere, the same arguments name
     * other files */
    if (!kdc_cache_working_dir(job))
        hash_str(st, c->cwd);
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
int kdc_cache_write_entry(const char *path, const kdc_buf_t *b, char **err) {
    char *tmp = NULL;
    int fd = -1, rc = -1;
    kdc_termsig_enter(); /* a signal ends the run before or after, never in the middle */
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
    kdc_termsig_leave();
    free(tmp);
    return rc;
}

/* magic, format, nfiles, {path (kdc_buf_str), seen (SEEN_BYTES)}..., model length (u64),
 * model, XXH3-128 of everything before it. A path starting with KDC_FILE_ABSENT must
 * still name nothing (its seen is zeros). */

int kdc_cache_read_file(const char *path, unsigned char **data, size_t *len,
                        kdc_fileseen_t *seen) {
    int64_t clock = kdc_filesig_clock();
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
    if (seen) {
        kdc_filesig_t sig;
        kdc_filesig_of(&sb, &sig);
        kdc_file_seen_text(&sig, clock, buf, got, seen);
    }
    *data = buf;
    *len = got;
    return 0;
}

void kdc_cache_unit_entry_free(kdc_unit_entry_t *e) {
    for (size_t i = 0; i < e->files.n; i++)
        free(e->files.v[i].file);
    free(e->files.v);
    memset(e, 0, sizeof *e);
}

const char *kdc_cache_parse_unit(const unsigned char *data, size_t len, kdc_unit_entry_t *e) {
    memset(e, 0, sizeof *e);
    char magic[4];
    kdc_reader_t r = {data, data + len, 0};
    kdc_read_bytes(&r, magic, 4);
    uint32_t fmt = kdc_read_u32(&r);
    if (len < 4 + 4 + 4 + 8 + 16 || memcmp(magic, ENTRY_MAGIC, 4))
        return "not a kdc-lint cache entry";
    if (fmt != ENTRY_FORMAT)
        return "an entry of another format";
    XXH128_canonical_t want;
    memcpy(want.digest, data + len - 16, 16);
    if (!XXH128_isEqual(XXH3_128bits(data, len - 16), XXH128_hashFromCanonical(&want)))
        return "checksum mismatch (truncated or damaged)";
    r.end = data + len - 16;
    uint32_t nfiles = kdc_read_count(&r, 4 + 1 + SEEN_BYTES);
    if (r.bad)
        return "truncated file list";
    for (uint32_t i = 0; i < nfiles; i++) {
        kdc_unit_file_t f = {kdc_read_str(&r), {{0}, {0}, 0}};
        kdc_fileseen_get(&r, &f.seen);
        if (r.bad || !f.file || !*f.file) {
            free(f.file);
            kdc_cache_unit_entry_free(e);
            return "truncated file list";
        }
        KDC_VEC_PUSH(e->files, f);
    }
    uint64_t mlen = kdc_read_u64(&r);
    if (r.bad || mlen != (uint64_t)(r.end - r.at)) {
        kdc_cache_unit_entry_free(e);
        return "model length mismatch";
    }
    e->model = r.at;
    e->model_len = (size_t)mlen;
    return NULL;
}

int kdc_cache_lookup(kdc_cache_t *c, const kdc_tu_job_t *job, kdc_buf_t *model, char **note) {
    *note = NULL;
    if (c->foreign)
        return 0;
    char *path = kdc_cache_unit_path(c, job);
    unsigned char *data = NULL;
    size_t len = 0;
    int got = kdc_cache_read_file(path, &data, &len, NULL), hit = 0;
    const char *damage = NULL;
    if (got == -2)
        damage = "not a regular file of a plausible size";
    if (got == 0) {
        kdc_unit_entry_t e;
        damage = kdc_cache_parse_unit(data, kdc_cache_untagged(len), &e);
        if (!damage && (damage = kdc_cache_check_tag(c, data, len)))
            kdc_cache_unit_entry_free(&e);
        int fresh = !damage;
        const char *wd = kdc_cache_working_dir(job);
        for (size_t i = 0; fresh && i < e.files.n; i++) {
            const char *file = e.files.v[i].file;
            char *abs = file[0] == '/' || file[0] == KDC_FILE_ABSENT || !wd
                            ? NULL
                            : kdc_xasprintf("%s/%s", wd, file);
            fresh = unchanged(c, abs ? abs : file, &e.files.v[i].seen);
            free(abs);
        }
        if (fresh) {
            kdc_buf_put(model, e.model, e.model_len);
            hit = 1;
        }
        if (!damage)
            kdc_cache_unit_entry_free(&e);
    }
    if (damage)
        *note = kdc_xasprintf("cache entry %s: %s; ignored, the unit is parsed again", path,
                              damage);
    free(data);
    free(path);
    return hit;
}

const kdc_fileseen_t *kdc_cache_latest_seen(kdc_cache_t *c, const char *path,
                                            const kdc_fileseen_t *stored) {
    file_now_t *f = file_now(c, path);
    return f->read && f->read_ok && !memcmp(f->seen.digest, stored->digest, 16) ? &f->seen
                                                                                : stored;
}

/* dir (made absolute against wd), without trailing slashes: malloc'd. */
static char *abs_dir(const char *wd, const char *dir, size_t n) {
    while (n > 1 && dir[n - 1] == '/')
        n--;
    return dir[0] == '/' ? kdc_xasprintf("%.*s", (int)n, dir)
                         : kdc_xasprintf("%s/%.*s", wd ? wd : ".", (int)n, dir);
}

/* The paths where a header the unit read could now be found first without any file it
 * read changing (a header added earlier on the include path, or next to the main file):
 * for every file read, its name below each of the unit's include directories (-I, -iquote,
 * -isystem, -idirafter, and those of CPATH and the like) and the directories of the files
 * read that hold it, joined to each include directory and to the main file's directory;
 * those that do not exist now. */
static void unit_absent(const kdc_cache_t *c, const kdc_tu_job_t *job, const char *const *files,
                        size_t nfiles, kdc_strset_t *absent) {
    static const char *const opts[] = {"-isystem", "-iquote", "-idirafter", "-I", NULL};
    const char *wd = kdc_cache_working_dir(job);
    if (!wd)
        wd = c->cwd;
    KDC_VEC(char *) search = {0}, under = {0}; /* where to look; what names are relative to */
    for (int i = 0; i < job->argc; i++) {
        const char *a = job->argv[i];
        for (size_t k = 0; opts[k]; k++) {
            size_t n = strlen(opts[k]);
            if (strncmp(a, opts[k], n))
                continue;
            const char *dir = a[n] ? a + n : i + 1 < job->argc ? job->argv[++i] : NULL;
            if (dir && *dir)
                KDC_VEC_PUSH(search, abs_dir(wd, dir, strlen(dir)));
            break;
        }
    }
    /* the environment's include directories (in the salt: the same for every unit) */
    static const char *const env[] = {"CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                                      "OBJC_INCLUDE_PATH", NULL};
    for (size_t e = 0; env[e]; e++)
        for (const char *p = getenv(env[e]); p && *p;) {
            size_t n = strcspn(p, ":");
            if (n)
                KDC_VEC_PUSH(search, abs_dir(wd, p, n));
            p += n + (p[n] == ':');
        }
    const char *slash = strrchr(job->file, '/');
    if (slash)
        KDC_VEC_PUSH(search,
                     abs_dir(wd, job->file, slash > job->file ? (size_t)(slash - job->file) : 1));
    kdc_strset_t seen_dirs;
    kdc_strset_init(&seen_dirs);
    for (size_t i = 0; i < search.n + nfiles; i++) {
        char *d = NULL;
        if (i < search.n) {
            d = kdc_xstrdup(search.v[i]);
        } else {
            const char *f = files[i - search.n], *s = strrchr(f, '/');
            if (s)
                d = abs_dir(wd, f, s > f ? (size_t)(s - f) : 1);
        }
        size_t before = seen_dirs.n;
        if (d)
            kdc_strset_add(&seen_dirs, d, strlen(d));
        if (d && seen_dirs.n != before)
            KDC_VEC_PUSH(under, d);
        else
            free(d);
    }
    for (size_t i = 0; i < nfiles; i++) {
        char *f = files[i][0] == '/' ? kdc_xstrdup(files[i])
                                     : kdc_xasprintf("%s/%s", wd ? wd : ".", files[i]);
        for (size_t u = 0; u < under.n; u++) {
            size_t n = strlen(under.v[u]);
            if (strncmp(f, under.v[u], n) || f[n] != '/' || n == 1)
                continue;
            const char *rest = f + n + 1;
            for (size_t k = 0; k < search.n; k++) {
                char *cand = kdc_xasprintf("%c%s/%s", KDC_FILE_ABSENT, search.v[k], rest);
                struct stat sb;
                if (stat(cand + 1, &sb) != 0 && (errno == ENOENT || errno == ENOTDIR))
                    kdc_strset_add(absent, cand, strlen(cand));
                free(cand);
            }
        }
        free(f);
    }
    kdc_strset_free(&seen_dirs);
    for (size_t i = 0; i < search.n; i++)
        free(search.v[i]);
    for (size_t i = 0; i < under.n; i++)
        free(under.v[i]);
    free(search.v);
    free(under.v);
}

int kdc_cache_store(kdc_cache_t *c, const kdc_tu_job_t *job, const char *const *files,
                    size_t nfiles, const void *model, size_t len, char **err) {
    kdc_buf_t b = {0};
    kdc_buf_put(&b, ENTRY_MAGIC, 4);
    uint32_t fmt = ENTRY_FORMAT, n = 0;
    kdc_buf_put(&b, &fmt, 4);
    size_t count_at = b.n;
    kdc_buf_put(&b, &n, 4);
    const char *wd = kdc_cache_working_dir(job);
    for (size_t i = 0; i < nfiles; i++) {
        char *abs = files[i][0] == '/' || !wd ? NULL : kdc_xasprintf("%s/%s", wd, files[i]);
        const kdc_fileseen_t *seen = seen_now(c, abs ? abs : files[i]);
        free(abs);
        if (!seen) /* gone already: an entry naming it could never be used */
            goto skip;
        kdc_buf_str(&b, files[i]);
        kdc_fileseen_put(&b, seen);
        n++;
    }
    /* and where a header would now shadow one read: paths that must stay absent */
    kdc_strset_t absent;
    kdc_strset_init(&absent);
    unit_absent(c, job, files, nfiles, &absent);
    kdc_fileseen_t none;
    memset(&none, 0, sizeof none);
    for (size_t i = 0; i < absent.cap; i++) {
        if (!absent.slots || !absent.slots[i])
            continue;
        kdc_buf_str(&b, absent.slots[i]);
        kdc_fileseen_put(&b, &none);
        n++;
    }
    kdc_strset_free(&absent);
    memcpy(b.v + count_at, &n, 4);
    uint64_t mlen = len;
    kdc_buf_put(&b, &mlen, 8);
    kdc_buf_put(&b, model, len);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(b.v, b.n));
    kdc_buf_put(&b, sum.digest, 16);
    kdc_cache_seal(c, &b);

    char *path = kdc_cache_unit_path(c, job);
    int rc = kdc_cache_write_entry(path, &b, err);
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

void kdc_cache_salt(const kdc_cache_t *c, unsigned char salt[16]) { memcpy(salt, c->salt, 16); }

static char *blob_path(const kdc_cache_t *c, const char *kind, const unsigned char key[16]) {
    char hex[33];
    for (int i = 0; i < 16; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    return kdc_xasprintf("%s/%s/%s", c->dir, kind, hex);
}

/* magic, format, key[16], data length (u64), data, XXH3-128 of everything before it, the
 * tag (kdc_cache_seal) */

int kdc_cache_get(kdc_cache_t *c, const char *kind, const unsigned char key[16], kdc_buf_t *out,
                  const char *redo, char **note) {
    *note = NULL;
    if (c->foreign)
        return 0;
    char *path = blob_path(c, kind, key);
    unsigned char *data = NULL;
    size_t len = 0;
    int got = kdc_cache_read_file(path, &data, &len, NULL), hit = 0;
    const char *damage = got == -2 ? "not a regular file of a plausible size" : NULL;
    size_t tagged = len;
    len = kdc_cache_untagged(len);
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
            else
                damage = kdc_cache_check_tag(c, data, tagged);
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
    kdc_cache_seal(c, &b);
    char *path = blob_path(c, kind, key);
    int rc = kdc_cache_write_entry(path, &b, err);
    free(path);
    kdc_buf_free(&b);
    return rc;
}

int kdc_cache_writable(const kdc_cache_t *c) { return c && !c->write_failed; }

void kdc_cache_stop_writes(kdc_cache_t *c) {
    if (c)
        c->write_failed = 1;
}

