/* Owns reading the MPI launchers' environment (see mpi_ranks.h). */
#include "src/run/mpi_ranks.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A count or index: digits only, below 1 << 24. */
static bool parse_number(const char *text, int *out)
{
    if (text == NULL || !isdigit((unsigned char)text[0]))
        return false;
    char *end;
    errno = 0;
    long v = strtol(text, &end, 10);
    if (errno != 0 || *end != '\0' || v < 0 || v >= (1L << 24))
        return false;
    *out = (int)v;
    return true;
}

int mgpu_slurm_tasks_on_node(const char *list, int node)
{
    if (list == NULL || node < 0)
        return -1;
    const char *p = list;
    int first = 0;
    while (*p) {
        char *end;
        if (!isdigit((unsigned char)*p))
            return -1;
        long tasks = strtol(p, &end, 10);
        long repeat = 1;
        p = end;
        if (strncmp(p, "(x", 2) == 0) {
            if (!isdigit((unsigned char)p[2]))
                return -1;
            repeat = strtol(p + 2, &end, 10);
            if (*end != ')' || repeat < 1)
                return -1;
            p = end + 1;
        }
        if (tasks < 1 || tasks >= (1L << 24) || repeat >= (1L << 24))
            return -1;
        if (node < first + repeat)
            return (int)tasks;
        first += (int)repeat;
        if (*p == ',')
            p++;
        else if (*p != '\0')
            return -1;
    }
    return -1;
}

struct launcher_vars {
    const char *launcher, *local_rank, *local_size, *rank, *size;
};

static const struct launcher_vars launchers[] = {
    {"Open MPI", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_LOCAL_SIZE", "OMPI_COMM_WORLD_RANK",
     "OMPI_COMM_WORLD_SIZE"},
    {"Hydra", "MPI_LOCALRANKID", "MPI_LOCALNRANKS", "PMI_RANK", "PMI_SIZE"},
    {"PMIx", "PMIX_LOCAL_RANK", "PMIX_LOCAL_SIZE", "PMIX_RANK", NULL},
};

static int malformed(char *err, size_t errlen, const char *name, const char *value)
{
    snprintf(err, errlen,
             "%s=%s is not a rank or count; check the MPI launcher, or unset it to run as one "
             "process",
             name, value ? value : "");
    return -1;
}

/* An optional job-wide number: -1 when unset. */
static int optional(mgpu_getenv_fn get, const char *name, int *out, char *err, size_t errlen)
{
    *out = -1;
    const char *v = name ? get(name) : NULL;
    if (v == NULL || *v == '\0')
        return 0;
    return parse_number(v, out) ? 0 : malformed(err, errlen, name, v);
}

int mgpu_mpi_rank_detect(mgpu_getenv_fn get, struct mgpu_mpi_rank *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    out->rank = out->size = -1;
    for (size_t i = 0; i < sizeof launchers / sizeof launchers[0]; i++) {
        const struct launcher_vars *l = &launchers[i];
        const char *rank = get(l->local_rank), *size = get(l->local_size);
        if (rank == NULL || size == NULL)
            continue;
        if (!parse_number(rank, &out->local_rank))
            return malformed(err, errlen, l->local_rank, rank);
        if (!parse_number(size, &out->local_size) || out->local_size < 1)
            return malformed(err, errlen, l->local_size, size);
        if (optional(get, l->rank, &out->rank, err, errlen) != 0 ||
            optional(get, l->size, &out->size, err, errlen) != 0)
            return -1;
        out->launcher = l->launcher;
        out->found = true;
        break;
    }
    if (!out->found && get("SLURM_LOCALID") != NULL && get("SLURM_TASKS_PER_NODE") != NULL) {
        const char *local = get("SLURM_LOCALID"), *tasks = get("SLURM_TASKS_PER_NODE");
        const char *node_text = get("SLURM_NODEID");
        int node = 0;
        if (!parse_number(local, &out->local_rank))
            return malformed(err, errlen, "SLURM_LOCALID", local);
        if (node_text != NULL && !parse_number(node_text, &node))
            return malformed(err, errlen, "SLURM_NODEID", node_text);
        out->local_size = mgpu_slurm_tasks_on_node(tasks, node);
        if (out->local_size < 1)
            return malformed(err, errlen, "SLURM_TASKS_PER_NODE", tasks);
        if (optional(get, "SLURM_PROCID", &out->rank, err, errlen) != 0 ||
            optional(get, "SLURM_NTASKS", &out->size, err, errlen) != 0)
            return -1;
        out->launcher = "Slurm";
        out->found = true;
    }
    if (out->found && out->local_rank >= out->local_size) {
        snprintf(err, errlen, "%s says local rank %d of %d ranks on this node; check the launcher",
                 out->launcher, out->local_rank, out->local_size);
        return -1;
    }
    return 0;
}
