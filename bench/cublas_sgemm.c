/* A cuBLAS GEMM benchmark for mgpu's split at the API (issues 21, 23): an
 * N x N x N cublasSgemm (TYPE sgemm) or cublasGemmEx with BF16 A and B and
 * FP32 C and compute (TYPE bf16) on random data, timed with events over
 * ROUNDS calls after a warm-up (median), and the host cost of one call: the
 * time the call takes to return, median over CALLS calls of a small GEMM
 * (SMALL^3) queued back to back. A sample of C's elements is checked
 * against the host (in double, from the values as the GPU holds them), so a
 * wrong split cannot pass as fast.
 *   cublas_sgemm [N=8192] [ROUNDS=5] [SMALL=512] [CALLS=200] [TYPE=sgemm]
 * Prints one line: n=... type=... gemm_ms=... tflops=... call_us=... checked=... */
#include <cublas_v2.h>
#include <cuda.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void check_cu(const char *what, CUresult r)
{
    if (r != CUDA_SUCCESS) {
        const char *name = NULL;
        cuGetErrorName(r, &name);
        fprintf(stderr, "cublas_sgemm: %s returned %s\n", what, name ? name : "an error");
        exit(1);
    }
}

static void check_blas(const char *what, cublasStatus_t s)
{
    if (s != CUBLAS_STATUS_SUCCESS) {
        fprintf(stderr, "cublas_sgemm: %s returned cuBLAS status %d\n", what, (int)s);
        exit(1);
    }
}

/* x rounded to the nearest BF16 (ties to even); the values here are finite. */
static uint16_t to_bf16(float x)
{
    uint32_t bits;
    memcpy(&bits, &x, sizeof bits);
    bits += 0x7fffu + ((bits >> 16) & 1u);
    return (uint16_t)(bits >> 16);
}

static float from_bf16(uint16_t h)
{
    uint32_t bits = (uint32_t)h << 16;
    float x;
    memcpy(&x, &bits, sizeof x);
    return x;
}

/* C = A B, all m x m, column-major, leading dimension m. */
static cublasStatus_t gemm(cublasHandle_t handle, int bf16, int m, CUdeviceptr a, CUdeviceptr b,
                           CUdeviceptr c)
{
    const float one = 1.0f, zero = 0.0f;
    if (bf16)
        return cublasGemmEx(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, (void *)a, CUDA_R_16BF,
                            m, (void *)b, CUDA_R_16BF, m, &zero, (void *)c, CUDA_R_32F, m,
                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT);
    return cublasSgemm(handle, CUBLAS_OP_N, CUBLAS_OP_N, m, m, m, &one, (float *)a, m, (float *)b,
                       m, &zero, (float *)c, m);
}

