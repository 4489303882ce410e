/*
 * Fuzz target: the shard-report merger (`kdc-lint merge`, linter/report/merge.c). The
 * input is up to four JSON or SARIF shard reports separated by NUL bytes; each is
 * written to a file of the target's private directory and the files are merged as
 * `kdc-lint merge -o OUT REPORT...` merges them.
 */
#define _GNU_SOURCE
#include "fuzz_tmp.h"
#include "merge.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_REPORTS 4

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *paths[MAX_REPORTS] = {0}, *out = NULL;
    char *argv[3 + MAX_REPORTS + 1] = {"merge", "-o", NULL};
    int argc = 3;
    size_t at = 0;
    for (int k = 0; k < MAX_REPORTS && (k == 0 || at < size); k++) {
        const uint8_t *nul = memchr(data + at, 0, size - at);
        size_t len = (nul ? (size_t)(nul - data) : size) - at;
        char name[32];
        snprintf(name, sizeof name, "shard-%d.json", k + 1);
        paths[k] = kdc_fuzz_write(name, data + at, len);
        argv[argc++] = paths[k];
        at += len + (nul != NULL);
    }
    if (asprintf(&out, "%s/merged.json", kdc_fuzz_dir()) < 0)
        abort();
    argv[2] = out;
    argv[argc] = NULL;
    int rc = kdc_merge_main(argc, argv);
    if (rc < 0 || rc > 2)
        abort();
    for (int k = 0; k < MAX_REPORTS; k++)
        free(paths[k]);
    free(out);
    return 0;
}
