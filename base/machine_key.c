/* Owns this machine's key (see machine_key.h). */
#include <build_config.h>

#include "base/machine_key.h"

#include "base/byte_hash.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* How deep the MIG capabilities go: capabilities/gpuN/mig/giN/ciN. */
#define CAPABILITY_DEPTH 5

static const char *procfs(void)
{
    const char *p = getenv("MGPU_PROCFS");
    return p != NULL && *p ? p : "/proc";
}

/* The key folded with a small file's bytes; false where it cannot be read. */
static bool hash_file(uint64_t *h, const char *path)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return false;
    char buf[4096];
    ssize_t n;
    size_t total = 0;
    while ((n = read(fd, buf, sizeof buf)) > 0 && total < 65536) {
        *h = mgpu_byte_hash(*h, buf, (size_t)n);
        total += (size_t)n;
    }
    close(fd);
    return n >= 0 && total > 0;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The key folded with the names under dir, sorted, and depth levels below;
 * false where dir cannot be listed. */
static bool hash_names(uint64_t *h, const char *dir, int depth)
{
    DIR *d = opendir(dir);
    if (d == NULL)
        return false;
    char *names[256];
    int count = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL && count < 256;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0 &&
            (names[count] = strdup(e->d_name)) != NULL)
            count++;
    closedir(d);
    qsort(names, (size_t)count, sizeof names[0], by_name);
    for (int i = 0; i < count; i++) {
        *h = mgpu_byte_hash(*h, names[i], strlen(names[i]) + 1);
        char path[1024];
        if (depth > 1 && snprintf(path, sizeof path, "%s/%s", dir, names[i]) < (int)sizeof path)
            hash_names(h, path, depth - 1); /* a file lists nothing */
        free(names[i]);
    }
    *h = mgpu_byte_hash(*h, "/", 1);
    return true;
}

int mgpu_machine_key(uint64_t *key)
{
    char path[1024];
    uint64_t h = MGPU_BYTE_HASH_START;
    const char *root = procfs();
    snprintf(path, sizeof path, "%s/sys/kernel/random/boot_id", root);
    if (!hash_file(&h, path))
        return -1;
    snprintf(path, sizeof path, "%s/driver/nvidia/version", root);
    if (!hash_file(&h, path))
        return -1;
    snprintf(path, sizeof path, "%s/driver/nvidia/gpus", root);
    if (!hash_names(&h, path, 1))
        return -1;
    /* Absent where the driver has no MIG capabilities. */
    snprintf(path, sizeof path, "%s/driver/nvidia/capabilities", root);
    hash_names(&h, path, CAPABILITY_DEPTH);
    /* The process's control groups: jobs of a batch system or containers
     * on one node may see different GPUs through NVML while sharing a
     * home directory; each group keeps its own answers. */
    snprintf(path, sizeof path, "%s/self/cgroup", root);
    hash_file(&h, path);
    /* Another mgpu's file is another key. */
    h = mgpu_byte_hash(h, PACKAGE_VERSION, sizeof PACKAGE_VERSION);
    *key = h;
    return 0;
}
