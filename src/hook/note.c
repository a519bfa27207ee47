#include "hook/cuda_abi.h"

#include "hook/note.h"

#include "arena/arena.h"
#include "base/ctx_state.h"
#include "hook/guard.h"
#include "base/real.h"
#include "base/log.h"
#include "report/lifecycle.h"

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

/* Every allocation record is built here, with one policy: the address only when
 * the call succeeded, and a device the caller could not name (-1) is the calling
 * thread's current one, from the kept answer (base/ctx_state.h) rather than asked
 * by the record layer. */
static void record(struct cf_alloc_info *ai)
{
    if (ai->result != 0) ai->addr = 0;
    if (ai->device < 0) ai->device = cf_current_device();
    cf_rec_alloc(ai);
    /* Recorded first, so the OOM report has this failure; no lock is held here. */
    if (CF_UNLIKELY(ai->oom && ai->result != 0)) cf_lifecycle_oom();
}

static void note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted,
                       int device, int result, bool oom, bool shadow)
{
    struct cf_alloc_info ai = {
        .api = api,
        .addr = addr,
        .requested = requested,
        .granted = granted,
        .device = device,
        .result = result,
        .oom = oom,
        .shadow = shadow,
        .ns = cf_call_ns,
        .t_ns = cf_call_end(),
    };
    record(&ai);
}

void cf_note_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted, int device,
                   int result, bool oom)
{
    note_alloc(api, addr, requested, granted, device, result, oom, false);
}

CF_HOT void cf_note_device_alloc(enum cf_api api, uint64_t addr, uint64_t requested, int result,
                                 bool oom)
{
    /* Native run: the record replays it on the host-only arena model, for the
     * report's comparison. */
    bool shadow = result == 0 && addr != 0 && cf_shadow_enabled();
    note_alloc(api, addr, requested, 0, -1, result, oom, shadow);
}

CF_HOT void cf_note_free_begin(struct cf_free_note *f, enum cf_api api, uint64_t addr)
{
    int saved = errno; /* the real call's errno must be what the program sees */
    f->api = api;
    f->addr = addr;
    f->stream = 0;
    f->live = cf_rec_free_begin(addr, &f->t0);
    errno = saved;
}

CF_HOT void cf_note_free_end(struct cf_free_note *f, int result)
{
    if (result == 0) cf_rec_pool_freed(f->live, f->stream);
    cf_rec_free_end(f->api, f->addr, f->live, result, cf_call_ns, cf_call_end());
}

void cf_note_call(enum cf_api api, int result)
{
    cf_call_end(); /* the record reads the clock for these */
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

/* Documented sampling call: cuDeviceGetDefaultMemPool, once per device. While a
 * capture is in progress the question waits: in global capture mode such a call
 * from any thread can invalidate the capture (0: not known yet). */
CF_HOT static uint64_t device_default_pool(int device)
{
    uint64_t p = __atomic_load_n(&default_pool[device], __ATOMIC_RELAXED);
    if (p || cf_capture_in_progress()) return p;
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

/* Documented sampling call: cuDeviceGetMemPool, once per device (then tracked);
 * like the default pool, not while a capture is in progress. */
static uint64_t device_current_pool(int device)
{
    uint64_t p = __atomic_load_n(&current_pool[device], __ATOMIC_RELAXED);
    if (p || cf_capture_in_progress()) return p;
    const struct cf_driver *d = cf_driver();
    CUmemoryPool pool = NULL;
    if (d->cuDeviceGetMemPool == NULL || d->cuDeviceGetMemPool(&pool, device) != CUDA_SUCCESS ||
        pool == NULL)
        return 0;
    p = (uint64_t)(uintptr_t)pool;
    __atomic_store_n(&current_pool[device], p, __ATOMIC_RELAXED);
    return p;
}

CF_HOT void cf_async_target(CUstream stream, bool ptsz, uint64_t pool, struct cf_async_target *t)
{
    t->capturing = cf_stream_capturing(stream, ptsz);
    t->pool = pool;
    t->stream_key = cf_stream_key((uint64_t)(uintptr_t)stream, ptsz);
    t->is_default = false;
    /* A capture in global mode is invalidated by "unsafe" calls from its thread
     * (measured on an H200: cuDeviceGetDefaultMemPool made the program's own
     * cudaMallocAsync fail with cudaErrorStreamCaptureInvalidated). Graph
     * allocations come from the graph pool anyway: ask nothing more. Otherwise the
     * allocation comes from the stream's device (the current one for the default
     * streams). */
    t->device = t->capturing ? cf_current_device() : cf_stream_device(stream);
    if (t->capturing || !device_ok(t->device)) return;
    cf_rec_pool_alloc_begin(); /* before the real call, which follows */
    uint64_t def = device_default_pool(t->device);
    if (t->pool == 0) t->pool = device_current_pool(t->device);
    t->is_default = t->pool != 0 && t->pool == def;
}

CF_HOT void cf_note_async_alloc(enum cf_api api, uint64_t addr, uint64_t requested, CUstream stream,
                                const struct cf_async_target *t, int result, bool oom)
{
    struct cf_alloc_info ai = {
        .api = api,
        .addr = addr,
        .requested = requested,
        .stream = (uint64_t)(uintptr_t)stream,
        .pool = t->capturing ? 0 : t->pool,
        .device = t->device,
        .result = result,
        .oom = oom,
        .graph = t->capturing,
        .ns = cf_call_ns,
        .t_ns = cf_call_end(),
        .stream_key = t->stream_key,
    };
    record(&ai);
}

void cf_note_arena_alloc(enum cf_api api, uint64_t addr, uint64_t requested, uint64_t granted,
                         CUstream stream, int device, uint64_t t0, uint64_t end)
{
    struct cf_alloc_info ai = {
        .api = api,
        .addr = addr,
        .requested = requested,
        .granted = granted,
        .stream = (uint64_t)(uintptr_t)stream,
        .device = device,
        .arena = true,
        .ns = end - t0,
        .t_ns = end,
    };
    record(&ai);
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
