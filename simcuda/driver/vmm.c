/* Virtual memory management: physical handles (cuMemCreate) are page runs
 * of a device; reservations are VA ranges of a device range; mappings tie
 * the two together and become usable only after cuMemSetAccess. A handle's
 * pages go back only when it has been released and unmapped everywhere. */
#include "sim.h"

#include <stdlib.h>
#include <stdbool.h>
#include <string.h>

struct vmm_handle {
    struct sim_handle handle;
    struct sim_device *dev;
    size_t size;
    struct sim_phys phys;
    int refs;      /* cuMemCreate and cuMemRetainAllocationHandle */
    unsigned maps; /* live mappings */
    CUmemAllocationProp prop;
};

struct mapping {
    uintptr_t va;
    size_t size;
    size_t offset;
    struct vmm_handle *h;
    int access;                      /* the most any device was given: copies check it */
    int dev_access[SIM_MAX_DEVICES]; /* per device, as cuMemSetAccess set and cuMemGetAccess reads
                                      */
    struct mapping *next;
};

struct reservation {
    struct sim_region *region;
    struct mapping *maps;
};

/* A generic allocation handle is an integer: the address of its vmm_handle. */
static struct vmm_handle *handle_get(CUmemGenericAllocationHandle gh, CUresult *rc)
{
    return sim_handle_get((const void *)(uintptr_t)gh, SIM_H_VMM, rc);
}

static void handle_maybe_free(struct vmm_handle *h)
{
    if (h->refs > 0 || h->maps > 0) return;
    h->dev->vmm_physical -= h->size;
    h->dev->free_calls++;
    sim_phys_free(h->dev, &h->phys);
    sim_handle_retire(&h->handle);
    free(h);
}

static CUresult prop_device(const CUmemAllocationProp *prop, struct sim_device **d)
{
    if (!prop || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED ||
        prop->location.type != CU_MEM_LOCATION_TYPE_DEVICE)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = sim_device_get(prop->location.id, d);
    return rc == CUDA_ERROR_INVALID_DEVICE ? CUDA_ERROR_INVALID_DEVICE : rc;
}

SIM_API CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                               CUmemAllocationGranularity_flags option)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!granularity) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = prop_device(prop, &d);
    if (rc == CUDA_SUCCESS) *granularity = SIM_PAGE;
    return rc;
}

