/* Live allocations: a table per slot (footprint.c), under the slot's lock, which
 * also guards the slot's device figures, so cf_rec_lock_all() (which holds every
 * slot) sees them consistent with the tables. An allocation is inserted,
 * accounted and counted at its site and pool in one critical section when they
 * share its slot, as they do unless a site or pool spans devices.
 *
 * A table holds (address, node) pairs with linear probing, at most half full. A
 * lookup reads the slot's line (its lock and the table's head included) and
 * usually one line of pairs; a chained table (uthash) reads the nodes along the
 * chain, and linking or unlinking a node writes its neighbours, each a cache
 * miss once the program holds many allocations. The nodes carry no handle for
 * any table: the report's copy walks these tables (read.c).
 *
 * A free names an address, not a device: the slot of the thread's last
 * allocation is looked at first, then the other slots that hold allocations.
 * An address is live in one slot at a time (device addresses are unique to
 * their device; a missed free is replaced in its slot). */
#include <string.h>

#include "record/internal.h"
#include "base/log.h"

#define FIRST_PAIRS 64 /* a table's first array: 1 KiB */

/* Device pointers are aligned and VMM handles small: every bit of the address
 * is mixed. */
static uint64_t hash_of(uint64_t addr)
{
    uint64_t h = (addr ^ (addr >> 33)) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

/* With the slot locked: the pair holding addr, or NULL. */
CF_HOT static struct cf_live_pair *find(const struct cf_live_table *tb, uint64_t addr)
{
    if (tb->pairs == NULL) return NULL;
    for (uint64_t i = hash_of(addr) & tb->mask;; i = (i + 1) & tb->mask) {
        struct cf_live_pair *p = &tb->pairs[i];
        if (p->a == NULL) return NULL;
        if (p->addr == addr) return p;
    }
}

CF_HOT static void put(struct cf_live_table *tb, uint64_t addr, struct cf_alloc *a)
{
    uint64_t i = hash_of(addr) & tb->mask;
    while (tb->pairs[i].a != NULL)
        i = (i + 1) & tb->mask;
    tb->pairs[i] = (struct cf_live_pair){addr, a};
    __atomic_store_n(&tb->count, tb->count + 1, __ATOMIC_RELAXED);
}

/* Doubles the array (under the slot's lock: the meta allocator nests inside).
 * False when no memory could be had and the table is full. */
CF_HOT static bool make_room(struct cf_live_table *tb)
{
    uint64_t cap = tb->pairs ? tb->mask + 1 : 0;
    if ((tb->count + 1) * 2 <= cap) return true;
    uint64_t grown = cap ? cap * 2 : FIRST_PAIRS;
    struct cf_live_pair *pairs = cf_meta_alloc(grown * sizeof *pairs);
    if (pairs == NULL) return tb->count + 1 < cap; /* fuller than planned, still probes end */
    memset(pairs, 0, grown * sizeof *pairs);
    struct cf_live_pair *old = tb->pairs;
    tb->pairs = pairs;
    tb->mask = grown - 1;
    tb->count = 0;
    for (uint64_t i = 0; i < cap; i++)
        if (old[i].a) put(tb, old[i].addr, old[i].a);
    cf_meta_free(old, cap * sizeof *old);
    return true;
}

/* Empties p, moving back the pairs after it whose home it would otherwise cut off
 * from them (backward-shift deletion: no tombstones). */
static void take_out(struct cf_live_table *tb, struct cf_live_pair *p)
{
    uint64_t i = (uint64_t)(p - tb->pairs);
    for (uint64_t j = (i + 1) & tb->mask; tb->pairs[j].a != NULL; j = (j + 1) & tb->mask) {
        uint64_t home = hash_of(tb->pairs[j].addr) & tb->mask;
        /* The pair at j stays where it is if its home lies cyclically in (i, j]. */
        bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            tb->pairs[i] = tb->pairs[j];
            i = j;
        }
    }
    tb->pairs[i] = (struct cf_live_pair){0, NULL};
    __atomic_store_n(&tb->count, tb->count - 1, __ATOMIC_RELAXED);
}

/* A site's or pool's figures when they live in another slot than the allocation
 * (a site or pool used on several devices): their own slot's lock, after.
 * site_home -1: the site was counted already; pool NULL: likewise. */
