/* Driver state and its lock, cuInit, and the devices: their address spaces,
 * identity and attributes (those of an H200). */
#include "sim.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

struct sim_state sim;

/* Recursive: host functions run at synchronization points while the lock is
 * held, and a misbehaving one that calls back into the driver must not hang. */
static pthread_mutex_t sim_mutex = PTHREAD_RECURSIVE_MUTEX_INITIALIZER_NP;

void sim_lock(void)
{
    pthread_mutex_lock(&sim_mutex);
}

void sim_unlock(void)
{
    pthread_mutex_unlock(&sim_mutex);
}

#define VA_MIN   ((size_t)1 << 40) /* 1 TiB */
#define VA_MAX   ((size_t)8 << 40) /* 8 devices stay within 64 TiB */
#define VA_FLOOR ((size_t)64 << 30)

/* The device's address space: room for pool chunks, VMM reservations (real
 * GPUs have terabytes of VA, and allocators reserve generously) and graph
 * allocations on top of the capacity. Untouched VA costs nothing; where the
 * system refuses a large mapping, a smaller one is tried. */
static CUresult map_va(struct sim_device *d)
{
    size_t want = 16 * sim.capacity;
    if (want < VA_MIN) want = VA_MIN;
    if (want > VA_MAX) want = VA_MAX;
    size_t floor = 4 * sim.capacity < VA_FLOOR ? VA_FLOOR : 4 * sim.capacity;
    if (sim.va_size) want = floor = sim.va_size < sim.capacity ? sim.capacity : sim.va_size;
    for (size_t size = want; size >= floor && size >= SIM_PAGE; size /= 2) {
        void *va = mmap(NULL, size + SIM_PAGE, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
        if (va == MAP_FAILED) continue;
        d->va_size = size;
        d->va_units = (uint32_t)(size / SIM_PAGE);
        d->va_base = SIM_ROUND_UP((uintptr_t)va, SIM_PAGE);
        return CUDA_SUCCESS;
    }
    return CUDA_ERROR_OUT_OF_MEMORY;
}

static CUresult device_init(struct sim_device *d, int ordinal)
{
    memset(d, 0, sizeof *d);
    d->ordinal = ordinal;
    d->capacity = sim.capacity;
    d->npages = (uint32_t)(sim.capacity / SIM_PAGE);
    CUresult rc = map_va(d);
    if (rc != CUDA_SUCCESS) return rc;
    d->unit_owner = calloc(d->va_units, sizeof *d->unit_owner);
    d->page_map = calloc(d->npages, 1);
    d->primary = sim_ctx_new(d, 0, 1);
    if (!d->unit_owner || !d->page_map || !d->primary) return CUDA_ERROR_OUT_OF_MEMORY;
    d->default_pool = sim_pool_new(d, 1);
    if (!d->default_pool) return CUDA_ERROR_OUT_OF_MEMORY;
    d->current_pool = d->default_pool;
    for (int i = 0; i < SIM_MAX_DEVICES; i++)
        d->peer_access[i] = 0;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuInit(unsigned int flags)
{
    SIM_ENTRY();
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = CUDA_SUCCESS;
    if (!sim_ready()) {
        sim_read_knobs();
        for (int i = 0; i < sim.ndevices && rc == CUDA_SUCCESS; i++)
            rc = device_init(&sim.dev[i], i);
        if (rc == CUDA_SUCCESS) __atomic_store_n(&sim.initialized, 1, __ATOMIC_RELEASE);
    }
    sim_unlock();
    return rc;
}

CUresult sim_device_get(CUdevice dv, struct sim_device **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (dv < 0 || dv >= sim.ndevices) return CUDA_ERROR_INVALID_DEVICE;
    *out = &sim.dev[dv];
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDriverGetVersion(int *version)
{
    SIM_ENTRY();
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    SIM_ENTRY();
    struct sim_device *d;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = sim_device_get(ordinal, &d);
    if (rc == CUDA_SUCCESS) *device = ordinal;
    return rc;
}

SIM_API CUresult cuDeviceGetCount(int *count)
{
    SIM_ENTRY();
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    *count = sim.ndevices;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!name || len <= 0) return CUDA_ERROR_INVALID_VALUE;
    snprintf(name, (size_t)len, "%s", "Simulated CUDA Device");
    return CUDA_SUCCESS;
}

static void fill_uuid(CUuuid *uuid, CUdevice dev)
{
    static const char base[16] = {'s', 'i', 'm', 'c', 'u', 'd', 'a', '-',
                                  'd', 'e', 'v', 'i', 'c', 'e', '-', 0};
    memcpy(uuid->bytes, base, 16);
    uuid->bytes[15] = (char)dev;
}

SIM_API CUresult cuDeviceGetUuid(CUuuid *uuid, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    fill_uuid(uuid, dev);
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    SIM_ENTRY();
    return cuDeviceGetUuid(uuid, dev);
}

SIM_API CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->capacity > UINT32_MAX ? UINT32_MAX : (unsigned int)d->capacity;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->capacity;
    return CUDA_SUCCESS;
}

static int attribute_value(CUdevice_attribute a, CUdevice dev)
{
    switch (a) {
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
        return 9;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
        return 132;
    case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
        return 32;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
        return 1024;
    case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
        return 64;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
        return 65535;
    case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
        return 49152;
    case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
        return 65536;
    case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
        return 1980000;
    case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
        return 2619000;
    case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
        return 6144;
    case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
        return 52428800;
    case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
        return 512;
    case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
        return 2147483647;
    case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
        return 0x10 + dev;
    case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
        return 0;
    case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
        return 2048;
    case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
        return 3;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_KERNELS:
        return 1;
    case CU_DEVICE_ATTRIBUTE_UNIFIED_ADDRESSING:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MANAGED_MEMORY:
        return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_MAP_HOST_MEMORY:
        return 1;
    case CU_DEVICE_ATTRIBUTE_CONCURRENT_MANAGED_ACCESS:
        return 1;
    case CU_DEVICE_ATTRIBUTE_VIRTUAL_MEMORY_MANAGEMENT_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MEMORY_POOLS_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
        return 0;
    case CU_DEVICE_ATTRIBUTE_STREAM_PRIORITIES_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_HOST_REGISTER_SUPPORTED:
        return 1;
    case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
        return 1;
    case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
        return CU_COMPUTEMODE_DEFAULT;
    default:
        return 0;
    }
}

SIM_API CUresult cuDeviceGetAttribute(int *pi, CUdevice_attribute attrib, CUdevice dev)
{
    SIM_ENTRY();
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!pi || (int)attrib <= 0 || attrib >= CU_DEVICE_ATTRIBUTE_MAX)
        return CUDA_ERROR_INVALID_VALUE;
    *pi = attribute_value(attrib, dev);
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceCanAccessPeer(int *canAccessPeer, CUdevice dev, CUdevice peerDev)
{
    SIM_ENTRY();
    struct sim_device *a, *b;
    CUresult rc = sim_device_get(dev, &a);
    if (rc == CUDA_SUCCESS) rc = sim_device_get(peerDev, &b);
    if (rc != CUDA_SUCCESS) return rc;
    if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}
