/* Graph launches: not allocations, but the moment graph memory nodes take
 * memory from the device's graph pool, so the record layer samples that pool's
 * high water here (a documented sampling call, rate-limited). */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

/* Per-thread-default-stream exports of libcuda and libcudart that the headers
 * do not declare for host code. */
CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream);
cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream);

#define LAUNCH(rc, call, stream)                                                                   \
    CF_AFTER_SUCCESS(rc, call, call, cf_rec_graph_launched((uint64_t)(uintptr_t)(stream)))

CF_EXPORT CUresult CUDAAPI cuGraphLaunch(CUgraphExec hGraphExec, CUstream hStream)
{
    __typeof__(&cuGraphLaunch) real = CF_REAL_DRV(cuGraphLaunch);
    if (real == NULL) return cf_missing_driver("cuGraphLaunch");
    CUresult rc;
    LAUNCH(rc, real(hGraphExec, hStream), hStream);
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuGraphLaunch_ptsz(CUgraphExec hGraphExec, CUstream hStream)
{
    __typeof__(&cuGraphLaunch_ptsz) real = CF_REAL_DRV(cuGraphLaunch_ptsz);
    if (real == NULL) return cf_missing_driver("cuGraphLaunch_ptsz");
    CUresult rc;
    LAUNCH(rc, real(hGraphExec, hStream), hStream ? hStream : CU_STREAM_PER_THREAD);
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    __typeof__(&cudaGraphLaunch) real = CF_REAL_RT(cudaGraphLaunch);
    if (real == NULL) return cf_missing_runtime("cudaGraphLaunch");
    cudaError_t rc;
    LAUNCH(rc, real(graphExec, stream), stream);
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaGraphLaunch_ptsz(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    __typeof__(&cudaGraphLaunch_ptsz) real = CF_REAL_RT(cudaGraphLaunch_ptsz);
    if (real == NULL) return cf_missing_runtime("cudaGraphLaunch_ptsz");
    cudaError_t rc;
    LAUNCH(rc, real(graphExec, stream), stream ? (void *)stream : (void *)CU_STREAM_PER_THREAD);
    return rc;
}
