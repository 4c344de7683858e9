// What every test program shares, as SDK samples share helper_cuda.h: CHECK
// for a runtime call (file, line and the error's text, exit 2), and FNV-1a,
// the hash a program prints of its output so that a run under mgpu-run can be
// compared with the plain run line for line.
#ifndef PROGRAM_CHECK_H
#define PROGRAM_CHECK_H

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cuda_runtime.h>

#define CHECK(call)                                                                                \
    do {                                                                                           \
        cudaError_t err_ = (call);                                                                 \
        if (err_ != cudaSuccess) {                                                                 \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #call,                          \
                    cudaGetErrorString(err_));                                                     \
            exit(2);                                                                               \
        }                                                                                          \
    } while (0)

// `h` continues an earlier hash (fnv1a(b, nb, fnv1a(a, na)) hashes a then b).
static inline uint64_t fnv1a(const void *data, size_t bytes, uint64_t h = 14695981039346656037ull)
{
    const unsigned char *p = (const unsigned char *)data;
    for (size_t i = 0; i < bytes; i++)
        h = (h ^ p[i]) * 1099511628211ull;
    return h;
}

#endif
