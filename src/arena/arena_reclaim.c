/* Getting freed blocks back into the TLSF without ever handing out memory the
 * device may still be using, and giving idle backing back to the driver. */
#include "arena/arena_dev.h"
#include "arena/hostmem.h"

#include "base/real.h"

#define POLL_MAX       64 /* pending blocks examined per pass */
#define REUSE_SCAN_MAX 32 /* pending blocks looked at for a same-size reuse */
#define TRIM_BATCH     64 /* chunks unmapped per pass */

/* Stream handles the arena keeps (pending blocks' user[0]) may only be passed to
 * the driver while the application cannot be destroying that stream: readers are
 * the passes that take blocks off the pending list and mark them, the writer is
 * the stream-destroy hook (cf_dev_streams_destroying). */
static pthread_rwlock_t streams_alive = PTHREAD_RWLOCK_INITIALIZER;

void cf_dev_streams_destroying(bool begin)
{
    if (begin)
        pthread_rwlock_wrlock(&streams_alive);
    else
        pthread_rwlock_unlock(&streams_alive);
}

static bool drain_now(struct cf_dev_arena *d);

void cf_blist_push(struct cf_blist *l, struct tlsf_block *b)
{
    b->link_next = NULL;
    b->link_prev = l->tail;
    if (l->tail)
        l->tail->link_next = b;
    else
        l->head = b;
    l->tail = b;
    /* Atomic: the allocation path peeks at the count without the lock. */
    __atomic_fetch_add(&l->count, 1, __ATOMIC_RELAXED);
    l->bytes += b->size;
}

void cf_blist_remove(struct cf_blist *l, struct tlsf_block *b)
{
    if (b->link_prev)
        b->link_prev->link_next = b->link_next;
    else
        l->head = b->link_next;
    if (b->link_next)
        b->link_next->link_prev = b->link_prev;
    else
        l->tail = b->link_prev;
    b->link_prev = b->link_next = NULL;
    __atomic_fetch_sub(&l->count, 1, __ATOMIC_RELAXED);
    l->bytes -= b->size;
}

void cf_dev_release(struct cf_dev_arena *d, struct tlsf_block *b)
{
    if (d->bk.vmm) cf_gmap_hold(&d->bk.gmap, b->addr, b->size, -1);
    tlsf_free(&d->tlsf, b);
}

void cf_dev_mark_put(struct cf_dev_arena *d, struct cf_mark *m)
{
    if (--m->refs) return;
    m->next = d->idle_marks;
    d->idle_marks = m;
}

struct cf_mark *cf_dev_mark_get(struct cf_dev_arena *d)
{
    cf_dev_lock(d);
    struct cf_mark *m = d->idle_marks;
    if (m) d->idle_marks = m->next;
    cf_dev_unlock(d);
    if (m == NULL) {
        if ((m = cf_host_zalloc(sizeof *m)) == NULL) return NULL;
        CUcontext prev = cf_arena_ctx_enter(d);
        CUresult rc = cf_driver()->cuEventCreate(&m->ev, CU_EVENT_DISABLE_TIMING);
        cf_arena_ctx_leave(prev);
        cf_dev_lock(d);
        d->sync_calls++;
        cf_dev_unlock(d);
        if (rc != CUDA_SUCCESS) {
            cf_host_free(m, sizeof *m);
            return NULL;
        }
    }
    m->refs = 1;
    m->done = false;
    m->next = NULL;
    return m;
}

/* Under lock: a pending block leaves the list for reuse; its event goes idle. */
static struct tlsf_block *unpend(struct cf_dev_arena *d, struct tlsf_block *b)
{
    cf_blist_remove(&d->pending, b);
    if (b->user[1]) cf_dev_mark_put(d, (struct cf_mark *)b->user[1]);
    b->user[0] = b->user[1] = 0;
    return b;
}

/* Under lock: a pending block, already off the list, whose free completed. */
static void retire(struct cf_dev_arena *d, struct tlsf_block *b)
{
    if (b->user[1]) cf_dev_mark_put(d, (struct cf_mark *)b->user[1]);
    b->user[0] = b->user[1] = 0;
    cf_dev_release(d, b);
}

/* Reuse takes a whole block: accept at most a quarter of slack so that small
 * requests do not pin large blocks. */
