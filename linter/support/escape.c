/* Control characters escaped (see escape.h). */
#define _GNU_SOURCE
#include "escape.h"
#include "util.h"

#include <stdlib.h>
#include <string.h>

/* The escape of the character at s (its length in *len), or NULL when it is shown as it
 * is. buf holds at least 8 bytes. */
static const char *escape_at(const char *s, size_t *len, char buf[8]) {
    unsigned char c = (unsigned char)s[0];
    *len = 1;
    if (c == '\t' || (c >= 0x20 && c < 0x7f) || (c >= 0x80 && c != 0xc2))
        return NULL;
    if (c == 0xc2) {
        unsigned char d = (unsigned char)s[1];
        if (d < 0x80 || d > 0x9f)
            return NULL;
        *len = 2;
        snprintf(buf, 8, "\\u%04x", d);
        return buf;
    }
    switch (c) {
    case '\n':
        return "\\n";
    case '\r':
        return "\\r";
    default:
        snprintf(buf, 8, "\\x%02x", c);
        return buf;
    }
}

void kdc_fputs_shown(const char *s, FILE *o) {
    if (!s)
        return;
    const char *plain = s;
    char buf[8];
    while (*s) {
        size_t len;
        const char *e = escape_at(s, &len, buf);
        if (!e) {
            s += len;
            continue;
        }
        fwrite(plain, 1, (size_t)(s - plain), o);
        fputs(e, o);
        s += len;
        plain = s;
    }
    fwrite(plain, 1, (size_t)(s - plain), o);
}

char *kdc_shown(const char *s) {
    char *out = NULL;
    size_t n = 0;
    FILE *m = open_memstream(&out, &n);
    if (!m)
        kdc_oom();
    kdc_fputs_shown(s, m);
    if (fclose(m) != 0 || !out)
        kdc_oom();
    return out;
}

size_t kdc_shown_width(const char *s, size_t i) {
    if (i > 0 && (unsigned char)s[i - 1] == 0xc2 && (unsigned char)s[i] >= 0x80 &&
        (unsigned char)s[i] <= 0x9f)
        return 0;
    char buf[8];
    size_t len;
    const char *e = escape_at(s + i, &len, buf);
    return e ? strlen(e) : 1;
}
