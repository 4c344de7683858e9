/* What can be read off PTX text without parsing it: its kernels and target. */
#ifndef MGPU_PTX_TEXT_H
#define MGPU_PTX_TEXT_H

#include <stdbool.h>
#include <stddef.h>

/* Whether the bytes look like PTX text (a .version directive before any
 * other directive). */
bool mgpu_ptx_is_text(const char *text, size_t size);

/* Calls fn with the name of every .entry (kernel) the PTX defines, comments
 * skipped. Returns the number of kernels. */
long mgpu_ptx_kernels(const char *text, size_t size, void (*fn)(const char *name, void *ctx),
                      void *ctx);

/* The architecture of the .target directive (90 for sm_90), or 0. */
unsigned mgpu_ptx_target_arch(const char *text, size_t size);

/* The PTX ISA version of the .version directive. */
bool mgpu_ptx_version(const char *text, size_t size, unsigned *major, unsigned *minor);

#endif
