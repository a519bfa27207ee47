/* Memset and memcpy in all their driver spellings. Every variant validates
 * its device ranges when called, then becomes one queued operation: run at
 * once for the synchronous forms, left in the stream for the async ones, or
 * recorded into the graph of a capturing stream. */
#include "sim.h"

#include <stdlib.h>

/* Device or CUDA-registered memory must be valid; plain host memory passes. */
static CUresult check_any(uintptr_t p, size_t len)
{
    if (sim_is_device_addr(p)) return sim_check_device_range(p, len);
    return CUDA_SUCCESS;
}

static void range_if_device(uintptr_t p, size_t len, uintptr_t *lo, uintptr_t *hi)
{
    if (len && sim_is_device_addr(p)) {
        *lo = p;
        *hi = p + len;
    }
}

static CUresult submit(struct sim_op *op, CUstream h, enum sim_default_stream ds, int async)
{
    struct sim_stream *s;
    CUresult rc = sim_stream_resolve(h, ds, &s);
    if (rc != CUDA_SUCCESS) {
        free(op);
        return rc;
    }
    if (sim_capturing(s)) {
        if (!async) {
            free(op);
            s->capture = SIM_CAP_INVALIDATED;
            return CUDA_ERROR_STREAM_CAPTURE_UNSUPPORTED;
        }
        sim_capture_op(s, op);
    } else if (async) {
        sim_enqueue(s, op);
    } else {
        sim_run_now(s, op);
    }
    return CUDA_SUCCESS;
}

CUresult sim_memset(uintptr_t dst, size_t pitch, unsigned value, unsigned elem, size_t width,
                    size_t height, CUstream h, enum sim_default_stream ds, int async)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    if (height > 1 && pitch < width * elem) return CUDA_ERROR_INVALID_VALUE;
    if (dst % elem != 0) return CUDA_ERROR_INVALID_VALUE;
    size_t span = (height - 1) * pitch + width * elem;
    sim_lock();
    CUresult rc = sim_check_device_range(dst, span);
    struct sim_op *op = NULL;
    if (rc == CUDA_SUCCESS && !(op = sim_op_new(SIM_OP_MEMSET))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        op->u.set.dst = dst;
        op->u.set.pitch = height > 1 ? pitch : width * elem;
        op->u.set.width = width;
        op->u.set.height = height;
        op->u.set.elem = elem;
        op->u.set.value = value;
        range_if_device(dst, span, &op->wr_lo, &op->wr_hi);
        rc = submit(op, h, ds, async);
    }
    sim_unlock();
    return rc;
}

static CUresult copy2d(uintptr_t dst, size_t dpitch, uintptr_t src, size_t spitch, size_t width,
                       size_t height, CUstream h, enum sim_default_stream ds, int async,
                       int dst_dev, int src_dev)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (width == 0 || height == 0) return CUDA_SUCCESS;
    if (height > 1 && (dpitch < width || spitch < width)) return CUDA_ERROR_INVALID_VALUE;
    if (height == 1) dpitch = spitch = width;
    size_t dspan = (height - 1) * dpitch + width, sspan = (height - 1) * spitch + width;
    sim_lock();
    CUresult rc = dst_dev ? sim_check_device_range(dst, dspan) : check_any(dst, dspan);
    if (rc == CUDA_SUCCESS)
        rc = src_dev ? sim_check_device_range(src, sspan) : check_any(src, sspan);
    if (rc == CUDA_SUCCESS && (!dst || !src)) rc = CUDA_ERROR_INVALID_VALUE;
    struct sim_op *op = NULL;
    if (rc == CUDA_SUCCESS && !(op = sim_op_new(SIM_OP_COPY))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        op->u.copy.dst = dst;
        op->u.copy.src = src;
        op->u.copy.width = width;
        op->u.copy.height = height;
        op->u.copy.dpitch = dpitch;
        op->u.copy.spitch = spitch;
        range_if_device(dst, dspan, &op->wr_lo, &op->wr_hi);
        range_if_device(src, sspan, &op->rd_lo, &op->rd_hi);
        rc = submit(op, h, ds, async);
    }
    sim_unlock();
    return rc;
}

CUresult sim_memcpy(uintptr_t dst, uintptr_t src, size_t bytes, CUstream h,
                    enum sim_default_stream ds, int async)
{
    return copy2d(dst, bytes, src, bytes, bytes, 1, h, ds, async, 0, 0);
}

