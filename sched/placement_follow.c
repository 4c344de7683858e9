/* Owns the decisions of MGPU_PLACEMENT=auto (see placement_follow.h): per
 * large pool buffer, the streak of launches that used it the same way, the
 * moves made, and why it is where it is. */
#include "sched/placement_follow.h"

#include "base/demangle.h"
#include "base/kernel_timing.h"
#include "base/report_format.h"
#include "sched/launch_params.h"
#include "base/log.h"
#include "memory/memory_pool.h"
#include "base/monotonic_clock.h"
#include "ptx/ptx_analysis.h"
#include "base/real_driver.h"
#include "sched/run_links.h"
#include "base/try_budget.h"

#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>

enum { SPLIT = -1, NONE = -2 };

struct buffer_use {
    CUdeviceptr start;
    size_t bytes;
    unsigned long long id; /* the pool's: a new buffer at a freed one's address differs */
    int streak_kind;       /* SPLIT, a GPU for whole launches on it, or NONE */
    int streak;
    int on_gpu; /* where mgpu moved it last; SPLIT: spread again; NONE: never moved */
    int moves;
    bool declined;     /* the cost model said the last move would not pay */
    bool for_split;    /* spread last for a split the split policy chose */
    char moved_by[33]; /* the kernel whose launches moved it last, shortened */
    unsigned long whole_launches, split_launches;
    unsigned long whole_on[MGPU_MAX_GPUS]; /* the whole launches, per GPU they ran on */
};

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static struct buffer_use *uses;
static size_t nuses, capacity;
static bool follow_on;
static atomic_bool stopped;
static atomic_int launching_threads;
static _Thread_local bool launched_here;
static struct mgpu_follow_stats stats;
/* The moves made so far: what the link model gave for their copies and
 * what they took, the program's queued work waited for first and not
 * counted (remapping costs beside the copy: 2 MiB granules made, mapped
 * and unmapped). */
static double modelled_move_seconds, measured_move_seconds;

/* Before any move is measured: on 4 x H200, spreads of 1 GiB buffers
 * (768 MiB moved, whole chunks copied at once on the receiving GPUs'
 * streams) took 4.9 to 5.8 ms where the link model gave 2.2 to 3.4 ms of
 * copies, 1.6 to 2.5 times (one of eight 5.9 times: 9.7 ms granting
 * access); the copies themselves took 2.0 to 2.3 ms, the rest is making,
 * mapping and granting access to the memory. */
#define MOVE_FACTOR_PRIOR 2.5

/* How long a move waits for the program's queued work before it is put
 * off. Long against a drain of ordinary queued kernels (a move is worth
 * making only where it saves more than milliseconds), short against a
 * user's patience where that work waits for the program's own thread
 * (gpu-exit-paths, tests/fake-exit.sh: a host function that waits on a
 * semaphore the program posts only after queueing more launches). */
#define MOVE_WAIT_MS 100

/* Under lock: how much longer than the link model's copy a move takes, as
 * the moves so far measured it (MOVE_FACTOR_PRIOR before any, never less
 * than 1). */
static double move_factor(void)
{
    if (modelled_move_seconds <= 0.0)
        return MOVE_FACTOR_PRIOR;
    if (measured_move_seconds <= modelled_move_seconds)
        return 1.0;
    return measured_move_seconds / modelled_move_seconds;
}

void mgpu_follow_configure(bool on)
{
    follow_on = on;
}

bool mgpu_follow_on(void)
{
    return follow_on && !atomic_load_explicit(&stopped, memory_order_relaxed);
}

/* Under lock: the records of buffers freed since, dropped. */
static void forget_freed(void)
{
    size_t kept = 0;
    for (size_t i = 0; i < nuses; i++) {
        struct mgpu_pool_block b;
        if (mgpu_pool_find(uses[i].start, &b) && b.start == uses[i].start && b.id == uses[i].id)
            uses[kept++] = uses[i];
    }
    nuses = kept;
}

/* Under lock: the record of pool buffer b, made or reset as needed; NULL
 * when memory runs out. */
static struct buffer_use *use_of(const struct mgpu_pool_block *b)
{
    struct buffer_use *free_slot = NULL;
    for (size_t i = 0; i < nuses && free_slot == NULL; i++) {
        if (uses[i].start != b->start)
            continue;
        if (uses[i].id == b->id)
            return &uses[i];
        free_slot = &uses[i]; /* freed, and another buffer at its address */
    }
    if (free_slot == NULL && nuses == capacity)
        forget_freed();
    if (free_slot == NULL) {
        if (nuses == capacity) {
            size_t grown_capacity = capacity ? 2 * capacity : 32;
            struct buffer_use *grown = realloc(uses, grown_capacity * sizeof *grown);
            if (grown == NULL)
                return NULL;
            uses = grown;
            capacity = grown_capacity;
        }
        free_slot = &uses[nuses++];
    }
    *free_slot = (struct buffer_use){
        .start = b->start, .bytes = b->bytes, .id = b->id, .streak_kind = NONE, .on_gpu = NONE};
    return free_slot;
}

