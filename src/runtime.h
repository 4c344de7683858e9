/* The runtime inside the program: started once by the libcuda.so.1 shim,
 * it reads the configuration, loads the real driver, binds the hooks, and at
 * exit writes the report and the trace. */
#ifndef MGPU_RUNTIME_H
#define MGPU_RUNTIME_H

#include "base/config.h" /* mgpu_cfg, which the runtime fills at its start */

#include <stdbool.h>

#define MGPU_EXPORT __attribute__((visibility("default")))

/* Starts the runtime; later calls return at once. shim_path is the shim's own
 * file, which the search for the real driver skips. */
MGPU_EXPORT void mgpu_runtime_start(const char *shim_path);

/* Whether every driver call is to be logged (MGPU_CALL_LOG=1). */
MGPU_EXPORT bool mgpu_runtime_logs_calls(void);

/* Called at the program's first successful cuInit: mgpu's end (the pool
 * given back) is registered to run after every exit handler the program
 * registers from then on. */
void mgpu_runtime_driver_initialised(void);

/* Called at the program's first launch: the report is then also registered
 * to run at exit after the CUDA runtime's own exit handlers were registered,
 * so that it runs before them, while contexts are alive. */
void mgpu_runtime_program_running(void);

/* What the shim's export `name`, at address `exported`, should jump to:
 * mgpu's hook, else the driver's entry point, else NULL when the driver
 * lacks the symbol. *driver is set to the driver's entry point (or NULL),
 * where the export jumps on a thread inside mgpu_driver_bypass. */
MGPU_EXPORT void *mgpu_runtime_resolve_export(const char *name, void *exported, void **driver);

#endif