enum dir { H2D, D2H, D2D };

static CUresult copy_dir(enum dir d, uintptr_t dst, uintptr_t src, size_t bytes, CUstream h,
                         enum sim_default_stream ds, int async)
{
    return copy2d(dst, bytes, src, bytes, bytes, 1, h, ds, async, d != D2H, d != H2D);
}

/* ---- memset ---- */

#define LEG SIM_DS_LEGACY
#define PT  SIM_DS_PER_THREAD

#define MEMSET_1D(name, T, elem, ptr_t, n_t, ds)                                                   \
    SIM_API CUresult name(ptr_t dstDevice, T v, n_t N)                                             \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return sim_memset(dstDevice, 0, v, elem, N, 1, NULL, ds, 0);                               \
    }
#define MEMSET_2D(name, T, elem, ptr_t, n_t, ds)                                                   \
    SIM_API CUresult name(ptr_t dstDevice, n_t dstPitch, T v, n_t Width, n_t Height)               \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return sim_memset(dstDevice, dstPitch, v, elem, Width, Height, NULL, ds, 0);               \
    }
#define MEMSET_1D_ASYNC(name, T, elem, ds)                                                         \
    SIM_API CUresult name(CUdeviceptr dstDevice, T v, size_t N, CUstream hStream)                  \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return sim_memset(dstDevice, 0, v, elem, N, 1, hStream, ds, 1);                            \
    }
#define MEMSET_2D_ASYNC(name, T, elem, ds)                                                         \
    SIM_API CUresult name(CUdeviceptr dstDevice, size_t dstPitch, T v, size_t Width,               \
                          size_t Height, CUstream hStream)                                         \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return sim_memset(dstDevice, dstPitch, v, elem, Width, Height, hStream, ds, 1);            \
    }

MEMSET_1D(cuMemsetD8_v2, unsigned char, 1, CUdeviceptr, size_t, LEG)
MEMSET_1D(cuMemsetD16_v2, unsigned short, 2, CUdeviceptr, size_t, LEG)
MEMSET_1D(cuMemsetD32_v2, unsigned int, 4, CUdeviceptr, size_t, LEG)
MEMSET_1D(cuMemsetD8_v2_ptds, unsigned char, 1, CUdeviceptr, size_t, PT)
MEMSET_1D(cuMemsetD16_v2_ptds, unsigned short, 2, CUdeviceptr, size_t, PT)
MEMSET_1D(cuMemsetD32_v2_ptds, unsigned int, 4, CUdeviceptr, size_t, PT)
MEMSET_2D(cuMemsetD2D8_v2, unsigned char, 1, CUdeviceptr, size_t, LEG)
MEMSET_2D(cuMemsetD2D16_v2, unsigned short, 2, CUdeviceptr, size_t, LEG)
MEMSET_2D(cuMemsetD2D32_v2, unsigned int, 4, CUdeviceptr, size_t, LEG)
MEMSET_2D(cuMemsetD2D8_v2_ptds, unsigned char, 1, CUdeviceptr, size_t, PT)
MEMSET_2D(cuMemsetD2D16_v2_ptds, unsigned short, 2, CUdeviceptr, size_t, PT)
MEMSET_2D(cuMemsetD2D32_v2_ptds, unsigned int, 4, CUdeviceptr, size_t, PT)
MEMSET_1D_ASYNC(cuMemsetD8Async, unsigned char, 1, LEG)
MEMSET_1D_ASYNC(cuMemsetD16Async, unsigned short, 2, LEG)
MEMSET_1D_ASYNC(cuMemsetD32Async, unsigned int, 4, LEG)
MEMSET_1D_ASYNC(cuMemsetD8Async_ptsz, unsigned char, 1, PT)
MEMSET_1D_ASYNC(cuMemsetD16Async_ptsz, unsigned short, 2, PT)
MEMSET_1D_ASYNC(cuMemsetD32Async_ptsz, unsigned int, 4, PT)
MEMSET_2D_ASYNC(cuMemsetD2D8Async, unsigned char, 1, LEG)
MEMSET_2D_ASYNC(cuMemsetD2D16Async, unsigned short, 2, LEG)
MEMSET_2D_ASYNC(cuMemsetD2D32Async, unsigned int, 4, LEG)
MEMSET_2D_ASYNC(cuMemsetD2D8Async_ptsz, unsigned char, 1, PT)
MEMSET_2D_ASYNC(cuMemsetD2D16Async_ptsz, unsigned short, 2, PT)
MEMSET_2D_ASYNC(cuMemsetD2D32Async_ptsz, unsigned int, 4, PT)

