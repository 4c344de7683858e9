/* Owns the report's figures for cuBLAS GEMMs (see blas_stats.h). */
#include "blas/blas_stats.h"
#include "blas/gemm_policy.h"

#include "base/log.h"
#include "base/real_driver.h"
#include "base/report_format.h"

#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define MAX_ROUTINES 48
/* Split calls whose events are kept until the report; past this, the
 * finished ones are added up as new ones come. */
#define MAX_PENDING 256

/* The largest GEMM a routine was called for, by m*n*k. */
struct largest_shape {
    long long m, n, k;
};

static void keep_largest(struct largest_shape *l, long long m, long long n, long long k)
{
    if ((double)m * n * k > (double)l->m * l->n * l->k)
        *l = (struct largest_shape){m, n, k};
}

struct routine_stats {
    const char *name;
    unsigned long calls, split;
    unsigned long unsplit[MGPU_BLAS_UNSPLIT_REASON_COUNT];
    unsigned long cuts[4]; /* by enum mgpu_gemm_cut */
    unsigned long by_owner;
    unsigned long mirrored; /* split calls whose parts read A or B from mirrors */
    unsigned long staged;   /* split calls whose parts copied A or B first */
    struct largest_shape largest;
    unsigned long parts[MGPU_MAX_GPUS];
    double gpu_ms;
    unsigned long timed;
};

/* A CPU program's routine under --blas. */
#define HOST_REASONS 4
struct host_routine_stats {
    const char *name;
    unsigned long calls, offloaded;
    double gpu_ms;
    unsigned long long bytes;
    struct largest_shape largest;
    const char *reasons[HOST_REASONS];
    unsigned long reason_counts[HOST_REASONS];
};

struct pending {
    int routine;
    CUevent start, end;
};

static struct routine_stats routines[MAX_ROUTINES];
static int routine_count;
static struct pending pending[MAX_PENDING];
static int pending_count;
static struct host_routine_stats host_routines[MAX_ROUTINES];
static int host_routine_count;
static pthread_mutex_t stats_lock = PTHREAD_MUTEX_INITIALIZER;

/* Calling libraries that had no BLAS behind mgpu's routine. */
#define MAX_UNRESOLVED 8
struct unresolved {
    char routine[48];
    char caller[112];
    bool host;
    unsigned long sites;
};
static struct unresolved unresolved[MAX_UNRESOLVED];
static int unresolved_count;

static const char *const unsplit_words[MGPU_BLAS_UNSPLIT_REASON_COUNT] = {
    "MGPU_BLAS=never",
    "one GPU",
    "below MGPU_BLAS_MIN",
    "stream capture",
    "nothing to cut",
    "scalars on the device out of reach",
    "not on the run's GPUs",
    "a layout or epilogue not cut",
    "being measured",
    "under 100 us",
    "a split's copies cost more",
    "measured faster whole",
};

/* Under stats_lock: routine `name`'s record, or NULL when the table is full. */
static struct routine_stats *routine(const char *name, long long m, long long n, long long k)
{
    int i;
    for (i = 0; i < routine_count; i++)
        if (routines[i].name == name || strcmp(routines[i].name, name) == 0)
            break;
    if (i == routine_count) {
        if (routine_count == MAX_ROUTINES)
            return NULL;
        routines[routine_count++].name = name;
    }
    struct routine_stats *r = &routines[i];
    r->calls++;
    keep_largest(&r->largest, m, n, k);
    return r;
}

void mgpu_blas_stats_unsplit(const char *name, enum mgpu_blas_unsplit why, long long m, long long n,
                             long long k)
{
    pthread_mutex_lock(&stats_lock);
    struct routine_stats *r = routine(name, m, n, k);
    if (r != NULL)
        r->unsplit[why]++;
    pthread_mutex_unlock(&stats_lock);
}

/* Under stats_lock: adds the time of pending call i when its end has
 * passed (or, with `wait`, once it has) and drops it; false when it is
 * still running. */
static bool settle(int i, bool wait)
{
    struct pending *p = &pending[i];
    if (!wait && mgpu_drv.cuEventQuery(p->end) == CUDA_ERROR_NOT_READY)
        return false;
    float ms = 0;
    if (mgpu_drv.cuEventSynchronize(p->end) == CUDA_SUCCESS &&
        mgpu_drv.cuEventElapsedTime(&ms, p->start, p->end) == CUDA_SUCCESS) {
        routines[p->routine].gpu_ms += ms;
        routines[p->routine].timed++;
    }
    mgpu_drv.cuEventDestroy(p->start);
    mgpu_drv.cuEventDestroy(p->end);
    *p = pending[--pending_count];
    return true;
}

