/* Owns the wrapping of the program's host functions: the hooks of the
 * calls that queue them on a stream or put them in a graph's host node,
 * and the records the wrappers run from; the wrappers mark the driver's
 * callback thread while the program's function runs
 * (base/callback_thread.h). */
#include "base/callback_thread.h"

#include "src/hooks/hook_table.h"
#include "base/pointer_hash.h"
#include "base/real_driver.h"

#include <cuda.h>
#include <cudaTypedefs.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>

MGPU_DECLARE_HOOK(cuLaunchHostFunc, PFN_cuLaunchHostFunc_v10000);
MGPU_DECLARE_HOOK(cuLaunchHostFunc_ptsz, PFN_cuLaunchHostFunc_v10000_ptsz);
MGPU_DECLARE_HOOK(cuStreamAddCallback, PFN_cuStreamAddCallback_v5000);
MGPU_DECLARE_HOOK(cuStreamAddCallback_ptsz, PFN_cuStreamAddCallback_v7000_ptsz);
MGPU_DECLARE_HOOK(cuGraphAddHostNode, PFN_cuGraphAddHostNode_v10000);
MGPU_DECLARE_HOOK(cuGraphHostNodeSetParams, PFN_cuGraphHostNodeSetParams_v10000);
MGPU_DECLARE_HOOK(cuGraphHostNodeGetParams, PFN_cuGraphHostNodeGetParams_v10000);
MGPU_DECLARE_HOOK(cuGraphExecHostNodeSetParams, PFN_cuGraphExecHostNodeSetParams_v10020);
MGPU_DECLARE_HOOK(cuGraphAddNode, PFN_cuGraphAddNode_v12020);
MGPU_DECLARE_HOOK(cuGraphAddNode_v2, PFN_cuGraphAddNode_v12030);
MGPU_DECLARE_HOOK(cuGraphNodeSetParams, PFN_cuGraphNodeSetParams_v12020);
MGPU_DECLARE_HOOK(cuGraphExecNodeSetParams, PFN_cuGraphExecNodeSetParams_v12020);

/* The program's function and its argument, handed to the wrapper. */
struct host_call {
    CUhostFn fn;
    CUstreamCallback callback;
    void *data;
    bool kept; /* may run many times: see kept_call */
};

/* A record that is not kept is freed before the program's function runs:
 * a function that calls exit() never returns here. */
static void CUDA_CB run_host_fn(void *arg)
{
    struct host_call call = *(struct host_call *)arg;
    if (!call.kept)
        free(arg);
    mgpu_callback_enter();
    call.fn(call.data);
    mgpu_callback_leave();
}

static void CUDA_CB run_stream_callback(CUstream stream, CUresult status, void *arg)
{
    struct host_call call = *(struct host_call *)arg;
    if (!call.kept)
        free(arg);
    mgpu_callback_enter();
    call.callback(stream, status, call.data);
    mgpu_callback_leave();
}

/* Records of functions that may run any number of times: graph host nodes
 * and functions queued on a stream being captured. A node is copied into
 * clones and executable graphs that outlive anything mgpu could watch, so
 * these records are never freed; there is one per distinct function and
 * data, so that a program that captures or sets the same host function
 * again and again does not grow them. Open addressing, under kept_lock. */
static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct host_call **kept;
static size_t kept_capacity, kept_count;

static size_t kept_hash(CUhostFn fn, CUstreamCallback callback, void *data)
{
    return mgpu_pointer_hash(data) ^
           mgpu_pointer_hash((void *)((uintptr_t)fn ^ (uintptr_t)callback));
}

static bool kept_grow(void)
{
    size_t capacity = kept_capacity ? kept_capacity * 2 : 64;
    struct host_call **bigger = calloc(capacity, sizeof *bigger);
    if (bigger == NULL)
        return false;
    for (size_t i = 0; i < kept_capacity; i++) {
        struct host_call *c = kept[i];
        if (c == NULL)
            continue;
        size_t j = kept_hash(c->fn, c->callback, c->data) & (capacity - 1);
        while (bigger[j] != NULL)
            j = (j + 1) & (capacity - 1);
        bigger[j] = c;
    }
    free(kept);
    kept = bigger;
    kept_capacity = capacity;
    return true;
}

/* The kept record of fn or callback with data; NULL when out of memory. */
static struct host_call *kept_call(CUhostFn fn, CUstreamCallback callback, void *data)
{
    struct host_call *found = NULL;
    pthread_mutex_lock(&kept_lock);
    if ((kept_count + 1) * 2 <= kept_capacity || kept_grow()) {
        size_t i = kept_hash(fn, callback, data) & (kept_capacity - 1);
        for (; kept[i] != NULL; i = (i + 1) & (kept_capacity - 1))
            if (kept[i]->fn == fn && kept[i]->callback == callback && kept[i]->data == data) {
                found = kept[i];
                break;
            }
        if (found == NULL && (found = malloc(sizeof *found)) != NULL) {
            *found = (struct host_call){fn, callback, data, true};
            kept[i] = found;
            kept_count++;
        }
    }
    pthread_mutex_unlock(&kept_lock);
    return found;
}