CF_COLD static void count_elsewhere(struct cf_site *site, int site_home, struct cf_pool *pool,
                                    uint64_t size, uint64_t t_ns, bool graph)
{
    if (site_home >= 0) {
        cf_slot_lock(site_home);
        cf_site_count_locked(site, size, t_ns, graph);
        if (pool && pool->home == site_home) {
            cf_pool_count_locked(pool, size);
            pool = NULL;
        }
        cf_slot_unlock(site_home);
    }
    if (pool) {
        cf_slot_lock(pool->home);
        cf_pool_count_locked(pool, size);
        cf_slot_unlock(pool->home);
    }
}

CF_HOT bool cf_live_insert(struct cf_alloc *a, struct cf_site *site, struct cf_pool *pool,
                           uint64_t *seq)
{
    int slot = cf_slot_of(a->kind, a->device);
    struct cf_live_table *tb = &cf_slots[slot].live;
    struct cf_thread *t = cf_thread_self();
    int site_home = site ? cf_site_home(site, slot) : -1;
    struct cf_alloc *stale = NULL;
    bool new_peak = false;
    /* Once the slot is unlocked another thread may free a: read it before. */
    uint64_t size = a->requested, t_ns = a->t_ns;
    bool graph = a->kind == CF_KIND_GRAPH;
    cf_slot_lock(slot);
    struct cf_live_pair *p = find(tb, a->addr);
    if (p) {
        stale = p->a;
        p->a = a; /* the same address, the newcomer's node */
        cf_fp_free(stale, slot, t_ns);
    } else if (make_room(tb)) {
        put(tb, a->addr, a);
    } else {
        cf_slot_unlock(slot);
        cf_warn_once("live-table", "no memory for the live table; allocations go unrecorded");
        *seq = cf_seq_next();
        cf_meta_free(a, sizeof *a);
        return false;
    }
    a->seq = *seq = cf_fp_alloc(a, slot, &new_peak);
    cf_fp_count(slot, 1, 0);
    if (site_home == slot) cf_site_count_locked(site, size, t_ns, graph);
    if (pool && pool->home == slot) cf_pool_count_locked(pool, size);
    if (t) {
        cf_count(&t->allocs, 1);
        t->last_slot = slot;
    }
    cf_slot_unlock(slot);
    int site_else = site_home != slot ? site_home : -1;
    struct cf_pool *pool_else = pool && pool->home != slot ? pool : NULL;
    if (site_else >= 0 || pool_else) count_elsewhere(site, site_else, pool_else, size, t_ns, graph);
    /* The crash summary reads the totals without any lock: keep them recent. */
    if (t && (t->allocs & 1023) == 0) cf_thread_publish_totals();
    if (stale) {
        /* Its free was never seen (e.g. made by a path we do not hook). */
        __atomic_add_fetch(&cf_rec.replaced_live, 1, __ATOMIC_RELAXED);
        cf_live_retire(stale, t_ns);
    }
    return new_peak;
}

static uint64_t lifetime_of(const struct cf_alloc *a)
{
    return a->t_end > a->t_ns ? a->t_end - a->t_ns : 0;
}

/* With slot locked: the end of a's life (sign -1), or its return (+1: the free
 * failed), in its site's and pool's figures that live in slot. True when one of
 * them lives elsewhere (figures_elsewhere). */
CF_HOT static bool figures_here(struct cf_alloc *a, int slot, int sign)
{
    int site_home = a->site ? cf_site_home(a->site, slot) : -1;
    struct cf_pool *pool = a->pool_rec;
    if (site_home == slot) cf_site_free_locked(a->site, a->requested, lifetime_of(a), sign);
    if (pool && pool->home == slot) cf_pool_free_locked(pool, a->requested, sign);
    return (site_home >= 0 && site_home != slot) || (pool && pool->home != slot);
}

/* The same for the figures whose home is another slot than a's (a site or pool
 * used on several devices): their own slot's lock, one section when they share it. */
CF_COLD static void figures_elsewhere(struct cf_alloc *a, int slot, int sign)
{
    int site_home = a->site ? cf_site_home(a->site, slot) : -1;
    struct cf_pool *pool = a->pool_rec;
    if (pool && pool->home == slot) pool = NULL;
    if (site_home >= 0 && site_home != slot) {
        cf_slot_lock(site_home);
        cf_site_free_locked(a->site, a->requested, lifetime_of(a), sign);
        if (pool && pool->home == site_home) {
            cf_pool_free_locked(pool, a->requested, sign);
            pool = NULL;
        }
        cf_slot_unlock(site_home);
    }
    if (pool) {
        cf_slot_lock(pool->home);
        cf_pool_free_locked(pool, a->requested, sign);
        cf_slot_unlock(pool->home);
    }
}

