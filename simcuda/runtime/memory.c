/* Synchronous allocations: device, pitched, managed, pinned host, registered
 * host, arrays; memory info and pointer attributes. */
#include "runtime.h"

#include <string.h>

RT_API cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    RT_ENTER();
    if (devPtr == NULL) return rt_fail(cudaErrorInvalidValue);
    *devPtr = NULL;
    /* A zero-byte request succeeds with NULL, as NVIDIA's runtime answers. */
    if (size == 0) return cudaSuccess;
    CUdeviceptr dptr = 0;
    cudaError_t e = rt_cu(RT_CALL(cuMemAlloc, &dptr, size));
    if (e == cudaSuccess) *devPtr = (void *)dptr;
    return e;
}

/* cudaFree(NULL) is the customary way to create the context: it only enters. */
RT_API cudaError_t cudaFree(void *devPtr)
{
    RT_ENTER();
    if (devPtr == NULL) return cudaSuccess;
    return rt_cu(RT_CALL(cuMemFree, (CUdeviceptr)devPtr));
}

RT_API cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    RT_ENTER();
    if (devPtr == NULL || pitch == NULL) return rt_fail(cudaErrorInvalidValue);
    *devPtr = NULL;
    CUdeviceptr dptr = 0;
    /* 16-byte elements: the widest the driver accepts, giving the coarsest pitch. */
    cudaError_t e = rt_cu(RT_CALL(cuMemAllocPitch, &dptr, pitch, width, height, 16));
    if (e == cudaSuccess) *devPtr = (void *)dptr;
    return e;
}

RT_API cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    RT_ENTER();
    if (pitchedDevPtr == NULL) return rt_fail(cudaErrorInvalidValue);
    memset(pitchedDevPtr, 0, sizeof(*pitchedDevPtr));
    size_t rows = extent.height * extent.depth;
    if (extent.width == 0 || rows == 0) return cudaSuccess;
    CUdeviceptr dptr = 0;
    size_t pitch = 0;
    cudaError_t e = rt_cu(RT_CALL(cuMemAllocPitch, &dptr, &pitch, extent.width, rows, 16));
    if (e == cudaSuccess) {
        pitchedDevPtr->ptr = (void *)dptr;
        pitchedDevPtr->pitch = pitch;
        pitchedDevPtr->xsize = extent.width;
        pitchedDevPtr->ysize = extent.height;
    }
    return e;
}

/* The driver describes an element by format and channel count, the runtime by
 * bits per channel and kind. */
static cudaError_t rt_array_format(const struct cudaChannelFormatDesc *desc, CUarray_format *format,
                                   unsigned int *channels)
{
    if (desc == NULL) return cudaErrorInvalidValue;
    int bits = desc->x;
    *channels = (desc->x > 0) + (desc->y > 0) + (desc->z > 0) + (desc->w > 0);
    if (*channels == 0 || (desc->y && desc->y != bits) || (desc->z && desc->z != bits) ||
        (desc->w && desc->w != bits))
        return cudaErrorInvalidChannelDescriptor;
    switch (desc->f) {
    case cudaChannelFormatKindSigned:
        *format = bits == 8    ? CU_AD_FORMAT_SIGNED_INT8
                  : bits == 16 ? CU_AD_FORMAT_SIGNED_INT16
                               : CU_AD_FORMAT_SIGNED_INT32;
        return bits == 8 || bits == 16 || bits == 32 ? cudaSuccess
                                                     : cudaErrorInvalidChannelDescriptor;
    case cudaChannelFormatKindUnsigned:
        *format = bits == 8    ? CU_AD_FORMAT_UNSIGNED_INT8
                  : bits == 16 ? CU_AD_FORMAT_UNSIGNED_INT16
                               : CU_AD_FORMAT_UNSIGNED_INT32;
        return bits == 8 || bits == 16 || bits == 32 ? cudaSuccess
                                                     : cudaErrorInvalidChannelDescriptor;
    case cudaChannelFormatKindFloat:
        *format = bits == 16 ? CU_AD_FORMAT_HALF : CU_AD_FORMAT_FLOAT;
        return bits == 16 || bits == 32 ? cudaSuccess : cudaErrorInvalidChannelDescriptor;
    default:
        return cudaErrorInvalidChannelDescriptor;
    }
}

RT_API struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w,
                                                          enum cudaChannelFormatKind f)
{
    struct cudaChannelFormatDesc desc = {.x = x, .y = y, .z = z, .w = w, .f = f};
    return desc;
}

