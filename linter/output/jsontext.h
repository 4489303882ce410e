/* JSON strings for text that may not be UTF-8 (JSON and SARIF output). */
#ifndef KDC_JSONTEXT_H
#define KDC_JSONTEXT_H

#include <jansson.h>

/* A JSON string for s (NULL: JSON null). jansson refuses strings that are not
 * UTF-8 (file names, compiler messages quoting the source); their invalid
 * bytes become U+FFFD instead. */
json_t *kdc_json_text(const char *s);

#endif
