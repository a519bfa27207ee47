/* Without libcuda.so.1 the runtime reports cudaErrorInsufficientDriver, like
 * NVIDIA's on a machine without the driver. */
#include "rt_test.h"

#include <dlfcn.h>

int main(void)
{
    /* A driver installed on this machine would be found anyway: nothing to test. */
    if (dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL) != NULL) return 77;
    int count = -1;
    CHECK_EQ(cudaGetDeviceCount(&count), cudaErrorInsufficientDriver);
    CHECK_EQ(count, 0);
    void *p = (void *)1;
    CHECK_EQ(cudaMalloc(&p, 1024), cudaErrorInsufficientDriver);
    CHECK_EQ(cudaGetLastError(), cudaErrorInsufficientDriver);
    int version = -1;
    CHECK_RT(cudaDriverGetVersion(&version));
    CHECK_EQ(version, 0);
    CHECK_RT(cudaRuntimeGetVersion(&version));
    CHECK_EQ(version, 13000);
    CHECK_STR(cudaGetErrorString(cudaErrorInsufficientDriver), "driver version is insufficient");
    return 0;
}