RT_API cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                   size_t width, size_t height, unsigned int flags)
{
    RT_ENTER();
    if (array == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_ARRAY3D_DESCRIPTOR ad = {.Width = width, .Height = height, .Depth = 0, .Flags = flags};
    cudaError_t e = rt_array_format(desc, &ad.Format, &ad.NumChannels);
    if (e != cudaSuccess) return rt_fail(e);
    CUarray handle = NULL;
    /* Flags (surface load/store, ...) exist only in the 3D descriptor. */
    e = rt_cu(RT_CALL(cuArray3DCreate, &handle, &ad));
    *array = e == cudaSuccess ? (cudaArray_t)handle : NULL;
    return e;
}

RT_API cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc,
                                     struct cudaExtent extent, unsigned int flags)
{
    RT_ENTER();
    if (array == NULL) return rt_fail(cudaErrorInvalidValue);
    CUDA_ARRAY3D_DESCRIPTOR ad = {
        .Width = extent.width, .Height = extent.height, .Depth = extent.depth, .Flags = flags};
    cudaError_t e = rt_array_format(desc, &ad.Format, &ad.NumChannels);
    if (e != cudaSuccess) return rt_fail(e);
    CUarray handle = NULL;
    e = rt_cu(RT_CALL(cuArray3DCreate, &handle, &ad));
    *array = e == cudaSuccess ? (cudaArray_t)handle : NULL;
    return e;
}

RT_API cudaError_t cudaFreeArray(cudaArray_t array)
{
    RT_ENTER();
    if (array == NULL) return cudaSuccess;
    return rt_cu(RT_CALL(cuArrayDestroy, (CUarray)array));
}

RT_API cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    RT_ENTER();
    if (devPtr == NULL || size == 0) return rt_fail(cudaErrorInvalidValue);
    *devPtr = NULL;
    CUdeviceptr dptr = 0;
    /* cudaMemAttachGlobal/Host equal CU_MEM_ATTACH_GLOBAL/HOST. */
    cudaError_t e = rt_cu(RT_CALL(cuMemAllocManaged, &dptr, size, flags));
    if (e == cudaSuccess) *devPtr = (void *)dptr;
    return e;
}

RT_API cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    RT_ENTER();
    if (pHost == NULL) return rt_fail(cudaErrorInvalidValue);
    *pHost = NULL;
    /* cudaHostAlloc* flag values equal CU_MEMHOSTALLOC_*. */
    return rt_cu(RT_CALL(cuMemHostAlloc, pHost, size, flags));
}

RT_API cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    RT_ENTER();
    if (ptr == NULL) return rt_fail(cudaErrorInvalidValue);
    *ptr = NULL;
    return rt_cu(RT_CALL(cuMemAllocHost, ptr, size));
}

RT_API cudaError_t cudaFreeHost(void *ptr)
{
    RT_ENTER();
    if (ptr == NULL) return cudaSuccess;
    return rt_cu(RT_CALL(cuMemFreeHost, ptr));
}

RT_API cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    RT_ENTER();
    if (ptr == NULL || size == 0) return rt_fail(cudaErrorInvalidValue);
    /* cudaHostRegister* flag values equal CU_MEMHOSTREGISTER_*. */
    return rt_cu(RT_CALL(cuMemHostRegister, ptr, size, flags));
}

RT_API cudaError_t cudaHostUnregister(void *ptr)
{
    RT_ENTER();
    if (ptr == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL(cuMemHostUnregister, ptr));
}

RT_API cudaError_t cudaHostGetDevicePointer(void **pDevice, void *pHost, unsigned int flags)
{
    RT_ENTER();
    if (pDevice == NULL || pHost == NULL || flags != 0) return rt_fail(cudaErrorInvalidValue);
    CUdeviceptr dptr = 0;
    cudaError_t e = rt_cu(RT_CALL(cuMemHostGetDevicePointer, &dptr, pHost, 0));
    *pDevice = e == cudaSuccess ? (void *)dptr : NULL;
    return e;
}

RT_API cudaError_t cudaMemGetInfo(size_t *free, size_t *total)
{
    RT_ENTER();
    if (free == NULL || total == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(RT_CALL(cuMemGetInfo, free, total));
}

/* Memory the driver does not know is cudaMemoryTypeUnregistered, not an error
 * (CUDA 11 and later). */
RT_API cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *attributes,
                                            const void *ptr)
{
    RT_ENTER();
    if (attributes == NULL) return rt_fail(cudaErrorInvalidValue);
    memset(attributes, 0, sizeof(*attributes));
    attributes->type = cudaMemoryTypeUnregistered;
    attributes->device = -2;
    unsigned int memtype = 0, managed = 0;
    int ordinal = -2;
    void *dptr = NULL, *hptr = NULL;
    CUpointer_attribute which[] = {
        CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_IS_MANAGED,
        CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, CU_POINTER_ATTRIBUTE_DEVICE_POINTER,
        CU_POINTER_ATTRIBUTE_HOST_POINTER};
    void *out[] = {&memtype, &managed, &ordinal, &dptr, &hptr};
    CUresult r = RT_CALL(cuPointerGetAttributes, 5, which, out, (CUdeviceptr)ptr);
    if (r != CUDA_SUCCESS) return r == CUDA_ERROR_INVALID_VALUE ? cudaSuccess : rt_cu(r);
    if (memtype == 0) return cudaSuccess;
    if (managed)
        attributes->type = cudaMemoryTypeManaged;
    else if (memtype == CU_MEMORYTYPE_HOST)
        attributes->type = cudaMemoryTypeHost;
    else
        attributes->type = cudaMemoryTypeDevice;
    attributes->device = ordinal;
    attributes->devicePointer = dptr;
    attributes->hostPointer = hptr;
    return cudaSuccess;
}
