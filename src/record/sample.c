/* The documented sampling calls: cuMemPoolGetAttribute for a pool's reserved
 * bytes where the driver can have changed them (after the real call of an
 * allocation from it that may have grown it, and before that allocation is
 * recorded, so that the growth is in the footprint at the instant the
 * allocation is live -- see "the read an allocation can do without" below --
 * after a synchronization when it held more than its release threshold, after a
 * trim, all its attributes at most once per CUDAFRAG_SAMPLE_MS), and
 * cuDeviceGetGraphMemAttribute after graph
 * launches once the program has graph memory nodes, and cuMemGetInfo as a
 * cross-check of the computed footprint at its new peaks (rate-limited) and at
 * out-of-memory failures. They go straight to the real driver (cf_driver), never
 * while a record lock is held, never on a capturing stream. Every result is an
 * event, so a replay of the trace sees the same values. Without a driver (unit
 * tests) nothing is sampled. */
#include "base/ctx_state.h"
#include "base/real.h"
#include "base/log.h"
#include "record/internal.h"

#define FINAL_POOLS_MAX 256

static uint64_t interval_ns = 10u * 1000000u;

/* CUDA cannot be used in a child forked from a process that used it: the driver's
 * locks may belong to threads that did not survive the fork (the driver may hang),
 * and a real driver fails every call. Such a child keeps the samples its parent
 * took before the fork and takes no more. A child forked before the parent made
 * any CUDA call owns a driver of its own and samples as usual. */
static bool driver_of_parent;

/* Atomic although only the child writes it: ThreadSanitizer does not know that
 * the parent's threads are gone in the child, and reports their earlier reads. */
static void forget_parent_driver_in_child(void)
{
    if (cf_thread_any_activity()) __atomic_store_n(&driver_of_parent, true, __ATOMIC_RELAXED);
}

static bool may_call_driver(void)
{
    return !__atomic_load_n(&driver_of_parent, __ATOMIC_RELAXED);
}

void cf_sample_configure(uint64_t ns)
{
    interval_ns = ns;
    pthread_atfork(NULL, NULL, forget_parent_driver_in_child);
}

int cf_sample_resolve_device(int device)
{
    if (device >= 0) return device;
    if (!may_call_driver()) return 0;
    int d = cf_current_device();
    return d >= 0 ? d : 0;
}

/* A capturing stream must not see driver calls that are not part of the capture;
 * a global-mode capture on another thread forbids them too, so any capture in
 * progress counts. A stream whose state cannot be told counts as capturing (the
 * one error policy of base/ctx_state.h); a driver without cuStreamIsCapturing
 * predates stream capture, so nothing captures there unless a begin was seen. */
static bool stream_capturing(uint64_t stream)
{
    return cf_capture_in_progress() || cf_stream_capturing((CUstream)(uintptr_t)stream, false);
}

/* cuMemGetInfo answers for the calling thread's current device only. */
static bool current_device_is(int device)
{
    return cf_current_device() == device;
}

static void store_meminfo(int device, uint64_t used, uint64_t total)
{
    uint64_t now = cf_now_ns();
    struct cf_event e = {.type = CF_EV_MEMINFO, .device = device, .t_ns = now, .v = {used, total}};
    e.seq = cf_fp_meminfo(device, used, total, now);
    cf_emit(&e);
}

CF_COLD static void sample_footprint(const struct cf_driver *drv, int device)
{
    size_t free_b, total_b;
    if (drv->cuMemGetInfo == NULL || !current_device_is(device)) return;
    if (drv->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) return;
    store_meminfo(device, total_b - free_b, total_b);
}

static void sample_pool(const struct cf_driver *drv, uint64_t pool, int device, uint64_t now)
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
    cf_pool_store_sample(pool, device, &s, now);
}

/* Claims the device's cross-check slot at a new footprint peak, at most once per
 * interval. */
static bool claim_device_slot(struct cf_device_stats *d, uint64_t now)
{
    uint64_t last = __atomic_load_n(&d->last_sample_ns, __ATOMIC_RELAXED);
    if (last != 0 && now - last < interval_ns) return false;
    return __atomic_compare_exchange_n(&d->last_sample_ns, &last, now, false, __ATOMIC_RELAXED,
                                       __ATOMIC_RELAXED);
}

