/* Set-up shared by the test programs that use the driver API directly: the same
 * steps the runtime takes at its first call, so that what cudafrag sees matches a
 * real program's start. */
#ifndef CF_TESTS_CUDA_SETUP_H
#define CF_TESTS_CUDA_SETUP_H

#include "check.h"

#include <cuda.h>

/* Initialises the driver and makes device `ordinal`'s primary context current on
 * the calling thread; returns that context. Any failure ends the test. */
static inline CUcontext cf_test_primary_context(int ordinal)
{
    CUdevice dev;
    CUcontext ctx;
    CHECK_CU(cuInit(0));
    CHECK_CU(cuDeviceGet(&dev, ordinal));
    CHECK_CU(cuDevicePrimaryCtxRetain(&ctx, dev));
    CHECK_CU(cuCtxSetCurrent(ctx));
    return ctx;
}

#endif
