/* Copies and sets that run past the end of an allocation, answered as the
 * driver answers them for its own allocations: CUDA_ERROR_INVALID_VALUE,
 * with no byte written or read. For each of four allocations (4 KiB, 3000
 * bytes, 3 MiB and 9 MiB, whose copies mgpu splits over the GPUs), each
 * followed by a neighbour allocated next: every copy and set form that
 * starts inside it and leaves it must fail so, and leave the allocation,
 * its neighbour and the host buffer a read would fill as they were; copies
 * and sets that end exactly at its end must succeed and move the right
 * bytes. For the fake GPU under mgpu-run (tests/fake-copy-bounds.sh): with
 * mgpu's pool (-n 2) and with the driver's own allocations (-n 1). Prints
 * "copy_bounds_client: all checks passed" and exits 0, or a line per
 * failed check and exits 1. */
#include <cuda.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define KIB ((size_t)1 << 10)
#define MIB ((size_t)1 << 20)
#define HOST_BYTES (16 * MIB)
#define INSIDE 0x3c    /* the allocation's bytes while overruns are tried */
#define NEIGHBOUR 0x5b /* its neighbour's bytes, always */
#define UNREAD 0xee    /* the host buffer a refused read must not fill */

static int failures;
static unsigned char *host_src, *host_dst, *host_check;
static CUstream stream;
static CUdeviceptr scratch; /* the other side of device-to-device copies */

static const char *name_of(CUresult r)
{
    const char *name = NULL;
    return cuGetErrorName(r, &name) == CUDA_SUCCESS && name != NULL ? name : "an unknown error";
}

static bool expect(const char *buffer, const char *what, CUresult got, CUresult want)
{
    if (got == want)
        return true;
    printf("FAIL: %s: %s returned %s, not %s\n", buffer, what, name_of(got), name_of(want));
    failures++;
    return false;
}

/* Whether the `bytes` at device address `p` all hold `value`. */
static bool holds(const char *buffer, const char *after, CUdeviceptr p, size_t bytes,
                  unsigned char value)
{
    CUresult r = cuMemcpyDtoH(host_check, p, bytes);
    if (r != CUDA_SUCCESS) {
        printf("FAIL: %s: reading it back after %s returned %s\n", buffer, after, name_of(r));
        failures++;
        return false;
    }
    for (size_t i = 0; i < bytes; i++)
        if (host_check[i] != value) {
            printf("FAIL: %s: byte %zu is 0x%02x after %s, not 0x%02x\n", buffer, i, host_check[i],
                   after, value);
            failures++;
            return false;
        }
    return true;
}

struct target {
    const char *name;
    CUdeviceptr p, neighbour;
    size_t bytes, neighbour_bytes;
};

/* One call that leaves the allocation: refused, and nothing changed. */
static void refused(const struct target *t, const char *what, CUresult r)
{
    CUresult synced = cuStreamSynchronize(stream);
    if (expect(t->name, what, r, CUDA_ERROR_INVALID_VALUE) &&
        expect(t->name, "cuStreamSynchronize", synced, CUDA_SUCCESS)) {
        holds(t->name, what, t->p, t->bytes, INSIDE);
        char neighbour[96];
        snprintf(neighbour, sizeof neighbour, "the neighbour of %s", t->name);
        holds(neighbour, what, t->neighbour, t->neighbour_bytes, NEIGHBOUR);
    }
}

static bool host_unread(const struct target *t, const char *what, size_t bytes)
{
    for (size_t i = 0; i < bytes; i++)
        if (host_dst[i] != UNREAD) {
            printf("FAIL: %s: %s wrote host byte %zu\n", t->name, what, i);
            failures++;
            return false;
        }
    return true;
}

