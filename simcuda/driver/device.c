/* Driver state, the SIMCUDA_* knobs read at cuInit, devices and their
 * attributes, and contexts (primary and created, current per thread). */
#include "sim.h"
#include "simcuda.h"

#include <errno.h>
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

#define DEFAULT_CAPACITY ((size_t)16 << 30)
#define CTX_STACK_MAX    32

static __thread struct sim_ctx *ctx_stack[CTX_STACK_MAX];
static __thread int ctx_depth;
static unsigned long long next_ctx_id = 1;

/* ---- knobs ---- */

static int parse_size(const char *s, size_t *out)
{
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (end == s || errno || s[0] == '-') return -1;
    unsigned shift = 0;
    switch (*end) {
    case 'k':
    case 'K':
        shift = 10;
        end++;
        break;
    case 'm':
    case 'M':
        shift = 20;
        end++;
        break;
    case 'g':
    case 'G':
        shift = 30;
        end++;
        break;
    case 't':
    case 'T':
        shift = 40;
        end++;
        break;
    default:
        break;
    }
    if (*end == 'i' && end[1] == 'B')
        end += 2;
    else if (*end == 'B')
        end++;
    if (*end != '\0' || v == 0 || v > (4ULL << 40) >> shift) return -1;
    v <<= shift;
    if (v < SIM_PAGE || v > (4ULL << 40)) return -1;
    *out = (size_t)(v / SIM_PAGE * SIM_PAGE);
    return 0;
}

static void read_knobs(void)
{
    const char *mem = getenv("SIMCUDA_MEM");
    sim.capacity = DEFAULT_CAPACITY;
    if (mem && *mem && parse_size(mem, &sim.capacity) != 0) {
        fprintf(stderr,
                "simcuda: ignoring SIMCUDA_MEM=%s: expected a size from 2M to 4T (digits with an "
                "optional K, M, G or T suffix); using 16G\n",
                mem);
        sim.capacity = DEFAULT_CAPACITY;
    }
    const char *devs = getenv("SIMCUDA_DEVICES");
    sim.ndevices = 1;
    if (devs && *devs) {
        char *end;
        long n = strtol(devs, &end, 10);
        if (*end != '\0' || n < 1 || n > SIM_MAX_DEVICES)
            fprintf(stderr,
                    "simcuda: ignoring SIMCUDA_DEVICES=%s: expected a number from 1 to %d; "
                    "using 1\n",
                    devs, SIM_MAX_DEVICES);
        else
            sim.ndevices = (int)n;
    }
    const char *phys = getenv("SIMCUDA_PHYS");
    sim.contiguous = 0;
    if (phys && *phys) {
        if (strcmp(phys, "contiguous") == 0)
            sim.contiguous = 1;
        else if (strcmp(phys, "paged") != 0)
            fprintf(stderr,
                    "simcuda: ignoring SIMCUDA_PHYS=%s: expected paged or contiguous; using "
                    "paged\n",
                    phys);
    }
}

/* ---- devices ---- */

