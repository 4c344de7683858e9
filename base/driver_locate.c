/* Finds the real libcuda.so.1 the way the loader would, minus mgpu's shim:
 * MGPU_DRIVER, then LD_LIBRARY_PATH, then the loader's cache. Reads files only;
 * loads nothing. */
#include "base/driver_locate.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <limits.h>
#include <unistd.h>

#define DRIVER_SONAME "libcuda.so.1"

struct candidate_filter {
    const char *skip;
    struct stat skip_stat;
    int have_skip;
};

/* A candidate is good when it exists and is not the shim itself (the same
 * file, however it is named). */
static int accept_candidate(const char *path, void *ctx)
{
    const struct candidate_filter *f = ctx;
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    if (f->have_skip && st.st_dev == f->skip_stat.st_dev && st.st_ino == f->skip_stat.st_ino)
        return 0;
    return 1;
}

static int copy_real_path(const char *path, char *out, size_t outlen)
{
    char resolved[PATH_MAX];
    if (realpath(path, resolved) == NULL || strlen(resolved) >= outlen)
        return -1;
    strcpy(out, resolved);
    return 0;
}

/* Layout of glibc's cache ("glibc-ld.so.cache1.1"), as ldconfig writes it. */
#define CACHE_NEW_MAGIC "glibc-ld.so.cache1.1"
struct cache_header {
    char magic[20];
    uint32_t nlibs;
    uint32_t len_strings;
    uint8_t flags;
    uint8_t pad[3];
    uint32_t extension_offset;
    uint32_t unused[3];
};
struct cache_entry {
    int32_t flags;
    uint32_t key;
    uint32_t value;
    uint32_t osversion;
    uint64_t hwcap;
};
#define CACHE_FLAG_TYPE_MASK 0x00ff
#define CACHE_FLAG_ELF_LIBC6 0x0003
#define CACHE_FLAG_ARCH_MASK 0xff00
#define CACHE_FLAG_X8664_LIB64 0x0300

int mgpu_ldcache_find(const char *cache_path, const char *soname,
                      int (*accept)(const char *path, void *ctx), void *ctx, char *out,
                      size_t outlen)
{
    int fd = open(cache_path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return -1;
    struct stat st;
    if (fstat(fd, &st) != 0 || st.st_size < (off_t)sizeof(struct cache_header)) {
        close(fd);
        return -1;
    }
    size_t size = (size_t)st.st_size;
    const char *map = mmap(NULL, size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED)
        return -1;

    /* An old-format table may precede the new one; find the new header. */
    const char *start = memmem(map, size, CACHE_NEW_MAGIC, strlen(CACHE_NEW_MAGIC));
    int found = -1;
    if (start != NULL && (size_t)(start - map) + sizeof(struct cache_header) <= size) {
        struct cache_header hdr;
        memcpy(&hdr, start, sizeof hdr);
        size_t avail = size - (size_t)(start - map);
        size_t table = sizeof hdr + (size_t)hdr.nlibs * sizeof(struct cache_entry);
        for (uint32_t i = 0; table <= avail && i < hdr.nlibs && found != 0; i++) {
            struct cache_entry e;
            memcpy(&e, start + sizeof hdr + i * sizeof e, sizeof e);
            if ((e.flags & CACHE_FLAG_TYPE_MASK) != CACHE_FLAG_ELF_LIBC6 ||
                (e.flags & CACHE_FLAG_ARCH_MASK) != CACHE_FLAG_X8664_LIB64)
                continue;
            if (e.key >= avail || e.value >= avail)
                continue;
            const char *key = start + e.key;
            const char *value = start + e.value;
            if (memchr(key, '\0', avail - e.key) == NULL ||
                memchr(value, '\0', avail - e.value) == NULL)
                continue;
            if (strcmp(key, soname) != 0 || !accept(value, ctx))
                continue;
            if (strlen(value) < outlen) {
                strcpy(out, value);
                found = 0;
            }
        }
    }
    munmap((void *)map, size);
    return found;
}

static int search_path_list(const char *list, struct candidate_filter *f, char *out, size_t outlen)
{
    if (list == NULL)
        return -1;
    const char *p = list;
    while (*p) {
        size_t n = strcspn(p, ":;");
        if (n > 0 && n < PATH_MAX - sizeof(DRIVER_SONAME) - 2) {
            char path[PATH_MAX];
            snprintf(path, sizeof path, "%.*s/%s", (int)n, p, DRIVER_SONAME);
            if (accept_candidate(path, f) && copy_real_path(path, out, outlen) == 0)
                return 0;
        }
        p += n;
        if (*p)
            p++;
    }
    return -1;
}

int mgpu_driver_locate(const char *skip, char *out, size_t outlen, char *err, size_t errlen)
{
    struct candidate_filter filter = {.skip = skip, .have_skip = 0};
    if (skip != NULL && stat(skip, &filter.skip_stat) == 0)
        filter.have_skip = 1;

    const char *forced = getenv("MGPU_DRIVER");
    if (forced != NULL && *forced != '\0') {
        if (accept_candidate(forced, &filter) && copy_real_path(forced, out, outlen) == 0)
            return 0;
        snprintf(
            err, errlen,
            "MGPU_DRIVER=%s is not the CUDA driver library; unset it or point it at libcuda.so.1",
            forced);
        return -1;
    }
    if (search_path_list(getenv("LD_LIBRARY_PATH"), &filter, out, outlen) == 0)
        return 0;
    char cached[PATH_MAX];
    if (mgpu_ldcache_find("/etc/ld.so.cache", DRIVER_SONAME, accept_candidate, &filter, cached,
                          sizeof cached) == 0 &&
        copy_real_path(cached, out, outlen) == 0)
        return 0;
    snprintf(err, errlen,
             "no NVIDIA driver found (libcuda.so.1 is not in LD_LIBRARY_PATH or the loader cache); "
             "install the NVIDIA driver or set MGPU_DRIVER=/path/to/libcuda.so.1");
    return -1;
}
