#define _GNU_SOURCE
/* Baselines (see baseline.h). */
#include "baseline.h"
#include "regfile.h"
#include "paths.h"
#include "termsig.h"
#include "util.h"

#include <ctype.h>
#include <errno.h>
#include <jansson.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

typedef struct entry {
    char fp[KDC_FINGERPRINT_LEN + 1];
    int taken;
    char *file; /* as written ("file"), or NULL */
} entry_t;

struct kdc_baseline {
    entry_t *v;
    size_t n;
};

static int cmp_entry(const void *a, const void *b) {
    return strcmp(((const entry_t *)a)->fp, ((const entry_t *)b)->fp);
}

/* A fingerprint: 32 hex digits, stored in lower case. */
static int valid_fp(const char *s, char *out) {
    if (strlen(s) != KDC_FINGERPRINT_LEN)
        return 0;
    for (size_t i = 0; i < KDC_FINGERPRINT_LEN; i++) {
        if (!isxdigit((unsigned char)s[i]))
            return 0;
        out[i] = (char)tolower((unsigned char)s[i]);
    }
    out[KDC_FINGERPRINT_LEN] = 0;
    return 1;
}

kdc_baseline_t *kdc_baseline_read(const char *path, char **err) {
    *err = NULL;
    char *why = NULL;
    size_t len = 0;
    char *text = kdc_read_regular(path, 0, &len, &why);
    if (!text) {
        *err = errno == EINVAL
                   ? kdc_xasprintf("%s: the baseline is not a regular file (%s)", path, why)
                   : kdc_xasprintf("%s: cannot read the baseline: %s", path, why);
        free(why);
        return NULL;
    }
    kdc_baseline_t *b = kdc_baseline_parse(path, text, len, err);
    free(text);
    return b;
}

kdc_baseline_t *kdc_baseline_parse(const char *path, const char *text, size_t len, char **err) {
    *err = NULL;
    json_error_t je;
    json_t *root = json_loadb(text, len, JSON_REJECT_DUPLICATES, &je);
    if (!root) {
        /* jansson's column counts the characters read on the line (0 before the first) */
        *err = kdc_xasprintf("%s:%d:%d: invalid baseline: %s", path, je.line,
                             je.column > 0 ? je.column : 1, je.text);
        return NULL;
    }
    kdc_baseline_t *b = calloc(1, sizeof *b);
    if (!b)
        kdc_oom();
    json_t *version = json_object_get(root, "version");
    json_t *findings = json_object_get(root, "findings");
    if (!json_is_object(root)) {
        *err = kdc_xasprintf("%s: invalid baseline: expected a JSON object with \"version\" and "
                             "\"findings\"",
                             path);
    } else if (!version) {
        *err = kdc_xasprintf("%s: invalid baseline: no \"version\" (not a kdc-lint baseline?)",
                             path);
    } else if (!json_is_integer(version) || json_integer_value(version) != KDC_BASELINE_VERSION) {
        char *v = json_dumps(version, JSON_ENCODE_ANY);
        *err = kdc_xasprintf("%s: baseline version %s is not supported (this kdc-lint reads "
                             "version %d)",
                             path, v ? v : "?", KDC_BASELINE_VERSION);
        free(v);
    } else if (!json_is_array(findings)) {
        *err = kdc_xasprintf("%s: invalid baseline: \"findings\" must be an array", path);
    } else {
        b->n = json_array_size(findings);
        b->v = calloc(b->n ? b->n : 1, sizeof *b->v);
        if (!b->v)
            kdc_oom();
        for (size_t i = 0; i < b->n && !*err; i++) {
            json_t *e = json_array_get(findings, i);
            json_t *fp = json_is_object(e) ? json_object_get(e, "fingerprint") : NULL;
            if (!json_is_object(e))
                *err = kdc_xasprintf("%s: invalid baseline: findings[%zu] must be an object",
                                     path, i);
            else if (!json_is_string(fp) || !valid_fp(json_string_value(fp), b->v[i].fp))
                *err = kdc_xasprintf("%s: invalid baseline: findings[%zu].fingerprint must be a "
                                     "string of %d hex digits",
                                     path, i, KDC_FINGERPRINT_LEN);
            else if (json_is_string(json_object_get(e, "file")))
                b->v[i].file = kdc_xstrdup(json_string_value(json_object_get(e, "file")));
        }
        qsort(b->v, b->n, sizeof *b->v, cmp_entry);
    }
    json_decref(root);
    if (*err) {
        kdc_baseline_free(b);
        return NULL;
    }
    return b;
}

