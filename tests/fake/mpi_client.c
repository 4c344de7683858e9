/* An MPI program that moves device memory between its ranks, as HPC codes
 * do, for mpirun ... mgpu-run (issue 22): each rank fills a buffer of
 * device memory (spread over its GPUs under mgpu) with its own words and
 * passes it round a ring through host memory (MPI_Sendrecv); through
 * device pointers too where the MPI is CUDA-aware; then rank 0 hands every
 * other rank an IPC handle of its buffer (MPI_Bcast), which they open and
 * read, as a CUDA-aware MPI does within a node. Every word is checked.
 * Prints "mpi_client: rank R of N: right bytes (ring, IPC)" per rank and
 * exits 0, or one line naming what failed and exits 1 (the job aborts). */
#include <cuda.h>
#include <mpi.h>
#if defined(OPEN_MPI) && OPEN_MPI
#include <mpi-ext.h>
#endif
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WORDS (3u << 18) /* 3 MiB of unsigned: over a 2 MiB granule */

static int rank, ranks;

static void check(const char *what, CUresult r)
{
    if (r == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    cuGetErrorName(r, &name);
    printf("mpi_client: rank %d: %s returned %s\n", rank, what, name ? name : "an error");
    fflush(stdout);
    MPI_Abort(MPI_COMM_WORLD, 1);
}

static unsigned word(unsigned i, int owner)
{
    return i * 2654435761u + (unsigned)owner * 7919u + 1u;
}

static void expect(const char *what, const unsigned *p, int owner)
{
    for (unsigned i = 0; i < WORDS; i++)
        if (p[i] != word(i, owner)) {
            printf("mpi_client: rank %d: %s: word %u is %u, not rank %d's %u\n", rank, what, i,
                   p[i], owner, word(i, owner));
            fflush(stdout);
            MPI_Abort(MPI_COMM_WORLD, 1);
        }
}

/* Whether this MPI takes device pointers. */
static bool cuda_aware(void)
{
#if defined(MPIX_CUDA_AWARE_SUPPORT) && MPIX_CUDA_AWARE_SUPPORT
    return MPIX_Query_cuda_support() == 1;
#else
    return false;
#endif
}

int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &ranks);
    CUdevice dev;
    CUcontext ctx;
    check("cuInit", cuInit(0));
    check("cuDeviceGet", cuDeviceGet(&dev, 0));
    check("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&ctx, dev));
    check("cuCtxSetCurrent", cuCtxSetCurrent(ctx));
    size_t bytes = WORDS * sizeof(unsigned);
    unsigned *mine = malloc(bytes), *theirs = malloc(bytes);
    CUdeviceptr buffer, received;
    check("cuMemAlloc", cuMemAlloc(&buffer, bytes));
    check("cuMemAlloc", cuMemAlloc(&received, bytes));
    for (unsigned i = 0; i < WORDS; i++)
        mine[i] = word(i, rank);
    check("cuMemcpyHtoD", cuMemcpyHtoD(buffer, mine, bytes));

    /* The ring through host memory. */
    int next = (rank + 1) % ranks, previous = (rank + ranks - 1) % ranks;
    check("cuMemcpyDtoH", cuMemcpyDtoH(mine, buffer, bytes));
    MPI_Sendrecv(mine, (int)WORDS, MPI_UNSIGNED, next, 0, theirs, (int)WORDS, MPI_UNSIGNED,
                 previous, 0, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
    check("cuMemcpyHtoD", cuMemcpyHtoD(received, theirs, bytes));
    memset(theirs, 0, bytes);
    check("cuMemcpyDtoH", cuMemcpyDtoH(theirs, received, bytes));
    expect("the ring through host memory", theirs, previous);

    /* The same through device pointers, where the MPI takes them. */
    bool aware = cuda_aware();
    if (aware) {
        check("cuMemsetD32", cuMemsetD32(received, 0, WORDS));
        MPI_Sendrecv((void *)buffer, (int)WORDS, MPI_UNSIGNED, next, 1, (void *)received,
                     (int)WORDS, MPI_UNSIGNED, previous, 1, MPI_COMM_WORLD, MPI_STATUS_IGNORE);
        check("cuMemcpyDtoH", cuMemcpyDtoH(theirs, received, bytes));
        expect("the ring through device pointers (CUDA-aware MPI)", theirs, previous);
    }

    /* Rank 0's buffer opened by every other rank through an IPC handle
     * (MPI_CLIENT_IPC=0 leaves it out: the fake GPU has no IPC of plain
     * allocations, which a rank of one GPU makes). */
    const char *ipc_env = getenv("MPI_CLIENT_IPC");
    bool ipc = ipc_env == NULL || strcmp(ipc_env, "0") != 0;
    CUipcMemHandle handle;
    memset(&handle, 0, sizeof handle);
    if (ipc && rank == 0)
        check("cuIpcGetMemHandle", cuIpcGetMemHandle(&handle, buffer));
    MPI_Bcast(&handle, (int)sizeof handle, MPI_BYTE, 0, MPI_COMM_WORLD);
    if (ipc && rank != 0) {
        CUdeviceptr opened;
        check("cuIpcOpenMemHandle",
              cuIpcOpenMemHandle(&opened, handle, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
        check("cuMemcpyDtoH", cuMemcpyDtoH(theirs, opened, bytes));
        expect("rank 0's buffer through its IPC handle", theirs, 0);
        check("cuIpcCloseMemHandle", cuIpcCloseMemHandle(opened));
    }
    MPI_Barrier(MPI_COMM_WORLD); /* rank 0's buffer lives until all have read it */
    printf("mpi_client: rank %d of %d: right bytes (ring%s%s)\n", rank, ranks,
           aware ? ", ring through device pointers" : "", ipc ? ", IPC" : "");
    cuMemFree(buffer);
    cuMemFree(received);
    free(mine);
    free(theirs);
    MPI_Finalize();
    return 0;
}
