/*
 * Inline expectation markers of kdc-lint fixtures and acceptance cases.
 *
 * A marker is a trailing comment on the line a finding sits on:
 *   / * expect: rule-a, rule-b * /      rule-a and rule-b are reported on this line
 *   / * ok: rule-c * /                  rule-c must NOT be reported on this line
 *   / * expect: rule-a; ok: rule-c * /  both in one comment, separated by ';'
 * (written without the inner spaces). A comment is a marker comment when its
 * text starts with "expect:" or "ok:"; other comments (file headers, prose)
 * are ignored, except that a comment starting with "expect" without a colon
 * is rejected as a likely typo. A fixture may carry extra kdc-lint arguments
 * in a comment on its first line: / * kdc-fixture: --profile=strict * /.
 *
 * Files are identified by their realpath(3), so markers and kdc-lint findings
 * compare equal however either side spelled the path.
 */
#ifndef KDC_TEST_MARKERS_H
#define KDC_TEST_MARKERS_H

#include <stddef.h>

typedef enum { KDC_MARK_EXPECT, KDC_MARK_OK } kdc_mark_kind_t;

typedef struct kdc_marker {
    char *file;          /* realpath of the source file */
    unsigned line;       /* 1-based line the comment starts on */
    char *rule;
    kdc_mark_kind_t kind;
} kdc_marker_t;

typedef struct kdc_markers {
    kdc_marker_t *v;
    size_t n, cap;
    char **args;         /* extra kdc-lint arguments from "kdc-fixture:" comments */
    size_t nargs;
    int has_args;        /* a "kdc-fixture:" comment was seen */
} kdc_markers_t;

/* Returns 1 when name is a kebab-case rule name ("bare-commit"). */
int kdc_rule_name_valid(const char *name);

/*
 * Parses the markers of one source text and appends them to ms. file is the
 * (already resolved) path recorded in each marker. Returns 0, or -1 with a
 * message naming file and line in err (err may be NULL).
 */
int kdc_markers_parse_text(kdc_markers_t *ms, const char *file, const char *text,
                           char *err, size_t errlen);

/* Reads path, resolves it with realpath(3) and parses it. Returns 0 or -1 (err set). */
int kdc_markers_parse_file(kdc_markers_t *ms, const char *path, char *err, size_t errlen);

/* Returns 1 when ms holds an expect marker for (file, line, rule). */
int kdc_markers_has(const kdc_markers_t *ms, kdc_mark_kind_t kind, const char *file,
                    unsigned line, const char *rule);

/* Number of markers of kind (any rule when rule is NULL). */
size_t kdc_markers_count(const kdc_markers_t *ms, kdc_mark_kind_t kind, const char *rule);

void kdc_markers_free(kdc_markers_t *ms);

#endif