static bool fits(const struct tlsf_block *b, uint64_t size)
{
    return b->size >= size && b->size - size <= size / 4;
}

struct tlsf_block *cf_dev_reuse_same_stream(struct cf_dev_arena *d, uint64_t size, CUstream stream)
{
    size = tlsf_round(size);
    int n = 0;
    for (struct tlsf_block *b = d->pending.tail; b && n < REUSE_SCAN_MAX; b = b->link_prev, n++) {
        if (b->user[0] != (uintptr_t)stream || !fits(b, size)) continue;
        unpend(d, b);
        tlsf_publish(&d->tlsf, b);
        return b;
    }
    return NULL;
}

/* Outside the lock, on a block no other thread can reach: give it a mark of
 * its stream's position. Recording now rather than at the free is
 * conservative (the position is later) and saves the call for blocks their
 * own stream reuses. share: a mark just recorded on the same stream. */
static bool stamp(struct cf_dev_arena *d, struct tlsf_block *b, struct cf_mark *share)
{
    if (b->user[1]) return true;
    if (share) {
        share->refs++;
        b->user[1] = (uintptr_t)share;
        return true;
    }
    /* Recorded inside a capture, the event would be a graph node, not a
     * position of the stream: leave such blocks to a device synchronisation. */
    if (cf_arena_capturing((CUstream)b->user[0])) return false;
    struct cf_mark *m = cf_dev_mark_get(d);
    if (m == NULL) return false;
    if (cf_driver()->cuEventRecord(m->ev, (CUstream)b->user[0]) != CUDA_SUCCESS) {
        cf_dev_lock(d);
        cf_dev_mark_put(d, m);
        cf_dev_unlock(d);
        return false;
    }
    b->user[1] = (uintptr_t)m;
    return true;
}

struct tlsf_block *cf_dev_reuse_with_wait(struct cf_dev_arena *d, uint64_t size, CUstream stream)
{
    size = tlsf_round(size);
    struct tlsf_block *b = NULL;
    int n = 0;
    pthread_rwlock_rdlock(&streams_alive);
    cf_dev_lock(d);
    for (b = d->pending.head; b && n < REUSE_SCAN_MAX; b = b->link_next, n++)
        if (fits(b, size)) break;
    if (b && n < REUSE_SCAN_MAX)
        cf_blist_remove(&d->pending, b);
    else
        b = NULL;
    cf_dev_unlock(d);
    if (b == NULL) {
        pthread_rwlock_unlock(&streams_alive);
        return NULL;
    }
    CUcontext prev = cf_arena_ctx_enter(d);
    bool marked = stamp(d, b, NULL);
    CUresult rc =
        marked ? cf_driver()->cuStreamWaitEvent(stream, ((struct cf_mark *)b->user[1])->ev, 0)
               : CUDA_ERROR_INVALID_HANDLE;
    cf_arena_ctx_leave(prev);
    pthread_rwlock_unlock(&streams_alive);
    cf_dev_lock(d);
    d->sync_calls += 2;
    if (rc != CUDA_SUCCESS) {
        /* Without an event only a device synchronisation makes it safe. */
        cf_blist_push(marked ? &d->pending : &d->quarantine, b);
        b = NULL;
    } else {
        cf_dev_mark_put(d, (struct cf_mark *)b->user[1]);
        b->user[0] = b->user[1] = 0;
        tlsf_publish(&d->tlsf, b);
        cf_dev_hand_out(d, b); /* the device's totals too, like every hand-out */
    }
    cf_dev_unlock(d);
    return b;
}

enum { RETIRE_DONE, RETIRE_BUSY, RETIRE_LOST };

