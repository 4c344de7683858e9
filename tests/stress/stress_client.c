/* A driver-API program that hammers one context from several host threads
 * at once, for races in mgpu (under ThreadSanitizer, against the fake GPU)
 * and for long soaks on a real GPU: each thread owns a stream and a set of
 * device buffers and runs random operations on them (allocate, free, copies
 * in every direction, sync and async, from pageable and page-locked host
 * memory, memset, the two kernels of
 * ../fake/test_kernels.h, events, stream and context synchronisation,
 * pointer and memory queries, modules of its own loaded and unloaded),
 * keeps a host shadow of every buffer and checks the device's contents
 * exactly after synchronising. A few shared buffers, written once by the
 * main thread, are read by all threads.
 *
 * Usage: stress_client [--threads N] [--seconds S] [--ops N] [--seed S]
 *                      [--min-bytes B] [--max-bytes B] [--buffers N] [--nonblocking] [--race]
 * Prints one line `error: cuXxx returned NAME (thread T, op #N)` on a
 * failed call, or where and what on a wrong value, with status 1; else the
 * totals and `stress_client: results correct`, status 0. */
#include "../fake/test_kernels.h"

#include <cuda.h>
#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 64
#define SHARED_BUFFERS 2

/* The kinds of operation, counted per thread and summed at the end. */
enum op_kind {
    OP_ALLOC,
    OP_ALLOC_ASYNC,
    OP_FREE,
    OP_FREE_ASYNC,
    OP_HTOD,
    OP_HTOD_ASYNC,
    OP_DTOH,
    OP_DTOH_ASYNC,
    OP_HTOD_PINNED,
    OP_DTOH_PINNED,
    OP_DTOD,
    OP_DTOD_ASYNC,
    OP_MEMSET,
    OP_MEMSET_ASYNC,
    OP_FILL,
    OP_AXPY,
    OP_EVENT_SYNC,
    OP_STREAM_SYNC,
    OP_CTX_SYNC,
    OP_QUERY,
    OP_MODULE,
    OP_KINDS
};
static const char *const op_names[OP_KINDS] = {
    "alloc",    "alloc-async",  "free",        "free-async",  "htod",       "htod-async",
    "dtoh",     "dtoh-async",   "htod-pinned", "dtoh-pinned", "dtod",       "dtod-async",
    "memset",   "memset-async", "fill",        "axpy",        "event-sync", "stream-sync",
    "ctx-sync", "query",        "module",
};
/* How often each is drawn (where it applies). */
static const unsigned op_weights[OP_KINDS] = {
    [OP_ALLOC] = 4,       [OP_ALLOC_ASYNC] = 2, [OP_FREE] = 3,       [OP_FREE_ASYNC] = 1,
    [OP_HTOD] = 4,        [OP_HTOD_ASYNC] = 6,  [OP_DTOH] = 5,       [OP_DTOH_ASYNC] = 5,
    [OP_DTOD] = 3,        [OP_DTOD_ASYNC] = 5,  [OP_MEMSET] = 3,     [OP_MEMSET_ASYNC] = 5,
    [OP_FILL] = 10,       [OP_AXPY] = 10,       [OP_EVENT_SYNC] = 3, [OP_STREAM_SYNC] = 3,
    [OP_CTX_SYNC] = 1,    [OP_QUERY] = 2,       [OP_MODULE] = 1,     [OP_HTOD_PINNED] = 3,
    [OP_DTOH_PINNED] = 3,
};

static struct {
    unsigned threads;
    double seconds;
    unsigned long ops; /* per thread; 0: run for `seconds` */
    uint64_t seed;
    size_t min_bytes, max_bytes;
    unsigned buffers; /* most live buffers a thread owns */
    bool nonblocking;
    bool race; /* --race: a deliberate data race, to show the race detector is on */
} opt = {8, 0, 0, 1, 4096, 16u << 20, 6, false, false};

/* A device buffer and the host's copy of what it must hold. */
struct buffer {
    CUdeviceptr dev;
    size_t words;
    uint32_t *shadow;
    unsigned serial; /* for messages: thread T's buffer #serial */
};

/* A device-to-host copy still in flight: `got` is checked against `want`
 * (the shadow when it was queued) at the next synchronisation. */
struct pending_check {
    uint32_t *got, *want;
    bool got_pinned; /* `got` lies in the thread's pinned buffer: not freed */
    size_t words, offset;
    unsigned serial;
    int shared; /* the shared buffer's index, or -1 */
    unsigned long op;
};

