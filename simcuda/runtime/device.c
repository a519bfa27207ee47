/* Devices: enumeration, properties, attributes, versions, peers, and the
 * device-wide operations (synchronize, reset, flags). */
#include "runtime.h"

#include <stddef.h>
#include <string.h>

RT_API cudaError_t cudaGetDeviceCount(int *count)
{
    if (count == NULL) return rt_fail(cudaErrorInvalidValue);
    *count = 0;
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return rt_fail(e);
    e = rt_cu(rt_drv.cuDeviceGetCount(count));
    if (e == cudaSuccess && *count == 0) return rt_fail(cudaErrorNoDevice);
    return e;
}

RT_API cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (driverVersion == NULL) return rt_fail(cudaErrorInvalidValue);
    *driverVersion = 0;
    /* No driver is an answer (version 0), not an error. */
    if (rt_init() == cudaErrorInsufficientDriver) return cudaSuccess;
    return rt_drv.cuDriverGetVersion ? rt_cu(rt_drv.cuDriverGetVersion(driverVersion))
                                     : cudaSuccess;
}

RT_API cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (runtimeVersion == NULL) return rt_fail(cudaErrorInvalidValue);
    *runtimeVersion = RT_CUDA_VERSION;
    return cudaSuccess;
}

cudaError_t rt_cudevice(int device, CUdevice *dev)
{
    cudaError_t e = rt_init();
    if (e != cudaSuccess) return e;
    int count = 0;
    CUresult r = rt_drv.cuDeviceGetCount(&count);
    if (r != CUDA_SUCCESS) return rt_error_from_driver(r);
    if (device < 0 || device >= count) return cudaErrorInvalidDevice;
    return rt_error_from_driver(rt_drv.cuDeviceGet(dev, device));
}

RT_API cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (value == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    /* The runtime's attribute numbers are the driver's. */
    return rt_cu(RT_CALL(cuDeviceGetAttribute, value, (CUdevice_attribute)attr, dev));
}

/* The integer members of cudaDeviceProp filled from driver attributes. */
struct rt_prop_attr {
    size_t offset;
    CUdevice_attribute attr;
};

#define RT_PROP(member, attr)                                                                      \
    {                                                                                              \
        offsetof(struct cudaDeviceProp, member), attr                                              \
    }
