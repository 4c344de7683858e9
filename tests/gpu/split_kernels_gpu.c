/* Runs the split fixtures (tests/ptx/split_kernels.cu) as mgpu will: the
 * program's own module is loaded on GPU 0 (the home), the rewritten module
 * once for each of N slices (gpu_modules.c; slice g on device g modulo
 * the devices there are), and every splittable kernel is run once unsplit
 * from the home module and once as N slices of its grid (uneven where N
 * does not divide it), with __mgpu_grid giving each slice its offset. The
 * results must be the same, including a __device__ counter all slices
 * increment (in
 * the storage gpu_modules.c keeps for it), a
 * __constant__ array the host writes after the rewritten modules are loaded (as
 * cudaMemcpyToSymbol does), atomics and a last-block reduction across GPUs;
 * the grid-stride loop runs once more with its slices cut by iterations
 * instead (ptx_stride_loop.h). Memory is allocated on GPU 0 and reached
 * from the other devices by peer access. With one GPU, every slice runs on
 * it, each from its own rewritten module.
 *   split_kernels_gpu split_kernels.ptx [N=2, at most 8] */
#include "direct_driver.h"
#include "modules/gpu_modules.h"

#include <string.h>

#define MAX_SLICES 8

static int failures;
static int nslices = 2;
static CUcontext ctx[MAX_SLICES]; /* slice g's: device g modulo the count */
static CUmodule home;
static struct mgpu_gpu_modules rewritten;

static void check(bool ok, const char *kernel, const char *what)
{
    printf("%s: %s: %s\n", ok ? "ok" : "FAIL", kernel, what);
    failures += !ok;
}

static CUdeviceptr upload(const void *host, size_t bytes)
{
    CUdeviceptr d;
    CU(cuMemAlloc(&d, bytes));
    if (host)
        CU(cuMemcpyHtoD(d, host, bytes));
    else
        CU(cuMemsetD8(d, 0, bytes));
    CU(cuCtxSynchronize());
    return d;
}

static void *download(CUdeviceptr d, size_t bytes)
{
    void *h = malloc(bytes);
    CU(cuMemcpyDtoH(h, d, bytes));
    return h;
}

struct launch {
    const char *kernel;
    unsigned grid[3], block[3];
    void **args;
    int nargs;
};

/* For a rewritten grid-stride loop: run_split cuts this many iterations
 * into one range per slice, the first 1/(N+1) of them, each next one as
 * long, the last the rest (0: the loop runs as the program wrote it). */
static unsigned long long split_iterations;

/* The kernel once over its whole grid from the program's own module. */
static void run_unsplit(const struct launch *l)
{
    CUfunction f;
    CU(cuCtxPushCurrent(ctx[0]));
    CU(cuModuleGetFunction(&f, home, l->kernel));
    CU(cuLaunchKernel(f, l->grid[0], l->grid[1], l->grid[2], l->block[0], l->block[1], l->block[2],
                      0, NULL, l->args, NULL));
    CU(cuCtxSynchronize());
    CUcontext popped;
    CU(cuCtxPopCurrent(&popped));
}

/* N slices along the slowest-varying dimension with more than one block,
 * each from its own rewritten module, all launched before any is waited for. */
