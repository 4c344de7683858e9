/* Owns keeping the links' measured bandwidths between runs (see
 * link_cache.h): where a set of devices' file is, reading and writing it
 * (its text: link_cache_text.c). */
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

int mgpu_link_cache_place(const char *devices, struct mgpu_link_cache_file *f)
{
    char dir[900];
    if (snprintf(f->devices, sizeof f->devices, "%s", devices) >= (int)sizeof f->devices ||
        mgpu_machine_key(&f->key) != 0 || mgpu_cache_dir(dir, sizeof dir) != 0)
        return -1;
    uint64_t h = mgpu_byte_hash(MGPU_BYTE_HASH_START, devices, strlen(devices));
    return snprintf(f->path, sizeof f->path, "%s/links-%016" PRIx64, dir, h) < (int)sizeof f->path
               ? 0
               : -1;
}

int mgpu_link_cache_find(const int *devices, int n, struct mgpu_link_cache_file *f)
{
    char names[sizeof f->devices];
    size_t used = 0;
    if (mgpu_drv.cuDeviceGetUuid == NULL || n < 1 || n > MGPU_MAX_GPUS)
        return -1;
    for (int i = 0; i < n; i++) {
        CUuuid uuid;
        CUdevice dev;
        if (mgpu_drv.cuDeviceGet(&dev, devices[i]) != CUDA_SUCCESS ||
            mgpu_drv.cuDeviceGetUuid(&uuid, dev) != CUDA_SUCCESS)
            return -1;
        if (i > 0)
            names[used++] = ' ';
        for (int b = 0; b < 16; b++)
            used += (size_t)snprintf(names + used, sizeof names - used, "%02x",
                                     (unsigned char)uuid.bytes[b]);
    }
    return mgpu_link_cache_place(names, f);
}

/* The file's figures into gbps and the count of its measurements; 0, or
 * -1 where there is no such file for the devices. */
static int read_kept(const struct mgpu_link_cache_file *f, int n, double gbps[][MGPU_MAX_GPUS],
                     int *measurements)
{
    size_t len = 0;
    char *text = mgpu_read_file(f->path, FILE_MAX, &len);
    int rc = text != NULL
                 ? mgpu_link_cache_parse(text, len, f->key, f->devices, n, gbps, measurements)
                 : -1;
    free(text);
    return rc;
}

int mgpu_link_cache_load(const struct mgpu_link_cache_file *f, int n, double gbps[][MGPU_MAX_GPUS])
{
    int measurements = 0;
    return read_kept(f, n, gbps, &measurements) == 0 && measurements >= MGPU_LINK_CACHE_RUNS ? 0
                                                                                             : -1;
}

void mgpu_link_cache_store(const struct mgpu_link_cache_file *f, int n,
                           const double gbps[][MGPU_MAX_GPUS])
{
    int measurements = 0;
    static double best[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    if (read_kept(f, n, best, &measurements) != 0) {
        measurements = 0;
        memset(best, 0, sizeof best);
    }
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            if (gbps[a][b] > best[a][b])
                best[a][b] = gbps[a][b];
    if (measurements < MGPU_LINK_CACHE_RUNS_MAX)
        measurements++;
    char *text = malloc(FILE_MAX);
    if (text != NULL &&
        mgpu_link_cache_format(f->key, f->devices, n, (const double(*)[MGPU_MAX_GPUS])best,
                               measurements, text, FILE_MAX) == 0)
        mgpu_file_replace(f->path, text, strlen(text));
    free(text);
}
