/* Unit tests of reading the MPI launchers' environment (src/run/mpi_ranks.c):
 * Open MPI, Hydra, PMIx and Slurm's variables, their order, Slurm's
 * tasks-per-node lists, and one-line errors for malformed values. */
#include "check.h"
#include "src/run/mpi_ranks.h"

#include <string.h>

static const char *const *current;

static const char *fake_getenv(const char *name)
{
    for (const char *const *p = current; p && p[0]; p += 2)
        if (strcmp(p[0], name) == 0)
            return p[1];
    return NULL;
}

static int detect(const char *const *env, struct mgpu_mpi_rank *r, char *err, size_t n)
{
    current = env;
    err[0] = '\0';
    return mgpu_mpi_rank_detect(fake_getenv, r, err, n);
}

int main(void)
{
    struct mgpu_mpi_rank r;
    char err[256];

    const char *const none[] = {"HOME", "/root", NULL};
    CHECK(detect(none, &r, err, sizeof err) == 0 && !r.found);

    const char *const ompi[] = {"OMPI_COMM_WORLD_LOCAL_RANK",
                                "1",
                                "OMPI_COMM_WORLD_LOCAL_SIZE",
                                "4",
                                "OMPI_COMM_WORLD_RANK",
                                "5",
                                "OMPI_COMM_WORLD_SIZE",
                                "8",
                                "PMIX_LOCAL_RANK",
                                "3",
                                "PMIX_LOCAL_SIZE",
                                "4",
                                NULL};
    CHECK(detect(ompi, &r, err, sizeof err) == 0 && r.found);
    CHECK_STR(r.launcher, "Open MPI"); /* before PMIx, which Open MPI also sets */
    CHECK(r.local_rank == 1 && r.local_size == 4 && r.rank == 5 && r.size == 8);

    const char *const hydra[] = {
        "MPI_LOCALRANKID", "0", "MPI_LOCALNRANKS", "2", "PMI_RANK", "6", NULL};
    CHECK(detect(hydra, &r, err, sizeof err) == 0 && r.found);
    CHECK_STR(r.launcher, "Hydra");
    CHECK(r.local_rank == 0 && r.local_size == 2 && r.rank == 6 && r.size == -1);

    const char *const pmix[] = {
        "PMIX_LOCAL_RANK", "2", "PMIX_LOCAL_SIZE", "3", "PMIX_RANK", "2", NULL};
    CHECK(detect(pmix, &r, err, sizeof err) == 0 && r.found);
    CHECK_STR(r.launcher, "PMIx");
    CHECK(r.local_rank == 2 && r.local_size == 3);

    /* srun: 2 tasks on each of nodes 0-2, 1 on node 3; this is node 1. */
    const char *const slurm[] = {"SLURM_LOCALID",
                                 "1",
                                 "SLURM_TASKS_PER_NODE",
                                 "2(x3),1",
                                 "SLURM_NODEID",
                                 "1",
                                 "SLURM_PROCID",
                                 "3",
                                 "SLURM_NTASKS",
                                 "7",
                                 NULL};
    CHECK(detect(slurm, &r, err, sizeof err) == 0 && r.found);
    CHECK_STR(r.launcher, "Slurm");
    CHECK(r.local_rank == 1 && r.local_size == 2 && r.rank == 3 && r.size == 7);
    CHECK(mgpu_slurm_tasks_on_node("2(x3),1", 3) == 1);
    CHECK(mgpu_slurm_tasks_on_node("4", 0) == 4);
    CHECK(mgpu_slurm_tasks_on_node("2(x3),1", 4) == -1);
    CHECK(mgpu_slurm_tasks_on_node("2(x0)", 0) == -1);
    CHECK(mgpu_slurm_tasks_on_node("2(x3", 0) == -1);
    CHECK(mgpu_slurm_tasks_on_node("", 0) == -1);
    CHECK(mgpu_slurm_tasks_on_node("a", 0) == -1);

    const char *const bad[] = {"OMPI_COMM_WORLD_LOCAL_RANK", "one", "OMPI_COMM_WORLD_LOCAL_SIZE",
                               "4", NULL};
    CHECK(detect(bad, &r, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "OMPI_COMM_WORLD_LOCAL_RANK=one is not a rank or count");
    const char *const zero[] = {"MPI_LOCALRANKID", "0", "MPI_LOCALNRANKS", "0", NULL};
    CHECK(detect(zero, &r, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "MPI_LOCALNRANKS=0");
    const char *const past[] = {"PMIX_LOCAL_RANK", "4", "PMIX_LOCAL_SIZE", "4", NULL};
    CHECK(detect(past, &r, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "PMIx says local rank 4 of 4 ranks on this node");
    const char *const slurm_bad[] = {"SLURM_LOCALID", "0", "SLURM_TASKS_PER_NODE", "x", NULL};
    CHECK(detect(slurm_bad, &r, err, sizeof err) == -1);
    CHECK_CONTAINS(err, "SLURM_TASKS_PER_NODE=x");
    CHECK_DONE();
}
