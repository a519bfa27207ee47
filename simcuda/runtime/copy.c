/* Copies and fills, synchronous and stream-ordered, 1D and 2D. */
#include "runtime.h"
#include "per_thread.h"

#include <string.h>

static bool rt_kind_valid(enum cudaMemcpyKind kind)
{
    return kind >= cudaMemcpyHostToHost && kind <= cudaMemcpyDefault;
}

/* The unified entry points (cuMemcpy) infer the direction from the addresses;
 * host-to-host goes through them too, which keeps it ordered like any copy. */
static CUresult rt_copy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, bool pt)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return RT_CALL_PT(pt, cuMemcpyHtoD, d, src, count);
    case cudaMemcpyDeviceToHost:
        return RT_CALL_PT(pt, cuMemcpyDtoH, dst, s, count);
    case cudaMemcpyDeviceToDevice:
        return RT_CALL_PT(pt, cuMemcpyDtoD, d, s, count);
    default:
        return RT_CALL_PT(pt, cuMemcpy, d, s, count);
    }
}

static CUresult rt_copy_async(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                              CUstream stream, bool pt)
{
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    switch (kind) {
    case cudaMemcpyHostToDevice:
        return RT_CALL_PT(pt, cuMemcpyHtoDAsync, d, src, count, stream);
    case cudaMemcpyDeviceToHost:
        return RT_CALL_PT(pt, cuMemcpyDtoHAsync, dst, s, count, stream);
    case cudaMemcpyDeviceToDevice:
        return RT_CALL_PT(pt, cuMemcpyDtoDAsync, d, s, count, stream);
    default:
        return RT_CALL_PT(pt, cuMemcpyAsync, d, s, count, stream);
    }
}

static cudaError_t rt_memcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                             bool pt)
{
    RT_ENTER();
    if (!rt_kind_valid(kind)) return rt_fail(cudaErrorInvalidMemcpyDirection);
    if (count == 0) return cudaSuccess;
    if (dst == NULL || src == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(rt_copy(dst, src, count, kind, pt));
}

static cudaError_t rt_memcpy_async(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind, cudaStream_t stream, bool pt)
{
    RT_ENTER();
    if (!rt_kind_valid(kind)) return rt_fail(cudaErrorInvalidMemcpyDirection);
    if (count == 0) return cudaSuccess;
    if (dst == NULL || src == NULL) return rt_fail(cudaErrorInvalidValue);
    return rt_cu(rt_copy_async(dst, src, count, kind, rt_stream(stream, pt), pt));
}

RT_API cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return rt_memcpy(dst, src, count, kind, false);
}

RT_API cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind)
{
    return rt_memcpy(dst, src, count, kind, true);
}

RT_API cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count,
                                   enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return rt_memcpy_async(dst, src, count, kind, stream, false);
}

RT_API cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count,
                                        enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return rt_memcpy_async(dst, src, count, kind, stream, true);
}

/* Describes one side of a 2D copy in the driver's terms. */
static void rt_side_2d(bool host, bool unified, const void *ptr, CUmemorytype *type,
                       const void **hostp, CUdeviceptr *devp)
{
    if (unified) {
        *type = CU_MEMORYTYPE_UNIFIED;
        *devp = (CUdeviceptr)ptr;
    } else if (host) {
        *type = CU_MEMORYTYPE_HOST;
        *hostp = ptr;
    } else {
        *type = CU_MEMORYTYPE_DEVICE;
        *devp = (CUdeviceptr)ptr;
    }
}

static cudaError_t rt_copy_2d_params(CUDA_MEMCPY2D *p, void *dst, size_t dpitch, const void *src,
                                     size_t spitch, size_t width, size_t height,
                                     enum cudaMemcpyKind kind)
{
    if (!rt_kind_valid(kind)) return cudaErrorInvalidMemcpyDirection;
    if (width > dpitch || width > spitch) return cudaErrorInvalidPitchValue;
    memset(p, 0, sizeof(*p));
    bool unified = kind == cudaMemcpyDefault;
    bool src_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyHostToDevice;
    bool dst_host = kind == cudaMemcpyHostToHost || kind == cudaMemcpyDeviceToHost;
    rt_side_2d(src_host, unified, src, &p->srcMemoryType, &p->srcHost, &p->srcDevice);
    const void *dst_host_ptr = NULL;
    rt_side_2d(dst_host, unified, dst, &p->dstMemoryType, &dst_host_ptr, &p->dstDevice);
    p->dstHost = (void *)dst_host_ptr;
    p->srcPitch = spitch;
    p->dstPitch = dpitch;
    p->WidthInBytes = width;
    p->Height = height;
    return cudaSuccess;
}

