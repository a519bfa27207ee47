#include "arena/backing.h"
#include "arena/hostmem.h"

#include "base/real.h"
#include "base/log.h"

#include <string.h>

static CUmemAllocationProp device_prop(CUdevice dev)
{
    CUmemAllocationProp prop;
    memset(&prop, 0, sizeof prop);
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    return prop;
}

static bool vmm_supported(const struct cf_driver *drv, CUdevice dev)
{
    int on = 0;
    if (!drv->cuDeviceGetAttribute || !drv->cuMemAddressReserve || !drv->cuMemCreate ||
        !drv->cuMemMap || !drv->cuMemSetAccess || !drv->cuMemUnmap || !drv->cuMemRelease ||
        !drv->cuMemGetAllocationGranularity)
        return false;
    if (drv->cuDeviceGetAttribute(&on, CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED,
                                  dev) != CUDA_SUCCESS)
        return false;
    return on != 0;
}

/* Granule: the driver's minimum, at least 2 MiB, a power of two (the granule
 * map shifts by it). */
static uint64_t pick_granule(const struct cf_driver *drv, CUdevice dev, uint64_t *calls)
{
    CUmemAllocationProp prop = device_prop(dev);
    size_t g = 0;
    ++*calls;
    if (drv->cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM) !=
            CUDA_SUCCESS ||
        g == 0)
        return 0;
    uint64_t p = CF_BACKING_GRANULE;
    while (p < g)
        p <<= 1;
    return p;
}

static uint64_t default_reserve(const struct cf_driver *drv, uint64_t *calls)
{
    size_t free_b = 0, total_b = 0;
    if (!drv->cuMemGetInfo) return 0;
    ++*calls;
    if (drv->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) return 0;
    /* Twice the device: a part that a single-threaded program has filled with
     * blocks and then freed every other one still has fresh addresses for a
     * request larger than any hole, which single granules of physical memory
     * can then back wherever they are (stitching). With a range the size of the
     * device, the request failed although half the memory was free. */
    return 2 * (uint64_t)total_b;
}

/* The program's own allocations that the arena does not serve (stream-ordered
 * pools, its VMM ranges, graph memory) need address space too: after the
 * arena's reservation, as much again as one part must still be free. Without
 * cuMemAddressFree the probe could not be given back, so it is not made. */
static bool room_left(struct cf_backing *bk, const struct cf_driver *drv, uint64_t bytes)
{
    CUdeviceptr probe = 0;
    if (!drv->cuMemAddressFree) return true;
    bk->driver_calls++;
    if (drv->cuMemAddressReserve(&probe, bytes, bk->granule, 0, 0) != CUDA_SUCCESS) return false;
    bk->driver_calls++;
    drv->cuMemAddressFree(probe, bytes);
    return true;
}

