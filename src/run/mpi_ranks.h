/* Which MPI rank this process is, as the launchers tell it in the
 * environment (issue 22): Open MPI (OMPI_COMM_WORLD_*), MPICH and Intel
 * MPI's Hydra (MPI_LOCALRANKID, MPI_LOCALNRANKS, PMI_RANK, PMI_SIZE), PMIx
 * (PMIX_LOCAL_RANK, PMIX_LOCAL_SIZE, PMIX_RANK) and Slurm's srun
 * (SLURM_LOCALID, SLURM_TASKS_PER_NODE with SLURM_NODEID, SLURM_PROCID,
 * SLURM_NTASKS), looked for in that order. */
#ifndef MGPU_MPI_RANKS_H
#define MGPU_MPI_RANKS_H

#include "base/config.h"

#include <stdbool.h>
#include <stddef.h>

struct mgpu_mpi_rank {
    bool found;
    const char *launcher;       /* "Open MPI", "Hydra", "PMIx", "Slurm" */
    int local_rank, local_size; /* on this node */
    int rank, size;             /* in the job; -1 where the launcher does not say */
};

/* Fills *out (found false when no launcher's variables are set). Returns
 * 0, or -1 with a one-line message naming the variable when one is set
 * but malformed. */
int mgpu_mpi_rank_detect(mgpu_getenv_fn get, struct mgpu_mpi_rank *out, char *err, size_t errlen);

/* Slurm's SLURM_TASKS_PER_NODE ("2(x3),1": two tasks on each of three
 * nodes, then one): the count for node `node`, or -1 when malformed or
 * out of range. */
int mgpu_slurm_tasks_on_node(const char *tasks_per_node, int node);

#endif
