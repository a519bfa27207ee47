/* One device's arena: the TLSF over its memory, the backing, and the blocks the
 * application freed but the device may still be using.
 *
 * Locking: `lock` guards the TLSF, the granule map's hold counts and mapped
 * state, the lists and the counters. `grow` serialises backing changes (map,
 * unmap, chunk alloc/free), which are CUDA calls: they run holding `grow` only.
 * A granule's mapped state changes while holding both, so the allocation fast
 * path reads it under `lock` alone. */
#ifndef CF_ARENA_ARENA_DEV_H
#define CF_ARENA_ARENA_DEV_H

#include "arena/arena.h"
#include "arena/backing.h"
#include "arena/tlsf.h"

#include <cuda.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#define CF_ARENA_MAX_DEVICES 16
/* Parts per device: each has its own lock, TLSF and range of the device's
 * reservation; threads that meet on a part's lock are spread over them so that
 * they do not share the allocator's cache lines (see docs/arena.md, thread
 * scaling); threads that never meet stay in one part. */
#define CF_ARENA_PARTS 16

/* A recorded position of a stream: an event shared by the pending blocks of
 * that stream examined in one pass. */
struct cf_mark {
    CUevent ev;
    uint32_t refs;
    bool done; /* the event completed: no need to ask again */
    struct cf_mark *next;
};

/* Blocks chained through tlsf_block.link_prev/link_next (free for used blocks). */
struct cf_blist {
    struct tlsf_block *head, *tail;
    uint64_t count, bytes;
};

enum { CF_DEV_UNTRIED = 0, CF_DEV_READY = 1, CF_DEV_FAILED = -1 };

/* A device's true concurrent figures, shared by its parts (atomics): summing
 * the parts' own peaks would overstate them, since the parts peak at
 * different times. */
struct cf_dev_totals {
    uint64_t live, peak_live, mapped, peak_mapped;
};

