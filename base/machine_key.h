/* The key of this machine's GPUs as the kernel sees them, under which mgpu
 * keeps what it learnt about them between runs (NVML's answers,
 * src/run/machine_cache.h; the links' measured bandwidths,
 * partition/link_cache.h): it changes with the boot, the NVIDIA kernel
 * driver's version, the GPUs it lists, its MIG capabilities, the process's
 * control groups (a batch job or container that may see other GPUs) and
 * mgpu's version. Read from MGPU_PROCFS (default /proc, for the tests). */
#ifndef MGPU_MACHINE_KEY_H
#define MGPU_MACHINE_KEY_H

#include <stdint.h>

/* This machine's key. Returns 0, or -1 where the boot id or the NVIDIA
 * driver's files cannot be read (a machine without /proc/driver/nvidia
 * gets no key, and nothing is kept). */
int mgpu_machine_key(uint64_t *key);

#endif
