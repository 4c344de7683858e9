/* For GPU test programs that drive mgpu's module code directly, without
 * mgpu-run (split_kernels_gpu.c, rewritten_speed.c): the real driver loaded the
 * way mgpu loads it (or exit 77, skipped, where there is none), a check for
 * driver calls, and reading a PTX file as a NUL-terminated string. */
#ifndef MGPU_TESTS_DIRECT_DRIVER_H
#define MGPU_TESTS_DIRECT_DRIVER_H

#include "base/driver_locate.h"
#include "base/real_driver.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CU(call)                                                                                   \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call, mgpu_cu_error_name(r_)); \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static inline void load_driver_or_skip(void)
{
    char path[4096], err[512];
    if (mgpu_driver_locate(NULL, path, sizeof path, err, sizeof err) != 0 ||
        mgpu_driver_load(path, err, sizeof err) != 0) {
        printf("SKIP: %s\n", err);
        exit(77);
    }
    CU(cuInit(0));
}

static inline char *read_text_file(const char *path, size_t *size)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(1);
    }
    fseek(f, 0, SEEK_END);
    *size = (size_t)ftell(f);
    rewind(f);
    char *text = malloc(*size + 1);
    if (text == NULL || fread(text, 1, *size, f) != *size)
        exit(1);
    text[*size] = '\0';
    fclose(f);
    return text;
}

#endif
