/* Memory pools by handle: what the pool APIs told us, what async allocations
 * added, and the last cuMemPoolGetAttribute sample (taken by sample.c without
 * any lock, then stored here). pool_lock guards the table, each pool's own lock
 * its fields. Pools are never freed (a destroyed one is marked), so a thread
 * remembers the pool it allocated from last (struct cf_thread) and an
 * allocation from it needs neither the table nor its lock. */
#include <string.h>

#include "record/internal.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

/* The table, then every pool. */
void cf_pool_lock(void)
{
    pthread_mutex_lock(&pool_lock);
    for (struct cf_pool *p = cf_rec.pools; p; p = p->hh.next)
        cf_lock(&p->lock);
}

void cf_pool_unlock(void)
{
    for (struct cf_pool *p = cf_rec.pools; p; p = p->hh.next)
        cf_unlock(&p->lock);
    pthread_mutex_unlock(&pool_lock);
}

/* A pool first met through an allocation gets device -1 until the pool APIs say
 * more. */
static struct cf_pool *find_or_add(uint64_t handle, int device)
{
    struct cf_thread *t = cf_thread_self();
    if (t && t->pool && t->pool_handle == handle) return t->pool;
    struct cf_pool *p;
    pthread_mutex_lock(&pool_lock);
    HASH_FIND(hh, cf_rec.pools, &handle, sizeof handle, p);
    if (p == NULL && (p = cf_meta_alloc(sizeof *p)) != NULL) {
        memset(p, 0, sizeof *p);
        p->handle = handle;
        p->device = device;
        HASH_ADD(hh, cf_rec.pools, handle, sizeof p->handle, p);
    }
    pthread_mutex_unlock(&pool_lock);
    if (t && p) {
        t->pool_handle = handle;
        t->pool = p;
    }
    return p;
}

/* With p's lock held: returns the change of reserved bytes a sample brings. */
static int64_t store_sample(struct cf_pool *p, const struct cf_event *e)
{
    int64_t delta = (int64_t)(e->v[0] - p->reserved_cur);
    if (p->samples && e->v[0] < p->reserved_cur) {
        p->shrinks++;
        p->shrunk = true;
    } else if (p->samples && e->v[0] > p->reserved_cur && p->shrunk) {
        p->regrows++;
        p->shrunk = false;
    }
    p->samples++;
    p->last_sample_ns = e->t_ns;
    p->live_at_read = p->live_bytes;
    p->reserved_cur = e->v[0];
    p->reserved_high = e->v[1];
    p->used_cur = e->v[2];
    p->used_high = e->v[3];
    p->release_threshold = e->v[4];
    return delta;
}

/* With p's lock held: returns the change of the device's reserved bytes. */
static int64_t apply_op(struct cf_pool *p, const struct cf_event *e)
{
    int64_t delta = 0;
    switch (e->op) {
    case CF_POOL_SEEN:
        if (e->device >= 0) p->device = e->device;
        p->is_default |= (e->flags & 1) != 0;
        p->created_by_app |= (e->flags & 2) != 0;
        /* A handle can be reused by the driver after a destroy. */
        if (e->flags & 2) p->destroyed = false;
        break;
    case CF_POOL_DESTROYED:
        p->destroyed = true;
        delta = -(int64_t)p->reserved_cur;
        p->reserved_cur = 0;
        break;
    case CF_POOL_THRESHOLD:
        p->release_threshold = e->v[0];
        break;
    case CF_POOL_TRIM:
        p->trims++;
        break;
    case CF_POOL_SAMPLE:
        if (!p->destroyed) delta = store_sample(p, e);
        break;
    case CF_POOL_RESERVED:
        if (!p->destroyed) {
            delta = (int64_t)(e->v[0] - p->reserved_cur);
            p->reserved_cur = e->v[0];
            if (e->v[0] > p->reserved_high) p->reserved_high = e->v[0];
        }
        break;
    }
    return delta;
}

/* The device's reserved bytes change under the pool's lock, so that the events
 * of one pool take their seq in the order in which they changed it (a replay in
 * seq order then computes the same deltas). */
uint64_t cf_pool_apply_seq(const struct cf_event *e)
{
    if (e->pool == 0) return 0;
    struct cf_pool *p = find_or_add(e->pool, e->op == CF_POOL_SEEN ? e->device : -1);
    if (p == NULL) return 0;
    uint64_t seq = 0;
    cf_lock(&p->lock);
    int64_t delta = apply_op(p, e);
    int device = p->device >= 0 ? p->device : e->device;
    if (delta != 0) seq = cf_fp_series(device, CF_SERIES_POOL, delta, 0, e->t_ns);
    cf_unlock(&p->lock);
    return seq;
}

