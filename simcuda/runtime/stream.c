/* Streams, events, stream capture and host callbacks. The runtime's flag and
 * enum values equal the driver's (cudaStreamNonBlocking, cudaEvent*,
 * cudaStreamCaptureMode/Status), so they pass through unchanged. */
#include "runtime.h"
#include "per_thread.h"

#include <stdlib.h>

RT_API cudaError_t cudaStreamCreateWithPriority(cudaStream_t *pStream, unsigned int flags,
                                                int priority)
{
    RT_ENTER();
    if (pStream == NULL) return rt_fail(cudaErrorInvalidValue);
    CUstream stream = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuStreamCreateWithPriority, &stream, flags, priority));
    *pStream = e == cudaSuccess ? (cudaStream_t)stream : NULL;
    return e;
}

RT_API cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    RT_ENTER();
    if (pStream == NULL) return rt_fail(cudaErrorInvalidValue);
    CUstream stream = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuStreamCreate, &stream, flags));
    *pStream = e == cudaSuccess ? (cudaStream_t)stream : NULL;
    return e;
}

RT_API cudaError_t cudaStreamCreate(cudaStream_t *pStream)
{
    return cudaStreamCreateWithFlags(pStream, cudaStreamDefault);
}

RT_API cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    RT_ENTER();
    /* The default streams are not objects the program owns. */
    if (stream == NULL || stream == cudaStreamLegacy || stream == cudaStreamPerThread)
        return rt_fail(cudaErrorInvalidResourceHandle);
    return rt_cu(RT_CALL(cuStreamDestroy, (CUstream)stream));
}

static cudaError_t rt_stream_sync(cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuStreamSynchronize, rt_stream(stream, pt)));
}

RT_API cudaError_t cudaStreamSynchronize(cudaStream_t stream)
{
    return rt_stream_sync(stream, false);
}

RT_API cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream)
{
    return rt_stream_sync(stream, true);
}

static cudaError_t rt_stream_query(cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuStreamQuery, rt_stream(stream, pt)));
}

RT_API cudaError_t cudaStreamQuery(cudaStream_t stream)
{
    return rt_stream_query(stream, false);
}

RT_API cudaError_t cudaStreamQuery_ptsz(cudaStream_t stream)
{
    return rt_stream_query(stream, true);
}

static cudaError_t rt_stream_wait_event(cudaStream_t stream, cudaEvent_t event, unsigned int flags,
                                        bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuStreamWaitEvent, rt_stream(stream, pt), (CUevent)event, flags));
}

RT_API cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t event, unsigned int flags)
{
    return rt_stream_wait_event(stream, event, flags, false);
}

RT_API cudaError_t cudaStreamWaitEvent_ptsz(cudaStream_t stream, cudaEvent_t event,
                                            unsigned int flags)
{
    return rt_stream_wait_event(stream, event, flags, true);
}

static cudaError_t rt_begin_capture(cudaStream_t stream, enum cudaStreamCaptureMode mode, bool pt)
{
    RT_ENTER();
    return rt_cu(
        RT_CALL_PT(pt, cuStreamBeginCapture, rt_stream(stream, pt), (CUstreamCaptureMode)mode));
}

RT_API cudaError_t cudaStreamBeginCapture(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return rt_begin_capture(stream, mode, false);
}

RT_API cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t stream, enum cudaStreamCaptureMode mode)
{
    return rt_begin_capture(stream, mode, true);
}

static cudaError_t rt_end_capture(cudaStream_t stream, cudaGraph_t *pGraph, bool pt)
{
    RT_ENTER();
    if (pGraph == NULL) return rt_fail(cudaErrorInvalidValue);
    CUgraph graph = NULL;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuStreamEndCapture, rt_stream(stream, pt), &graph));
    *pGraph = (cudaGraph_t)graph;
    return e;
}

RT_API cudaError_t cudaStreamEndCapture(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return rt_end_capture(stream, pGraph, false);
}

RT_API cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t stream, cudaGraph_t *pGraph)
{
    return rt_end_capture(stream, pGraph, true);
}

static cudaError_t rt_is_capturing(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                   bool pt)
{
    RT_ENTER();
    if (status == NULL) return rt_fail(cudaErrorInvalidValue);
    CUstreamCaptureStatus cu_status = CU_STREAM_CAPTURE_STATUS_NONE;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuStreamIsCapturing, rt_stream(stream, pt), &cu_status));
    *status = (enum cudaStreamCaptureStatus)cu_status;
    return e;
}