void cf_dev_poll_pending(struct cf_dev_arena *d, int max)
{
    struct tlsf_block *batch[POLL_MAX];
    uint8_t fate[POLL_MAX];
    int n = 0;
    if (max > POLL_MAX) max = POLL_MAX;
    pthread_rwlock_rdlock(&streams_alive);
    cf_dev_lock(d);
    while (n < max && d->pending.head) {
        batch[n] = d->pending.head;
        cf_blist_remove(&d->pending, batch[n++]);
    }
    cf_dev_unlock(d);
    if (n == 0) {
        pthread_rwlock_unlock(&streams_alive);
        return;
    }
    CUcontext prev = cf_arena_ctx_enter(d);
    uint64_t calls = 0;
    struct cf_mark *fresh[POLL_MAX] = {0}; /* marks recorded in this pass */
    for (int i = 0; i < n; i++) {
        struct tlsf_block *b = batch[i];
        struct cf_mark *share = NULL;
        for (int j = 0; j < i && !share && !b->user[1]; j++)
            if (fresh[j] && batch[j]->user[0] == b->user[0]) share = fresh[j];
        bool had = b->user[1] != 0;
        if (!stamp(d, b, share)) {
            fate[i] = RETIRE_LOST; /* e.g. its stream is gone: wait for a device sync */
            continue;
        }
        if (!had && !share) {
            fresh[i] = (struct cf_mark *)b->user[1];
            calls++;
        }
        struct cf_mark *m = (struct cf_mark *)b->user[1];
        /* Atomic: blocks sharing m may be examined by two pollers at once. */
        bool done = __atomic_load_n(&m->done, __ATOMIC_ACQUIRE);
        if (!done) {
            calls++;
            done = cf_driver()->cuEventQuery(m->ev) == CUDA_SUCCESS;
            if (done) __atomic_store_n(&m->done, true, __ATOMIC_RELEASE);
        }
        fate[i] = done ? RETIRE_DONE : RETIRE_BUSY;
    }
    cf_arena_ctx_leave(prev);
    pthread_rwlock_unlock(&streams_alive);
    cf_dev_lock(d);
    d->sync_calls += calls;
    bool released = false;
    /* Back to the head in the original order; lost ones wait for a device sync. */
    for (int i = n - 1; i >= 0; i--) {
        struct tlsf_block *b = batch[i];
        if (fate[i] == RETIRE_DONE) {
            retire(d, b);
            released = true;
        } else if (fate[i] == RETIRE_LOST) {
            cf_blist_push(&d->quarantine, b);
        } else {
            b->link_prev = NULL;
            b->link_next = d->pending.head;
            if (d->pending.head)
                d->pending.head->link_prev = b;
            else
                d->pending.tail = b;
            d->pending.head = b;
            __atomic_fetch_add(&d->pending.count, 1, __ATOMIC_RELAXED);
            d->pending.bytes += b->size;
        }
    }
    bool trim = released && cf_dev_trim_due(d);
    cf_dev_unlock(d);
    if (trim) cf_dev_trim(d, false);
}

bool cf_dev_drain(struct cf_dev_arena *d)
{
    /* One drain at a time: threads arriving meanwhile would only queue up
     * device synchronisations behind it (measured: a storm of them made 16
     * threads 60x slower); they grow instead. */
    if (__atomic_exchange_n(&d->draining, 1, __ATOMIC_ACQUIRE)) return false;
    bool ok = drain_now(d);
    __atomic_store_n(&d->draining, 0, __ATOMIC_RELEASE);
    return ok;
}

static bool drain_now(struct cf_dev_arena *d)
{
    /* A synchronisation would invalidate a capture in progress. */
    if (cf_arena_capturing(CU_STREAM_LEGACY)) return false;
    cf_dev_lock(d);
    struct cf_blist q = d->quarantine, p = d->pending;
    d->quarantine = (struct cf_blist){0};
    d->pending.head = d->pending.tail = NULL;
    d->pending.bytes = 0;
    __atomic_store_n(&d->pending.count, 0, __ATOMIC_RELAXED);
    cf_dev_unlock(d);
    if (q.count == 0 && p.count == 0) return true;
    CUcontext prev = cf_arena_ctx_enter(d);
    CUresult rc = cf_driver()->cuCtxSynchronize();
    cf_arena_ctx_leave(prev);
    cf_dev_lock(d);
    d->sync_calls++;
    cf_dev_unlock(d);
    /* Everything freed before the synchronisation began is idle now. On an
     * error the device state is unknown: keep holding the blocks. Released in
     * slices so that other threads are not held up behind a long batch. */
    struct tlsf_block *next;
    int slice = 0;
    cf_dev_lock(d);
    for (struct tlsf_block *b = q.head; b; b = next) {
        next = b->link_next;
        if (rc == CUDA_SUCCESS)
            cf_dev_release(d, b);
        else
            cf_blist_push(&d->quarantine, b);
        if (++slice % 64 == 0) {
            cf_dev_unlock(d);
            cf_dev_lock(d);
        }
    }
    for (struct tlsf_block *b = p.head; b; b = next) {
        next = b->link_next;
        if (rc == CUDA_SUCCESS)
            retire(d, b);
        else
            cf_blist_push(&d->pending, b);
        if (++slice % 64 == 0) {
            cf_dev_unlock(d);
            cf_dev_lock(d);
        }
    }
    bool trim = rc == CUDA_SUCCESS && cf_dev_trim_due(d);
    cf_dev_unlock(d);
    if (trim) cf_dev_trim(d, false);
    return rc == CUDA_SUCCESS;
}