static void run_split(const struct launch *l)
{
    int dim = l->grid[2] > 1 ? 2 : l->grid[1] > 1 ? 1 : 0;
    unsigned total = l->grid[dim];
    struct mgpu_grid_param grid_param[MAX_SLICES];
    void *args[MAX_SLICES][32];
    for (int g = 0; g < nslices; g++) {
        unsigned lo = (unsigned)((unsigned long long)total * g / nslices);
        unsigned hi = (unsigned)((unsigned long long)total * (g + 1) / nslices);
        unsigned slice[3] = {l->grid[0], l->grid[1], l->grid[2]};
        slice[dim] = hi - lo;
        if (slice[dim] == 0)
            continue;
        memset(&grid_param[g], 0, sizeof grid_param[g]);
        for (int d = 0; d < 3; d++) {
            grid_param[g].first[d] = d == dim ? lo : 0;
            grid_param[g].grid[d] = l->grid[d];
        }
        if (split_iterations > 0) {
            grid_param[g].iteration_split = 1;
            grid_param[g].iteration_begin = split_iterations * g / (nslices + 1);
            grid_param[g].iteration_end =
                g == nslices - 1 ? split_iterations : split_iterations * (g + 1) / (nslices + 1);
        }
        memcpy(args[g], l->args, (size_t)l->nargs * sizeof(void *));
        args[g][l->nargs] = &grid_param[g];
        CUfunction f;
        size_t offset;
        unsigned nparams;
        char err[256];
        if (mgpu_gpu_modules_function(&rewritten, g, l->kernel, &f, &offset, &nparams, err,
                                      sizeof err) != 0) {
            fprintf(stderr, "%s\n", err);
            exit(1);
        }
        if (nparams != (unsigned)l->nargs) {
            fprintf(stderr,
                    "%s: the rewritten kernel has %u parameters before %s, the launch gives %d\n",
                    l->kernel, nparams, MGPU_PTX_GRID_PARAM, l->nargs);
            exit(1);
        }
        CU(cuCtxPushCurrent(ctx[g]));
        CU(cuLaunchKernel(f, slice[0], slice[1], slice[2], l->block[0], l->block[1], l->block[2], 0,
                          NULL, args[g], NULL));
        CUcontext popped;
        CU(cuCtxPopCurrent(&popped));
    }
    for (int g = 0; g < nslices; g++) {
        CU(cuCtxPushCurrent(ctx[g]));
        CU(cuCtxSynchronize());
        CUcontext popped;
        CU(cuCtxPopCurrent(&popped));
    }
}

static unsigned next_random(unsigned *state)
{
    *state = *state * 1664525u + 1013904223u;
    return *state >> 8;
}

static float *random_floats(size_t n, unsigned seed)
{
    float *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++)
        v[i] = (float)(next_random(&seed) % 10000) / 100.0f - 50.0f;
    return v;
}

/* Runs a launch unsplit and split over the same inputs and compares the
 * output buffer byte for byte. `reset` restores the buffers in between. */
typedef void (*reset_fn)(void *state);
static void compare_runs(const struct launch *l, CUdeviceptr out, size_t bytes, reset_fn reset,
                         void *state, const char *what)
{
    reset(state);
    run_unsplit(l);
    void *want = download(out, bytes);
    reset(state);
    run_split(l);
    void *got = download(out, bytes);
    check(memcmp(want, got, bytes) == 0, l->kernel, what);
    free(want);
    free(got);
}

struct buffers {
    CUdeviceptr d[4];
    void *h[4];
    size_t bytes[4];
    int n;
};

static void reset_buffers(void *state)
{
    struct buffers *b = state;
    for (int i = 0; i < b->n; i++) {
        if (b->h[i])
            CU(cuMemcpyHtoD(b->d[i], b->h[i], b->bytes[i]));
        else
            CU(cuMemsetD8(b->d[i], 0, b->bytes[i]));
    }
    /* Memsets are asynchronous and ordered only in GPU 0's stream: finish
     * them before another device's slice may start. */
    CU(cuCtxSynchronize());
}

static void add_buffer(struct buffers *b, void *host, size_t bytes)
{
    b->h[b->n] = host;
    b->bytes[b->n] = bytes;
    b->d[b->n] = upload(host, bytes);
    b->n++;
}

static void free_buffers(struct buffers *b)
{
    for (int i = 0; i < b->n; i++) {
        cuMemFree(b->d[i]);
        free(b->h[i]);
    }
    memset(b, 0, sizeof *b);
}

