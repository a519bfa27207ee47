/* Stream destruction: not an allocation, so nothing is recorded, but the arena
 * must stop referring to a stream before its handle dies (stream-ordered frees
 * on it are marked with an event first), and afterwards the handle may name a new
 * stream of another device: the devices threads kept for streams are dropped. */
#include "hook/cuda_abi.h"

#include "arena/arena.h"
#include "base/ctx_state.h"
#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

static void before_destroy(CUstream stream)
{
    if (!cf_hook_begin()) return;
    if (cf_arena_enabled()) cf_arena_stream_destroyed(stream);
    cf_hook_end();
}

CF_EXPORT CUresult CUDAAPI cuStreamDestroy(CUstream hStream)
{
    __typeof__(&cuStreamDestroy) real = CF_REAL_DRV(cuStreamDestroy);
    if (real == NULL) return cf_missing_driver("cuStreamDestroy");
    before_destroy(hStream);
    CUresult rc = real(hStream);
    cf_ctx_all_changed();
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuStreamDestroy_v2(CUstream hStream)
{
    __typeof__(&cuStreamDestroy_v2) real = CF_REAL_DRV(cuStreamDestroy_v2);
    if (real == NULL) return cf_missing_driver("cuStreamDestroy_v2");
    before_destroy(hStream);
    CUresult rc = real(hStream);
    cf_ctx_all_changed();
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaStreamDestroy(cudaStream_t stream)
{
    __typeof__(&cudaStreamDestroy) real = CF_REAL_RT(cudaStreamDestroy);
    if (real == NULL) return cf_missing_runtime("cudaStreamDestroy");
    before_destroy((CUstream)stream);
    cudaError_t rc = real(stream);
    cf_ctx_all_changed();
    return rc;
}