RT_API cudaError_t cudaStreamIsCapturing(cudaStream_t stream,
                                         enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return rt_is_capturing(stream, pCaptureStatus, false);
}

RT_API cudaError_t cudaStreamIsCapturing_ptsz(cudaStream_t stream,
                                              enum cudaStreamCaptureStatus *pCaptureStatus)
{
    return rt_is_capturing(stream, pCaptureStatus, true);
}

static cudaError_t rt_launch_host_func(cudaStream_t stream, cudaHostFn_t fn, void *userData,
                                       bool pt)
{
    RT_ENTER();
    if (fn == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL_PT(pt, cuLaunchHostFunc, rt_stream(stream, pt), fn, userData));
}

RT_API cudaError_t cudaLaunchHostFunc(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return rt_launch_host_func(stream, fn, userData, false);
}

RT_API cudaError_t cudaLaunchHostFunc_ptsz(cudaStream_t stream, cudaHostFn_t fn, void *userData)
{
    return rt_launch_host_func(stream, fn, userData, true);
}

RT_API cudaError_t cudaEventCreateWithFlags(cudaEvent_t *event, unsigned int flags)
{
    RT_ENTER();
    if (event == NULL) return rt_fail(cudaErrorInvalidValue);
    CUevent ev = NULL;
    cudaError_t e = rt_cu(RT_CALL(cuEventCreate, &ev, flags));
    *event = e == cudaSuccess ? (cudaEvent_t)ev : NULL;
    return e;
}

RT_API cudaError_t cudaEventCreate(cudaEvent_t *event)
{
    return cudaEventCreateWithFlags(event, cudaEventDefault);
}

static cudaError_t rt_event_record(cudaEvent_t event, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    return rt_cu(RT_CALL_PT(pt, cuEventRecord, (CUevent)event, rt_stream(stream, pt)));
}

RT_API cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream)
{
    return rt_event_record(event, stream, false);
}

RT_API cudaError_t cudaEventRecord_ptsz(cudaEvent_t event, cudaStream_t stream)
{
    return rt_event_record(event, stream, true);
}

RT_API cudaError_t cudaEventQuery(cudaEvent_t event)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuEventQuery, (CUevent)event));
}

RT_API cudaError_t cudaEventSynchronize(cudaEvent_t event)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuEventSynchronize, (CUevent)event));
}

RT_API cudaError_t cudaEventDestroy(cudaEvent_t event)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuEventDestroy, (CUevent)event));
}

RT_API cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    RT_ENTER();
    if (ms == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL(cuEventElapsedTime, ms, (CUevent)start, (CUevent)end));
}

static cudaError_t rt_event_record_flags(cudaEvent_t event, cudaStream_t stream, unsigned int flags,
                                         bool pt)
{
    RT_ENTER();
    return rt_cu(
        RT_CALL_PT(pt, cuEventRecordWithFlags, (CUevent)event, rt_stream(stream, pt), flags));
}

RT_API cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream,
                                            unsigned int flags)
{
    return rt_event_record_flags(event, stream, flags, false);
}

RT_API cudaError_t cudaEventRecordWithFlags_ptsz(cudaEvent_t event, cudaStream_t stream,
                                                 unsigned int flags)
{
    return rt_event_record_flags(event, stream, flags, true);
}

/* cudaGraphEdgeData and CUgraphEdgeData share their layout, as do the handles. */
static cudaError_t rt_capture_info(cudaStream_t stream, enum cudaStreamCaptureStatus *status,
                                   unsigned long long *id, cudaGraph_t *graph,
                                   const cudaGraphNode_t **deps, const cudaGraphEdgeData **edges,
                                   size_t *count, bool pt)
{
    RT_ENTER();
    if (status == NULL) return rt_fail(cudaErrorInvalidValue);
    CUstreamCaptureStatus cu_status = CU_STREAM_CAPTURE_STATUS_NONE;
    cuuint64_t cu_id = 0;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuStreamGetCaptureInfo, rt_stream(stream, pt), &cu_status,
                                     &cu_id, (CUgraph *)graph, (const CUgraphNode **)deps,
                                     (const CUgraphEdgeData **)edges, count));
    *status = (enum cudaStreamCaptureStatus)cu_status;
    if (id != NULL) *id = cu_id;
    return e;
}

