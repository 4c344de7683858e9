/* The host's monotonic clock in nanoseconds, for the runtime's timeouts,
 * spins and host-side timings (not for GPU times, which events give). */
#ifndef MGPU_MONOTONIC_CLOCK_H
#define MGPU_MONOTONIC_CLOCK_H

#include <time.h>

static inline long long mgpu_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

#endif
