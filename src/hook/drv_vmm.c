/* Driver API: virtual memory management. The physical allocation (cuMemCreate) is
 * what occupies the device, so it is the one recorded, keyed by its handle; the
 * address-space and mapping calls are counted. */
#include "hook/cuda_abi.h"

#include "hook/guard.h"
#include "hook/note.h"
#include "hook/symbols.h"

#define REAL_OR_FAIL(sym)                                                                          \
    __typeof__(&sym) real = CF_REAL_DRV(sym);                                                      \
    if (real == NULL) return cf_missing_driver(#sym)

static int prop_device(const CUmemAllocationProp *prop)
{
    return prop != NULL && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id
                                                                              : -1;
}

CF_EXPORT CUresult CUDAAPI cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                                       const CUmemAllocationProp *prop, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemCreate);
    CUresult rc;
    CF_WRAP(rc, real(handle, size, prop, flags),
            cf_note_alloc(CF_API_cuMemCreate, rc == CUDA_SUCCESS ? *handle : 0, size, size,
                          prop_device(prop), rc, rc == CUDA_ERROR_OUT_OF_MEMORY));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemRelease(CUmemGenericAllocationHandle handle)
{
    REAL_OR_FAIL(cuMemRelease);
    CUresult rc;
    CF_WRAP_FREE(rc, CF_API_cuMemRelease, handle, real(handle));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                                    CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemMap);
    CUresult rc;
    CF_WRAP(rc, real(ptr, size, offset, handle, flags), cf_note_call(CF_API_cuMemMap, rc));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemUnmap);
    CUresult rc;
    CF_WRAP(rc, real(ptr, size), cf_note_call(CF_API_cuMemUnmap, rc));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                               CUdeviceptr addr, unsigned long long flags)
{
    REAL_OR_FAIL(cuMemAddressReserve);
    CUresult rc;
    CF_WRAP(rc, real(ptr, size, alignment, addr, flags),
            cf_note_call(CF_API_cuMemAddressReserve, rc));
    return rc;
}

CF_EXPORT CUresult CUDAAPI cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    REAL_OR_FAIL(cuMemAddressFree);
    CUresult rc;
    CF_WRAP(rc, real(ptr, size), cf_note_call(CF_API_cuMemAddressFree, rc));
    return rc;
}
