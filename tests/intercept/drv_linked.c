/* A program linked with -lcuda calling the driver through its PLT: cuMemAlloc_v2,
 * pitched allocations, an out-of-memory failure and the VMM calls. It prints every
 * result code, out-parameter and errno; the same-output test runs it with and
 * without libcudafrag.so and requires identical output. With "count" it also
 * checks what cudafrag counted. */
#include "intercept.h"
#include "cuda_setup.h"

#include <cuda.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

static CUdeviceptr base;
static bool count;

/* Live device bytes cudafrag records, checked only in the counting run. */
static void check_live(long long at_least, long long at_most)
{
    if (!count) return;
    CHECK_GE(live_bytes(0), at_least);
    CHECK_LE(live_bytes(0), at_most);
    CHECK_EQ(live_bytes(-1), -1);
    CHECK_EQ(live_bytes(1 << 20), -1);
}

static long long rel(CUdeviceptr p)
{
    return p ? (long long)(p - base) : -1;
}

static void show(const char *what, CUresult rc)
{
    printf("%-22s rc=%d errno=%d\n", what, (int)rc, errno);
}

static void device_memory(void)
{
    CUdeviceptr a = 0, b = 0, c = 0x1234, p = 0x5678;
    size_t pitch = 77;
    errno = EXDEV;
    show("cuMemAlloc 1M", cuMemAlloc(&a, 1 << 20));
    base = a;
    show("cuMemAlloc 3000", cuMemAlloc(&b, 3000));
    printf("b at %lld\n", rel(b));
    errno = EXDEV;
    show("cuMemAlloc 128M", cuMemAlloc(&c, (size_t)128 << 20));
    printf("c after failure %llx\n", (unsigned long long)c);
    show("cuMemAllocPitch", cuMemAllocPitch(&p, &pitch, 1000, 10, 4));
    printf("pitch %zu at %lld\n", pitch, rel(p));
    check_live((1 << 20) + 3000 + 1000 * 10, (4 << 20));
    CUdeviceptr q = 0x9abc;
    size_t qpitch = 99;
    show("cuMemAllocPitch bad", cuMemAllocPitch(&q, &qpitch, 1000, 10, 3));
    printf("after bad pitch %llx %zu\n", (unsigned long long)q, qpitch);
    show("cuMemFree a", cuMemFree(a));
    show("cuMemFree b", cuMemFree(b));
    show("cuMemFree p", cuMemFree(p));
    show("cuMemFree twice", cuMemFree(a));
    check_live(0, 0);
}

static void vmm(void)
{
    CUmemAllocationProp prop = {0};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = 0;
    size_t gran = 0;
    show("granularity",
         cuMemGetAllocationGranularity(&gran, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    printf("granularity %zu\n", gran);
    size_t size = 4 * gran;
    CUmemGenericAllocationHandle h = 0, big = 0;
    errno = EXDEV;
    show("cuMemCreate", cuMemCreate(&h, size, &prop, 0));
    printf("handle set %d\n", h != 0);
    check_live((long long)size, (long long)size);
    show("cuMemCreate 128M", cuMemCreate(&big, (size_t)128 << 20, &prop, 0));
    CUdeviceptr va = 0;
    show("cuMemAddressReserve", cuMemAddressReserve(&va, size, 0, 0, 0));
    show("cuMemMap", cuMemMap(va, size, 0, h, 0));
    CUmemAccessDesc access = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    show("cuMemSetAccess", cuMemSetAccess(va, size, &access, 1));
    show("cuMemUnmap", cuMemUnmap(va, size));
    show("cuMemAddressFree", cuMemAddressFree(va, size));
    show("cuMemRelease", cuMemRelease(h));
    check_live(0, 0);
}

static void check_counts(void)
{
    CHECK_CALLS("cuMemAlloc", 3);
    CHECK_CALLS("cuMemAllocPitch", 2);
    CHECK_CALLS("cuMemFree", 4);
    CHECK_CALLS("cuMemCreate", 2);
    CHECK_CALLS("cuMemAddressReserve", 1);
    CHECK_CALLS("cuMemMap", 1);
    CHECK_CALLS("cuMemUnmap", 1);
    CHECK_CALLS("cuMemAddressFree", 1);
    CHECK_CALLS("cuMemRelease", 1);
    /* Exported names count under their API; unknown names are -1. */
    CHECK_CALLS("cuMemAlloc_v2", 3);
    CHECK_CALLS("cuMemsetD8", -1);
}

int main(int argc, char **argv)
{
    count = argc > 1 && strcmp(argv[1], "count") == 0;
    cf_test_primary_context(0);
    device_memory();
    vmm();
    if (count) check_counts();
    return 0;
}
