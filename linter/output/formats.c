/* The output formats by name (--format). */
#include "output.h"

#include <string.h>

kdc_output_fn kdc_output_format(const char *name) {
    static const struct {
        const char *name;
        kdc_output_fn fn;
    } formats[] = {{"text", kdc_output_text},
                   {"json", kdc_output_json},
                   {"sarif", kdc_output_sarif},
                   {"github", kdc_output_github}};
    for (size_t i = 0; i < sizeof formats / sizeof formats[0]; i++)
        if (!strcmp(formats[i].name, name))
            return formats[i].fn;
    return NULL;
}
