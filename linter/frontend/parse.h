/* libclang → model. With libclang_lazy.c and inputs/compdb.c (a compilation database as
 * libclang reads it), the only file that includes clang-c headers. */
#ifndef KDC_PARSE_H
#define KDC_PARSE_H

#include "model.h"

/* A translation unit to parse, as the inputs (inputs.h) collect it. */
typedef struct kdc_tu_job {
    char *file;   /* absolute path of the source file */
    char **argv;  /* compiler arguments for libclang, without compiler and file */
    int argc;
} kdc_tu_job_t;

typedef struct kdc_parser kdc_parser_t;

kdc_parser_t *kdc_parser_new(void);
void kdc_parser_free(kdc_parser_t *ps);

/* With `on`, a function definition this parser already converted for an
 * earlier unit (same USR, file and line: a shared header's inline function) is
 * not converted again: the unit's program lists it as omitted
 * (kdc_program_omitted), and kdc_unit_merge accepts the unit only into a
 * program that has it already. Off by default. A definition whose conversion
 * reached the nesting limit is always converted (its unit must say so), and so
 * is every definition of a unit with compile errors (never cached, it is parsed
 * again on every run: its model must not depend on what was parsed before). */
void kdc_parser_omit_seen(kdc_parser_t *ps, int on);

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

/* The same; also calls file_fn(arg, path) for every file the unit read (the
 * main file and every included file, system headers too), named by its real
 * path, and also by the name it was looked up by when that differs (a symbolic
 * link, or a path relative to the working directory), before the unit is disposed.
 * The cache (cache.c) keys a unit's model on these files' contents. */
typedef void (*kdc_parse_file_fn)(void *arg, const char *path);
int kdc_parse_tu_files(kdc_parser_t *ps, kdc_program_t *p, const char *file,
                       const char *const *argv, int argc, kdc_parse_file_fn file_fn, void *arg,
                       char **err);

/* The same against a precompiled preamble (preamble.h): the main file's contents given (a
 * buffer of len bytes read in place of the file: its copy with the prefix blanked), argv with
 * `-include-pch pch`. The preamble's declarations are converted from the precompiled header
 * itself, which the parser keeps loaded for the next units (a few at a time), and only the
 * unit's own are visited in its parse: the model is the one kdc_parse_tu_files makes of the
 * whole file. pre_files (npre_files of them) are the files the precompiled header was made
 * of. Returns 1, nothing converted or reported, when the precompiled header cannot be loaded
 * or the parse has a compile error that may be the preamble's: one at no place (a
 * precompiled header that no longer matches its files or flags), in one of pre_files, or in
 * the precompiled header's own directory (the caller parses the unit again as it is). A unit
 * whose errors all lie in its own text and in headers it includes after the preamble is
 * parsed once. Else as kdc_parse_tu_files. */
int kdc_parse_tu_contents(kdc_parser_t *ps, kdc_program_t *p, const char *file,
                          const char *const *argv, int argc, const char *contents, size_t len,
                          const char *pch, const char *const *pre_files, size_t npre_files,
                          kdc_parse_file_fn file_fn, void *arg, char **err);

/* Parses `header` with argv (which say its language: -x c-header or c++-header) and saves
 * it as a precompiled header at `pch`; file_fn gets every file it read, the header itself
 * too. 0, or -1 with *err (malloc'd) when it cannot be parsed, has a compile error, reads a
 * header through a directory whose ".." a textual clean-up would resolve elsewhere (clang
 * records the files of a precompiled header so: libclang's own GCC directories for C++,
 * "/../lib/gcc/.../../../../include/c++/12"; a symbolic link before a ".."), or cannot be
 * saved. */
int kdc_parse_save_pch(kdc_parser_t *ps, const char *header, const char *const *argv, int argc,
                       const char *pch, kdc_parse_file_fn file_fn, void *arg, char **err);

#endif
