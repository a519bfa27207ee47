/* The documented sampling calls: cuMemGetInfo for the device footprint,
 * cuMemPoolGetAttribute for pools, cuDeviceGetGraphMemAttribute for graph memory.
 * They go straight to the real driver (cf_driver), never while a record lock is
 * held, never on a capturing stream, and at most once per CUDAFRAG_SAMPLE_MS per
 * device and per pool. Without a driver (unit tests) nothing is sampled. */
#include "hook/real.h"
#include "record/internal.h"

#define FINAL_POOLS_MAX 256

static uint64_t interval_ns = 10u * 1000000u;
static pthread_mutex_t sample_lock = PTHREAD_MUTEX_INITIALIZER; /* footprints, OOM list */

/* CUDA cannot be used in a child forked from a process that used it: the driver's
 * locks may belong to threads that did not survive the fork (the driver may hang),
 * and a real driver fails every call. Such a child keeps the samples its parent
 * took before the fork and takes no more. A child forked before the parent made
 * any CUDA call owns a driver of its own and samples as usual. */
static bool driver_of_parent;

static void forget_parent_driver_in_child(void)
{
    if (cf_rec_any_activity()) driver_of_parent = true;
}

static bool may_call_driver(void)
{
    return !driver_of_parent;
}

void cf_sample_configure(uint64_t ns)
{
    interval_ns = ns;
    pthread_atfork(NULL, NULL, forget_parent_driver_in_child);
}

void cf_sample_lock_all(void)
{
    pthread_mutex_lock(&sample_lock);
}

void cf_sample_unlock_all(void)
{
    pthread_mutex_unlock(&sample_lock);
}

int cf_sample_resolve_device(int device)
{
    if (device >= 0) return device;
    if (!may_call_driver()) return 0;
    const struct cf_driver *drv = cf_driver();
    CUdevice dev;
    if (drv->cuCtxGetDevice && drv->cuCtxGetDevice(&dev) == CUDA_SUCCESS) return (int)dev;
    return 0;
}

/* A capturing stream must not see driver calls that are not part of the capture. */
static bool stream_capturing(const struct cf_driver *drv, uint64_t stream)
{
    if (drv->cuStreamIsCapturing == NULL) return true; /* cannot tell: stay out */
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    if (drv->cuStreamIsCapturing((CUstream)(uintptr_t)stream, &st) != CUDA_SUCCESS) return true;
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
}

/* cuMemGetInfo answers for the calling thread's current device only. */
static bool current_device_is(const struct cf_driver *drv, int device)
{
    CUdevice dev;
    if (drv->cuCtxGetDevice == NULL) return true;
    return drv->cuCtxGetDevice(&dev) == CUDA_SUCCESS && (int)dev == device;
}

static void store_footprint(int device, uint64_t used, uint64_t total)
{
    struct cf_device_stats *d = &cf_rec.dev[device];
    uint64_t live = __atomic_load_n(&d->live_bytes, __ATOMIC_RELAXED);
    pthread_mutex_lock(&sample_lock);
    d->total_bytes = total;
    /* What was in use before our first sample and is not the application's
     * allocations: the context, the runtime, other processes. */
    if (d->footprint_samples++ == 0) {
        /* Our live bytes occupy at most their 2 MiB pages (small blocks share pages),
         * so round them up before taking them out of the baseline. */
        uint64_t ours = (live + (2u << 20) - 1) & ~(uint64_t)((2u << 20) - 1);
        d->baseline_used = used > ours ? used - ours : 0;
    }
    if (used > d->peak_footprint) {
        d->peak_footprint = used;
        d->live_at_peak_footprint = live;
    }
    pthread_mutex_unlock(&sample_lock);
}

static void sample_footprint(const struct cf_driver *drv, int device)
{
    size_t free_b, total_b;
    if (drv->cuMemGetInfo == NULL || !current_device_is(drv, device)) return;
    if (drv->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) return;
    store_footprint(device, total_b - free_b, total_b);
}

