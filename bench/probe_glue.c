/* What the probes' glue costs a kernel of short blocks, without the rest
 * of the runtime: the kernel of examples/vector_add.cu or
 * examples/jacobi2d.cu as mgpu-ptx rewrote it (without probes, or with a
 * tool), loaded from its PTX with the driver API and timed with events,
 * every file once per round, rounds interleaved. Each probe map
 * (__mgpu_map_*) gets its own zeroed 16 MiB; __mgpu_grid is a whole
 * launch's, its probe_block_threshold that of one block in B sampled.
 * After each file's first launch, a few outputs are checked against what
 * the kernel computes from the (non-zero) inputs.
 *   bench/probe_glue vector_add|jacobi2d ROUNDS B A.ptx [B.ptx ...]
 * prints, per file, the median ms per launch over ROUNDS rounds of 20
 * launches, the ratio to the first file's and the range.
 * bench/run-probe-glue.sh makes the files and runs it. */
#include "ptx/ptx_passes.h"

#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define LAUNCHES_PER_ROUND 20
#define MAP_BYTES (16u << 20)
#define MAX_MAPS 64

static void check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS)
        return;
    const char *s = NULL;
    cuGetErrorString(r, &s);
    fprintf(stderr, "probe_glue: %s: %s\n", what, s ? s : "unknown error");
    exit(1);
}

static char *read_file(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        perror(path);
        exit(2);
    }
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    if (s == NULL || fread(s, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "probe_glue: cannot read %s\n", path);
        exit(2);
    }
    s[n] = '\0';
    fclose(f);
    return s;
}

