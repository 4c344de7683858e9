/* libFuzzer harness for the reader of the links' kept bandwidths
 * (partition/link_cache_text.c), which every run on several devices reads
 * from mgpu's cache directory: any bytes are read or refused without a
 * read past them, accepted bandwidths and counts are in range, and written
 * again they read back and write the same text. The first byte picks the count of
 * devices (1 to 8) the file must be for. */
#include "fuzz/fuzz_input.h"
#include "partition/link_cache.h"

#define KEY 0x0123456789abcdefull

static char written[1 << 16], again_written[1 << 16];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    int n = 1 + data[0] % 8;
    char devices[8 * 34] = "";
    for (int i = 0; i < n; i++)
        snprintf(devices + strlen(devices), sizeof devices - strlen(devices), "%s%032x",
                 i ? " " : "", i + 1);
    /* An exact copy, NUL-terminated: a read past it is a heap overflow. */
    char *exact = malloc(size);
    if (exact == NULL)
        abort();
    memcpy(exact, data + 1, size - 1);
    exact[size - 1] = '\0';
    static double first[MGPU_MAX_GPUS][MGPU_MAX_GPUS], again[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    int count = 0, count_again = 0;
    int r = mgpu_link_cache_parse(exact, strlen(exact), KEY, devices, n, first, &count);
    free(exact);
    if (r != 0)
        return 0;
    for (int a = 0; a < n; a++)
        for (int b = 0; b < n; b++)
            fuzz_require(first[a][b] >= 0.1 && first[a][b] <= 99999.0, "bandwidths in range");
    fuzz_require(count >= 1 && count <= MGPU_LINK_CACHE_RUNS_MAX, "the count in range");
    fuzz_require(mgpu_link_cache_format(KEY, devices, n, (const double(*)[MGPU_MAX_GPUS])first,
                                        count, written, sizeof written) == 0,
                 "accepted bandwidths can be written");
    fuzz_require(mgpu_link_cache_parse(written, strlen(written), KEY, devices, n, again,
                                       &count_again) == 0 &&
                     count_again == count,
                 "written bandwidths read back");
    fuzz_require(mgpu_link_cache_format(KEY, devices, n, (const double(*)[MGPU_MAX_GPUS])again,
                                        count_again, again_written, sizeof again_written) == 0 &&
                     strcmp(written, again_written) == 0,
                 "written bandwidths read back the same");
    fuzz_require(mgpu_link_cache_parse(written, strlen(written), KEY + 1, devices, n, again,
                                       &count_again) != 0,
                 "another machine's key is refused");
    return 0;
}
