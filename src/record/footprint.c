/* What each device holds after every event, computed from the events alone, and
 * the live bytes beside it, both under one lock per device so that "live at the
 * footprint peak" and "footprint at the live peak" are read at the same instant.
 *
 * Raw driver allocations (cudaMalloc/cuMemAlloc families) hold exactly the 2 MiB
 * pages their live [addr, addr + size) ranges touch (measured on an H200, see
 * docs/recording.md). Live ranges never overlap, so a page strictly inside one
 * allocation belongs to it alone: only an allocation's first and last pages can
 * be shared, and only those are reference-counted. That keeps every event O(1)
 * however large the allocation. Pools, the graph pool, the arena, VMM handles
 * and arrays add their own series. Every event takes its place in the global
 * order (seq) here, under the device's slot lock, so a replay of the trace in seq
 * order walks each device through the same states.
 *
 * The slot lock is the one lock of an intercepted call (internal.h): it also
 * guards the slot's live table and the sites and pools whose home the slot is,
 * so that an allocation is inserted, accounted, ordered and counted at its site
 * and pool in one critical section, on one cache line with the table's head. */
#include <string.h>

#include "arena/arena.h"
#include "record/internal.h"

#define PAGE_SHIFT 21

struct page_ref {
    uint64_t page; /* key */
    uint64_t refs;
    UT_hash_handle hh;
};

struct cf_slot cf_slots[CF_SLOTS];
static bool is_device(int slot)
{
    return slot >= 1 && slot <= CF_MAX_DEVICES;
}

/* NULL for the slot of no device: graph allocations live in the graph pool. */
static struct cf_device_stats *stats_of(int slot)
{
    if (slot == CF_SLOT_HOST) return &cf_rec.host;
    if (slot == CF_SLOT_MANAGED) return &cf_rec.managed;
    return is_device(slot) ? &cf_rec.dev[slot - 1] : NULL;
}

/* A node that cannot be allocated leaves the page count low: say so, once. */
CF_HOT static void edge_ref(struct cf_slot *f, struct cf_device_stats *d, uint64_t page, int sign)
{
    struct page_ref *r;
    HASH_FIND(hh, f->edges, &page, sizeof page, r);
    if (sign > 0) {
        if (r == NULL) {
            r = cf_meta_alloc(sizeof *r);
            if (r == NULL) {
                d->footprint_inexact = true;
                return;
            }
            r->page = page;
            r->refs = 0;
            HASH_ADD(hh, f->edges, page, sizeof r->page, r);
            f->edge_pages++;
        }
        r->refs++;
    } else if (r != NULL && --r->refs == 0) {
        HASH_DELETE(hh, f->edges, r);
        cf_meta_free(r, sizeof *r);
        f->edge_pages--;
    }
}

CF_HOT static void raw_range(struct cf_slot *f, struct cf_device_stats *d, uint64_t addr,
                             uint64_t size, int sign)
{
    if (size == 0) return;
    uint64_t first = addr >> PAGE_SHIFT, last = (addr + size - 1) >> PAGE_SHIFT;
    edge_ref(f, d, first, sign);
    if (last != first) edge_ref(f, d, last, sign);
    if (last > first + 1) f->interior_pages += (uint64_t)sign * (last - first - 1);
    d->raw_bytes = (f->interior_pages + f->edge_pages) << PAGE_SHIFT;
    if (d->raw_bytes > d->peak_raw_bytes) d->peak_raw_bytes = d->raw_bytes;
}

/* The pools hold at least what is live in them. Their reserved bytes are read
 * before each allocation that may have grown them is recorded (sample.c), but a
 * read can be missing -- not taken on a capturing stream or in a forked child,
 * or failed -- and the footprint must never fall below the live bytes. */
static uint64_t pool_part(const struct cf_device_stats *d)
{
    return d->pool_live > d->pool_reserved ? d->pool_live : d->pool_reserved;
}

static uint64_t footprint_of(const struct cf_device_stats *d)
{
    return d->raw_bytes + pool_part(d) + d->graph_reserved + d->arena_mapped + d->vmm_bytes +
           d->array_bytes;
}

/* now = 0: a free taken out of the live table before its real call returned, whose
 * time is not known yet; a peak reached then (the arena mapped more meanwhile) is
 * stamped with the clock. */
static uint64_t time_of(uint64_t now)
{
    return now ? now : cf_now_ns();
}

/* An open region's peaks (record/region.c): off the common path, which only
 * reads window_open on the line it already has. */
static CF_COLD void raise_window(struct cf_device_stats *d, uint64_t f)
{
    if (d->live_bytes > d->window_live) d->window_live = d->live_bytes;
    if (f > d->window_footprint) d->window_footprint = f;
}

