/* The LD_AUDIT module mgpu-run adds: it sends every search for libcuda.so.1
 * or libcuda.so to mgpu's shim, including those that an RPATH or an absolute
 * path would take around LD_LIBRARY_PATH. When a report was asked for and the
 * program never looked for the driver, it says so at exit, since the runtime
 * that prints reports was never loaded. It marks in MGPU_NCCL_SEEN when a
 * library other than mgpu's binds a function of NCCL's (mirror/nccl_watch.h):
 * mgpu's mirrors must then stay off. It runs inside the dynamic loader, so
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
/* MGPU_NCCL_SEEN's value in the process's environment strings, which the
 * runtime reads in the program's namespace: 'w' while watching, '1' once
 * NCCL was bound; NULL when mgpu-run did not ask for it. */
static char *nccl_seen;
/* Cookies of the objects whose bindings to NCCL do not count: mgpu's own
 * and NCCL's. dlsym reaches la_symbind64 when either side is marked (the
 * caller BINDFROM or the definition BINDTO), so mgpu's dlsym of NCCL's
 * functions arrives here too. */
#define IGNORED_MAX 64
static uintptr_t *ignored[IGNORED_MAX];
static int nignored;

unsigned int la_version(unsigned int version)
{
    shim_path = getenv("MGPU_SHIM");
    driver_path = getenv("MGPU_DRIVER");
    const char *report = getenv("MGPU_REPORT");
    report_wanted = report != NULL && strcmp(report, "1") == 0;
    /* "0" from mgpu-run; 'w' or '1' inherited by a program the first one
     * started, which is watched afresh. */
    nccl_seen = getenv("MGPU_NCCL_SEEN");
    if (nccl_seen != NULL && (nccl_seen[0] == '0' || nccl_seen[0] == 'w' || nccl_seen[0] == '1') &&
        nccl_seen[1] == '\0')
        nccl_seen[0] = 'w';
    else
        nccl_seen = NULL;
    return version < LAV_CURRENT ? version : LAV_CURRENT;
}

static const char *base_name(const char *name)
{
    const char *base = strrchr(name, '/');
    return base ? base + 1 : name;
}

static int is_driver_name(const char *name)
{
    const char *base = base_name(name);
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

/* Bindings to NCCL's objects from every object but mgpu's own (its runtime,
 * shim and preloaded libraries, and the driver mgpu loads) reach
 * la_symbind64; no other binding is audited, and no call is. */
unsigned int la_objopen(struct link_map *map, Lmid_t lmid, uintptr_t *cookie)
{
    /* The executable is the first object of the main namespace. */
    if (lmid == LM_ID_BASE && main_program == 0 && map->l_name[0] == '\0')
        main_program = (uintptr_t)cookie;
    if (nccl_seen == NULL)
        return 0;
    const char *base = base_name(map->l_name);
    bool nccl = strncmp(base, "libnccl", 7) == 0;
    if (nccl || strncmp(base, "libmgpu", 7) == 0 ||
        (shim_path && strcmp(map->l_name, shim_path) == 0) ||
        (driver_path && strcmp(map->l_name, driver_path) == 0)) {
        if (nignored < IGNORED_MAX)
            ignored[nignored++] = cookie;
        return nccl ? LA_FLG_BINDTO : 0;
    }
    return LA_FLG_BINDFROM;
}

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned int *flags, const char *symname)
{
    (void)ndx;
    (void)defcook;
    bool counts = nccl_seen != NULL &&
                  (strncmp(symname, "nccl", 4) == 0 || strncmp(symname, "pnccl", 5) == 0);
    for (int i = 0; counts && i < nignored; i++)
        counts = ignored[i] != refcook;
    if (counts)
        nccl_seen[0] = '1';
    *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
    return sym->st_value;
}

unsigned int la_objclose(uintptr_t *cookie)
{
    /* A closed object's cookie may come back for another object. */
    for (int i = 0; i < nignored; i++)
        if (ignored[i] == cookie)
            ignored[i--] = ignored[--nignored];
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