/* The pool's reserved bytes alone: one driver call, an event only on a change. */
CF_HOT static void read_reserved(const struct cf_driver *drv, uint64_t pool, int device,
                                 uint64_t last, uint64_t now)
{
    cuuint64_t v;
    if (drv->cuMemPoolGetAttribute((CUmemoryPool)(uintptr_t)pool,
                                   CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS ||
        v == last)
        return;
    cf_pool_store_reserved(pool, device, v, now);
}

/* ---- the read an allocation can do without ----
 * A pool grows only when no free block can serve a request, and a block given back
 * by a stream-ordered free is usable by the freeing stream at once. So when a
 * thread's last allocation or free was such a free, and it now allocates from the
 * same pool on the same stream (cf_stream_key: the default stream is the legacy
 * or the thread's own one) at most that many bytes (and at least
 * half, so that no size class of the driver's can tell them apart), the pool did
 * not grow -- unless, since that free, the block was given back to the device (a
 * synchronization or a trim: cf_pool_skip.changes), its pool or stream destroyed (the
 * contexts' generation), or taken by another thread (the rule holds while a single
 * thread allocates from pools; the second one marks cf_pool_skip.thread before its real
 * call). Such an allocation skips its read, except 1 in VERIFY_EVERY, which reads
 * anyway; a pool found grown there turns the skip off for the rest of the run. A
 * loop of same-size stream-ordered pairs then reads the pool once per VERIFY_EVERY
 * allocations instead of at each one (a driver call of about 45 ns on an H200). */
#define VERIFY_EVERY 16u

struct reuse {
    uint64_t pool, stream, bytes; /* pool 0: nothing to reuse */
    uint64_t changes;
    unsigned gen;
    unsigned allocs; /* this thread's skip-eligible allocations: which to verify */
};
static __thread struct reuse reuse __attribute__((tls_model("initial-exec")));
struct cf_pool_skip cf_pool_skip __attribute__((aligned(64)));
__thread char cf_thread_token __attribute__((tls_model("initial-exec")));

void cf_sample_thread_seen(void)
{
    uintptr_t none = 0, me = (uintptr_t)&cf_thread_token;
    if (!__atomic_compare_exchange_n(&cf_pool_skip.thread, &none, me, false, __ATOMIC_SEQ_CST,
                                     __ATOMIC_SEQ_CST) &&
        none != me)
        __atomic_store_n(&cf_pool_skip.thread, CF_POOL_THREADS_MANY, __ATOMIC_SEQ_CST);
}

void cf_sample_pools_may_shrink(void)
{
    __atomic_add_fetch(&cf_pool_skip.changes, 1, __ATOMIC_SEQ_CST);
}

void cf_sample_pool_freed(const struct cf_alloc *a, uint64_t stream)
{
    if (a == NULL || a->kind != CF_KIND_POOL || a->arena || a->pool == 0 || stream == 0) {
        reuse.pool = 0;
        return;
    }
    reuse.pool = a->pool;
    reuse.stream = stream;
    reuse.bytes = a->requested;
    reuse.changes = __atomic_load_n(&cf_pool_skip.changes, __ATOMIC_SEQ_CST);
    reuse.gen = cf_ctx_generation();
}

/* Whether a's pool cannot have grown (above); consumes the thread's freed block. */
static bool block_reused(const struct cf_alloc_brief *a)
{
    uint64_t pool = reuse.pool;
    reuse.pool = 0;
    if (pool == 0 || pool != a->pool || reuse.stream != a->stream || a->size > reuse.bytes ||
        a->size < reuse.bytes / 2)
        return false;
    /* Loads after the real call: a release, a destruction or another thread's
     * allocation that could have taken the block was counted before it. */
    return reuse.gen != 0 && reuse.gen == cf_ctx_generation() &&
           reuse.changes == __atomic_load_n(&cf_pool_skip.changes, __ATOMIC_SEQ_CST) &&
           __atomic_load_n(&cf_pool_skip.thread, __ATOMIC_SEQ_CST) == (uintptr_t)&cf_thread_token &&
           !__atomic_load_n(&cf_pool_skip.off, __ATOMIC_RELAXED);
}

/* A verified skip: reserved bytes other than the last known prove the rule wrong
 * for this driver (grown: the block did not serve; shrunk: it went back unseen). */
static void verify_reuse(const struct cf_driver *drv, uint64_t pool, int device, uint64_t last,
                         uint64_t now)
{
    cuuint64_t v;
    if (drv->cuMemPoolGetAttribute((CUmemoryPool)(uintptr_t)pool,
                                   CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &v) != CUDA_SUCCESS)
        return;
    if (v == last) return;
    if (!__atomic_exchange_n(&cf_pool_skip.off, true, __ATOMIC_RELAXED))
        cf_log("a stream-ordered pool %s where the block freed just before on the same stream "
               "should have served the request: every allocation from a pool reads the pool "
               "from now on",
               v > last ? "grew" : "shrank");
    cf_pool_store_reserved(pool, device, v, now);
}

static uint64_t peak_of(int device)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return 0;
    return __atomic_load_n(&cf_rec.dev[device].peak_footprint, __ATOMIC_RELAXED);
}

