/* Owns keeping NVML's answers about this machine between runs of mgpu-run
 * (see machine_cache.h): the key, and the file "nvml-answers" in mgpu's
 * cache directory, "key HEX" then the answers' text form. */
#include <build_config.h>

#include "src/run/machine_cache.h"

#include "base/byte_hash.h"
#include "base/cache_dir.h"
#include "base/read_file.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CACHE_FILE "nvml-answers"
/* 64 GPUs' lines and three 64 x 64 matrices fit in 32 KiB. */
#define CACHE_MAX (64 * 1024)
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

int mgpu_machine_cache_path(char *out, size_t len)
{
    char dir[900];
    if (mgpu_cache_dir(dir, sizeof dir) != 0)
        return -1;
    return snprintf(out, len, "%s/" CACHE_FILE, dir) < (int)len ? 0 : -1;
}

bool mgpu_machine_cache_load(const char *path, uint64_t key, bool need_gpus,
                             struct mgpu_nvml_answers *a)
{
    size_t len = 0;
    char *text = mgpu_read_file(path, CACHE_MAX - 1, &len);
    bool ok = false;
    char head[40], why[160];
    int head_len = snprintf(head, sizeof head, "key %016" PRIx64 "\n", key);
    if (text != NULL && len > (size_t)head_len && memcmp(text, head, (size_t)head_len) == 0 &&
        mgpu_nvml_answers_parse(text + head_len, len - (size_t)head_len, a, why, sizeof why) == 0)
        ok = a->has_gpus || !need_gpus;
    free(text);
    return ok;
}

void mgpu_machine_cache_save(const char *path, uint64_t key, const struct mgpu_nvml_answers *a)
{
    char temporary[PATH_MAX + 32];
    char *text = malloc(CACHE_MAX);
    if (text == NULL)
        return;
    int head_len = snprintf(text, CACHE_MAX, "key %016" PRIx64 "\n", key);
    if (mgpu_nvml_answers_format(a, text + head_len, CACHE_MAX - (size_t)head_len) != 0) {
        free(text);
        return;
    }
    size_t len = strlen(text);
    snprintf(temporary, sizeof temporary, "%s.%ld.tmp", path, (long)getpid());
    int fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
    bool ok = fd >= 0;
    for (size_t done = 0; ok && done < len;) {
        ssize_t n = write(fd, text + done, len - done);
        ok = n > 0;
        done += ok ? (size_t)n : 0;
    }
    if (fd >= 0 && close(fd) != 0)
        ok = false;
    if (!ok || rename(temporary, path) != 0)
        unlink(temporary);
    free(text);
}
