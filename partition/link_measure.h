/* The copy bandwidth between the run's devices, measured once with the
 * driver (issue 19's cost model: link_model.h): for each ordered pair, the
 * best of three 64 MiB copies from the first device's memory into the
 * second's, timed with events in the second's primary context; for a
 * device with itself, a copy within it. The sources are filled with a set
 * in each device's own non-blocking stream, except on the first device
 * where it is busy (the home GPU, running the program's kernels): there
 * no kernel runs, and nothing waits for the program's streams; its
 * source is filled by another device's copy engine, and another device
 * of the same name stands for its copies within itself (a copy within a
 * device is a kernel, which would wait behind the program's). Alone, the
 * home GPU fills its own (nothing else can). */
#ifndef MGPU_LINK_MEASURE_H
#define MGPU_LINK_MEASURE_H

#include "base/config.h"

#include <stdatomic.h>
#include <stdbool.h>
#include <stddef.h>

#define MGPU_LINK_MEASURE_BYTES ((size_t)64 << 20)

/* gbps[a][b] for devices[a] to devices[b] (n of them; CUDA device
 * indices), first_busy where devices[0] runs the program's kernels.
 * mgpu_drv must be loaded and initialised. Returns 0, or -1
 * with a one-line message. With keep_memory the 2 x 64 MiB per device it
 * copied are not freed until mgpu_link_measure_release: cuMemFree waits
 * for every stream of the device, and a measurement made inside a
 * program's launch must not wait for the program's queued work. With
 * `stop` (NULL: none), the measurement gives up, -1, once it reads true
 * between two copies: a thread measuring while the program exits. */
int mgpu_link_measure(const int *devices, int n, bool first_busy, bool keep_memory,
                      const atomic_bool *stop, double gbps[][MGPU_MAX_GPUS], char *err,
                      size_t errlen);

/* Frees what measurements kept (waits for the devices, as cuMemFree does):
 * at the end of the run. */
void mgpu_link_measure_release(void);

#endif
