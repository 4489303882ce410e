/*
 * Fuzz target: the baseline reader (linter/report/baseline.c). The input is a baseline's
 * bytes; a baseline read is asked for fingerprints, and for its unmatched entries.
 */
#include "baseline.h"

#include <stdint.h>
#include <stdlib.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *err = NULL;
    kdc_baseline_t *b = kdc_baseline_parse("baseline.json", (const char *)data, size, &err);
    if (!b == !err) /* exactly one of them */
        abort();
    if (b) {
        (void)kdc_baseline_take(b, "0123456789abcdef0123456789abcdef");
        (void)kdc_baseline_take(b, "0123456789ABCDEF0123456789ABCDEF");
        (void)kdc_baseline_take(b, "not a fingerprint");
        size_t elsewhere = 0;
        (void)kdc_baseline_unmatched(b, NULL, NULL, &elsewhere);
    }
    kdc_baseline_free(b);
    free(err);
    return 0;
}
