/* What NVML says about this machine, as plain data: how many GPUs, whether
 * one is in MIG mode, and, where asked, each GPU's bus id, name and memory
 * in bus order and each pair's peer access, NVLink and native atomics.
 * mgpu-run decides from it without the CUDA driver (topology_nvml.c) and
 * keeps it between runs (src/run/machine_cache.c): asking NVML took 45 ms
 * for a --gpus list and 105 ms for -n 4 on 4 x H200, the answers change
 * only with the machine. A text form for that keeping, read back with
 * every field checked. */
#ifndef MGPU_NVML_ANSWERS_H
#define MGPU_NVML_ANSWERS_H

#include "partition/nvml_library.h"
#include "partition/topology.h"

#include <stdbool.h>
#include <stddef.h>

struct mgpu_nvml_answer_gpu {
    char bus_id[MGPU_BUS_ID_LEN];    /* normalised, "0000:3b:00.0" */
    char name[96];                   /* empty when NVML does not name it */
    unsigned long long memory_bytes; /* 0 when unknown */
};

struct mgpu_nvml_answers {
    int count;     /* NVML's GPUs, 1 to MGPU_TOPOLOGY_MAX_GPUS */
    int mig_gpu;   /* the first GPU in MIG mode or unreadable, -1 none */
    bool has_gpus; /* gpus, pairs_known and the matrices below were read */
    struct mgpu_nvml_answer_gpu gpus[MGPU_TOPOLOGY_MAX_GPUS]; /* in bus order */
    /* NVML answered for every pair asked; where NVLink joins every pair
     * only that was asked, once per pair, and the others follow from it. */
    bool pairs_known;
    bool peer[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    bool nvlink[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
    bool atomics[MGPU_TOPOLOGY_MAX_GPUS][MGPU_TOPOLOGY_MAX_GPUS];
};

/* Asks an open NVML: the count and MIG modes, and with_gpus the GPUs and
 * their pairs. Returns 0, or -1 with a one-line reason where NVML counts
 * no GPU or more than mgpu takes, or cannot read a GPU's bus id. */
int mgpu_nvml_answers_read(const struct mgpu_nvml *nvml, bool with_gpus,
                           struct mgpu_nvml_answers *a, char *why, size_t whylen);

/* This machine's topology from the answers (with the GPUs read): the GPUs
 * in bus order, their links, their places read now (hwloc, or sysfs where
 * they are alike). Returns -1 with a one-line reason where NVML cannot
 * stand for the driver: GPUs that differ (the driver may order them
 * otherwise, unless CUDA_DEVICE_ORDER=PCI_BUS_ID), a pair NVML did not
 * answer for. Defined in topology_nvml.c. */
int mgpu_topology_from_nvml_answers(struct mgpu_topology *t, const struct mgpu_nvml_answers *a,
                                    char *err, size_t errlen);

/* The text form: a few lines of "word values", ending in "end". Returns 0,
 * or -1 where the buffer is too small. */
int mgpu_nvml_answers_format(const struct mgpu_nvml_answers *a, char *out, size_t outlen);

/* Reads the text form back (text need not end in a NUL). Returns 0, or -1
 * with a one-line reason for anything out of place: a wrong first line, a
 * count out of range, a bus id that is not one, a matrix row of the wrong
 * length, a missing "end". */
int mgpu_nvml_answers_parse(const char *text, size_t len, struct mgpu_nvml_answers *a, char *why,
                            size_t whylen);

#endif
