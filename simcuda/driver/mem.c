/* cuMemAlloc and cuMemFree with the packing measured on an H200, memory
 * info, pitched allocations, and the address lookups every other part uses:
 * which allocation holds an address and whether a device access is valid. */
#include "sim.h"

#include <stdlib.h>

#define SLOT_FREE 0xFFFFu

static CUresult small_page_new(struct sim_device *d, struct sim_region **out)
{
    struct sim_phys p;
    if (sim_phys_alloc(d, 1, &p) != 0) return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_region *r = sim_region_new(d, SIM_R_SMALLPAGE, SIM_PAGE, 0, 0);
    if (!r) {
        sim_phys_free(d, &p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->phys = p;
    r->has_phys = 1;
    r->slot_start = malloc(SIM_SLOTS * sizeof *r->slot_start);
    r->slot_bytes = calloc(SIM_SLOTS, sizeof *r->slot_bytes);
    if (!r->slot_start || !r->slot_bytes) {
        sim_region_free(r);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    for (size_t i = 0; i < SIM_SLOTS; i++)
        r->slot_start[i] = SLOT_FREE;
    r->next_small = d->small_pages;
    d->small_pages = r;
    *out = r;
    return CUDA_SUCCESS;
}

static int small_fit(struct sim_region *r, uint32_t n, uint32_t *first)
{
    if (SIM_SLOTS - r->used_slots < n) return -1;
    uint32_t run = 0;
    for (uint32_t i = 0; i < SIM_SLOTS; i++) {
        run = r->slot_start[i] == SLOT_FREE ? run + 1 : 0;
        if (run == n) {
            *first = i + 1 - n;
            return 0;
        }
    }
    return -1;
}

static CUresult alloc_small(struct sim_device *d, size_t bytes, CUdeviceptr *out)
{
    uint32_t n = (uint32_t)(SIM_ROUND_UP(bytes, SIM_SMALL_ALIGN) / SIM_SMALL_ALIGN);
    uint32_t first = 0;
    struct sim_region *r;
    for (r = d->small_pages; r; r = r->next_small)
        if (small_fit(r, n, &first) == 0) break;
    if (!r) {
        CUresult rc = small_page_new(d, &r);
        if (rc != CUDA_SUCCESS) return rc;
        first = 0;
    }
    for (uint32_t i = 0; i < n; i++)
        r->slot_start[first + i] = (uint16_t)first;
    r->slot_bytes[first] = (uint32_t)bytes;
    r->used_slots += n;
    *out = r->base + (uintptr_t)first * SIM_SMALL_ALIGN;
    return CUDA_SUCCESS;
}

static CUresult alloc_large(struct sim_device *d, enum sim_region_kind kind, size_t bytes,
                            struct sim_region **out)
{
    size_t rounded = SIM_ROUND_UP(bytes, SIM_PAGE);
    struct sim_phys p;
    if (rounded / SIM_PAGE > d->npages || sim_phys_alloc(d, (uint32_t)(rounded / SIM_PAGE), &p))
        return CUDA_ERROR_OUT_OF_MEMORY;
    struct sim_region *r = sim_region_new(d, kind, rounded, 0, 0);
    if (!r) {
        sim_phys_free(d, &p);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    r->phys = p;
    r->has_phys = 1;
    r->request = bytes;
    *out = r;
    return CUDA_SUCCESS;
}

/* Device memory for cuMemAlloc and the runtime's cudaMalloc. */
static CUresult mem_alloc(CUdeviceptr *dptr, size_t bytes)
{
    struct sim_device *d;
    if (!dptr) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && bytes == 0) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        if (bytes <= SIM_SMALL_MAX) {
            rc = alloc_small(d, bytes, dptr);
        } else {
            struct sim_region *r = NULL;
            rc = alloc_large(d, SIM_R_LARGE, bytes, &r);
            if (rc == CUDA_SUCCESS) *dptr = r->base;
        }
        if (rc == CUDA_SUCCESS) d->alloc_calls++;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    SIM_ENTRY();
    /* cudaMalloc/cuMemAlloc may synchronize: unsafe during a strict capture. */
    CUresult rc = sim_unsafe_call();
    if (rc != CUDA_SUCCESS) return rc;
    return mem_alloc(dptr, bytesize);
}

SIM_API CUresult cuMemAlloc(CUdeviceptr_v1 *dptr, unsigned int bytesize)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

static CUresult mem_alloc_pitch(CUdeviceptr *dptr, size_t *pitch, size_t width, size_t height,
                                unsigned elem)
{
    if (!dptr || !pitch || width == 0 || height == 0 || (elem != 4 && elem != 8 && elem != 16))
        return CUDA_ERROR_INVALID_VALUE;
    size_t p = SIM_ROUND_UP(width, SIM_SMALL_ALIGN);
    CUresult rc = mem_alloc(dptr, p * height);
    if (rc == CUDA_SUCCESS) *pitch = p;
    return rc;
}

SIM_API CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t WidthInBytes,
                                    size_t Height, unsigned int ElementSizeBytes)
{
    SIM_ENTRY();
    return mem_alloc_pitch(dptr, pPitch, WidthInBytes, Height, ElementSizeBytes);
}

SIM_API CUresult cuMemAllocPitch(CUdeviceptr_v1 *dptr, unsigned int *pPitch,
                                 unsigned int WidthInBytes, unsigned int Height,
                                 unsigned int ElementSizeBytes)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

static void small_free(struct sim_region *r, uint32_t slot)
{
    uint32_t n = (uint32_t)(SIM_ROUND_UP(r->slot_bytes[slot], SIM_SMALL_ALIGN) / SIM_SMALL_ALIGN);
    for (uint32_t i = 0; i < n; i++)
        r->slot_start[slot + i] = SLOT_FREE;
    r->slot_bytes[slot] = 0;
    r->used_slots -= n;
    if (r->used_slots > 0) return;
    struct sim_device *d = r->dev;
    for (struct sim_region **pp = &d->small_pages; *pp; pp = &(*pp)->next_small) {
        if (*pp == r) {
            *pp = r->next_small;
            break;
        }
    }
    sim_region_free(r);
}

static int small_block_at(struct sim_region *r, uintptr_t addr, uint32_t *slot)
{
    uint32_t s = (uint32_t)((addr - r->base) / SIM_SMALL_ALIGN);
    if (r->slot_start[s] == SLOT_FREE) return -1;
    *slot = r->slot_start[s];
    return 0;
}

/* A cuMemAlloc block at dptr goes back: CUDA_SUCCESS, or CUDA_ERROR_INVALID_VALUE
 * when dptr starts none. Under the lock; the caller has synchronized what it must. */
CUresult sim_mem_free_block(struct sim_region *r, CUdeviceptr dptr)
{
    uint32_t slot;
    if (r->kind == SIM_R_LARGE && dptr == r->base) {
        r->dev->free_calls++;
        sim_region_free(r);
        return CUDA_SUCCESS;
    }
    if (r->kind == SIM_R_SMALLPAGE && small_block_at(r, dptr, &slot) == 0 &&
        dptr == r->base + (uintptr_t)slot * SIM_SMALL_ALIGN) {
        r->dev->free_calls++;
        small_free(r, slot);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_INVALID_VALUE;
}

SIM_API CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (dptr == 0) return CUDA_SUCCESS;
    sim_lock();
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    struct sim_region *r = sim_region_find(dptr);
    if (r) {
        /* cudaFree implicitly synchronizes the device: nothing queued may
         * still touch the block when it goes back. */
        sim_drain_everything();
        switch (r->kind) {
        case SIM_R_LARGE:
        case SIM_R_SMALLPAGE:
            rc = sim_mem_free_block(r, dptr);
            break;
        case SIM_R_POOLCHUNK:
            rc = sim_pool_free_now(r, dptr);
            break;
        case SIM_R_GRAPH:
            rc = sim_graph_free_ptr(r, dptr);
            break;
        default:
            break;
        }
    } else {
        rc = sim_free_managed(dptr);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemFree(CUdeviceptr_v1 dptr)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemGetInfo_v2(size_t *free, size_t *total)
{
    SIM_ENTRY();
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && (!free || !total)) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        *free = (size_t)(d->npages - d->pages_used) * SIM_PAGE;
        *total = d->capacity;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemGetInfo(unsigned int *free, unsigned int *total)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

/* ---- address lookups ---- */

static CUresult describe_device(struct sim_region *r, uintptr_t addr, struct sim_range_info *out,
                                int *accessible)
{
    uint32_t slot;
    *accessible = 1;
    out->device = r->dev->ordinal;
    switch (r->kind) {
    case SIM_R_LARGE:
        if (addr >= r->base + r->request) return CUDA_ERROR_INVALID_VALUE;
        out->base = r->base;
        out->size = r->request;
        return CUDA_SUCCESS;
    case SIM_R_SMALLPAGE:
        if (small_block_at(r, addr, &slot) != 0) return CUDA_ERROR_INVALID_VALUE;
        out->base = r->base + (uintptr_t)slot * SIM_SMALL_ALIGN;
        out->size = r->slot_bytes[slot];
        return addr < out->base + out->size ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
    case SIM_R_POOLCHUNK:
        return sim_pool_describe(r, addr, &out->base, &out->size);
    case SIM_R_RESERVE:
        return sim_vmm_describe(r, addr, &out->base, &out->size, accessible);
    case SIM_R_GRAPH:
        return sim_graph_describe(r, addr, &out->base, &out->size);
    default:
        return CUDA_ERROR_INVALID_VALUE;
    }
}

CUresult sim_describe(uintptr_t addr, struct sim_range_info *out)
{
    out->is_managed = 0;
    out->is_host = 0;
    out->host_flags = 0;
    struct sim_region *r = sim_region_find(addr);
    int accessible;
    if (r) return describe_device(r, addr, out, &accessible);
    return sim_describe_host(addr, out);
}

int sim_is_device_addr(uintptr_t addr)
{
    return sim_device_of_addr(addr) != NULL;
}

CUresult sim_check_device_range(uintptr_t addr, size_t len)
{
    struct sim_range_info info;
    int accessible = 0;
    if (len == 0) return CUDA_SUCCESS;
    struct sim_region *r = sim_region_find(addr);
    CUresult rc;
    if (r && r->kind == SIM_R_RESERVE) return sim_vmm_check(r, addr, len);
    if (r) {
        rc = describe_device(r, addr, &info, &accessible);
    } else {
        rc = sim_describe_host(addr, &info);
        accessible = 1;
    }
    if (rc != CUDA_SUCCESS || !accessible) return CUDA_ERROR_INVALID_VALUE;
    if (addr + len > info.base + info.size) return CUDA_ERROR_INVALID_VALUE;
    return CUDA_SUCCESS;
}

static CUresult address_range(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    struct sim_range_info info;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    CUresult rc = sim_describe(dptr, &info);
    if (rc == CUDA_SUCCESS) {
        if (pbase) *pbase = info.base;
        if (psize) *psize = info.size;
    } else {
        rc = CUDA_ERROR_NOT_FOUND;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    SIM_ENTRY();
    return address_range(pbase, psize, dptr);
}

SIM_API CUresult cuMemGetAddressRange(CUdeviceptr_v1 *pbase, unsigned int *psize,
                                      CUdeviceptr_v1 dptr)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}
