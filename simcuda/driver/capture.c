/* Stream capture: while a stream captures, its stream-ordered allocations and
 * frees become graph memory nodes and its other async work becomes nodes
 * instead of being queued. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

static unsigned long long next_capture_id = 1;

/* The stream this thread captures in global or thread-local mode, if any: in
 * those modes the thread may make no potentially unsafe call until it ends. */
static __thread struct sim_stream *tl_strict_capture;

CUresult sim_unsafe_call(void)
{
    if (tl_strict_capture == NULL) return CUDA_SUCCESS;
    CUresult rc = CUDA_SUCCESS;
    sim_lock();
    if (tl_strict_capture->capture == SIM_CAP_ACTIVE) {
        tl_strict_capture->capture = SIM_CAP_INVALIDATED;
        rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    }
    sim_unlock();
    return rc;
}

int sim_capturing(struct sim_stream *s)
{
    return s->capture != SIM_CAP_NONE;
}

void sim_capture_op(struct sim_stream *s, struct sim_op *op)
{
    struct gnode *n = s->capture == SIM_CAP_ACTIVE ? sim_gnode_add(s->capture_graph, GN_OP) : NULL;
    if (n) {
        n->op = *op;
        n->op.next = NULL;
    }
    free(op);
}

CUresult sim_capture_alloc(struct sim_stream *s, size_t size, CUdeviceptr *out)
{
    if (s->capture != SIM_CAP_ACTIVE) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    CUDA_MEM_ALLOC_NODE_PARAMS p;
    memset(&p, 0, sizeof p);
    p.poolProps.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    p.poolProps.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    p.poolProps.location.id = s->ctx->dev->ordinal;
    p.bytesize = size;
    struct gnode *n;
    CUresult rc = sim_graph_add_alloc(s->capture_graph, &p, &n);
    if (rc == CUDA_SUCCESS) *out = p.dptr;
    return rc;
}

CUresult sim_capture_free(struct sim_stream *s, CUdeviceptr ptr)
{
    if (s->capture != SIM_CAP_ACTIVE) return CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
    struct gnode *n;
    return sim_graph_add_free(s->capture_graph, ptr, &n);
}

static CUresult begin_capture(CUstream h, enum sim_default_stream ds, CUstreamCaptureMode mode)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->is_legacy) rc = CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
    if (rc == CUDA_SUCCESS && s->capture != SIM_CAP_NONE) rc = CUDA_ERROR_ILLEGAL_STATE;
    if (rc == CUDA_SUCCESS && !(s->capture_graph = sim_graph_new(s->ctx->dev)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        s->capture = SIM_CAP_ACTIVE;
        s->capture_id = next_capture_id++;
        if (mode != CU_STREAM_CAPTURE_MODE_RELAXED) tl_strict_capture = s;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamBeginCapture(CUstream hStream)
{
    SIM_ENTRY();
    return begin_capture(hStream, SIM_DS_LEGACY, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult cuStreamBeginCapture_ptsz(CUstream hStream)
{
    SIM_ENTRY();
    return begin_capture(hStream, SIM_DS_PER_THREAD, CU_STREAM_CAPTURE_MODE_GLOBAL);
}

SIM_API CUresult cuStreamBeginCapture_v2(CUstream hStream, CUstreamCaptureMode mode)
{
    SIM_ENTRY();
    return begin_capture(hStream, SIM_DS_LEGACY, mode);
}

SIM_API CUresult cuStreamBeginCapture_v2_ptsz(CUstream hStream, CUstreamCaptureMode mode)
{
    SIM_ENTRY();
    return begin_capture(hStream, SIM_DS_PER_THREAD, mode);
}

static CUresult end_capture(CUstream h, CUgraph *out, enum sim_default_stream ds)
{
    struct sim_stream *s;
    if (!out) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS && s->capture == SIM_CAP_NONE) rc = CUDA_ERROR_ILLEGAL_STATE;
    if (rc == CUDA_SUCCESS) {
        struct sim_graph *g = s->capture_graph;
        *out = NULL;
        if (s->capture == SIM_CAP_INVALIDATED) {
            sim_gnodes_free(g->head);
            free(g);
            rc = CUDA_ERROR_STREAM_CAPTURE_INVALIDATED;
        } else {
            *out = (CUgraph)g;
        }
        s->capture = SIM_CAP_NONE;
        s->capture_graph = NULL;
        if (tl_strict_capture == s) tl_strict_capture = NULL;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamEndCapture(CUstream hStream, CUgraph *phGraph)
{
    SIM_ENTRY();
    return end_capture(hStream, phGraph, SIM_DS_LEGACY);
}

SIM_API CUresult cuStreamEndCapture_ptsz(CUstream hStream, CUgraph *phGraph)
{
    SIM_ENTRY();
    return end_capture(hStream, phGraph, SIM_DS_PER_THREAD);
}

static CUresult capture_info(CUstream h, enum sim_default_stream ds, CUstreamCaptureStatus *st,
                             cuuint64_t *id, CUgraph *graph, const CUgraphNode **deps,
                             const CUgraphEdgeData **edges, size_t *ndeps)
{
    struct sim_stream *s;
    sim_lock();
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc == CUDA_SUCCESS) {
        if (st)
            *st = s->capture == SIM_CAP_ACTIVE        ? CU_STREAM_CAPTURE_STATUS_ACTIVE
                  : s->capture == SIM_CAP_INVALIDATED ? CU_STREAM_CAPTURE_STATUS_INVALIDATED
                                                      : CU_STREAM_CAPTURE_STATUS_NONE;
        if (id && s->capture != SIM_CAP_NONE) *id = s->capture_id;
        if (graph) *graph = (CUgraph)s->capture_graph;
        if (deps) *deps = NULL;
        if (edges) *edges = NULL;
        if (ndeps) *ndeps = 0;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuStreamIsCapturing(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuStreamIsCapturing);
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamIsCapturing_ptsz(CUstream hStream, CUstreamCaptureStatus *captureStatus)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuStreamIsCapturing);
    if (!captureStatus) return CUDA_ERROR_INVALID_VALUE;
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus, NULL, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo(CUstream hStream, CUstreamCaptureStatus *captureStatus_out,
                                        cuuint64_t *id_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, NULL, NULL, NULL, NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_ptsz(CUstream hStream,
                                             CUstreamCaptureStatus *captureStatus_out,
                                             cuuint64_t *id_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, NULL, NULL, NULL,
                        NULL);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           size_t *numDependencies_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v2_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                size_t *numDependencies_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, graph_out,
                        dependencies_out, NULL, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3(CUstream hStream,
                                           CUstreamCaptureStatus *captureStatus_out,
                                           cuuint64_t *id_out, CUgraph *graph_out,
                                           const CUgraphNode **dependencies_out,
                                           const CUgraphEdgeData **edgeData_out,
                                           size_t *numDependencies_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_LEGACY, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}

SIM_API CUresult cuStreamGetCaptureInfo_v3_ptsz(CUstream hStream,
                                                CUstreamCaptureStatus *captureStatus_out,
                                                cuuint64_t *id_out, CUgraph *graph_out,
                                                const CUgraphNode **dependencies_out,
                                                const CUgraphEdgeData **edgeData_out,
                                                size_t *numDependencies_out)
{
    SIM_ENTRY();
    return capture_info(hStream, SIM_DS_PER_THREAD, captureStatus_out, id_out, graph_out,
                        dependencies_out, edgeData_out, numDependencies_out);
}