static struct sim_ctx *ctx_new(struct sim_device *d, unsigned flags, int primary)
{
    struct sim_ctx *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->magic = SIM_CTX_MAGIC;
    c->dev = d;
    c->flags = flags;
    c->is_primary = primary;
    c->id = next_ctx_id++;
    sim_ctx_init_streams(c);
    return c;
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
    d->primary = ctx_new(d, 0, 1);
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
    if (flags != 0) return CUDA_ERROR_INVALID_VALUE;
    sim_lock();
    CUresult rc = CUDA_SUCCESS;
    if (!sim_ready()) {
        read_knobs();
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

struct sim_ctx *sim_current_ctx(void)
{
    return ctx_depth > 0 ? ctx_stack[ctx_depth - 1] : NULL;
}

CUresult sim_current_device(struct sim_device **out)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = sim_current_ctx();
    if (!c) return CUDA_ERROR_INVALID_CONTEXT;
    *out = c->dev;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDriverGetVersion(int *version)
{
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 13000;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGet(CUdevice *device, int ordinal)
{
    struct sim_device *d;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = sim_device_get(ordinal, &d);
    if (rc == CUDA_SUCCESS) *device = ordinal;
    return rc;
}

SIM_API CUresult cuDeviceGetCount(int *count)
{
    if (!count) return CUDA_ERROR_INVALID_VALUE;
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    *count = sim.ndevices;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetName(char *name, int len, CUdevice dev)
{
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
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!uuid) return CUDA_ERROR_INVALID_VALUE;
    fill_uuid(uuid, dev);
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceGetUuid_v2(CUuuid *uuid, CUdevice dev)
{
    return cuDeviceGetUuid(uuid, dev);
}

SIM_API CUresult cuDeviceTotalMem(unsigned int *bytes, CUdevice dev)
{
    struct sim_device *d;
    CUresult rc = sim_device_get(dev, &d);
    if (rc != CUDA_SUCCESS) return rc;
    if (!bytes) return CUDA_ERROR_INVALID_VALUE;
    *bytes = d->capacity > UINT32_MAX ? UINT32_MAX : (unsigned int)d->capacity;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuDeviceTotalMem_v2(size_t *bytes, CUdevice dev)
{
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
    struct sim_device *a, *b;
    CUresult rc = sim_device_get(dev, &a);
    if (rc == CUDA_SUCCESS) rc = sim_device_get(peerDev, &b);
    if (rc != CUDA_SUCCESS) return rc;
    if (!canAccessPeer) return CUDA_ERROR_INVALID_VALUE;
    *canAccessPeer = dev != peerDev;
    return CUDA_SUCCESS;
}

/* ---- contexts ---- */

static int ctx_valid(struct sim_ctx *c)
{
    return c && c->magic == SIM_CTX_MAGIC;
}

SIM_API CUresult cuDevicePrimaryCtxRetain(CUcontext *pctx, CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        d->primary->refcount++;
        *pctx = (CUcontext)d->primary;
    }
    sim_unlock();
    return rc;
}

static CUresult primary_release(CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) {
        if (d->primary->refcount <= 0)
            rc = CUDA_ERROR_INVALID_CONTEXT;
        else if (--d->primary->refcount == 0)
            sim_drain_ctx(d->primary);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxRelease(CUdevice dev)
{
    return primary_release(dev);
}

SIM_API CUresult cuDevicePrimaryCtxRelease_v2(CUdevice dev)
{
    return primary_release(dev);
}

static CUresult primary_reset(CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_ctx(d->primary);
        d->primary->refcount = 0;
        d->primary->flags = 0;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxReset(CUdevice dev)
{
    return primary_reset(dev);
}

SIM_API CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    return primary_reset(dev);
}

SIM_API CUresult cuDevicePrimaryCtxGetState(CUdevice dev, unsigned int *flags, int *active)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && (!flags || !active)) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) {
        *flags = d->primary->flags;
        *active = d->primary->refcount > 0;
    }
    sim_unlock();
    return rc;
}

static CUresult primary_set_flags(CUdevice dev, unsigned int flags)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS) d->primary->flags = flags;
    sim_unlock();
    return rc;
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags);
}

SIM_API CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice dev, unsigned int flags)
{
    return primary_set_flags(dev, flags);
}

SIM_API CUresult cuCtxGetCurrent(CUcontext *pctx)
{
    sim_count_call(SIM_COUNT_cuCtxGetCurrent);
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!pctx) return CUDA_ERROR_INVALID_VALUE;
    *pctx = (CUcontext)sim_current_ctx();
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSetCurrent(CUcontext ctx)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (c && !ctx_valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!c) {
        if (ctx_depth > 0) ctx_depth--;
    } else if (ctx_depth == 0) {
        ctx_stack[ctx_depth++] = c;
    } else {
        ctx_stack[ctx_depth - 1] = c;
    }
    return CUDA_SUCCESS;
}

static CUresult ctx_push(CUcontext ctx)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
    if (ctx_depth == CTX_STACK_MAX) return CUDA_ERROR_OUT_OF_MEMORY;
    ctx_stack[ctx_depth++] = c;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPushCurrent(CUcontext ctx)
{
    return ctx_push(ctx);
}

