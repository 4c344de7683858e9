/* NVML's answers about this machine (partition/nvml_answers.h) kept between
 * runs of mgpu-run, in mgpu's cache directory (base/cache_dir.h), so that a
 * run after the first asks NVML nothing: on 4 x H200 asking took 45 ms for
 * a --gpus list and 105 ms for -n 4, the whole of the launcher's time. The
 * answers are kept under a key of what changes when the machine's GPUs
 * can: the boot, the NVIDIA kernel driver's version, the GPUs it lists,
 * its MIG capabilities, and the process's control groups, which tell a
 * batch job or container that may see other GPUs (read from MGPU_PROCFS,
 * default /proc, for the tests). A machine without /proc/driver/nvidia gets no key and keeps
 * nothing. */
#ifndef MGPU_MACHINE_CACHE_H
#define MGPU_MACHINE_CACHE_H

#include "base/machine_key.h"
#include "partition/nvml_answers.h"

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* The file the answers are kept in (in the cache directory, made if need
 * be), into out. Returns 0, or -1 where the cache directory cannot be made
 * or used. */
int mgpu_machine_cache_path(char *out, size_t len);

/* The answers kept in the file at path under key, with the GPUs where
 * need_gpus. False where none are kept, they were kept under another key,
 * lack the GPUs asked for, or the file is not what mgpu writes (it is then
 * rewritten by the next save). */
bool mgpu_machine_cache_load(const char *path, uint64_t key, bool need_gpus,
                             struct mgpu_nvml_answers *a);

/* Keeps the answers in the file at path under key, replacing what was kept
 * (written whole to a file of its own, then renamed over). Quietly nothing
 * where it cannot be written. */
void mgpu_machine_cache_save(const char *path, uint64_t key, const struct mgpu_nvml_answers *a);

#endif