static void test_elementwise(void)
{
    struct buffers b = {0};
    int n = (1 << 20) + 37;
    add_buffer(&b, random_floats((size_t)n, 1), (size_t)n * 4);
    add_buffer(&b, random_floats((size_t)n, 2), (size_t)n * 4);
    add_buffer(&b, NULL, (size_t)n * 4);
    void *args[] = {&b.d[0], &b.d[1], &b.d[2], &n};
    struct launch l = {"grid_1d", {(unsigned)(n + 255) / 256, 1, 1}, {256, 1, 1}, args, 4};
    char what[96];
    snprintf(what, sizeof what, "1D grid, 4097 blocks in %d slices", nslices);
    compare_runs(&l, b.d[2], (size_t)n * 4, reset_buffers, &b, what);

    float a = 2.5f;
    void *saxpy[] = {&a, &b.d[0], &b.d[1], &n};
    struct launch s = {"grid_stride_saxpy", {120, 1, 1}, {256, 1, 1}, saxpy, 4};
    compare_runs(&s, b.d[1], (size_t)n * 4, reset_buffers, &b, "grid-stride loop over gridDim");
    /* The same slices, each running a range of the iterations, the last
     * slice the longest (with two: a third and two thirds). */
    split_iterations = (unsigned long long)n;
    compare_runs(&s, b.d[1], (size_t)n * 4, reset_buffers, &b,
                 "grid-stride loop cut by iterations, unevenly");
    split_iterations = 0;

    float factor = -1.5f;
    void *scale[] = {&b.d[0], &factor, &n};
    struct launch t = {
        "_Z14scale_templateIfEvPT_S0_i", {(unsigned)(n + 127) / 128, 1, 1}, {128, 1, 1}, scale, 3};
    compare_runs(&t, b.d[0], (size_t)n * 4, reset_buffers, &b, "a template instance");
    free_buffers(&b);
}

static void test_grids(void)
{
    struct buffers b = {0};
    int width = 1000, height = 777;
    add_buffer(&b, NULL, (size_t)width * height * 4);
    void *args[] = {&b.d[0], &width, &height};
    struct launch l = {"grid_2d", {63, 49, 1}, {16, 16, 1}, args, 3};
    compare_runs(&l, b.d[0], (size_t)width * height * 4, reset_buffers, &b,
                 "2D grid split along y (gridDim.x read)");
    free_buffers(&b);

    int nx = 64, ny = 33, nz = 20;
    add_buffer(&b, NULL, (size_t)nx * ny * nz * 4);
    void *args3[] = {&b.d[0], &nx, &ny, &nz};
    struct launch l3 = {"grid_3d", {8, 9, 5}, {8, 4, 4}, args3, 4};
    compare_runs(&l3, b.d[0], (size_t)nx * ny * nz * 4, reset_buffers, &b,
                 "3D grid split along z (gridDim.z read)");
    free_buffers(&b);

    add_buffer(&b, NULL, 16 * 8 * 4 * 4);
    void *ids[] = {&b.d[0]};
    struct launch f = {"block_ids_via_function", {16, 8, 4}, {32, 1, 1}, ids, 1};
    compare_runs(&f, b.d[0], 16 * 8 * 4 * 4, reset_buffers, &b,
                 "a non-inlined device function reading blockIdx and gridDim");
    free_buffers(&b);

    int blocks = 4096;
    int *in = malloc((size_t)blocks * 256 * 4);
    for (int i = 0; i < blocks * 256; i++)
        in[i] = i * 7 + 3;
    add_buffer(&b, in, (size_t)blocks * 256 * 4);
    add_buffer(&b, NULL, (size_t)blocks * 256 * 4);
    void *rev[] = {&b.d[0], &b.d[1]};
    struct launch r = {"shared_reverse", {(unsigned)blocks, 1, 1}, {256, 1, 1}, rev, 2};
    compare_runs(&r, b.d[1], (size_t)blocks * 256 * 4, reset_buffers, &b, "shared memory");
    free_buffers(&b);

    add_buffer(&b, NULL, 300 * 128 * 4);
    void *lane[] = {&b.d[0]};
    struct launch a = {"inline_asm_lane", {300, 1, 1}, {128, 1, 1}, lane, 1};
    compare_runs(&a, b.d[0], 300 * 128 * 4, reset_buffers, &b, "%ctaid.x read in inline asm");
    free_buffers(&b);
}