static const struct rt_prop_attr rt_prop_attrs[] = {
    RT_PROP(major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
    RT_PROP(minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
    RT_PROP(multiProcessorCount, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT),
    RT_PROP(warpSize, CU_DEVICE_ATTRIBUTE_WARP_SIZE),
    RT_PROP(maxThreadsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK),
    RT_PROP(regsPerBlock, CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK),
    RT_PROP(integrated, CU_DEVICE_ATTRIBUTE_INTEGRATED),
    RT_PROP(canMapHostMemory, CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY),
    RT_PROP(concurrentKernels, CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS),
    RT_PROP(pciBusID, CU_DEVICE_ATTRIBUTE_PCI_BUS_ID),
    RT_PROP(pciDeviceID, CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID),
    RT_PROP(pciDomainID, CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID),
    RT_PROP(asyncEngineCount, CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT),
    RT_PROP(unifiedAddressing, CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING),
    RT_PROP(memoryBusWidth, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH),
    RT_PROP(l2CacheSize, CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE),
    RT_PROP(maxThreadsPerMultiProcessor, CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR),
    RT_PROP(managedMemory, CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY),
    RT_PROP(concurrentManagedAccess, CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS),
    RT_PROP(memoryPoolsSupported, CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED),
};
#undef RT_PROP

RT_API cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    if (prop == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    memset(prop, 0, sizeof(*prop));
    CUresult r = RT_CALL(cuDeviceGetName, prop->name, (int)sizeof(prop->name), dev);
    if (r == CUDA_SUCCESS) r = RT_CALL(cuDeviceTotalMem, &prop->totalGlobalMem, dev);
    if (r != CUDA_SUCCESS) return rt_cu(r);
    /* An attribute the driver does not know stays 0, as for an older device. */
    for (size_t i = 0; i < sizeof(rt_prop_attrs) / sizeof(rt_prop_attrs[0]); i++) {
        int value = 0;
        if (RT_CALL(cuDeviceGetAttribute, &value, rt_prop_attrs[i].attr, dev) == CUDA_SUCCESS)
            *(int *)((char *)prop + rt_prop_attrs[i].offset) = value;
    }
    return cudaSuccess;
}

RT_API cudaError_t cudaSetDeviceFlags(unsigned int flags)
{
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(rt_device(), &dev);
    if (e != cudaSuccess) return rt_fail(e);
    /* Mapped host memory is always available on a unified address space. */
    return rt_cu(RT_CALL(cuDevicePrimaryCtxSetFlags, dev, flags & ~(unsigned)cudaDeviceMapHost));
}

RT_API cudaError_t cudaDeviceSynchronize(void)
{
    RT_ENTER();
    CUcontext ctx = NULL;
    CUresult r = rt_drv.cuCtxGetCurrent(&ctx);
    if (r == CUDA_SUCCESS) r = RT_CALL(cuCtxSynchronize, ctx);
    return rt_cu(r);
}

/* Destroys the primary context of the current device and everything in it;
 * the next call that needs a context retains a fresh one. */
RT_API cudaError_t cudaDeviceReset(void)
{
    int device = rt_device();
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e != cudaSuccess) return rt_fail(e);
    if (rt_forget_primary_ctx(device)) RT_CALL(cuDevicePrimaryCtxRelease, dev);
    return rt_cu(RT_CALL(cuDevicePrimaryCtxReset, dev));
}

RT_API cudaError_t cudaDeviceCanAccessPeer(int *canAccessPeer, int device, int peerDevice)
{
    if (canAccessPeer == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdevice dev = 0, peer = 0;
    cudaError_t e = rt_cudevice(device, &dev);
    if (e == cudaSuccess) e = rt_cudevice(peerDevice, &peer);
    if (e != cudaSuccess) return rt_fail(e);
    return rt_cu(RT_CALL(cuDeviceCanAccessPeer, canAccessPeer, dev, peer));
}

RT_API cudaError_t cudaDeviceEnablePeerAccess(int peerDevice, unsigned int flags)
{
    RT_ENTER();
    CUdevice peer = 0;
    cudaError_t e = rt_cudevice(peerDevice, &peer);
    if (e != cudaSuccess) return rt_fail(e);
    CUcontext peer_ctx = rt_primary_ctx(peerDevice, &e);
    if (peer_ctx == NULL) return rt_fail(e);
    return rt_cu(RT_CALL(cuCtxEnablePeerAccess, peer_ctx, flags));
}

RT_API cudaError_t cudaDeviceDisablePeerAccess(int peerDevice)
{
    RT_ENTER();
    CUdevice peer = 0;
    cudaError_t e = rt_cudevice(peerDevice, &peer);
    if (e != cudaSuccess) return rt_fail(e);
    CUcontext peer_ctx = rt_primary_ctx(peerDevice, &e);
    if (peer_ctx == NULL) return rt_fail(e);
    return rt_cu(RT_CALL(cuCtxDisablePeerAccess, peer_ctx));
}

/* The flags of the current device's primary context, active or not. */
RT_API cudaError_t cudaGetDeviceFlags(unsigned int *flags)
{
    if (flags == NULL) return rt_fail(cudaErrorInvalidValue);
    CUdevice dev = 0;
    cudaError_t e = rt_cudevice(rt_device(), &dev);
    if (e != cudaSuccess) return rt_fail(e);
    int active = 0;
    return rt_cu(RT_CALL(cuDevicePrimaryCtxGetState, dev, flags, &active));
}

RT_API cudaError_t cudaDeviceGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    RT_ENTER();
    return rt_cu(RT_CALL(cuCtxGetStreamPriorityRange, leastPriority, greatestPriority));
}