/* A wrapper record for a host function queued on `stream` (as the
 * non-_ptsz calls name it), or NULL to queue the program's function as it
 * is: when the driver cannot say whether the stream is captured, and when
 * no memory is left. In a stream capture the function becomes a graph
 * node, so its record is kept. */
static struct host_call *wrap(CUstream stream, CUhostFn fn, CUstreamCallback callback, void *data)
{
    CUstreamCaptureStatus capture = CU_STREAM_CAPTURE_STATUS_NONE;
    if (mgpu_drv.cuStreamIsCapturing == NULL ||
        mgpu_drv.cuStreamIsCapturing(stream, &capture) != CUDA_SUCCESS)
        return NULL;
    if (capture != CU_STREAM_CAPTURE_STATUS_NONE)
        return kept_call(fn, callback, data);
    struct host_call *call = malloc(sizeof *call);
    if (call != NULL)
        *call = (struct host_call){fn, callback, data, false};
    return call;
}

static void unused_call(struct host_call *call)
{
    if (!call->kept)
        free(call);
}

/* Queues fn through `queue` (cuLaunchHostFunc or its _ptsz form) on
 * `stream`, which the call names as `as_named`. */
static CUresult queue_host_fn(PFN_cuLaunchHostFunc_v10000 queue, CUstream stream, CUstream as_named,
                              CUhostFn fn, void *data)
{
    struct host_call *call = fn != NULL ? wrap(as_named, fn, NULL, data) : NULL;
    if (call == NULL)
        return queue(stream, fn, data);
    CUresult r = queue(stream, run_host_fn, call);
    if (r != CUDA_SUCCESS)
        unused_call(call);
    return r;
}

static CUresult queue_callback(PFN_cuStreamAddCallback_v5000 queue, CUstream stream,
                               CUstream as_named, CUstreamCallback callback, void *data,
                               unsigned flags)
{
    struct host_call *call = callback != NULL ? wrap(as_named, NULL, callback, data) : NULL;
    if (call == NULL)
        return queue(stream, callback, data, flags);
    CUresult r = queue(stream, run_stream_callback, call, flags);
    if (r != CUDA_SUCCESS)
        unused_call(call);
    return r;
}

static CUresult CUDAAPI hook_cuLaunchHostFunc(CUstream stream, CUhostFn fn, void *data)
{
    MGPU_HOOK_ENTRY(cuLaunchHostFunc);
    return queue_host_fn(real_cuLaunchHostFunc, stream, stream, fn, data);
}

static CUresult CUDAAPI hook_cuLaunchHostFunc_ptsz(CUstream stream, CUhostFn fn, void *data)
{
    MGPU_HOOK_ENTRY(cuLaunchHostFunc_ptsz);
    return queue_host_fn(real_cuLaunchHostFunc_ptsz, stream, mgpu_per_thread_stream(stream), fn,
                         data);
}

static CUresult CUDAAPI hook_cuStreamAddCallback(CUstream stream, CUstreamCallback callback,
                                                 void *data, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuStreamAddCallback);
    return queue_callback(real_cuStreamAddCallback, stream, stream, callback, data, flags);
}

static CUresult CUDAAPI hook_cuStreamAddCallback_ptsz(CUstream stream, CUstreamCallback callback,
                                                      void *data, unsigned flags)
{
    MGPU_HOOK_ENTRY(cuStreamAddCallback_ptsz);
    return queue_callback(real_cuStreamAddCallback_ptsz, stream, mgpu_per_thread_stream(stream),
                          callback, data, flags);
}

/* A host node's parameters with the program's function wrapped: false
 * (pass them as they are) for a NULL function, which the driver refuses
 * itself, and when no memory is left. */
static bool wrap_node(const CUDA_HOST_NODE_PARAMS *program, CUDA_HOST_NODE_PARAMS *wrapped)
{
    if (program == NULL || program->fn == NULL)
        return false;
    struct host_call *call = kept_call(program->fn, NULL, program->userData);
    if (call == NULL)
        return false;
    *wrapped = (CUDA_HOST_NODE_PARAMS){.fn = run_host_fn, .userData = call};
    return true;
}

/* What the program gave, where the driver answers with a wrapper. */
static void unwrap_node(CUDA_HOST_NODE_PARAMS *params)
{
    if (params->fn != run_host_fn || params->userData == NULL)
        return;
    const struct host_call *call = params->userData;
    params->fn = call->fn;
    params->userData = call->data;
}

static CUresult CUDAAPI hook_cuGraphAddHostNode(CUgraphNode *node, CUgraph graph,
                                                const CUgraphNode *dependencies, size_t count,
                                                const CUDA_HOST_NODE_PARAMS *params)
{
    MGPU_HOOK_ENTRY(cuGraphAddHostNode);
    CUDA_HOST_NODE_PARAMS wrapped;
    return real_cuGraphAddHostNode(node, graph, dependencies, count,
                                   wrap_node(params, &wrapped) ? &wrapped : params);
}