/* ---- memcpy ---- */

SIM_API CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    SIM_ENTRY();
    return sim_memcpy(dst, src, ByteCount, NULL, LEG, 0);
}

SIM_API CUresult cuMemcpy_ptds(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount)
{
    SIM_ENTRY();
    return sim_memcpy(dst, src, ByteCount, NULL, PT, 0);
}

SIM_API CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount, CUstream hStream)
{
    SIM_ENTRY();
    return sim_memcpy(dst, src, ByteCount, hStream, LEG, 1);
}

SIM_API CUresult cuMemcpyAsync_ptsz(CUdeviceptr dst, CUdeviceptr src, size_t ByteCount,
                                    CUstream hStream)
{
    SIM_ENTRY();
    return sim_memcpy(dst, src, ByteCount, hStream, PT, 1);
}

SIM_API CUresult cuMemcpyPeer(CUdeviceptr dstDevice, CUcontext dstContext, CUdeviceptr srcDevice,
                              CUcontext srcContext, size_t ByteCount)
{
    SIM_ENTRY();
    return copy_dir(D2D, dstDevice, srcDevice, ByteCount, NULL, LEG, 0);
}

SIM_API CUresult cuMemcpyPeer_ptds(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount)
{
    SIM_ENTRY();
    return copy_dir(D2D, dstDevice, srcDevice, ByteCount, NULL, PT, 0);
}

SIM_API CUresult cuMemcpyPeerAsync(CUdeviceptr dstDevice, CUcontext dstContext,
                                   CUdeviceptr srcDevice, CUcontext srcContext, size_t ByteCount,
                                   CUstream hStream)
{
    SIM_ENTRY();
    return copy_dir(D2D, dstDevice, srcDevice, ByteCount, hStream, LEG, 1);
}

SIM_API CUresult cuMemcpyPeerAsync_ptsz(CUdeviceptr dstDevice, CUcontext dstContext,
                                        CUdeviceptr srcDevice, CUcontext srcContext,
                                        size_t ByteCount, CUstream hStream)
{
    SIM_ENTRY();
    return copy_dir(D2D, dstDevice, srcDevice, ByteCount, hStream, PT, 1);
}

#define COPY_SYNC(name, dir, dst_t, src_t, n_t, ds)                                                \
    SIM_API CUresult name(dst_t dst, src_t src, n_t ByteCount)                                     \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return copy_dir(dir, (uintptr_t)dst, (uintptr_t)src, ByteCount, NULL, ds, 0);              \
    }
#define COPY_ASYNC(name, dir, dst_t, src_t, n_t, ds)                                               \
    SIM_API CUresult name(dst_t dst, src_t src, n_t ByteCount, CUstream hStream)                   \
    {                                                                                              \
        SIM_ENTRY();                                                                               \
        return copy_dir(dir, (uintptr_t)dst, (uintptr_t)src, ByteCount, hStream, ds, 1);           \
    }

COPY_SYNC(cuMemcpyHtoD_v2, H2D, CUdeviceptr, const void *, size_t, LEG)
COPY_SYNC(cuMemcpyDtoH_v2, D2H, void *, CUdeviceptr, size_t, LEG)
COPY_SYNC(cuMemcpyDtoD_v2, D2D, CUdeviceptr, CUdeviceptr, size_t, LEG)
COPY_SYNC(cuMemcpyHtoD_v2_ptds, H2D, CUdeviceptr, const void *, size_t, PT)
COPY_SYNC(cuMemcpyDtoH_v2_ptds, D2H, void *, CUdeviceptr, size_t, PT)
COPY_SYNC(cuMemcpyDtoD_v2_ptds, D2D, CUdeviceptr, CUdeviceptr, size_t, PT)
COPY_ASYNC(cuMemcpyHtoDAsync_v2, H2D, CUdeviceptr, const void *, size_t, LEG)
COPY_ASYNC(cuMemcpyDtoHAsync_v2, D2H, void *, CUdeviceptr, size_t, LEG)
COPY_ASYNC(cuMemcpyDtoDAsync_v2, D2D, CUdeviceptr, CUdeviceptr, size_t, LEG)
COPY_ASYNC(cuMemcpyHtoDAsync_v2_ptsz, H2D, CUdeviceptr, const void *, size_t, PT)
COPY_ASYNC(cuMemcpyDtoHAsync_v2_ptsz, D2H, void *, CUdeviceptr, size_t, PT)
COPY_ASYNC(cuMemcpyDtoDAsync_v2_ptsz, D2D, CUdeviceptr, CUdeviceptr, size_t, PT)

