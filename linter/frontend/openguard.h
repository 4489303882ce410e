/*
 * What libclang may open: regular files and directories only.
 *
 * libclang reads whatever an #include, -include, -imacros or @response file
 * names, and reads a FIFO or a device as clang does (to its end): `#include
 * "/dev/stdin"` waits for a pipe's writer forever, a FIFO in the tree blocks the
 * open itself, `#include "/dev/zero"` grows until memory runs out. libclang has
 * no hook before it opens a file, and which file an #include names is known only
 * once the preprocessor has run, so the guard sits at the one place every such
 * read passes: the C library's open(), which LLVM calls for every file it reads
 * (llvm::sys::fs::openFileForRead). kdc-lint defines open() and exports it
 * (linker option --export-dynamic-symbol=open, linter/CMakeLists.txt), so the
 * dynamically loaded libLLVM binds to it; outside a guard it is the system call
 * itself. Inside one, a read-only open is made without blocking (O_NONBLOCK,
 * O_NOCTTY) and anything fstat(2) does not call a regular file or a directory
 * is closed again and refused with EACCES: clang then reports the file as one it
 * cannot open, and the guard's owner reports the unit as an input error naming
 * the file. Directories stay allowed (clang looks up include paths and modules
 * in them); writes and creations are not guarded.
 *
 * One guard per process at a time (libclang parses one unit at a time per
 * process in kdc-lint: workers are processes, jobs.h).
 */
#ifndef KDC_OPENGUARD_H
#define KDC_OPENGUARD_H

/* Starts refusing, in this process, reads of files that are no regular file. */
void kdc_openguard_begin(void);

/* Stops; returns what was refused first, "PATH: a FIFO, not a regular file"
 * (malloc'd), or NULL when nothing was. */
char *kdc_openguard_end(void);

#endif
