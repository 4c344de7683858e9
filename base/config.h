/* mgpu's settings: the MGPU_* environment variables, parsed and checked in one
 * place for both the launcher (which sets them) and the runtime (which reads
 * them inside the program). */
#ifndef MGPU_CONFIG_H
#define MGPU_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#define MGPU_MAX_GPUS 64
#define MGPU_PATH_MAX 4096

enum mgpu_sm_count_mode { MGPU_SM_COUNT_SUM, MGPU_SM_COUNT_HOME };
enum mgpu_device_count_mode { MGPU_DEVICE_COUNT_ALL, MGPU_DEVICE_COUNT_ONE };
enum mgpu_split_mode { MGPU_SPLIT_AUTO, MGPU_SPLIT_ALWAYS, MGPU_SPLIT_NEVER };
enum mgpu_memory_mode { MGPU_MEMORY_POOL, MGPU_MEMORY_DRIVER };
enum mgpu_fork_join_mode { MGPU_FORK_JOIN_FLAGS, MGPU_FORK_JOIN_EVENTS };
enum mgpu_mirror_mode { MGPU_MIRROR_NEVER, MGPU_MIRROR_ALWAYS, MGPU_MIRROR_AUTO };
/* The same order as enum mgpu_placement in partition/placement.h, then auto:
 * distributed at first, then following the kernels (sched/placement_follow.h). */
enum mgpu_placement_mode {
    MGPU_PLACEMENT_DISTRIBUTED,
    MGPU_PLACEMENT_HOME,
    MGPU_PLACEMENT_INTERLEAVE,
    MGPU_PLACEMENT_AUTO
};

struct mgpu_config {
    int ngpus;               /* MGPU_NGPUS; 0 means every GPU */
    int gpus[MGPU_MAX_GPUS]; /* MGPU_GPUS, device indices in order */
    int gpus_len;            /* 0 when MGPU_GPUS is unset */
    /* MGPU_ENTRIES, set by mgpu-run for the runtime: for each of the run's
     * GPUs in slice order, the driver device (as CUDA_VISIBLE_DEVICES
     * shows the program) it stands on; a device may stand for several. */
    int entries[MGPU_MAX_GPUS];
    int entries_len;                          /* 0: each device once */
    bool report;                              /* MGPU_REPORT */
    char trace_path[MGPU_PATH_MAX];           /* MGPU_TRACE; empty when unset */
    char topology_path[MGPU_PATH_MAX];        /* MGPU_TOPOLOGY; empty: this machine's */
    char nvml_kept[MGPU_PATH_MAX]; /* MGPU_NVML_KEPT: mgpu-run counted the GPUs from this file */
    int verbose;                              /* MGPU_VERBOSE, 0..2 */
    enum mgpu_sm_count_mode sm_count;         /* MGPU_SM_COUNT */
    bool sm_count_given;                      /* MGPU_SM_COUNT was set */
    enum mgpu_device_count_mode device_count; /* MGPU_DEVICE_COUNT */
    bool audit;                               /* MGPU_AUDIT */
    bool call_log;                            /* MGPU_CALL_LOG */
    char passthrough[1024];                   /* MGPU_PASSTHROUGH, extra library prefixes */
    enum mgpu_split_mode split;               /* MGPU_SPLIT */
    enum mgpu_fork_join_mode fork_join;       /* MGPU_FORK_JOIN */
    bool stride_fill; /* MGPU_STRIDE_BLOCKS=fill: iteration slices as many blocks as fill a GPU */
    enum mgpu_memory_mode memory;             /* MGPU_MEMORY */
    enum mgpu_placement_mode placement;       /* MGPU_PLACEMENT */
    size_t spread_min; /* MGPU_SPREAD_MIN: under auto, smaller buffers start on the home GPU */
    enum mgpu_mirror_mode mirror;             /* MGPU_MIRROR */
    bool nccl;                                /* MGPU_NCCL: refresh replicas through NCCL */
    size_t mirror_budget_bytes; /* MGPU_MIRROR_BUDGET as a size; 0: as a share */
    int mirror_budget_percent;  /* MGPU_MIRROR_BUDGET as a share of free memory */
    int rank;                   /* MGPU_RANK: the MPI rank mgpu-run found; -1: none */
    /* MGPU_PROBES: compiled probe files (PTX), comma-separated, which
     * mgpu-run makes of --probe; empty: no probes */
    char probes[4 * MGPU_PATH_MAX];
    char probe_out[MGPU_PATH_MAX]; /* MGPU_PROBE_OUT: JSON Lines of the probes' maps */
    bool blas_split;               /* MGPU_BLAS: split the program's large cuBLAS GEMMs */
    double blas_split_min;         /* MGPU_BLAS_MIN: the least m*n*k (times the batch) split */
    bool footprints; /* MGPU_FOOTPRINTS=on: the split's estimate reads slices' bytes off footprints */
    double host_blas_min; /* MGPU_HOST_BLAS_MIN: the least m*n*k of a CPU GEMM sent to the GPUs */
    /* MGPU_TRY_BUDGET: what the policies' tries may cost (base/try_budget.h) */
    double try_budget_percent; /* of the program's GPU time so far */
    double try_budget_ms;      /* besides */
    bool try_budget_off;       /* no limit */
};

/* One documented variable; the table drives `mgpu-run --help`. */
struct mgpu_env_doc {
    const char *name;
    const char *values;
    const char *meaning;
};
extern const struct mgpu_env_doc mgpu_env_docs[];

typedef const char *(*mgpu_getenv_fn)(const char *name);

void mgpu_config_defaults(struct mgpu_config *cfg);

/* Inside the program: the settings the runtime read at its start
 * (runtime.c fills it before any hook runs); the layers below it read
 * them here rather than through the runtime. */
extern struct mgpu_config mgpu_cfg;

/* Fills cfg from the variables that get() returns (getenv in real use).
 * Returns 0, or -1 with a one-line message naming the fix in err. */
int mgpu_config_parse(struct mgpu_config *cfg, mgpu_getenv_fn get, char *err, size_t errlen);

/* The pieces, for the launcher's command line too. `what` names the source of
 * the value in messages ("-n", "MGPU_NGPUS"). */
int mgpu_parse_gpu_count(const char *text, const char *what, int *out, char *err, size_t errlen);
int mgpu_parse_gpu_list(const char *text, const char *what, int *out, int max, int *len, char *err,
                        size_t errlen);
int mgpu_parse_bool(const char *text, const char *what, bool *out, char *err, size_t errlen);

#endif