/* Mapped bytes no held block uses. credit: held bytes not mapped yet (a
 * block about to be backed), which the TLSF counts as used. */
static uint64_t excess_with(const struct cf_dev_arena *d, uint64_t credit)
{
    uint64_t mapped = cf_dev_mapped(d) + credit;
    return mapped > d->tlsf.used_bytes ? mapped - d->tlsf.used_bytes : 0;
}

static uint64_t excess(const struct cf_dev_arena *d)
{
    return excess_with(d, 0);
}

bool cf_dev_trim_due(const struct cf_dev_arena *d)
{
    return excess(d) > cf_arena_slack(d) + d->trim_floor;
}

/* VMM: one pass; unmaps up to TRIM_BATCH idle chunks from the top down until
 * the excess is at most target. Returns chunks released. */
static int trim_vmm_pass(struct cf_dev_arena *d, uint64_t target, uint64_t credit)
{
    uint64_t addrs[TRIM_BATCH], sizes[TRIM_BATCH], cursor = UINT64_MAX;
    int n = 0;
    cf_dev_lock(d);
    while (n < TRIM_BATCH && excess_with(d, credit) > target &&
           cf_gmap_next_idle_chunk(&d->bk.gmap, &cursor, &addrs[n], &sizes[n])) {
        cf_gmap_set_unmapped(&d->bk.gmap, addrs[n]);
        cf_totals_add(&d->tot->mapped, NULL, -(int64_t)sizes[n]);
        d->granules_unmapped += sizes[n] / d->bk.granule;
        n++;
    }
    cf_dev_unlock(d);
    for (int i = 0; i < n; i++)
        cf_backing_unmap(&d->bk, addrs[i], sizes[i]);
    return n;
}

/* Fallback: cuMemFree chunks that are wholly free. */
static int trim_chunks_pass(struct cf_dev_arena *d, uint64_t target)
{
    uint64_t addrs[TRIM_BATCH], sizes[TRIM_BATCH];
    int n = 0;
    cf_dev_lock(d);
    for (uint32_t i = d->tlsf.nregions; i-- > 0 && n < TRIM_BATCH && excess(d) > target;) {
        uint64_t addr = d->tlsf.regions[i].addr, size = tlsf_remove_region(&d->tlsf, addr);
        if (size == 0) continue;
        addrs[n] = addr;
        sizes[n++] = size;
        d->bk.chunks_bytes -= size;
        cf_totals_add(&d->tot->mapped, NULL, -(int64_t)size);
    }
    cf_dev_unlock(d);
    CUcontext prev = n ? cf_arena_ctx_enter(d) : NULL;
    for (int i = 0; i < n; i++)
        cf_backing_chunk_free(&d->bk, addrs[i], sizes[i]);
    if (n) cf_arena_ctx_leave(prev);
    return n;
}

void cf_dev_trim(struct cf_dev_arena *d, bool force)
{
    pthread_mutex_lock(&d->grow);
    /* Hysteresis: down to 7/8 of the slack, so the next trim is an eighth of
     * it away. Trims only run after a drain or a poll (batches), so a narrow
     * band does not mean a trim per free; a wide one (half, as before) made a
     * program whose working set swings past the slack unmap and map again half
     * the slack per swing (video_pipeline: 27 k driver calls instead of 12 k). */
    uint64_t target = force ? 0 : cf_arena_slack(d) / 8 * 7;
    while ((d->bk.vmm ? trim_vmm_pass(d, target, 0) : trim_chunks_pass(d, target)) == TRIM_BATCH)
        ;
    cf_dev_lock(d);
    /* What is left is pinned by live blocks: do not rescan until it grows by a slack. */
    uint64_t left = excess(d);
    d->trim_floor = !force && left > cf_arena_slack(d) ? left : 0;
    cf_dev_unlock(d);
    pthread_mutex_unlock(&d->grow);
}

