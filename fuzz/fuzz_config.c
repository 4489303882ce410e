/*
 * Fuzz target: the configuration loader (.kdc-lint.yaml, linter/report/config.c). The
 * input is a configuration's bytes; everything a run asks of a loaded configuration is
 * asked (excludes, rules, severities, the analysis options, --dump-config).
 */
#define _GNU_SOURCE
#include "config.h"
#include "rule.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

static const char *const files[] = {"/fuzz/src/main.c", "/fuzz/vendor/lib/x/y.c",
                                    "/fuzz/build/gen.c", "/elsewhere/a.c", NULL};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static FILE *devnull;
    if (!devnull && !(devnull = fopen("/dev/null", "w")))
        abort();
    kdc_configs_t *cs = kdc_configs_new(NULL, "/fuzz");
    const kdc_config_t *c =
        kdc_configs_parse(cs, "/fuzz/" KDC_CONFIG_NAME, (const char *)data, size);
    for (size_t i = 0; i < kdc_configs_nerrors(cs); i++) {
        const kdc_config_error_t *e = kdc_configs_error(cs, i);
        if (!e->where || !e->message)
            abort();
    }
    int *rule_on = calloc(kdc_nrules ? kdc_nrules : 1, sizeof *rule_on);
    for (size_t r = 0; r < kdc_nrules; r++)
        rule_on[r] = -1;
    kdc_overrides_t o = {NULL, -1, rule_on, 0};
    for (size_t i = 0; files[i]; i++)
        (void)kdc_config_excludes(c, files[i]);
    for (size_t r = 0; r < kdc_nrules; r++) {
        (void)kdc_config_rule_on(c, &o, r);
        (void)kdc_config_severity(c, r);
    }
    (void)kdc_config_report_unused(c, &o);
    if (!c->broken) { /* what a run takes from a configuration it can use (slow: sets) */
        kdc_options_t opts = {0};
        kdc_options_union_t u;
        kdc_options_union(&c, 1, 0, &opts, &u);
        kdc_options_union_free(&u);
        if (kdc_config_dump(devnull, "/fuzz/src/main.c", c, &o, "/fuzz") != 0)
            abort();
    }
    free(rule_on);
    kdc_configs_free(cs);
    return 0;
}
