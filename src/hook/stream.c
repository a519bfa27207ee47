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

/* Stream synchronisation: not recorded either, but in arena mode it proves the
 * device finished the stream-ordered frees made on that stream, which the arena
 * then hands back at once (cf_arena_stream_synchronize). */
static CUresult synchronize(CUstream stream, CUresult(CUDAAPI *real)(CUstream))
{
    if (!cf_hook_begin()) return real(stream);
    CUresult rc = cf_arena_enabled() ? cf_arena_stream_synchronize(stream, real) : real(stream);
    cf_hook_end();
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    __typeof__(&cuStreamSynchronize) real = CF_REAL_DRV(cuStreamSynchronize);
    if (real == NULL) return cf_missing_driver("cuStreamSynchronize");
    return synchronize(hStream, real);
}

CF_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    __typeof__(&cuStreamSynchronize_ptsz) real = CF_REAL_DRV(cuStreamSynchronize_ptsz);
    if (real == NULL) return cf_missing_driver("cuStreamSynchronize_ptsz");
    return synchronize(hStream, real);
}
