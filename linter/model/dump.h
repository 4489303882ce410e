#ifndef KDC_DUMP_H
#define KDC_DUMP_H
#include "model.h"
#include <stdio.h>
void kdc_dump_program(FILE *o, const kdc_program_t *p);
#endif
