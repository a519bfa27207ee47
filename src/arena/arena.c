/* The cf_arena_* API: switches, device selection, context handling, statistics.
 * The per-device work is in arena_dev.c and arena_reclaim.c. */
#include "arena/arena.h"
#include "arena/hostmem.h"

#include "arena/arena_dev.h"
#include "arena/shadow.h"
#include "base/clock.h"
#include "base/ctx_state.h"
#include "config/config.h"
#include "base/real.h"
#include "base/export.h"
#include "base/lockwait.h"
#include "base/log.h"

#include <string.h>

/* devs[device][part]; part 0's state is the device's, nparts[device] parts are in use. */
static struct cf_dev_arena devs[CF_ARENA_MAX_DEVICES][CF_ARENA_PARTS];
static unsigned nparts[CF_ARENA_MAX_DEVICES];
static struct cf_dev_totals totals[CF_ARENA_MAX_DEVICES];
/* Parts are handed out lazily: every thread starts on part 0 and moves to a
 * part of its own only once it found its part's lock taken, so a program
 * whose threads do not allocate concurrently keeps all its memory in one part
 * (each part maps its own granules: spreading a small program over 16 parts
 * would leave 16 partly used edges mapped). */
static unsigned parts_used = 1;
static __thread unsigned tl_slot;
__thread bool cf_arena_contended;
static pthread_mutex_t start_lock = PTHREAD_MUTEX_INITIALIZER;
static int arena_state; /* CF_DEV_UNTRIED / READY / FAILED: the arena as a whole */

/* Driver entry points the arena needs beyond struct cf_driver. */
static struct {
    PFN_cuInit_v2000 cuInit;
    PFN_cuCtxSetCurrent_v4000 cuCtxSetCurrent;
    PFN_cuCtxPushCurrent_v4000 cuCtxPushCurrent;
    PFN_cuCtxPopCurrent_v4000 cuCtxPopCurrent;
} extra;

/* Which arena the thread's current context belongs to: saves the device lookup and
 * the part choice per allocation. */
static __thread CUcontext tl_ctx;
static __thread struct cf_dev_arena *tl_arena;

uint64_t cf_arena_slack(const struct cf_dev_arena *d)
{
    unsigned used = __atomic_load_n(&parts_used, __ATOMIC_RELAXED);
    unsigned n = nparts[d->bk.dev];
    if (used > n) used = n;
    uint64_t slack = cf_opt_size(CF_OPT_ARENA_SLACK);
    /* At least the configured slack, up to the device's live peak. Idle memory is
     * given back before the arena maps past its high-water mark, so a larger slack
     * does not raise the peak; a small one made a training loop that frees and
     * re-allocates gigabytes per step unmap and map again every step (transformer
     * trace: 7-8 driver calls per allocation with 64 MiB, 0.97 with half the
     * peak, 0.14 with the peak; peak mapped / peak live 1.011). */
    uint64_t peak = __atomic_load_n(&d->tot->peak_live, __ATOMIC_RELAXED);
    if (slack != 0 && peak > slack) slack = peak;
    uint64_t share = slack / (used ? used : 1);
    /* Below a few granules per part, every quarantine batch would be unmapped
     * and mapped again (measured: 10x the driver calls with 16 threads). */
    if (share < CF_ARENA_MIN_SHARE && slack >= CF_ARENA_MIN_SHARE) share = CF_ARENA_MIN_SHARE;
    return share;
}

/* By exported name first (the ABI of the PFN type), else through cuGetProcAddress. */
static void *proc(const char *export, const char *name, int version)
{
    void *fn = cf_real_driver_sym(export);
    CUdriverProcAddressQueryResult st;
    if (fn == NULL && cf_driver()->cuGetProcAddress &&
        cf_driver()->cuGetProcAddress(name, &fn, version, CU_GET_PROC_ADDRESS_DEFAULT, &st) !=
            CUDA_SUCCESS)
        fn = NULL;
    return fn;
}

