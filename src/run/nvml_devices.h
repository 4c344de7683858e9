/* The machine's GPU count as NVML sees it, for mgpu-run to check a request
 * without initialising the CUDA driver: cuInit took 185 ms on one H100, and
 * the program initialises the driver again itself. */
#ifndef MGPU_NVML_DEVICES_H
#define MGPU_NVML_DEVICES_H

#include <stddef.h>

/* The number of GPUs when NVML (libnvidia-ml.so.1, opened with dlopen)
 * answers and every GPU is one CUDA device (none in MIG mode), else -1
 * with the reason in why. */
int mgpu_nvml_device_count(char *why, size_t whylen);

#endif
