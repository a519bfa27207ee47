/* Pool objects: every device's default pool, its current pool and the pools
 * created with cuMemPoolCreate; their attributes, access and trimming. The
 * blocks themselves are placed by pool_alloc.c. */
#include "pool.h"

#include <stdlib.h>
#include <string.h>

struct sim_pool *sim_pool_new(struct sim_device *d, int is_default)
{
    struct sim_pool *p = calloc(1, sizeof *p);
    if (!p) return NULL;
    sim_handle_init(&p->handle, SIM_H_POOL);
    p->dev = d;
    p->is_default = is_default;
    p->reuse_follow = p->reuse_opportunistic = p->reuse_internal = 1;
    p->next = d->pools;
    d->pools = p;
    return p;
}

size_t sim_pools_reserved(struct sim_device *d)
{
    size_t n = 0;
    for (struct sim_pool *p = d->pools; p; p = p->next)
        n += p->reserved;
    return n;
}

SIM_API CUresult cuMemPoolTrimTo(CUmemoryPool pool, size_t minBytesToKeep)
{
    SIM_ENTRY();
    CUresult rc;
    sim_lock();
    struct sim_pool *p = sim_handle_get(pool, SIM_H_POOL, &rc);
    if (p) sim_pool_trim(p, minBytesToKeep);
    sim_unlock();
    return rc;
}

