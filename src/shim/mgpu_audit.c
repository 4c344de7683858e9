/* The LD_AUDIT module mgpu-run adds: it sends every search for libcuda.so.1
 * or libcuda.so to mgpu's shim, including those that an RPATH or an absolute
 * path would take around LD_LIBRARY_PATH. It runs inside the dynamic loader,
 * so it uses nothing but the C library. */
#include <link.h>
#include <stdlib.h>
#include <string.h>

static const char *shim_path;   /* MGPU_SHIM */
static const char *driver_path; /* MGPU_DRIVER: mgpu's own load of the real driver */

unsigned int la_version(unsigned int version)
{
    shim_path = getenv("MGPU_SHIM");
    driver_path = getenv("MGPU_DRIVER");
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static int is_driver_name(const char *name)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    return strcmp(base, "libcuda.so.1") == 0 || strcmp(base, "libcuda.so") == 0;
}

char *la_objsearch(const char *name, uintptr_t *cookie, unsigned int flag)
{
    (void)cookie;
    if (flag != LA_SER_ORIG || shim_path == NULL || *shim_path == '\0' || !is_driver_name(name))
        return (char *)name;
    if (strcmp(name, shim_path) == 0 || (driver_path && strcmp(name, driver_path) == 0))
        return (char *)name;
    return (char *)shim_path;
}
