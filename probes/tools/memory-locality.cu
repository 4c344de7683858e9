// memory-locality: for sampled global loads and stores (one in 16 of each
// thread's, in one block in 8),
// where the address lies: in the executing GPU's own pages of mgpu's pool,
// in another GPU's (which), in a replica, or outside the pool; per kernel
// and per kernel parameter the access reaches. A split launch whose slices
// read mostly other GPUs' pages is paying NVLink for what placement could
// make local.
// Cost, in the sampled blocks: before every global access, a count and a
// branch; at one access in 16 of each thread (each warp at its own phase),
// a call, a look-up in the page map and one atomic per warp. The other
// blocks run the kernel's own code. A call that may come between two loads
// keeps the compiler from issuing them together: in every block, even an
// empty probe made reduction 1.9x slower. Copy this file and change 16 or
// 8 to sample more or fewer.
//
//   mgpu-run --gpus 0,0,0,0 --probe memory-locality ./vector_add
//   MGPU_PLACEMENT=interleave mgpu-run --gpus 0,0,0,0 --probe memory-locality ./vector_add
#include <mgpu/probe.h>

#define KERNELS 64       // kernel ids past this share the last row
#define SLOTS 17         // no parameter named, then parameters 0 to 15
#define CLASSES (2 + 64) // outside the pool, a replica, then each owning GPU
#define COPIES                                                                                     \
    8 // of the counts, by multiprocessor, so that warps
      // counting one kind of access do not all hit one word
#define ML_OUTSIDE 0
#define ML_REPLICA 1

// [((copy * KERNELS + kernel) * SLOTS + slot) * CLASSES + class]
MGPU_PROBE_ARRAY(ml_counts, COPIES *KERNELS *SLOTS *CLASSES);

MGPU_PROBE_ACCESS_SAMPLED_BLOCKS(memory_locality, "*", 16, 8)
{
    int owner = mgpu_address_owner(mgpu_access_address());
    unsigned where = owner >= 0                    ? 2 + (unsigned)owner % 64
                     : owner == MGPU_OWNER_REPLICA ? ML_REPLICA
                                                   : ML_OUTSIDE;
    int param = mgpu_access_param();
    unsigned slot = param >= 0 && param < SLOTS - 1 ? (unsigned)param + 1 : 0;
    unsigned kernel = mgpu_kernel_id() < KERNELS ? mgpu_kernel_id() : KERNELS - 1;
    unsigned index = ((mgpu_sm_id() % COPIES * KERNELS + kernel) * SLOTS + slot) * CLASSES + where;
    // One atomic per warp and word: the threads at one access mostly agree.
    // Per thread, and all in one copy, they made jacobi2d 50x and 2.7x slower.
    unsigned peers = __match_any_sync(__activemask(), index);
    unsigned lane;
    asm("mov.u32 %0, %%laneid;" : "=r"(lane));
    if (lane == __ffs(peers) - 1)
        mgpu_array_add(ml_counts, index, __popc(peers));
}
