/* Owns turning mgpu-run's --probe arguments into checked PTX files (see
 * probe_compile.h): finding a built-in tool's source and the toolkit's
 * nvcc, compiling into mgpu's cache, and reading the result's probes. */
#include <build_config.h>

#include "src/run/probe_compile.h"

#include "base/byte_hash.h"
#include "base/cache_dir.h"
#include "base/read_file.h"

#include "ptx/ptx_probes.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#ifndef MGPU_PROBE_DIR
#define MGPU_PROBE_DIR "/usr/local/share/mgpu/probes"
#endif
#ifndef MGPU_INCLUDEDIR
#define MGPU_INCLUDEDIR "/usr/local/include"
#endif

const char *const mgpu_builtin_probes[] = {"launch-latency", "block-time", "thread-count",
                                           "memory-locality", "footprint-check", NULL};

/* Every probe is compiled for this virtual architecture, the oldest the
 * toolkit supports: its PTX then links into a module of any target mgpu
 * runs (the pass raises the module's target to it). */
#define PROBE_ARCH "compute_75"
#define MAX_SOURCE_BYTES (4u << 20)

static bool ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static bool executable(const char *path)
{
    return access(path, X_OK) == 0;
}

/* The toolkit's nvcc: MGPU_NVCC, CUDA_HOME or CUDA_PATH's bin, the
 * toolkit's usual place, then PATH. */
static bool find_nvcc(char *out, size_t len)
{
    const char *nvcc = getenv("MGPU_NVCC");
    if (nvcc && *nvcc) {
        snprintf(out, len, "%s", nvcc);
        return executable(out);
    }
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (size_t i = 0; i < sizeof homes / sizeof homes[0]; i++)
        if (homes[i] && *homes[i] &&
            (size_t)snprintf(out, len, "%s/bin/nvcc", homes[i]) < len && executable(out))
            return true;
    const char *path = getenv("PATH");
    while (path && *path) {
        size_t n = strcspn(path, ":");
        if (n > 0 && (size_t)snprintf(out, len, "%.*s/nvcc", (int)n, path) < len && executable(out))
            return true;
        path += n + (path[n] == ':');
    }
    return false;
}

/* The first line of nvcc's output that says "error", else its first line. */
static void first_error(const char *log, char *out, size_t len)
{
    const char *line = strstr(log, "error");
    if (line == NULL)
        line = log;
    else
        while (line > log && line[-1] != '\n')
            line--;
    size_t n = strcspn(line, "\n");
    snprintf(out, len, "%.*s", (int)(n < 300 ? n : 300), line);
}

/* Runs nvcc on `source` into `ptx`. */
static int run_nvcc(const char *nvcc, const char *include, const char *source, const char *ptx,
                    const char *name, int verbose, char *err, size_t errlen)
{
    char log_path[4300], include_flag[4200];
    snprintf(log_path, sizeof log_path, "%s.log", ptx);
    snprintf(include_flag, sizeof include_flag, "-I%s", include);
    if (verbose)
        fprintf(stderr, "mgpu-run: compiling probe %s with %s\n", name, nvcc);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "probe %s: cannot start nvcc: %s", name, strerror(errno));
        return -1;
    }
    if (pid == 0) {
        int fd = open(log_path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd >= 0) {
            dup2(fd, 1);
            dup2(fd, 2);
        }
        execl(nvcc, nvcc, "-ptx", "-rdc=true", "-arch=" PROBE_ARCH, include_flag, "-o", ptx,
              source, (char *)NULL);
        _exit(127);
    }
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    size_t size = 0;
    char *log = mgpu_read_file(log_path, 1 << 20, &size);
    unlink(log_path);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
        free(log);
        return 0;
    }
    char line[320] = "nvcc failed";
    if (log && size)
        first_error(log, line, sizeof line);
    free(log);
    unlink(ptx);
    snprintf(err, errlen, "probe %s does not compile: %s", name, line);
    return -1;
}

/* The source of a built-in tool. */
static int builtin_source(const char *name, char *out, size_t len, char *err, size_t errlen)
{
    const char *dir = getenv("MGPU_PROBE_DIR");
    if (dir == NULL || *dir == '\0')
        dir = MGPU_PROBE_DIR;
    bool known = false;
    for (size_t i = 0; mgpu_builtin_probes[i]; i++)
        known |= strcmp(mgpu_builtin_probes[i], name) == 0;
    snprintf(out, len, "%s/%s.cu", dir, name);
    if (known && access(out, R_OK) == 0)
        return 0;
    if (known)
        snprintf(err, errlen, "the built-in probe %s has no source at %s; reinstall mgpu or set "
                              "MGPU_PROBE_DIR", name, out);
    else
        snprintf(err, errlen,
                 "no built-in probe '%s'; use launch-latency, block-time, "
                 "thread-count, memory-locality, footprint-check, or a FILE.cu or FILE.ptx",
                 name);
    return -1;
}

