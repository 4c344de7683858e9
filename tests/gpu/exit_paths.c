/* The ways a CUDA program can end, or leave, while GPU work is in flight:
 * one mode per way, each run as its own process by tests/gpu-exit-paths.sh
 * (under mgpu-run, and without it for the driver's own behaviour):
 *
 *   outstanding           split launches and async copies queued, exit(0) at once
 *   callback-exit         a cuLaunchHostFunc host function calls exit(3)
 *   stream-callback-exit  the same with cuStreamAddCallback
 *   graph-host-node-exit  the same in a graph's host node (cuGraphAddHostNode,
 *                         cuGraph(Exec)HostNodeSetParams), whose parameters read
 *                         back as the program set them
 *   graph-node-exit       the same through cuGraphAddNode, cuGraph(Exec)NodeSetParams
 *   abort                 work queued, then abort()
 *   fork-child-cuda       a child of the initialised process calls CUDA: errors, quickly
 *   fork-child-exit       a child of the initialised process just calls exit(0)
 *   unload-running        cuModuleUnload while split launches of the module run,
 *                         then load it again and check results
 *   held-stream           while a stream waits in a host function for the program's
 *                         thread, the calls the driver takes without waiting for it
 *                         (first launches, allocation, async copies, a new stream)
 *                         return; what callback-exit needs, said call by call
 *
 * Every mode prints "exit_paths: pid N" first (the script looks for the pid
 * among the GPU's processes afterwards), says what it does as it goes, and
 * ends with "exit_paths: MODE PASS" where it ends by itself. The kernels
 * are tests/fake/test_kernels.h's. */
#include "../fake/test_kernels.h"

#include <cuda.h>
#include <pthread.h>
#include <semaphore.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* Large enough that the queued work takes a good part of a second on an
 * H100 and that the pool spreads the buffers over every entry's part. */
#define ELEMENTS (32u << 20) /* 128 MiB per buffer */
#define QUEUED_LAUNCHES 64
/* A fill grid much smaller than the data: each thread loops, so each
 * launch runs for milliseconds and a queue of them for long. */
#define SLOW_BLOCKS 64
/* Launches queued on each side of the host function while the stream waits
 * at the gate. Plain, the thread queues them and opens the gate; under
 * mgpu-run --gpus 0x4 on an H100 that thread once never returned from the
 * first of them, where mgpu loaded the module's rewritten modules, and the driver's
 * module load waits for every stream of the context to empty. */
#define GATED_LAUNCHES 16
#define THREADS 256

static const char *mode;