/* Which reads the pool an allocation came from needs: none, its reserved bytes,
 * or all its attributes (want); verify: a skipped read taken anyway. */
CF_HOT static enum cf_pool_read pool_read_wanted(const struct cf_alloc_brief *a, uint64_t now,
                                                 uint64_t *last, bool *verify)
{
    *verify = false;
    if (a->kind != CF_KIND_POOL || a->pool == 0) {
        reuse.pool = 0;
        return CF_POOL_READ_NONE;
    }
    enum cf_pool_read want = cf_pool_wants_read(a->pool, a->device, now, interval_ns, last);
    if (want == CF_POOL_READ_RESERVED && block_reused(a)) {
        *verify = ++reuse.allocs % VERIFY_EVERY == 0;
        return CF_POOL_READ_NONE;
    }
    reuse.pool = 0;
    return want;
}

CF_HOT enum cf_pool_grew cf_sample_before_alloc(const struct cf_alloc_brief *a, uint64_t now)
{
    uint64_t last = 0;
    bool verify;
    enum cf_pool_read want = pool_read_wanted(a, now, &last, &verify);
    if ((!want && !verify) || !may_call_driver()) return CF_POOL_SAME;
    const struct cf_driver *drv = cf_driver();
    if (drv->cuMemPoolGetAttribute == NULL) return CF_POOL_SAME;
    if (stream_capturing(a->stream)) {
        __atomic_add_fetch(&cf_rec.capture_skips, 1, __ATOMIC_RELAXED);
        return CF_POOL_CAPTURING;
    }
    /* Stamped with the allocation's time: the growth that served it is as old. */
    uint64_t before = peak_of(a->device);
    if (want == CF_POOL_READ_ALL) sample_pool(drv, a->pool, a->device, now);
    if (want == CF_POOL_READ_RESERVED) read_reserved(drv, a->pool, a->device, last, now);
    if (verify) verify_reuse(drv, a->pool, a->device, last, now);
    return peak_of(a->device) > before ? CF_POOL_NEW_PEAK : CF_POOL_SAME;
}

/* The pool's growth was read before: it is part of the footprint the cross-check
 * reads, and may itself have been the new peak to check. */
CF_HOT void cf_sample_after_alloc(const struct cf_alloc_brief *a, bool new_peak,
                                  enum cf_pool_grew pool, uint64_t now)
{
    /* The rate limit comes first: cf_driver() is not free while libcuda is absent. */
    if (pool == CF_POOL_CAPTURING || (!new_peak && pool != CF_POOL_NEW_PEAK) || a->device < 0 ||
        a->device >= CF_MAX_DEVICES || !claim_device_slot(&cf_rec.dev[a->device], now) ||
        !may_call_driver())
        return;
    const struct cf_driver *drv = cf_driver();
    if (stream_capturing(a->stream)) {
        __atomic_add_fetch(&cf_rec.capture_skips, 1, __ATOMIC_RELAXED);
        return;
    }
    sample_footprint(drv, a->device);
}

void cf_sample_pool_now(uint64_t pool, int device)
{
    if (!may_call_driver()) return;
    const struct cf_driver *drv = cf_driver();
    if (drv->cuMemPoolGetAttribute) sample_pool(drv, pool, device, cf_now_ns());
}

void cf_sample_after_sync(void)
{
    cf_sample_pools_may_shrink();
    if (!may_call_driver() || cf_capture_in_progress()) return;
    const struct cf_driver *drv = cf_driver();
    if (drv->cuMemPoolGetAttribute == NULL) return;
    uint64_t pools[FINAL_POOLS_MAX];
    unsigned n = cf_pool_handles(pools, FINAL_POOLS_MAX);
    for (unsigned i = 0; i < n; i++) {
        struct cf_pool *p = cf_pool_get(pools[i], -1);
        if (p == NULL) continue;
        uint64_t reserved = __atomic_load_n(&p->reserved_cur, __ATOMIC_RELAXED);
        if (reserved > __atomic_load_n(&p->release_threshold, __ATOMIC_RELAXED))
            read_reserved(drv, pools[i], __atomic_load_n(&p->device, __ATOMIC_RELAXED), reserved,
                          cf_now_ns());
    }
}