/* The instant of the footprint peak: of the instants at which the footprint stands
 * at its peak, the one with the most live bytes. A pool's growth is recorded just
 * before the allocation it served (sample.c): the two are one instant, and the
 * footprint peak they reach must count that allocation as live. */
static void note_footprint_peak(struct cf_device_stats *d, uint64_t f, uint64_t now)
{
    /* Atomic: sampling reads it without this device's lock (peak_of). */
    __atomic_store_n(&d->peak_footprint, f, __ATOMIC_RELAXED);
    d->peak_footprint_t_ns = time_of(now);
    d->live_at_peak_footprint = d->live_bytes;
    d->at_peak = (struct cf_fp_parts){.raw = d->raw_bytes,
                                      .raw_live = d->raw_live,
                                      .pool = pool_part(d),
                                      .pool_live = d->pool_live,
                                      .graph = d->graph_reserved,
                                      .graph_used = d->graph_used,
                                      .arena = d->arena_mapped,
                                      .arena_live = d->arena_live,
                                      .vmm = d->vmm_bytes};
}

/* The peaks, after the device's state changed at time now; true when the
 * footprint reached a new peak. parts: one of the footprint's parts changed
 * (otherwise d->footprint still is their sum, and they are not read). */
CF_HOT static bool note_peaks(struct cf_device_stats *d, uint64_t now, bool parts)
{
    uint64_t f = parts ? footprint_of(d) : d->footprint;
    bool new_peak = f > d->peak_footprint;
    d->footprint = f;
    if (new_peak || (f == d->peak_footprint && d->live_bytes > d->live_at_peak_footprint))
        note_footprint_peak(d, f, now);
    if (d->live_bytes > d->peak_live_bytes) {
        d->peak_live_bytes = d->live_bytes;
        d->peak_t_ns = time_of(now);
        d->footprint_at_peak_live = f;
    }
    if (__builtin_expect(d->window_open, 0)) raise_window(d, f);
    return new_peak;
}

static uint64_t granted_of(const struct cf_alloc *a)
{
    return a->granted ? a->granted : a->requested;
}

/* The footprint series an allocation adds to (sign +1) or takes from (-1); true
 * when a part of the footprint changed. Pool and arena allocations change only
 * live bytes: their memory is the pool's or the arena's, read as a series (but
 * a pool's part is at least its live bytes: pool_part). */
CF_HOT static bool apply_kind(struct cf_slot *f, struct cf_device_stats *d,
                              const struct cf_alloc *a, int sign)
{
    uint64_t g = granted_of(a);
    if (a->kind == CF_KIND_DEVICE && !a->arena) {
        raw_range(f, d, a->addr, a->requested, sign);
        d->raw_live += (uint64_t)sign * a->requested;
        return true;
    }
    if (a->arena) {
        d->arena_live += (uint64_t)sign * a->requested;
    } else if (a->kind == CF_KIND_POOL) {
        bool floored = d->pool_live > d->pool_reserved;
        d->pool_live += (uint64_t)sign * a->requested;
        return floored || d->pool_live > d->pool_reserved;
    } else if (a->kind == CF_KIND_VMM) {
        d->vmm_bytes += (uint64_t)sign * g;
    } else if (a->kind == CF_KIND_ARRAY) {
        d->array_bytes += (uint64_t)sign * g;
    }
    return a->kind == CF_KIND_VMM || a->kind == CF_KIND_ARRAY;
}

static bool arena_followed; /* cf_fp_follow_arena */

void cf_fp_follow_arena(bool on)
{
    arena_followed = on;
}

/* The arena maps before it hands a block out and unmaps after a free: read its
 * figure at each of its events (a trace's record takes it from the trace instead). */
CF_HOT static void follow_arena(struct cf_device_stats *d, int device, const struct cf_alloc *a,
                                uint64_t now)
{
    if (!a->arena || !arena_followed) return;
    uint64_t mapped = cf_arena_mapped_now(device);
    if (mapped == d->arena_mapped) return;
    d->arena_mapped = mapped;
    now = time_of(now);
    note_peaks(d, now, true);
    cf_trace_series(cf_seq_next(), now, device, CF_SERIES_ARENA, mapped, 0);
}