static CUresult vmm_init(struct cf_backing *bk, const struct cf_driver *drv, uint64_t reserve,
                         unsigned *nparts)
{
    bk->granule = pick_granule(drv, bk->dev, &bk->driver_calls);
    if (bk->granule == 0) return CUDA_ERROR_NOT_SUPPORTED;
    if (reserve == 0) reserve = default_reserve(drv, &bk->driver_calls);
    if (reserve == 0) return CUDA_ERROR_NOT_SUPPORTED;
    reserve = (reserve + bk->granule - 1) & ~(bk->granule - 1);
    CUdeviceptr base = 0;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    /* Address space is plentiful on real devices but not unlimited: take
     * fewer parts rather than none, or rather than all of it. */
    unsigned parts = *nparts;
    for (; parts >= 1; parts /= 2) {
        bk->driver_calls++;
        rc = drv->cuMemAddressReserve(&base, reserve * parts, bk->granule, 0, 0);
        if (rc != CUDA_SUCCESS) continue;
        if (room_left(bk, drv, reserve)) break;
        bk->driver_calls++;
        drv->cuMemAddressFree(base, reserve * parts);
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc != CUDA_SUCCESS) return rc;
    bk->va_base = base;
    bk->va_total = reserve * parts;
    bk->reserve = reserve;
    bk->vmm = true;
    if (cf_backing_init_part(bk, bk, 0) != 0) {
        bk->driver_calls++;
        if (drv->cuMemAddressFree) drv->cuMemAddressFree(base, bk->va_total);
        bk->vmm = false;
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *nparts = parts;
    return CUDA_SUCCESS;
}

int cf_backing_init_part(struct cf_backing *bk, const struct cf_backing *bk0, unsigned k)
{
    if (bk != bk0) {
        *bk = *bk0;
        bk->driver_calls = 0; /* the reservation is counted once, by part 0 */
    }
    bk->chunks_bytes = 0;
    bk->handles = NULL;
    if (!bk->vmm) return 0;
    bk->base = bk0->va_base + k * bk0->reserve;
    if (cf_gmap_init(&bk->gmap, bk->base, bk->reserve, bk->granule) != 0 ||
        (bk->handles = cf_host_zalloc(bk->gmap.count * sizeof *bk->handles)) == NULL) {
        cf_gmap_destroy(&bk->gmap);
        return -1;
    }
    return 0;
}

CUresult cf_backing_init(struct cf_backing *bk, CUdevice dev, CUcontext ctx, uint64_t reserve,
                         unsigned *nparts)
{
    const struct cf_driver *drv = cf_driver();
    memset(bk, 0, sizeof *bk);
    bk->dev = dev;
    bk->ctx = ctx;
    if (vmm_supported(drv, dev)) {
        CUresult rc = vmm_init(bk, drv, reserve, nparts);
        if (rc == CUDA_SUCCESS) return rc;
        cf_log("arena: virtual memory management failed on device %d (error %d); using "
               "cuMemAlloc chunks",
               (int)dev, (int)rc);
    } else {
        cf_log("arena: device %d has no virtual memory management; using cuMemAlloc chunks",
               (int)dev);
    }
    if (!drv->cuMemAlloc || !drv->cuMemFree) return CUDA_ERROR_NOT_SUPPORTED;
    bk->granule = CF_BACKING_GRANULE;
    return CUDA_SUCCESS; /* every part adds its own chunks */
}

void cf_backing_fini(struct cf_backing *bk)
{
    const struct cf_driver *drv = cf_driver();
    if (bk->vmm) {
        uint64_t cursor = UINT64_MAX, addr, bytes;
        /* Every mapped chunk, held or not: the arena is going away. */
        for (uint64_t i = bk->gmap.hi; i-- > 0;)
            bk->gmap.refs[i] = 0;
        while (cf_gmap_next_idle_chunk(&bk->gmap, &cursor, &addr, &bytes)) {
            cf_gmap_set_unmapped(&bk->gmap, addr);
            cf_backing_unmap(bk, addr, bytes);
        }
        /* Part 0 owns the reservation. */
        if (drv->cuMemAddressFree && bk->base == bk->va_base)
            drv->cuMemAddressFree(bk->va_base, bk->va_total);
        cf_gmap_destroy(&bk->gmap);
        cf_host_free(bk->handles, bk->gmap.count * sizeof *bk->handles);
    }
    bk->handles = NULL;
    bk->vmm = false;
}

#define MAX_READERS 32
static uint32_t readers[MAX_READERS]; /* by owner device: bit per reader device */

void cf_backing_add_reader(int owner, int reader)
{
    if (owner >= 0 && owner < MAX_READERS && reader >= 0 && reader < MAX_READERS && owner != reader)
        __atomic_or_fetch(&readers[owner], (uint32_t)1 << reader, __ATOMIC_RELEASE);
}

static CUmemAccessDesc access_for(int dev)
{
    CUmemAccessDesc acc;
    memset(&acc, 0, sizeof acc);
    acc.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    acc.location.id = dev;
    acc.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    return acc;
}

/* The device itself, then every peer that enabled access to it. A grant a peer
 * cannot take (it would have failed natively too) must not cost the allocation:
 * then the device alone. */
static CUresult set_access(struct cf_backing *bk, uint64_t addr, uint64_t bytes)
{
    const struct cf_driver *drv = cf_driver();
    CUmemAccessDesc acc[MAX_READERS + 1];
    unsigned n = 0;
    acc[n++] = access_for(bk->dev);
    uint32_t r = bk->dev >= 0 && bk->dev < MAX_READERS
                     ? __atomic_load_n(&readers[bk->dev], __ATOMIC_ACQUIRE)
                     : 0;
    for (int i = 0; r; i++, r >>= 1)
        if (r & 1) acc[n++] = access_for(i);
    bk->driver_calls++;
    CUresult rc = drv->cuMemSetAccess(addr, bytes, acc, n);
    if (rc != CUDA_SUCCESS && n > 1) {
        bk->driver_calls++;
        rc = drv->cuMemSetAccess(addr, bytes, acc, 1);
    }
    return rc;
}

CUresult cf_backing_grant(struct cf_backing *bk, int reader)
{
    if (!bk->vmm) return CUDA_SUCCESS; /* cuMemAlloc chunks: peer access covers them */
    CUmemAccessDesc acc = access_for(reader);
    CUresult first = CUDA_SUCCESS;
    for (uint64_t i = 0; i < bk->gmap.hi; i++) {
        if (bk->gmap.len[i] == 0) continue;
        uint64_t addr = bk->gmap.base + (i << bk->gmap.shift);
        bk->driver_calls++;
        CUresult rc =
            cf_driver()->cuMemSetAccess(addr, (uint64_t)bk->gmap.len[i] << bk->gmap.shift, &acc, 1);
        if (first == CUDA_SUCCESS) first = rc;
        i += bk->gmap.len[i] - 1u; /* the chunk's other granules */
    }
    return first;
}

CUresult cf_backing_map(struct cf_backing *bk, uint64_t addr, uint64_t bytes)
{
    const struct cf_driver *drv = cf_driver();
    CUmemAllocationProp prop = device_prop(bk->dev);
    CUmemGenericAllocationHandle h = 0;
    bk->driver_calls++;
    CUresult rc = drv->cuMemCreate(&h, bytes, &prop, 0);
    if (rc != CUDA_SUCCESS) return rc;
    bk->driver_calls++;
    rc = drv->cuMemMap(addr, bytes, 0, h, 0);
    if (rc == CUDA_SUCCESS) {
        rc = set_access(bk, addr, bytes);
        if (rc != CUDA_SUCCESS) {
            bk->driver_calls++;
            drv->cuMemUnmap(addr, bytes);
        }
    }
    if (rc != CUDA_SUCCESS) {
        bk->driver_calls++;
        drv->cuMemRelease(h);
        return rc;
    }
    bk->handles[(addr - bk->base) / bk->granule] = h;
    return CUDA_SUCCESS;
}

CUresult cf_backing_unmap(struct cf_backing *bk, uint64_t addr, uint64_t bytes)
{
    const struct cf_driver *drv = cf_driver();
    uint64_t idx = (addr - bk->base) / bk->granule;
    bk->driver_calls += 2;
    CUresult rc = drv->cuMemUnmap(addr, bytes);
    CUresult rc2 = drv->cuMemRelease(bk->handles[idx]);
    bk->handles[idx] = 0;
    return rc != CUDA_SUCCESS ? rc : rc2;
}

CUresult cf_backing_chunk_alloc(struct cf_backing *bk, uint64_t bytes, uint64_t *addr,
                                uint64_t *got)
{
    uint64_t want = bytes < CF_BACKING_CHUNK_MIN ? CF_BACKING_CHUNK_MIN : bytes;
    want = (want + bk->granule - 1) & ~(bk->granule - 1);
    CUdeviceptr p = 0;
    bk->driver_calls++;
    CUresult rc = cf_driver()->cuMemAlloc(&p, want);
    if (rc != CUDA_SUCCESS && want > bytes) {
        /* A smaller chunk that still fits the request beats failing. */
        want = (bytes + bk->granule - 1) & ~(bk->granule - 1);
        bk->driver_calls++;
        rc = cf_driver()->cuMemAlloc(&p, want);
    }
    if (rc != CUDA_SUCCESS) return rc;
    *addr = p;
    *got = want;
    return CUDA_SUCCESS;
}

CUresult cf_backing_chunk_free(struct cf_backing *bk, uint64_t addr, uint64_t bytes)
{
    (void)bytes;
    bk->driver_calls++;
    return cf_driver()->cuMemFree(addr);
}
