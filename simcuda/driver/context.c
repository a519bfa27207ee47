/* Contexts: the primary context of each device and created ones, the calling
 * thread's stack of current contexts, and peer access between devices. */
#include "sim.h"

#include <stdlib.h>

#define CTX_STACK_MAX 32

static __thread struct sim_ctx *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;
static unsigned long long next_ctx_id = 1;

struct sim_ctx *sim_ctx_new(struct sim_device *d, unsigned flags, int primary)
{
    struct sim_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    sim_handle_init(&c->handle, SIM_H_CTX);
    c->dev = d;
    c->flags = flags;
    c->is_primary = primary;
    c->id = next_ctx_id++;
    sim_ctx_init_streams(c);
    return c;
}

struct sim_ctx *sim_current_ctx(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult sim_current_device(struct sim_device **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = sim_current_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *out = c->dev;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        d->primary->refcount++;
        *pctx = (CUcontext)d->primary;
    }
    sim_unlock();
    return rc;
}

static CUresult primary_release(CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) {
        if (d->primary->refcount <= 0)
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else if (--d->primary->refcount == 0)
            sim_drain_ctx(d->primary);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    SIM_ENTRY();
    return primary_release(dev);
}

SIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    SIM_ENTRY();
    return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_ctx(d->primary);
        d->primary->refcount = 0;
        d->primary->flags = 0;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    SIM_ENTRY();
    return primary_reset(dev);
}

SIM_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    SIM_ENTRY();
    return primary_reset(dev);
}

SIM_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    SIM_ENTRY();
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && (!flags || !active)) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        *flags = d->primary->flags;
        *active = d->primary->refcount > 0;
    }
    sim_unlock();
    return rc;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) d->primary->flags = flags;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    SIM_ENTRY();
    return primary_set_flags(dev, flags);
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    SIM_ENTRY();
    return primary_set_flags(dev, flags);
}

SIM_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuCtxGetCurrent);
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)sim_current_ctx();
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (c && !sim_handle_valid(c, SIM_H_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!c) {
        if (ctx_depth > 0) ctx_depth--;
    } else if (ctx_depth == 0) {
        ctx_stack[ctx_depth++] = c;
    } else {
        ctx_stack[ctx_depth - 1] = c;
    }
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    CUresult rc;
    struct sim_ctx *c = sim_handle_get(ctx, SIM_H_CTX, &rc);
    if (!c) return rc;
    if (ctx_depth == CTX_STACK_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    SIM_ENTRY();
    return ctx_push(ctx);
}

SIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    SIM_ENTRY();
    return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_ctx *c = ctx_stack[--ctx_depth];
    if (pctx) *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    SIM_ENTRY();
    return ctx_pop(pctx);
}

SIM_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    SIM_ENTRY();
    return ctx_pop(pctx);
}

SIM_API CUresult cuCtxGetDevice(CUdevice *device)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuCtxGetDevice);
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && !device) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *device = d->ordinal;
    return rc;
}

SIM_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    SIM_ENTRY();
    if (!ctx) return cuCtxGetDevice(device);
    sim_count_call(SIM_COUNT_cuCtxGetDevice);
    CUresult rc;
    struct sim_ctx *c = sim_handle_get(ctx, SIM_H_CTX, &rc);
    if (!c) return rc;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev->ordinal;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetFlags(unsigned int *flags)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && !flags) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *flags = sim_current_ctx()->flags;
    return rc;
}

SIM_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    SIM_ENTRY();
    CUresult rc;
    struct sim_ctx *c =
        sim_handle_get(ctx ? (struct sim_ctx *)ctx : sim_current_ctx(), SIM_H_CTX, &rc);
    if (!c) return rc;
    if (!ctxId) return CUDA_ERROR_INVALID_VALUE;
    *ctxId = c->id;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 3020; /* the context API version, unchanged since CUDA 3.2 */
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSynchronize(void)
{
    SIM_ENTRY();
    sim_lock();
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_ctx(sim_current_ctx());
        sim_sync_point(d);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    SIM_ENTRY();
    if (!ctx) return cuCtxSynchronize();
    CUresult rc;
    struct sim_ctx *c = sim_handle_get(ctx, SIM_H_CTX, &rc);
    if (!c) return rc;
    sim_lock();
    sim_drain_ctx(c);
    sim_sync_point(c->dev);
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = NULL;
    if (rc == CUDA_SUCCESS) {
        c = sim_ctx_new(d, flags, 0);
        if (!c) rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CUDA_SUCCESS) {
        c->refcount = 1;
        rc = ctx_push((CUcontext)c);
        *pctx = (CUcontext)c;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    SIM_ENTRY();
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    SIM_ENTRY();
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    SIM_ENTRY();
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    SIM_ENTRY();
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    CUresult rc;
    struct sim_ctx *c = sim_handle_get(ctx, SIM_H_CTX, &rc);
    if (!c) return rc;
    if (c->is_primary) return CUDA_ERROR_INVALID_CONTEXT;
    sim_lock();
    sim_drain_ctx(c);
    while (c->streams) {
        struct sim_stream *s = c->streams;
        sim_stream_destroy(s);
    }
    /* The structure itself is kept: other threads' current-context stacks
     * and per-thread stream slots may still name it, and read its tag. */
    sim_handle_retire(&c->handle);
    /* Unbind it from this thread; other threads that still have it current
     * get CUDA_ERROR_INVALID_CONTEXT from the tag check. */
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == c) ctx_stack[i] = NULL;
    while (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == NULL)
        ctx_depth--;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxDestroy(CUcontext ctx)
{
    SIM_ENTRY();
    return ctx_destroy(ctx);
}

SIM_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    SIM_ENTRY();
    return ctx_destroy(ctx);
}

static CUresult peer_enable(CUcontext peerContext, unsigned int Flags)
{
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc != CUDA_SUCCESS) return rc;
    struct sim_ctx *peer = (struct sim_ctx *)peerContext;
    if (!sim_handle_valid(peer, SIM_H_CTX) || peer->dev == d) return CUDA_ERROR_INVALID_CONTEXT;
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (d->peer_access[peer->dev->ordinal]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    d->peer_access[peer->dev->ordinal] = 1;
    return CUDA_SUCCESS;
}

static CUresult peer_disable(CUcontext peerContext)
{
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc != CUDA_SUCCESS) return rc;
    struct sim_ctx *peer = (struct sim_ctx *)peerContext;
    if (!sim_handle_valid(peer, SIM_H_CTX)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!d->peer_access[peer->dev->ordinal]) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    d->peer_access[peer->dev->ordinal] = 0;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    SIM_ENTRY();
    sim_lock();
    CUresult rc = peer_enable(peerContext, Flags);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    SIM_ENTRY();
    sim_lock();
    CUresult rc = peer_disable(peerContext);
    sim_unlock();
    return rc;
}