/* Reads a PTX file's probes, as the runtime will; the error names `name`. */
static int check_ptx(const char *path, const char *name, char *err, size_t errlen)
{
    struct ptx_probe_set set = {0};
    int rc = ptx_probe_set_add_file(&set, name, path, err, errlen);
    ptx_probe_set_free(&set);
    return rc;
}

int mgpu_probe_prepare(const char *arg, int verbose, char *ptx, size_t ptx_len, char *err,
                       size_t errlen)
{
    if (ends_with(arg, ".ptx")) {
        if (access(arg, R_OK) != 0) {
            snprintf(err, errlen, "probe %s: %s", arg, strerror(errno));
            return -1;
        }
        if (check_ptx(arg, arg, err, errlen) != 0)
            return -1;
        if (realpath(arg, ptx) == NULL)
            snprintf(ptx, ptx_len, "%s", arg);
        return 0;
    }
    char source[4096];
    if (ends_with(arg, ".cu")) {
        snprintf(source, sizeof source, "%s", arg);
    } else if (strchr(arg, '/') == NULL && strchr(arg, '.') == NULL) {
        if (builtin_source(arg, source, sizeof source, err, errlen) != 0)
            return -1;
    } else {
        snprintf(err, errlen, "probe %s: give a built-in tool's name, a FILE.cu or a FILE.ptx",
                 arg);
        return -1;
    }
    size_t size = 0;
    char *text = mgpu_read_file(source, MAX_SOURCE_BYTES, &size);
    if (text == NULL) {
        snprintf(err, errlen, "probe %s: cannot read %s: %s", arg, source, strerror(errno));
        return -1;
    }
    char nvcc[4096], include[4096], header[4200], dir[4096];
    const char *inc = getenv("MGPU_PROBE_INCLUDE");
    snprintf(include, sizeof include, "%s", inc && *inc ? inc : MGPU_INCLUDEDIR);
    if (!find_nvcc(nvcc, sizeof nvcc)) {
        free(text);
        snprintf(err, errlen, "probe %s: no nvcc to compile it; install the CUDA toolkit, set "
                              "CUDA_HOME, or give a FILE.ptx made with nvcc -ptx -rdc=true", arg);
        return -1;
    }
    /* The cache key: the source, the header it includes, the compiler. */
    uint64_t h = mgpu_byte_hash(MGPU_BYTE_HASH_START, text, size);
    free(text);
    snprintf(header, sizeof header, "%s/mgpu/probe.h", include);
    size_t header_size = 0;
    char *header_text = mgpu_read_file(header, MAX_SOURCE_BYTES, &header_size);
    if (header_text == NULL) {
        snprintf(err, errlen, "probe %s: no mgpu/probe.h at %s; reinstall mgpu or set "
                              "MGPU_PROBE_INCLUDE", arg, header);
        return -1;
    }
    h = mgpu_byte_hash(h, header_text, header_size);
    free(header_text);
    h = mgpu_byte_hash(h, nvcc, strlen(nvcc));
    h = mgpu_byte_hash(h, PROBE_ARCH, strlen(PROBE_ARCH));
    if (mgpu_cache_dir(dir, sizeof dir) != 0) {
        snprintf(err, errlen, "probe %s: cannot make the cache directory %s: %s (set "
                              "MGPU_CACHE_DIR)", arg, dir, strerror(errno));
        return -1;
    }
    const char *base = strrchr(arg, '/') ? strrchr(arg, '/') + 1 : arg;
    if ((size_t)snprintf(ptx, ptx_len, "%s/%.*s-%016llx.ptx", dir,
                         (int)(ends_with(base, ".cu") ? strlen(base) - 3 : strlen(base)), base,
                         (unsigned long long)h) >= ptx_len) {
        snprintf(err, errlen, "probe %s: the cache path is too long (set MGPU_CACHE_DIR)", arg);
        return -1;
    }
    if (access(ptx, R_OK) != 0) {
        char partial[4200];
        snprintf(partial, sizeof partial, "%s.%d.tmp", ptx, (int)getpid());
        if (run_nvcc(nvcc, include, source, partial, arg, verbose, err, errlen) != 0)
            return -1;
        if (rename(partial, ptx) != 0) {
            snprintf(err, errlen, "probe %s: cannot write %s: %s", arg, ptx, strerror(errno));
            unlink(partial);
            return -1;
        }
    } else if (verbose) {
        fprintf(stderr, "mgpu-run: probe %s compiled before: %s\n", arg, ptx);
    }
    return check_ptx(ptx, arg, err, errlen);
}