void cf_sample_oom(uint64_t stream, int device, uint64_t *free_out, uint64_t *total_out)
{
    cf_sample_pools_may_shrink(); /* the driver may free idle pool memory for a request */
    const struct cf_driver *drv = may_call_driver() ? cf_driver() : NULL;
    size_t free_b = 0, total_b = 0;
    if (drv && drv->cuMemGetInfo && !stream_capturing(stream) && current_device_is(device))
        if (drv->cuMemGetInfo(&free_b, &total_b) != CUDA_SUCCESS) free_b = total_b = 0;
    *free_out = free_b;
    *total_out = total_b;
}

/* The graph pool's current figures are a footprint series; its high-water marks
 * are kept for the report's graph section. */
static void sample_graph_device(const struct cf_driver *drv, int i)
{
    CUdevice dev;
    cuuint64_t v[4] = {0};
    static const CUgraphMem_attribute attrs[4] = {
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT,
        CU_GRAPH_MEM_ATTR_RESERVED_MEM_HIGH, CU_GRAPH_MEM_ATTR_USED_MEM_HIGH};
    if (drv->cuDeviceGet(&dev, i) != CUDA_SUCCESS) return;
    for (unsigned k = 0; k < 4; k++)
        if (drv->cuDeviceGetGraphMemAttribute(dev, attrs[k], &v[k]) != CUDA_SUCCESS) return;
    uint64_t now = cf_now_ns();
    struct cf_event e = {.type = CF_EV_GRAPH_HIGH, .device = i, .t_ns = now, .v = {v[2], v[3]}};
    cf_apply_graph_high(&e);
    cf_emit(&e);
    if (v[0] == cf_rec.dev[i].graph_reserved && v[1] == cf_rec.dev[i].graph_used) return;
    uint64_t seq = cf_fp_series(i, CF_SERIES_GRAPH, (int64_t)v[0], v[1], now);
    cf_trace_series(seq, now, i, CF_SERIES_GRAPH, v[0], v[1]);
}

static void sample_graph_memory(const struct cf_driver *drv)
{
    if (drv->cuDeviceGet == NULL || drv->cuDeviceGetGraphMemAttribute == NULL) return;
    for (int i = 0; i < CF_MAX_DEVICES; i++)
        if (__atomic_load_n(&cf_rec.dev[i].seen, __ATOMIC_RELAXED) || cf_rec.graph.reserved_high[i])
            sample_graph_device(drv, i);
}

/* After a graph launch the graph pool may have grown: read it, exactly, once the
 * program has graph memory nodes (programs without them pay nothing). Never on
 * a capturing stream. */
void cf_sample_graph_launched(uint64_t stream)
{
    if (!may_call_driver() || __atomic_load_n(&cf_rec.graph.alloc_nodes, __ATOMIC_RELAXED) == 0)
        return;
    const struct cf_driver *drv = cf_driver();
    int dev = cf_current_device();
    if (drv->cuDeviceGet == NULL || drv->cuDeviceGetGraphMemAttribute == NULL || dev < 0 ||
        dev >= CF_MAX_DEVICES)
        return;
    if (stream_capturing(stream)) {
        __atomic_add_fetch(&cf_rec.capture_skips, 1, __ATOMIC_RELAXED);
        return;
    }
    sample_graph_device(drv, dev);
}

bool cf_sample_final(void)
{
    if (!may_call_driver()) return false;
    const struct cf_driver *drv = cf_driver();
    /* The pools and the graph pool first: the driver gives idle chunks back at
     * synchronizations, unseen until read, and the last cross-check sample must
     * be held against the footprint of its own instant. */
    if (drv->cuMemPoolGetAttribute) {
        uint64_t pools[FINAL_POOLS_MAX];
        unsigned n = cf_pool_handles(pools, FINAL_POOLS_MAX);
        for (unsigned i = 0; i < n; i++)
            sample_pool(drv, pools[i], -1, cf_now_ns());
    }
    sample_graph_memory(drv);
    int dev = cf_current_device();
    if (dev >= 0 && dev < CF_MAX_DEVICES) sample_footprint(drv, dev);
    return true;
}