SIM_API CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size,
                             const CUmemAllocationProp *prop, unsigned long long flags)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!handle || size == 0 || size % SIM_PAGE != 0 || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = prop_device(prop, &d);
    struct vmm_handle *h = NULL;
    if (rc == CUDA_SUCCESS && !(h = calloc(1, sizeof *h))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS &&
        (size / SIM_PAGE > d->npages || sim_phys_alloc(d, (uint32_t)(size / SIM_PAGE), &h->phys)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        sim_handle_init(&h->handle, SIM_H_VMM);
        h->dev = d;
        h->size = size;
        h->refs = 1;
        h->prop = *prop;
        d->vmm_physical += size;
        d->alloc_calls++;
        *handle = (CUmemGenericAllocationHandle)(uintptr_t)h;
    } else {
        free(h);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    SIM_ENTRY();
    CUresult rc;
    sim_lock();
    struct vmm_handle *h = handle_get(handle, &rc);
    if (h && h->refs <= 0) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        h->refs--;
        handle_maybe_free(h);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemGetAllocationPropertiesFromHandle(CUmemAllocationProp *prop,
                                                        CUmemGenericAllocationHandle handle)
{
    SIM_ENTRY();
    CUresult rc;
    if (!prop) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct vmm_handle *h = handle_get(handle, &rc);
    if (h) *prop = h->prop;
    sim_unlock();
    return rc;
}

static int pow2(size_t x)
{
    return (x & (x - 1)) == 0;
}

SIM_API CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment,
                                     CUdeviceptr addr, unsigned long long flags)
{
    SIM_ENTRY();
    if (!ptr || size == 0 || size % SIM_PAGE != 0 || !pow2(alignment) || flags != 0)
        return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct sim_ctx *c = sim_current_ctx();
    struct sim_device *d = c ? c->dev : &sim.dev[0];
    struct sim_device *hinted = addr ? sim_device_of_addr(addr) : NULL;
    if (hinted) d = hinted;
    CUresult rc = CUDA_SUCCESS;
    struct reservation *res = calloc(1, sizeof *res);
    struct sim_region *r = res ? sim_region_new(d, SIM_R_RESERVE, size, alignment, addr) : NULL;
    if (!r) {
        free(res);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    } else {
        r->owner = res;
        res->region = r;
        *ptr = r->base;
    }
    sim_unlock();
    return rc;
}

static struct reservation *reservation_at(uintptr_t addr)
{
    struct sim_region *r = sim_region_find(addr);
    return r && r->kind == SIM_R_RESERVE ? r->owner : NULL;
}

static void unmap_one(struct reservation *res, struct mapping **pp)
{
    struct mapping *m = *pp;
    *pp = m->next;
    sim_discard(m->va, m->size);
    m->h->maps--;
    handle_maybe_free(m->h);
    free(m);
}

SIM_API CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct reservation *res = reservation_at(ptr);
    CUresult rc = CUDA_SUCCESS;
    if (!res || res->region->base != ptr || res->region->size != SIM_ROUND_UP(size, SIM_PAGE) ||
        res->maps) {
        rc = CUDA_ERROR_INVALID_VALUE; /* mapped ranges must be unmapped first */
    } else {
        sim_region_free(res->region);
        free(res);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset,
                          CUmemGenericAllocationHandle handle, unsigned long long flags)
{
    SIM_ENTRY();
    CUresult rc;
    sim_lock();
    struct vmm_handle *h = handle_get(handle, &rc);
    struct reservation *res = reservation_at(ptr);
    if (rc == CUDA_SUCCESS && (!res || flags != 0 || size == 0 || ptr % SIM_PAGE ||
                               size % SIM_PAGE || offset % SIM_PAGE || offset + size > h->size ||
                               ptr + size > res->region->base + res->region->size || h->refs <= 0))
        rc = CUDA_ERROR_INVALID_VALUE;
    for (struct mapping *m = res && rc == CUDA_SUCCESS ? res->maps : NULL; m; m = m->next)
        if (ptr < m->va + m->size && m->va < ptr + size) rc = CUDA_ERROR_INVALID_VALUE;
    struct mapping *m = NULL;
    if (rc == CUDA_SUCCESS && !(m = calloc(1, sizeof *m))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        m->va = ptr;
        m->size = size;
        m->offset = offset;
        m->h = h;
        m->next = res->maps;
        res->maps = m;
        h->maps++;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct reservation *res = reservation_at(ptr);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (res && size > 0) {
        sim_drain_everything();
        struct mapping **pp = &res->maps;
        while (*pp) {
            struct mapping *m = *pp;
            if (m->va >= ptr && m->va + m->size <= ptr + size) {
                unmap_one(res, pp);
                rc = CUDA_SUCCESS;
            } else {
                pp = &m->next;
            }
        }
    }
    sim_unlock();
    return rc;
}

/* Every byte of [ptr, ptr+size) must be mapped. */
static CUresult covered(struct reservation *res, uintptr_t ptr, size_t size)
{
    uintptr_t at = ptr;
    while (at < ptr + size) {
        struct mapping *m;
        for (m = res->maps; m; m = m->next)
            if (at >= m->va && at < m->va + m->size) break;
        if (!m) return CUDA_ERROR_INVALID_VALUE;
        at = m->va + m->size;
    }
    return CUDA_SUCCESS;
}

SIM_API CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc,
                                size_t count)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!desc || count == 0 || size == 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct reservation *res = reservation_at(ptr);
    CUresult rc = res ? covered(res, ptr, size) : CUDA_ERROR_INVALID_VALUE;
    for (size_t i = 0; rc == CUDA_SUCCESS && i < count; i++)
        if (desc[i].location.type != CU_MEM_LOCATION_TYPE_DEVICE || desc[i].location.id < 0 ||
            desc[i].location.id >= sim.ndevices)
            rc = CUDA_ERROR_INVALID_DEVICE;
    /* Only the devices named change, as with the real driver. */
    for (struct mapping *m = rc == CUDA_SUCCESS ? res->maps : NULL; m; m = m->next) {
        if (!(m->va < ptr + size && ptr < m->va + m->size)) continue;
        for (size_t i = 0; i < count; i++)
            m->dev_access[desc[i].location.id] = (int)desc[i].flags;
        m->access = 0;
        for (int d = 0; d < SIM_MAX_DEVICES; d++)
            if (m->dev_access[d] > m->access) m->access = m->dev_access[d];
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemGetAccess(unsigned long long *flags, const CUmemLocation *location,
                                CUdeviceptr ptr)
{
    SIM_ENTRY();
    if (!flags || !location) return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct reservation *res = reservation_at(ptr);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    for (struct mapping *m = res ? res->maps : NULL; m; m = m->next) {
        if (ptr >= m->va && ptr < m->va + m->size) {
            bool dev = location->type == CU_MEM_LOCATION_TYPE_DEVICE && location->id >= 0 &&
                       location->id < sim.ndevices;
            *flags = (unsigned long long)(dev ? m->dev_access[location->id] : 0);
            rc = dev ? CUDA_SUCCESS : CUDA_ERROR_INVALID_DEVICE;
        }
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    SIM_ENTRY();
    if (!handle) return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct reservation *res = reservation_at((uintptr_t)addr);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    for (struct mapping *m = res ? res->maps : NULL; m; m = m->next) {
        if ((uintptr_t)addr >= m->va && (uintptr_t)addr < m->va + m->size) {
            m->h->refs++;
            *handle = (CUmemGenericAllocationHandle)(uintptr_t)m->h;
            rc = CUDA_SUCCESS;
            break;
        }
    }
    sim_unlock();
    return rc;
}

CUresult sim_vmm_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size,
                          int *accessible)
{
    struct reservation *res = r->owner;
    for (struct mapping *m = res->maps; m; m = m->next) {
        if (addr >= m->va && addr < m->va + m->size) {
            *base = m->va;
            *size = m->size;
            *accessible = m->access != 0;
            return CUDA_SUCCESS;
        }
    }
    return CUDA_ERROR_INVALID_VALUE;
}

/* Device accesses may span several adjacent mappings; all must be accessible. */
CUresult sim_vmm_check(struct sim_region *r, uintptr_t addr, size_t len)
{
    struct reservation *res = r->owner;
    if (addr + len > r->base + r->size) return CUDA_ERROR_INVALID_VALUE;
    uintptr_t at = addr;
    while (at < addr + len) {
        struct mapping *m;
        for (m = res->maps; m; m = m->next)
            if (at >= m->va && at < m->va + m->size) break;
        if (!m || !m->access) return CUDA_ERROR_INVALID_VALUE;
        at = m->va + m->size;
    }
    return CUDA_SUCCESS;
}
