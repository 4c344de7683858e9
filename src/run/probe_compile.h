/* mgpu-run's --probe: a built-in tool's name, a CUDA C probe file or a
 * probe compiled to PTX beforehand, made into a checked PTX file for the
 * runtime (MGPU_PROBES). */
#ifndef MGPU_PROBE_COMPILE_H
#define MGPU_PROBE_COMPILE_H

#include <stddef.h>

/* The built-in tools, shipped as CUDA C sources. */
extern const char *const mgpu_builtin_probes[];

/* Makes `arg` a PTX file: NAME (a built-in tool, from MGPU_PROBE_DIR or
 * the installed sources), FILE.cu (compiled with the toolkit's nvcc into
 * mgpu's cache, reused while the source and mgpu/probe.h are unchanged) or
 * FILE.ptx (taken as it is). The PTX is checked for probes. Writes its
 * path to `ptx`. Returns 0, or -1 with a one-line message in err that
 * names the file and the fix. */
int mgpu_probe_prepare(const char *arg, int verbose, char *ptx, size_t ptx_len, char *err,
                       size_t errlen);

#endif