#define MOVES_MAX 64

/* Under lock: what moving u onto `gpu` (SPLIT: spreading it) would copy,
 * as moves of its current runs; false when there are too many to say. */
static bool planned_moves(const struct buffer_use *u, int gpu, struct mgpu_link_move *moves,
                          size_t *n)
{
    struct mgpu_owner_run target[MOVES_MAX];
    size_t ntarget = 1;
    if (gpu == SPLIT)
        ntarget = mgpu_pool_spread_runs(u->start, target, MOVES_MAX);
    else
        target[0] = (struct mgpu_owner_run){0, u->bytes, gpu};
    if (ntarget == 0 || ntarget > MOVES_MAX)
        return false;
    *n = 0;
    for (size_t t = 0; t < ntarget; t++) {
        size_t bytes = target[t].offset + target[t].bytes > u->bytes
                           ? (target[t].offset < u->bytes ? u->bytes - target[t].offset : 0)
                           : target[t].bytes;
        if (bytes == 0)
            continue;
        struct mgpu_owner_run now[MOVES_MAX];
        size_t nnow = mgpu_pool_runs(u->start + target[t].offset, bytes, now, MOVES_MAX);
        if (nnow == 0 || nnow > MOVES_MAX || *n + nnow > MOVES_MAX)
            return false;
        for (size_t k = 0; k < nnow; k++)
            if (now[k].gpu != target[t].gpu)
                moves[(*n)++] = (struct mgpu_link_move){now[k].bytes, now[k].gpu, target[t].gpu};
    }
    return true;
}

/* Under lock: the fractions of u each GPU holds as the pool spreads it
 * (also the shares of the launches split along it); equal ones when the
 * pool cannot say. */
static void spread_shares(const struct buffer_use *u, int ngpus, double share[MGPU_MAX_GPUS])
{
    size_t held[MGPU_MAX_GPUS];
    bool known = mgpu_pool_spread_bytes_by_gpu(u->start, u->bytes, held) > 0;
    for (int g = 0; g < MGPU_MAX_GPUS; g++)
        share[g] = known ? (double)held[g] / (double)u->bytes : g < ngpus ? 1.0 / ngpus : 0.0;
}

/* Under lock: what the launches that used u so far spent reading it
 * across links (each taken to read all of it once), had it lain wholly on
 * `holder` all along, or spread (holder SPLIT). */
static double history_seconds(const struct mgpu_link_model *m, const struct buffer_use *u,
                              int holder, const double *share)
{
    int h = holder == SPLIT ? -1 : holder;
    double s = (double)u->split_launches * mgpu_link_launch_read_seconds(m, u->bytes, h, -1, share);
    for (int g = 0; g < m->nentries; g++)
        if (u->whole_on[g] > 0)
            s += (double)u->whole_on[g] * mgpu_link_launch_read_seconds(m, u->bytes, h, g, share);
    return s;
}

/* Under lock: whether moving u from `from` (a GPU, or SPLIT: spread) onto
 * `gpu` (or spreading it) pays: the launches observed so far, each taken
 * to read the whole buffer once (the bytes a kernel touches are not known:
 * an upper bound), would have spent more reading it where it lies than
 * there, by more than the copy costs, times one more than the moves it
 * made. Over all of them, not the streak alone, and each move asking for
 * more than the last, a buffer used both ways settles where they cost
 * least rather than following each streak in turn. */
