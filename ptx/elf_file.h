/* Reading the ELF files that hold GPU code: host programs and libraries
 * (their fatbin sections) and cubins (their kernels). Bounds are checked
 * against the bytes given, which may sit at any alignment. */
#ifndef MGPU_PTX_ELF_FILE_H
#define MGPU_PTX_ELF_FILE_H

#include <stdbool.h>
#include <stddef.h>

#define MGPU_EM_CUDA 190 /* e_machine of a cubin */

/* Whether the bytes start a 64-bit little-endian ELF file; *machine gets its
 * e_machine. */
bool mgpu_elf_identify(const void *data, size_t size, unsigned *machine);

/* Whether the section and program-header tables, every section and every
 * segment lie within the bytes given (a file cut short fails here). Returns
 * 0, or -1 with a one-line reason in err ("truncated: ..."). */
int mgpu_elf_check(const void *data, size_t size, char *err, size_t errlen);

/* The contents of the section called `name`, or NULL (also when the file is
 * corrupt). */
const void *mgpu_elf_section(const void *data, size_t size, const char *name, size_t *section_size);

/* Calls fn with the name of every kernel a cubin defines (global or weak
 * functions marked as entries). Returns the number of kernels, or -1 when the cubin is
 * corrupt. */
long mgpu_cubin_kernels(const void *data, size_t size, void (*fn)(const char *name, void *ctx),
                        void *ctx);

#endif
