/* Peer access to arena memory, on two simulated devices, preloaded with
 * CUDAFRAG_ARENA=1. Natively a device that enabled peer access reaches every
 * cuMemAlloc block of the peer; the arena's blocks are VMM memory, which answers
 * only the devices cuMemSetAccess named. Checks, with cuMemGetAccess:
 *   - a block the arena served on device 0 is not device 1's to reach before
 *     device 1 enables peer access, and is after (memory mapped before);
 *   - a block served after the enable is reachable too (memory mapped after);
 *   - access enabled before the peer's arena started (device 0 -> device 1)
 *     reaches device 1's first block. */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

static int failures;

#define OK(call)                                                                                   \
    do {                                                                                           \
        CUresult rc_ = (call);                                                                     \
        if (rc_ != CUDA_SUCCESS) {                                                                 \
            fprintf(stderr, "FAIL %s: %d\n", #call, (int)rc_);                                     \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)

static unsigned long long access_of(CUdeviceptr p, int dev)
{
    CUmemLocation loc = {.type = CU_MEM_LOCATION_TYPE_DEVICE, .id = dev};
    unsigned long long flags = 99;
    CUresult rc = cuMemGetAccess(&flags, &loc, p);
    if (rc != CUDA_SUCCESS) {
        /* Not VMM memory: the arena did not serve the block. */
        fprintf(stderr, "FAIL cuMemGetAccess(device %d): %d (not arena memory?)\n", dev, (int)rc);
        exit(1);
    }
    return flags;
}

static void expect(const char *what, unsigned long long got, unsigned long long want)
{
    if (got == want) return;
    fprintf(stderr, "FAIL %s: access %llu, expected %llu\n", what, got, want);
    failures++;
}

int main(void)
{
    const unsigned long long rw = CU_MEM_ACCESS_FLAGS_PROT_READWRITE, none = 0;
    CUdevice d0, d1;
    CUcontext c0, c1;
    OK(cuInit(0));
    OK(cuDeviceGet(&d0, 0));
    OK(cuDeviceGet(&d1, 1));
    OK(cuDevicePrimaryCtxRetain(&c0, d0));
    OK(cuDevicePrimaryCtxRetain(&c1, d1));

    CUdeviceptr a, b, c;
    OK(cuCtxSetCurrent(c0));
    OK(cuMemAlloc(&a, 4 << 20));
    expect("device 0 on its own block", access_of(a, 0), rw);
    expect("device 1 before peer access", access_of(a, 1), none);
    /* Device 0 enables access to device 1 before device 1's arena exists. */
    OK(cuCtxEnablePeerAccess(c1, 0));

    OK(cuCtxSetCurrent(c1));
    OK(cuCtxEnablePeerAccess(c0, 0));
    expect("device 1 on device 0's block mapped before the enable", access_of(a, 1), rw);
    OK(cuMemAlloc(&c, 6 << 20));
    expect("device 0 on device 1's first block (enabled before its arena)", access_of(c, 0), rw);

    OK(cuCtxSetCurrent(c0));
    OK(cuMemAlloc(&b, 64 << 20));
    expect("device 1 on device 0's block mapped after the enable", access_of(b, 1), rw);

    OK(cuMemFree(a));
    OK(cuMemFree(b));
    OK(cuCtxSetCurrent(c1));
    OK(cuMemFree(c));
    if (failures == 0) printf("peer access: ok\n");
    return failures != 0;
}
