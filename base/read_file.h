/* A small file read whole into memory, for the launcher's files (a
 * probe's source, nvcc's log, NVML's kept answers). */
#ifndef MGPU_READ_FILE_H
#define MGPU_READ_FILE_H

#include <stddef.h>

/* The file at path, NUL-terminated, its length in *size (the caller frees
 * it); NULL with errno set where it cannot be read, and EFBIG where it
 * holds more than max bytes. */
char *mgpu_read_file(const char *path, size_t max, size_t *size);

#endif
