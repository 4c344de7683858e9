/* Unit tests of finding the real driver: the loader cache reader, MGPU_DRIVER,
 * LD_LIBRARY_PATH order, and skipping mgpu's own shim. */
#include "check.h"
#include "base/driver_locate.h"

#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

static int accept_any(const char *path, void *ctx)
{
    (void)path;
    (void)ctx;
    return 1;
}

static void make_file(const char *path)
{
    FILE *f = fopen(path, "w");
    if (f) {
        fputs("not really a library\n", f);
        fclose(f);
    }
}

int main(void)
{
    char out[PATH_MAX], err[512];

    /* Every glibc system's cache lists the C library. */
    CHECK(mgpu_ldcache_find("/etc/ld.so.cache", "libc.so.6", accept_any, NULL, out, sizeof out) ==
          0);
    CHECK_CONTAINS(out, "libc.so.6");
    CHECK(mgpu_ldcache_find("/etc/ld.so.cache", "libnot-a-real-library.so.7", accept_any, NULL, out,
                            sizeof out) == -1);
    CHECK(mgpu_ldcache_find("/nonexistent/ld.so.cache", "libc.so.6", accept_any, NULL, out,
                            sizeof out) == -1);
    CHECK(mgpu_ldcache_find("/dev/null", "libc.so.6", accept_any, NULL, out, sizeof out) == -1);

    char dir[] = "/tmp/mgpu-locate-XXXXXX";
    CHECK(mkdtemp(dir) != NULL);
    char shim_dir[PATH_MAX], real_dir[PATH_MAX], shim[PATH_MAX + 16], real[PATH_MAX + 16];
    snprintf(shim_dir, sizeof shim_dir, "%s/shim", dir);
    snprintf(real_dir, sizeof real_dir, "%s/real", dir);
    mkdir(shim_dir, 0700);
    mkdir(real_dir, 0700);
    snprintf(shim, sizeof shim, "%s/libcuda.so.1", shim_dir);
    snprintf(real, sizeof real, "%s/libcuda.so.1", real_dir);
    make_file(shim);
    make_file(real);

    char path[2 * PATH_MAX + 16];
    snprintf(path, sizeof path, "/nonexistent:%s:%s", shim_dir, real_dir);
    setenv("LD_LIBRARY_PATH", path, 1);
    unsetenv("MGPU_DRIVER");
    CHECK(mgpu_driver_locate(shim, out, sizeof out, err, sizeof err) == 0);
    CHECK_STR(out, real);
    /* Without the shim to skip, the first directory wins. */
    CHECK(mgpu_driver_locate(NULL, out, sizeof out, err, sizeof err) == 0);
    CHECK_STR(out, shim);

    setenv("MGPU_DRIVER", real, 1);
    CHECK(mgpu_driver_locate(shim, out, sizeof out, err, sizeof err) == 0);
    CHECK_STR(out, real);
    setenv("MGPU_DRIVER", "/nonexistent/libcuda.so.1", 1);
    CHECK(mgpu_driver_locate(shim, out, sizeof out, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "MGPU_DRIVER=/nonexistent/libcuda.so.1 is not the CUDA driver library");
    setenv("MGPU_DRIVER", shim, 1);
    CHECK(mgpu_driver_locate(shim, out, sizeof out, err, sizeof err) == -1);
    unsetenv("MGPU_DRIVER");

    unlink(shim);
    unlink(real);
    rmdir(shim_dir);
    rmdir(real_dir);
    rmdir(dir);
    CHECK_DONE();
}