struct worker {
    unsigned index;
    pthread_t thread;
    uint64_t rng;
    CUstream stream;
    CUevent event;
    struct buffer live[64];
    unsigned nlive, next_serial;
    /* Page-locked host memory (cuMemAllocHost) for async copies that are
     * truly async: handed out from the start, all of it free again once
     * the stream has drained. */
    uint32_t *pinned;
    size_t pinned_used;
    struct pending_check *checks;
    size_t nchecks, checks_capacity;
    unsigned long op; /* the operation being run, for messages */
    unsigned long counts[OP_KINDS];
    unsigned long long bytes_checked;
};

static CUcontext context;
static unsigned long raced; /* written by every thread unguarded with --race */
static CUfunction axpy_kernel, fill_kernel;
static struct buffer shared[SHARED_BUFFERS];
static struct timespec start;

static double elapsed(void)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    return (double)(now.tv_sec - start.tv_sec) + 1e-9 * (double)(now.tv_nsec - start.tv_nsec);
}

/* One line, then out: the other threads may be anywhere inside the driver,
 * so nothing is torn down (a hung device would hang a normal exit). */
static _Noreturn void die(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static _Noreturn void die(const char *fmt, ...)
{
    static pthread_mutex_t once = PTHREAD_MUTEX_INITIALIZER;
    pthread_mutex_lock(&once); /* never unlocked: the first failure speaks alone */
    va_list ap;
    va_start(ap, fmt);
    vprintf(fmt, ap);
    va_end(ap);
    fflush(stdout);
    _exit(1);
}

static void thread_name(const struct worker *w, char *name, size_t size)
{
    if (w)
        snprintf(name, size, "%u", w->index);
    else
        snprintf(name, size, "main");
}

/* `call` is the call's text: its name is everything before the '('. */
static void cu_check(CUresult r, const char *call, const struct worker *w)
{
    if (r == CUDA_SUCCESS)
        return;
    const char *name = NULL;
    char number[32], who[16];
    if (cuGetErrorName(r, &name) != CUDA_SUCCESS || name == NULL) {
        snprintf(number, sizeof number, "CUresult %d", (int)r);
        name = number;
    }
    thread_name(w, who, sizeof who);
    int len = (int)strcspn(call, "(");
    die("error: %.*s returned %s (thread %s, op #%lu)\n", len, call, name, who, w ? w->op : 0UL);
}
#define CU(w, call) cu_check((call), #call, (w))

static void *must_alloc(size_t bytes)
{
    void *p = malloc(bytes ? bytes : 1);
    if (p == NULL)
        die("error: out of host memory (%zu bytes)\n", bytes);
    return p;
}

/* splitmix64: small, fast, and one independent stream per thread. */
static uint64_t next_random(uint64_t *state)
{
    uint64_t z = (*state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

static size_t below(uint64_t *rng, size_t n)
{
    return n ? (size_t)(next_random(rng) % n) : 0;
}

/* A float holding a whole number of magnitude at most 2^16: a * x + y of
 * such numbers (|a| <= 3) is exact in float, fused or not. */
static bool small_float(uint32_t bits)
{
    float f;
    memcpy(&f, &bits, sizeof f);
    return f == truncf(f) && fabsf(f) <= 65536.0f;
}

static uint32_t float_bits(float f)
{
    uint32_t bits;
    memcpy(&bits, &f, sizeof bits);
    return bits;
}

static uint32_t random_small_float(uint64_t *rng)
{
    return float_bits((float)((int)below(rng, 65) - 32));
}

static bool all_small(const uint32_t *w, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (!small_float(w[i]))
            return false;
    return true;
}

/* Sizes are spread evenly in log scale, from a few KiB to a few MiB, so
 * that some allocations sit inside one 2 MiB page of mgpu's pool and
 * others span pages (and GPUs). */
static size_t random_words(uint64_t *rng)
{
    double lo = log((double)opt.min_bytes), hi = log((double)opt.max_bytes);
    double u = (double)(next_random(rng) >> 11) / 9007199254740992.0;
    size_t bytes = (size_t)exp(lo + u * (hi - lo));
    if (bytes < 4)
        bytes = 4;
    return bytes / 4;
}

/* A range of a buffer of `words`: the whole, a short piece, or anything. */
static void random_range(uint64_t *rng, size_t words, size_t *offset, size_t *len)
{
    switch (below(rng, 4)) {
    case 0:
        *offset = 0;
        *len = words;
        return;
    case 1:
        *len = 1 + below(rng, words < 1024 ? words : 1024);
        *offset = below(rng, words - *len + 1);
        return;
    default:
        *offset = below(rng, words);
        *len = 1 + below(rng, words - *offset);
        return;
    }
}

static void compare(struct worker *w, const uint32_t *got, const uint32_t *want, size_t words,
                    size_t offset, unsigned serial, int shared_index, unsigned long op)
{
    if (memcmp(got, want, words * 4) != 0) {
        size_t i = 0;
        while (got[i] == want[i])
            i++;
        size_t wrong = 0;
        for (size_t j = i; j < words; j++)
            wrong += got[j] != want[j];
        char where[64], who[16];
        if (shared_index >= 0)
            snprintf(where, sizeof where, "shared buffer %d", shared_index);
        else
            snprintf(where, sizeof where, "buffer #%u", serial);
        thread_name(w, who, sizeof who);
        die("stress_client: wrong value: thread %s, op #%lu read back %s, word %zu: got "
            "0x%08" PRIx32 ", want 0x%08" PRIx32 " (%zu of %zu words read from word %zu wrong)\n",
            who, op, where, offset + i, got[i], want[i], wrong, words, offset);
    }
    if (w)
        w->bytes_checked += words * 4;
}

/* Everything queued on the thread's stream has finished: check the copies
 * that were in flight. */
static void run_checks(struct worker *w)
{
    for (size_t i = 0; i < w->nchecks; i++) {
        struct pending_check *c = &w->checks[i];
        compare(w, c->got, c->want, c->words, c->offset, c->serial, c->shared, c->op);
        if (!c->got_pinned)
            free(c->got);
        free(c->want);
    }
    w->nchecks = 0;
    w->pinned_used = 0;
}

/* `words` of the pinned buffer, free until the stream next drains; when
 * they do not fit, the stream is drained first. */
static uint32_t *take_pinned(struct worker *w, size_t words)
{
    if (w->pinned_used + words > opt.max_bytes / 4) {
        CU(w, cuStreamSynchronize(w->stream));
        run_checks(w);
    }
    uint32_t *p = w->pinned + w->pinned_used;
    w->pinned_used += words;
    return p;
}

static struct pending_check *new_check(struct worker *w)
{
    if (w->nchecks == w->checks_capacity) {
        w->checks_capacity = w->checks_capacity ? 2 * w->checks_capacity : 16;
        w->checks = realloc(w->checks, w->checks_capacity * sizeof *w->checks);
        if (w->checks == NULL)
            die("error: out of host memory\n");
    }
    return &w->checks[w->nchecks++];
}

/* With a non-blocking stream, the calls on the legacy stream (the sync
 * copies and memsets) are not ordered with the thread's stream: the thread
 * orders them itself, before and after. */
static void before_sync_call(struct worker *w)
{
    if (opt.nonblocking)
        CU(w, cuStreamSynchronize(w->stream));
}

static void after_sync_call(struct worker *w)
{
    if (opt.nonblocking)
        CU(w, cuStreamSynchronize(NULL));
}

/* Host data for an upload: random bits, or whole numbers in floats that
 * axpy can use later. */
static uint32_t *random_data(uint64_t *rng, size_t words)
{
    uint32_t *data = must_alloc(words * 4);
    bool floats = below(rng, 2);
    for (size_t i = 0; i < words; i++)
        data[i] = floats ? random_small_float(rng) : (uint32_t)next_random(rng);
    return data;
}

static void do_alloc(struct worker *w, bool async)
{
    struct buffer *b = &w->live[w->nlive];
    b->words = random_words(&w->rng);
    b->serial = w->next_serial++;
    if (async)
        CU(w, cuMemAllocAsync(&b->dev, b->words * 4, w->stream));
    else
        CU(w, cuMemAlloc(&b->dev, b->words * 4));
    w->nlive++;
    b->shadow = must_alloc(b->words * 4);
    /* A new buffer's contents are unknown until written: fill it whole. */
    uint32_t value = (uint32_t)next_random(&w->rng);
    CU(w, cuMemsetD32Async(b->dev, value, b->words, w->stream));
    for (size_t i = 0; i < b->words; i++)
        b->shadow[i] = value;
}

static void do_free(struct worker *w, bool async)
{
    size_t i = below(&w->rng, w->nlive);
    struct buffer b = w->live[i];
    w->live[i] = w->live[--w->nlive];
    /* No synchronisation first: the free must wait for the work queued on
     * the buffer (cuMemFree does; cuMemFreeAsync orders on the stream). */
    if (async)
        CU(w, cuMemFreeAsync(b.dev, w->stream));
    else
        CU(w, cuMemFree(b.dev));
    free(b.shadow);
}

static void do_htod(struct worker *w, bool async)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    uint32_t *data = random_data(&w->rng, len);
    if (async) {
        CU(w, cuMemcpyHtoDAsync(b->dev + off * 4, data, len * 4, w->stream));
    } else {
        before_sync_call(w);
        CU(w, cuMemcpyHtoD(b->dev + off * 4, data, len * 4));
        after_sync_call(w);
    }
    memcpy(b->shadow + off, data, len * 4);
    /* From pageable memory the copy has taken the data when the call
     * returns, async or not: scribble on it to prove it. */
    memset(data, 0xa5, len * 4);
    free(data);
}

/* A buffer to read from: one of the thread's own, or a shared one. */
static const struct buffer *random_source(struct worker *w, int *shared_index)
{
    size_t n = w->nlive + SHARED_BUFFERS;
    size_t i = below(&w->rng, n);
    if (i < w->nlive) {
        *shared_index = -1;
        return &w->live[i];
    }
    *shared_index = (int)(i - w->nlive);
    return &shared[*shared_index];
}

static void do_dtoh(struct worker *w, bool async)
{
    int si;
    const struct buffer *b = random_source(w, &si);
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    uint32_t *got = must_alloc(len * 4);
    memset(got, 0x5a, len * 4);
    if (!async) {
        before_sync_call(w);
        CU(w, cuMemcpyDtoH(got, b->dev + off * 4, len * 4));
        after_sync_call(w);
        compare(w, got, b->shadow + off, len, off, b->serial, si, w->op);
        free(got);
        return;
    }
    CU(w, cuMemcpyDtoHAsync(got, b->dev + off * 4, len * 4, w->stream));
    struct pending_check *c = new_check(w);
    c->got = got;
    c->got_pinned = false;
    c->want = must_alloc(len * 4);
    memcpy(c->want, b->shadow + off, len * 4);
    c->words = len;
    c->offset = off;
    c->serial = b->serial;
    c->shared = si;
    c->op = w->op;
}

/* From page-locked memory the copy is truly async: the data stays as it
 * is until the stream drains. */
static void do_htod_pinned(struct worker *w)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    uint32_t *data = take_pinned(w, len);
    bool floats = below(&w->rng, 2);
    for (size_t i = 0; i < len; i++)
        data[i] = floats ? random_small_float(&w->rng) : (uint32_t)next_random(&w->rng);
    CU(w, cuMemcpyHtoDAsync(b->dev + off * 4, data, len * 4, w->stream));
    memcpy(b->shadow + off, data, len * 4);
}

static void do_dtoh_pinned(struct worker *w)
{
    int si;
    const struct buffer *b = random_source(w, &si);
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    uint32_t *got = take_pinned(w, len);
    memset(got, 0x5a, len * 4);
    CU(w, cuMemcpyDtoHAsync(got, b->dev + off * 4, len * 4, w->stream));
    struct pending_check *c = new_check(w);
    c->got = got;
    c->got_pinned = true;
    c->want = must_alloc(len * 4);
    memcpy(c->want, b->shadow + off, len * 4);
    c->words = len;
    c->offset = off;
    c->serial = b->serial;
    c->shared = si;
    c->op = w->op;
}

static void do_dtod(struct worker *w, bool async)
{
    struct buffer *dst = &w->live[below(&w->rng, w->nlive)];
    int si;
    const struct buffer *src = random_source(w, &si);
    size_t dst_off, len, src_off;
    if (src == dst) {
        /* Within one buffer: two ranges that do not overlap. */
        if (dst->words < 2)
            return;
        size_t half = dst->words / 2;
        len = 1 + below(&w->rng, half);
        src_off = below(&w->rng, half - len + 1);
        dst_off = half + below(&w->rng, dst->words - half - len + 1);
        if (below(&w->rng, 2)) {
            size_t t = src_off;
            src_off = dst_off;
            dst_off = t;
        }
    } else {
        random_range(&w->rng, dst->words, &dst_off, &len);
        if (len > src->words)
            len = src->words;
        src_off = below(&w->rng, src->words - len + 1);
    }
    if (async) {
        CU(w,
           cuMemcpyDtoDAsync(dst->dev + dst_off * 4, src->dev + src_off * 4, len * 4, w->stream));
    } else {
        before_sync_call(w);
        CU(w, cuMemcpyDtoD(dst->dev + dst_off * 4, src->dev + src_off * 4, len * 4));
        after_sync_call(w);
    }
    memmove(dst->shadow + dst_off, src->shadow + src_off, len * 4);
}

static void do_memset(struct worker *w, bool async)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    uint32_t value =
        below(&w->rng, 2) ? random_small_float(&w->rng) : (uint32_t)next_random(&w->rng);
    if (async) {
        CU(w, cuMemsetD32Async(b->dev + off * 4, value, len, w->stream));
    } else {
        before_sync_call(w);
        CU(w, cuMemsetD32(b->dev + off * 4, value, len));
        after_sync_call(w);
    }
    for (size_t i = 0; i < len; i++)
        b->shadow[off + i] = value;
}

