/* Owns keeping the links' measured bandwidths between runs (see
 * link_cache.h): the devices' names, the file's name, reading and writing
 * it (its text: link_cache_text.c). */
#include "partition/link_cache.h"

#include "base/byte_hash.h"
#include "base/cache_dir.h"
#include "base/file_replace.h"
#include "base/machine_key.h"
#include "base/read_file.h"
#include "base/real_driver.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 64 devices' UUIDs and 64 x 64 numbers of at most 12 characters. */
#define FILE_MAX (64 * 1024)

int mgpu_link_cache_devices(const int *devices, int n, char *out, size_t len)
{
    size_t used = 0;
    if (len == 0 || mgpu_drv.cuDeviceGetUuid == NULL)
        return -1;
    out[0] = '\0';
    for (int i = 0; i < n; i++) {
        CUuuid uuid;
        CUdevice dev;
        if (mgpu_drv.cuDeviceGet(&dev, devices[i]) != CUDA_SUCCESS ||
            mgpu_drv.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS)
            return -1;
        if (used + 34 > len)
            return -1;
        if (i > 0)
            out[used++] = ' ';
        for (int b = 0; b < 16; b++)
            used += (size_t)snprintf(out + used, len - used, "%02x", (unsigned char)uuid.bytes[b]);
    }
    return 0;
}

int mgpu_link_cache_path(const char *devices, char *out, size_t len)
{
    char dir[900];
    if (mgpu_cache_dir(dir, sizeof dir) != 0)
        return -1;
    uint64_t h = mgpu_byte_hash(MGPU_BYTE_HASH_START, devices, strlen(devices));
    return snprintf(out, len, "%s/links-%016" PRIx64, dir, h) < (int)len ? 0 : -1;
}

/* The file kept for the devices, read: 0 with gbps and the count of its
 * measurements, or -1. */
static int read_kept(const char *devices, int n, uint64_t *key, double gbps[][MGPU_MAX_GPUS],
                     int *measurements, char *path, size_t path_len)
{
    if (mgpu_machine_key(key) != 0 || mgpu_link_cache_path(devices, path, path_len) != 0)
        return -1;
    size_t len = 0;
    char *text = mgpu_read_file(path, FILE_MAX, &len);
    int rc =
        text != NULL ? mgpu_link_cache_parse(text, len, *key, devices, n, gbps, measurements) : -1;
    free(text);
    return rc;
}

int mgpu_link_cache_load(const char *devices, int n, double gbps[][MGPU_MAX_GPUS])
{
    uint64_t key;
    char path[1024];
    int measurements = 0;
    static double kept[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    if (read_kept(devices, n, &key, kept, &measurements, path, sizeof path) != 0 ||
        measurements < MGPU_LINK_CACHE_RUNS)
        return -1;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            gbps[a][b] = kept[a][b];
    return 0;
}

void mgpu_link_cache_store(const char *devices, int n, const double gbps[][MGPU_MAX_GPUS])
{
    uint64_t key;
    char path[1024];
    int measurements = 0;
    static double best[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    if (read_kept(devices, n, &key, best, &measurements, path, sizeof path) != 0) {
        if (mgpu_machine_key(&key) != 0 || mgpu_link_cache_path(devices, path, sizeof path) != 0)
            return;
        measurements = 0;
        for (int a = 0; a < n; a++)
            for (int b = 0; b < n; b++)
                best[a][b] = 0;
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (gbps[a][b] > best[a][b])
                best[a][b] = gbps[a][b];
    if (measurements < MGPU_LINK_CACHE_RUNS_MAX)
        measurements++;
    char *text = malloc(FILE_MAX);
    if (text != NULL &&
        mgpu_link_cache_format(key, devices, n, (const double(*)[MGPU_MAX_GPUS])best, measurements,
                               text, FILE_MAX) == 0)
        mgpu_file_replace(path, text, strlen(text));
    free(text);
}
