/* Calls that change which context is current, destroy contexts, or begin and end
 * stream captures. None is recorded: each passes through with exactly its result,
 * out-parameters and errno, and then tells base/ctx_state.c, whose kept answers
 * (current device, capture in progress) spare the allocation hooks their driver
 * queries. The runtime's calls arrive here as driver calls too (it gets its driver
 * functions from our cuGetProcAddress); the runtime wrappers are for a shared
 * libcudart reaching the driver in ways we would not see. */
#include "hook/cuda_abi.h"

#include "base/ctx_state.h"
#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

/* The kept answers may be trusted once these wrappers are in the process, which
 * is when the library is loaded; with CUDAFRAG_ENABLE=0 lookups hand out the
 * driver's own functions, so the wrappers would miss calls. */
__attribute__((constructor)) static void cf_ctx_start(void)
{
    if (cf_hook_enabled()) cf_ctx_track();
}

/* rc = the real sym(args...), then `then`. */
#define DRV_THEN(sym, call, then)                                                                  \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_DRV(sym);                                                  \
        if (real == NULL) return cf_missing_driver(#sym);                                          \
        CUresult rc = (call);                                                                      \
        then;                                                                                      \
        return rc;                                                                                 \
    } while (0)
#define RT_THEN(sym, call, then)                                                                   \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_RT(sym);                                                   \
        if (real == NULL) return cf_missing_runtime(#sym);                                         \
        cudaError_t rc = (call);                                                                   \
        then;                                                                                      \
        return rc;                                                                                 \
    } while (0)

/* ---- the calling thread's current context ---- */