static cudaError_t rt_memcpy_2d(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind,
                                cudaStream_t stream, bool async, bool pt)
{
    RT_ENTER();
    CUDA_MEMCPY2D p;
    cudaError_t e = rt_copy_2d_params(&p, dst, dpitch, src, spitch, width, height, kind);
    if (e != cudaSuccess) return rt_fail(e);
    if (width == 0 || height == 0) return cudaSuccess;
    if (async) return rt_cu(RT_CALL_PT(pt, cuMemcpy2DAsync, &p, rt_stream(stream, pt)));
    return rt_cu(RT_CALL_PT(pt, cuMemcpy2D, &p));
}

RT_API cudaError_t cudaMemcpy2D(void *dst, size_t dpitch, const void *src, size_t spitch,
                                size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, false, false);
}

RT_API cudaError_t cudaMemcpy2D_ptds(void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind)
{
    return rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, NULL, false, true);
}

RT_API cudaError_t cudaMemcpy2DAsync(void *dst, size_t dpitch, const void *src, size_t spitch,
                                     size_t width, size_t height, enum cudaMemcpyKind kind,
                                     cudaStream_t stream)
{
    return rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, false);
}

RT_API cudaError_t cudaMemcpy2DAsync_ptsz(void *dst, size_t dpitch, const void *src, size_t spitch,
                                          size_t width, size_t height, enum cudaMemcpyKind kind,
                                          cudaStream_t stream)
{
    return rt_memcpy_2d(dst, dpitch, src, spitch, width, height, kind, stream, true, true);
}

static cudaError_t rt_memset(void *devPtr, int value, size_t count, cudaStream_t stream, bool async,
                             bool pt)
{
    RT_ENTER();
    if (count == 0) return cudaSuccess;
    CUdeviceptr d = (CUdeviceptr)devPtr;
    unsigned char byte = (unsigned char)value;
    if (async) return rt_cu(RT_CALL_PT(pt, cuMemsetD8Async, d, byte, count, rt_stream(stream, pt)));
    return rt_cu(RT_CALL_PT(pt, cuMemsetD8, d, byte, count));
}

RT_API cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    return rt_memset(devPtr, value, count, NULL, false, false);
}

RT_API cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    return rt_memset(devPtr, value, count, NULL, false, true);
}

RT_API cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return rt_memset(devPtr, value, count, stream, true, false);
}

RT_API cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return rt_memset(devPtr, value, count, stream, true, true);
}

static cudaError_t rt_memset_2d(void *devPtr, size_t pitch, int value, size_t width, size_t height,
                                cudaStream_t stream, bool async, bool pt)
{
    RT_ENTER();
    if (width == 0 || height == 0) return cudaSuccess;
    if (width > pitch && height > 1) return rt_fail(cudaErrorInvalidPitchValue);
    CUdeviceptr d = (CUdeviceptr)devPtr;
    unsigned char byte = (unsigned char)value;
    if (async)
        return rt_cu(RT_CALL_PT(pt, cuMemsetD2D8Async, d, pitch, byte, width, height,
                                rt_stream(stream, pt)));
    return rt_cu(RT_CALL_PT(pt, cuMemsetD2D8, d, pitch, byte, width, height));
}

RT_API cudaError_t cudaMemset2D(void *devPtr, size_t pitch, int value, size_t width, size_t height)
{
    return rt_memset_2d(devPtr, pitch, value, width, height, NULL, false, false);
}

RT_API cudaError_t cudaMemset2D_ptds(void *devPtr, size_t pitch, int value, size_t width,
                                     size_t height)
{
    return rt_memset_2d(devPtr, pitch, value, width, height, NULL, false, true);
}

RT_API cudaError_t cudaMemset2DAsync(void *devPtr, size_t pitch, int value, size_t width,
                                     size_t height, cudaStream_t stream)
{
    return rt_memset_2d(devPtr, pitch, value, width, height, stream, true, false);
}

