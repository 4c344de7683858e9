/* Whether the program itself uses NCCL, whose kernels and copies write its
 * buffers without passing mgpu's hooks (mirrors must then stay off). Seen
 * through MGPU_NCCL_SEEN, one character of the process's environment that
 * mgpu-run sets to "0" and its audit module (src/shim/mgpu_audit.c), which
 * runs in the dynamic loader's own namespace, turns to 'w' when it starts
 * watching and to '1' when a library other than mgpu's makes a communicator
 * with a libnccl* (ncclCommInitRank, ...InitRankConfig, ...InitAll,
 * ...InitRankScalable, found through the PLT or dlsym), at whatever time
 * the program does. A program that links NCCL and never makes a
 * communicator (PyTorch in one process) keeps its mirrors. Thread-safe; a
 * check is one load. */
#ifndef MGPU_NCCL_WATCH_H
#define MGPU_NCCL_WATCH_H

#include <stdbool.h>

/* Whether the audit module watches this process (mgpu-run with its audit,
 * the default; not MGPU_AUDIT=0 or a run without mgpu-run). */
bool mgpu_nccl_watched(void);

/* Whether, as the audit module saw, the program has made an NCCL
 * communicator; false when nothing watches. */
bool mgpu_nccl_bound_by_program(void);

#endif
