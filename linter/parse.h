/* libclang → model. The only file that includes clang-c headers besides inputs.c. */
#ifndef KDC_PARSE_H
#define KDC_PARSE_H

#include "model.h"

typedef struct kdc_parser kdc_parser_t;

kdc_parser_t *kdc_parser_new(void);
void kdc_parser_free(kdc_parser_t *ps);

/*
 * Parses one translation unit with libclang (KeepGoing: compile errors do not
 * stop the analysis) and adds its function definitions, outside system
 * headers, to the program. argv are compiler arguments without the compiler
 * name and without the source file. Returns 0 when a translation unit was
 * produced (its kdc_tu_info_t tells whether it is incomplete), -1 when libclang
 * could not parse it at all; *err then holds a malloc'd message.
 */
int kdc_parse_tu(kdc_parser_t *ps, kdc_program_t *p, const char *file, const char *const *argv,
                 int argc, char **err);

#endif