static bool move_pays(struct buffer_use *u, int from, int gpu)
{
    struct mgpu_link_move moves[MOVES_MAX];
    size_t n = 0;
    const struct mgpu_link_model *model = mgpu_run_links();
    if (model == NULL && mgpu_run_links_pending())
        return false; /* asked again at the next launch of the streak */
    if (model == NULL || !planned_moves(u, gpu, moves, &n))
        return true;
    double share[MGPU_MAX_GPUS];
    spread_shares(u, model->nentries, share);
    double copy = mgpu_link_copy_seconds(model, moves, n) * move_factor();
    double saved = history_seconds(model, u, from, share) - history_seconds(model, u, gpu, share);
    bool pays = saved > copy * (1 + u->moves);
    unsigned long launches = u->whole_launches + u->split_launches;
    if (!pays && !u->declined && saved > 0.0)
        mgpu_info("placement: moving the %zu-byte buffer at 0x%llx would not pay: %.3f ms to copy "
                  "(counted %d times after %d moves), %.3f ms saved over the %lu launches so far",
                  u->bytes, (unsigned long long)u->start, copy * 1e3, 1 + u->moves, u->moves,
                  saved * 1e3, launches);
    else if (!pays && !u->declined)
        mgpu_info("placement: the %zu-byte buffer at 0x%llx stays: the %lu launches so far would "
                  "have spent %.3f ms more reading it where the move would put it",
                  u->bytes, (unsigned long long)u->start, launches, -saved * 1e3);
    u->declined = !pays;
    return pays;
}

/* Under lock: the GPU the buffer lies wholly on (where it was made, below
 * MGPU_SPREAD_MIN, or where mgpu moved it), or -1 when it is spread. */
static int sole_gpu(const struct buffer_use *u)
{
    size_t held[MGPU_MAX_GPUS];
    if (mgpu_pool_bytes_by_gpu(u->start, u->bytes, held) != 1)
        return -1;
    int gpu = 0;
    while (held[gpu] == 0)
        gpu++;
    return gpu;
}

/* Under lock: u moved onto `gpu`, or spread again with SPLIT; `why` ends
 * the -v line ("after 4 split launches"). Returns whether it moved. */
static bool move(struct buffer_use *u, int gpu, const char *why, const char *kernel)
{
    const struct mgpu_link_model *model = mgpu_run_links();
    struct mgpu_link_move planned[MOVES_MAX];
    size_t nplanned = 0;
    double modelled = model != NULL && planned_moves(u, gpu, planned, &nplanned)
                          ? mgpu_link_copy_seconds(model, planned, nplanned)
                          : -1.0;
    /* A move is a try, charged its time. Each is one the launches so far
     * would have paid for (move_pays; a spread for a split:
     * split_after_spread), so it is expected to cost nothing beyond them;
     * none is made while the tries have spent more than the budget for
     * trying, but one back onto the home GPU, where the program's own
     * buffers lie: that ends a try. Put off, it is asked again at a later
     * launch of the streak. */
    if (gpu != 0 && !mgpu_try_budget_allows(MGPU_TRY_MOVE, 0.0))
        return false;
    /* The program's queued work first: the move's time is its own. A
     * launch does not wait for the GPU, and a move made inside one must
     * not wait long either: the queued work may wait for this very thread
     * (a host function the program releases after queueing more, a kernel
     * spinning on a flag it writes later). Put off then, and tried again
     * at a later launch of the streak. */
    if (mgpu_pool_wait_for_home_within(MOVE_WAIT_MS) == MGPU_CONTEXT_BUSY) {
        if (stats.deferred++ == 0)
            mgpu_info("placement: moving the %zu-byte buffer at 0x%llx %s is put off: the "
                      "program's queued work did not finish within %d ms (tried again at later "
                      "launches)",
                      u->bytes, (unsigned long long)u->start, why, MOVE_WAIT_MS);
        return false;
    }
    long long began = mgpu_monotonic_ns();
    CUresult r =
        gpu == SPLIT ? mgpu_pool_spread(u->start) : mgpu_pool_migrate(u->start, u->bytes, gpu);
    long long ended = mgpu_monotonic_ns();
    double ms = (double)(ended - began) / 1e6;
    if (r == CUDA_SUCCESS) /* on the track of the GPU it went to; a spread on the home GPU's */
        mgpu_timing_host_span(gpu == SPLIT ? "placement: buffer spread over the GPUs"
                                           : "placement: buffer moved here",
                              gpu == SPLIT ? 0 : gpu, began, ended);
    u->moves++; /* a failed move counts too: it is not tried for ever */
    if (r != CUDA_SUCCESS) {
        mgpu_debug("placement: moving the %zu-byte buffer at 0x%llx failed (%s)", u->bytes,
                   (unsigned long long)u->start, mgpu_cu_error_name(r));
        return false;
    }
    u->on_gpu = gpu;
    u->for_split = false;
    u->moved_by[0] = '\0';
    char *readable = kernel != NULL ? mgpu_demangle(kernel) : NULL;
    if (readable != NULL)
        mgpu_shorten_name(readable, sizeof u->moved_by - 1, u->moved_by, sizeof u->moved_by);
    free(readable);
    if (modelled > 0.0) {
        modelled_move_seconds += modelled;
        measured_move_seconds += ms / 1e3;
    }
    stats.moves++;
    stats.bytes_moved += u->bytes;
    stats.move_ms += ms;
    mgpu_try_budget_spend(MGPU_TRY_MOVE, ms * 1e3);
    char model_said[64] = "";
    if (modelled > 0.0)
        snprintf(model_said, sizeof model_said, "; copies of %.2f ms by the link model",
                 modelled * 1e3);
    if (gpu == SPLIT)
        mgpu_info("placement: the %zu-byte buffer at 0x%llx spread over the GPUs %s (%.2f ms%s)",
                  u->bytes, (unsigned long long)u->start, why, ms, model_said);
    else
        mgpu_info("placement: the %zu-byte buffer at 0x%llx moved to GPU %d %s (%.2f ms%s)",
                  u->bytes, (unsigned long long)u->start, gpu, why, ms, model_said);
    return true;
}

