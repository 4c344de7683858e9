// What every test program shares, as SDK samples share helper_cuda.h: CHECK
// for a runtime call (file, line and the error's text, exit 2), the optional
// SCALE argument (program_scale), and FNV-1a,
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

// The optional argument SCALE, about that many times the program's GPU work
// (1 when absent; bench/run-corpus.sh runs the programs scaled up): a whole
// number from 1 to `max`. Anything else, or more arguments, is one line on
// stderr naming the program and status 2, before the program touches the GPU.
static inline int program_scale(int argc, char **argv, const char *name, int max)
{
    if (argc > 2) {
        fprintf(stderr, "usage: %s [SCALE], SCALE a whole number from 1 to %d\n", name, max);
        exit(2);
    }
    if (argc < 2)
        return 1;
    const char *arg = argv[1], *c = arg;
    long scale = 0;
    while (*c >= '0' && *c <= '9' && scale <= max)
        scale = scale * 10 + (*c++ - '0');
    if (c == arg || *c || scale < 1 || scale > max) {
        fprintf(stderr, "%s: SCALE must be a whole number from 1 to %d, not '%s'\n", name, max,
                arg);
        exit(2);
    }
    return (int)scale;
}

#endif