static void test_atomics(void)
{
    struct buffers b = {0};
    int n = 1 << 21;
    unsigned char *data = malloc((size_t)n);
    unsigned seed = 7;
    for (int i = 0; i < n; i++)
        data[i] = (unsigned char)(next_random(&seed) % 251);
    add_buffer(&b, data, (size_t)n);
    add_buffer(&b, NULL, 256 * 4);
    void *hist[] = {&b.d[0], &b.d[1], &n};
    struct launch h = {"histogram_unused_result", {(unsigned)n / 256, 1, 1}, {256, 1, 1}, hist, 3};
    compare_runs(&h, b.d[1], 256 * 4, reset_buffers, &b,
                 "atomicAdd from every slice on one histogram");
    free_buffers(&b);

    /* Tickets: the order differs from run to run, the set must not. */
    unsigned blocks = 2048;
    add_buffer(&b, NULL, 4);
    add_buffer(&b, NULL, blocks * 4);
    void *tickets[] = {&b.d[0], &b.d[1]};
    struct launch t = {"ticket_used_result", {blocks, 1, 1}, {64, 1, 1}, tickets, 2};
    reset_buffers(&b);
    run_split(&t);
    unsigned *order = download(b.d[1], blocks * 4), *ticket = download(b.d[0], 4);
    char *seen = calloc(blocks, 1);
    bool ok = *ticket == blocks;
    for (unsigned i = 0; i < blocks; i++) {
        ok &= order[i] < blocks && !seen[order[i]];
        if (order[i] < blocks)
            seen[order[i]] = 1;
    }
    check(ok, "ticket_used_result", "atomicAdd results used: every ticket handed out once");
    free(order);
    free(ticket);
    free(seen);
    free_buffers(&b);

    /* The last block to finish sums the partial results of all blocks. */
    int nblocks = 1024;
    add_buffer(&b, random_floats((size_t)nblocks, 3), (size_t)nblocks * 4);
    add_buffer(&b, NULL, (size_t)nblocks * 4);
    add_buffer(&b, NULL, 4);
    add_buffer(&b, NULL, 4);
    void *sum[] = {&b.d[0], &b.d[1], &b.d[2], &b.d[3], &nblocks};
    struct launch s = {"last_block_sum", {(unsigned)nblocks, 1, 1}, {32, 1, 1}, sum, 5};
    compare_runs(&s, b.d[3], 4, reset_buffers, &b,
                 "__threadfence and an atomic counter across GPUs: the same total");
    unsigned *done = download(b.d[2], 4);
    check(*done == 0, "last_block_sum",
          "the last block, whichever GPU it ran on, reset the counter");
    free(done);
    free_buffers(&b);
}

