/* Unit tests of the links' kept bandwidths (partition/link_cache.c,
 * link_cache_text.c): the text written and read back, refusals of
 * anything else, and stores then loads through a cache directory on a
 * machine whose key comes from a procfs of the test's (MGPU_PROCFS): read
 * only after MGPU_LINK_CACHE_RUNS measurements, each pair's best of them. */
#include "check.h"
#include "base/real_driver.h"
#include "partition/link_cache.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* link_cache.c names the devices through the driver; not asked here. */
struct mgpu_driver_api mgpu_drv;

#define KEY 0xfeedface12345678ull
static const char devices[] = "00000000000000000000000000000001 00000000000000000000000000000002";

static void write_text(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    fputs(text, f);
    fclose(f);
}

int main(void)
{
    static double gbps[MGPU_MAX_GPUS][MGPU_MAX_GPUS], back[MGPU_MAX_GPUS][MGPU_MAX_GPUS];
    gbps[0][0] = 1790.44;
    gbps[0][1] = 370.16;
    gbps[1][0] = 369.8;
    gbps[1][1] = 1816.0;
    char text[4096];
    int count = 0;
    CHECK(mgpu_link_cache_format(KEY, devices, 2, (const double(*)[MGPU_MAX_GPUS])gbps, 3, text,
                                 sizeof text) == 0);
    CHECK(strcmp(text, "mgpu links 1\nkey feedface12345678\ndevices "
                       "00000000000000000000000000000001 00000000000000000000000000000002\n"
                       "measurements 3\n1790.4 370.2\n369.8 1816.0\n") == 0);
    CHECK(mgpu_link_cache_parse(text, strlen(text), KEY, devices, 2, back, &count) == 0);
    CHECK(count == 3);
    CHECK(fabs(back[0][1] - 370.2) < 1e-9 && fabs(back[1][1] - 1816.0) < 1e-9);

    /* Another machine, other devices, another count, a cut or changed text. */
    CHECK(mgpu_link_cache_parse(text, strlen(text), KEY + 1, devices, 2, back, &count) != 0);
    CHECK(mgpu_link_cache_parse(text, strlen(text), KEY,
                                "00000000000000000000000000000002 "
                                "00000000000000000000000000000001",
                                2, back, &count) != 0);
    CHECK(mgpu_link_cache_parse(text, strlen(text), KEY, devices, 1, back, &count) != 0);
    CHECK(mgpu_link_cache_parse(text, strlen(text) - 1, KEY, devices, 2, back, &count) != 0);
    const char *bad[] = {
        "mgpu links 2\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 0\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements -1\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements  1\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1x\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1001\n1 2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3 4 5\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1  2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 -2\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 nan\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 0.01\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2e9\n3 4\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3 4\nmore\n",
        "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3 4",
    };
    char good[1024];
    snprintf(good, sizeof good,
             "mgpu links 1\nkey feedface12345678\ndevices %s\nmeasurements 1\n1 2\n3 4\n", devices);
    CHECK(mgpu_link_cache_parse(good, strlen(good), KEY, devices, 2, back, &count) == 0);
    CHECK(count == 1 && back[1][0] == 3);
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char t[1024];
        snprintf(t, sizeof t, bad[i], devices);
        CHECK(mgpu_link_cache_parse(t, strlen(t), KEY, devices, 2, back, &count) != 0);
    }
    /* Out of range is not written. */
    gbps[1][0] = 0;
    CHECK(mgpu_link_cache_format(KEY, devices, 2, (const double(*)[MGPU_MAX_GPUS])gbps, 1, text,
                                 sizeof text) != 0);
    gbps[1][0] = 369.8;
    CHECK(mgpu_link_cache_format(KEY, devices, 2, (const double(*)[MGPU_MAX_GPUS])gbps, 0, text,
                                 sizeof text) != 0);

    /* Kept and found again, through a cache directory and a machine key. */
    char dir[] = "/tmp/mgpu-link-cache-XXXXXX", path[512];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/cache", dir);
    setenv("MGPU_CACHE_DIR", path, 1);
    snprintf(path, sizeof path, "%s/proc", dir);
    setenv("MGPU_PROCFS", path, 1);
    struct mgpu_link_cache_file f, other;
    CHECK(mgpu_link_cache_place(devices, &f) != 0); /* no key: nothing kept */
    const char *made[] = {"proc",
                          "proc/sys",
                          "proc/sys/kernel",
                          "proc/sys/kernel/random",
                          "proc/driver",
                          "proc/driver/nvidia",
                          "proc/driver/nvidia/gpus",
                          "proc/driver/nvidia/gpus/0000:18:00.0"};
    for (size_t i = 0; i < sizeof made / sizeof made[0]; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, made[i]);
        CHECK(mkdir(path, 0700) == 0);
    }
    snprintf(path, sizeof path, "%s/proc/sys/kernel/random/boot_id", dir);
    write_text(path, "first boot\n");
    snprintf(path, sizeof path, "%s/proc/driver/nvidia/version", dir);
    write_text(path, "NVRM version: 580\n");
    CHECK(mgpu_link_cache_place(devices, &f) == 0);
    CHECK(mgpu_link_cache_load(&f, 2, back) != 0);
    /* Three runs measure, the second low on one pair, the third high on
     * another: read after the third, each pair's best. */
    mgpu_link_cache_store(&f, 2, (const double(*)[MGPU_MAX_GPUS])gbps);
    CHECK(mgpu_link_cache_load(&f, 2, back) != 0);
    gbps[0][0] = 200.0;
    mgpu_link_cache_store(&f, 2, (const double(*)[MGPU_MAX_GPUS])gbps);
    CHECK(mgpu_link_cache_load(&f, 2, back) != 0);
    gbps[0][0] = 1700.0;
    gbps[1][0] = 380.0;
    mgpu_link_cache_store(&f, 2, (const double(*)[MGPU_MAX_GPUS])gbps);
    memset(back, 0, sizeof back);
    CHECK(mgpu_link_cache_load(&f, 2, back) == 0);
    CHECK(fabs(back[0][0] - 1790.4) < 1e-9 && fabs(back[1][0] - 380.0) < 1e-9);
    CHECK(fabs(back[0][1] - 370.2) < 1e-9 && fabs(back[1][1] - 1816.0) < 1e-9);
    /* Other devices have their own file; a new boot is another machine. */
    CHECK(mgpu_link_cache_place("00000000000000000000000000000003", &other) == 0);
    CHECK(strcmp(other.path, f.path) != 0 && mgpu_link_cache_load(&other, 1, back) != 0);
    snprintf(path, sizeof path, "%s/proc/sys/kernel/random/boot_id", dir);
    write_text(path, "second boot\n");
    CHECK(mgpu_link_cache_place(devices, &other) == 0);
    CHECK(other.key != f.key && mgpu_link_cache_load(&other, 2, back) != 0);

    char command[600];
    snprintf(command, sizeof command, "rm -rf '%s'", dir);
    CHECK(system(command) == 0);
    return 0;
}