static int compare_floats(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

/* The example's kernel and its launch at the example's default size. */
struct workload {
    const char *kernel;
    unsigned grid[3], block[3];
    size_t elements;
};

static const struct workload vector_add = {
    "_Z10vector_addPKfS0_Pfm", {1u << 20, 1, 1}, {256, 1, 1}, (size_t)1 << 28};
static const struct workload jacobi2d = {
    "_Z12jacobi_sweepPKfPfm", {16384 / 32, 16384 / 8, 1}, {32, 8, 1}, (size_t)16384 * 16384};

/* Loads one file: its kernel, and each __mgpu_map_ it declares pointed at
 * its own part of `maps`. Returns whether the kernel takes __mgpu_grid. */
static int load(const char *path, const struct workload *w, CUdeviceptr maps, CUfunction *fn)
{
    char *ptx = read_file(path);
    char log[8192] = "";
    CUjit_option options[2] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
    void *values[2] = {log, (void *)(size_t)sizeof log};
    CUmodule module;
    if (cuModuleLoadDataEx(&module, ptx, 2, options, values) != CUDA_SUCCESS) {
        fprintf(stderr, "probe_glue: %s does not load: %s\n", path, log);
        exit(1);
    }
    check(cuModuleGetFunction(fn, module, w->kernel), "the example's kernel");
    unsigned nmaps = 0;
    for (const char *p = ptx; (p = strstr(p, " __mgpu_map_")) != NULL; p++) {
        char name[128];
        if (sscanf(p + 1, "%127[A-Za-z0-9_]", name) != 1)
            continue;
        CUdeviceptr symbol;
        size_t bytes;
        if (cuModuleGetGlobal(&symbol, &bytes, module, name) != CUDA_SUCCESS || bytes != 8)
            continue; /* a use, not the declaration */
        if (nmaps == MAX_MAPS) {
            fprintf(stderr, "probe_glue: %s: more than %d maps\n", path, MAX_MAPS);
            exit(1);
        }
        unsigned long long base = maps + (unsigned long long)nmaps++ * MAP_BYTES;
        check(cuMemcpyHtoD(symbol, &base, sizeof base), name);
    }
    int takes_grid = strstr(ptx, MGPU_PTX_GRID_PARAM "[") != NULL;
    free(ptx);
    return takes_grid;
}

/* A few outputs against what the kernel computes from inputs of 1 (and 2). */
static int outputs_right(const struct workload *w, CUdeviceptr out)
{
    size_t side = 16384, at[3];
    float want;
    if (w == &vector_add) {
        at[0] = 0, at[1] = w->elements / 2 + 17, at[2] = w->elements - 1;
        want = 3.0f;
    } else {
        at[0] = side + 1, at[1] = side * (side / 2) + 77, at[2] = side * (side - 2) + side - 2;
        want = 1.0f;
    }
    for (int i = 0; i < 3; i++) {
        float got;
        check(cuMemcpyDtoH(&got, out + at[i] * sizeof got, sizeof got), "reading an output");
        if (got != want)
            return 0;
    }
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 5 || (strcmp(argv[1], "vector_add") != 0 && strcmp(argv[1], "jacobi2d") != 0)) {
        fprintf(stderr,
                "usage: probe_glue vector_add|jacobi2d ROUNDS SAMPLE_BLOCKS A.ptx [B.ptx ...]\n");
        return 2;
    }
    const struct workload *w = strcmp(argv[1], "vector_add") == 0 ? &vector_add : &jacobi2d;
    int rounds = atoi(argv[2]), nfiles = argc - 4;
    unsigned sample_blocks = (unsigned)atoi(argv[3]);
    if (rounds < 1 || sample_blocks < 1) {
        fprintf(stderr, "probe_glue: ROUNDS and SAMPLE_BLOCKS are positive numbers\n");
        return 2;
    }
    check(cuInit(0), "cuInit");
    CUdevice device;
    CUcontext context;
    check(cuDeviceGet(&device, 0), "device 0");
    check(cuCtxCreate(&context, NULL, 0, device), "a context");
    CUdeviceptr maps;
    check(cuMemAlloc(&maps, (size_t)MAX_MAPS * MAP_BYTES), "the maps");
    CUfunction *fns = calloc((size_t)nfiles, sizeof *fns);
    int *takes_grid = calloc((size_t)nfiles, sizeof *takes_grid);
    float *ms = calloc((size_t)nfiles * (size_t)rounds, sizeof *ms);
    if (fns == NULL || takes_grid == NULL || ms == NULL)
        return 1;
    for (int f = 0; f < nfiles; f++)
        takes_grid[f] = load(argv[4 + f], w, maps, &fns[f]);
    CUdeviceptr a, b, out;
    size_t bytes = w->elements * sizeof(float);
    check(cuMemAlloc(&a, bytes), "input a");
    check(cuMemAlloc(&b, bytes), "input b");
    check(cuMemAlloc(&out, bytes), "the output");
    check(cuMemsetD32(a, 0x3f800000u, w->elements), "a = 1"); /* 1.0f */
    check(cuMemsetD32(b, 0x40000000u, w->elements), "b = 2"); /* 2.0f */
    struct mgpu_grid_param grid;
    memset(&grid, 0, sizeof grid);
    memcpy(grid.grid, w->grid, sizeof grid.grid);
    grid.probe_block_threshold = mgpu_grid_probe_block_threshold(w->grid, sample_blocks);
    size_t n = w->elements, side = 16384;
    void *vector_args[5] = {&a, &b, &out, &n, &grid}, *jacobi_args[4] = {&a, &out, &side, &grid};
    CUevent start, stop;
    check(cuEventCreate(&start, 0), "an event");
    check(cuEventCreate(&stop, 0), "an event");
    for (int r = -1; r < rounds; r++) /* round -1: warm-up and the outputs' check */
        for (int f = 0; f < nfiles; f++) {
            void **args = w == &vector_add ? vector_args : jacobi_args;
            args[w == &vector_add ? 4 : 3] = takes_grid[f] ? &grid : NULL;
            if (r < 0)
                check(cuMemsetD32(out, 0, w->elements), "clearing the output");
            check(cuEventRecord(start, 0), "an event");
            for (int i = 0; i < LAUNCHES_PER_ROUND; i++) {
                grid.launch_sequence = (unsigned)(i + 1);
                check(cuLaunchKernel(fns[f], w->grid[0], w->grid[1], w->grid[2], w->block[0],
                                     w->block[1], w->block[2], 0, 0, args, NULL),
                      argv[4 + f]);
            }
            check(cuEventRecord(stop, 0), "an event");
            check(cuEventSynchronize(stop), argv[4 + f]);
            float t;
            check(cuEventElapsedTime(&t, start, stop), "an event");
            if (r >= 0)
                ms[(size_t)f * (size_t)rounds + (size_t)r] = t / LAUNCHES_PER_ROUND;
            else if (!outputs_right(w, out)) {
                fprintf(stderr, "probe_glue: %s computes a wrong result\n", argv[4 + f]);
                return 1;
            }
        }
    printf(
        "| file | ms per launch | ratio | fastest - slowest round |\n| --- | --- | --- | --- |\n");
    float first = 0;
    for (int f = 0; f < nfiles; f++) {
        float *m = ms + (size_t)f * (size_t)rounds;
        qsort(m, (size_t)rounds, sizeof *m, compare_floats);
        float median = m[rounds / 2];
        if (f == 0)
            first = median;
        const char *name = strrchr(argv[4 + f], '/');
        printf("| %s | %.4f | %.3f | %.4f - %.4f |\n", name ? name + 1 : argv[4 + f], median,
               median / first, m[0], m[rounds - 1]);
    }
    return 0;
}
