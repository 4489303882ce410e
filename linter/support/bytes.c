/* Bytes written and read back (see bytes.h). */
#include "bytes.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

void kdc_buf_put(kdc_buf_t *b, const void *data, size_t n) {
    if (b->cap - b->n < n) {
        size_t cap = b->cap ? b->cap : 4096;
        while (cap - b->n < n)
            cap *= 2;
        b->v = kdc_xrealloc(b->v, cap);
        b->cap = cap;
    }
    if (n)
        memcpy(b->v + b->n, data, n);
    b->n += n;
}

void kdc_buf_free(kdc_buf_t *b) {
    free(b->v);
    memset(b, 0, sizeof *b);
}

void kdc_buf_u8(kdc_buf_t *b, uint8_t v) { kdc_buf_put(b, &v, sizeof v); }
void kdc_buf_u32(kdc_buf_t *b, uint32_t v) { kdc_buf_put(b, &v, sizeof v); }
void kdc_buf_u64(kdc_buf_t *b, uint64_t v) { kdc_buf_put(b, &v, sizeof v); }

void kdc_buf_str(kdc_buf_t *b, const char *s) {
    uint32_t len = s ? (uint32_t)strlen(s) : UINT32_MAX;
    kdc_buf_u32(b, len);
    if (s)
        kdc_buf_put(b, s, len);
}

void kdc_read_bytes(kdc_reader_t *r, void *out, size_t n) {
    if (r->bad || (size_t)(r->end - r->at) < n) {
        r->bad = 1;
        memset(out, 0, n);
        return;
    }
    memcpy(out, r->at, n);
    r->at += n;
}

uint8_t kdc_read_u8(kdc_reader_t *r) {
    uint8_t v;
    kdc_read_bytes(r, &v, sizeof v);
    return v;
}

uint32_t kdc_read_u32(kdc_reader_t *r) {
    uint32_t v;
    kdc_read_bytes(r, &v, sizeof v);
    return v;
}

uint64_t kdc_read_u64(kdc_reader_t *r) {
    uint64_t v;
    kdc_read_bytes(r, &v, sizeof v);
    return v;
}

uint32_t kdc_read_count(kdc_reader_t *r, size_t min_size) {
    uint32_t n = kdc_read_u32(r);
    if (!r->bad && min_size && n > (size_t)(r->end - r->at) / min_size)
        r->bad = 1;
    return r->bad ? 0 : n;
}

const char *kdc_read_span(kdc_reader_t *r, size_t *lenp) {
    uint32_t len = kdc_read_u32(r);
    *lenp = 0;
    if (r->bad || len == UINT32_MAX)
        return NULL;
    if (len > (size_t)(r->end - r->at)) {
        r->bad = 1;
        return NULL;
    }
    const char *s = (const char *)r->at;
    r->at += len;
    *lenp = len;
    return s;
}

char *kdc_read_str(kdc_reader_t *r) {
    size_t len;
    const char *at = kdc_read_span(r, &len);
    if (!at)
        return NULL;
    char *s = malloc(len + 1);
    if (!s)
        kdc_oom();
    memcpy(s, at, len);
    s[len] = 0;
    return s;
}
