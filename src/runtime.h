/* The runtime inside the program: started once by the libcuda.so.1 shim,
 * it reads the configuration, loads the real driver, binds the hooks, and at
 * exit writes the report and the trace. */
#ifndef MGPU_RUNTIME_H
#define MGPU_RUNTIME_H

#include "config.h"

#define MGPU_EXPORT __attribute__((visibility("default")))

extern struct mgpu_config mgpu_cfg;

/* Starts the runtime; later calls return at once. shim_path is the shim's own
 * file, which the search for the real driver skips. */
MGPU_EXPORT void mgpu_runtime_start(const char *shim_path);

/* What the shim's export `name` should jump to: mgpu's hook, else the
 * driver's entry point, else NULL when the driver lacks the symbol. */
MGPU_EXPORT void *mgpu_runtime_resolve_export(const char *name);

#endif