CF_EXPORT CUresult CUDAAPI cuCtxSetCurrent(CUcontext ctx)
{
    DRV_THEN(cuCtxSetCurrent, real(ctx), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxPushCurrent(CUcontext ctx)
{
    DRV_THEN(cuCtxPushCurrent, real(ctx), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxPushCurrent_v2(CUcontext ctx)
{
    DRV_THEN(cuCtxPushCurrent_v2, real(ctx), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxPopCurrent(CUcontext *pctx)
{
    DRV_THEN(cuCtxPopCurrent, real(pctx), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxPopCurrent_v2(CUcontext *pctx)
{
    DRV_THEN(cuCtxPopCurrent_v2, real(pctx), cf_ctx_thread_changed());
}

/* A created context is pushed onto the calling thread's stack. */
CF_EXPORT CUresult CUDAAPI cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    DRV_THEN(cuCtxCreate, real(pctx, flags, dev), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    DRV_THEN(cuCtxCreate_v2, real(pctx, flags, dev), cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray,
                                          int numParams, unsigned int flags, CUdevice dev)
{
    DRV_THEN(cuCtxCreate_v3, real(pctx, paramsArray, numParams, flags, dev),
             cf_ctx_thread_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                          unsigned int flags, CUdevice dev)
{
    DRV_THEN(cuCtxCreate_v4, real(pctx, ctxCreateParams, flags, dev), cf_ctx_thread_changed());
}

CF_EXPORT cudaError_t CUDARTAPI cudaSetDevice(int device)
{
    RT_THEN(cudaSetDevice, real(device), cf_ctx_thread_changed());
}

/* ---- contexts destroyed: other threads may have had them current, and their
 * streams are gone ---- */

CF_EXPORT CUresult CUDAAPI cuCtxDestroy(CUcontext ctx)
{
    DRV_THEN(cuCtxDestroy, real(ctx), cf_ctx_all_changed());
}

CF_EXPORT CUresult CUDAAPI cuCtxDestroy_v2(CUcontext ctx)
{
    DRV_THEN(cuCtxDestroy_v2, real(ctx), cf_ctx_all_changed());
}

/* The last detach destroys the context (deprecated, still exported). */
CF_EXPORT CUresult CUDAAPI cuCtxDetach(CUcontext ctx)
{
    DRV_THEN(cuCtxDetach, real(ctx), cf_ctx_all_changed());
}

/* The last release of a primary context destroys it. */
CF_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease(CUdevice dev)
{
    DRV_THEN(cuDevicePrimaryCtxRelease, real(dev), cf_ctx_all_changed());
}

CF_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    DRV_THEN(cuDevicePrimaryCtxRelease_v2, real(dev), cf_ctx_all_changed());
}

CF_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev)
{
    DRV_THEN(cuDevicePrimaryCtxReset, real(dev), cf_ctx_all_changed());
}

CF_EXPORT CUresult CUDAAPI cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    DRV_THEN(cuDevicePrimaryCtxReset_v2, real(dev), cf_ctx_all_changed());
}

CF_EXPORT CUresult CUDAAPI cuGreenCtxDestroy(CUgreenCtx hCtx)
{
    DRV_THEN(cuGreenCtxDestroy, real(hCtx), cf_ctx_all_changed());
}

CF_EXPORT cudaError_t CUDARTAPI cudaDeviceReset(void)
{
    RT_THEN(cudaDeviceReset, real(), cf_ctx_all_changed());
}

CF_EXPORT cudaError_t CUDARTAPI cudaThreadExit(void)
{
    RT_THEN(cudaThreadExit, real(), cf_ctx_all_changed());
}

/* ---- stream capture ----
 * Counted before the real begin, so that no thread can see no capture in progress
 * while one is; a failed begin gives it back. A capture ends when its end returns
 * success or "invalidated" (the stream has left capture mode either way); any other
 * result leaves the count up, which only means the driver is asked as before. The
 * runtime's begin reaches the driver's: only the outermost call counts. */

static __thread bool in_capture_call __attribute__((tls_model("initial-exec")));

#define CAPTURE(rc, call, before, end_if)                                                          \
    do {                                                                                           \
        bool outer_ = !in_capture_call;                                                            \
        in_capture_call = true;                                                                    \
        if (outer_) before;                                                                        \
        rc = (call);                                                                               \
        if (outer_) {                                                                              \
            if (end_if) cf_capture_end();                                                          \
            in_capture_call = false;                                                               \
        }                                                                                          \
    } while (0)
/* A begin: counted before the call, given back unless it succeeded. */
#define BEGIN(rc, call, success) CAPTURE(rc, call, cf_capture_begin(), (rc) != (success))
/* An end: the stream has left capture mode. */
#define END(rc, call, success, invalidated)                                                        \
    CAPTURE(rc, call, (void)0, (rc) == (success) || (rc) == (invalidated))

#define DRV_BEGIN(sym, call)                                                                       \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_DRV(sym);                                                  \
        if (real == NULL) return cf_missing_driver(#sym);                                          \
        CUresult rc;                                                                               \
        BEGIN(rc, call, CUDA_SUCCESS);                                                             \
        return rc;                                                                                 \
    } while (0)
#define DRV_END(sym, call)                                                                         \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_DRV(sym);                                                  \
        if (real == NULL) return cf_missing_driver(#sym);                                          \
        CUresult rc;                                                                               \
        END(rc, call, CUDA_SUCCESS, CUDA_ERROR_STREAM_CAPTURE_INVALIDATED);                        \
        return rc;                                                                                 \
    } while (0)
#define RT_BEGIN(sym, call)                                                                        \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_RT(sym);                                                   \
        if (real == NULL) return cf_missing_runtime(#sym);                                         \
        cudaError_t rc;                                                                            \
        BEGIN(rc, call, cudaSuccess);                                                              \
        return rc;                                                                                 \
    } while (0)
#define RT_END(sym, call)                                                                          \
    do {                                                                                           \
        __typeof__(&sym) real = CF_REAL_RT(sym);                                                   \
        if (real == NULL) return cf_missing_runtime(#sym);                                         \
        cudaError_t rc;                                                                            \
        END(rc, call, cudaSuccess, cudaErrorStreamCaptureInvalidated);                             \
        return rc;                                                                                 \
    } while (0)

CF_EXPORT CUresult CUDAAPI cuStreamBeginCapture(CUstream hStream)
{
    DRV_BEGIN(cuStreamBeginCapture, real(hStream));
}

CF_EXPORT CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream hStream)
{
    DRV_BEGIN(cuStreamBeginCapture_ptsz, real(hStream));
}

CF_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    DRV_BEGIN(cuStreamBeginCapture_v2, real(hStream, mode));
}

CF_EXPORT CUresult CUDAAPI cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    DRV_BEGIN(cuStreamBeginCapture_v2_ptsz, real(hStream, mode));
}

CF_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph(CUstream hStream, CUgraph hGraph,
                                                       const CUgraphNode *dependencies,
                                                       const CUgraphEdgeData *dependencyData,
                                                       size_t numDependencies,
                                                       CUstreamCaptureMode mode)
{
    DRV_BEGIN(cuStreamBeginCaptureToGraph,
              real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode));
}

CF_EXPORT CUresult CUDAAPI cuStreamBeginCaptureToGraph_ptsz(CUstream hStream, CUgraph hGraph,
                                                            const CUgraphNode *dependencies,
                                                            const CUgraphEdgeData *dependencyData,
                                                            size_t numDependencies,
                                                            CUstreamCaptureMode mode)
{
    DRV_BEGIN(cuStreamBeginCaptureToGraph_ptsz,
              real(hStream, hGraph, dependencies, dependencyData, numDependencies, mode));
}

CF_EXPORT CUresult CUDAAPI cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    DRV_END(cuStreamEndCapture, real(hStream, phGraph));
}

CF_EXPORT CUresult CUDAAPI cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    DRV_END(cuStreamEndCapture_ptsz, real(hStream, phGraph));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCapture(cudaStream_t stream,
                                                       enum cudaStreamCaptureMode mode)
{
    RT_BEGIN(cudaStreamBeginCapture, real(stream, mode));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCapture_ptsz(cudaStream_t stream,
                                                            enum cudaStreamCaptureMode mode)
{
    RT_BEGIN(cudaStreamBeginCapture_ptsz, real(stream, mode));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph(
    cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
    const cudaGraphEdgeData *dependencyData, size_t numDependencies,
    enum cudaStreamCaptureMode mode)
{
    RT_BEGIN(cudaStreamBeginCaptureToGraph,
             real(stream, graph, dependencies, dependencyData, numDependencies, mode));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamBeginCaptureToGraph_ptsz(
    cudaStream_t stream, cudaGraph_t graph, const cudaGraphNode_t *dependencies,
    const cudaGraphEdgeData *dependencyData, size_t numDependencies,
    enum cudaStreamCaptureMode mode)
{
    RT_BEGIN(cudaStreamBeginCaptureToGraph_ptsz,
             real(stream, graph, dependencies, dependencyData, numDependencies, mode));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    RT_END(cudaStreamEndCapture, real(stream, pGraph));
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    RT_END(cudaStreamEndCapture_ptsz, real(stream, pGraph));
}
