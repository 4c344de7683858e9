/* The GPUs' clocks against the host's: what mgpu_global_ns() in a probe
 * adds to the GPU's global timer, and how fast the multiprocessors count
 * cycles, measured once per GPU of the run when its first probed module
 * loads. */
#ifndef MGPU_PROBE_CLOCK_H
#define MGPU_PROBE_CLOCK_H

#include <cuda.h>
#include <stdint.h>

struct mgpu_probe_clock {
    int64_t offset_ns;       /* global timer minus host CLOCK_MONOTONIC */
    uint64_t error_ns;       /* half the shortest round trip: the offset's uncertainty */
    double cycles_per_ns;    /* of the multiprocessors' clock64, while a kernel spins */
    uint64_t timer_step_ns;  /* the smallest step of the global timer seen */
};

/* Measures the clocks of the current context's GPU with a few tiny
 * kernels. Returns CUDA_SUCCESS or the first driver error. */
CUresult mgpu_probe_clock_measure(struct mgpu_probe_clock *clock);

#endif