/* Everything the arena calls must exist, or it stays off. */
static bool driver_complete(void)
{
    const struct cf_driver *drv = cf_driver();
    if (!drv->cuCtxGetCurrent || !drv->cuCtxGetDevice || !drv->cuDevicePrimaryCtxRetain ||
        !drv->cuDeviceGet || !drv->cuCtxSynchronize || !drv->cuEventCreate || !drv->cuEventRecord ||
        !drv->cuEventQuery || !drv->cuStreamWaitEvent)
        return false;
    extra.cuInit = (PFN_cuInit_v2000)proc("cuInit", "cuInit", 2000);
    extra.cuCtxSetCurrent =
        (PFN_cuCtxSetCurrent_v4000)proc("cuCtxSetCurrent", "cuCtxSetCurrent", 4000);
    extra.cuCtxPushCurrent =
        (PFN_cuCtxPushCurrent_v4000)proc("cuCtxPushCurrent_v2", "cuCtxPushCurrent", 4000);
    extra.cuCtxPopCurrent =
        (PFN_cuCtxPopCurrent_v4000)proc("cuCtxPopCurrent_v2", "cuCtxPopCurrent", 4000);
    return extra.cuInit && extra.cuCtxSetCurrent && extra.cuCtxPushCurrent && extra.cuCtxPopCurrent;
}

/* Whole-arena start: the switch and the driver. While libcuda is not loaded
 * yet the answer is "not now" (the call passes through) rather than "never". */
CF_HOT static bool arena_ready(void)
{
    int st = __atomic_load_n(&arena_state, __ATOMIC_ACQUIRE);
    if (st != CF_DEV_UNTRIED) return st == CF_DEV_READY;
    if (!cf_opt_bool(CF_OPT_ARENA)) {
        __atomic_store_n(&arena_state, CF_DEV_FAILED, __ATOMIC_RELEASE);
        return false;
    }
    if (cf_driver()->cuCtxGetCurrent == NULL) return false;
    pthread_mutex_lock(&start_lock);
    if (arena_state == CF_DEV_UNTRIED) {
        bool ok = driver_complete();
        if (!ok)
            cf_log("arena: the CUDA driver lacks entry points the arena needs; "
                   "CUDAFRAG_ARENA is off and allocations go to CUDA as usual");
        __atomic_store_n(&arena_state, ok ? CF_DEV_READY : CF_DEV_FAILED, __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&start_lock);
    return arena_state == CF_DEV_READY;
}

/* No context is current: do what the runtime does at its first call, i.e. make
 * device 0's primary context current. */
static CUcontext adopt_primary_context(void)
{
    CUcontext ctx = NULL;
    CUdevice dev = 0;
    if (extra.cuInit(0) != CUDA_SUCCESS || cf_driver()->cuDeviceGet(&dev, 0) != CUDA_SUCCESS ||
        cf_driver()->cuDevicePrimaryCtxRetain(&ctx, dev) != CUDA_SUCCESS)
        return NULL;
    CUresult rc = extra.cuCtxSetCurrent(ctx);
    cf_ctx_thread_changed(); /* our own switch does not pass through the wrappers */
    return rc == CUDA_SUCCESS ? ctx : NULL;
}

static CUresult start_parts(CUdevice dev, CUcontext ctx)
{
    unsigned n = CF_ARENA_PARTS;
    CUresult rc = cf_dev_start(&devs[dev][0], dev, ctx, &n);
    if (rc != CUDA_SUCCESS) return rc;
    devs[dev][0].tot = &totals[dev];
    for (unsigned k = 1; k < n; k++) {
        if (cf_dev_start_part(&devs[dev][k], &devs[dev][0], k) != 0) {
            n = k; /* host memory ran out: fewer parts still work */
            break;
        }
        devs[dev][k].tot = &totals[dev];
        devs[dev][k].state = CF_DEV_READY;
    }
    nparts[dev] = n;
    return CUDA_SUCCESS;
}

static void grant_early_peers(int dev, CUcontext ctx);

static struct cf_dev_arena *start_device(CUdevice dev, CUcontext ctx)
{
    struct cf_dev_arena *d = &devs[dev][0];
    pthread_mutex_lock(&start_lock);
    if (d->state == CF_DEV_UNTRIED) {
        CUresult rc = start_parts(dev, ctx);
        if (rc == CUDA_SUCCESS) grant_early_peers(dev, ctx);
        if (rc != CUDA_SUCCESS)
            cf_log("arena: cannot start on device %d (error %d); its allocations go to CUDA "
                   "as usual",
                   (int)dev, (int)rc);
        __atomic_store_n(&d->state, rc == CUDA_SUCCESS ? CF_DEV_READY : CF_DEV_FAILED,
                         __ATOMIC_RELEASE);
    }
    pthread_mutex_unlock(&start_lock);
    return d->state == CF_DEV_READY ? d : NULL;
}

static bool device_ready(int i)
{
    return __atomic_load_n(&devs[i][0].state, __ATOMIC_ACQUIRE) == CF_DEV_READY;
}

/* Peer contexts granted before their device's arena started: (context, reader). */
#define MAX_EARLY_PEERS 64
static struct {
    CUcontext ctx;
    int reader;
} early_peers[MAX_EARLY_PEERS];
static unsigned nearly_peers;

static void grant_parts(int owner, int reader)
{
    cf_backing_add_reader(owner, reader);
    CUresult first = CUDA_SUCCESS;
    for (unsigned k = 0; k < nparts[owner]; k++) {
        struct cf_dev_arena *d = &devs[owner][k];
        pthread_mutex_lock(&d->grow);
        CUresult rc = cf_backing_grant(&d->bk, reader);
        pthread_mutex_unlock(&d->grow);
        if (first == CUDA_SUCCESS) first = rc;
    }
    if (first != CUDA_SUCCESS)
        cf_log("arena: device %d cannot be given access to device %d's arena memory (error %d)",
               reader, owner, (int)first);
}

void cf_arena_peer_access(CUcontext peer, int reader)
{
    if (peer == NULL || reader < 0) return;
    pthread_mutex_lock(&start_lock);
    bool found = false;
    for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++) {
        if (device_ready(i) && devs[i][0].bk.ctx == peer) {
            grant_parts(i, reader);
            found = true;
        }
    }
    if (!found && nearly_peers < MAX_EARLY_PEERS)
        early_peers[nearly_peers++] = (__typeof__(early_peers[0])){peer, reader};
    pthread_mutex_unlock(&start_lock);
}

