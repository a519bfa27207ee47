/* Peer access. Natively, once a device enables access to a peer's memory it reaches
 * every cudaMalloc block of the peer; memory the arena serves is VMM memory, which
 * answers only the devices named to cuMemSetAccess. So a successful
 * cuCtxEnablePeerAccess is passed on to the arena (the runtime's
 * cudaDeviceEnablePeerAccess arrives here too: it reaches the driver through our
 * cuGetProcAddress). Not recorded; result, out-parameters and errno unchanged. */
#include "hook/cuda_abi.h"

#include <errno.h>

#include "arena/arena.h"
#include "base/ctx_state.h"
#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

CF_EXPORT CUresult CUDAAPI cuCtxEnablePeerAccess(CUcontext peer, unsigned int flags)
{
    __typeof__(&cuCtxEnablePeerAccess) real = CF_REAL_DRV(cuCtxEnablePeerAccess);
    if (real == NULL) return cf_missing_driver("cuCtxEnablePeerAccess");
    CUresult rc = real(peer, flags);
    if (rc == CUDA_SUCCESS && cf_arena_enabled() && cf_hook_begin()) {
        int saved = errno;
        cf_arena_peer_access(peer, cf_current_device());
        cf_hook_end();
        errno = saved;
    }
    return rc;
}