static CUresult CUDAAPI hook_cuGraphHostNodeSetParams(CUgraphNode node,
                                                      const CUDA_HOST_NODE_PARAMS *params)
{
    MGPU_HOOK_ENTRY(cuGraphHostNodeSetParams);
    CUDA_HOST_NODE_PARAMS wrapped;
    return real_cuGraphHostNodeSetParams(node, wrap_node(params, &wrapped) ? &wrapped : params);
}

static CUresult CUDAAPI hook_cuGraphExecHostNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                          const CUDA_HOST_NODE_PARAMS *params)
{
    MGPU_HOOK_ENTRY(cuGraphExecHostNodeSetParams);
    CUDA_HOST_NODE_PARAMS wrapped;
    return real_cuGraphExecHostNodeSetParams(exec, node,
                                             wrap_node(params, &wrapped) ? &wrapped : params);
}

static CUresult CUDAAPI hook_cuGraphHostNodeGetParams(CUgraphNode node,
                                                      CUDA_HOST_NODE_PARAMS *params)
{
    MGPU_HOOK_ENTRY(cuGraphHostNodeGetParams);
    CUresult r = real_cuGraphHostNodeGetParams(node, params);
    if (r == CUDA_SUCCESS && params != NULL)
        unwrap_node(params);
    return r;
}

/* The generic node calls: only a host node's parameters are wrapped. The
 * driver may write into the parameters of other kinds (an allocation
 * node's address); for a host node whatever it writes is copied back with
 * the program's function in place of the wrapper. */
#define WITH_WRAPPED_NODE(params, call_with)                                                       \
    do {                                                                                           \
        struct host_call *call_ = NULL;                                                            \
        if ((params) != NULL && (params)->type == CU_GRAPH_NODE_TYPE_HOST &&                       \
            (params)->host.fn != NULL)                                                             \
            call_ = kept_call((params)->host.fn, NULL, (params)->host.userData);                   \
        if (call_ == NULL)                                                                         \
            return call_with(params);                                                              \
        CUgraphNodeParams copy_ = *(params);                                                       \
        copy_.host.fn = run_host_fn;                                                               \
        copy_.host.userData = call_;                                                               \
        CUresult r_ = call_with(&copy_);                                                           \
        copy_.host.fn = call_->fn;                                                                 \
        copy_.host.userData = call_->data;                                                         \
        *(params) = copy_;                                                                         \
        return r_;                                                                                 \
    } while (0)

static CUresult CUDAAPI hook_cuGraphAddNode(CUgraphNode *node, CUgraph graph,
                                            const CUgraphNode *dependencies, size_t count,
                                            CUgraphNodeParams *params)
{
    MGPU_HOOK_ENTRY(cuGraphAddNode);
#define ADD(p) real_cuGraphAddNode(node, graph, dependencies, count, p)
    WITH_WRAPPED_NODE(params, ADD);
#undef ADD
}

static CUresult CUDAAPI hook_cuGraphAddNode_v2(CUgraphNode *node, CUgraph graph,
                                               const CUgraphNode *dependencies,
                                               const CUgraphEdgeData *edges, size_t count,
                                               CUgraphNodeParams *params)
{
    MGPU_HOOK_ENTRY(cuGraphAddNode_v2);
#define ADD(p) real_cuGraphAddNode_v2(node, graph, dependencies, edges, count, p)
    WITH_WRAPPED_NODE(params, ADD);
#undef ADD
}

static CUresult CUDAAPI hook_cuGraphNodeSetParams(CUgraphNode node, CUgraphNodeParams *params)
{
    MGPU_HOOK_ENTRY(cuGraphNodeSetParams);
#define SET(p) real_cuGraphNodeSetParams(node, p)
    WITH_WRAPPED_NODE(params, SET);
#undef SET
}

static CUresult CUDAAPI hook_cuGraphExecNodeSetParams(CUgraphExec exec, CUgraphNode node,
                                                      CUgraphNodeParams *params)
{
    MGPU_HOOK_ENTRY(cuGraphExecNodeSetParams);
#define SET(p) real_cuGraphExecNodeSetParams(exec, node, p)
    WITH_WRAPPED_NODE(params, SET);
#undef SET
}

const struct mgpu_hook mgpu_host_function_hooks[] = {
    MGPU_HOOK(cuLaunchHostFunc),
    MGPU_HOOK(cuLaunchHostFunc_ptsz),
    MGPU_HOOK(cuStreamAddCallback),
    MGPU_HOOK(cuStreamAddCallback_ptsz),
    MGPU_HOOK(cuGraphAddHostNode),
    MGPU_HOOK(cuGraphHostNodeSetParams),
    MGPU_HOOK(cuGraphHostNodeGetParams),
    MGPU_HOOK(cuGraphExecHostNodeSetParams),
    MGPU_HOOK(cuGraphAddNode),
    MGPU_HOOK(cuGraphAddNode_v2),
    MGPU_HOOK(cuGraphNodeSetParams),
    MGPU_HOOK(cuGraphExecNodeSetParams),
    MGPU_HOOK_END,
};