RT_API cudaError_t cudaStreamGetCaptureInfo(cudaStream_t stream,
                                            enum cudaStreamCaptureStatus *captureStatus_out,
                                            unsigned long long *id_out, cudaGraph_t *graph_out,
                                            const cudaGraphNode_t **dependencies_out,
                                            const cudaGraphEdgeData **edgeData_out,
                                            size_t *numDependencies_out)
{
    return rt_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                           edgeData_out, numDependencies_out, false);
}

RT_API cudaError_t cudaStreamGetCaptureInfo_ptsz(cudaStream_t stream,
                                                 enum cudaStreamCaptureStatus *captureStatus_out,
                                                 unsigned long long *id_out, cudaGraph_t *graph_out,
                                                 const cudaGraphNode_t **dependencies_out,
                                                 const cudaGraphEdgeData **edgeData_out,
                                                 size_t *numDependencies_out)
{
    return rt_capture_info(stream, captureStatus_out, id_out, graph_out, dependencies_out,
                           edgeData_out, numDependencies_out, true);
}

static cudaError_t rt_stream_flags(cudaStream_t stream, unsigned int *flags, bool pt)
{
    RT_ENTER();
    if (flags == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL_PT(pt, cuStreamGetFlags, rt_stream(stream, pt), flags));
}

RT_API cudaError_t cudaStreamGetFlags(cudaStream_t hStream, unsigned int *flags)
{
    return rt_stream_flags(hStream, flags, false);
}

RT_API cudaError_t cudaStreamGetFlags_ptsz(cudaStream_t hStream, unsigned int *flags)
{
    return rt_stream_flags(hStream, flags, true);
}

static cudaError_t rt_stream_priority(cudaStream_t stream, int *priority, bool pt)
{
    RT_ENTER();
    if (priority == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL_PT(pt, cuStreamGetPriority, rt_stream(stream, pt), priority));
}

RT_API cudaError_t cudaStreamGetPriority(cudaStream_t hStream, int *priority)
{
    return rt_stream_priority(hStream, priority, false);
}

RT_API cudaError_t cudaStreamGetPriority_ptsz(cudaStream_t hStream, int *priority)
{
    return rt_stream_priority(hStream, priority, true);
}

/* A driver device handle is its ordinal, as the runtime numbers devices. */
static cudaError_t rt_stream_device(cudaStream_t stream, int *device, bool pt)
{
    RT_ENTER();
    if (device == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdevice dev = 0;
    cudaError_t e = rt_cu(RT_CALL_PT(pt, cuStreamGetDevice, rt_stream(stream, pt), &dev));
    if (e == cudaSuccess) *device = (int)dev;
    return e;
}

RT_API cudaError_t cudaStreamGetDevice(cudaStream_t hStream, int *device)
{
    return rt_stream_device(hStream, device, false);
}

RT_API cudaError_t cudaStreamGetDevice_ptsz(cudaStream_t hStream, int *device)
{
    return rt_stream_device(hStream, device, true);
}

/* A stream callback also receives its stream and a status: it runs as a host
 * function through this closure, freed once the callback has run. */
struct rt_stream_callback {
    cudaStreamCallback_t callback;
    cudaStream_t stream;
    void *user_data;
};

static void rt_run_stream_callback(void *arg)
{
    struct rt_stream_callback *cb = arg;
    cb->callback(cb->stream, cudaSuccess, cb->user_data);
    free(cb);
}

static cudaError_t rt_add_callback(cudaStream_t stream, cudaStreamCallback_t callback,
                                   void *userData, unsigned int flags, bool pt)
{
    RT_ENTER();
    if (callback == NULL || flags != 0) return rt_fail(cudaErrorInvalidValue);
    struct rt_stream_callback *cb = malloc(sizeof(*cb));
    if (cb == NULL) return rt_fail(cudaErrorMemoryAllocation);
    *cb = (struct rt_stream_callback){callback, stream, userData};
    cudaError_t e =
        rt_cu(RT_CALL_PT(pt, cuLaunchHostFunc, rt_stream(stream, pt), rt_run_stream_callback, cb));
    if (e != cudaSuccess) free(cb);
    return e;
}

RT_API cudaError_t cudaStreamAddCallback(cudaStream_t stream, cudaStreamCallback_t callback,
                                         void *userData, unsigned int flags)
{
    return rt_add_callback(stream, callback, userData, flags, false);
}

RT_API cudaError_t cudaStreamAddCallback_ptsz(cudaStream_t stream, cudaStreamCallback_t callback,
                                              void *userData, unsigned int flags)
{
    return rt_add_callback(stream, callback, userData, flags, true);
}
