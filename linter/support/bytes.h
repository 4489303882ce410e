/*
 * Bytes written and read back: a growable buffer, and a reader that checks
 * every length. What the cache stores and worker processes send is private
 * to one build of kdc-lint (native byte order; the cache keys its entries on
 * the executable), so there is no portable encoding here, only care that
 * damaged bytes are refused and never followed.
 */
#ifndef KDC_BYTES_H
#define KDC_BYTES_H

#include <stddef.h>
#include <stdint.h>

typedef struct kdc_buf {
    unsigned char *v;
    size_t n, cap;
} kdc_buf_t;

void kdc_buf_put(kdc_buf_t *b, const void *data, size_t n);
void kdc_buf_free(kdc_buf_t *b);
void kdc_buf_u8(kdc_buf_t *b, uint8_t v);
void kdc_buf_u32(kdc_buf_t *b, uint32_t v);
void kdc_buf_u64(kdc_buf_t *b, uint64_t v);
/* A string: its length as u32 (UINT32_MAX for NULL), then its bytes. */
void kdc_buf_str(kdc_buf_t *b, const char *s);

/* Reads data[0..len). A read past the end sets `bad` and gives zeros (or
 * NULL): a decoder reads on and checks `bad` once at the end. */
typedef struct kdc_reader {
    const unsigned char *at, *end;
    int bad;
} kdc_reader_t;

void kdc_read_bytes(kdc_reader_t *r, void *out, size_t n);
uint8_t kdc_read_u8(kdc_reader_t *r);
uint32_t kdc_read_u32(kdc_reader_t *r);
uint64_t kdc_read_u64(kdc_reader_t *r);
/* A count of items taking at least `min_size` bytes each: bad (and 0) when
 * fewer bytes are left, so a damaged count cannot make a huge allocation. */
uint32_t kdc_read_count(kdc_reader_t *r, size_t min_size);
/* A string as kdc_buf_str wrote it, in place: its *lenp bytes at the
 * returned pointer, not NUL-terminated; NULL for NULL or when bad. */
const char *kdc_read_span(kdc_reader_t *r, size_t *lenp);
/* A string as kdc_buf_str wrote it, malloc'd; NULL for NULL or when bad. */
char *kdc_read_str(kdc_reader_t *r);

#endif
