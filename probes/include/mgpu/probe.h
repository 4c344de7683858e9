/* mgpu/probe.h: the API of mgpu's injected per-GPU probes.
 *
 * A probe is a CUDA C device function that mgpu calls at the entry or at
 * the exit of the program's kernels, in every GPU's rewritten module.
 * Write it in a .cu file that includes this header and run the program
 * with `mgpu-run --probe FILE.cu ./app`: mgpu compiles it to PTX with the
 * toolkit's nvcc, links it into every rewritten module and inserts the calls.
 *
 *     #include <mgpu/probe.h>
 *
 *     MGPU_PROBE_COUNTER(blocks);                 // one counter per GPU
 *
 *     MGPU_PROBE_BLOCK_ENTRY(count_blocks, "*saxpy*")  // once per block of
 *     {                                                // every kernel matching
 *         mgpu_counter_add(blocks, 1);
 *     }
 *
 * At exit mgpu prints each map (per GPU) in the report and writes them to
 * MGPU_PROBE_OUT as JSON Lines.
 *
 * The glob matches the kernel's mangled or demangled name (fnmatch), so
 * "*" attaches to every kernel, "vector_add" to the extern "C" kernel of
 * that name and "*sgemm*" to any C++ kernel whose name holds sgemm.
 *
 * Everything here is inline; nothing needs linking. The names starting
 * with __mgpu are mgpu's: mgpu defines the symbols the helpers read when it
 * injects the probe. */
#ifndef MGPU_PROBE_H
#define MGPU_PROBE_H

#ifndef __CUDACC__
#error "mgpu/probe.h is for probes written in CUDA C: compile them with nvcc (mgpu-run does)"
#endif

/* ---- Attaching -------------------------------------------------------- */

/* A probe called by every thread of the matching kernels as it enters the
 * kernel, before the kernel does anything a probe could see: after its
 * opening reads of parameters and special registers and the arithmetic on
 * them, which ptxas then schedules with the probe's test (at the very
 * start, an empty block-entry probe cost a kernel of 1-microsecond blocks
 * twice as much), before its first memory access, branch or barrier.
 *     MGPU_PROBE_ENTRY(on_entry, "*") { if (mgpu_thread_index() % 32 == 0) ... } */
#define MGPU_PROBE_ENTRY(probe, glob) MGPU_PROBE_AT_("entry:" glob, probe)
/* A probe called by every thread as it leaves the kernel: before each of
 * the kernel's `ret` and `exit` instructions.
 *     MGPU_PROBE_EXIT(on_exit, "jacobi*") { if (mgpu_block_edge()) ... } */
#define MGPU_PROBE_EXIT(probe, glob) MGPU_PROBE_AT_("exit:" glob, probe)
/* Probes called once per block: by thread (0, 0, 0) as the block starts,
 * or by the block's last thread to leave, as it ends. The other threads
 * skip the call, so a block-level probe costs a kernel of small blocks far
 * less than a probe every thread calls; mgpu_block_edge() is true in it.
 *     MGPU_PROBE_BLOCK_EXIT(block_done, "*") { mgpu_counter_add(blocks_done, 1); } */
#define MGPU_PROBE_BLOCK_ENTRY(probe, glob) MGPU_PROBE_AT_("block-entry:" glob, probe)
#define MGPU_PROBE_BLOCK_EXIT(probe, glob) MGPU_PROBE_AT_("block-exit:" glob, probe)
/* A probe called as threads leave, once for each warp's threads that leave
 * together (by the lowest of them). It needs neither the count of the
 * block's threads nor the barrier at entry that exit and block-exit probes
 * bring, but it runs once per warp: a global atomic in it costs eight
 * times what one in a block-exit probe of a 256-thread block does, and
 * atomics on one word serialise. mgpu_block_edge() is true in it only for
 * the warp that completes the block, and only when the kernel also has
 * exit or block-exit probes.
 *     MGPU_PROBE_WARP_EXIT(warp_done, "*") { mgpu_array_add(warps_per_sm, mgpu_sm_id(), 1); } */
#define MGPU_PROBE_WARP_EXIT(probe, glob) MGPU_PROBE_AT_("warp-exit:" glob, probe)

