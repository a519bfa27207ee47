/* The driver API's allocation paths, called directly as a driver-level program
 * (or a framework's allocator) does: virtual memory management -- create a
 * physical allocation, reserve an address range, map, grant access, unmap,
 * release -- and plain cuMemAlloc_v2/cuMemFree_v2. Every mapping is written and
 * read back. Prints the calls made, for checking a profiler's counts.
 *
 * usage: vmm_driver [N_VMM [M_ALLOC]]  (defaults 20 and 30) */
#include <cuda.h>

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#define DRV_OK(call) drv_check((call), #call)

static void drv_check(CUresult r, const char *what)
{
    if (r == CUDA_SUCCESS) return;
    const char *name = "unknown";
    cuGetErrorName(r, &name);
    fprintf(stderr, "vmm_driver: %s failed: %s\n", what, name);
    printf("vmm_driver: CUDA error %s\n", name);
    exit(1);
}

struct counts {
    int create, reserve, map, set_access, unmap, release, address_free, alloc, free_;
};

static uint64_t fnv1a(uint64_t h, const unsigned char *p, size_t len)
{
    for (size_t i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    return h;
}

/* Write a byte pattern through the mapping and fold the head of it into h. */
static uint64_t check_mapping(CUdeviceptr p, size_t bytes, unsigned char v, uint64_t h)
{
    unsigned char head[512];
    DRV_OK(cuMemsetD8(p, v, bytes));
    DRV_OK(cuMemcpyDtoH(head, p + bytes - sizeof head, sizeof head));
    for (size_t i = 0; i < sizeof head; i++)
        if (head[i] != v) {
            fprintf(stderr, "vmm_driver: mapping reads back %u, wrote %u\n", head[i], v);
            exit(1);
        }
    return fnv1a(h, head, sizeof head);
}

static uint64_t vmm_round(CUdevice dev, size_t gran, int i, struct counts *c, uint64_t h)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t bytes = gran * (size_t)(1 + i % 8);

    CUmemGenericAllocationHandle handle;
    CUdeviceptr va;
    DRV_OK(cuMemCreate(&handle, bytes, &prop, 0));
    c->create++;
    DRV_OK(cuMemAddressReserve(&va, bytes, gran, 0, 0));
    c->reserve++;
    DRV_OK(cuMemMap(va, bytes, 0, handle, 0));
    c->map++;
    CUmemAccessDesc access = {0};
    access.location = prop.location;
    access.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    DRV_OK(cuMemSetAccess(va, bytes, &access, 1));
    c->set_access++;

    h = check_mapping(va, bytes, (unsigned char)(i * 7 + 1), h);

    DRV_OK(cuMemUnmap(va, bytes));
    c->unmap++;
    DRV_OK(cuMemAddressFree(va, bytes));
    c->address_free++;
    DRV_OK(cuMemRelease(handle));
    c->release++;
    return h;
}

int main(int argc, char **argv)
{
    int n_vmm = argc > 1 ? atoi(argv[1]) : 20;
    int m_alloc = argc > 2 ? atoi(argv[2]) : 30;
    struct counts c = {0};
    uint64_t h = 0xcbf29ce484222325ULL;

    CUdevice dev;
    CUcontext ctx;
    DRV_OK(cuInit(0));
    DRV_OK(cuDeviceGet(&dev, 0));
    DRV_OK(cuDevicePrimaryCtxRetain(&ctx, dev));
    DRV_OK(cuCtxSetCurrent(ctx));

    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t gran = 0;
    DRV_OK(cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));

    for (int i = 0; i < n_vmm; i++)
        h = vmm_round(dev, gran, i, &c, h);

    for (int i = 0; i < m_alloc; i++) {
        CUdeviceptr p;
        size_t bytes = ((size_t)4096 << (i % 12)) + (size_t)i * 1000;
        DRV_OK(cuMemAlloc_v2(&p, bytes));
        c.alloc++;
        h = check_mapping(p, bytes, (unsigned char)(200 + i), h);
        DRV_OK(cuMemFree_v2(p));
        c.free_++;
    }

    DRV_OK(cuCtxSynchronize());
    DRV_OK(cuDevicePrimaryCtxRelease(dev));
    printf("checksum %016llx\n", (unsigned long long)h);
    printf("vmm_driver: granularity=%zu cuMemCreate=%d cuMemAddressReserve=%d cuMemMap=%d "
           "cuMemSetAccess=%d cuMemUnmap=%d cuMemAddressFree=%d cuMemRelease=%d cuMemAlloc=%d "
           "cuMemFree=%d\n",
           gran, c.create, c.reserve, c.map, c.set_access, c.unmap, c.address_free, c.release,
           c.alloc, c.free_);
    return 0;
}
