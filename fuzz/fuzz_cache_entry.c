/*
 * Fuzz target: the cache-entry decoders (linter/cache/, linter/model/unitio.c). The first
 * byte of the input chooses what the rest is:
 *
 *   0 or 2 (mod 4): a unit entry (.kdc-cache/units/) without its checksum; the checksum
 *         is added, so the decoding goes past it: kdc_cache_parse_unit, then the model it
 *         holds merged into a program (kdc_unit_merge);
 *   1:    the findings of a stored analysis (.kdc-cache/runs/, after the manifest):
 *         kdc_cache_parse_findings;
 *   3:    a compilation database as the cache stores it (.kdc-cache/compdb/, after the
 *         checksum kdc_cache_get checks): kdc_compdb_decode.
 *
 * An entry arrives with the checkout (docs/reliability.md): every length, index and
 * enumeration value in it is checked, whatever the checksum says.
 */
#include "cache_int.h"
#include "compdb.h"
#include "model.h"
#include "unitio.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define XXH_INLINE_ALL
#include <xxhash.h>

static void unit_entry(const uint8_t *data, size_t size) {
    unsigned char *e = malloc(size + 16);
    if (!e)
        abort();
    if (size)
        memcpy(e, data, size);
    XXH128_canonical_t sum;
    XXH128_canonicalFromHash(&sum, XXH3_128bits(e, size));
    memcpy(e + size, sum.digest, 16);
    kdc_unit_entry_t entry;
    if (!kdc_cache_parse_unit(e, size + 16, &entry)) {
        kdc_program_t *p = kdc_program_new();
        char *err = NULL;
        int rc = kdc_unit_merge(p, entry.model, entry.model_len, &err);
        if ((rc == 0) != (err == NULL))
            abort();
        free(err);
        kdc_program_free(p);
        kdc_cache_unit_entry_free(&entry);
    }
    free(e);
}

static void run_findings(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size ? size : 1); /* exactly the bytes: no slack to read */
    if (!copy)
        abort();
    if (size)
        memcpy(copy, data, size);
    kdc_reader_t r = {copy, copy + size, 0};
    kdc_program_t *p = kdc_program_new();
    kdc_findings_t runs[2] = {{0}, {0}};
    if (!kdc_cache_parse_findings(&r, p, runs))
        for (int k = 0; k < 2; k++)
            for (size_t i = 0; i < runs[k].n; i++)
                if (!runs[k].v[i].rule)
                    abort();
    kdc_findings_free(&runs[0]);
    kdc_findings_free(&runs[1]);
    kdc_program_free(p);
    free(copy);
}

static void compdb_list(const uint8_t *data, size_t size) {
    unsigned char *copy = malloc(size ? size : 1);
    if (!copy)
        abort();
    if (size)
        memcpy(copy, data, size);
    kdc_compdb_t db;
    if (kdc_compdb_decode(copy, size, &db) == 0) {
        for (size_t i = 0; i < db.n; i++)
            if (!db.v[i].directory || !db.v[i].file)
                abort();
        kdc_compdb_free(&db);
    } else if (db.n || db.v) {
        abort(); /* refused bytes leave nothing behind */
    }
    free(copy);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1)
        return 0;
    switch (data[0] % 4) {
    case 1:
        run_findings(data + 1, size - 1);
        break;
    case 3:
        compdb_list(data + 1, size - 1);
        break;
    default:
        unit_entry(data + 1, size - 1);
    }
    return 0;
}