RT_API cudaError_t cudaMemset2DAsync_ptsz(void *devPtr, size_t pitch, int value, size_t width,
                                          size_t height, cudaStream_t stream)
{
    return rt_memset_2d(devPtr, pitch, value, width, height, stream, true, true);
}

/* Peer copies name each side's device: the driver takes their primary contexts. */
static cudaError_t rt_peer_contexts(int dst_device, int src_device, CUcontext *dst_ctx,
                                    CUcontext *src_ctx)
{
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(dst_device, &dev);
    if (e == cudaSuccess) e = rt_cudevice(src_device, &dev);
    if (e != cudaSuccess) return e;
    *dst_ctx = rt_primary_ctx(dst_device, &e);
    if (*dst_ctx != NULL) *src_ctx = rt_primary_ctx(src_device, &e);
    return e;
}

static cudaError_t rt_memcpy_peer(void *dst, int dstDevice, const void *src, int srcDevice,
                                  size_t count, cudaStream_t stream, bool async)
{
    RT_ENTER();
    CUcontext dst_ctx = NULL, src_ctx = NULL;
    cudaError_t e = rt_peer_contexts(dstDevice, srcDevice, &dst_ctx, &src_ctx);
    if (e != cudaSuccess) return rt_fail(e);
    if (count == 0) return cudaSuccess;
    CUdeviceptr d = (CUdeviceptr)dst, s = (CUdeviceptr)src;
    if (async)
        return rt_cu(RT_CALL(cuMemcpyPeerAsync, d, dst_ctx, s, src_ctx, count, (CUstream)stream));
    return rt_cu(RT_CALL(cuMemcpyPeer, d, dst_ctx, s, src_ctx, count));
}

RT_API cudaError_t cudaMemcpyPeer(void *dst, int dstDevice, const void *src, int srcDevice,
                                  size_t count)
{
    return rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, NULL, false);
}

RT_API cudaError_t cudaMemcpyPeerAsync(void *dst, int dstDevice, const void *src, int srcDevice,
                                       size_t count, cudaStream_t stream)
{
    return rt_memcpy_peer(dst, dstDevice, src, srcDevice, count, stream, true);
}

/* A pitched 3D region is ysize * depth rows of one pitch, so a 3D fill is a 2D
 * fill over all its rows when it covers whole slices, else one per slice. */
static cudaError_t rt_memset_3d(struct cudaPitchedPtr p, int value, struct cudaExtent extent,
                                cudaStream_t stream, bool async, bool pt)
{
    if (extent.height == p.ysize || extent.depth <= 1)
        return rt_memset_2d(p.ptr, p.pitch, value, extent.width, extent.height * extent.depth,
                            stream, async, pt);
    for (size_t z = 0; z < extent.depth; z++) {
        char *slice = (char *)p.ptr + z * p.pitch * p.ysize;
        cudaError_t e =
            rt_memset_2d(slice, p.pitch, value, extent.width, extent.height, stream, async, pt);
        if (e != cudaSuccess) return e;
    }
    return cudaSuccess;
}

RT_API cudaError_t cudaMemset3D(struct cudaPitchedPtr pitchedDevPtr, int value,
                                struct cudaExtent extent)
{
    return rt_memset_3d(pitchedDevPtr, value, extent, NULL, false, false);
}

RT_API cudaError_t cudaMemset3D_ptds(struct cudaPitchedPtr pitchedDevPtr, int value,
                                     struct cudaExtent extent)
{
    return rt_memset_3d(pitchedDevPtr, value, extent, NULL, false, true);
}

RT_API cudaError_t cudaMemset3DAsync(struct cudaPitchedPtr pitchedDevPtr, int value,
                                     struct cudaExtent extent, cudaStream_t stream)
{
    return rt_memset_3d(pitchedDevPtr, value, extent, stream, true, false);
}

RT_API cudaError_t cudaMemset3DAsync_ptsz(struct cudaPitchedPtr pitchedDevPtr, int value,
                                          struct cudaExtent extent, cudaStream_t stream)
{
    return rt_memset_3d(pitchedDevPtr, value, extent, stream, true, true);
}