static CUresult set_u64(size_t *high, size_t current, const void *value)
{
    cuuint64_t v;
    memcpy(&v, value, sizeof v);
    if (v != 0) return CUDA_ERROR_INVALID_VALUE;
    *high = current;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuMemPoolSetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SIM_ENTRY();
    CUresult rc;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_pool *p = sim_handle_get(pool, SIM_H_POOL, &rc);
    if (p) {
        switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
            memcpy(&p->reuse_follow, value, sizeof(int));
            break;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
            memcpy(&p->reuse_opportunistic, value, sizeof(int));
            break;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            memcpy(&p->reuse_internal, value, sizeof(int));
            break;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            memcpy(&p->threshold, value, sizeof(cuuint64_t));
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            rc = set_u64(&p->reserved_high, p->reserved, value);
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            rc = set_u64(&p->used_high, p->used, value);
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemPoolGetAttribute(CUmemoryPool pool, CUmemPool_attribute attr, void *value)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuMemPoolGetAttribute);
    CUresult rc;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_pool *p = sim_handle_get(pool, SIM_H_POOL, &rc);
    if (p) {
        cuuint64_t v = 0;
        int iv = -1;
        switch (attr) {
        case CU_MEMPOOL_ATTR_REUSE_FOLLOW_EVENT_DEPENDENCIES:
            iv = p->reuse_follow;
            break;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_OPPORTUNISTIC:
            iv = p->reuse_opportunistic;
            break;
        case CU_MEMPOOL_ATTR_REUSE_ALLOW_INTERNAL_DEPENDENCIES:
            iv = p->reuse_internal;
            break;
        case CU_MEMPOOL_ATTR_RELEASE_THRESHOLD:
            v = p->threshold;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT:
            v = p->reserved;
            break;
        case CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH:
            v = p->reserved_high;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_CURRENT:
            v = p->used;
            break;
        case CU_MEMPOOL_ATTR_USED_MEM_HIGH:
            v = p->used_high;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
        if (rc == CUDA_SUCCESS && iv >= 0)
            memcpy(value, &iv, sizeof iv);
        else if (rc == CUDA_SUCCESS)
            memcpy(value, &v, sizeof v);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemPoolSetAccess(CUmemoryPool pool, const CUmemAccessDesc *map, size_t count)
{
    SIM_ENTRY();
    CUresult rc = sim_handle_check(pool, SIM_H_POOL);
    return rc == CUDA_SUCCESS && !map && count ? CUDA_ERROR_INVALID_VALUE : rc;
}

SIM_API CUresult cuMemPoolGetAccess(CUmemAccess_flags *flags, CUmemoryPool memPool,
                                    CUmemLocation *location)
{
    SIM_ENTRY();
    CUresult rc;
    if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct sim_pool *p = sim_handle_get(memPool, SIM_H_POOL, &rc);
    if (p)
        *flags = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id == p->dev->ordinal
                     ? CU_MEM_ACCESS_FLAGS_PROT_READWRITE
                     : CU_MEM_ACCESS_FLAGS_PROT_NONE;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemPoolCreate(CUmemoryPool *pool, const CUmemPoolProps *poolProps)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!pool || !poolProps || poolProps->allocType != CU_MEM_ALLOCATION_TYPE_PINNED ||
        poolProps->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_device_get(poolProps->location.id, &d);
    if (rc == CUDA_ERROR_INVALID_DEVICE) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        struct sim_pool *p = sim_pool_new(d, 0);
        if (p)
            *pool = (CUmemoryPool)p;
        else
            rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemPoolDestroy(CUmemoryPool pool)
{
    SIM_ENTRY();
    CUresult rc;
    sim_lock();
    struct sim_pool *p = sim_handle_get(pool, SIM_H_POOL, &rc);
    if (p && p->is_default) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        struct sim_device *d = p->dev;
        sim_drain_device(d);
        sim_pool_release_all(p);
        if (d->current_pool == p) d->current_pool = d->default_pool;
        for (struct sim_pool **pp = &d->pools; *pp; pp = &(*pp)->next) {
            if (*pp == p) {
                *pp = p->next;
                break;
            }
        }
        sim_handle_retire(&p->handle);
        free(p);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool_out, CUdevice dev)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuDeviceGetDefaultMemPool);
    struct sim_device *d;
    if (!pool_out) return CUDA_ERROR_INVALID_VALUE;
    /* Seen on an H200: this query from a thread capturing in global mode
     * invalidated the capture. */
    CUresult rc = sim_unsafe_call();
    if (rc != CUDA_SUCCESS) return rc;
    rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) *pool_out = (CUmemoryPool)d->default_pool;
    return rc;
}

static CUresult device_get_mem_pool(CUmemoryPool *pool, CUdevice dev)
{
    struct sim_device *d;
    if (!pool) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) *pool = (CUmemoryPool)d->current_pool;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceGetMemPool(CUmemoryPool *pool, CUdevice dev)
{
    SIM_ENTRY();
    sim_count_call(SIM_COUNT_cuDeviceGetMemPool);
    CUresult rc = sim_unsafe_call();
    return rc != CUDA_SUCCESS ? rc : device_get_mem_pool(pool, dev);
}

SIM_API CUresult cuDeviceSetMemPool(CUdevice dev, CUmemoryPool pool)
{
    SIM_ENTRY();
    struct sim_device *d;
    struct sim_pool *p = NULL;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) p = sim_handle_get(pool, SIM_H_POOL, &rc);
    if (rc == CUDA_SUCCESS && p->dev != d) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) d->current_pool = p;
    sim_unlock();
    return rc;
}

static CUresult location_device(const CUmemLocation *loc, CUmemAllocationType type,
                                struct sim_device **d)
{
    if (!loc || loc->type != CU_MEM_LOCATION_TYPE_DEVICE || type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = sim_device_get(loc->id, d);
    return rc == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_VALUE : rc;
}

SIM_API CUresult cuMemGetDefaultMemPool(CUmemoryPool *pool_out, CUmemLocation *location,
                                        CUmemAllocationType type)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = location_device(location, type, &d);
    if (rc == CUDA_SUCCESS && !pool_out) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *pool_out = (CUmemoryPool)d->default_pool;
    return rc;
}

SIM_API CUresult cuMemGetMemPool(CUmemoryPool *pool, CUmemLocation *location,
                                 CUmemAllocationType type)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = location_device(location, type, &d);
    return rc == CUDA_SUCCESS ? device_get_mem_pool(pool, d->ordinal) : rc;
}

SIM_API CUresult cuMemSetMemPool(CUmemLocation *location, CUmemAllocationType type,
                                 CUmemoryPool pool)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = location_device(location, type, &d);
    return rc == CUDA_SUCCESS ? cuDeviceSetMemPool(d->ordinal, pool) : rc;
}
