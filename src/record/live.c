/* Live allocations, sharded by address so that threads allocating at the same
 * time rarely meet on a lock. Device statistics change under the shard lock (and
 * the device's own, footprint.c), so cf_rec_lock_all() (which holds every shard)
 * sees them consistent with the table.
 *
 * A shard is an open-addressing table of (address, node) pairs with linear
 * probing, at most half full. A lookup reads the shard's line (its lock
 * included) and usually one line of pairs; a chained table (uthash) reads the
 * nodes along the chain, and linking or unlinking a node writes its neighbours,
 * each a cache miss once the program holds many allocations. The nodes carry no
 * handle for the shard: the report's merged view (cf_rec.live) is the only
 * uthash table of live allocations. */
#include <string.h>

#include "record/internal.h"
#include "util/log.h"

#define LIVE_SHARDS 64
#define FIRST_SLOTS 64 /* a shard's first array: 1 KiB */

struct slot {
    uint64_t addr;
    struct cf_alloc *a; /* NULL: empty */
};

struct live_shard {
    struct cf_lock lock;
    struct slot *slots;
    uint64_t mask;  /* slots - 1; 0 before the first insert */
    uint64_t count; /* pairs in use */
} __attribute__((aligned(64)));

static struct live_shard shards[LIVE_SHARDS];

/* Device pointers are aligned and VMM handles small: every bit of the address
 * is mixed. The top bits pick the shard, the low bits the home slot. */
static uint64_t hash_of(uint64_t addr)
{
    uint64_t h = (addr ^ (addr >> 33)) * 0xff51afd7ed558ccdull;
    return h ^ (h >> 29);
}

static struct live_shard *shard_of(uint64_t addr)
{
    return &shards[hash_of(addr) >> 58];
}

/* With the shard's lock held: the slot holding addr, or NULL. */
static struct slot *find(const struct live_shard *sh, uint64_t addr)
{
    if (sh->slots == NULL) return NULL;
    for (uint64_t i = hash_of(addr) & sh->mask;; i = (i + 1) & sh->mask) {
        struct slot *s = &sh->slots[i];
        if (s->a == NULL) return NULL;
        if (s->addr == addr) return s;
    }
}

static void put(struct live_shard *sh, uint64_t addr, struct cf_alloc *a)
{
    uint64_t i = hash_of(addr) & sh->mask;
    while (sh->slots[i].a != NULL)
        i = (i + 1) & sh->mask;
    sh->slots[i] = (struct slot){addr, a};
    sh->count++;
}

/* Doubles the array (under the shard's lock: the meta allocator nests inside).
 * False when no memory could be had and the table is full. */
static bool make_room(struct live_shard *sh)
{
    uint64_t cap = sh->slots ? sh->mask + 1 : 0;
    if ((sh->count + 1) * 2 <= cap) return true;
    uint64_t grown = cap ? cap * 2 : FIRST_SLOTS;
    struct slot *slots = cf_meta_alloc(grown * sizeof *slots);
    if (slots == NULL) return sh->count + 1 < cap; /* fuller than planned, still probes end */
    memset(slots, 0, grown * sizeof *slots);
    struct slot *old = sh->slots;
    sh->slots = slots;
    sh->mask = grown - 1;
    sh->count = 0;
    for (uint64_t i = 0; i < cap; i++)
        if (old[i].a) put(sh, old[i].addr, old[i].a);
    cf_meta_free(old, cap * sizeof *old);
    return true;
}

/* Empties s, moving back the pairs after it whose home slot it would otherwise
 * cut off from them (backward-shift deletion: no tombstones). */
static void take_out(struct live_shard *sh, struct slot *s)
{
    uint64_t i = (uint64_t)(s - sh->slots);
    for (uint64_t j = (i + 1) & sh->mask; sh->slots[j].a != NULL; j = (j + 1) & sh->mask) {
        uint64_t home = hash_of(sh->slots[j].addr) & sh->mask;
        /* The pair at j stays where it is if its home lies cyclically in (i, j]. */
        bool stays = i < j ? (home > i && home <= j) : (home > i || home <= j);
        if (!stays) {
            sh->slots[i] = sh->slots[j];
            i = j;
        }
    }
    sh->slots[i] = (struct slot){0, NULL};
    sh->count--;
}