static void test_module_variables(void)
{
    struct buffers b = {0};
    unsigned blocks = 777;
    add_buffer(&b, NULL, blocks * 4);
    /* The counter the program sees: where every rewritten module's table points. */
    CUdeviceptr counter;
    size_t bytes;
    char err[256];
    if (mgpu_gpu_modules_global(&rewritten, "launch_counter", &counter, &bytes, err, sizeof err)) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    unsigned start = 1000, got = 0;
    void *args[] = {&b.d[0]};
    struct launch l = {"count_launches", {blocks, 1, 1}, {64, 1, 1}, args, 1};
    CU(cuMemcpyHtoD(counter, &start, 4));
    compare_runs(&l, b.d[0], blocks * 4, reset_buffers, &b, "block indices written");
    /* Every slice incremented the one counter. */
    CU(cuMemcpyDtoH(&got, counter, 4));
    char what[128];
    snprintf(what, sizeof what, "the __device__ counter went from %u to %u, %u blocks", start, got,
             blocks);
    check(got == start + blocks, "count_launches", what);
    free_buffers(&b);

    /* The host writes the __constant__ array after the rewritten modules exist, as
     * cudaMemcpyToSymbol would; mgpu refreshes the rewritten modules. */
    float coeff[16];
    for (int i = 0; i < 16; i++)
        coeff[i] = 0.5f + (float)i;
    CUdeviceptr where;
    CU(cuModuleGetGlobal(&where, &bytes, home, "coefficients"));
    CU(cuMemcpyHtoD(where, coeff, sizeof coeff));
    if (mgpu_gpu_modules_refresh_constants(&rewritten, err, sizeof err) != 0) {
        fprintf(stderr, "%s\n", err);
        exit(1);
    }
    int n = 100000;
    add_buffer(&b, random_floats((size_t)n, 4), (size_t)n * 4);
    add_buffer(&b, NULL, (size_t)n * 4);
    void *cargs[] = {&b.d[0], &b.d[1], &n};
    struct launch c = {
        "apply_coefficients", {(unsigned)(n + 255) / 256, 1, 1}, {256, 1, 1}, cargs, 3};
    compare_runs(&c, b.d[1], (size_t)n * 4, reset_buffers, &b,
                 "a __constant__ array written by the host after loading");
    float *out = download(b.d[1], (size_t)n * 4);
    float *in = b.h[0];
    check(out[17] == in[17] * coeff[1], "apply_coefficients", "the written coefficients are used");
    free(out);
    free_buffers(&b);
}

int main(int argc, char **argv)
{
    if (argc < 2 || argc > 3 || (argc == 3 && (atoi(argv[2]) < 1 || atoi(argv[2]) > MAX_SLICES))) {
        fprintf(stderr, "usage: split_kernels_gpu split_kernels.ptx [slices, 1 to %d]\n",
                MAX_SLICES);
        return 2;
    }
    if (argc == 3)
        nslices = atoi(argv[2]);
    char err[512];
    load_driver_or_skip();
    int count = 0;
    CU(cuDeviceGetCount(&count));
    printf("slices on devices:");
    for (int g = 0; g < nslices; g++) {
        CUdevice dev;
        CU(cuDeviceGet(&dev, g % count));
        CU(cuDevicePrimaryCtxRetain(&ctx[g], dev));
        printf(" %d", g % count);
        if (g == 0 || g >= count)
            continue; /* device 0, or a device met before */
        CUdevice home_dev;
        int can = 0;
        CU(cuDeviceGet(&home_dev, 0));
        CU(cuDeviceCanAccessPeer(&can, dev, home_dev));
        if (!can) {
            printf("\nSKIP: device %d cannot reach device 0's memory (no peer access)\n", g);
            return 77;
        }
        CUcontext popped;
        CU(cuCtxPushCurrent(ctx[g]));
        CU(cuCtxEnablePeerAccess(ctx[0], 0));
        CU(cuCtxPopCurrent(&popped));
        CU(cuCtxPushCurrent(ctx[0]));
        CU(cuCtxEnablePeerAccess(ctx[g], 0));
        CU(cuCtxPopCurrent(&popped));
    }
    printf("\n");
    size_t size;
    char *ptx = read_text_file(argv[1], &size);
    CU(cuCtxPushCurrent(ctx[0]));
    CU(cuModuleLoadData(&home, ptx));
    if (mgpu_gpu_modules_load(&rewritten, ptx, size, home, nslices, ctx, err, sizeof err) != 0) {
        fprintf(stderr, "loading the rewritten modules: %s\n", err);
        return 1;
    }
    printf("rewritten modules: loaded on %d GPUs\n", rewritten.ngpus);
    test_elementwise();
    test_grids();
    test_atomics();
    test_module_variables();
    mgpu_gpu_modules_unload(&rewritten);
    CU(cuModuleUnload(home));
    printf("%s\n", failures ? "FAILED" : "all split launches match the unsplit ones");
    free(ptx);
    return failures ? 1 : 0;
}