static inline void cf_totals_raise(uint64_t *peak, uint64_t now)
{
    uint64_t old = __atomic_load_n(peak, __ATOMIC_RELAXED);
    while (now > old &&
           !__atomic_compare_exchange_n(peak, &old, now, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
        ;
}

static inline void cf_totals_add(uint64_t *now, uint64_t *peak, int64_t delta)
{
    uint64_t v = __atomic_add_fetch(now, (uint64_t)delta, __ATOMIC_RELAXED);
    if (delta > 0) cf_totals_raise(peak, v);
}

/* A live block's user words: user[0] = the bytes asked for << 1 | 1 when a
 * stream-ordered allocation took it, user[1] = its buffer id (cf_arena_find_block).
 * Once freed they are the pending list's (stream, mark) or 0. */
#define CF_BLOCK_WORD(requested, async) ((uintptr_t)(requested) << 1 | (uintptr_t)(async))
#define CF_BLOCK_STREAM_ORDERED(b)      (((b)->user[0] & 1) != 0)
#define CF_BLOCK_REQUESTED(b)           ((uint64_t)((b)->user[0] >> 1))

struct cf_dev_arena {
    int state;    /* CF_DEV_*, atomic */
    int draining; /* a cf_dev_drain is running, atomic */
    pthread_mutex_t lock, grow;
    struct cf_backing bk;
    struct cf_dev_totals *tot; /* the device's, shared by its parts */
    struct tlsf tlsf;
    /* Synchronous frees wait here for a device-wide synchronisation. */
    struct cf_blist quarantine;
    /* Stream-ordered frees wait here (user[0] = stream; user[1] = a struct
     * cf_mark recorded on it once another stream may want the block, else 0). */
    struct cf_blist pending;
    struct cf_mark *idle_marks;
    uint64_t trim_floor;  /* excess a trim could not give back: retrigger only above it */
    uint64_t peak_pinned; /* excess the last trim for the peak left: all pinned */
    /* statistics (under lock) */
    uint64_t live, peak_live, peak_mapped, frag_sampled_at;
    double frag_at_peak;
    uint64_t sync_calls; /* synchronisation and event calls (backing counts its own) */
    uint64_t granules_mapped, granules_unmapped, allocs, frees, ooms;
    uint64_t ns_alloc, ns_free; /* cf_now_ns, atomic */
};

static inline void cf_dev_lock(struct cf_dev_arena *d)
{
    pthread_mutex_lock(&d->lock);
}

/* Set when the calling thread found its part's lock taken at an allocation
 * (arena.c then moves the thread to another part). */
extern __thread bool cf_arena_contended;

static inline void cf_dev_lock_noting(struct cf_dev_arena *d)
{
    if (pthread_mutex_trylock(&d->lock) == 0) return;
    cf_arena_contended = true;
    pthread_mutex_lock(&d->lock);
}

static inline void cf_dev_unlock(struct cf_dev_arena *d)
{
    pthread_mutex_unlock(&d->lock);
}

/* ---- arena_dev.c ---- */
/* Part 0 of a device (reserves the address space of all parts; *nparts in:
 * wanted, out: obtained), then parts 1.. of the same reservation. */
CUresult cf_dev_start(struct cf_dev_arena *d, CUdevice dev, CUcontext ctx, unsigned *nparts);
int cf_dev_start_part(struct cf_dev_arena *d, const struct cf_dev_arena *d0, unsigned k);
CUresult cf_dev_alloc(struct cf_dev_arena *d, uint64_t size, CUstream stream, bool async,
                      struct tlsf_block **out);
CUresult cf_dev_free(struct cf_dev_arena *d, uint64_t addr, CUstream stream, bool async);
bool cf_dev_owns(struct cf_dev_arena *d, uint64_t addr);
uint64_t cf_dev_mapped(const struct cf_dev_arena *d);

/* ---- arena_reclaim.c: getting freed blocks back into the TLSF ---- */
void cf_blist_push(struct cf_blist *l, struct tlsf_block *b);
void cf_blist_remove(struct cf_blist *l, struct tlsf_block *b);
/* Return a held block to the TLSF (drops its granule holds). Under lock. */
void cf_dev_release(struct cf_dev_arena *d, struct tlsf_block *b);
/* Synchronise the device and release every quarantined and pending block.
 * Skipped (false) while the legacy stream reports a capture or another
 * thread is draining. */
bool cf_dev_drain(struct cf_dev_arena *d);
/* Release pending blocks whose stream passed their free: looks at up to max of
 * the oldest, recording their events first where needed; never blocks. */
void cf_dev_poll_pending(struct cf_dev_arena *d, int max);
/* Under lock: b leaves the TLSF for the application (live and peak figures). */
void cf_dev_hand_out(struct cf_dev_arena *d, struct tlsf_block *b);
/* Mark the pending blocks freed on a stream the application is destroying;
 * between cf_dev_streams_destroying(true) and (false), which keep every other
 * use of stream handles out. */
void cf_dev_streams_destroying(bool begin);
void cf_dev_stamp_stream(struct cf_dev_arena *d, CUstream stream);
/* The application is about to synchronise `stream`: move the blocks freed on it
 * from the pending list to the end of out (the synchronisation will prove them
 * done; blocks freed while it runs are not taken). */
void cf_dev_sync_begin(struct cf_dev_arena *d, CUstream stream, struct cf_blist *out);
/* After it: the first n blocks of l (those cf_dev_sync_begin took from d) go
 * back to the TLSF when the synchronisation succeeded (done), else back to the
 * pending list. */
void cf_dev_sync_end(struct cf_dev_arena *d, struct cf_blist *l, uint64_t n, bool done);
/* Async allocation: a pending block of the right size freed on the same stream
 * (safe at once by stream order), or NULL. Under lock. */
struct tlsf_block *cf_dev_reuse_same_stream(struct cf_dev_arena *d, uint64_t size, CUstream stream);
/* Async allocation: a pending block from another stream, made safe by making
 * stream wait for the free's event. Takes the lock itself. */
struct tlsf_block *cf_dev_reuse_with_wait(struct cf_dev_arena *d, uint64_t size, CUstream stream);
/* A mark with one reference and an event not yet recorded, or NULL. Takes
 * the lock itself. */
struct cf_mark *cf_dev_mark_get(struct cf_dev_arena *d);
void cf_dev_mark_put(struct cf_dev_arena *d, struct cf_mark *m); /* under lock */
/* Give back idle mapped memory beyond the slack (force: all of it). */
void cf_dev_trim(struct cf_dev_arena *d, bool force);
/* Before mapping need more bytes: give back idle chunks of part d so that
 * the device's mapped peak does not rise while idle memory could make room.
 * credit: bytes d's TLSF counts as used that are not mapped yet (the block
 * about to be backed, when d is its part; else 0). */
void cf_dev_trim_for_peak(struct cf_dev_arena *d, uint64_t need, uint64_t credit);
/* Whether a trim is due (under lock). */
bool cf_dev_trim_due(const struct cf_dev_arena *d);

/* ---- arena.c ---- */
/* Drain and trim every part of d's device (out of memory). */
void cf_arena_reclaim_device(const struct cf_dev_arena *d);
/* cf_dev_trim_for_peak on d (which holds the block to back), then on the
 * other parts of its device while the peak would still rise. */
void cf_arena_trim_device_for_peak(struct cf_dev_arena *d, uint64_t need);
/* Make d's context current for the duration; returns the one to restore. */
CUcontext cf_arena_ctx_enter(const struct cf_dev_arena *d);
void cf_arena_ctx_leave(CUcontext prev);
/* True when stream (CU_STREAM_LEGACY for synchronous work) is capturing, or when
 * that cannot be told (cf_stream_capturing): no driver call while no capture is in
 * progress anywhere. */
bool cf_arena_capturing(CUstream stream);
/* This part's share of CUDAFRAG_ARENA_SLACK: the slack is per device, split
 * evenly over the parts threads have used so far, but not below
 * CF_ARENA_MIN_SHARE unless the slack itself is smaller. */
#define CF_ARENA_MIN_SHARE ((uint64_t)8 << 20)
uint64_t cf_arena_slack(const struct cf_dev_arena *d);

#endif