void cf_pool_apply(const struct cf_event *e)
{
    cf_pool_apply_seq(e);
}

static void pool_event(enum cf_pool_op op, uint64_t pool, int device, uint8_t flags, uint64_t v0)
{
    if (pool == 0) return;
    cf_rec_init();
    struct cf_event e = {.type = CF_EV_POOL,
                         .op = (uint8_t)op,
                         .flags = flags,
                         .pool = pool,
                         .device = device,
                         .t_ns = cf_now_ns(),
                         .v = {v0}};
    e.seq = cf_pool_apply_seq(&e);
    cf_emit(&e);
}

void cf_rec_pool_seen(uint64_t pool, int device, bool is_default, bool created_by_app)
{
    pool_event(CF_POOL_SEEN, pool, device, (uint8_t)(is_default | created_by_app << 1), 0);
}

void cf_rec_pool_destroyed(uint64_t pool)
{
    pool_event(CF_POOL_DESTROYED, pool, -1, 0, 0);
}

void cf_rec_pool_threshold(uint64_t pool, uint64_t threshold)
{
    pool_event(CF_POOL_THRESHOLD, pool, -1, 0, threshold);
}

/* The driver gives memory back in a trim: read what is left. */
void cf_rec_pool_trim(uint64_t pool)
{
    pool_event(CF_POOL_TRIM, pool, -1, 0, 0);
    if (!cf_rec_replaying) cf_sample_pool_now(pool, -1);
}

void cf_pool_account(uint64_t pool, int device, int64_t bytes)
{
    struct cf_pool *p = find_or_add(pool, device);
    if (p == NULL) return;
    cf_lock(&p->lock);
    if (bytes >= 0) {
        p->allocs++;
        p->live_bytes += (uint64_t)bytes;
        if (p->live_bytes > p->peak_live_bytes) p->peak_live_bytes = p->live_bytes;
    } else {
        p->frees++;
        p->live_bytes -= (uint64_t)-bytes;
    }
    cf_unlock(&p->lock);
}

/* Without the pool's lock: the answer only picks which reads to make, and the
 * full sample is claimed with a compare-and-swap on its time, so concurrent
 * allocations take one between them. */
enum cf_pool_read cf_pool_wants_read(uint64_t pool, uint64_t now, uint64_t interval_ns,
                                     uint64_t *reserved)
{
    struct cf_pool *p = find_or_add(pool, -1);
    if (p == NULL || __atomic_load_n(&p->destroyed, __ATOMIC_RELAXED)) return CF_POOL_READ_NONE;
    *reserved = __atomic_load_n(&p->reserved_cur, __ATOMIC_RELAXED);
    uint64_t last = __atomic_load_n(&p->last_sample_ns, __ATOMIC_RELAXED);
    if (__atomic_load_n(&p->samples, __ATOMIC_RELAXED) != 0 && now - last < interval_ns)
        return CF_POOL_READ_RESERVED;
    if (__atomic_compare_exchange_n(&p->last_sample_ns, &last, now, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
        return CF_POOL_READ_ALL;
    return CF_POOL_READ_RESERVED;
}

uint64_t cf_pool_store_reserved(uint64_t pool, int device, uint64_t reserved, uint64_t now)
{
    struct cf_event e = {.type = CF_EV_POOL,
                         .op = CF_POOL_RESERVED,
                         .pool = pool,
                         .device = device,
                         .t_ns = now,
                         .v = {reserved}};
    e.seq = cf_pool_apply_seq(&e);
    cf_emit(&e);
    return e.seq;
}

uint64_t cf_pool_store_sample(uint64_t pool, int device, const struct cf_pool_sample *s,
                              uint64_t now)
{
    struct cf_event e = {
        .type = CF_EV_POOL,
        .op = CF_POOL_SAMPLE,
        .pool = pool,
        .device = device,
        .t_ns = now,
        .v = {s->reserved_cur, s->reserved_high, s->used_cur, s->used_high, s->threshold}};
    e.seq = cf_pool_apply_seq(&e);
    cf_emit(&e);
    return e.seq;
}

unsigned cf_pool_handles(uint64_t *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&pool_lock);
    for (struct cf_pool *p = cf_rec.pools; p && n < max; p = p->hh.next)
        if (!__atomic_load_n(&p->destroyed, __ATOMIC_RELAXED)) out[n++] = p->handle;
    pthread_mutex_unlock(&pool_lock);
    return n;
}
