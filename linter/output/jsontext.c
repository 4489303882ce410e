#include "jsontext.h"

#include <stdlib.h>
#include <string.h>

/* Length of the valid UTF-8 sequence at s (as strict as jansson), or 0. */
static size_t utf8_len(const unsigned char *s) {
    unsigned char c = s[0], lo = 0x80, hi = 0xBF;
    size_t n;
    if (c < 0x80)
        return 1;
    if (c >= 0xC2 && c <= 0xDF)
        n = 2;
    else if (c >= 0xE0 && c <= 0xEF) {
        n = 3;
        if (c == 0xE0)
            lo = 0xA0; /* overlong */
        else if (c == 0xED)
            hi = 0x9F; /* surrogates */
    } else if (c >= 0xF0 && c <= 0xF4) {
        n = 4;
        if (c == 0xF0)
            lo = 0x90; /* overlong */
        else if (c == 0xF4)
            hi = 0x8F; /* above U+10FFFF */
    } else
        return 0;
    if (s[1] < lo || s[1] > hi)
        return 0;
    for (size_t i = 2; i < n; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    return n;
}

json_t *kdc_json_text(const char *s) {
    if (!s)
        return json_null();
    json_t *j = json_string(s);
    if (j)
        return j;
    char *buf = malloc(3 * strlen(s) + 1), *o = buf;
    if (!buf)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)s; *p;) {
        size_t n = utf8_len(p);
        if (n) {
            memcpy(o, p, n);
            o += n;
            p += n;
        } else {
            memcpy(o, "\xEF\xBF\xBD", 3);
            o += 3;
            p++;
        }
    }
    *o = 0;
    j = json_string(buf);
    free(buf);
    return j;
}
