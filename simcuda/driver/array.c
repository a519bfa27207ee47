/* CUDA arrays: opaque device memory of width x height x depth elements.
 * Their layout is not modelled; each array takes whole 2 MiB pages, like a
 * large cuMemAlloc block, so it shows in cuMemGetInfo. */
#include "sim.h"

#include <stdlib.h>

struct sim_array {
    struct sim_handle handle;
    struct sim_region *region;
    CUDA_ARRAY3D_DESCRIPTOR desc;
};

static size_t format_bytes(CUarray_format f)
{
    switch (f) {
    case CU_AD_FORMAT_UNSIGNED_INT8:
    case CU_AD_FORMAT_SIGNED_INT8:
        return 1;
    case CU_AD_FORMAT_UNSIGNED_INT16:
    case CU_AD_FORMAT_SIGNED_INT16:
    case CU_AD_FORMAT_HALF:
        return 2;
    case CU_AD_FORMAT_UNSIGNED_INT32:
    case CU_AD_FORMAT_SIGNED_INT32:
    case CU_AD_FORMAT_FLOAT:
        return 4;
    default:
        return 0;
    }
}

static CUresult array_create(CUarray *out, const CUDA_ARRAY3D_DESCRIPTOR *desc)
{
    struct sim_device *d;
    if (!out || !desc) return CUDA_ERROR_INVALID_VALUE;
    size_t elem = format_bytes(desc->Format);
    unsigned ch = desc->NumChannels;
    if (elem == 0 || (ch != 1 && ch != 2 && ch != 4) || desc->Width == 0)
        return CUDA_ERROR_INVALID_VALUE;
    size_t bytes = desc->Width * (desc->Height ? desc->Height : 1) *
                   (desc->Depth ? desc->Depth : 1) * elem * ch;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    struct sim_array *a = NULL;
    struct sim_phys p = {SIM_NO_RUN, 0};
    uint32_t n = (uint32_t)(SIM_ROUND_UP(bytes, SIM_PAGE) / SIM_PAGE);
    if (rc == CUDA_SUCCESS && !(a = calloc(1, sizeof *a))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS && (n > d->npages || sim_phys_alloc(d, n, &p) != 0))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS &&
        !(a->region = sim_region_new(d, SIM_R_ARRAY, (size_t)n * SIM_PAGE, 0, 0))) {
        sim_phys_free(d, &p);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CUDA_SUCCESS) {
        sim_handle_init(&a->handle, SIM_H_ARRAY);
        a->region->phys = p;
        a->region->has_phys = 1;
        a->region->request = bytes;
        a->region->owner = a;
        a->desc = *desc;
        d->alloc_calls++;
        *out = (CUarray)a;
    } else {
        free(a);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuArray3DCreate_v2(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR *pAllocateArray)
{
    SIM_ENTRY();
    return array_create(pHandle, pAllocateArray);
}

SIM_API CUresult cuArrayCreate_v2(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR *pAllocateArray)
{
    SIM_ENTRY();
    if (!pAllocateArray) return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d = {pAllocateArray->Width,  pAllocateArray->Height,      0,
                                 pAllocateArray->Format, pAllocateArray->NumChannels, 0};
    return array_create(pHandle, &d);
}

SIM_API CUresult cuArrayCreate(CUarray *pHandle, const CUDA_ARRAY_DESCRIPTOR_v1 *pAllocateArray)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuArray3DCreate(CUarray *pHandle, const CUDA_ARRAY3D_DESCRIPTOR_v1 *pAllocateArray)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuArrayDestroy(CUarray hArray)
{
    SIM_ENTRY();
    CUresult rc;
    sim_lock();
    struct sim_array *a = sim_handle_get(hArray, SIM_H_ARRAY, &rc);
    if (a) {
        sim_drain_everything();
        a->region->dev->free_calls++;
        sim_region_free(a->region);
        sim_handle_retire(&a->handle);
        free(a);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuArray3DGetDescriptor_v2(CUDA_ARRAY3D_DESCRIPTOR *pArrayDescriptor,
                                           CUarray hArray)
{
    SIM_ENTRY();
    CUresult rc;
    if (!pArrayDescriptor) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_array *a = sim_handle_get(hArray, SIM_H_ARRAY, &rc);
    if (a) *pArrayDescriptor = a->desc;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuArrayGetDescriptor_v2(CUDA_ARRAY_DESCRIPTOR *pArrayDescriptor, CUarray hArray)
{
    SIM_ENTRY();
    CUresult rc;
    if (!pArrayDescriptor) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_array *a = sim_handle_get(hArray, SIM_H_ARRAY, &rc);
    if (a) {
        pArrayDescriptor->Width = a->desc.Width;
        pArrayDescriptor->Height = a->desc.Height;
        pArrayDescriptor->Format = a->desc.Format;
        pArrayDescriptor->NumChannels = a->desc.NumChannels;
    }
    sim_unlock();
    return rc;
}
