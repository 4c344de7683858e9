/* The LD_AUDIT module mgpu-run adds: it sends every search for libcuda.so.1
 * or libcuda.so to mgpu's shim, including those that an RPATH or an absolute
 * path would take around LD_LIBRARY_PATH. When a report was asked for and the
 * program never looked for the driver, it says so at exit, since the runtime
 * that prints reports was never loaded. It marks in MGPU_NCCL_SEEN when a
 * library other than mgpu's makes an NCCL communicator (mirror/nccl_watch.h):
 * NCCL writes the program's buffers through communicators alone, and mgpu's
 * mirrors must then stay off. Binding NCCL is not using it: PyTorch links
 * NCCL into every process, most of which never make a communicator. So a
 * binding of one of the functions that make one gets a wrapper of this
 * module's, which sets the mark and goes on to NCCL's function. It runs
 * inside the dynamic loader, so it uses nothing but the C library. */
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

/* NCCL's types as far as the wrappers pass them on. */
typedef int nccl_result;
typedef struct {
    char internal[128];
} nccl_unique_id;

/* The functions that make a communicator from nothing (ncclCommSplit and
 * the like need one already), each with NCCL's address of it, found at
 * its first binding, and a wrapper that marks and calls it. */
static uintptr_t real_init_rank, real_init_rank_config, real_init_all, real_init_scalable;

static void mark_nccl_used(void)
{
    if (nccl_seen != NULL)
        nccl_seen[0] = '1';
}

static nccl_result wrap_init_rank(void **comm, int nranks, nccl_unique_id id, int rank)
{
    mark_nccl_used();
    return ((nccl_result(*)(void **, int, nccl_unique_id, int))real_init_rank)(comm, nranks, id,
                                                                               rank);
}

static nccl_result wrap_init_rank_config(void **comm, int nranks, nccl_unique_id id, int rank,
                                         void *config)
{
    mark_nccl_used();
    return ((nccl_result(*)(void **, int, nccl_unique_id, int, void *))real_init_rank_config)(
        comm, nranks, id, rank, config);
}

static nccl_result wrap_init_all(void **comm, int ndev, const int *devlist)
{
    mark_nccl_used();
    return ((nccl_result(*)(void **, int, const int *))real_init_all)(comm, ndev, devlist);
}

static nccl_result wrap_init_scalable(void **comm, int nranks, int rank, int nids,
                                      nccl_unique_id *ids, void *config)
{
    mark_nccl_used();
    return ((nccl_result(*)(void **, int, int, int, nccl_unique_id *, void *))real_init_scalable)(
        comm, nranks, rank, nids, ids, config);
}

static const struct {
    const char *name; /* without the "p" of the profiling names */
    uintptr_t *real;
    uintptr_t wrapper;
} comm_makers[] = {
    {"ncclCommInitRank", &real_init_rank, (uintptr_t)wrap_init_rank},
    {"ncclCommInitRankConfig", &real_init_rank_config, (uintptr_t)wrap_init_rank_config},
    {"ncclCommInitAll", &real_init_all, (uintptr_t)wrap_init_all},
    {"ncclCommInitRankScalable", &real_init_scalable, (uintptr_t)wrap_init_scalable},
};

uintptr_t la_symbind64(Elf64_Sym *sym, unsigned int ndx, uintptr_t *refcook, uintptr_t *defcook,
                       unsigned int *flags, const char *symname)
{
    (void)ndx;
    (void)defcook;
    *flags |= LA_SYMB_NOPLTENTER | LA_SYMB_NOPLTEXIT;
    bool counts = nccl_seen != NULL &&
                  (strncmp(symname, "nccl", 4) == 0 || strncmp(symname, "pnccl", 5) == 0);
    for (int i = 0; counts && i < nignored; i++)
        counts = ignored[i] != refcook;
    if (!counts)
        return sym->st_value;
    const char *name = symname[0] == 'p' ? symname + 1 : symname;
    for (size_t i = 0; i < sizeof comm_makers / sizeof comm_makers[0]; i++) {
        if (strcmp(name, comm_makers[i].name) != 0)
            continue;
        uintptr_t *real = comm_makers[i].real;
        if (*real == 0)
            *real = sym->st_value;
        if (*real == sym->st_value)
            return comm_makers[i].wrapper;
        mark_nccl_used(); /* a second NCCL: no wrapper for it, so marked now */
        return sym->st_value;
    }
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