/* Blocks of 128 or 256 threads, a grid big enough to be cut into slices. */
static unsigned block_size(struct worker *w)
{
    return below(&w->rng, 2) ? 256 : 128;
}

static void do_fill(struct worker *w)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    unsigned block = block_size(w);
    unsigned grid = (unsigned)((len + block - 1) / block);
    /* The loop strides by the grid: fewer blocks than elements is fine. */
    if (below(&w->rng, 2))
        grid = 1 + (unsigned)below(&w->rng, grid);
    CUdeviceptr p = b->dev + off * 4;
    uint32_t value = (uint32_t)next_random(&w->rng);
    unsigned n = (unsigned)len;
    void *params[] = {&p, &value, &n};
    CU(w, cuLaunchKernel(fill_kernel, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL));
    for (size_t i = 0; i < len; i++)
        b->shadow[off + i] = value + (uint32_t)i;
}

static void do_axpy(struct worker *w)
{
    struct buffer *y = &w->live[below(&w->rng, w->nlive)];
    size_t y_off, len;
    random_range(&w->rng, y->words, &y_off, &len);
    /* x: a shared buffer (made of small floats) or another of the thread's
     * own where that range holds small floats. */
    const struct buffer *x = &shared[0];
    size_t x_off;
    struct buffer *own = &w->live[below(&w->rng, w->nlive)];
    if (own != y && own->words >= len && below(&w->rng, 2)) {
        x_off = below(&w->rng, own->words - len + 1);
        if (all_small(own->shadow + x_off, len))
            x = own;
    }
    if (x == &shared[0]) {
        if (len > x->words)
            len = x->words;
        x_off = below(&w->rng, x->words - len + 1);
    }
    /* y must hold small floats too; where it does not, set it first. */
    if (!all_small(y->shadow + y_off, len)) {
        uint32_t value = random_small_float(&w->rng);
        CU(w, cuMemsetD32Async(y->dev + y_off * 4, value, len, w->stream));
        for (size_t i = 0; i < len; i++)
            y->shadow[y_off + i] = value;
        w->counts[OP_MEMSET_ASYNC]++;
    }
    unsigned block = block_size(w);
    unsigned grid = (unsigned)((len + block - 1) / block);
    CUdeviceptr yp = y->dev + y_off * 4, xp = x->dev + x_off * 4;
    float a = (float)((int)below(&w->rng, 7) - 3);
    unsigned n = (unsigned)len;
    void *params[] = {&yp, &xp, &a, &n};
    CU(w, cuLaunchKernel(axpy_kernel, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL));
    for (size_t i = 0; i < len; i++) {
        float xv, yv;
        memcpy(&xv, &x->shadow[x_off + i], 4);
        memcpy(&yv, &y->shadow[y_off + i], 4);
        y->shadow[y_off + i] = float_bits(fmaf(a, xv, yv));
    }
}