void mgpu_blas_stats_split(const char *name, const struct mgpu_gemm_plan *plan, bool mirrored,
                           bool staged, long long m, long long n, long long k, CUevent start,
                           CUevent end)
{
    pthread_mutex_lock(&stats_lock);
    struct routine_stats *r = routine(name, m, n, k);
    if (r != NULL) {
        r->split++;
        r->cuts[plan->cut]++;
        r->by_owner += plan->by_owner;
        r->mirrored += mirrored;
        r->staged += staged;
        for (int p = 0; p < plan->nparts; p++)
            r->parts[plan->parts[p].gpu]++;
    }
    if (start != NULL && end != NULL && r != NULL) {
        for (int i = 0; pending_count == MAX_PENDING && i < pending_count;)
            if (!settle(i, false))
                i++;
        if (pending_count == MAX_PENDING)
            settle(0, true);
        pending[pending_count++] = (struct pending){(int)(r - routines), start, end};
    } else {
        if (start != NULL)
            mgpu_drv.cuEventDestroy(start);
        if (end != NULL)
            mgpu_drv.cuEventDestroy(end);
    }
    pthread_mutex_unlock(&stats_lock);
}

static const char *base_name(const char *path)
{
    const char *slash = strrchr(path, '/');
    return slash != NULL ? slash + 1 : path;
}

void mgpu_blas_stats_library(const char *routine, const char *caller, const char *library,
                             bool host)
{
    const char *from = caller != NULL && *caller ? caller : "the program";
    if (library != NULL) {
        mgpu_debug("%s called from %s goes to %s", routine, from,
                   *library ? library : "the program's own");
        return;
    }
    const char *what = host ? "CPU BLAS" : "cuBLAS";
    mgpu_warn("%s called from %s: no %s found in its scope or the global one, so mgpu %s", routine,
              from, what,
              host ? "runs it on the GPUs whatever its size"
                   : "answers CUBLAS_STATUS_NOT_INITIALIZED, as a missing cuBLAS would");
    pthread_mutex_lock(&stats_lock);
    int i;
    for (i = 0; i < unresolved_count; i++)
        if (strcmp(unresolved[i].routine, routine) == 0 &&
            strcmp(unresolved[i].caller, base_name(from)) == 0)
            break;
    if (i == unresolved_count && unresolved_count < MAX_UNRESOLVED) {
        snprintf(unresolved[i].routine, sizeof unresolved[i].routine, "%s", routine);
        snprintf(unresolved[i].caller, sizeof unresolved[i].caller, "%s", base_name(from));
        unresolved[i].host = host;
        unresolved_count++;
    }
    if (i < unresolved_count)
        unresolved[i].sites++;
    pthread_mutex_unlock(&stats_lock);
}

/* The report's lines for calling libraries without a BLAS behind mgpu. */
static size_t describe_unresolved(bool host, char (*lines)[160], size_t used, size_t max)
{
    for (int i = 0; i < unresolved_count && used < max; i++)
        if (unresolved[i].host == host)
            snprintf(lines[used++], 160, "%.32s from %.48s: no %s behind mgpu's (%s)",
                     unresolved[i].routine, unresolved[i].caller, host ? "CPU BLAS" : "cuBLAS",
                     host ? "run on the GPUs" : "answered CUBLAS_STATUS_NOT_INITIALIZED");
    return used;
}

size_t mgpu_blas_stats_describe(char (*lines)[160], size_t max)
{
    pthread_mutex_lock(&stats_lock);
    while (pending_count > 0)
        settle(0, true);
    size_t used = 0;
    for (int i = 0; i < routine_count && used < max; i++) {
        const struct routine_stats *r = &routines[i];
        char *line = lines[used++];
        size_t len = 0;
        len += (size_t)snprintf(line + len, 160 - len, "%s: %lu calls, %lu split", r->name,
                                r->calls, r->split);
        for (int c = MGPU_GEMM_BY_COLUMNS; c <= MGPU_GEMM_BY_BATCH && len < 160; c++)
            if (r->cuts[c] > 0)
                len += (size_t)snprintf(line + len, 160 - len, " (%lu by %s)", r->cuts[c],
                                        mgpu_gemm_cut_name((enum mgpu_gemm_cut)c));
        if (r->timed > 0 && len < 160)
            len += (size_t)snprintf(line + len, 160 - len, ", %.3f ms on the GPUs", r->gpu_ms);
        if (len < 160)
            len += (size_t)snprintf(line + len, 160 - len, "; largest %lldx%lldx%lld", r->largest.m,
                                    r->largest.n, r->largest.k);
        for (int w = 0; w < MGPU_BLAS_UNSPLIT_REASON_COUNT && len < 160; w++) {
            if (r->unsplit[w] == 0)
                continue;
            char piece[96];
            size_t n = (size_t)snprintf(piece, sizeof piece, "%lu whole: %s", r->unsplit[w],
                                        unsplit_words[w]);
            if (len + n + 2 >= 160 && used < max) { /* the rest on a line of its own */
                line = lines[used++];
                len = (size_t)snprintf(line, 160, "  %s", piece);
            } else {
                len += (size_t)snprintf(line + len, 160 - len, "; %s", piece);
            }
        }
        if (r->split > 0 && used < max) {
            line = lines[used++];
            len = (size_t)snprintf(line, 160, "  parts per GPU:");
            for (int g = 0; g < MGPU_MAX_GPUS && len < 160; g++)
                if (r->parts[g] > 0)
                    len += (size_t)snprintf(line + len, 160 - len, " %d:%lu", g, r->parts[g]);
            if (r->by_owner > 0 && len < 160)
                len += (size_t)snprintf(line + len, 160 - len, " (%lu cut where C's owners change)",
                                        r->by_owner);
            if (r->mirrored > 0 && len < 160)
                len += (size_t)snprintf(line + len, 160 - len,
                                        "; %lu calls read A or B from mirrors", r->mirrored);
            if (r->staged > 0 && len < 160)
                snprintf(line + len, 160 - len, "; %lu calls copied A or B to the GPUs first",
                         r->staged);
        }
    }
    used = describe_unresolved(false, lines, used, max);
    pthread_mutex_unlock(&stats_lock);
    if (used < max)
        used += mgpu_gemm_policy_describe(lines + used, max - used > 8 ? 8 : max - used);
    return used;
}