bool cf_live_insert(struct cf_alloc *a, uint64_t *seq)
{
    struct live_shard *sh = shard_of(a->addr);
    struct cf_thread *t = cf_thread_self();
    struct cf_alloc *stale = NULL;
    bool new_peak = false;
    cf_lock(&sh->lock);
    struct slot *s = find(sh, a->addr);
    if (s) {
        stale = s->a;
        s->a = a; /* the same address, the newcomer's node */
        cf_fp_free(stale, a->t_ns);
    } else if (make_room(sh)) {
        put(sh, a->addr, a);
    } else {
        cf_unlock(&sh->lock);
        cf_warn_once("live-table", "no memory for the live table; allocations go unrecorded");
        *seq = cf_seq_next();
        cf_meta_free(a, sizeof *a);
        return false;
    }
    a->seq = *seq = cf_fp_alloc(a, &new_peak);
    if (t) cf_count(&t->allocs, 1);
    cf_unlock(&sh->lock);
    /* The crash summary reads the totals without any lock: keep them recent. */
    if (t && (t->allocs & 1023) == 0) cf_thread_publish_totals();
    if (stale) {
        /* Its free was never seen (e.g. made by a path we do not hook). */
        __atomic_add_fetch(&cf_rec.replaced_live, 1, __ATOMIC_RELAXED);
        cf_rec_retire(stale, a->t_ns);
    }
    return new_peak;
}

struct cf_alloc *cf_live_remove(uint64_t addr, uint64_t now)
{
    struct live_shard *sh = shard_of(addr);
    struct cf_thread *t = cf_thread_self();
    struct cf_alloc *a = NULL;
    cf_lock(&sh->lock);
    struct slot *s = find(sh, addr);
    if (s) {
        a = s->a;
        take_out(sh, s);
        a->seq = cf_fp_free(a, now);
        if (t) cf_count(&t->frees, 1);
    }
    cf_unlock(&sh->lock);
    return a;
}

void cf_live_restore(struct cf_alloc *a, uint64_t now)
{
    struct live_shard *sh = shard_of(a->addr);
    struct cf_thread *t = cf_thread_self();
    cf_lock(&sh->lock);
    bool taken = find(sh, a->addr) != NULL;
    bool restored = !taken && make_room(sh);
    if (restored) {
        put(sh, a->addr, a);
        /* Live all along: a peak reached now is one the program really had. */
        uint64_t t_alloc = a->t_ns;
        a->t_ns = now;
        cf_fp_alloc(a, NULL);
        a->t_ns = t_alloc;
        if (t) cf_count(&t->frees, (uint64_t)-1);
    }
    cf_unlock(&sh->lock);
    /* The address was handed out again, so the failed call did give it back. */
    if (!restored) cf_rec_retire(a, now);
}

void cf_live_lock_all(void)
{
    for (unsigned i = 0; i < LIVE_SHARDS; i++)
        cf_lock(&shards[i].lock);
}

void cf_live_unlock_all(void)
{
    for (unsigned i = LIVE_SHARDS; i-- > 0;)
        cf_unlock(&shards[i].lock);
}

void cf_live_build_view(void)
{
    cf_live_drop_view();
    for (unsigned i = 0; i < LIVE_SHARDS; i++) {
        const struct live_shard *sh = &shards[i];
        for (uint64_t k = 0; sh->slots && k <= sh->mask; k++) {
            struct cf_alloc *a = sh->slots[k].a;
            if (a) HASH_ADD(hh, cf_rec.live, addr, sizeof a->addr, a);
        }
    }
}

void cf_live_drop_view(void)
{
    /* Frees only the view's buckets; the nodes stay in their shards. */
    HASH_CLEAR(hh, cf_rec.live);
}
