/* The host's monotonic clock in nanoseconds, for the runtime's timeouts,
 * spins and host-side timings (not for GPU times, which events give); and
 * the deadline of a bounded wait on a condition variable. */
#ifndef MGPU_MONOTONIC_CLOCK_H
#define MGPU_MONOTONIC_CLOCK_H

#include <time.h>

static inline long long mgpu_monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* Milliseconds since `begin_ns`, a reading of mgpu_monotonic_ns. */
static inline double mgpu_ms_since(long long begin_ns)
{
    return (double)(mgpu_monotonic_ns() - begin_ns) * 1e-6;
}

/* `ms` milliseconds from now on CLOCK_REALTIME, the clock of
 * pthread_cond_timedwait on a condition variable made with the defaults. */
static inline struct timespec mgpu_deadline_in_ms(unsigned ms)
{
    struct timespec t;
    clock_gettime(CLOCK_REALTIME, &t);
    t.tv_sec += ms / 1000;
    t.tv_nsec += (long)(ms % 1000) * 1000000L;
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

#endif