/* Under lock: one more launch used u, whole on `gpu` or split (SPLIT). */
static void count(struct buffer_use *u, int gpu, const char *kernel)
{
    if (gpu == SPLIT) {
        u->split_launches++;
    } else {
        u->whole_launches++;
        if (gpu < MGPU_MAX_GPUS)
            u->whole_on[gpu]++;
    }
    if (u->streak_kind == gpu) {
        u->streak++;
    } else {
        u->streak_kind = gpu;
        u->streak = 1;
    }
    if (u->streak < MGPU_FOLLOW_STREAK || u->moves >= MGPU_FOLLOW_MOVES_MAX)
        return;
    int lies_on = sole_gpu(u);
    int from = lies_on >= 0 ? lies_on : SPLIT;
    if ((gpu == SPLIT ? lies_on >= 0 : lies_on != gpu) && move_pays(u, from, gpu)) {
        char why[64];
        snprintf(why, sizeof why, "after %d %s launches%s", u->streak,
                 gpu == SPLIT ? "split" : "whole", gpu == SPLIT ? "" : " there");
        move(u, gpu, why, kernel);
    }
}

/* The launch's pool buffers, each once, into out (at most max); all the
 * large ones when it may reach any. Returns how many. */
static size_t buffers_used(const struct mgpu_gpu_kernels *k, void *const *params,
                           const void *buffer, struct mgpu_pool_block *out, size_t max)
{
    if (k == NULL || k->param_use == NULL ||
        (k->notes & (MGPU_NOTE_UNKNOWN_LOAD | MGPU_NOTE_UNKNOWN_STORE))) {
        size_t n = mgpu_pool_large_buffers(out, max);
        return n < max ? n : max;
    }
    return mgpu_launch_param_buffers(k, params, buffer, out, max);
}

/* Moves are safe only with one launching thread: another could queue a
 * kernel on a buffer while its pages are remapped. */
static bool one_launching_thread(void)
{
    if (!launched_here) {
        launched_here = true;
        if (atomic_fetch_add(&launching_threads, 1) >= 1 && !atomic_exchange(&stopped, true)) {
            /* A buffer spread at its allocation would now stay spread
             * under every whole launch (PyTorch's autograd thread: an
             * elementwise chain after a backward pass ran at 0.24x of
             * one GPU on 4 x H100 with its 1 GiB tensors spread). */
            mgpu_pool_new_buffers_home();
            mgpu_info("placement: a second thread launches kernels; buffers stay where they are "
                      "from now on, and new ones start on the home GPU");
        }
    }
    return !atomic_load_explicit(&stopped, memory_order_relaxed);
}

#define BUFFERS_PER_LAUNCH 64

void mgpu_follow_launch(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                        int whole_gpu)
{
    if (!follow_on || !one_launching_thread())
        return;
    struct mgpu_pool_block used[BUFFERS_PER_LAUNCH];
    size_t n = buffers_used(k, params, buffer, used, BUFFERS_PER_LAUNCH);
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < n; i++) {
        if (used[i].bytes < MGPU_FOLLOW_MIN_BYTES)
            continue;
        struct buffer_use *u = use_of(&used[i]);
        if (u != NULL)
            count(u, whole_gpu < 0 ? SPLIT : whole_gpu, k != NULL ? k->name : NULL);
    }
    pthread_mutex_unlock(&lock);
}

/* Under lock: the records of the launch's buffers that a spread for a
 * split would move (on one GPU, moves left), into out; how many. */