static int compare_doubles(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *v, int n)
{
    qsort(v, (size_t)n, sizeof *v, compare_doubles);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static double now_us(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

int main(int argc, char **argv)
{
    long n = argc > 1 ? atol(argv[1]) : 8192;
    int rounds = argc > 2 ? atoi(argv[2]) : 5;
    long small = argc > 3 ? atol(argv[3]) : 512;
    int calls = argc > 4 ? atoi(argv[4]) : 200;
    const char *type = argc > 5 ? argv[5] : "sgemm";
    int bf16 = strcmp(type, "bf16") == 0;
    if (n < 1 || rounds < 1 || small < 1 || small > n || calls < 1 ||
        (!bf16 && strcmp(type, "sgemm") != 0)) {
        fprintf(stderr, "usage: cublas_sgemm [N] [ROUNDS] [SMALL<=N] [CALLS] [sgemm|bf16]\n");
        return 2;
    }
    const char *call = bf16 ? "cublasGemmEx" : "cublasSgemm";
    CUdevice dev;
    CUcontext ctx;
    check_cu("cuInit", cuInit(0));
    check_cu("cuDeviceGet", cuDeviceGet(&dev, 0));
    check_cu("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    check_cu("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    cublasHandle_t handle;
    check_blas("cublasCreate", cublasCreate(&handle));
    CUstream stream;
    check_cu("cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    check_blas("cublasSetStream", cublasSetStream(handle, (cudaStream_t)stream));

    size_t count = (size_t)n * (size_t)n;
    float *host_a = malloc(count * sizeof(float)), *host_b = malloc(count * sizeof(float));
    unsigned seed = 12345;
    for (size_t i = 0; i < count; i++) {
        seed = seed * 1664525u + 1013904223u;
        host_a[i] = (float)((seed >> 9) % 2001) / 1000.0f - 1.0f;
        seed = seed * 1664525u + 1013904223u;
        host_b[i] = (float)((seed >> 9) % 2001) / 1000.0f - 1.0f;
    }
    size_t element = bf16 ? sizeof(uint16_t) : sizeof(float);
    CUdeviceptr a, b, c;
    check_cu("cuMemAlloc", cuMemAlloc(&a, count * element));
    check_cu("cuMemAlloc", cuMemAlloc(&b, count * element));
    check_cu("cuMemAlloc", cuMemAlloc(&c, count * sizeof(float)));
    if (bf16) {
        /* The operands as BF16 on the GPU; the host keeps the rounded values. */
        uint16_t *half = malloc(count * sizeof *half);
        float *sides[2] = {host_a, host_b};
        CUdeviceptr targets[2] = {a, b};
        for (int side = 0; side < 2; side++) {
            for (size_t i = 0; i < count; i++) {
                half[i] = to_bf16(sides[side][i]);
                sides[side][i] = from_bf16(half[i]);
            }
            check_cu("cuMemcpyHtoD", cuMemcpyHtoD(targets[side], half, count * sizeof *half));
        }
        free(half);
    } else {
        check_cu("cuMemcpyHtoD", cuMemcpyHtoD(a, host_a, count * sizeof(float)));
        check_cu("cuMemcpyHtoD", cuMemcpyHtoD(b, host_b, count * sizeof(float)));
    }
    int nn = (int)n;

    /* The large GEMM, timed on the GPU. */
    CUevent start, end;
    check_cu("cuEventCreate", cuEventCreate(&start, CU_EVENT_DEFAULT));
    check_cu("cuEventCreate", cuEventCreate(&end, CU_EVENT_DEFAULT));
    check_blas(call, gemm(handle, bf16, nn, a, b, c));
    double *ms = malloc((size_t)rounds * sizeof *ms);
    for (int r = 0; r < rounds; r++) {
        check_cu("cuEventRecord", cuEventRecord(start, stream));
        check_blas(call, gemm(handle, bf16, nn, a, b, c));
        check_cu("cuEventRecord", cuEventRecord(end, stream));
        check_cu("cuEventSynchronize", cuEventSynchronize(end));
        float t = 0;
        check_cu("cuEventElapsedTime", cuEventElapsedTime(&t, start, end));
        ms[r] = t;
    }
    double gemm_ms = median(ms, rounds);

    /* A sample of C against the host: 8 elements in each eighth of C's
     * columns, so that every part of a split on up to 8 GPUs is seen; the
     * wrong ones are counted by eighth, which names the part at fault. */
    float *host_c = malloc(count * sizeof(float));
    check_cu("cuMemcpyDtoH", cuMemcpyDtoH(host_c, c, count * sizeof(float)));
    int checked = 0, wrong[8] = {0};
    for (int s = 0; s < 64; s++) {
        int eighth = s % 8;
        seed = seed * 1664525u + 1013904223u;
        long i = (long)(seed % (unsigned)n);
        seed = seed * 1664525u + 1013904223u;
        long first = n * eighth / 8, width = n * (eighth + 1) / 8 - first;
        long j = first + (width > 0 ? (long)(seed % (unsigned long)width) : 0);
        double want = 0;
        for (long l = 0; l < n; l++)
            want += (double)host_a[i + l * n] * host_b[l + j * n];
        if (fabs(host_c[i + j * n] - want) > 1e-4 * (double)n) {
            if (wrong[eighth]++ == 0)
                fprintf(stderr, "cublas_sgemm: C[%ld,%ld] is %g, not %g\n", i, j, host_c[i + j * n],
                        want);
            continue;
        }
        checked++;
    }
    if (checked < 64) {
        fprintf(stderr, "cublas_sgemm: %d of 64 sampled elements wrong; by eighth of C's columns:",
                64 - checked);
        for (int e = 0; e < 8; e++)
            fprintf(stderr, " %d", wrong[e]);
        fprintf(stderr, "\n");
        return 1;
    }

    /* The host cost of one call of a small GEMM, the queue kept busy. */
    int ns = (int)small;
    double *us = malloc((size_t)calls * sizeof *us);
    for (int k = 0; k < calls; k++) {
        double t0 = now_us();
        check_blas(call, gemm(handle, bf16, ns, a, b, c));
        us[k] = now_us() - t0;
    }
    check_cu("cuStreamSynchronize", cuStreamSynchronize(stream));
    printf("n=%ld type=%s gemm_ms=%.3f tflops=%.2f small=%ld call_us=%.2f checked=%d\n", n, type,
           gemm_ms, 2.0 * (double)n * (double)n * (double)n / (gemm_ms * 1e-3) / 1e12, small,
           median(us, calls), checked);
    cublasDestroy(handle);
    return 0;
}
