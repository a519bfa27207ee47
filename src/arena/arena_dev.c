#include "arena/arena_dev.h"
#include "arena/hostmem.h"

#include "config/config.h"
#include "base/real.h"

#include <string.h>

/* Quarantine bound: past half the slack share (at least this many bytes) or
 * this many blocks, the freeing thread synchronises once for the whole batch,
 * as cudaFree would have done for each. Half: a drained batch then fits in the
 * slack instead of being unmapped at once. */
#define QUARANTINE_MIN_BYTES ((uint64_t)4 << 20)
#define QUARANTINE_MAX_COUNT 4096
/* Stream-ordered frees: past this many pending blocks (or the same byte bound)
 * the oldest PENDING_POLL get events and are checked. */
#define PENDING_MAX_COUNT 1024
#define PENDING_POLL      64

static uint64_t quarantine_bound(const struct cf_dev_arena *d)
{
    uint64_t bound = cf_arena_slack(d) / 2;
    return bound < QUARANTINE_MIN_BYTES ? QUARANTINE_MIN_BYTES : bound;
}

static void init_locks(struct cf_dev_arena *d)
{
    /* Adaptive: critical sections are short, so a brief spin before sleeping
     * saves futex round trips when threads collide. */
    pthread_mutexattr_t attr;
    pthread_mutexattr_init(&attr);
    pthread_mutexattr_settype(&attr, PTHREAD_MUTEX_ADAPTIVE_NP);
    pthread_mutex_init(&d->lock, &attr);
    pthread_mutexattr_destroy(&attr);
    pthread_mutex_init(&d->grow, NULL);
}

static int init_tlsf(struct cf_dev_arena *d)
{
    if (tlsf_init(&d->tlsf) != 0) return -1;
    if (d->bk.vmm && tlsf_add_region(&d->tlsf, d->bk.base, d->bk.reserve) != 0) {
        tlsf_destroy(&d->tlsf);
        return -1;
    }
    return 0;
}