static size_t spreadable(const struct mgpu_gpu_kernels *k, void *const *params, const void *buffer,
                         struct buffer_use **out)
{
    struct mgpu_pool_block used[BUFFERS_PER_LAUNCH];
    size_t n = k != NULL && k->param_use != NULL
                   ? mgpu_launch_param_buffers(k, params, buffer, used, BUFFERS_PER_LAUNCH)
                   : 0;
    size_t count = 0;
    for (size_t i = 0; i < n && i < BUFFERS_PER_LAUNCH; i++) {
        if (used[i].bytes < MGPU_FOLLOW_MIN_BYTES)
            continue;
        struct buffer_use *u = use_of(&used[i]);
        if (u != NULL && u->moves < MGPU_FOLLOW_MOVES_MAX && sole_gpu(u) >= 0)
            out[count++] = u;
    }
    return count;
}

double mgpu_follow_spread_seconds(const struct mgpu_gpu_kernels *k, void *const *params,
                                  const void *buffer)
{
    if (!follow_on || !one_launching_thread())
        return -1.0;
    const struct mgpu_link_model *model = mgpu_run_links();
    if (model == NULL)
        return -1.0;
    struct buffer_use *movable[BUFFERS_PER_LAUNCH];
    double seconds = 0.0;
    pthread_mutex_lock(&lock);
    size_t n = spreadable(k, params, buffer, movable);
    for (size_t i = 0; i < n && seconds >= 0.0; i++) {
        struct mgpu_link_move moves[MOVES_MAX];
        size_t nmoves = 0;
        if (planned_moves(movable[i], SPLIT, moves, &nmoves))
            seconds += mgpu_link_copy_seconds(model, moves, nmoves);
        else
            seconds = -1.0; /* too many runs to say: not weighed */
    }
    if (seconds > 0.0)
        seconds *= move_factor();
    pthread_mutex_unlock(&lock);
    return n > 0 ? seconds : -1.0;
}

int mgpu_follow_spread_for_split(const struct mgpu_gpu_kernels *k, void *const *params,
                                 const void *buffer)
{
    if (!follow_on || !one_launching_thread())
        return 0;
    struct buffer_use *movable[BUFFERS_PER_LAUNCH];
    int moved = 0;
    pthread_mutex_lock(&lock);
    size_t n = spreadable(k, params, buffer, movable);
    for (size_t i = 0; i < n; i++) {
        struct buffer_use *u = movable[i];
        if (!move(u, SPLIT, "before a split launch that pays only so", k->name))
            continue;
        u->for_split = true;
        u->streak_kind = NONE;
        u->streak = 0;
        moved++;
    }
    pthread_mutex_unlock(&lock);
    return moved;
}

void mgpu_follow_stats(struct mgpu_follow_stats *out)
{
    pthread_mutex_lock(&lock);
    *out = stats;
    out->stopped = atomic_load(&stopped);
    pthread_mutex_unlock(&lock);
}

size_t mgpu_follow_describe(char (*lines)[160], size_t max)
{
    pthread_mutex_lock(&lock);
    size_t n = 0;
    for (size_t i = 0; i < nuses && n < max; i++) {
        const struct buffer_use *u = &uses[i];
        struct mgpu_pool_block b;
        if (!mgpu_pool_find(u->start, &b) || b.id != u->id || b.start != u->start)
            continue; /* freed */
        char where[112], of[64] = "";
        if (u->moved_by[0])
            snprintf(of, sizeof of, " of %s", u->moved_by);
        if (u->on_gpu >= 0)
            snprintf(where, sizeof where, "on GPU %d, moved there after whole launches%s on it",
                     u->on_gpu, of);
        else if (u->on_gpu == SPLIT && u->for_split)
            snprintf(where, sizeof where, "spread for a split%s that pays only so", of);
        else if (u->on_gpu == SPLIT)
            snprintf(where, sizeof where, "spread after split launches%s", of);
        else if (sole_gpu(u) >= 0)
            snprintf(where, sizeof where, "on the home GPU, where it was made");
        else if (u->declined)
            snprintf(where, sizeof where, "where it was made (a move would not pay)");
        else
            snprintf(where, sizeof where, "where it was made (no streak of %d launches)",
                     MGPU_FOLLOW_STREAK);
        char line[320]; /* cut at the report's width below */
        snprintf(line, sizeof line,
                 "buffer of %.2f MiB: %s; %lu whole and %lu split launches, %d move%s%s",
                 (double)u->bytes / (1024.0 * 1024.0), where, u->whole_launches, u->split_launches,
                 u->moves, u->moves == 1 ? "" : "s",
                 u->moves >= MGPU_FOLLOW_MOVES_MAX ? " (the most allowed: it stays)" : "");
        snprintf(lines[n++], 160, "%.159s", line);
    }
    pthread_mutex_unlock(&lock);
    return n;
}