/* Whether the file holds `needle` anywhere (the executable's symbol or
 * string tables name cuBLAS's functions when cuBLAS is linked into it). */
static bool file_contains(const char *path, const char *needle)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    struct stat st;
    bool found = false;
    if (fstat(fd, &st) == 0 && st.st_size > 0) {
        void *map = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (map != MAP_FAILED) {
            found = memmem(map, (size_t)st.st_size, needle, strlen(needle)) != NULL;
            munmap(map, (size_t)st.st_size);
        }
    }
    close(fd);
    return found;
}

void mgpu_blas_stats_host(const char *name, const char *cpu_reason, long long m, long long n,
                          long long k, double gpu_ms, unsigned long long bytes_copied)
{
    pthread_mutex_lock(&stats_lock);
    int i;
    for (i = 0; i < host_routine_count; i++)
        if (strcmp(host_routines[i].name, name) == 0)
            break;
    if (i == host_routine_count && host_routine_count < MAX_ROUTINES)
        host_routines[host_routine_count++].name = name;
    if (i < host_routine_count) {
        struct host_routine_stats *r = &host_routines[i];
        r->calls++;
        keep_largest(&r->largest, m, n, k);
        if (cpu_reason == NULL) {
            r->offloaded++;
            r->gpu_ms += gpu_ms;
            r->bytes += bytes_copied;
        } else {
            int w;
            for (w = 0; w < HOST_REASONS && r->reasons[w] != NULL; w++)
                if (strcmp(r->reasons[w], cpu_reason) == 0)
                    break;
            if (w < HOST_REASONS) {
                r->reasons[w] = cpu_reason;
                r->reason_counts[w]++;
            }
        }
    }
    pthread_mutex_unlock(&stats_lock);
}

size_t mgpu_blas_stats_describe_host(char (*lines)[160], size_t max)
{
    pthread_mutex_lock(&stats_lock);
    size_t used = 0;
    for (int i = 0; i < host_routine_count && used < max; i++) {
        const struct host_routine_stats *r = &host_routines[i];
        char *line = lines[used++];
        char copied[32];
        mgpu_format_bytes(copied, sizeof copied, r->bytes);
        size_t len = (size_t)snprintf(line, 160,
                                      "%s: %lu calls, %lu on the GPUs (%.3f ms, %s copied); "
                                      "largest %lldx%lldx%lld",
                                      r->name, r->calls, r->offloaded, r->gpu_ms, copied,
                                      r->largest.m, r->largest.n, r->largest.k);
        for (int w = 0; w < HOST_REASONS && r->reasons[w] != NULL && len < 160; w++)
            len += (size_t)snprintf(line + len, 160 - len, "; %lu on the CPU: %s",
                                    r->reason_counts[w], r->reasons[w]);
    }
    used = describe_unresolved(true, lines, used, max);
    pthread_mutex_unlock(&stats_lock);
    return used;
}

/* The executable does not change during the run: it is read once, however
 * often the question is asked (the virtual device asks at the first
 * multiprocessor query, the report at exit). */
static pthread_once_t exe_scanned = PTHREAD_ONCE_INIT;
static bool exe_names_cublas;

static void scan_exe(void)
{
    exe_names_cublas = file_contains("/proc/self/exe", "cublasCreate_v2");
}

bool mgpu_blas_linked_statically(void)
{
    void *create = dlsym(RTLD_DEFAULT, "cublasCreate_v2");
    Dl_info info;
    if (create != NULL && dladdr(create, &info) != 0 && info.dli_fname != NULL &&
        strstr(info.dli_fname, ".so") != NULL)
        return false; /* a shared cuBLAS is loaded: its calls reach the interposer */
    pthread_once(&exe_scanned, scan_exe);
    return exe_names_cublas;
}
