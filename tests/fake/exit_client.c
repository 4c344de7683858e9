/* A driver-API program that uses device memory while it ends, for
 * tests/fake-exit.sh. Modes:
 *   handler  registers an atexit handler after cuInit and before its first
 *            allocation, fills a 4 MiB buffer (mgpu's pool under mgpu-run
 *            -n 2), and returns from main; the handler reads the buffer
 *            back, checks every word and frees it. Prints "handler: read
 *            back and freed" and ends with status 0, or names the failed
 *            call and ends with status 1.
 *   threads  fills an 8 MiB buffer, starts four threads that copy parts of
 *            it back without end, and calls exit(0) from main while they
 *            run. Must end with status 0: no copy may meet memory taken
 *            away under it.
 * Every failure before the end prints one line and exits 1. */
#include <cuda.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define HANDLER_BYTES ((size_t)4 << 20)
#define THREADS_BYTES ((size_t)8 << 20)
#define THREADS 4

static CUcontext ctx;
static CUdeviceptr buffer;

static void must(const char *call, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    printf("error: %s returned %s\n", call, name ? name : "?");
    fflush(stdout);
    _exit(1);
}

static void fill(size_t bytes)
{
    uint32_t *host = malloc(bytes);
    if (host == NULL)
        _exit(1);
    for (size_t i = 0; i < bytes / 4; i++)
        host[i] = (uint32_t)(i * 2654435761u);
    must("cuMemcpyHtoD", cuMemcpyHtoD(buffer, host, bytes));
    free(host);
}

static void read_back_at_exit(void)
{
    uint32_t *host = malloc(HANDLER_BYTES);
    if (host == NULL)
        _exit(1);
    must("cuCtxSetCurrent (handler)", cuCtxSetCurrent(ctx));
    must("cuMemcpyDtoH (handler)", cuMemcpyDtoH(host, buffer, HANDLER_BYTES));
    for (size_t i = 0; i < HANDLER_BYTES / 4; i++)
        if (host[i] != (uint32_t)(i * 2654435761u)) {
            printf("wrong: word %zu read back at exit is %u\n", i, host[i]);
            fflush(stdout);
            _exit(1);
        }
    must("cuMemFree (handler)", cuMemFree(buffer));
    free(host);
    printf("handler: read back and freed\n");
    fflush(stdout);
}

static void *copy_forever(void *arg)
{
    size_t part = THREADS_BYTES / THREADS, k = (size_t)(uintptr_t)arg;
    void *host = malloc(part);
    if (host == NULL || cuCtxSetCurrent(ctx) != CUDA_SUCCESS)
        return NULL;
    for (;;)
        if (cuMemcpyDtoH(host, buffer + k * part, part) != CUDA_SUCCESS)
            break; /* as the driver may answer while the process ends */
    return NULL;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "";
    CUdevice dev;
    must("cuInit", cuInit(0));
    must("cuDeviceGet", cuDeviceGet(&dev, 0));
    must("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    must("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    if (strcmp(mode, "handler") == 0) {
        if (atexit(read_back_at_exit) != 0)
            return 1;
        must("cuMemAlloc", cuMemAlloc(&buffer, HANDLER_BYTES));
        fill(HANDLER_BYTES);
        return 0;
    }
    if (strcmp(mode, "threads") == 0) {
        must("cuMemAlloc", cuMemAlloc(&buffer, THREADS_BYTES));
        fill(THREADS_BYTES);
        pthread_t t;
        for (size_t k = 0; k < THREADS; k++)
            if (pthread_create(&t, NULL, copy_forever, (void *)(uintptr_t)k) != 0)
                return 1;
        struct timespec pause = {0, 2000000};
        nanosleep(&pause, NULL);
        exit(0);
    }
    fprintf(stderr, "usage: exit_client handler|threads\n");
    return 2;
}
