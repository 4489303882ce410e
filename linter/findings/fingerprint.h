/*
 * Finding fingerprints that survive line shifts: a hash of the rule, the
 * file's display path, the enclosing function, the finding's source line with
 * whitespace collapsed, and its occurrence number among findings with the same
 * key in that file (the shown findings counted before the suppressed ones).
 * Used by baselines and SARIF partialFingerprints.
 */
#ifndef KDC_FINGERPRINT_H
#define KDC_FINGERPRINT_H

#include "findings.h"

#define KDC_FINGERPRINT_LEN 32 /* hex digits (XXH3 128-bit) */

/* Fills fps[i] (KDC_FINGERPRINT_LEN + 1 bytes each) for every finding of fs,
 * in the order of fs->v. `cwd` makes paths relative as in the reports. */
void kdc_fingerprints(const kdc_findings_t *fs, const char *cwd,
                      char (*fps)[KDC_FINGERPRINT_LEN + 1]);

#endif