/* Under start_lock, once dev's arena runs on ctx. */
static void grant_early_peers(int dev, CUcontext ctx)
{
    for (unsigned i = 0; i < nearly_peers; i++)
        if (early_peers[i].ctx == ctx) cf_backing_add_reader(dev, early_peers[i].reader);
}

/* The arena of the calling thread's current device, started on first use. */
static struct cf_dev_arena *current_arena(void)
{
    CUcontext ctx = NULL;
    if (cf_current_context(&ctx) != CUDA_SUCCESS) return NULL;
    if (ctx != NULL && ctx == tl_ctx) return tl_arena;
    if (ctx == NULL && (ctx = adopt_primary_context()) == NULL) return NULL;
    int dev = cf_current_device();
    if (dev < 0 || dev >= CF_ARENA_MAX_DEVICES) return NULL;
    if (!device_ready(dev) && start_device(dev, ctx) == NULL) return NULL;
    tl_ctx = ctx;
    tl_arena = &devs[dev][tl_slot % nparts[dev]];
    return tl_arena;
}

void cf_arena_stream_destroyed(CUstream stream)
{
    cf_dev_streams_destroying(true);
    for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++)
        if (device_ready(i))
            for (unsigned k = 0; k < nparts[i]; k++)
                cf_dev_stamp_stream(&devs[i][k], stream);
    cf_dev_streams_destroying(false);
}

CUresult cf_arena_stream_synchronize(CUstream stream, CUresult(CUDAAPI *sync)(CUstream))
{
    /* The default streams' handles name a different stream per thread or per
     * mode of compilation: only real stream handles are matched. */
    if ((uintptr_t)stream <= (uintptr_t)CU_STREAM_PER_THREAD ||
        __atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) != CF_DEV_READY)
        return sync(stream);
    struct cf_blist taken = {0};
    struct {
        struct cf_dev_arena *d;
        uint64_t n;
    } from[CF_ARENA_MAX_DEVICES * CF_ARENA_PARTS];
    int nfrom = 0;
    for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++) {
        if (!device_ready(i)) continue;
        for (unsigned k = 0; k < nparts[i]; k++) {
            uint64_t before = taken.count;
            cf_dev_sync_begin(&devs[i][k], stream, &taken);
            if (taken.count > before)
                from[nfrom++] = (typeof(from[0])){&devs[i][k], taken.count - before};
        }
    }
    CUresult rc = sync(stream);
    for (int j = 0; j < nfrom; j++)
        cf_dev_sync_end(from[j].d, &taken, from[j].n, rc == CUDA_SUCCESS);
    return rc;
}