CUresult cf_dev_start(struct cf_dev_arena *d, CUdevice dev, CUcontext ctx, unsigned *nparts)
{
    memset(d, 0, sizeof *d);
    CUresult rc = cf_backing_init(&d->bk, dev, ctx, cf_opt_size(CF_OPT_ARENA_RESERVE), nparts);
    if (rc != CUDA_SUCCESS) return rc;
    if (init_tlsf(d) != 0) {
        cf_backing_fini(&d->bk);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    init_locks(d);
    return CUDA_SUCCESS;
}

int cf_dev_start_part(struct cf_dev_arena *d, const struct cf_dev_arena *d0, unsigned k)
{
    memset(d, 0, sizeof *d);
    if (cf_backing_init_part(&d->bk, &d0->bk, k) != 0) return -1;
    if (init_tlsf(d) != 0) {
        if (d->bk.vmm) cf_gmap_destroy(&d->bk.gmap);
        cf_host_free(d->bk.handles, d->bk.gmap.count * sizeof *d->bk.handles);
        return -1;
    }
    init_locks(d);
    return 0;
}

uint64_t cf_dev_mapped(const struct cf_dev_arena *d)
{
    return d->bk.vmm ? d->bk.gmap.mapped_bytes : d->bk.chunks_bytes;
}

/* Under lock, after the mapped size grew: new peak, and a fragmentation sample
 * whenever the peak rose by 1/64 since the last one (the scan is O(blocks)). */
static void note_mapped(struct cf_dev_arena *d)
{
    uint64_t mapped = cf_dev_mapped(d);
    if (mapped <= d->peak_mapped) return;
    d->peak_mapped = mapped;
    if (mapped < d->frag_sampled_at + d->frag_sampled_at / 64) return;
    d->frag_sampled_at = mapped;
    if (d->bk.vmm) {
        d->frag_at_peak = cf_gmap_ext_frag(&d->bk.gmap, d->tlsf.regions[0].first);
    } else {
        uint64_t largest = tlsf_largest_free(&d->tlsf);
        d->frag_at_peak = d->tlsf.free_bytes ? 1.0 - (double)largest / d->tlsf.free_bytes : 0;
    }
}

/* Growing by size would lift the device's mapped high-water mark. */
static bool raises_peak(const struct cf_dev_arena *d, uint64_t size)
{
    uint64_t need = (size + d->bk.granule - 1) & ~(d->bk.granule - 1);
    return __atomic_load_n(&d->tot->mapped, __ATOMIC_RELAXED) + need >
           __atomic_load_n(&d->tot->peak_mapped, __ATOMIC_RELAXED);
}

/* Under lock: b leaves the TLSF for the application. */
void cf_dev_hand_out(struct cf_dev_arena *d, struct tlsf_block *b)
{
    d->live += b->size;
    if (d->live > d->peak_live) d->peak_live = d->live;
    d->allocs++;
    cf_totals_add(&d->tot->live, &d->tot->peak_live, (int64_t)b->size);
}

/* Take a block that needs no new backing, or NULL. With may_grow, also one
 * that does (*unmapped = true): the caller maps it. */
static struct tlsf_block *take(struct cf_dev_arena *d, uint64_t size, CUstream stream, bool async,
                               bool may_grow, bool *unmapped)
{
    struct tlsf_block *b = NULL;
    *unmapped = false;
    cf_dev_lock_noting(d);
    if (async && d->pending.count) b = cf_dev_reuse_same_stream(d, size, stream);
    if (b == NULL && (b = tlsf_alloc(&d->tlsf, size)) != NULL) {
        if (d->bk.vmm) {
            cf_gmap_hold(&d->bk.gmap, b->addr, b->size, +1);
            *unmapped = !cf_gmap_is_mapped(&d->bk.gmap, b->addr, b->size);
        }
        if (*unmapped && !may_grow) {
            cf_dev_release(d, b);
            b = NULL;
            *unmapped = false;
        }
    }
    if (b && !*unmapped) cf_dev_hand_out(d, b);
    cf_dev_unlock(d);
    return b;
}

/* Back every unmapped granule b touches. Other threads may map some of them
 * meanwhile; the grow mutex makes each granule get mapped once. */
static CUresult map_block(struct cf_dev_arena *d, struct tlsf_block *b)
{
    CUresult rc = CUDA_SUCCESS;
    uint64_t run, bytes, at = b->addr, end = b->addr + b->size;
    pthread_mutex_lock(&d->grow);
    /* From where the last run ended (granules before it stay mapped: b holds
     * them and trims take the grow mutex): a block of many chunks is scanned once. */
    while (at < end) {
        cf_dev_lock(d);
        bool more = cf_gmap_next_unmapped(&d->bk.gmap, at, end - at, &run, &bytes);
        cf_dev_unlock(d);
        if (!more) break;
        rc = cf_backing_map(&d->bk, run, bytes);
        /* One physical allocation per run needs that much contiguous physical
         * memory where the device has it only in pieces: stitch the run from
         * single granules instead -- the point of backing the arena with VMM. */
        if (rc == CUDA_ERROR_OUT_OF_MEMORY && bytes > d->bk.granule) {
            bytes = d->bk.granule;
            rc = cf_backing_map(&d->bk, run, bytes);
        }
        if (rc != CUDA_SUCCESS) break;
        cf_dev_lock(d);
        cf_gmap_set_mapped(&d->bk.gmap, run, bytes);
        cf_totals_add(&d->tot->mapped, &d->tot->peak_mapped, (int64_t)bytes);
        d->granules_mapped += bytes / d->bk.granule;
        note_mapped(d);
        cf_dev_unlock(d);
        at = run + bytes;
    }
    pthread_mutex_unlock(&d->grow);
    cf_dev_lock(d);
    if (rc == CUDA_SUCCESS)
        cf_dev_hand_out(d, b);
    else
        cf_dev_release(d, b);
    cf_dev_unlock(d);
    return rc;
}

/* cuMemAlloc fallback: add a chunk large enough for size, then allocate. */
static CUresult add_chunk(struct cf_dev_arena *d, uint64_t size)
{
    uint64_t addr, got;
    pthread_mutex_lock(&d->grow);
    CUcontext prev = cf_arena_ctx_enter(d);
    CUresult rc = cf_backing_chunk_alloc(&d->bk, size, &addr, &got);
    cf_arena_ctx_leave(prev);
    if (rc == CUDA_SUCCESS) {
        cf_dev_lock(d);
        if (tlsf_add_region(&d->tlsf, addr, got) != 0) {
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        } else {
            d->bk.chunks_bytes += got;
            cf_totals_add(&d->tot->mapped, &d->tot->peak_mapped, (int64_t)got);
            note_mapped(d);
        }
        cf_dev_unlock(d);
        if (rc != CUDA_SUCCESS) {
            CUcontext p2 = cf_arena_ctx_enter(d);
            cf_backing_chunk_free(&d->bk, addr, got);
            cf_arena_ctx_leave(p2);
        }
    }
    pthread_mutex_unlock(&d->grow);
    return rc;
}

/* Allocate with growth: VMM maps what the block needs, the fallback adds a chunk. */
static CUresult grow_alloc(struct cf_dev_arena *d, uint64_t size, CUstream stream, bool async,
                           struct tlsf_block **out)
{
    bool unmapped;
    struct tlsf_block *b = take(d, size, stream, async, true, &unmapped);
    if (b && !unmapped) return *out = b, CUDA_SUCCESS;
    if (b) {
        /* b's granules are held now, so trimming cannot take them. */
        cf_dev_lock(d);
        uint64_t need = cf_gmap_unmapped_bytes(&d->bk.gmap, b->addr, b->size);
        cf_dev_unlock(d);
        cf_arena_trim_device_for_peak(d, need);
        CUresult rc = map_block(d, b);
        if (rc == CUDA_SUCCESS) *out = b;
        return rc;
    }
    if (d->bk.vmm) return CUDA_ERROR_OUT_OF_MEMORY; /* the reserve is full */
    CUresult rc = add_chunk(d, size);
    if (rc != CUDA_SUCCESS) return rc;
    b = take(d, size, stream, async, false, &unmapped);
    if (b == NULL) return CUDA_ERROR_OUT_OF_MEMORY;
    return *out = b, CUDA_SUCCESS;
}

/* A device synchronisation to get back a few small blocks costs more than
 * backing a new granule once, which then serves many allocations -- unless
 * the growth would raise the peak footprint: memory freed but waiting for a
 * synchronisation must not make the arena larger than the program ever
 * needed (peaks rise rarely, so these synchronisations stay rare). */
static bool worth_draining(struct cf_dev_arena *d, uint64_t size)
{
    cf_dev_lock(d);
    uint64_t back = d->quarantine.bytes + d->pending.bytes;
    bool yes = (back >= size && back >= QUARANTINE_MIN_BYTES) || (back && raises_peak(d, size));
    cf_dev_unlock(d);
    return yes;
}

CUresult cf_dev_alloc(struct cf_dev_arena *d, uint64_t size, CUstream stream, bool async,
                      struct tlsf_block **out)
{
    bool unmapped;
    /* 1. Memory that is already backed and safe to use. */
    if ((*out = take(d, size, stream, async, false, &unmapped)) != NULL) return CUDA_SUCCESS;
    /* 2. Before growing, reuse memory whose frees are still in flight: first
     * what the device has finished with, then (async) behind a wait. */
    if (__atomic_load_n(&d->pending.count, __ATOMIC_RELAXED)) {
        cf_dev_poll_pending(d, PENDING_POLL);
        if ((*out = take(d, size, stream, async, false, &unmapped)) != NULL) return CUDA_SUCCESS;
    }
    if (async && (*out = cf_dev_reuse_with_wait(d, size, stream)) != NULL) return CUDA_SUCCESS;
    if (worth_draining(d, size) && cf_dev_drain(d) &&
        (*out = take(d, size, stream, async, false, &unmapped)) != NULL)
        return CUDA_SUCCESS;
    /* 3. Grow. */
    CUresult rc = grow_alloc(d, size, stream, async, out);
    if (rc != CUDA_ERROR_OUT_OF_MEMORY) return rc;
    /* 4. Out of memory: give back everything idle on the device (the other
     * parts' idle granules too), then one more try. */
    cf_arena_reclaim_device(d);
    rc = grow_alloc(d, size, stream, async, out);
    if (rc == CUDA_ERROR_OUT_OF_MEMORY) {
        cf_dev_lock(d);
        d->ooms++;
        cf_dev_unlock(d);
        /* The failed attempt may have mapped part of the block: give it back so
         * the caller's fallback to the driver finds the memory free. */
        cf_dev_trim(d, true);
    }
    return rc;
}

bool cf_dev_owns(struct cf_dev_arena *d, uint64_t addr)
{
    /* Nothing but the arena can hand out addresses in its reserved range, so
     * the range alone decides (no lock); a pointer there that starts no live
     * block is an invalid free, which cf_dev_free reports. */
    if (d->bk.vmm) return addr >= d->bk.base && addr < d->bk.base + d->bk.reserve;
    /* Fallback: anywhere in one of its cuMemAlloc chunks. A stale pointer must
     * not reach the driver's cuMemFree, which would free the whole chunk when
     * the pointer is the chunk's first block. */
    cf_dev_lock(d);
    bool yes = false;
    for (uint32_t i = 0; i < d->tlsf.nregions && !yes; i++)
        yes = addr - d->tlsf.regions[i].addr < d->tlsf.regions[i].size;
    cf_dev_unlock(d);
    return yes;
}

/* Stream-ordered free: no driver call here. The block is at once reusable by
 * its own stream; others get it once an event shows the stream passed it. */
static CUresult free_async(struct cf_dev_arena *d, struct tlsf_block *b, CUstream stream)
{
    cf_dev_lock(d);
    b->user[0] = (uintptr_t)stream;
    b->user[1] = 0;
    cf_blist_push(&d->pending, b);
    bool poll = d->pending.count > PENDING_MAX_COUNT || d->pending.bytes > quarantine_bound(d);
    cf_dev_unlock(d);
    if (poll) cf_dev_poll_pending(d, PENDING_POLL);
    return CUDA_SUCCESS;
}

CUresult cf_dev_free(struct cf_dev_arena *d, uint64_t addr, CUstream stream, bool async)
{
    cf_dev_lock(d);
    struct tlsf_block *b = tlsf_lookup(&d->tlsf, addr);
    /* A stream-ordered free of a block a synchronous allocation took is accepted
     * and frees it, as the driver does with cudaMalloc memory (measured on an H200,
     * driver 580.159.04: success, and a later cudaFree of it fails). */
    if (b == NULL) {
        cf_dev_unlock(d);
        return CUDA_ERROR_INVALID_VALUE;
    }
    b->user[0] = b->user[1] = 0;
    tlsf_unpublish(&d->tlsf, b);
    d->live -= b->size;
    cf_totals_add(&d->tot->live, NULL, -(int64_t)b->size);
    d->frees++;
    if (async) {
        cf_dev_unlock(d);
        return free_async(d, b, stream);
    }
    cf_blist_push(&d->quarantine, b);
    bool drain =
        d->quarantine.bytes > quarantine_bound(d) || d->quarantine.count > QUARANTINE_MAX_COUNT;
    cf_dev_unlock(d);
    if (drain) cf_dev_drain(d);
    return CUDA_SUCCESS;
}
