/* Synchronizations: not allocations, but where a stream-ordered pool holding more
 * than its release threshold gives idle memory back to the device. After each
 * one the record reads those pools' reserved bytes, so the footprint drops where
 * the memory went back rather than at the pool's next allocation. A stream's
 * synchronization also proves the device finished the stream-ordered frees made
 * on it, which the arena then hands back at once (cf_arena_stream_synchronize).
 * The runtime's synchronizations reach the driver's, so only those are wrapped.
 * Nothing is recorded per call. */
#include "hook/cuda_abi.h"

#include "arena/arena.h"
#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream);

/* rc = call, or plain when passing through (the guard is taken, or cudafrag is off). */
#define SYNC(rc, call, plain) CF_AFTER_SUCCESS(rc, call, plain, cf_rec_synchronized())

static CUresult stream_sync(CUstream stream, CUresult(CUDAAPI *real)(CUstream))
{
    return cf_arena_enabled() ? cf_arena_stream_synchronize(stream, real) : real(stream);
}

CF_EXPORT CUresult CUDAAPI cuCtxSynchronize(void)
{
    __typeof__(&cuCtxSynchronize) real = CF_REAL_DRV(cuCtxSynchronize);
    if (real == NULL) return cf_missing_driver("cuCtxSynchronize");
    CUresult rc;
    SYNC(rc, real(), real());
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuCtxSynchronize_v2(CUcontext ctx)
{
    __typeof__(&cuCtxSynchronize_v2) real = CF_REAL_DRV(cuCtxSynchronize_v2);
    if (real == NULL) return cf_missing_driver("cuCtxSynchronize_v2");
    CUresult rc;
    SYNC(rc, real(ctx), real(ctx));
    return rc;
}

/* Both stream ABIs: the default stream they name differs, nothing else. */
static CUresult stream_wrapper(CUstream stream, CUresult(CUDAAPI *real)(CUstream), const char *name)
{
    if (real == NULL) return cf_missing_driver(name);
    CUresult rc;
    SYNC(rc, stream_sync(stream, real), real(stream));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuStreamSynchronize(CUstream hStream)
{
    return stream_wrapper(hStream, CF_REAL_DRV(cuStreamSynchronize), "cuStreamSynchronize");
}

CF_EXPORT CUresult CUDAAPI cuStreamSynchronize_ptsz(CUstream hStream)
{
    return stream_wrapper(hStream, CF_REAL_DRV(cuStreamSynchronize_ptsz),
                          "cuStreamSynchronize_ptsz");
}

CF_EXPORT CUresult CUDAAPI cuEventSynchronize(CUevent hEvent)
{
    __typeof__(&cuEventSynchronize) real = CF_REAL_DRV(cuEventSynchronize);
    if (real == NULL) return cf_missing_driver("cuEventSynchronize");
    CUresult rc;
    SYNC(rc, real(hEvent), real(hEvent));
    return rc;
}