/* addr out of one slot's table, accounted there, its life ended at *end (read
 * here, in the critical section, when 0); NULL: not in this slot. */
CF_HOT static struct cf_alloc *remove_from(int slot, uint64_t addr, uint64_t now, uint64_t *end,
                                           struct cf_thread *t)
{
    struct cf_live_table *tb = &cf_slots[slot].live;
    struct cf_alloc *a = NULL;
    bool elsewhere = false;
    cf_slot_lock(slot);
    struct cf_live_pair *p = find(tb, addr);
    if (p) {
        a = p->a;
        take_out(tb, p);
        a->seq = cf_fp_free(a, slot, now);
        cf_fp_count(slot, 0, 1);
        if (t) cf_count(&t->frees, 1);
        if (*end == 0) *end = cf_now_ns();
        a->t_end = *end;
        elsewhere = figures_here(a, slot, -1);
    }
    cf_slot_unlock(slot);
    if (elsewhere) figures_elsewhere(a, slot, -1);
    return a;
}

CF_HOT struct cf_alloc *cf_live_remove(uint64_t addr, uint64_t now, uint64_t *end)
{
    struct cf_thread *t = cf_thread_self();
    int first = t ? t->last_slot : 1;
    struct cf_alloc *a = remove_from(first, addr, now, end, t);
    /* An empty table cannot hold it: the allocation was inserted, and its slot
     * unlocked, before the program could hand its address to this free. */
    for (int slot = 0; a == NULL && slot < CF_SLOTS; slot++)
        if (slot != first && __atomic_load_n(&cf_slots[slot].live.count, __ATOMIC_RELAXED))
            a = remove_from(slot, addr, now, end, t);
    return a;
}

void cf_live_restore(struct cf_alloc *a, uint64_t now)
{
    int slot = cf_slot_of(a->kind, a->device);
    struct cf_live_table *tb = &cf_slots[slot].live;
    struct cf_thread *t = cf_thread_self();
    bool elsewhere = false;
    cf_slot_lock(slot);
    bool taken = find(tb, a->addr) != NULL;
    bool restored = !taken && make_room(tb);
    if (restored) {
        put(tb, a->addr, a);
        /* Live all along: a peak reached now is one the program really had. */
        uint64_t t_alloc = a->t_ns;
        a->t_ns = now;
        cf_fp_alloc(a, slot, NULL);
        cf_fp_count(slot, 0, -1);
        a->t_ns = t_alloc;
        if (t) cf_count(&t->frees, (uint64_t)-1);
        elsewhere = figures_here(a, slot, +1);
    }
    cf_slot_unlock(slot);
    if (elsewhere) figures_elsewhere(a, slot, +1);
    /* The address was handed out again, so the failed call did give it back. */
    if (!restored) cf_live_forget(a);
}

/* What is left of an allocation's end once it is out of its table. */
CF_HOT void cf_live_forget(struct cf_alloc *a)
{
    cf_metrics_lifetime(lifetime_of(a), a->requested);
    cf_meta_free(a, sizeof *a);
}

/* An allocation whose end was not seen (replaced in its table), at `now`. */
void cf_live_retire(struct cf_alloc *a, uint64_t now)
{
    int slot = cf_slot_of(a->kind, a->device);
    a->t_end = now;
    cf_slot_lock(slot);
    bool elsewhere = figures_here(a, slot, -1);
    cf_slot_unlock(slot);
    if (elsewhere) figures_elsewhere(a, slot, -1);
    cf_live_forget(a);
}

/* One slot locked at a time, and only to copy: a node may be freed once its slot
 * is let go. */
bool cf_live_copy(uint64_t addr, struct cf_alloc *out)
{
    bool found = false;
    for (int slot = 0; !found && slot < CF_SLOTS; slot++) {
        cf_slot_lock(slot);
        const struct cf_live_pair *p = find(&cf_slots[slot].live, addr);
        if (p) *out = *p->a;
        found = p != NULL;
        cf_slot_unlock(slot);
    }
    return found;
}
