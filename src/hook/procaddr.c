/* Driver entry-point lookups. nvcc's static cudart gets every driver function from
 * cuGetProcAddress (after asking it for "cuGetProcAddress" itself), and PyTorch's
 * expandable segments use cudaGetDriverEntryPoint: each answer that is the real
 * function of one of our hooks is replaced by our wrapper for that same ABI. A
 * failed lookup is returned untouched, so callers still see what is missing. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

static void substitute(const char *symbol, void **pfn)
{
    if (pfn == NULL || *pfn == NULL || !cf_hook_enabled()) return;
    int saved = errno;
    *pfn = cf_hook_for_lookup(symbol, *pfn);
    errno = saved;
}

CF_EXPORT CUresult CUDAAPI cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion,
                                               cuuint64_t flags,
                                               CUdriverProcAddressQueryResult *symbolStatus)
{
    __typeof__(&cuGetProcAddress_v2) real = CF_REAL_DRV(cuGetProcAddress_v2);
    if (real == NULL) return cf_missing_driver("cuGetProcAddress_v2");
    CUresult rc = real(symbol, pfn, cudaVersion, flags, symbolStatus);
    if (rc == CUDA_SUCCESS &&
        (symbolStatus == NULL || *symbolStatus == CU_GET_PROC_ADDRESS_SUCCESS))
        substitute(symbol, pfn);
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion,
                                            cuuint64_t flags)
{
    __typeof__(&cuGetProcAddress) real = CF_REAL_DRV(cuGetProcAddress);
    if (real == NULL) return cf_missing_driver("cuGetProcAddress");
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS) substitute(symbol, pfn);
    return rc;
}

/* The runtime forms return cudaSuccess with driverStatus telling whether the symbol
 * was found; only a found one is replaced. */
#define ENTRY_FOUND(rc, status)                                                                    \
    ((rc) == cudaSuccess && ((status) == NULL || *(status) == cudaDriverEntryPointSuccess))

CF_EXPORT cudaError_t CUDARTAPI cudaGetDriverEntryPoint(const char *symbol, void **funcPtr,
                                                        unsigned long long flags,
                                                        enum cudaDriverEntryPointQueryResult *st)
{
    __typeof__(&cudaGetDriverEntryPoint) real = CF_REAL_RT(cudaGetDriverEntryPoint);
    if (real == NULL) return cf_missing_runtime("cudaGetDriverEntryPoint");
    cudaError_t rc = real(symbol, funcPtr, flags, st);
    if (ENTRY_FOUND(rc, st)) substitute(symbol, funcPtr);
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI
cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                             enum cudaDriverEntryPointQueryResult *st)
{
    __typeof__(&cudaGetDriverEntryPoint_ptsz) real = CF_REAL_RT(cudaGetDriverEntryPoint_ptsz);
    if (real == NULL) return cf_missing_runtime("cudaGetDriverEntryPoint_ptsz");
    cudaError_t rc = real(symbol, funcPtr, flags, st);
    if (ENTRY_FOUND(rc, st)) substitute(symbol, funcPtr);
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI
cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                 unsigned long long flags, enum cudaDriverEntryPointQueryResult *st)
{
    __typeof__(&cudaGetDriverEntryPointByVersion) real =
        CF_REAL_RT(cudaGetDriverEntryPointByVersion);
    if (real == NULL) return cf_missing_runtime("cudaGetDriverEntryPointByVersion");
    cudaError_t rc = real(symbol, funcPtr, cudaVersion, flags, st);
    if (ENTRY_FOUND(rc, st)) substitute(symbol, funcPtr);
    return rc;
}

CF_EXPORT cudaError_t CUDARTAPI cudaGetDriverEntryPointByVersion_ptsz(
    const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags,
    enum cudaDriverEntryPointQueryResult *st)
{
    __typeof__(&cudaGetDriverEntryPointByVersion_ptsz) real =
        CF_REAL_RT(cudaGetDriverEntryPointByVersion_ptsz);
    if (real == NULL) return cf_missing_runtime("cudaGetDriverEntryPointByVersion_ptsz");
    cudaError_t rc = real(symbol, funcPtr, cudaVersion, flags, st);
    if (ENTRY_FOUND(rc, st)) substitute(symbol, funcPtr);
    return rc;
}