void cf_dev_trim_for_peak(struct cf_dev_arena *d, uint64_t need, uint64_t credit)
{
    if (!d->bk.vmm) return;
    pthread_mutex_lock(&d->grow);
    cf_dev_lock(d);
    uint64_t mapped = __atomic_load_n(&d->tot->mapped, __ATOMIC_RELAXED);
    uint64_t peak = __atomic_load_n(&d->tot->peak_mapped, __ATOMIC_RELAXED);
    uint64_t over = mapped + need > peak ? mapped + need - peak : 0;
    uint64_t ex = excess_with(d, credit);
    /* Nothing idle can exist below a granule of excess, and an excess that a
     * previous scan found pinned is not scanned again until it changes. */
    bool scan = over && ex >= d->bk.granule && ex != d->peak_pinned;
    uint64_t target = ex > over ? ex - over : 0;
    cf_dev_unlock(d);
    if (scan) {
        while (trim_vmm_pass(d, target, credit) == TRIM_BATCH)
            ;
        cf_dev_lock(d);
        d->peak_pinned = excess_with(d, credit);
        cf_dev_unlock(d);
    }
    pthread_mutex_unlock(&d->grow);
}

void cf_dev_sync_begin(struct cf_dev_arena *d, CUstream stream, struct cf_blist *out)
{
    if (__atomic_load_n(&d->pending.count, __ATOMIC_RELAXED) == 0) return;
    cf_dev_lock(d);
    for (struct tlsf_block *b = d->pending.head, *next; b; b = next) {
        next = b->link_next;
        if (b->user[0] != (uintptr_t)stream) continue;
        cf_blist_remove(&d->pending, b);
        cf_blist_push(out, b);
    }
    cf_dev_unlock(d);
}

void cf_dev_sync_end(struct cf_dev_arena *d, struct cf_blist *l, uint64_t n, bool done)
{
    cf_dev_lock(d);
    for (uint64_t i = 0; i < n && l->head; i++) {
        struct tlsf_block *b = l->head;
        cf_blist_remove(l, b);
        if (done)
            retire(d, b);
        else
            cf_blist_push(&d->pending, b);
    }
    bool trim = done && cf_dev_trim_due(d);
    cf_dev_unlock(d);
    if (trim) cf_dev_trim(d, false);
}

/* The application is about to destroy `stream`: blocks it freed on that stream
 * and that still wait for their mark get it now, while the handle is valid
 * (stamping later would pass a dead handle to the driver). One event covers
 * them all; blocks that cannot be marked wait for a device synchronisation. */
void cf_dev_stamp_stream(struct cf_dev_arena *d, CUstream stream)
{
    struct cf_blist batch = {0};
    cf_dev_lock(d);
    for (struct tlsf_block *b = d->pending.head, *next; b; b = next) {
        next = b->link_next;
        if (b->user[0] != (uintptr_t)stream || b->user[1]) continue;
        cf_blist_remove(&d->pending, b);
        cf_blist_push(&batch, b);
    }
    cf_dev_unlock(d);
    if (batch.head == NULL) return;
    CUcontext prev = cf_arena_ctx_enter(d);
    struct cf_mark *share = NULL;
    for (struct tlsf_block *b = batch.head; b; b = b->link_next) {
        bool marked = stamp(d, b, share);
        /* A new stream may get the same handle: it is not ordered after this one. */
        b->user[0] = UINTPTR_MAX;
        if (marked && share == NULL) share = (struct cf_mark *)b->user[1];
    }
    cf_arena_ctx_leave(prev);
    cf_dev_lock(d);
    while (batch.head) {
        struct tlsf_block *b = batch.head;
        cf_blist_remove(&batch, b);
        cf_blist_push(b->user[1] ? &d->pending : &d->quarantine, b);
    }
    cf_dev_unlock(d);
}