void cf_arena_reclaim_device(const struct cf_dev_arena *d)
{
    int dev = (int)d->bk.dev;
    for (unsigned k = 0; k < nparts[dev]; k++) {
        cf_dev_drain(&devs[dev][k]);
        cf_dev_trim(&devs[dev][k], true);
    }
}

void cf_arena_trim_device_for_peak(struct cf_dev_arena *d, uint64_t need)
{
    cf_dev_trim_for_peak(d, need, need);
    int dev = (int)d->bk.dev;
    for (unsigned k = 0; k < nparts[dev]; k++) {
        struct cf_dev_arena *other = &devs[dev][k];
        if (other == d) continue;
        uint64_t mapped = __atomic_load_n(&d->tot->mapped, __ATOMIC_RELAXED);
        if (mapped + need <= __atomic_load_n(&d->tot->peak_mapped, __ATOMIC_RELAXED)) break;
        cf_dev_trim_for_peak(other, need, 0);
    }
}

/* The arena's own push and pop do not pass through the wrappers: the kept
 * current context and device of the thread are dropped by hand. */
CUcontext cf_arena_ctx_enter(const struct cf_dev_arena *d)
{
    CUcontext cur = NULL;
    (void)cf_current_context(&cur);
    if (cur == d->bk.ctx) return NULL;
    CUresult rc = extra.cuCtxPushCurrent(d->bk.ctx);
    cf_ctx_thread_changed();
    return rc == CUDA_SUCCESS ? d->bk.ctx : NULL;
}

void cf_arena_ctx_leave(CUcontext pushed)
{
    CUcontext popped;
    if (pushed == NULL) return;
    extra.cuCtxPopCurrent(&popped);
    cf_ctx_thread_changed();
}

bool cf_arena_capturing(CUstream stream)
{
    return cf_stream_capturing(stream, false);
}

bool cf_arena_enabled(void)
{
    return arena_ready() && current_arena() != NULL;
}

bool cf_arena_async_enabled(void)
{
    return cf_opt_bool(CF_OPT_ARENA_ASYNC) && cf_arena_enabled();
}

/* The thread met another one on its part's lock: give it a part of its own
 * while unused ones remain, else move it to the next part in use. */
static void move_part(const struct cf_dev_arena *d)
{
    unsigned used = __atomic_load_n(&parts_used, __ATOMIC_RELAXED);
    if (used < nparts[d->bk.dev] && __atomic_compare_exchange_n(&parts_used, &used, used + 1, false,
                                                                __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        tl_slot = used;
    else
        tl_slot = (tl_slot + 1) % (used < nparts[d->bk.dev] ? used : nparts[d->bk.dev]);
    tl_ctx = NULL; /* the next allocation looks its part up again */
}

/* Buffer ids of arena blocks: unique for the process's lifetime like the
 * driver's, from a range the driver's counters do not reach. */
static uintptr_t next_buffer_id(void)
{
    static uint64_t last;
    return (uintptr_t)((uint64_t)1 << 63 | __atomic_add_fetch(&last, 1, __ATOMIC_RELAXED));
}

CUresult cf_arena_alloc(CUdeviceptr *out, uint64_t size, CUstream stream, bool async,
                        uint64_t *granted)
{
    if (size == 0 || tlsf_round(size) == 0 || !arena_ready()) return CUDA_ERROR_NOT_SUPPORTED;
    uint64_t t0 = cf_now_ns();
    /* Work being captured into a graph must get graph-owned memory: pass through. */
    if (cf_arena_capturing(async ? stream : CU_STREAM_LEGACY)) return CUDA_ERROR_NOT_SUPPORTED;
    struct cf_dev_arena *d = current_arena();
    if (d == NULL) return CUDA_ERROR_NOT_SUPPORTED;
    struct tlsf_block *b = NULL;
    CUresult rc = cf_dev_alloc(d, size, stream, async, &b);
    if (CF_UNLIKELY(cf_arena_contended)) {
        cf_arena_contended = false;
        move_part(d);
    }
    if (rc == CUDA_SUCCESS) {
        /* No other thread can know the address yet: no lock needed. */
        b->user[0] = CF_BLOCK_WORD(size, async);
        b->user[1] = next_buffer_id();
        *out = (CUdeviceptr)b->addr;
        if (granted) *granted = b->size;
    }
    __atomic_fetch_add(&d->ns_alloc, cf_now_ns() - t0, __ATOMIC_RELAXED);
    return rc;
}

static struct cf_dev_arena *owner(CUdeviceptr ptr)
{
    for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++) {
        if (!device_ready(i)) continue;
        const struct cf_backing *bk = &devs[i][0].bk;
        if (bk->vmm) {
            /* The parts split one reservation evenly: no search. */
            if (ptr >= bk->va_base && ptr < bk->va_base + (uint64_t)nparts[i] * bk->reserve)
                return &devs[i][(ptr - bk->va_base) / bk->reserve];
            continue;
        }
        for (unsigned k = 0; k < nparts[i]; k++)
            if (cf_dev_owns(&devs[i][k], ptr)) return &devs[i][k];
    }
    return NULL;
}

bool cf_arena_owns(CUdeviceptr ptr)
{
    if (__atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) != CF_DEV_READY || ptr == 0) return false;
    return owner(ptr) != NULL;
}

