#include "hook/cuda_abi.h"

#include "hook/note.h"

#include "arena/arena.h"
#include "hook/guard.h"
#include "hook/real.h"
#include "util/log.h"

CUresult cf_missing_driver(const char *name)
{
    cf_warn_once(name, "%s: not found in libcuda", name);
    return CUDA_ERROR_NOT_INITIALIZED;
}

cudaError_t cf_missing_runtime(const char *name)
{
    cf_warn_once(name, "%s: not found in libcudart", name);
    return cudaErrorSharedObjectSymbolNotFound;
}

cudaError_t cf_runtime_error(CUresult rc)
{
    switch (rc) {
    case CUDA_SUCCESS:
        return cudaSuccess;
    case CUDA_ERROR_OUT_OF_MEMORY:
        return cudaErrorMemoryAllocation;
    case CUDA_ERROR_INVALID_VALUE:
        return cudaErrorInvalidValue;
    case CUDA_ERROR_NOT_SUPPORTED:
        return cudaErrorNotSupported;
    case CUDA_ERROR_INVALID_CONTEXT:
        return cudaErrorDeviceUninitialized;
    case CUDA_ERROR_NOT_INITIALIZED:
        return cudaErrorInitializationError;
    case CUDA_ERROR_DEINITIALIZED:
        return cudaErrorCudartUnloading;
    default:
        return cudaErrorUnknown;
    }
}

/* Documented sampling call: cuCtxGetDevice. */
static int current_device(void)
{
    const struct cf_driver *d = cf_driver();
    CUdevice dev;
    if (d->cuCtxGetDevice == NULL || d->cuCtxGetDevice(&dev) != CUDA_SUCCESS) return -1;
    return dev;
}

static void note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted,
                       int device, int result, bool oom, bool shadow)
{
    struct cf_alloc_info ai = {
        .api = api,
        .addr = result == 0 ? addr : 0,
        .requested = requested,
        .granted = granted,
        .device = device,
        .result = result,
        .oom = oom,
        .shadow = shadow,
        .ns = cf_call_ns,
    };
    cf_rec_alloc(&ai);
}

void cf_note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted, int device,
                   int result, bool oom)
{
    note_alloc(api, addr, requested, granted, device, result, oom, false);
}

void cf_note_device_alloc(enum cf_api api, uint64_t addr, uint64_t requested, int result, bool oom)
{
    /* Native run: the record replays it on the host-only arena model, for the
     * report's comparison. */
    bool shadow = result == 0 && addr != 0 && cf_shadow_enabled();
    int device = shadow ? current_device() : -1;
    note_alloc(api, addr, requested, 0, device, result, oom, shadow);
}

void cf_note_free_begin(struct cf_free_note *f, enum cf_api api, uint64_t addr)
{
    int saved = errno; /* the real call's errno must be what the program sees */
    f->api = api;
    f->addr = addr;
    f->live = cf_rec_free_begin(addr);
    errno = saved;
}

void cf_note_free_end(struct cf_free_note *f, int result)
{
    cf_rec_free_end(f->api, f->addr, f->live, result, cf_call_ns);
}

void cf_note_call(enum cf_api api, int result)
{
    cf_rec_call(api, result, cf_call_ns);
}

/* ---- pools ---- */

/* Per device: the pool async allocations draw from (changed only through
 * cu/cudaDeviceSetMemPool, which we see) and the default pool (never changes). */
static uint64_t current_pool[CF_MAX_DEVICES], default_pool[CF_MAX_DEVICES];

static bool device_ok(int device)
{
    return device >= 0 && device < CF_MAX_DEVICES;
}

/* Documented sampling call: cuDeviceGetDefaultMemPool, once per device. */
static uint64_t device_default_pool(int device)
{
    uint64_t p = __atomic_load_n(&default_pool[device], __ATOMIC_RELAXED);
    if (p) return p;
    const struct cf_driver *d = cf_driver();
    CUmemoryPool pool = NULL;
    if (d->cuDeviceGetDefaultMemPool == NULL ||
        d->cuDeviceGetDefaultMemPool(&pool, device) != CUDA_SUCCESS || pool == NULL)
        return 0;
    p = (uint64_t)(uintptr_t)pool;
    __atomic_store_n(&default_pool[device], p, __ATOMIC_RELAXED);
    cf_rec_pool_seen(p, device, true, false);
    return p;
}