/* What the driver says of a pointer into a buffer: its allocation's start
 * and size (mgpu answers for its pool, with tables other threads change),
 * and the memory left. */
static void do_query(struct worker *w)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off = below(&w->rng, b->words);
    CUdeviceptr base = 0, range_start = 0;
    size_t bytes = 0, free_bytes = 0, total_bytes = 0;
    CU(w, cuMemGetAddressRange(&base, &bytes, b->dev + off * 4));
    CU(w, cuPointerGetAttribute(&range_start, CU_POINTER_ATTRIBUTE_RANGE_START_ADDR,
                                b->dev + off * 4));
    CU(w, cuMemGetInfo(&free_bytes, &total_bytes));
    if (base != b->dev || range_start != b->dev || bytes < b->words * 4 || free_bytes > total_bytes)
        die("stress_client: wrong answer: thread %u, op #%lu: buffer #%u (0x%llx, %zu bytes) word "
            "%zu: cuMemGetAddressRange says 0x%llx, %zu bytes; RANGE_START_ADDR 0x%llx; "
            "cuMemGetInfo %zu free of %zu\n",
            w->index, w->op, b->serial, (unsigned long long)b->dev, b->words * 4, off,
            (unsigned long long)base, bytes, (unsigned long long)range_start, free_bytes,
            total_bytes);
}