/* Every form, `over` bytes past the end (the 2D sets one row past it). */
static void overruns(const struct target *t, size_t over)
{
    size_t b = t->bytes, long_by = b + over;
    CUdeviceptr p = t->p;
    memset(host_dst, UNREAD, HOST_BYTES);
    refused(t, "cuMemcpyHtoD", cuMemcpyHtoD(p, host_src, long_by));
    refused(t, "cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(p, host_src, b + 1, stream));
    refused(t, "cuMemcpy (from the host)", cuMemcpy(p, (CUdeviceptr)(uintptr_t)host_src, long_by));
    refused(t, "cuMemcpyDtoD (into it)", cuMemcpyDtoD(p, scratch, long_by));
    refused(t, "cuMemcpyDtoDAsync (into it)", cuMemcpyDtoDAsync(p, scratch, b + 1, stream));
    refused(t, "cuMemsetD8", cuMemsetD8(p, 0, long_by));
    refused(t, "cuMemsetD16", cuMemsetD16(p, 0, b / 2 + 1));
    refused(t, "cuMemsetD32", cuMemsetD32(p, 0, b / 4 + 1));
    refused(t, "cuMemsetD8Async", cuMemsetD8Async(p, 0, b + 1, stream));
    refused(t, "cuMemsetD32Async", cuMemsetD32Async(p, 0, long_by / 4, stream));
    refused(t, "cuMemsetD2D8", cuMemsetD2D8(p, 1000, 0, 1000, b / 1000 + 1));
    refused(t, "cuMemsetD2D32Async", cuMemsetD2D32Async(p, 1000, 0, 250, b / 1000 + 1, stream));
    /* Reads past the end: refused, the host buffer untouched. */
    refused(t, "cuMemcpyDtoH", cuMemcpyDtoH(host_dst, p, long_by));
    host_unread(t, "cuMemcpyDtoH", long_by);
    refused(t, "cuMemcpyDtoHAsync", cuMemcpyDtoHAsync(host_dst, p, b + 1, stream));
    host_unread(t, "cuMemcpyDtoHAsync", b + 1);
    refused(t, "cuMemcpy (to the host)", cuMemcpy((CUdeviceptr)(uintptr_t)host_dst, p, long_by));
    host_unread(t, "cuMemcpy (to the host)", long_by);
    refused(t, "cuMemcpyDtoD (out of it)", cuMemcpyDtoD(scratch, p, long_by));
}

/* Copies and sets that end exactly at the end: done, and right. */
static void in_bounds(const struct target *t)
{
    size_t b = t->bytes, half = b / 2;
    const char *name = t->name;
    if (expect(name, "cuMemcpyHtoD (whole)", cuMemcpyHtoD(t->p, host_src, b), CUDA_SUCCESS) &&
        expect(name, "cuMemcpyDtoH (whole)", cuMemcpyDtoH(host_dst, t->p, b), CUDA_SUCCESS) &&
        memcmp(host_dst, host_src, b) != 0) {
        printf("FAIL: %s: an exact-size copy in and out changed the bytes\n", name);
        failures++;
    }
    if (expect(name, "cuMemcpyHtoDAsync (second half)",
               cuMemcpyHtoDAsync(t->p + half, host_src, b - half, stream), CUDA_SUCCESS) &&
        expect(name, "cuMemcpyDtoHAsync (second half)",
               cuMemcpyDtoHAsync(host_dst, t->p + half, b - half, stream), CUDA_SUCCESS) &&
        expect(name, "cuStreamSynchronize", cuStreamSynchronize(stream), CUDA_SUCCESS) &&
        memcmp(host_dst, host_src, b - half) != 0) {
        printf("FAIL: %s: a copy of its second half changed the bytes\n", name);
        failures++;
    }
    if (expect(name, "cuMemcpyDtoD (out, whole)", cuMemcpyDtoD(scratch, t->p, b), CUDA_SUCCESS) &&
        expect(name, "cuMemsetD8 (whole)", cuMemsetD8(t->p, 0x11, b), CUDA_SUCCESS) &&
        holds(name, "cuMemsetD8 (whole)", t->p, b, 0x11) &&
        expect(name, "cuMemcpyDtoD (in, whole)", cuMemcpyDtoD(t->p, scratch, b), CUDA_SUCCESS) &&
        expect(name, "cuMemcpyDtoH", cuMemcpyDtoH(host_dst, t->p, b), CUDA_SUCCESS) &&
        memcmp(host_dst + half, host_src, b - half) != 0) {
        printf("FAIL: %s: a device copy out and back changed the bytes\n", name);
        failures++;
    }
    if (expect(name, "cuMemsetD32 (whole)", cuMemsetD32(t->p, 0x22222222u, b / 4), CUDA_SUCCESS))
        holds(name, "cuMemsetD32 (whole)", t->p, b / 4 * 4, 0x22);
    if (expect(name, "cuMemsetD2D8Async (two rows, whole)",
               cuMemsetD2D8Async(t->p, half, 0x33, half, 2, stream), CUDA_SUCCESS) &&
        expect(name, "cuStreamSynchronize", cuStreamSynchronize(stream), CUDA_SUCCESS))
        holds(name, "cuMemsetD2D8Async (two rows, whole)", t->p, b, 0x33);
    char neighbour[96];
    snprintf(neighbour, sizeof neighbour, "the neighbour of %s", name);
    holds(neighbour, "the in-bounds copies and sets", t->neighbour, t->neighbour_bytes, NEIGHBOUR);
}

static void check_target(const char *name, size_t bytes, size_t neighbour_bytes, size_t over)
{
    struct target t = {name, 0, 0, bytes, neighbour_bytes};
    if (!expect(name, "cuMemAlloc", cuMemAlloc(&t.p, bytes), CUDA_SUCCESS) ||
        !expect(name, "cuMemAlloc (its neighbour)", cuMemAlloc(&t.neighbour, neighbour_bytes),
                CUDA_SUCCESS))
        goto out;
    if (expect(name, "cuMemsetD8", cuMemsetD8(t.p, INSIDE, bytes), CUDA_SUCCESS) &&
        expect(name, "cuMemsetD8 (its neighbour)",
               cuMemsetD8(t.neighbour, NEIGHBOUR, neighbour_bytes), CUDA_SUCCESS)) {
        overruns(&t, over);
        in_bounds(&t);
    }
out:
    if (t.neighbour != 0)
        expect(name, "cuMemFree (its neighbour)", cuMemFree(t.neighbour), CUDA_SUCCESS);
    if (t.p != 0)
        expect(name, "cuMemFree", cuMemFree(t.p), CUDA_SUCCESS);
}

int main(void)
{
    CUdevice dev;
    CUcontext ctx;
    host_src = malloc(HOST_BYTES);
    host_dst = malloc(HOST_BYTES);
    host_check = malloc(HOST_BYTES);
    if (host_src == NULL || host_dst == NULL || host_check == NULL) {
        printf("FAIL: out of host memory\n");
        return 1;
    }
    for (size_t i = 0; i < HOST_BYTES; i++)
        host_src[i] = (unsigned char)(i * 131 + 7);
    if (!expect("setup", "cuInit", cuInit(0), CUDA_SUCCESS) ||
        !expect("setup", "cuDeviceGet", cuDeviceGet(&dev, 0), CUDA_SUCCESS) ||
        !expect("setup", "cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev),
                CUDA_SUCCESS))
        return 1;
    if (expect("setup", "cuCtxSetCurrent", cuCtxSetCurrent(ctx), CUDA_SUCCESS) &&
        expect("setup", "cuStreamCreate", cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING),
               CUDA_SUCCESS) &&
        expect("setup", "cuMemAlloc (scratch)", cuMemAlloc(&scratch, HOST_BYTES), CUDA_SUCCESS)) {
        /* The case: a 2 MiB copy into 4 KiB (one slot of mgpu's
         * sub-allocator) reached the next allocation. */
        check_target("a 4 KiB allocation", 4 * KIB, 4 * KIB, 2 * MIB - 4 * KIB);
        /* Past the bytes asked for, inside the 4 KiB slot the pool gave. */
        check_target("a 3000-byte allocation", 3000, 4 * KIB, 4 * KIB);
        /* Past the end, inside its last 2 MiB granule. */
        check_target("a 3 MiB allocation", 3 * MIB, MIB, 4 * KIB);
        /* Copies of 8 MiB and more are split by owner. */
        check_target("a 9 MiB allocation", 9 * MIB, 4 * KIB, 4 * KIB);
    }
    if (scratch != 0)
        expect("setup", "cuMemFree (scratch)", cuMemFree(scratch), CUDA_SUCCESS);
    if (stream != NULL)
        expect("setup", "cuStreamDestroy", cuStreamDestroy(stream), CUDA_SUCCESS);
    expect("setup", "cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease(dev), CUDA_SUCCESS);
    free(host_src);
    free(host_dst);
    free(host_check);
    if (failures > 0)
        return 1;
    printf("copy_bounds_client: all checks passed\n");
    return 0;
}
