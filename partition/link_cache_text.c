/* Owns the text of the links' kept bandwidths (see link_cache.h): reading
 * it against the machine's key and the devices, and writing it. No I/O, for
 * the fuzzer (fuzz/fuzz_link_cache.c). */
#include "partition/link_cache.h"

#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FILE_HEAD "mgpu links 1\n"
/* Bandwidths outside these are not a measurement's (GB/s; a tenth is the
 * file's precision). */
#define GBPS_MIN 0.1
#define GBPS_MAX 99999.0

/* The line at *p (up to its newline, which must be there) into line, *p
 * moved past it; false where there is none or it does not fit. */
static bool next_line(const char **p, const char *end, char *line, size_t len)
{
    const char *nl = memchr(*p, '\n', (size_t)(end - *p));
    if (nl == NULL || (size_t)(nl - *p) >= len)
        return false;
    memcpy(line, *p, (size_t)(nl - *p));
    line[nl - *p] = '\0';
    *p = nl + 1;
    return true;
}

int mgpu_link_cache_parse(const char *text, size_t len, uint64_t key, const char *devices, int n,
                          double gbps[][MGPU_MAX_GPUS], int *measurements)
{
    if (n < 1 || n > MGPU_MAX_GPUS || strlen(text) != len)
        return -1;
    const char *p = text, *end = text + len;
    char line[64 * 34 + 16], want[64 * 34 + 16];
    if (!next_line(&p, end, line, sizeof line) || strcmp(line, "mgpu links 1") != 0)
        return -1;
    snprintf(want, sizeof want, "key %016" PRIx64, key);
    if (!next_line(&p, end, line, sizeof line) || strcmp(line, want) != 0)
        return -1;
    if (snprintf(want, sizeof want, "devices %s", devices) >= (int)sizeof want ||
        !next_line(&p, end, line, sizeof line) || strcmp(line, want) != 0)
        return -1;
    int count = 0, used = 0;
    if (!next_line(&p, end, line, sizeof line) ||
        sscanf(line, "measurements %d%n", &count, &used) != 1 || line[used] != '\0' ||
        line[13] < '1' || line[13] > '9' || count < 1 || count > MGPU_LINK_CACHE_RUNS_MAX)
        return -1;
    for (int a = 0; a < n; a++) {
        if (!next_line(&p, end, line, sizeof line))
            return -1;
        const char *q = line;
        for (int b = 0; b < n; b++) {
            char *after;
            if (b > 0 && *q++ != ' ')
                return -1;
            if (!(*q >= '0' && *q <= '9')) /* no sign, space, inf or nan */
                return -1;
            double v = strtod(q, &after);
            if (!(v >= GBPS_MIN && v <= GBPS_MAX))
                return -1;
            gbps[a][b] = v;
            q = after;
        }
        if (*q != '\0')
            return -1;
    }
    if (p != end)
        return -1;
    *measurements = count;
    return 0;
}

int mgpu_link_cache_format(uint64_t key, const char *devices, int n,
                           const double gbps[][MGPU_MAX_GPUS], int measurements, char *out,
                           size_t len)
{
    size_t used = 0;
    if (measurements < 1 || measurements > MGPU_LINK_CACHE_RUNS_MAX)
        return -1;
    int w = snprintf(out, len, FILE_HEAD "key %016" PRIx64 "\ndevices %s\nmeasurements %d\n", key,
                     devices, measurements);
    if (w < 0 || (size_t)w >= len)
        return -1;
    used = (size_t)w;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++) {
            if (!(gbps[a][b] >= GBPS_MIN && gbps[a][b] <= GBPS_MAX))
                return -1;
            w = snprintf(out + used, len - used, "%.1f%c", gbps[a][b], b + 1 < n ? ' ' : '\n');
            if (w < 0 || (size_t)w >= len - used)
                return -1;
            used += (size_t)w;
        }
    return 0;
}