void kdc_baseline_free(kdc_baseline_t *b) {
    if (!b)
        return;
    for (size_t i = 0; i < b->n; i++)
        free(b->v[i].file);
    free(b->v);
    free(b);
}

int kdc_baseline_take(kdc_baseline_t *b, const char *fingerprint) {
    entry_t key;
    if (!b || !valid_fp(fingerprint, key.fp))
        return 0;
    entry_t *hit = bsearch(&key, b->v, b->n, sizeof *b->v, cmp_entry);
    if (!hit)
        return 0;
    while (hit > b->v && !strcmp(hit[-1].fp, key.fp))
        hit--; /* the first of equal entries */
    for (; hit < b->v + b->n && !strcmp(hit->fp, key.fp); hit++)
        if (!hit->taken) {
            hit->taken = 1;
            return 1;
        }
    return 0;
}

size_t kdc_baseline_unmatched(const kdc_baseline_t *b, int (*analysed)(const char *, void *),
                              void *arg, size_t *elsewhere) {
    size_t n = 0;
    if (elsewhere)
        *elsewhere = 0;
    for (size_t i = 0; b && i < b->n; i++) {
        if (b->v[i].taken)
            continue;
        if (!analysed || !b->v[i].file || analysed(b->v[i].file, arg))
            n++;
        else if (elsewhere)
            (*elsewhere)++;
    }
    return n;
}

/* mkstemp() makes 0600 files; a baseline is committed like any file (0666 & ~umask). */
static int chmod_default(const char *path) {
    mode_t mask = umask(0);
    umask(mask);
    return chmod(path, 0666 & ~mask) == 0;
}

int kdc_baseline_write(const char *path, const kdc_findings_t *fs,
                       char (*fps)[KDC_FINGERPRINT_LEN + 1], const char *cwd, char **err) {
    *err = NULL;
    json_t *root = json_pack("{s:i, s:s}", "version", KDC_BASELINE_VERSION, "tool",
                             "kdc-lint " KDC_VERSION);
    json_t *arr = json_array();
    for (size_t i = 0; i < fs->n; i++) {
        const kdc_finding_t *f = &fs->v[i];
        json_t *e = json_pack("{s:s, s:s}", "fingerprint", fps[i], "rule", f->rule);
        /* informative fields; text that is not UTF-8 is left out rather than failing */
        json_t *v = json_string(kdc_display_path(cwd, f->loc.file));
        if (v)
            json_object_set_new(e, "file", v);
        if (f->function && (v = json_string(f->function)))
            json_object_set_new(e, "function", v);
        json_object_set_new(e, "line", json_integer(f->loc.line));
        if ((v = json_string(f->message)))
            json_object_set_new(e, "message", v);
        json_array_append_new(arr, e);
    }
    json_object_set_new(root, "findings", arr);
    /* the file the new baseline replaces: a regular file, or none yet (never a device,
     * FIFO or directory; through a symbolic link, the file it names: regfile.h) */
    char *why = NULL;
    char *target = kdc_replaceable_target(path, &why);
    if (!target) {
        *err = kdc_xasprintf("%s: cannot write the baseline: %s", path, why);
        free(why);
        json_decref(root);
        return -1;
    }
    char *tmp = kdc_xasprintf("%s.XXXXXX", target);
    kdc_termsig_enter(); /* a signal ends the run before or after, never in the middle */
    int fd = mkstemp(tmp);
    int rc = -1;
    if (fd < 0) {
        *err = kdc_xasprintf("%s: cannot write the baseline: %s", path, strerror(errno));
    } else {
        FILE *o = fdopen(fd, "w");
        int ok = o && json_dumpf(root, o, JSON_INDENT(2) | JSON_PRESERVE_ORDER) == 0 &&
                 fputc('\n', o) != EOF;
        int saved = errno;
        if (o) {
            if (fclose(o) != 0)
                ok = 0, saved = errno;
        } else {
            close(fd);
        }
        if (ok && chmod_default(tmp) && rename(tmp, target) == 0) {
            rc = 0;
        } else {
            if (ok)
                saved = errno;
            *err = kdc_xasprintf("%s: cannot write the baseline: %s", path, strerror(saved));
            unlink(tmp);
        }
    }
    kdc_termsig_leave();
    free(tmp);
    free(target);
    json_decref(root);
    return rc;
}