/* Memory probes: called by each thread before each of the kernel's
 * accesses to global memory (ld, ldu, st, atom, red of the global space, or
 * generic ones whose address is global), in the kernel's own body (not in
 * functions it calls, nor cp.async copies). LOAD takes loads and atomics,
 * STORE stores and atomics, ACCESS all; mgpu_access_address() and the
 * helpers below tell the access. A probe at every access of every thread
 * makes a kernel several times slower; the _SAMPLED forms run it at one in
 * `every` (a number) of each thread's accesses, each warp counting from its
 * own phase (its index in the GPU's slice), so that every access of the
 * kernel and every part of the grid is sampled alike.
 *     MGPU_PROBE_STORE(watch, "vector_add") { if (mgpu_access_address() == x) ... }
 *     MGPU_PROBE_ACCESS_SAMPLED(where, "*", 16) { ... mgpu_address_owner(...) ... } */
#define MGPU_PROBE_LOAD(probe, glob) MGPU_PROBE_MEMORY_AT_("load:" glob, probe)
#define MGPU_PROBE_STORE(probe, glob) MGPU_PROBE_MEMORY_AT_("store:" glob, probe)
#define MGPU_PROBE_ACCESS(probe, glob) MGPU_PROBE_MEMORY_AT_("access:" glob, probe)
#define MGPU_PROBE_LOAD_SAMPLED(probe, glob, every)                                                \
    MGPU_PROBE_MEMORY_AT_("load/" #every ":" glob, probe)
#define MGPU_PROBE_STORE_SAMPLED(probe, glob, every)                                               \
    MGPU_PROBE_MEMORY_AT_("store/" #every ":" glob, probe)
#define MGPU_PROBE_ACCESS_SAMPLED(probe, glob, every)                                              \
    MGPU_PROBE_MEMORY_AT_("access/" #every ":" glob, probe)

/* Probes in sampled blocks only: each form below runs its probe in one
 * block in `blocks` (a number) of each GPU's slice, and those blocks
 * alone pay for the probes' glue: the other blocks run the kernel's own
 * code (with only the kernel's probes that run in every block). On a
 * kernel of many short blocks (vector_add: a million blocks, a nanosecond
 * of GPU time each) a block-exit probe in every block costs about 1.25x,
 * because each block counts its threads out; in one block in 32 it costs a
 * thirty-second of that. The slice's first block is always sampled, and a
 * grid of at most 4096 blocks runs the probe in every block; the others
 * are spread over the grid. Where several sampled probes attach to one
 * kernel, the smallest `blocks` holds for all of them, so count what a
 * sampled probe sees, not what it would see in every block; kernels whose
 * grid-stride loop mgpu cuts by iterations run it in every block.
 *     MGPU_PROBE_BLOCK_EXIT_SAMPLED(block_done, "*", 32) { ... }
 *     MGPU_PROBE_ACCESS_SAMPLED_BLOCKS(where, "*", 16, 8) { ... } */
#define MGPU_PROBE_ENTRY_SAMPLED_BLOCKS(probe, glob, blocks)                                       \
    MGPU_PROBE_AT_("entry@" #blocks ":" glob, probe)
#define MGPU_PROBE_EXIT_SAMPLED_BLOCKS(probe, glob, blocks)                                        \
    MGPU_PROBE_AT_("exit@" #blocks ":" glob, probe)
#define MGPU_PROBE_BLOCK_ENTRY_SAMPLED(probe, glob, blocks)                                        \
    MGPU_PROBE_AT_("block-entry@" #blocks ":" glob, probe)
#define MGPU_PROBE_BLOCK_EXIT_SAMPLED(probe, glob, blocks)                                         \
    MGPU_PROBE_AT_("block-exit@" #blocks ":" glob, probe)
#define MGPU_PROBE_WARP_EXIT_SAMPLED_BLOCKS(probe, glob, blocks)                                   \
    MGPU_PROBE_AT_("warp-exit@" #blocks ":" glob, probe)
#define MGPU_PROBE_LOAD_SAMPLED_BLOCKS(probe, glob, every, blocks)                                 \
    MGPU_PROBE_MEMORY_AT_("load/" #every "@" #blocks ":" glob, probe)
#define MGPU_PROBE_STORE_SAMPLED_BLOCKS(probe, glob, every, blocks)                                \
    MGPU_PROBE_MEMORY_AT_("store/" #every "@" #blocks ":" glob, probe)
#define MGPU_PROBE_ACCESS_SAMPLED_BLOCKS(probe, glob, every, blocks)                               \
    MGPU_PROBE_MEMORY_AT_("access/" #every "@" #blocks ":" glob, probe)

#define MGPU_PROBE_MEMORY_AT_(where, probe)                                                        \
    extern "C" __device__ const char __mgpu_probe_attach_##probe[] = where;                        \
    extern "C" __device__ __noinline__ void probe(                                                 \
        unsigned __mgpu_block_edge, unsigned long long __mgpu_address, unsigned __mgpu_access)

#define MGPU_PROBE_AT_(where, probe)                                                               \
    extern "C" __device__ const char __mgpu_probe_attach_##probe[] = where;                        \
    extern "C" __device__ __noinline__ void probe(unsigned __mgpu_block_edge)

/* Inside a probe: true for one thread per block. At entry, the block's
 * thread (0, 0, 0), as the block starts; at exit, the block's last thread
 * to leave, as the block ends.
 *     if (mgpu_block_edge()) mgpu_counter_add(blocks, 1); */
#define mgpu_block_edge() (__mgpu_block_edge != 0)

/* ---- Where and when --------------------------------------------------- */

typedef unsigned long long mgpu_u64;

/* The GPU's index in the run: 0 for the home GPU, then in the order of
 * -n / --gpus (entries of a repeated GPU count separately). Maps are per
 * GPU already; the ordinal is for records and decisions.
 *     struct rec r = {mgpu_device_ordinal(), ...}; mgpu_ring_push(recs, r); */
static __device__ __forceinline__ unsigned mgpu_device_ordinal(void)
{
    unsigned ordinal;
    asm volatile("ld.const.u32 %0, [__mgpu_device_ordinal];" : "=r"(ordinal));
    return ordinal;
}

/* The block's index in the whole grid, as the program launched it (not in
 * the slice this GPU runs), x fastest. blockIdx and gridDim in a probe are
 * the whole grid's too.
 *     if (mgpu_block_index() == mgpu_grid_blocks() - 1) ... // the last block */
static __device__ __forceinline__ mgpu_u64 mgpu_block_index(void)
{
    return blockIdx.x + (mgpu_u64)gridDim.x * (blockIdx.y + (mgpu_u64)gridDim.y * blockIdx.z);
}

/* The number of blocks of the whole grid. */
static __device__ __forceinline__ mgpu_u64 mgpu_grid_blocks(void)
{
    return (mgpu_u64)gridDim.x * gridDim.y * gridDim.z;
}

/* The thread's index in its block, x fastest, and the block's size.
 *     mgpu_array_add(threads, mgpu_kernel_id(), mgpu_block_threads()); */
static __device__ __forceinline__ unsigned mgpu_thread_index(void)
{
    return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}
static __device__ __forceinline__ unsigned mgpu_block_threads(void)
{
    return blockDim.x * blockDim.y * blockDim.z;
}

/* The multiprocessor the block runs on.
 *     mgpu_array_add(blocks_per_sm, mgpu_sm_id(), 1); */
static __device__ __forceinline__ unsigned mgpu_sm_id(void)
{
    unsigned sm;
    asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
    return sm;
}

/* The multiprocessor's cycle counter (clock64): for durations within a
 * block, whose entry and exit run on one multiprocessor. The report gives
 * the cycles per nanosecond mgpu measured on each GPU.
 *     static __shared__ mgpu_u64 start;  // entry: start = mgpu_sm_cycles();
 *     mgpu_array_max(longest, 0, mgpu_sm_cycles() - start);  // block exit */
static __device__ __forceinline__ mgpu_u64 mgpu_sm_cycles(void)
{
    return clock64();
}

/* Nanoseconds on the host's CLOCK_MONOTONIC, read on the GPU: the GPU's
 * global timer moved by the offset mgpu measured for this GPU at start.
 * Comparable across GPUs and with the host within the calibration's error
 * (the report says it).
 *     mgpu_array_min(first_start, mgpu_launch_sequence(), mgpu_global_ns()); */
static __device__ __forceinline__ mgpu_u64 mgpu_global_ns(void)
{
    mgpu_u64 timer, offset;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(timer));
    asm volatile("ld.const.u64 %0, [__mgpu_probe_clock_offset];" : "=l"(offset));
    return timer - offset;
}

/* Nanoseconds since mgpu loaded the probes, on the same clock: small
 * enough to pack with other bits into one 64-bit map value (2^40 ns is
 * 18 minutes).
 *     mgpu_array_max(last, slot, (mgpu_u64)mgpu_launch_sequence() << 40 | mgpu_run_ns()); */
static __device__ __forceinline__ mgpu_u64 mgpu_run_ns(void)
{
    mgpu_u64 start;
    asm volatile("ld.const.u64 %0, [__mgpu_probe_run_start];" : "=l"(start));
    return mgpu_global_ns() - start;
}

/* The launch's number: 1 for the program's first launch that mgpu ran
 * from its rewritten modules, then one more per launch. The slices of one
 * split launch share it; MGPU_PROBE_OUT maps each number to its kernel
 * and host time ("launch" lines).
 *     mgpu_array_add(blocks_per_launch, mgpu_launch_sequence(), 1); */
static __device__ __forceinline__ unsigned mgpu_launch_sequence(void)
{
    unsigned sequence;
    asm volatile("ld.shared.u32 %0, [__mgpu_probe_block];" : "=r"(sequence));
    return sequence;
}

/* The kernel's number among the kernels probes attach to, which the
 * report and MGPU_PROBE_OUT name ("kernel" lines).
 *     mgpu_array_add(blocks_per_kernel, mgpu_kernel_id(), 1); */
static __device__ __forceinline__ unsigned mgpu_kernel_id(void)
{
    unsigned id;
    asm volatile("ld.shared.u32 %0, [__mgpu_probe_block+8];" : "=r"(id));
    return id;
}

/* ---- In a memory probe: the access ---------------------------------- */

/* The address the thread is about to read or write (a global address).
 *     if (mgpu_access_address() - base < 1024) ... */
#define mgpu_access_address() ((mgpu_u64)__mgpu_address)
/* Its size in bytes (a vector access counts all its lanes); 0 when mgpu
 * does not know the type. */
#define mgpu_access_bytes() (__mgpu_access & 0xffu)
/* What it is: MGPU_ACCESS_LOAD, MGPU_ACCESS_STORE or MGPU_ACCESS_ATOMIC.
 *     if (mgpu_access_kind() != MGPU_ACCESS_LOAD) ... // it writes */
enum { MGPU_ACCESS_LOAD = 0, MGPU_ACCESS_STORE = 1, MGPU_ACCESS_ATOMIC = 2 };
#define mgpu_access_kind() ((__mgpu_access >> 8) & 0x3u)
/* The kernel parameter (0 for the first) whose memory mgpu's analysis of
 * the kernel found the address derives from, or -1 when it cannot name one
 * (a pointer loaded from memory, chosen between two parameters, ...).
 *     mgpu_array_add(per_param, mgpu_access_param() + 1, 1); */
#define mgpu_access_param() ((int)(__mgpu_access >> 16) - 1)

/* ---- The kernel's parameters ------------------------------------------ */

/* The address of the kernel's parameter i (0 for the first, up to 15) as
 * the program passed it to this GPU's launch, or NULL past the last; read
 * the value through it. Any probe may call it.
 *     const float *c = *(const float *const *)mgpu_kernel_param(2); */
static __device__ __forceinline__ const void *mgpu_kernel_param(unsigned i)
{
    mgpu_u64 address = 0;
    if (i < 16)
        asm volatile("{\n\t.reg .u64 at;\n\tmov.u64 at, __mgpu_probe_params;\n\t"
                     "mad.wide.u32 at, %1, 8, at;\n\tld.shared.u64 %0, [at];\n\t}"
                     : "=l"(address)
                     : "r"(i));
    return (const void *)address;
}

/* ---- Where an address lies: the pool's pages -------------------------- */

/* The GPU (its ordinal, as mgpu_device_ordinal()) whose memory holds
 * `address` in mgpu's memory pool; MGPU_OWNER_REPLICA for an address in a
 * read-only replica mgpu keeps of a pool buffer on this GPU (MGPU_MIRROR);
 * MGPU_OWNER_NONE outside the pool (module variables, memory the program
 * got around mgpu, a run whose pool is off, such as one GPU) or in no live
 * allocation. mgpu keeps the page map on every GPU and refreshes it before
 * a launch when allocations, frees, migrations or replicas changed it.
 *     int owner = mgpu_address_owner(mgpu_access_address());
 *     bool local = owner == (int)mgpu_device_ordinal(); */
enum { MGPU_OWNER_NONE = -1, MGPU_OWNER_REPLICA = -2 };
static __device__ __forceinline__ int mgpu_address_owner(mgpu_u64 address)
{
    /* The GPU's map: the pool's first address, its granules, log2 of the
     * granule size, the owner bytes, the replicas listed, then [start, end)
     * of each. */
    const mgpu_u64 *map; /* read-only while kernels run: cached loads */
    asm("ld.const.u64 %0, [__mgpu_pool_map];" : "=l"(map));
    if (map == 0)
        return MGPU_OWNER_NONE;
    mgpu_u64 base = __ldg(map), granules = __ldg(map + 1), owners = __ldg(map + 3);
    mgpu_u64 granule = (address - base) >> __ldg(map + 2);
    if (address >= base && granule < granules && owners != 0) {
        unsigned char owner = __ldg((const unsigned char *)owners + granule);
        return owner == 0xff ? MGPU_OWNER_NONE : (int)owner;
    }
    mgpu_u64 count = __ldg(map + 4);
    for (mgpu_u64 i = 0; i < count; i++)
        if (address >= map[5 + 2 * i] && address < map[6 + 2 * i])
            return MGPU_OWNER_REPLICA;
    return MGPU_OWNER_NONE;
}

/* ---- Maps: per-GPU memory the host reads at exit -------------------- */

/* A map is declared at file scope. mgpu gives every GPU of the run its own
 * copy, in device memory, and reads them all at exit. Lengths and record
 * sizes may be any constant expression. */
enum { MGPU_MAP_ARRAY_ = 1, MGPU_MAP_RING_ = 2 };

#define MGPU_PROBE_MAP_(name, kind, length, record_bytes, initial)                                 \
    extern "C" __device__ const mgpu_u64 __mgpu_probe_map_##name[4] = {(kind), (length),           \
                                                                       (record_bytes), (initial)}; \
    static __device__ __forceinline__ mgpu_u64 *name##__mgpu_base(void)                            \
    {                                                                                              \
        mgpu_u64 base;                                                                             \
        asm volatile("ld.const.u64 %0, [__mgpu_map_" #name "];" : "=l"(base));                     \
        return (mgpu_u64 *)base;                                                                   \
    }                                                                                              \
    enum { name##__mgpu_length = (length) }

/* An array of `length` unsigned 64-bit values per GPU, zero at start (or
 * `initial` with the _INIT form: ~0ull for a map of minimums).
 *     MGPU_PROBE_ARRAY(blocks_per_sm, 1024);
 *     MGPU_PROBE_ARRAY_INIT(first_start, 4096, ~0ull); */
#define MGPU_PROBE_ARRAY(name, length) MGPU_PROBE_MAP_(name, MGPU_MAP_ARRAY_, length, 8, 0)
#define MGPU_PROBE_ARRAY_INIT(name, length, initial)                                               \
    MGPU_PROBE_MAP_(name, MGPU_MAP_ARRAY_, length, 8, initial)
/* A counter per GPU: an array of one.
 *     MGPU_PROBE_COUNTER(blocks);  ...  mgpu_counter_add(blocks, 1); */
#define MGPU_PROBE_COUNTER(name) MGPU_PROBE_ARRAY(name, 1)

/* Updates of element i; an index past the end is ignored (maps are
 * bounded). Atomic, lock-free, from any thread. Many blocks updating one
 * word serialise: spread hot counters (per multiprocessor, as the built-in
 * tools do), and read before a max or min that will rarely win.
 *     mgpu_array_add(hist, bucket, 1);
 *     if (d > mgpu_array_get(longest, k)) mgpu_array_max(longest, k, d); */
#define mgpu_array_add(name, i, value)                                                             \
    mgpu_map_add_(name##__mgpu_base(), name##__mgpu_length, i, value)
#define mgpu_array_max(name, i, value)                                                             \
    mgpu_map_max_(name##__mgpu_base(), name##__mgpu_length, i, value)
#define mgpu_array_min(name, i, value)                                                             \
    mgpu_map_min_(name##__mgpu_base(), name##__mgpu_length, i, value)
#define mgpu_array_set(name, i, value)                                                             \
    mgpu_map_set_(name##__mgpu_base(), name##__mgpu_length, i, value)
#define mgpu_array_get(name, i) mgpu_map_get_(name##__mgpu_base(), name##__mgpu_length, i)
#define mgpu_counter_add(name, value) mgpu_array_add(name, 0, value)
#define mgpu_counter_max(name, value) mgpu_array_max(name, 0, value)
#define mgpu_counter_min(name, value) mgpu_array_min(name, 0, value)

/* The updates name the global space and leave the scope at the GPU's:
 * from a generic pointer the compiler adds a compare-and-swap loop for
 * shared memory, and each GPU's maps are its own. */
static __device__ __forceinline__ void mgpu_map_add_(mgpu_u64 *base, mgpu_u64 n, mgpu_u64 i,
                                                     mgpu_u64 value)
{
    if (i < n)
        asm volatile("red.global.add.u64 [%0], %1;" ::"l"(base + i), "l"(value) : "memory");
}
static __device__ __forceinline__ void mgpu_map_max_(mgpu_u64 *base, mgpu_u64 n, mgpu_u64 i,
                                                     mgpu_u64 value)
{
    if (i < n)
        asm volatile("red.global.max.u64 [%0], %1;" ::"l"(base + i), "l"(value) : "memory");
}
static __device__ __forceinline__ void mgpu_map_min_(mgpu_u64 *base, mgpu_u64 n, mgpu_u64 i,
                                                     mgpu_u64 value)
{
    if (i < n)
        asm volatile("red.global.min.u64 [%0], %1;" ::"l"(base + i), "l"(value) : "memory");
}
static __device__ __forceinline__ void mgpu_map_set_(mgpu_u64 *base, mgpu_u64 n, mgpu_u64 i,
                                                     mgpu_u64 value)
{
    if (i < n) /* an aligned 64-bit store is atomic */
        asm volatile("st.relaxed.gpu.global.u64 [%0], %1;" ::"l"(base + i), "l"(value) : "memory");
}
static __device__ __forceinline__ mgpu_u64 mgpu_map_get_(mgpu_u64 *base, mgpu_u64 n, mgpu_u64 i)
{
    return i < n ? *(volatile mgpu_u64 *)(base + i) : 0;
}

/* A ring of `capacity` records of type `type` per GPU, sent to the host:
 * the report counts them, MGPU_PROBE_OUT lists them (as 64-bit words) and
 * --trace shows each as an event on its GPU's lane when its first word is
 * a time from mgpu_global_ns(). A push into a full ring drops the record
 * and counts it as dropped. Rings are read at exit: the capacity bounds
 * what a run keeps.
 *     struct rec { mgpu_u64 ns; unsigned gpu, sm; };
 *     MGPU_PROBE_RING(recs, struct rec, 4096); */
#define MGPU_PROBE_RING(name, type, capacity)                                                      \
    MGPU_PROBE_MAP_(name, MGPU_MAP_RING_, capacity, sizeof(type), 0);                              \
    typedef type name##__mgpu_record

/* Pushes one record; returns whether it was kept.
 *     struct rec r = {mgpu_global_ns(), mgpu_device_ordinal(), mgpu_sm_id()};
 *     mgpu_ring_push(recs, r); */
#define mgpu_ring_push(name, record)                                                               \
    mgpu_ring_push_(name##__mgpu_base(), name##__mgpu_length, &(record),                           \
                    sizeof(name##__mgpu_record))

/* The ring's layout, which the host reads: the number of pushes, the
 * number dropped, then the records, each padded to 8 bytes. */
static __device__ __forceinline__ bool mgpu_ring_push_(mgpu_u64 *base, mgpu_u64 capacity,
                                                       const void *record, unsigned bytes)
{
    mgpu_u64 slot;
    asm volatile("atom.global.add.u64 %0, [%1], 1;" : "=l"(slot) : "l"(base) : "memory");
    if (slot >= capacity) {
        asm volatile("red.global.add.u64 [%0], 1;" ::"l"(base + 1) : "memory");
        return false;
    }
    unsigned words = (bytes + 7) / 8;
    mgpu_u64 *to = base + 2 + slot * words;
    const unsigned char *from = (const unsigned char *)record;
    for (unsigned w = 0; w < words; w++) {
        mgpu_u64 word = 0;
        for (unsigned b = 0; b < 8 && w * 8 + b < bytes; b++)
            word |= (mgpu_u64)from[w * 8 + b] << (8 * b);
        to[w] = word;
    }
    return true;
}

#endif