/* A module of the thread's own: loaded, launched once (its kernels' first
 * launch, while other threads launch theirs), unloaded. The launch must
 * have run before the unload. */
static void do_module(struct worker *w)
{
    struct buffer *b = &w->live[below(&w->rng, w->nlive)];
    size_t off, len;
    random_range(&w->rng, b->words, &off, &len);
    CUmodule module;
    CUfunction fill;
    CU(w, cuModuleLoadData(&module, mgpu_test_kernels_ptx));
    CU(w, cuModuleGetFunction(&fill, module, MGPU_TEST_FILL));
    CUdeviceptr p = b->dev + off * 4;
    uint32_t value = (uint32_t)next_random(&w->rng);
    unsigned n = (unsigned)len, block = block_size(w), grid = (unsigned)((len + block - 1) / block);
    void *params[] = {&p, &value, &n};
    CU(w, cuLaunchKernel(fill, grid, 1, 1, block, 1, 1, 0, w->stream, params, NULL));
    CU(w, cuStreamSynchronize(w->stream));
    CU(w, cuModuleUnload(module));
    for (size_t i = 0; i < len; i++)
        b->shadow[off + i] = value + (uint32_t)i;
    run_checks(w);
}

static void do_sync(struct worker *w, enum op_kind kind)
{
    if (kind == OP_EVENT_SYNC) {
        CU(w, cuEventRecord(w->event, w->stream));
        CU(w, cuEventSynchronize(w->event));
    } else if (kind == OP_STREAM_SYNC) {
        CU(w, cuStreamSynchronize(w->stream));
    } else {
        CU(w, cuCtxSynchronize());
    }
    run_checks(w);
}