/* Documented sampling call: cuDeviceGetMemPool, once per device (then tracked). */
static uint64_t device_current_pool(int device)
{
    uint64_t p = __atomic_load_n(&current_pool[device], __ATOMIC_RELAXED);
    if (p) return p;
    const struct cf_driver *d = cf_driver();
    CUmemoryPool pool = NULL;
    if (d->cuDeviceGetMemPool == NULL || d->cuDeviceGetMemPool(&pool, device) != CUDA_SUCCESS ||
        pool == NULL)
        return 0;
    p = (uint64_t)(uintptr_t)pool;
    __atomic_store_n(&current_pool[device], p, __ATOMIC_RELAXED);
    return p;
}

/* Documented sampling call: cuStreamIsCapturing (never synchronizes). */
static bool stream_capturing(CUstream stream, bool ptsz)
{
    const struct cf_driver *d = cf_driver();
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (d->cuStreamIsCapturing == NULL) return false;
    if (ptsz && stream == NULL) stream = CU_STREAM_PER_THREAD;
    if (d->cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS) return false;
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* The device of an application stream (stream-ordered allocations come from the
 * stream's device); the current one for the default streams. */
static int stream_device(CUstream stream)
{
    const struct cf_driver *d = cf_driver();
    CUdevice dev;
    if (stream == NULL || stream == CU_STREAM_LEGACY || stream == CU_STREAM_PER_THREAD ||
        d->cuStreamGetDevice == NULL || d->cuStreamGetDevice(stream, &dev) != CUDA_SUCCESS)
        return current_device();
    return dev;
}

void cf_async_target(CUstream stream, bool ptsz, uint64_t pool, struct cf_async_target *t)
{
    t->capturing = stream_capturing(stream, ptsz);
    t->pool = pool;
    t->is_default = false;
    /* A capture in global mode is invalidated by "unsafe" calls from its thread
     * (measured on an H200: cuDeviceGetDefaultMemPool made the program's own
     * cudaMallocAsync fail with cudaErrorStreamCaptureInvalidated). Graph
     * allocations come from the graph pool anyway: ask nothing more. */
    t->device = t->capturing ? current_device() : stream_device(stream);
    if (t->capturing || !device_ok(t->device)) return;
    uint64_t def = device_default_pool(t->device);
    if (t->pool == 0) t->pool = device_current_pool(t->device);
    t->is_default = t->pool != 0 && t->pool == def;
}

void cf_note_async_alloc(enum cf_api api, uint64_t addr, uint64_t requested, CUstream stream,
                         const struct cf_async_target *t, int result, bool oom)
{
    struct cf_alloc_info ai = {
        .api = api,
        .addr = result == 0 ? addr : 0,
        .requested = requested,
        .stream = (uint64_t)(uintptr_t)stream,
        .pool = t->capturing ? 0 : t->pool,
        .device = t->device,
        .result = result,
        .oom = oom,
        .graph = t->capturing,
        .ns = cf_call_ns,
    };
    cf_rec_alloc(&ai);
}

void cf_note_pool_created(uint64_t pool, int device)
{
    cf_rec_pool_seen(pool, device, false, true);
}

void cf_note_device_pool_set(int device, uint64_t pool)
{
    if (!device_ok(device) || pool == 0) return;
    __atomic_store_n(&current_pool[device], pool, __ATOMIC_RELAXED);
    cf_rec_pool_seen(pool, device, pool == device_default_pool(device), false);
}

void cf_note_device_pool_got(int device, uint64_t pool, bool is_default)
{
    if (!device_ok(device) || pool == 0) return;
    if (is_default) {
        if (__atomic_exchange_n(&default_pool[device], pool, __ATOMIC_RELAXED) != pool)
            cf_rec_pool_seen(pool, device, true, false);
        return;
    }
    __atomic_store_n(&current_pool[device], pool, __ATOMIC_RELAXED);
    cf_rec_pool_seen(pool, device, pool == device_default_pool(device), false);
}
