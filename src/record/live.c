/* Live allocations, sharded by address so that threads allocating at the same
 * time rarely meet on a lock. Device statistics change under the shard lock (and
 * the device's own, footprint.c), so cf_rec_lock_all() (which holds every shard)
 * sees them consistent with the table. */
#include "record/internal.h"

#define LIVE_SHARDS 64

struct live_shard {
    pthread_mutex_t lock;
    struct cf_alloc *table; /* uthash through hh_shard */
} __attribute__((aligned(64)));

static struct live_shard shards[LIVE_SHARDS] = {
    [0 ... LIVE_SHARDS - 1] = {.lock = PTHREAD_MUTEX_INITIALIZER},
};

static struct live_shard *shard_of(uint64_t addr)
{
    /* Device pointers are aligned: mix the middle bits, not the low ones. */
    uint64_t h = (addr >> 9) * 0x9e3779b97f4a7c15ull;
    return &shards[h >> 58];
}

bool cf_live_insert(struct cf_alloc *a, uint64_t *seq)
{
    struct live_shard *sh = shard_of(a->addr);
    struct cf_thread *t = cf_thread_self();
    struct cf_alloc *stale;
    bool new_peak = false;
    pthread_mutex_lock(&sh->lock);
    HASH_FIND(hh_shard, sh->table, &a->addr, sizeof a->addr, stale);
    if (stale) {
        HASH_DELETE(hh_shard, sh->table, stale);
        cf_fp_free(stale, a->t_ns);
    }
    HASH_ADD(hh_shard, sh->table, addr, sizeof a->addr, a);
    a->seq = *seq = cf_fp_alloc(a, &new_peak);
    if (t) cf_count(&t->allocs, 1);
    pthread_mutex_unlock(&sh->lock);
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
    struct cf_alloc *a;
    pthread_mutex_lock(&sh->lock);
    HASH_FIND(hh_shard, sh->table, &addr, sizeof addr, a);
    if (a) {
        HASH_DELETE(hh_shard, sh->table, a);
        a->seq = cf_fp_free(a, now);
        if (t) cf_count(&t->frees, 1);
    }
    pthread_mutex_unlock(&sh->lock);
    return a;
}

void cf_live_restore(struct cf_alloc *a, uint64_t now)
{
    struct live_shard *sh = shard_of(a->addr);
    struct cf_thread *t = cf_thread_self();
    struct cf_alloc *taken;
    pthread_mutex_lock(&sh->lock);
    HASH_FIND(hh_shard, sh->table, &a->addr, sizeof a->addr, taken);
    if (taken == NULL) {
        HASH_ADD(hh_shard, sh->table, addr, sizeof a->addr, a);
        /* Live all along: a peak reached now is one the program really had. */
        uint64_t t_alloc = a->t_ns;
        a->t_ns = now;
        cf_fp_alloc(a, NULL);
        a->t_ns = t_alloc;
        if (t) cf_count(&t->frees, (uint64_t)-1);
    }
    pthread_mutex_unlock(&sh->lock);
    /* The address was handed out again, so the failed call did give it back. */
    if (taken) cf_rec_retire(a, now);
}

void cf_live_lock_all(void)
{
    for (unsigned i = 0; i < LIVE_SHARDS; i++)
        pthread_mutex_lock(&shards[i].lock);
}

void cf_live_unlock_all(void)
{
    for (unsigned i = LIVE_SHARDS; i-- > 0;)
        pthread_mutex_unlock(&shards[i].lock);
}

void cf_live_build_view(void)
{
    cf_live_drop_view();
    for (unsigned i = 0; i < LIVE_SHARDS; i++)
        for (struct cf_alloc *a = shards[i].table; a; a = a->hh_shard.next)
            HASH_ADD(hh, cf_rec.live, addr, sizeof a->addr, a);
}

void cf_live_drop_view(void)
{
    /* Frees only the view's buckets; the nodes stay in their shards. */
    HASH_CLEAR(hh, cf_rec.live);
}
