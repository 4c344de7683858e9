/* What mgpu spends starting up, by phase, for -v and the report. A phase's
 * time adds up over the run (another module's rewritten modules, the contexts of
 * another home context), measured on the thread that spent it; today all
 * of it lies on the program's critical path. The launcher's own time
 * before it ran the program comes from mgpu-run (MGPU_LAUNCHER_NS). */
#ifndef MGPU_STARTUP_TIMES_H
#define MGPU_STARTUP_TIMES_H

#include <stddef.h>

enum mgpu_startup_phase {
    MGPU_STARTUP_DRIVER,      /* the program's cuInit, through mgpu */
    MGPU_STARTUP_LIBRARY,     /* libmgpu's own start: settings, the driver's library, probes */
    MGPU_STARTUP_POOL,        /* the pool's contexts and address range */
    MGPU_STARTUP_CONTEXTS,    /* the other GPUs' primary contexts */
    MGPU_STARTUP_PEER_ACCESS, /* peer access between the run's devices */
    MGPU_STARTUP_MODULES,     /* rewriting and loading the rewritten modules */
    MGPU_STARTUP_LINKS,       /* measuring the links for the cost model */
    MGPU_STARTUP_NCCL,        /* NCCL's communicator for the mirrors */
    MGPU_STARTUP_PHASES
};

/* Adds `ns` nanoseconds to `phase`. Thread-safe. */
void mgpu_startup_add(enum mgpu_startup_phase phase, long long ns);

/* One line for the report and -v: "start-up: 112.3 ms in mgpu (launcher
 * 20.1, pool 2.2, ...); the driver's own initialisation 300.0 ms", phases
 * that took no time left out (the driver's initialisation is the
 * program's, so not in mgpu's total); returns 0, with line empty, when
 * nothing was measured. */
size_t mgpu_startup_describe(char *line, size_t len);

#endif