SIM_API CUresult cuCtxPushCurrent_v2(CUcontext ctx)
{
    return ctx_push(ctx);
}

static CUresult ctx_pop(CUcontext *pctx)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (ctx_depth == 0) return CUDA_ERROR_INVALID_CONTEXT;
    struct sim_ctx *c = ctx_stack[--ctx_depth];
    if (pctx) *pctx = (CUcontext)c;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxPopCurrent(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

SIM_API CUresult cuCtxPopCurrent_v2(CUcontext *pctx)
{
    return ctx_pop(pctx);
}

SIM_API CUresult cuCtxGetDevice(CUdevice *device)
{
    sim_count_call(SIM_COUNT_cuCtxGetDevice);
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && !device) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *device = d->ordinal;
    return rc;
}

SIM_API CUresult cuCtxGetDevice_v2(CUdevice *device, CUcontext ctx)
{
    if (!ctx) return cuCtxGetDevice(device);
    sim_count_call(SIM_COUNT_cuCtxGetDevice);
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!device) return CUDA_ERROR_INVALID_VALUE;
    *device = c->dev->ordinal;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetFlags(unsigned int *flags)
{
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS && !flags) rc = CUDA_ERROR_INVALID_VALUE;
    if (rc == CUDA_SUCCESS) *flags = sim_current_ctx()->flags;
    return rc;
}

SIM_API CUresult cuCtxGetId(CUcontext ctx, unsigned long long *ctxId)
{
    struct sim_ctx *c = ctx ? (struct sim_ctx *)ctx : sim_current_ctx();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!ctx_valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!ctxId) return CUDA_ERROR_INVALID_VALUE;
    *ctxId = c->id;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetApiVersion(CUcontext ctx, unsigned int *version)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (!version) return CUDA_ERROR_INVALID_VALUE;
    *version = 3020; /* the context API version, unchanged since CUDA 3.2 */
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxGetStreamPriorityRange(int *leastPriority, int *greatestPriority)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    if (leastPriority) *leastPriority = 0;
    if (greatestPriority) *greatestPriority = -5;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxSynchronize(void)
{
    sim_lock();
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc == CUDA_SUCCESS) {
        sim_drain_ctx(sim_current_ctx());
        sim_sync_point(d);
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxSynchronize_v2(CUcontext ctx)
{
    if (!ctx) return cuCtxSynchronize();
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_valid(c)) return CUDA_ERROR_INVALID_CONTEXT;
    sim_lock();
    sim_drain_ctx(c);
    sim_sync_point(c->dev);
    sim_unlock();
    return CUDA_SUCCESS;
}