static bool applies(const struct worker *w, enum op_kind k)
{
    switch (k) {
    case OP_ALLOC:
    case OP_ALLOC_ASYNC:
        return w->nlive < opt.buffers;
    case OP_FREE:
    case OP_FREE_ASYNC:
        return w->nlive > 1;
    case OP_EVENT_SYNC:
    case OP_STREAM_SYNC:
    case OP_CTX_SYNC:
        return true;
    default:
        return w->nlive > 0;
    }
}

static enum op_kind random_op(struct worker *w)
{
    unsigned total = 0;
    for (int k = 0; k < OP_KINDS; k++)
        total += applies(w, (enum op_kind)k) ? op_weights[k] : 0;
    size_t pick = below(&w->rng, total);
    for (int k = 0; k < OP_KINDS; k++) {
        unsigned weight = applies(w, (enum op_kind)k) ? op_weights[k] : 0;
        if (pick < weight)
            return (enum op_kind)k;
        pick -= weight;
    }
    return OP_STREAM_SYNC;
}

static void run_op(struct worker *w, enum op_kind k)
{
    switch (k) {
    case OP_ALLOC:
        do_alloc(w, false);
        break;
    case OP_ALLOC_ASYNC:
        do_alloc(w, true);
        break;
    case OP_HTOD_PINNED:
        do_htod_pinned(w);
        break;
    case OP_DTOH_PINNED:
        do_dtoh_pinned(w);
        break;
    case OP_FREE:
        do_free(w, false);
        break;
    case OP_FREE_ASYNC:
        do_free(w, true);
        break;
    case OP_HTOD:
        do_htod(w, false);
        break;
    case OP_HTOD_ASYNC:
        do_htod(w, true);
        break;
    case OP_DTOH:
        do_dtoh(w, false);
        break;
    case OP_DTOH_ASYNC:
        do_dtoh(w, true);
        break;
    case OP_DTOD:
        do_dtod(w, false);
        break;
    case OP_DTOD_ASYNC:
        do_dtod(w, true);
        break;
    case OP_MEMSET:
        do_memset(w, false);
        break;
    case OP_MEMSET_ASYNC:
        do_memset(w, true);
        break;
    case OP_FILL:
        do_fill(w);
        break;
    case OP_AXPY:
        do_axpy(w);
        break;
    case OP_QUERY:
        do_query(w);
        break;
    case OP_MODULE:
        do_module(w);
        break;
    default:
        do_sync(w, k);
        break;
    }
    w->counts[k]++;
}

/* The end of a thread's run: everything it owns read back whole, checked
 * and freed. */
static void finish(struct worker *w)
{
    w->op++;
    CU(w, cuStreamSynchronize(w->stream));
    run_checks(w);
    for (unsigned i = 0; i < w->nlive; i++) {
        struct buffer *b = &w->live[i];
        uint32_t *got = must_alloc(b->words * 4);
        CU(w, cuMemcpyDtoHAsync(got, b->dev, b->words * 4, w->stream));
        CU(w, cuStreamSynchronize(w->stream));
        compare(w, got, b->shadow, b->words, 0, b->serial, -1, w->op);
        free(got);
        CU(w, cuMemFree(b->dev));
        free(b->shadow);
    }
    w->nlive = 0;
    free(w->checks);
    CU(w, cuMemFreeHost(w->pinned));
    CU(w, cuEventDestroy(w->event));
    CU(w, cuStreamDestroy(w->stream));
}

