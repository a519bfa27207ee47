/* The graph memory pool. A graph allocation owns a VA range from the start
 * (its address is fixed when the alloc node is created). At launch it is
 * backed from the pool, which holds physical memory in chunks of at least
 * 32 MiB (an H200 reports 32 MiB used and reserved for a single 3 MiB graph
 * allocation) shared by the allocations it backs. "Used" is the size of the
 * chunks that back a live allocation; the backing stays with a freed
 * allocation, reserved, until cuDeviceGraphMemTrim. */
#include "graph.h"

#include <stdlib.h>
#include <string.h>

#define GRAPH_CHUNK ((size_t)32 << 20)

/* Physical memory of the graph pool. */
struct gchunk {
    struct sim_device *dev;
    struct sim_phys phys;
    size_t size, taken;
    unsigned users;      /* backed allocations */
    unsigned live_users; /* of which allocated now */
    struct gchunk *next;
};

static struct galloc *gallocs;
static struct gchunk *gchunks;

struct galloc *sim_galloc_new(struct sim_device *d, size_t size)
{
    struct galloc *ga = calloc(1, sizeof *ga);
    struct sim_region *r =
        ga ? sim_region_new(d, SIM_R_GRAPH, SIM_ROUND_UP(size, SIM_PAGE), 0, 0) : NULL;
    if (!r) {
        free(ga);
        return NULL;
    }
    r->owner = ga;
    r->request = size;
    ga->region = r;
    ga->request = size;
    ga->next = gallocs;
    gallocs = ga;
    return ga;
}

static void galloc_unback(struct galloc *ga)
{
    struct gchunk *c = ga->chunk;
    c->taken -= ga->bytes;
    c->users--;
    ga->chunk = NULL;
    sim_discard(ga->region->base, ga->region->size);
}

void sim_galloc_put(struct galloc *ga)
{
    if (--ga->refs > 0 || ga->live) return;
    if (ga->chunk) galloc_unback(ga);
    for (struct galloc **pp = &gallocs; *pp; pp = &(*pp)->next) {
        if (*pp == ga) {
            *pp = ga->next;
            break;
        }
    }
    sim_region_free(ga->region);
    free(ga);
}

/* Backing of freed allocations goes back, then chunks nobody uses. */
static void graph_trim(struct sim_device *d)
{
    for (struct galloc *ga = gallocs; ga; ga = ga->next)
        if (ga->region->dev == d && ga->chunk && !ga->live) galloc_unback(ga);
    for (struct gchunk **pp = &gchunks; *pp;) {
        struct gchunk *c = *pp;
        if (c->dev != d || c->users > 0) {
            pp = &c->next;
            continue;
        }
        *pp = c->next;
        d->graph_reserved -= c->size;
        sim_phys_free(d, &c->phys);
        free(c);
    }
}

static struct gchunk *gchunk_new(struct sim_device *d, size_t bytes)
{
    size_t size = bytes < GRAPH_CHUNK ? GRAPH_CHUNK : bytes;
    uint32_t n = (uint32_t)(size / SIM_PAGE);
    struct gchunk *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    if (n > d->npages || sim_phys_alloc(d, n, &c->phys) != 0) {
        graph_trim(d);
        if (n > d->npages || sim_phys_alloc(d, n, &c->phys) != 0) {
            free(c);
            return NULL;
        }
    }
    c->dev = d;
    c->size = size;
    c->next = gchunks;
    gchunks = c;
    d->graph_reserved += size;
    if (d->graph_reserved > d->graph_reserved_high) d->graph_reserved_high = d->graph_reserved;
    return c;
}

CUresult sim_galloc_launch(struct galloc *ga)
{
    struct sim_device *d = ga->region->dev;
    if (ga->live) return CUDA_ERROR_INVALID_VALUE;
    if (!ga->chunk) {
        size_t bytes = ga->region->size;
        struct gchunk *c;
        for (c = gchunks; c; c = c->next)
            if (c->dev == d && c->size - c->taken >= bytes) break;
        if (!c && !(c = gchunk_new(d, bytes))) return CUDA_ERROR_OUT_OF_MEMORY;
        c->taken += bytes;
        c->users++;
        ga->chunk = c;
        ga->bytes = bytes;
    }
    ga->live = 1;
    if (ga->chunk->live_users++ == 0) {
        d->graph_used += ga->chunk->size;
        if (d->graph_used > d->graph_used_high) d->graph_used_high = d->graph_used;
    }
    d->alloc_calls++;
    return CUDA_SUCCESS;
}

void sim_galloc_free(struct galloc *ga)
{
    ga->live = 0;
    if (--ga->chunk->live_users == 0) ga->region->dev->graph_used -= ga->chunk->size;
    ga->region->dev->free_calls++;
    if (ga->refs == 0) {
        ga->refs = 1;
        sim_galloc_put(ga);
    }
}

CUresult sim_graph_describe(struct sim_region *r, uintptr_t addr, uintptr_t *base, size_t *size)
{
    if (addr >= r->base + r->request) return CUDA_ERROR_INVALID_VALUE;
    *base = r->base;
    *size = r->request;
    return CUDA_SUCCESS;
}

CUresult sim_graph_free_ptr(struct sim_region *r, uintptr_t addr)
{
    struct galloc *ga = r->owner;
    if (addr != r->base || !ga->live) return CUDA_ERROR_INVALID_VALUE;
    sim_galloc_free(ga);
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGraphMemTrim(CUdevice device)
{
    SIM_ENTRY();
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_device(d);
        graph_trim(d);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceGetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    cuuint64_t v = 0;
    if (rc == CUDA_SUCCESS) {
        switch (attr) {
        case CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT:
            v = d->graph_used;
            break;
        case CU_GRAPH_MEM_ATTR_USED_MEM_HIGH:
            v = d->graph_used_high;
            break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT:
            v = d->graph_reserved;
            break;
        case CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH:
            v = d->graph_reserved_high;
            break;
        default:
            rc = CUDA_ERROR_INVALID_VALUE;
            break;
        }
    }
    if (rc == CUDA_SUCCESS) memcpy(value, &v, sizeof v);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDeviceSetGraphMemAttribute(CUdevice device, CUgraphMem_attribute attr,
                                              void *value)
{
    SIM_ENTRY();
    struct sim_device *d;
    cuuint64_t v;
    if (!value) return CUDA_ERROR_INVALID_VALUE;
    memcpy(&v, value, sizeof v);
    sim_lock();
    CUresult rc = sim_device_get(device, &d);
    if (rc == CUDA_SUCCESS && v != 0) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        if (attr == CU_GRAPH_MEM_ATTR_USED_MEM_HIGH)
            d->graph_used_high = d->graph_used;
        else if (attr == CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH)
            d->graph_reserved_high = d->graph_reserved;
        else
            rc = CUDA_ERROR_INVALID_VALUE;
    }
    sim_unlock();
    return rc;
}