CUdeviceptr cf_arena_unknown_ptr(void)
{
    static const char not_device_memory;
    return (CUdeviceptr)(uintptr_t)&not_device_memory;
}

CUdeviceptr cf_arena_refused_ptr(CUdeviceptr ptr)
{
    struct cf_dev_arena *d = owner(ptr);
    return d != NULL && d->bk.vmm ? ptr : cf_arena_unknown_ptr();
}

/* Start of the allocation an interior query last found, per part (under the
 * part's lock): a program asking about addresses inside one buffer again and
 * again (a transfer library checking each message) pays the walk once. */
static uint64_t query_hint[CF_ARENA_MAX_DEVICES * CF_ARENA_PARTS];

/* Under lock: the live block holding addr. Blocks are found by their start;
 * an interior address takes a walk along the region's blocks. */
static const struct tlsf_block *live_block_at(const struct cf_dev_arena *d, uint64_t addr)
{
    const struct tlsf_block *b = tlsf_lookup(&d->tlsf, addr);
    if (b) return b;
    uint64_t *hint = &query_hint[d - &devs[0][0]];
    b = *hint ? tlsf_lookup(&d->tlsf, *hint) : NULL;
    if (b && addr - b->addr < b->size) return b;
    for (uint32_t i = 0; i < d->tlsf.nregions; i++) {
        const struct tlsf_region *r = &d->tlsf.regions[i];
        if (addr - r->addr >= r->size) continue;
        for (b = r->first; b && b->addr + b->size <= addr; b = b->phys_next)
            ;
        /* Quarantined and pending blocks are used but no longer published. */
        if (b && b->addr <= addr && b->state == TLSF_USED && tlsf_lookup(&d->tlsf, b->addr) == b) {
            *hint = b->addr;
            return b;
        }
        return NULL;
    }
    return NULL;
}

bool cf_arena_find_block(CUdeviceptr ptr, struct cf_arena_block *out)
{
    if (__atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) != CF_DEV_READY) return false;
    struct cf_dev_arena *d = owner(ptr);
    if (d == NULL) return false;
    cf_dev_lock(d);
    const struct tlsf_block *b = live_block_at(d, ptr);
    if (b) {
        out->base = b->addr;
        out->size = CF_BLOCK_REQUESTED(b);
        out->buffer_id = b->user[1];
    }
    cf_dev_unlock(d);
    /* The bytes asked for: an address past them but inside the rounded block
     * lies in no allocation natively either. */
    return b != NULL && ptr < out->base + out->size;
}

CUresult cf_arena_free(CUdeviceptr ptr, CUstream stream, bool async)
{
    if (__atomic_load_n(&arena_state, __ATOMIC_ACQUIRE) != CF_DEV_READY)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t t0 = cf_now_ns();
    struct cf_dev_arena *d = owner(ptr);
    if (d == NULL) return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = cf_dev_free(d, ptr, stream, async);
    __atomic_fetch_add(&d->ns_free, cf_now_ns() - t0, __ATOMIC_RELAXED);
    return rc;
}

