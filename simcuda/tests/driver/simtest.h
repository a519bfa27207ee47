/* Shared set-up for the simulated driver's tests: initialise, make device
 * `dev`'s primary context current, and a few size constants. */
#ifndef SIM_TESTS_SIMTEST_H
#define SIM_TESTS_SIMTEST_H

#include <cuda.h>

#include "check.h"
#include "simcuda.h"

#define KiB (1024ULL)
#define MiB (1024ULL * 1024ULL)
#define GiB (1024ULL * MiB)

static inline CUcontext sim_setup(int dev)
{
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    return ctx;
}

static inline size_t sim_free_mem(void)
{
    size_t free_b, total;
    CHECK_CU(cuMemGetInfo(&free_b, &total));
    return free_b;
}

static inline struct simcuda_stats sim_stats(int dev)
{
    struct simcuda_stats st;
    CHECK_EQ(simcudaGetStats(dev, &st), 0);
    return st;
}

#endif