/* ---- 2D copies between host and device memory (arrays are not modelled) ---- */

static CUresult endpoint(CUmemorytype t, const void *host, CUdeviceptr dev, size_t x, size_t y,
                         size_t pitch, uintptr_t *addr, int *is_dev)
{
    switch (t) {
    case CU_MEMORYTYPE_HOST:
        *addr = (uintptr_t)host + y * pitch + x;
        *is_dev = 0;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_DEVICE:
        *addr = dev + y * pitch + x;
        *is_dev = 1;
        return CUDA_SUCCESS;
    case CU_MEMORYTYPE_UNIFIED:
        *addr = dev + y * pitch + x;
        *is_dev = 0;
        return CUDA_SUCCESS;
    default:
        return CUDA_ERROR_NOT_SUPPORTED;
    }
}

static CUresult memcpy2d(const CUDA_MEMCPY2D *c, CUstream h, enum sim_default_stream ds, int async)
{
    uintptr_t dst, src;
    int dd, sd;
    if (!c) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = endpoint(c->dstMemoryType, c->dstHost, c->dstDevice, c->dstXInBytes, c->dstY,
                           c->dstPitch, &dst, &dd);
    if (rc == CUDA_SUCCESS)
        rc = endpoint(c->srcMemoryType, c->srcHost, c->srcDevice, c->srcXInBytes, c->srcY,
                      c->srcPitch, &src, &sd);
    if (rc != CUDA_SUCCESS) return rc;
    return copy2d(dst, c->dstPitch, src, c->srcPitch, c->WidthInBytes, c->Height, h, ds, async, dd,
                  sd);
}

SIM_API CUresult cuMemcpy2D_v2(const CUDA_MEMCPY2D *pCopy)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, NULL, LEG, 0);
}

SIM_API CUresult cuMemcpy2D_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, NULL, PT, 0);
}

SIM_API CUresult cuMemcpy2DUnaligned_v2(const CUDA_MEMCPY2D *pCopy)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, NULL, LEG, 0);
}

SIM_API CUresult cuMemcpy2DUnaligned_v2_ptds(const CUDA_MEMCPY2D *pCopy)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, NULL, PT, 0);
}

SIM_API CUresult cuMemcpy2DAsync_v2(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, hStream, LEG, 1);
}

SIM_API CUresult cuMemcpy2DAsync_v2_ptsz(const CUDA_MEMCPY2D *pCopy, CUstream hStream)
{
    SIM_ENTRY();
    return memcpy2d(pCopy, hStream, PT, 1);
}

/* ---- the 32-bit ABIs (see sim_legacy_abi) ---- */

SIM_API CUresult cuMemsetD8(CUdeviceptr_v1 dstDevice, unsigned char uc, unsigned int N)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemsetD16(CUdeviceptr_v1 dstDevice, unsigned short us, unsigned int N)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemsetD32(CUdeviceptr_v1 dstDevice, unsigned int ui, unsigned int N)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemsetD2D8(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned char uc,
                              unsigned int Width, unsigned int Height)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemsetD2D16(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned short us,
                               unsigned int Width, unsigned int Height)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemsetD2D32(CUdeviceptr_v1 dstDevice, unsigned int dstPitch, unsigned int ui,
                               unsigned int Width, unsigned int Height)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyHtoD(CUdeviceptr_v1 dstDevice, const void *srcHost, unsigned int ByteCount)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyDtoH(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyDtoD(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                              unsigned int ByteCount)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyHtoDAsync(CUdeviceptr_v1 dstDevice, const void *srcHost,
                                   unsigned int ByteCount, CUstream hStream)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyDtoHAsync(void *dstHost, CUdeviceptr_v1 srcDevice, unsigned int ByteCount,
                                   CUstream hStream)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemcpyDtoDAsync(CUdeviceptr_v1 dstDevice, CUdeviceptr_v1 srcDevice,
                                   unsigned int ByteCount, CUstream hStream)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}