static void *worker_main(void *arg)
{
    struct worker *w = arg;
    /* Every thread works in the program's one context, the primary one. */
    CU(w, cuCtxSetCurrent(context));
    CU(w, cuStreamCreate(&w->stream, opt.nonblocking ? CU_STREAM_NON_BLOCKING : CU_STREAM_DEFAULT));
    CU(w, cuEventCreate(&w->event, CU_EVENT_DISABLE_TIMING));
    void *pinned;
    CU(w, cuMemAllocHost(&pinned, opt.max_bytes));
    w->pinned = pinned;
    for (;;) {
        if (opt.ops ? w->op >= opt.ops : elapsed() >= opt.seconds)
            break;
        w->op++;
        run_op(w, random_op(w));
        if (opt.race)
            raced++;
    }
    finish(w);
    return NULL;
}

/* The shared buffers, written once before the threads start: one of small
 * floats (axpy's x), one filled by the kernel with integers. */
static void make_shared(void)
{
    uint64_t rng = opt.seed ^ 0x5eed5eed5eedULL;
    for (int s = 0; s < SHARED_BUFFERS; s++) {
        struct buffer *b = &shared[s];
        b->words = s == 0 ? opt.max_bytes / 4 : random_words(&rng);
        b->serial = (unsigned)s;
        CU(NULL, cuMemAlloc(&b->dev, b->words * 4));
        b->shadow = must_alloc(b->words * 4);
    }
    for (size_t i = 0; i < shared[0].words; i++)
        shared[0].shadow[i] = random_small_float(&rng);
    CU(NULL, cuMemcpyHtoD(shared[0].dev, shared[0].shadow, shared[0].words * 4));
    unsigned value = 0x1000, n = (unsigned)shared[1].words, grid = (n + 255) / 256;
    void *params[] = {&shared[1].dev, &value, &n};
    CU(NULL, cuLaunchKernel(fill_kernel, grid, 1, 1, 256, 1, 1, 0, NULL, params, NULL));
    for (size_t i = 0; i < shared[1].words; i++)
        shared[1].shadow[i] = value + (uint32_t)i;
    CU(NULL, cuCtxSynchronize());
}

/* After the threads: the shared buffers are as they were made. */
static unsigned long long check_and_free_shared(void)
{
    unsigned long long bytes = 0;
    for (int s = 0; s < SHARED_BUFFERS; s++) {
        struct buffer *b = &shared[s];
        uint32_t *got = must_alloc(b->words * 4);
        CU(NULL, cuMemcpyDtoH(got, b->dev, b->words * 4));
        compare(NULL, got, b->shadow, b->words, 0, b->serial, s, 0);
        bytes += b->words * 4;
        free(got);
        free(b->shadow);
        CU(NULL, cuMemFree(b->dev));
    }
    return bytes;
}

static unsigned long long parse_size(const char *text, const char *what)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(text, &end, 0);
    if (*end == 'K' || *end == 'k')
        v <<= 10, end++;
    else if (*end == 'M' || *end == 'm')
        v <<= 20, end++;
    if (errno || end == text || *end != '\0') {
        fprintf(stderr, "stress_client: %s '%s' is not a number\n", what, text);
        exit(2);
    }
    return v;
}

static void usage(FILE *f)
{
    fprintf(f,
            "usage: stress_client [--threads N] [--seconds S | --ops N] [--seed S]\n"
            "                     [--min-bytes B] [--max-bytes B] [--buffers N] [--nonblocking]\n"
            "                     [--race]\n"
            "  --threads N     host threads, each with its own stream (default 8)\n"
            "  --seconds S     run for S seconds (default 5)\n"
            "  --ops N         run N operations per thread instead\n"
            "  --seed S        the random seed (default 1)\n"
            "  --min-bytes B   smallest buffer (default 4K)\n"
            "  --max-bytes B   largest buffer (default 16M)\n"
            "  --buffers N     most buffers a thread holds at once (default 6)\n"
            "  --nonblocking   CU_STREAM_NON_BLOCKING streams (the client then orders\n"
            "                  its calls on the legacy stream itself)\n"
            "  --race          race on a counter of the client's own, for checking that\n"
            "                  a race detector is on\n");
}

