/* mgpu-run's command line. */
#ifndef MGPU_LAUNCHER_OPTIONS_H
#define MGPU_LAUNCHER_OPTIONS_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>

#define MGPU_MAX_PROBES 16

struct launcher_options {
    int ngpus;               /* -n; 0 when not given */
    int gpus[MGPU_MAX_GPUS]; /* --gpus */
    int gpus_len;
    const char *count_source; /* "-n " or "MGPU_NGPUS=", for messages */
    const char *list_source;  /* "--gpus" or "MGPU_GPUS" */
    bool report;
    bool host_blas;       /* --blas: a CPU program's large GEMMs to the GPUs */
    const char *trace;    /* NULL when not asked for */
    const char *topology; /* --topology or MGPU_TOPOLOGY; NULL: this machine's */
    int verbose;
    const char *probes[MGPU_MAX_PROBES]; /* --probe, in order */
    int nprobes;
    bool help, version;
    int program_index; /* argv index of the program; 0 when none */
};

/* Reads argv on top of the environment's settings (the command line wins).
 * Returns 0, or -1 with a one-line message in err. */
int launcher_parse(int argc, char *const argv[], const struct mgpu_config *env,
                   struct launcher_options *o, char *err, size_t errlen);

void launcher_print_help(const char *argv0);

#endif