#define CHECK(call)                                                                                \
    do {                                                                                           \
        CUresult r_ = (call);                                                                      \
        if (r_ != CUDA_SUCCESS) {                                                                  \
            const char *name_ = NULL;                                                              \
            cuGetErrorName(r_, &name_);                                                            \
            printf("exit_paths: %s FAIL: %s returned %d (%s)\n", mode, #call, (int)r_,             \
                   name_ ? name_ : "?");                                                           \
            fflush(stdout);                                                                        \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static void say(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static void say(const char *fmt, ...)
{
    char line[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    printf("exit_paths: %s\n", line);
    fflush(stdout);
}

struct gpu {
    CUcontext ctx;
    CUmodule module;
    CUfunction axpy, fill;
    CUstream stream;
    CUdeviceptr a, x, y; /* a: ELEMENTS unsigned; x, y: ELEMENTS floats */
    void *pinned;        /* ELEMENTS * 4 bytes of page-locked host memory */
};

static void load_kernels(struct gpu *g)
{
    CHECK(cuModuleLoadData(&g->module, mgpu_test_kernels_ptx));
    CHECK(cuModuleGetFunction(&g->axpy, g->module, MGPU_TEST_AXPY));
    CHECK(cuModuleGetFunction(&g->fill, g->module, MGPU_TEST_FILL));
}

static void setup(struct gpu *g)
{
    CUdevice dev;
    CHECK(cuInit(0));
    CHECK(cuDeviceGet(&dev, 0));
    CHECK(cuDevicePrimaryCtxRetain(&g->ctx, dev));
    CHECK(cuCtxSetCurrent(g->ctx));
    load_kernels(g);
    CHECK(cuStreamCreate(&g->stream, CU_STREAM_NON_BLOCKING));
    size_t bytes = (size_t)ELEMENTS * 4;
    CHECK(cuMemAlloc(&g->a, bytes));
    CHECK(cuMemAlloc(&g->x, bytes));
    CHECK(cuMemAlloc(&g->y, bytes));
    CHECK(cuMemAllocHost(&g->pinned, bytes));
    memset(g->pinned, 0, bytes);
}

static void fill(CUfunction fn, CUdeviceptr p, unsigned value, unsigned blocks, CUstream stream)
{
    unsigned n = ELEMENTS;
    void *args[] = {&p, &value, &n};
    CHECK(cuLaunchKernel(fn, blocks, 1, 1, THREADS, 1, 1, 0, stream, args, NULL));
}

static void axpy(struct gpu *g, float a, CUstream stream)
{
    unsigned n = ELEMENTS;
    void *args[] = {&g->y, &g->x, &a, &n};
    CHECK(cuLaunchKernel(g->axpy, (n + THREADS - 1) / THREADS, 1, 1, THREADS, 1, 1, 0, stream, args,
                         NULL));
}

/* Launches and copies on two streams, none waited for: slow fills of `a`,
 * axpys over x and y, copies in and out of pinned memory, and one from
 * pageable memory (which mgpu's workers carry out). */
static void queue_work(struct gpu *g, int launches)
{
    size_t bytes = (size_t)ELEMENTS * 4;
    CHECK(cuMemsetD32Async(g->x, 0x3f800000u, ELEMENTS, g->stream)); /* 1.0f */
    CHECK(cuMemsetD32Async(g->y, 0, ELEMENTS, g->stream));
    for (int i = 0; i < launches; i++) {
        fill(g->fill, g->a, (unsigned)i, SLOW_BLOCKS, NULL);
        axpy(g, 1.0f, g->stream);
        if (i % 16 == 0) {
            CHECK(cuMemcpyHtoDAsync(g->x, g->pinned, bytes, g->stream));
            CHECK(cuMemcpyDtoHAsync(g->pinned, g->a, bytes, NULL));
        }
    }
    static unsigned pageable[1 << 20];
    CHECK(cuMemcpyHtoDAsync(g->y, pageable, sizeof pageable, g->stream));
}

/* Whether the queued work is still running, as the program sees it. */
static const char *still_running(struct gpu *g)
{
    CUresult a = cuStreamQuery(NULL), b = cuStreamQuery(g->stream);
    return a == CUDA_ERROR_NOT_READY || b == CUDA_ERROR_NOT_READY ? "yes" : "no (finished already)";
}

static int check_fill(CUdeviceptr p, unsigned value)
{
    size_t bytes = (size_t)ELEMENTS * 4;
    unsigned *host = malloc(bytes);
    if (host == NULL)
        return 1;
    CHECK(cuMemcpyDtoH(host, p, bytes));
    for (unsigned i = 0; i < ELEMENTS; i++)
        if (host[i] != value + i) {
            printf("exit_paths: %s FAIL: element %u is %u, not %u\n", mode, i, host[i], value + i);
            free(host);
            return 1;
        }
    free(host);
    return 0;
}

static int check_axpy(CUdeviceptr y, float want)
{
    size_t bytes = (size_t)ELEMENTS * 4;
    float *host = malloc(bytes);
    if (host == NULL)
        return 1;
    CHECK(cuMemcpyDtoH(host, y, bytes));
    for (unsigned i = 0; i < ELEMENTS; i++)
        if (host[i] != want) {
            printf("exit_paths: %s FAIL: y[%u] is %g, not %g\n", mode, i, (double)host[i],
                   (double)want);
            free(host);
            return 1;
        }
    free(host);
    return 0;
}

static int outstanding(void)
{
    struct gpu g;
    setup(&g);
    queue_work(&g, QUEUED_LAUNCHES * 4);
    say("work still running at exit(0): %s", still_running(&g));
    exit(0);
}

static void CUDA_CB exit_in_host_fn(void *unused)
{
    (void)unused;
    say("%s", "host function: exit(3)");
    exit(3);
}

static void CUDA_CB exit_in_stream_callback(CUstream stream, CUresult status, void *unused)
{
    (void)stream;
    (void)status;
    exit_in_host_fn(unused);
}

/* Holds the stream until the program's thread has queued everything, so
 * that the exit cannot begin while that thread still makes driver calls
 * (the driver then fails them with CUDA_ERROR_DEINITIALIZED, and the
 * thread's own exit would race the host function's). */
static sem_t gate;

static void CUDA_CB wait_at_gate(void *unused)
{
    (void)unused;
    while (sem_wait(&gate) != 0)
        ;
}

/* Launches only: no pageable copy, which would wait for the stream and so
 * for the gate below. */
static void queue_launches(struct gpu *g, int launches)
{
    for (int i = 0; i < launches; i++) {
        fill(g->fill, g->a, (unsigned)i, SLOW_BLOCKS, NULL);
        axpy(g, 1.0f, g->stream);
    }
}

/* Where callback_exit puts the function that calls exit(3). */
enum exit_in {
    IN_HOST_FN,         /* cuLaunchHostFunc */
    IN_STREAM_CALLBACK, /* cuStreamAddCallback */
    IN_GRAPH_HOST_NODE, /* cuGraphAddHostNode, cuGraph(Exec)HostNodeSetParams */
    IN_GRAPH_NODE,      /* cuGraphAddNode, cuGraph(Exec)NodeSetParams */
};

static int host_node_runs;

static void CUDA_CB count_run(void *counter)
{
    ++*(int *)counter;
}

/* The node's parameters as the program reads them back: its own function
 * and data, whatever mgpu puts in their place. */
static void expect_host_node(CUgraphNode node, CUhostFn fn, void *data)
{
    CUDA_HOST_NODE_PARAMS got;
    CHECK(cuGraphHostNodeGetParams(node, &got));
    if (got.fn != fn || got.userData != data) {
        printf("exit_paths: %s FAIL: the host node's parameters read back as %p(%p), not the "
               "program's %p(%p)\n",
               mode, (void *)(uintptr_t)got.fn, got.userData, (void *)(uintptr_t)fn, data);
        exit(1);
    }
}

static CUgraphNodeParams host_node_params(CUhostFn fn, void *data)
{
    CUgraphNodeParams p;
    memset(&p, 0, sizeof p);
    p.type = CU_GRAPH_NODE_TYPE_HOST;
    p.host.fn = fn;
    p.host.userData = data;
    return p;
}

/* A graph of one host node, made with the calls of `how`, counting at
 * first; its executable graph is then set to call exit(3), so that each
 * kind of call (add, set, set in the executable graph) is used and the
 * last decides. */
static CUgraphExec exit_graph(enum exit_in how)
{
    CUgraph graph;
    CUgraphNode node;
    CUgraphExec exec;
    static int runs_before_exec;
    CHECK(cuGraphCreate(&graph, 0));
    if (how == IN_GRAPH_HOST_NODE) {
        CUDA_HOST_NODE_PARAMS first = {count_run, &host_node_runs};
        CHECK(cuGraphAddHostNode(&node, graph, NULL, 0, &first));
        expect_host_node(node, count_run, &host_node_runs);
        CUDA_HOST_NODE_PARAMS second = {count_run, &runs_before_exec};
        CHECK(cuGraphHostNodeSetParams(node, &second));
        expect_host_node(node, count_run, &runs_before_exec);
        CHECK(cuGraphInstantiate(&exec, graph, 0));
        CUDA_HOST_NODE_PARAMS exiting = {exit_in_host_fn, NULL};
        CHECK(cuGraphExecHostNodeSetParams(exec, node, &exiting));
    } else {
        CUgraphNodeParams first = host_node_params(count_run, &host_node_runs);
        CHECK(cuGraphAddNode(&node, graph, NULL, NULL, 0, &first));
        if (first.host.fn != count_run || first.host.userData != &host_node_runs) {
            printf("exit_paths: %s FAIL: cuGraphAddNode changed the program's parameters\n", mode);
            exit(1);
        }
        expect_host_node(node, count_run, &host_node_runs);
        CUgraphNodeParams second = host_node_params(count_run, &runs_before_exec);
        CHECK(cuGraphNodeSetParams(node, &second));
        expect_host_node(node, count_run, &runs_before_exec);
        CHECK(cuGraphInstantiate(&exec, graph, 0));
        CUgraphNodeParams exiting = host_node_params(exit_in_host_fn, NULL);
        CHECK(cuGraphExecNodeSetParams(exec, node, &exiting));
    }
    say("%s", "graph made: one host node, set to call exit(3) in its executable graph");
    return exec;
}

static int callback_exit(enum exit_in how)
{
    struct gpu g;
    setup(&g);
    CUgraphExec exec = how == IN_GRAPH_HOST_NODE || how == IN_GRAPH_NODE ? exit_graph(how) : NULL;
    sem_init(&gate, 0, 0);
    CHECK(cuLaunchHostFunc(g.stream, wait_at_gate, NULL));
    queue_launches(&g, GATED_LAUNCHES);
    if (how == IN_STREAM_CALLBACK)
        CHECK(cuStreamAddCallback(g.stream, exit_in_stream_callback, NULL, 0));
    else if (how == IN_HOST_FN)
        CHECK(cuLaunchHostFunc(g.stream, exit_in_host_fn, NULL));
    else
        CHECK(cuGraphLaunch(exec, g.stream));
    /* Work behind the callback: it waits for the callback, which never
     * returns. */
    queue_launches(&g, GATED_LAUNCHES);
    say("%s", "host function queued; opening the gate and waiting without the driver");
    sem_post(&gate);
    /* The process ends in the host function; no driver call here. */
    for (int waited = 0; waited < 50; waited++) {
        struct timespec second = {1, 0};
        nanosleep(&second, NULL);
    }
    printf("exit_paths: %s FAIL: the process did not end in the host function within 50 s\n", mode);
    return 1;
}

/* The step held_stream is in, for its watchdog to name. */
static const char *volatile held_step = "setting up";
static volatile bool held_done, held_waited;

/* Opens the gate itself after 20 s, so that a call that waits for the held
 * stream is named instead of hanging the test. */
static void *held_watchdog(void *unused)
{
    (void)unused;
    for (int i = 0; i < 2000 && !held_done; i++)
        usleep(10000);
    if (held_done)
        return NULL;
    printf("exit_paths: held-stream FAIL: %s waited 20 s for the stream held in a host function, "
           "which the driver alone does not\n",
           held_step);
    fflush(stdout);
    held_waited = true;
    sem_post(&gate);
    return NULL;
}

static int held_stream(void)
{
    struct gpu g;
    setup(&g);
    CHECK(cuMemsetD32(g.x, 0x3f800000u, ELEMENTS)); /* 1.0f */
    CHECK(cuMemsetD32(g.y, 0, ELEMENTS));
    CUdeviceptr spare;
    CHECK(cuMemAlloc(&spare, (size_t)ELEMENTS * 4));
    CHECK(cuCtxSynchronize());
    sem_init(&gate, 0, 0);
    CHECK(cuLaunchHostFunc(g.stream, wait_at_gate, NULL));
    pthread_t watchdog;
    if (pthread_create(&watchdog, NULL, held_watchdog, NULL) != 0)
        return 1;
    double t = now();
    held_step = "the first launch of mgpu_test_fill, on the held stream";
    fill(g.fill, g.a, 21, SLOW_BLOCKS, g.stream);
    held_step = "the first launch of mgpu_test_axpy, on the legacy stream";
    axpy(&g, 2.0f, NULL);
    held_step = "cuMemAlloc of 64 MiB";
    CUdeviceptr extra;
    CHECK(cuMemAlloc(&extra, 64u << 20));
    held_step = "cuMemcpyHtoDAsync from pinned memory on the held stream";
    CHECK(cuMemcpyHtoDAsync(extra, g.pinned, 64u << 20, g.stream));
    held_step = "cuMemsetD32Async on the held stream";
    CHECK(cuMemsetD32Async(extra, 7, 16u << 20, g.stream));
    held_step = "cuStreamCreate and a launch on the new stream";
    CUstream other;
    CHECK(cuStreamCreate(&other, CU_STREAM_NON_BLOCKING));
    fill(g.fill, spare, 33, SLOW_BLOCKS, other);
    held_step = "cuModuleGetFunction";
    CUfunction again;
    CHECK(cuModuleGetFunction(&again, g.module, MGPU_TEST_FILL));
    held_done = true;
    double took = now() - t;
    pthread_join(watchdog, NULL);
    if (held_waited)
        return 1;
    say("every call returned in %.3f s with the stream held; opening the gate", took);
    sem_post(&gate);
    CHECK(cuCtxSynchronize());
    if (check_fill(g.a, 21) || check_axpy(g.y, 2.0f) || check_fill(spare, 33))
        return 1;
    unsigned word;
    CHECK(cuMemcpyDtoH(&word, extra + 4, sizeof word));
    if (word != 7) {
        printf("exit_paths: %s FAIL: the memset behind the gate left %u, not 7\n", mode, word);
        return 1;
    }
    CHECK(cuMemFree(extra));
    CHECK(cuMemFree(spare));
    CHECK(cuStreamDestroy(other));
    printf("exit_paths: %s PASS\n", mode);
    return 0;
}

static int abort_mode(void)
{
    struct gpu g;
    setup(&g);
    queue_work(&g, QUEUED_LAUNCHES);
    say("work still running at abort(): %s", still_running(&g));
    abort();
}

/* Runs the parent's own check: a split fill and an axpy on its buffers,
 * after its child is gone. */
static int parent_after_child(struct gpu *g, pid_t child, int want_status)
{
    int status = 0;
    double until = now() + 30;
    pid_t w;
    while ((w = waitpid(child, &status, WNOHANG)) == 0 && now() < until)
        usleep(10000);
    if (w == 0) {
        kill(child, SIGKILL);
        waitpid(child, &status, 0);
        printf("exit_paths: %s FAIL: the child did not end within 30 s (killed)\n", mode);
        return 1;
    }
    if (!WIFEXITED(status) || WEXITSTATUS(status) != want_status) {
        printf("exit_paths: %s FAIL: the child ended with %s %d, not exit status %d\n", mode,
               WIFEXITED(status) ? "exit status" : "signal",
               WIFEXITED(status) ? WEXITSTATUS(status) : WTERMSIG(status), want_status);
        return 1;
    }
    say("%s", "the child ended as expected; the parent goes on");
    /* The work queued before the fork may still run on the other stream. */
    CHECK(cuCtxSynchronize());
    fill(g->fill, g->a, 11, SLOW_BLOCKS, NULL);
    CHECK(cuMemsetD32(g->x, 0x40000000u, ELEMENTS)); /* 2.0f */
    CHECK(cuMemsetD32(g->y, 0x3f800000u, ELEMENTS)); /* 1.0f */
    axpy(g, 3.0f, NULL);
    CHECK(cuCtxSynchronize());
    if (check_fill(g->a, 11) || check_axpy(g->y, 7.0f))
        return 1;
    printf("exit_paths: %s PASS\n", mode);
    return 0;
}

/* The parent has initialised the driver, split a kernel (so mgpu's
 * workers and slice watch run) and has work in flight when it forks. */
static pid_t fork_busy(struct gpu *g)
{
    setup(g);
    fill(g->fill, g->a, 5, SLOW_BLOCKS, NULL);
    CHECK(cuCtxSynchronize());
    if (check_fill(g->a, 5))
        exit(1);
    queue_work(g, QUEUED_LAUNCHES / 4);
    fflush(stdout);
    pid_t child = fork();
    if (child < 0) {
        perror("fork");
        exit(1);
    }
    if (child > 0) {
        printf("exit_paths: child pid %d\n", (int)child);
        fflush(stdout);
    }
    return child;
}

/* One CUDA call in the child: it must fail, within a few seconds. */
static bool child_call_fails(const char *what, CUresult r, double started)
{
    double took = now() - started;
    printf("exit_paths: child: %s returned %d after %.3f s\n", what, (int)r, took);
    fflush(stdout);
    return r != CUDA_SUCCESS && took < 5;
}

static int fork_child_cuda(void)
{
    struct gpu g;
    pid_t child = fork_busy(&g);
    if (child > 0)
        return parent_after_child(&g, child, 0);
    bool ok = true;
    double t = now();
    ok &= child_call_fails("cuInit", cuInit(0), t);
    CUdeviceptr p = 0;
    t = now();
    ok &= child_call_fails("cuMemAlloc", cuMemAlloc(&p, 1 << 20), t);
    unsigned value = 1, n = 1024;
    CUdeviceptr a = g.a;
    void *args[] = {&a, &value, &n};
    t = now();
    ok &= child_call_fails("cuLaunchKernel",
                           cuLaunchKernel(g.fill, 4, 1, 1, THREADS, 1, 1, 0, NULL, args, NULL), t);
    t = now();
    ok &= child_call_fails("cuCtxSynchronize", cuCtxSynchronize(), t);
    say("child: %s", ok ? "every call failed quickly; exit" : "FAIL: a call succeeded or was slow");
    exit(ok ? 0 : 1);
}

static int fork_child_exit(void)
{
    struct gpu g;
    pid_t child = fork_busy(&g);
    if (child > 0)
        return parent_after_child(&g, child, 0);
    say("%s", "child: exit(0)");
    exit(0);
}

static int unload_running(void)
{
    struct gpu g;
    setup(&g);
    CHECK(cuMemsetD32(g.x, 0x3f800000u, ELEMENTS)); /* 1.0f */
    CHECK(cuMemsetD32(g.y, 0, ELEMENTS));
    CHECK(cuCtxSynchronize());
    for (int i = 0; i < QUEUED_LAUNCHES; i++) {
        fill(g.fill, g.a, (unsigned)i, SLOW_BLOCKS, NULL);
        axpy(&g, 1.0f, NULL);
    }
    say("work running when the module is unloaded: %s", still_running(&g));
    double t = now();
    CHECK(cuModuleUnload(g.module));
    printf("exit_paths: cuModuleUnload took %.3f s\n", now() - t);
    CHECK(cuCtxSynchronize());
    if (check_fill(g.a, QUEUED_LAUNCHES - 1) || check_axpy(g.y, (float)QUEUED_LAUNCHES))
        return 1;
    say("%s", "the launches queued before the unload all ran; loading the module again");
    load_kernels(&g);
    for (int i = 0; i < 4; i++) {
        fill(g.fill, g.a, 100u + (unsigned)i, SLOW_BLOCKS, g.stream);
        axpy(&g, 2.0f, g.stream);
    }
    CHECK(cuStreamSynchronize(g.stream));
    if (check_fill(g.a, 103) || check_axpy(g.y, (float)QUEUED_LAUNCHES + 8.0f))
        return 1;
    CHECK(cuModuleUnload(g.module));
    printf("exit_paths: %s PASS\n", mode);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(
            stderr,
            "usage: exit_paths outstanding|callback-exit|stream-callback-exit|abort|"
            "graph-host-node-exit|graph-node-exit|fork-child-cuda|fork-child-exit|unload-running|"
            "held-stream\n");
        return 2;
    }
    mode = argv[1];
    printf("exit_paths: pid %d, mode %s\n", (int)getpid(), mode);
    fflush(stdout);
    if (strcmp(mode, "outstanding") == 0)
        return outstanding();
    if (strcmp(mode, "callback-exit") == 0)
        return callback_exit(IN_HOST_FN);
    if (strcmp(mode, "stream-callback-exit") == 0)
        return callback_exit(IN_STREAM_CALLBACK);
    if (strcmp(mode, "graph-host-node-exit") == 0)
        return callback_exit(IN_GRAPH_HOST_NODE);
    if (strcmp(mode, "graph-node-exit") == 0)
        return callback_exit(IN_GRAPH_NODE);
    if (strcmp(mode, "abort") == 0)
        return abort_mode();
    if (strcmp(mode, "fork-child-cuda") == 0)
        return fork_child_cuda();
    if (strcmp(mode, "fork-child-exit") == 0)
        return fork_child_exit();
    if (strcmp(mode, "unload-running") == 0)
        return unload_running();
    if (strcmp(mode, "held-stream") == 0)
        return held_stream();
    fprintf(stderr, "exit_paths: unknown mode %s\n", mode);
    return 2;
}
