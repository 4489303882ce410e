/*
 * Text shown to a person (the text report, GitHub annotations, stderr) carries no
 * control character from a path or a message: a file named "a\nb.c:1:1: warning: ..."
 * must not forge a line of the report, nor "\033]..." drive the terminal.
 *
 * Every control character but tab (C0 U+0000-U+001F, DEL U+007F, and C1 U+0080-
 * U+009F, which some terminals obey) is written as a C escape: \n, \r, \x1b, and
 * \u0085 for a C1 character (UTF-8 C2 80 to C2 9F). Other bytes, backslash
 * included, are written as they are: text without control characters is shown
 * unchanged. JSON, SARIF and the baseline escape by their own rules (jansson).
 */
#ifndef KDC_ESCAPE_H
#define KDC_ESCAPE_H

#include <stddef.h>
#include <stdio.h>

/* Writes s (NULL: nothing) to o, control characters escaped. */
void kdc_fputs_shown(const char *s, FILE *o);

/* s with control characters escaped (malloc'd). */
char *kdc_shown(const char *s);

/* How many columns byte i of s takes once escaped: for a caret under a source line
 * shown escaped (0 for the second byte of an escaped C1 character). */
size_t kdc_shown_width(const char *s, size_t i);

#endif
