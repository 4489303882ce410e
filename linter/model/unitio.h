/*
 * One translation unit's model as bytes, and back.
 *
 * Worker processes (jobs.c) parse units and send their models to the driver in
 * this form, and the cache (cache.c) stores it. The driver merges the units
 * into the run's program in the order of the inputs, so the program is the
 * same whichever process parsed which unit, and whether it came from the
 * cache: kdc_unit_merge adds functions, global initialisers and the unit's
 * kdc_tu_info_t exactly as kdc_parse_tu would have (duplicate definitions from
 * shared headers dropped, strings interned in the program, the unit's index
 * given to its functions).
 *
 * The encoding is private to one build of kdc-lint (native byte order, no
 * promise across versions; the cache keys entries on the binary). Decoding
 * checks every length, index and enumeration value, so damaged bytes are
 * refused with a message, never followed.
 */
#ifndef KDC_UNITIO_H
#define KDC_UNITIO_H

#include "bytes.h"
#include "model.h"

#include <stddef.h>

/* Appends the model of `unit` (a program holding exactly one translation
 * unit, as kdc_parse_tu leaves it) to out. */
void kdc_unit_encode(const kdc_program_t *unit, kdc_buf_t *out);

/* Adds the unit encoded in data[0..len) to p. Returns 0; -1 with *err
 * (malloc'd) when the bytes are not a complete, well-formed unit;
 * KDC_UNIT_INCOMPLETE with *err when the unit leaves out a definition
 * (kdc_parser_omit_seen) that p does not have yet: it must then be parsed
 * again in full. In both failures p is unchanged except for interned strings
 * and arena memory. */
#define KDC_UNIT_INCOMPLETE (-2)
int kdc_unit_merge(kdc_program_t *p, const void *data, size_t len, char **err);

#endif
