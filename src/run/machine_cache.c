/* Owns keeping NVML's answers about this machine between runs of mgpu-run
 * (see machine_cache.h): the file "nvml-answers" in mgpu's
 * cache directory, "key HEX" then the answers' text form. */
#include <build_config.h>

#include "src/run/machine_cache.h"

#include "base/cache_dir.h"
#include "base/file_replace.h"
#include "base/read_file.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CACHE_FILE "nvml-answers"
/* 64 GPUs' lines and three 64 x 64 matrices fit in 32 KiB. */
#define CACHE_MAX (64 * 1024)

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
    char *text = malloc(CACHE_MAX);
    if (text == NULL)
        return;
    int head_len = snprintf(text, CACHE_MAX, "key %016" PRIx64 "\n", key);
    if (mgpu_nvml_answers_format(a, text + head_len, CACHE_MAX - (size_t)head_len) != 0) {
        free(text);
        return;
    }
    mgpu_file_replace(path, text, strlen(text));
    free(text);
}
