/*
 * Fuzz target: the suppression-comment parser (linter/report/suppress.c). The input is a
 * source file's text; its directives are matched against a finding of every rule on
 * every line the text has, and the invalid and unused ones are reported.
 */
#define _GNU_SOURCE
#include "findings.h"
#include "rule.h"
#include "suppress.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static int all_unused(void *ctx, const char *file, const char *rule) {
    (void)ctx;
    (void)file;
    (void)rule;
    return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static const char file[] = "/fuzz/src/service.c";
    kdc_suppressions_t *s = kdc_suppressions_new();
    kdc_suppressions_scan_text(s, file, (const char *)data, size);
    unsigned lines = 1;
    for (size_t i = 0; i < size && lines < 64; i++)
        lines += data[i] == '\n';
    for (unsigned line = 1; line <= lines; line++)
        for (size_t r = 0; r < kdc_nrules; r += 5) {
            kdc_finding_t f = {0};
            f.rule = kdc_rules[r]->name;
            f.loc.file = file;
            f.loc.line = line;
            f.loc.end_line = line + (r % 2);
            (void)kdc_suppressions_match(s, &f);
        }
    kdc_findings_t out = {0};
    kdc_suppressions_report(s, &out, all_unused, NULL);
    for (size_t i = 0; i < out.n; i++)
        if (!out.v[i].message || !out.v[i].loc.line)
            abort();
    kdc_findings_free(&out);
    kdc_suppressions_free(s);
    return 0;
}
