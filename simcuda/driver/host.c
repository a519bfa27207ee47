/* Page-locked host memory (cuMemAllocHost, cuMemHostAlloc, registered
 * ranges) and managed memory. Both live outside the device ranges; managed
 * memory is not counted as device memory in use (a real GPU only backs it
 * on the device when it is touched there, which the simulation never does). */
#include "sim.h"

#include <stdlib.h>
#include <sys/mman.h>

enum host_kind { HOST_ALLOCATED, HOST_REGISTERED, HOST_MANAGED };

struct host_rec {
    enum host_kind kind;
    uintptr_t base;
    size_t size;   /* bytes asked for */
    size_t mapped; /* bytes mapped (allocated kinds) */
    unsigned flags;
    int device;
    struct host_rec *next;
};

static struct host_rec *host_recs;

static struct host_rec *rec_find(uintptr_t addr)
{
    for (struct host_rec *h = host_recs; h; h = h->next)
        if (addr >= h->base && addr < h->base + h->size) return h;
    return NULL;
}

static void rec_unlink(struct host_rec *h)
{
    for (struct host_rec **pp = &host_recs; *pp; pp = &(*pp)->next) {
        if (*pp == h) {
            *pp = h->next;
            return;
        }
    }
}

static CUresult host_map(enum host_kind kind, size_t bytes, unsigned flags, uintptr_t *out)
{
    size_t mapped = SIM_ROUND_UP(bytes, (size_t)4096);
    void *p = mmap(NULL, mapped, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (p == MAP_FAILED) return CUDA_ERROR_OUT_OF_MEMORY;
    struct host_rec *h = calloc(1, sizeof *h);
    if (!h) {
        munmap(p, mapped);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    h->kind = kind;
    h->base = (uintptr_t)p;
    h->size = bytes;
    h->mapped = mapped;
    h->flags = flags;
    struct sim_ctx *c = sim_current_ctx();
    h->device = c ? c->dev->ordinal : 0;
    h->next = host_recs;
    host_recs = h;
    *out = h->base;
    return CUDA_SUCCESS;
}

static CUresult host_alloc(void **pp, size_t bytes, unsigned flags)
{
    struct sim_device *d;
    if (!pp) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && bytes == 0) rc = CUDA_ERROR_INVALID_VALUE;
    uintptr_t p = 0;
    if (rc == CUDA_SUCCESS) rc = host_map(HOST_ALLOCATED, bytes, flags, &p);
    if (rc == CUDA_SUCCESS) *pp = (void *)p;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemAllocHost_v2(void **pp, size_t bytesize)
{
    SIM_ENTRY();
    return host_alloc(pp, bytesize, 0);
}

SIM_API CUresult cuMemAllocHost(void **pp, unsigned int bytesize)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int Flags)
{
    SIM_ENTRY();
    if (Flags & ~(unsigned)(CU_MEMHOSTALLOC_PORTABLE | CU_MEMHOSTALLOC_DEVICEMAP |
                            CU_MEMHOSTALLOC_WRITECOMBINED))
        return CUDA_ERROR_INVALID_VALUE;
    return host_alloc(pp, bytesize, Flags);
}

SIM_API CUresult cuMemFreeHost(void *p)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    struct host_rec *h = rec_find((uintptr_t)p);
    if (h && h->kind == HOST_ALLOCATED && h->base == (uintptr_t)p) {
        sim_drain_everything();
        rec_unlink(h);
        munmap((void *)h->base, h->mapped);
        free(h);
        rc = CUDA_SUCCESS;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemHostGetFlags(unsigned int *pFlags, void *p)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    struct host_rec *h = rec_find((uintptr_t)p);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (h && h->kind != HOST_MANAGED && pFlags) {
        *pFlags = h->flags;
        rc = CUDA_SUCCESS;
    }
    sim_unlock();
    return rc;
}

/* Overlaps recorded host memory or a device range. */
static int range_taken(uintptr_t lo, size_t len)
{
    uintptr_t hi = lo + len;
    for (struct host_rec *h = host_recs; h; h = h->next)
        if (lo < h->base + h->size && h->base < hi) return 1;
    for (int i = 0; i < sim.ndevices; i++)
        if (lo < sim.dev[i].va_base + sim.dev[i].va_size && sim.dev[i].va_base < hi) return 1;
    return 0;
}

static CUresult host_register(void *p, size_t bytes, unsigned flags)
{
    struct sim_device *d;
    if (!p || bytes == 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && range_taken((uintptr_t)p, bytes))
        rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    struct host_rec *h = NULL;
    if (rc == CUDA_SUCCESS && !(h = calloc(1, sizeof *h))) rc = CUDA_ERROR_OUT_OF_MEMORY;
    if (rc == CUDA_SUCCESS) {
        h->kind = HOST_REGISTERED;
        h->base = (uintptr_t)p;
        h->size = bytes;
        h->flags = flags;
        h->device = d->ordinal;
        h->next = host_recs;
        host_recs = h;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int Flags)
{
    SIM_ENTRY();
    return host_register(p, bytesize, Flags);
}

SIM_API CUresult cuMemHostRegister(void *p, size_t bytesize, unsigned int Flags)
{
    SIM_ENTRY();
    return host_register(p, bytesize, Flags);
}

SIM_API CUresult cuMemHostUnregister(void *p)
{
    SIM_ENTRY();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    sim_lock();
    CUresult rc = CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
    struct host_rec *h = rec_find((uintptr_t)p);
    if (h && h->kind == HOST_REGISTERED && h->base == (uintptr_t)p) {
        sim_drain_everything();
        rec_unlink(h);
        free(h);
        rc = CUDA_SUCCESS;
    }
    sim_unlock();
    return rc;
}

static CUresult host_device_pointer(CUdeviceptr *pdptr, void *p, unsigned flags)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pdptr || flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    struct host_rec *h = rec_find((uintptr_t)p);
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    if (h && h->kind != HOST_MANAGED) {
        *pdptr = (CUdeviceptr)(uintptr_t)p; /* unified addressing: the same address */
        rc = CUDA_SUCCESS;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr *pdptr, void *p, unsigned int Flags)
{
    SIM_ENTRY();
    return host_device_pointer(pdptr, p, Flags);
}

SIM_API CUresult cuMemHostGetDevicePointer(CUdeviceptr_v1 *pdptr, void *p, unsigned int Flags)
{
    SIM_ENTRY();
    return sim_legacy_abi();
}

SIM_API CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!dptr || bytesize == 0 || (flags != CU_MEM_ATTACH_GLOBAL && flags != CU_MEM_ATTACH_HOST))
        return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_current_device(&d);
    uintptr_t p = 0;
    if (rc == CUDA_SUCCESS) rc = host_map(HOST_MANAGED, bytesize, flags, &p);
    if (rc == CUDA_SUCCESS) {
        d->alloc_calls++;
        *dptr = p;
    }
    sim_unlock();
    return rc;
}

CUresult sim_free_managed(uintptr_t addr)
{
    struct host_rec *h = rec_find(addr);
    if (!h || h->kind != HOST_MANAGED || h->base != addr) return CUDA_ERROR_INVALID_VALUE;
    sim_drain_everything();
    sim.dev[h->device].free_calls++;
    rec_unlink(h);
    munmap((void *)h->base, h->mapped);
    free(h);
    return CUDA_SUCCESS;
}

CUresult sim_describe_host(uintptr_t addr, struct sim_range_info *out)
{
    struct host_rec *h = rec_find(addr);
    if (!h) return CUDA_ERROR_INVALID_VALUE;
    out->base = h->base;
    out->size = h->size;
    out->device = h->device;
    out->is_managed = h->kind == HOST_MANAGED;
    out->is_host = 1;
    out->host_flags = h->flags;
    return CUDA_SUCCESS;
}
