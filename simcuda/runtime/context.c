/* The runtime's contexts: one primary context per device, retained on first
 * use and shared by all threads, and a per-thread current device. */
#include "runtime.h"

#include <pthread.h>

/* The simulated device exposes few devices; this bounds the table, not the API. */
#define RT_MAX_DEVICES 64

static pthread_mutex_t rt_ctx_lock = PTHREAD_MUTEX_INITIALIZER;
static CUcontext rt_primary[RT_MAX_DEVICES];

static __thread int rt_thread_device;
/* The context the runtime itself made current on this thread: a different
 * current context was set by the program through the driver API and is used
 * as is, as NVIDIA's runtime does. */
static __thread CUcontext rt_thread_bound;

int rt_device(void)
{
    return rt_thread_device;
}

CUcontext rt_primary_ctx(int device, cudaError_t *err)
{
    if (device < 0 || device >= RT_MAX_DEVICES) {
        *err = cudaErrorInvalidDevice;
        return NULL;
    }
    pthread_mutex_lock(&rt_ctx_lock);
    CUcontext ctx = rt_primary[device];
    *err = cudaSuccess;
    if (ctx == NULL) {
        CUdevice dev = 0;
        CUresult r = rt_drv.cuDeviceGet(&dev, device);
        if (r == CUDA_SUCCESS) r = rt_drv.cuDevicePrimaryCtxRetain(&ctx, dev);
        if (r == CUDA_SUCCESS)
            rt_primary[device] = ctx;
        else
            *err = rt_error_from_driver(r);
    }
    pthread_mutex_unlock(&rt_ctx_lock);
    return ctx;
}

bool rt_forget_primary_ctx(int device)
{
    if (device < 0 || device >= RT_MAX_DEVICES) return false;
    pthread_mutex_lock(&rt_ctx_lock);
    bool held = rt_primary[device] != NULL;
    rt_primary[device] = NULL;
    pthread_mutex_unlock(&rt_ctx_lock);
    return held;
}

static cudaError_t rt_bind(int device)
{
    cudaError_t e = cudaSuccess;
    CUcontext ctx = rt_primary_ctx(device, &e);
    if (ctx == NULL) return e;
    CUresult r = rt_drv.cuCtxSetCurrent(ctx);
    if (r != CUDA_SUCCESS) return rt_error_from_driver(r);
    rt_thread_bound = ctx;
    return cudaSuccess;
}

cudaError_t rt_ctx(void)
{
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return e;
    CUcontext cur = NULL;
    CUresult r = rt_drv.cuCtxGetCurrent(&cur);
    if (r != CUDA_SUCCESS) return rt_error_from_driver(r);
    if (cur != NULL && cur != rt_thread_bound) return cudaSuccess;
    CUcontext primary = NULL;
    pthread_mutex_lock(&rt_ctx_lock);
    primary = rt_primary[rt_thread_device];
    pthread_mutex_unlock(&rt_ctx_lock);
    if (cur != NULL && cur == primary) return cudaSuccess;
    return rt_bind(rt_thread_device);
}

/* cudaSetDevice makes the device's primary context current at once (CUDA 12
 * behaviour), so a failure shows here rather than at the next call. */
RT_API cudaError_t cudaSetDevice(int device)
{
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return rt_fail(e);
    int count = 0;
    CUresult r = rt_drv.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) return rt_cu(r);
    if (device < 0 || device >= count || device >= RT_MAX_DEVICES)
        return rt_fail(cudaErrorInvalidDevice);
    rt_thread_device = device;
    e = rt_bind(device);
    return e == cudaSuccess ? e : rt_fail(e);
}

RT_API cudaError_t cudaGetDevice(int *device)
{
    if (device == NULL) return rt_fail(cudaErrorInvalidValue);
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return rt_fail(e);
    *device = rt_thread_device;
    return cudaSuccess;
}