static void parse_options(int argc, char **argv)
{
    static const struct option options[] = {
        {"threads", required_argument, NULL, 't'},
        {"seconds", required_argument, NULL, 's'},
        {"ops", required_argument, NULL, 'n'},
        {"seed", required_argument, NULL, 'r'},
        {"min-bytes", required_argument, NULL, 'a'},
        {"max-bytes", required_argument, NULL, 'b'},
        {"buffers", required_argument, NULL, 'k'},
        {"nonblocking", no_argument, NULL, 'N'},
        {"race", no_argument, NULL, 'R'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int c;
    while ((c = getopt_long(argc, argv, "t:s:n:r:h", options, NULL)) != -1) {
        switch (c) {
        case 't':
            opt.threads = (unsigned)parse_size(optarg, "--threads");
            break;
        case 's':
            opt.seconds = strtod(optarg, NULL);
            break;
        case 'n':
            opt.ops = (unsigned long)parse_size(optarg, "--ops");
            break;
        case 'r':
            opt.seed = parse_size(optarg, "--seed");
            break;
        case 'a':
            opt.min_bytes = (size_t)parse_size(optarg, "--min-bytes");
            break;
        case 'b':
            opt.max_bytes = (size_t)parse_size(optarg, "--max-bytes");
            break;
        case 'k':
            opt.buffers = (unsigned)parse_size(optarg, "--buffers");
            break;
        case 'N':
            opt.nonblocking = true;
            break;
        case 'R':
            opt.race = true;
            break;
        case 'h':
            usage(stdout);
            exit(0);
        default:
            usage(stderr);
            exit(2);
        }
    }
    if (optind < argc || opt.threads < 1 || opt.threads > MAX_THREADS || opt.buffers < 1 ||
        opt.buffers > 64 || opt.min_bytes < 4 || opt.max_bytes < opt.min_bytes ||
        opt.max_bytes / 4 > UINT32_MAX || opt.seconds < 0) {
        usage(stderr);
        exit(2);
    }
    if (opt.seconds == 0 && opt.ops == 0)
        opt.seconds = 5;
}

int main(int argc, char **argv)
{
    parse_options(argc, argv);
    setvbuf(stdout, NULL, _IOLBF, 0);
    printf("stress_client: %u threads, %s %g, seed %" PRIu64 ", buffers %zu to %zu bytes, "
           "%u per thread, %s streams\n",
           opt.threads, opt.ops ? "ops per thread" : "seconds",
           opt.ops ? (double)opt.ops : opt.seconds, opt.seed, opt.min_bytes, opt.max_bytes,
           opt.buffers, opt.nonblocking ? "non-blocking" : "blocking");

    CUdevice device;
    CUmodule module;
    CU(NULL, cuInit(0));
    CU(NULL, cuDeviceGet(&device, 0));
    CU(NULL, cuDevicePrimaryCtxRetain(&context, device));
    CU(NULL, cuCtxSetCurrent(context));
    CU(NULL, cuModuleLoadData(&module, mgpu_test_kernels_ptx));
    CU(NULL, cuModuleGetFunction(&axpy_kernel, module, MGPU_TEST_AXPY));
    CU(NULL, cuModuleGetFunction(&fill_kernel, module, MGPU_TEST_FILL));
    make_shared();

    static struct worker workers[MAX_THREADS];
    clock_gettime(CLOCK_MONOTONIC, &start);
    for (unsigned t = 0; t < opt.threads; t++) {
        workers[t].index = t;
        workers[t].rng = opt.seed * 0x100000001b3ULL + t;
        int e = pthread_create(&workers[t].thread, NULL, worker_main, &workers[t]);
        if (e)
            die("error: pthread_create: %s\n", strerror(e));
    }
    unsigned long counts[OP_KINDS] = {0}, total = 0;
    unsigned long long bytes = 0;
    for (unsigned t = 0; t < opt.threads; t++) {
        pthread_join(workers[t].thread, NULL);
        for (int k = 0; k < OP_KINDS; k++)
            counts[k] += workers[t].counts[k];
        bytes += workers[t].bytes_checked;
    }
    double seconds = elapsed();
    bytes += check_and_free_shared();
    CU(NULL, cuModuleUnload(module));
    CU(NULL, cuDevicePrimaryCtxRelease(device));

    for (int k = 0; k < OP_KINDS; k++)
        total += counts[k];
    printf("stress_client: %lu operations in %.1f s:", total, seconds);
    for (int k = 0; k < OP_KINDS; k++)
        printf(" %s %lu%s", op_names[k], counts[k], k + 1 < OP_KINDS ? "," : "\n");
    printf("stress_client: %llu bytes checked\n", bytes);
    if (opt.race)
        printf("stress_client: %lu operations counted in the raced counter\n", raced);
    printf("stress_client: results correct\n");
    return 0;
}