static CUresult ctx_create(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    struct sim_device *d;
    sim_lock();
    CUresult rc = sim_device_get(dev, &d);
    if (rc == CUDA_SUCCESS && !pctx) rc = CUDA_ERROR_INVALID_VALUE;
    struct sim_ctx *c = NULL;
    if (rc == CUDA_SUCCESS) {
        c = ctx_new(d, flags, 0);
        if (!c) rc = CUDA_ERROR_OUT_OF_MEMORY;
    }
    if (rc == CUDA_SUCCESS) {
        c->refcount = 1;
        rc = ctx_push((CUcontext)c);
        *pctx = (CUcontext)c;
    }
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxCreate(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v2(CUcontext *pctx, unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v3(CUcontext *pctx, CUexecAffinityParam *paramsArray, int numParams,
                                unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

SIM_API CUresult cuCtxCreate_v4(CUcontext *pctx, CUctxCreateParams *ctxCreateParams,
                                unsigned int flags, CUdevice dev)
{
    return ctx_create(pctx, flags, dev);
}

static CUresult ctx_destroy(CUcontext ctx)
{
    if (!sim_ready()) return CUDA_ERROR_NOT_INITIALIZED;
    struct sim_ctx *c = (struct sim_ctx *)ctx;
    if (!ctx_valid(c) || c->is_primary) return CUDA_ERROR_INVALID_CONTEXT;
    sim_lock();
    sim_drain_ctx(c);
    while (c->streams) {
        struct sim_stream *s = c->streams;
        sim_stream_destroy(s);
    }
    /* The structure itself is kept: other threads' current-context stacks
     * and per-thread stream slots may still name it, and read its magic. */
    c->magic = 0;
    /* Unbind it from this thread; other threads that still have it current
     * get CUDA_ERROR_INVALID_CONTEXT from the magic check. */
    for (int i = 0; i < ctx_depth; i++)
        if (ctx_stack[i] == c) ctx_stack[i] = NULL;
    while (ctx_depth > 0 && ctx_stack[ctx_depth - 1] == NULL)
        ctx_depth--;
    sim_unlock();
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxDestroy(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

SIM_API CUresult cuCtxDestroy_v2(CUcontext ctx)
{
    return ctx_destroy(ctx);
}

static CUresult peer_enable(CUcontext peerContext, unsigned int Flags)
{
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc != CUDA_SUCCESS) return rc;
    struct sim_ctx *peer = (struct sim_ctx *)peerContext;
    if (!ctx_valid(peer) || peer->dev == d) return CUDA_ERROR_INVALID_CONTEXT;
    if (Flags != 0) return CUDA_ERROR_INVALID_VALUE;
    if (d->peer_access[peer->dev->ordinal]) return CUDA_ERROR_PEER_ACCESS_ALREADY_ENABLED;
    d->peer_access[peer->dev->ordinal] = 1;
    return CUDA_SUCCESS;
}

static CUresult peer_disable(CUcontext peerContext)
{
    struct sim_device *d;
    CUresult rc = sim_current_device(&d);
    if (rc != CUDA_SUCCESS) return rc;
    struct sim_ctx *peer = (struct sim_ctx *)peerContext;
    if (!ctx_valid(peer)) return CUDA_ERROR_INVALID_CONTEXT;
    if (!d->peer_access[peer->dev->ordinal]) return CUDA_ERROR_PEER_ACCESS_NOT_ENABLED;
    d->peer_access[peer->dev->ordinal] = 0;
    return CUDA_SUCCESS;
}

SIM_API CUresult cuCtxEnablePeerAccess(CUcontext peerContext, unsigned int Flags)
{
    sim_lock();
    CUresult rc = peer_enable(peerContext, Flags);
    sim_unlock();
    return rc;
}

SIM_API CUresult cuCtxDisablePeerAccess(CUcontext peerContext)
{
    sim_lock();
    CUresult rc = peer_disable(peerContext);
    sim_unlock();
    return rc;
}

SIM_API int simcudaGetStats(int device, struct simcuda_stats *out)
{
    if (!sim_ready() || device < 0 || device >= sim.ndevices || !out) return -1;
    sim_lock();
    struct sim_device *d = &sim.dev[device];
    out->pages_total = d->npages;
    out->pages_used = d->pages_used;
    out->largest_free_run_pages = sim_phys_largest_free_run(d);
    out->pool_reserved = sim_pools_reserved(d);
    out->vmm_physical = d->vmm_physical;
    out->graph_reserved = d->graph_reserved;
    out->alloc_calls = d->alloc_calls;
    out->free_calls = d->free_calls;
    out->pages_peak = d->pages_peak;
    sim_unlock();
    return 0;
}

SIM_API unsigned long long simcudaHazardCount(void)
{
    sim_lock();
    unsigned long long n = sim.hazards;
    sim_unlock();
    return n;
}

/* SIMCUDA_STATS_OUT=FILE: at exit, one line per device with its true peak, so a
 * test can hold a profiler's footprint figures against what the device really
 * held ("device D pages_peak N pages_used M page_bytes P"). */
__attribute__((destructor)) static void write_stats_out(void)
{
    const char *path = getenv("SIMCUDA_STATS_OUT");
    if (!path || !*path || !sim_ready()) return;
    FILE *f = fopen(path, "w");
    if (!f) return;
    sim_lock();
    for (int i = 0; i < sim.ndevices; i++)
        fprintf(f, "device %d pages_peak %u pages_used %u page_bytes %llu\n", i,
                sim.dev[i].pages_peak, sim.dev[i].pages_used, (unsigned long long)SIM_PAGE);
    sim_unlock();
    fclose(f);
}