static void sample_pool(const struct cf_driver *drv, uint64_t pool)
{
    static const CUmemPool_attribute attrs[] = {
        CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, CU_MEMPOOL_ATTR_RESERVED_MEM_HIGH,
        CU_MEMPOOL_ATTR_USED_MEM_CURRENT,     CU_MEMPOOL_ATTR_USED_MEM_HIGH,
        CU_MEMPOOL_ATTR_RELEASE_THRESHOLD,
    };
    cuuint64_t v[5];
    for (unsigned i = 0; i < 5; i++)
        if (drv->cuMemPoolGetAttribute((CUmemoryPool)(uintptr_t)pool, attrs[i], &v[i]) !=
            CUDA_SUCCESS)
            return;
    struct cf_pool_sample s = {.reserved_cur = v[0],
                               .reserved_high = v[1],
                               .used_cur = v[2],
                               .used_high = v[3],
                               .threshold = v[4]};
    cf_pool_store_sample(pool, &s);
}

/* Claims the device's sampling slot when the interval has passed since its last
 * sample, or when live bytes grew by more than 1/16 since then: a program that
 * reaches its peak within one interval (most do, right at the start) still gets
 * its peak footprint measured within 6 %, at a cost of O(log peak) samples. */
static bool claim_device_slot(struct cf_device_stats *d, uint64_t now)
{
    uint64_t last = __atomic_load_n(&d->last_sample_ns, __ATOMIC_RELAXED);
    uint64_t live = __atomic_load_n(&d->live_bytes, __ATOMIC_RELAXED);
    uint64_t sampled = __atomic_load_n(&d->live_at_last_sample, __ATOMIC_RELAXED);
    bool grown = live > sampled + sampled / 16;
    if (last != 0 && now - last < interval_ns && !grown) return false;
    if (!__atomic_compare_exchange_n(&d->last_sample_ns, &last, now, false, __ATOMIC_RELAXED,
                                     __ATOMIC_RELAXED))
        return false;
    __atomic_store_n(&d->live_at_last_sample, live, __ATOMIC_RELAXED);
    return true;
}

void cf_sample_after_alloc(const struct cf_alloc *a, bool new_peak, uint64_t now)
{
    /* The rate limit comes first: cf_driver() is not free while libcuda is absent. */
    bool want_dev = new_peak && a->device >= 0 && a->device < CF_MAX_DEVICES &&
                    claim_device_slot(&cf_rec.dev[a->device], now);
    bool want_pool =
        a->kind == CF_KIND_POOL && a->pool && cf_pool_claim_sample(a->pool, now, interval_ns);
    if ((!want_dev && !want_pool) || !may_call_driver()) return;
    const struct cf_driver *drv = cf_driver();
    if (drv->cuMemPoolGetAttribute == NULL) want_pool = false;
    /* Without cuStreamIsCapturing we cannot tell whether a call is allowed. */
    if ((!want_dev && !want_pool) || drv->cuStreamIsCapturing == NULL) return;
    if (stream_capturing(drv, a->stream)) {
        __atomic_add_fetch(&cf_rec.capture_skips, 1, __ATOMIC_RELAXED);
        return;
    }
    if (want_dev) sample_footprint(drv, a->device);
    if (want_pool) sample_pool(drv, a->pool);
}

void cf_sample_oom(const struct cf_alloc_info *ai, int device, struct cf_site *site, uint64_t now)
{
    const struct cf_driver *drv = may_call_driver() ? cf_driver() : NULL;
    size_t free_b = 0, total_b = 0;
    if (drv && drv->cuMemGetInfo && !stream_capturing(drv, ai->stream) &&
        current_device_is(drv, device))
        if (drv->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) free_b = total_b = 0;
    pthread_mutex_lock(&sample_lock);
    if (cf_rec.nooms < CF_MAX_OOMS) {
        cf_rec.ooms[cf_rec.nooms++] = (struct cf_oom){.api = ai->api,
                                                      .device = device,
                                                      .request = ai->requested,
                                                      .free_bytes = free_b,
                                                      .total_bytes = total_b,
                                                      .t_ns = now,
                                                      .site = site};
    } else {
        cf_rec.ooms_dropped++;
    }
    pthread_mutex_unlock(&sample_lock);
}