static bool add_device(struct cf_arena_stats *s, struct cf_dev_arena *d, double *frag_peak,
                       const struct timespec *deadline)
{
    if (!cf_mutex_lock_until(&d->lock, deadline)) return false;
    s->vmm = s->vmm || d->bk.vmm;
    s->reserved_now += d->bk.vmm ? d->bk.reserve : d->bk.chunks_bytes;
    s->peak_reserved += d->bk.vmm ? d->bk.reserve : d->peak_mapped;
    s->mapped_now += cf_dev_mapped(d);
    s->live_now += d->live;
    s->granules_mapped += d->granules_mapped;
    s->granules_unmapped += d->granules_unmapped;
    s->driver_calls += d->bk.driver_calls + d->sync_calls;
    s->allocs_served += d->allocs;
    s->frees_served += d->frees;
    s->ooms += d->ooms;
    if (d->peak_mapped > *frag_peak) {
        *frag_peak = (double)d->peak_mapped;
        s->ext_frag_at_peak = d->frag_at_peak;
    }
    cf_dev_unlock(d);
    s->ns_in_alloc += __atomic_load_n(&d->ns_alloc, __ATOMIC_RELAXED);
    s->ns_in_free += __atomic_load_n(&d->ns_free, __ATOMIC_RELAXED);
    return true;
}

void cf_arena_get_stats(struct cf_arena_stats *arena, struct cf_arena_stats *shadow)
{
    cf_arena_get_stats_until(arena, shadow, NULL);
}

void cf_arena_get_stats_until(struct cf_arena_stats *arena, struct cf_arena_stats *shadow,
                              const struct timespec *deadline)
{
    if (arena) {
        memset(arena, 0, sizeof *arena);
        double frag_peak = -1;
        for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++) {
            if (!device_ready(i)) continue;
            arena->active = true;
            for (unsigned k = 0; k < nparts[i]; k++)
                if (!add_device(arena, &devs[i][k], &frag_peak, deadline)) arena->locked_out = true;
            /* The device's concurrent peaks, not the sum of its parts' peaks. */
            arena->peak_live += __atomic_load_n(&totals[i].peak_live, __ATOMIC_RELAXED);
            arena->peak_mapped += __atomic_load_n(&totals[i].peak_mapped, __ATOMIC_RELAXED);
        }
    }
    if (shadow) cf_shadow_stats_until(shadow, deadline);
}

/* VMM: every held block is backed, and each granule's hold count is the
 * number of held blocks touching it. Under lock. */
static int check_holds(const struct cf_dev_arena *d)
{
    const struct cf_gmap *g = &d->bk.gmap;
    uint32_t *expect = cf_host_zalloc(g->count * sizeof *expect);
    int fails = 0;
    if (expect == NULL) return 0;
    for (const struct tlsf_block *b = d->tlsf.regions[0].first; b; b = b->phys_next) {
        if (b->state != TLSF_USED) continue;
        if (!cf_gmap_is_mapped(g, b->addr, b->size)) fails++;
        uint64_t lo = (b->addr - g->base) >> g->shift;
        uint64_t hi = (b->addr - g->base + b->size - 1) >> g->shift;
        for (uint64_t i = lo; i <= hi; i++)
            expect[i]++;
    }
    for (uint64_t i = 0; i < g->count; i++)
        fails += expect[i] != g->refs[i];
    cf_host_free(expect, g->count * sizeof *expect);
    return fails;
}

int cf_arena_check(void)
{
    int fails = 0;
    for (int i = 0; i < CF_ARENA_MAX_DEVICES; i++) {
        if (!device_ready(i)) continue;
        for (unsigned k = 0; k < nparts[i]; k++) {
            struct cf_dev_arena *d = &devs[i][k];
            cf_dev_lock(d);
            fails += tlsf_check(&d->tlsf);
            /* Blocks out of the TLSF: handed out, quarantined or pending. */
            if (d->tlsf.used_bytes != d->live + d->quarantine.bytes + d->pending.bytes) fails++;
            if (d->bk.vmm) fails += check_holds(d);
            cf_dev_unlock(d);
        }
    }
    return fails;
}

uint64_t cf_arena_mapped_now(int device)
{
    if (device < 0 || device >= CF_ARENA_MAX_DEVICES) return 0;
    return __atomic_load_n(&totals[device].mapped, __ATOMIC_RELAXED);
}
