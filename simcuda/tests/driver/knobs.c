/* SIMCUDA_* knobs. Started either with bad values (argv[1] = "bad": one
 * clear message per variable, defaults used) or good ones ("good":
 * SIMCUDA_MEM=256M SIMCUDA_DEVICES=3 SIMCUDA_PHYS=contiguous SIMCUDA_VA=1G). */
#include "simtest.h"

#include <unistd.h>

static void bad(void)
{
    char path[] = "/tmp/simcuda-knobs-XXXXXX";
    int fd = mkstemp(path);
    CHECK(fd >= 0);
    unlink(path);
    int saved = dup(2);
    dup2(fd, 2);
    CHECK_CU(cuInit(0));
    dup2(saved, 2);
    char text[2048] = {0};
    CHECK(pread(fd, text, sizeof text - 1, 0) > 0);
    CHECK_STR(text, "simcuda: ignoring SIMCUDA_MEM=12Q: expected a size");
    CHECK_STR(text, "K, M, G or T suffix); using 16G\n");
    CHECK_STR(text,
              "simcuda: ignoring SIMCUDA_DEVICES=9: expected a number from 1 to 8; using 1\n");
    CHECK_STR(text,
              "simcuda: ignoring SIMCUDA_PHYS=weird: expected paged or contiguous; using paged\n");
    CHECK_STR(text, "simcuda: ignoring SIMCUDA_VA=lots: expected a size");
    int n;
    CHECK_CU(cuDeviceGetCount(&n));
    CHECK_EQ(n, 1);
    sim_setup(0);
    CHECK_EQ(sim_stats(0).pages_total, 8192);
    /* Paged: the largest free "run" is all free pages. */
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++)
        CHECK_CU(cuMemAlloc(&p[i], 2 * MiB));
    CHECK_CU(cuMemFree(p[1]));
    CHECK_EQ(sim_stats(0).largest_free_run_pages, 8190);
}

static void good(void)
{
    int n;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGetCount(&n));
    CHECK_EQ(n, 3);
    for (int d = 0; d < 3; d++) {
        size_t total;
        CHECK_CU(cuDeviceTotalMem(&total, d));
        CHECK_EQ(total, 256 * MiB);
    }
    CHECK_EQ(sim_stats(2).pages_total, 128);
    CHECK_EQ(simcudaGetStats(3, &(struct simcuda_stats){0}), -1);

    /* Devices are independent: filling one leaves the others empty. */
    CUcontext c0 = sim_setup(0);
    CUdeviceptr p0, p2;
    CHECK_CU(cuMemAlloc(&p0, 256 * MiB));
    CUcontext c2 = sim_setup(2);
    CHECK_EQ(sim_free_mem(), 256 * MiB);
    CHECK_CU(cuMemAlloc(&p2, 16 * MiB));
    CHECK_EQ(sim_free_mem(), 240 * MiB);
    int ordinal = -1;
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p0));
    CHECK_EQ(ordinal, 0);
    CHECK_CU(cuPointerGetAttribute(&ordinal, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, p2));
    CHECK_EQ(ordinal, 2);
    int can = 0;
    CHECK_CU(cuDeviceCanAccessPeer(&can, 2, 0));
    CHECK_EQ(can, 1);
    CHECK_CU(cuCtxEnablePeerAccess(c0, 0));
    CHECK_EQ(cuCtxEnablePeerAccess(c0, 0), CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED);
    CHECK_CU(cuMemcpyPeer(p2, c2, p0, c0, 4096));
    /* Contiguous mode was selected: the largest run is reported exactly. */
    CHECK_EQ(sim_stats(2).largest_free_run_pages, 120);
    CHECK_CU(cuMemFree(p0));
    CHECK_CU(cuMemFree(p2));

    /* SIMCUDA_VA=1G: a device's whole address space, reservations included. */
    CUdeviceptr va;
    CHECK_EQ(cuMemAddressReserve(&va, 2048 * MiB, 0, 0, 0), CUDA_ERROR_OUT_OF_MEMORY);
    CHECK_CU(cuMemAddressReserve(&va, 512 * MiB, 0, 0, 0));
    CHECK_CU(cuMemAddressFree(va, 512 * MiB));
}

int main(int argc, char **argv)
{
    CHECK_EQ(argc, 2);
    if (strcmp(argv[1], "bad") == 0)
        bad();
    else
        good();
    return 0;
}