/* With the slot locked. */
static inline __attribute__((always_inline)) uint64_t
account(const struct cf_alloc *a, int slot, int sign, uint64_t now, bool *new_peak)
{
    struct cf_slot *f = &cf_slots[slot];
    struct cf_device_stats *d = stats_of(slot);
    if (new_peak) *new_peak = false;
    if (d == NULL) return cf_seq_next();
    bool device = is_device(slot);
    if (device) follow_arena(d, slot - 1, a, now);
    uint64_t seq = cf_seq_next();
    if (!d->seen) d->seen = true;
    d->live_count += (uint64_t)sign;
    d->live_bytes += (uint64_t)sign * a->requested;
    d->requested_live += (uint64_t)sign * a->requested;
    d->granted_live += (uint64_t)sign * granted_of(a);
    if (d->requested_live > d->peak_requested) d->peak_requested = d->requested_live;
    if (d->granted_live > d->peak_granted) d->peak_granted = d->granted_live;
    bool parts = device && apply_kind(f, d, a, sign);
    bool peak = note_peaks(d, now, parts) && device;
    if (new_peak) *new_peak = peak;
    return seq;
}

CF_HOT uint64_t cf_fp_alloc(const struct cf_alloc *a, int slot, bool *new_peak)
{
    return account(a, slot, +1, a->t_ns, new_peak);
}

CF_HOT uint64_t cf_fp_free(const struct cf_alloc *a, int slot, uint64_t now)
{
    return account(a, slot, -1, now, NULL);
}

void cf_fp_count(int slot, int64_t allocs, int64_t frees)
{
    struct cf_device_stats *d = stats_of(slot);
    if (d == NULL) return;
    d->allocs += (uint64_t)allocs;
    d->frees += (uint64_t)frees;
}

/* A series that is read, not derived: a pool's reserved bytes (delta), the graph
 * pool's reserved and used bytes, the arena's mapped bytes (absolute). Returns
 * the event's seq. */
uint64_t cf_fp_series(int device, enum cf_series series, int64_t value, uint64_t used, uint64_t now)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return cf_seq_next();
    cf_slot_lock(device + 1);
    uint64_t seq = cf_fp_series_locked(device, series, value, used, now);
    cf_slot_unlock(device + 1);
    return seq;
}

uint64_t cf_fp_series_locked(int device, enum cf_series series, int64_t value, uint64_t used,
                             uint64_t now)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return cf_seq_next();
    struct cf_device_stats *d = &cf_rec.dev[device];
    uint64_t seq = cf_seq_next();
    d->seen = true;
    switch (series) {
    case CF_SERIES_POOL:
        d->pool_reserved += (uint64_t)value;
        break;
    case CF_SERIES_GRAPH:
        /* Graph allocations in use are live bytes of the program too. */
        d->live_bytes = d->live_bytes - d->graph_used + used;
        d->graph_used = used;
        d->graph_reserved = (uint64_t)value;
        break;
    case CF_SERIES_ARENA:
        d->arena_mapped = (uint64_t)value;
        break;
    }
    note_peaks(d, now, true);
    return seq;
}

/* The first sample fixes the baseline: what the device held beyond our events
 * (the context, the runtime, other processes). Each later one is held against
 * the computed footprint of the same instant: the deviation is the error. */
uint64_t cf_fp_meminfo(int device, uint64_t used, uint64_t total, uint64_t now)
{
    if (device < 0 || device >= CF_MAX_DEVICES) return cf_seq_next();
    struct cf_device_stats *d = &cf_rec.dev[device];
    cf_slot_lock(device + 1);
    uint64_t seq = cf_seq_next();
    d->total_bytes = total;
    if (d->footprint_samples++ == 0)
        d->baseline_used = used > d->footprint ? used - d->footprint : 0;
    uint64_t measured = used > d->baseline_used ? used - d->baseline_used : 0;
    uint64_t over = measured > d->footprint ? measured - d->footprint : 0;
    uint64_t under = d->footprint > measured ? d->footprint - measured : 0;
    if (over > d->max_over) d->max_over = over;
    if (under > d->max_under) d->max_under = under;
    if (over + under > d->max_deviation) d->max_deviation = over + under;
    if (measured > d->measured_peak) d->measured_peak = measured;
    (void)now;
    cf_slot_unlock(device + 1);
    return seq;
}

void cf_fp_lock_all(void)
{
    for (unsigned i = 0; i < CF_SLOTS; i++)
        cf_lock(&cf_slots[i].lock);
}

void cf_fp_unlock_all(void)
{
    for (unsigned i = CF_SLOTS; i-- > 0;)
        cf_unlock(&cf_slots[i].lock);
}

void cf_fp_forget_sleepers(void)
{
    for (unsigned i = 0; i < CF_SLOTS; i++)
        __atomic_store_n(&cf_slots[i].lock.sleepers, 0, __ATOMIC_RELAXED);
}

bool cf_fp_lock_all_until(const struct timespec *deadline)
{
    for (unsigned i = 0; i < CF_SLOTS; i++) {
        if (cf_lock_until(&cf_slots[i].lock, deadline)) continue;
        while (i-- > 0)
            cf_unlock(&cf_slots[i].lock);
        return false;
    }
    return true;
}
