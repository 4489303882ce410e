#include "dump.h"
#include "parse.h"
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    kdc_program_t *p = kdc_program_new();
    kdc_parser_t *ps = kdc_parser_new();
    const char *args[] = {"-xc", "-std=gnu11", "-isystem", KDC_RDKAFKA_INCLUDE_DIR "/librdkafka"};
    for (int i = 1; i < argc; i++) {
        char *err = NULL;
        if (kdc_parse_tu(ps, p, argv[i], args, 4, &err)) { fprintf(stderr, "%s\n", err); free(err); }
    }
    kdc_dump_program(stdout, p);
    kdc_parser_free(ps);
    kdc_program_free(p);
    return 0;
}