static void raise_to(uint64_t *high, uint64_t v)
{
    if (v > *high) *high = v;
}

static void sample_graph_device(const struct cf_driver *drv, int i)
{
    CUdevice dev;
    cuuint64_t reserved = 0, used = 0;
    if (drv->cuDeviceGet(&dev, i) != CUDA_SUCCESS ||
        drv->cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, &reserved) !=
            CUDA_SUCCESS ||
        drv->cuDeviceGetGraphMemAttribute(dev, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH, &used) !=
            CUDA_SUCCESS)
        return;
    pthread_mutex_lock(&sample_lock);
    raise_to(&cf_rec.graph.reserved_high[i], reserved);
    raise_to(&cf_rec.graph.used_high[i], used);
    pthread_mutex_unlock(&sample_lock);
}

static void sample_graph_memory(const struct cf_driver *drv)
{
    if (drv->cuDeviceGet == NULL || drv->cuDeviceGetGraphMemAttribute == NULL) return;
    for (int i = 0; i < CF_MAX_DEVICES; i++)
        if (__atomic_load_n(&cf_rec.dev[i].seen, __ATOMIC_RELAXED) || cf_rec.graph.reserved_high[i])
            sample_graph_device(drv, i);
}

/* After a graph launch: the graph pool's high water, read while the context is
 * alive (at exit the runtime may have torn it down already). Rate-limited like
 * the footprint samples; never on a capturing stream. */
void cf_rec_graph_launched(uint64_t stream)
{
    static uint64_t last;
    if (!may_call_driver()) return;
    uint64_t now = cf_now_ns(), prev = __atomic_load_n(&last, __ATOMIC_RELAXED);
    if (prev != 0 && now - prev < interval_ns) return;
    if (!__atomic_compare_exchange_n(&last, &prev, now, false, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        return;
    const struct cf_driver *drv = cf_driver();
    CUdevice dev;
    if (drv->cuDeviceGet == NULL || drv->cuDeviceGetGraphMemAttribute == NULL ||
        drv->cuCtxGetDevice == NULL || drv->cuCtxGetDevice(&dev) != CUDA_SUCCESS || (int)dev < 0 ||
        (int)dev >= CF_MAX_DEVICES)
        return;
    if (stream_capturing(drv, stream)) {
        __atomic_add_fetch(&cf_rec.capture_skips, 1, __ATOMIC_RELAXED);
        return;
    }
    sample_graph_device(drv, (int)dev);
}

bool cf_rec_sample_final(void)
{
    cf_rec_init();
    if (!may_call_driver()) return false;
    const struct cf_driver *drv = cf_driver();
    CUcontext ctx = NULL;
    CUdevice dev;
    if (drv->cuCtxGetCurrent && drv->cuCtxGetCurrent(&ctx) == CUDA_SUCCESS && ctx &&
        drv->cuCtxGetDevice && drv->cuCtxGetDevice(&dev) == CUDA_SUCCESS && (int)dev >= 0 &&
        (int)dev < CF_MAX_DEVICES)
        sample_footprint(drv, (int)dev);
    if (drv->cuMemPoolGetAttribute) {
        uint64_t pools[FINAL_POOLS_MAX];
        unsigned n = cf_pool_handles(pools, FINAL_POOLS_MAX);
        for (unsigned i = 0; i < n; i++)
            sample_pool(drv, pools[i]);
    }
    sample_graph_memory(drv);
    return true;
}
