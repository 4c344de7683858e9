/* The LD_AUDIT module mgpu-run adds: it sends every search for libcuda.so.1
 * or libcuda.so to mgpu's shim, including those that an RPATH or an absolute
 * path would take around LD_LIBRARY_PATH. When a report was asked for and the
 * program never looked for the driver, it says so at exit, since the runtime
 * that prints reports was never loaded. It runs inside the dynamic loader, so
 * it uses nothing but the C library. */
#include <link.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static const char *shim_path;   /* MGPU_SHIM */
static const char *driver_path; /* MGPU_DRIVER: mgpu's own load of the real driver */
static bool report_wanted;      /* MGPU_REPORT=1 */
static bool driver_searched;
static uintptr_t main_program; /* cookie of the executable's link map */

unsigned int la_version(unsigned int version)
{
    shim_path = getenv("MGPU_SHIM");
    driver_path = getenv("MGPU_DRIVER");
    const char *report = getenv("MGPU_REPORT");
    report_wanted = report != NULL && strcmp(report, "1") == 0;
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
    driver_searched = true;
    if (strcmp(name, shim_path) == 0 || (driver_path && strcmp(name, driver_path) == 0))
        return (char *)name;
    return (char *)shim_path;
}

unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    /* The executable is the first object of the main namespace. */
    if (lmid == LM_ID_BASE && main_program == 0 && map->l_name[0] == '\0')
        main_program = (uintptr_t)cookie;
    return 0; /* no symbol binding audit: no cost on calls */
}

unsigned int la_objclose(uintptr_t *cookie)
{
    if ((uintptr_t)cookie != main_program || !report_wanted || driver_searched)
        return 0;
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    const char *base = strrchr(exe, '/');
    base = base ? base + 1 : "the program";
    char line[PATH_MAX + 128];
    int len = snprintf(line, sizeof line,
                       "mgpu: report: %s never loaded the CUDA driver; nothing to report\n", base);
    if (len > 0 && write(STDERR_FILENO, line, (size_t)len) < 0)
        return 0;
    return 0;
}
