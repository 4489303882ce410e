/*
 * Fuzz target: the compilation-database reader (`-p DIR`, linter/inputs/inputs.c and
 * compdb.c). The input is a compile_commands.json, written to a directory of the
 * target's own; the translation units and their arguments are collected from it as
 * `kdc-lint -p DIR` collects them: checked with jansson, then read by libclang (loaded
 * on the first input that passes the check), each entry's arguments filtered.
 */
#define _GNU_SOURCE
#include "fuzz_tmp.h"
#include "inputs.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    static char *db_dir;
    if (!db_dir) {
        if (asprintf(&db_dir, "%s/db", kdc_fuzz_dir()) < 0 || mkdir(db_dir, 0700) != 0)
            abort();
    }
    free(kdc_fuzz_write("db/compile_commands.json", data, size));
    static const char *const extra[] = {"-I", "include", "-DFUZZ=1"};
    kdc_input_opts_t o = {db_dir, extra, 3, NULL, 0};
    kdc_inputs_t in = {0};
    kdc_inputs_collect(NULL, 0, &o, &in);
    for (size_t i = 0; i < in.njobs; i++)
        if (!in.jobs[i].file || in.jobs[i].argc < 0)
            abort();
    if (in.njobs == 0 && in.nerrors == 0) /* no unit is an error, said */
        abort();
    kdc_inputs_free(&in);
    return 0;
}
