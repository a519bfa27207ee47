/* Memory pools by handle: what the pool APIs told us, what async allocations
 * added, and the last cuMemPoolGetAttribute sample (taken by sample.c without
 * any lock, then stored here). pool_lock guards the table. A pool's fields change
 * under the lock of its home slot (footprint.c): its device's when that was known
 * as it was first met (as it is for an allocation from it), else the slot of no
 * device; an allocation from the pool is recorded under that lock anyway. Pools
 * are never freed (a destroyed one is marked), so a thread remembers the pool it
 * allocated from last (struct cf_thread) and an allocation from it needs neither
 * the table nor its lock. */
#include <string.h>

#include "record/internal.h"

static pthread_mutex_t pool_lock = PTHREAD_MUTEX_INITIALIZER;

void cf_pool_lock(void)
{
    pthread_mutex_lock(&pool_lock);
}

void cf_pool_unlock(void)
{
    pthread_mutex_unlock(&pool_lock);
}

bool cf_pool_lock_until(const struct timespec *deadline)
{
    return cf_mutex_lock_until(&pool_lock, deadline);
}

/* A pool first met through an allocation gets device -1 until the pool APIs say
 * more. */
CF_HOT struct cf_pool *cf_pool_get(uint64_t handle, int device)
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
        p->home = cf_slot_of(CF_KIND_POOL, device);
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

static int device_slot(int device)
{
    return device >= 0 && device < CF_MAX_DEVICES ? device + 1 : -1;
}

/* The pool's home slot and the slot of the device its reserved bytes count on
 * (-1: none), in ascending order. */
static void lock_pair(int home, int dev_slot)
{
    if (dev_slot >= 0 && dev_slot < home) cf_slot_lock(dev_slot);
    cf_slot_lock(home);
    if (dev_slot > home) cf_slot_lock(dev_slot);
}

static void unlock_pair(int home, int dev_slot)
{
    if (dev_slot > home) cf_slot_unlock(dev_slot);
    cf_slot_unlock(home);
    if (dev_slot >= 0 && dev_slot < home) cf_slot_unlock(dev_slot);
}

/* The device's reserved bytes change under the pool's home lock, so that the
 * events of one pool take their seq in the order in which they changed it (a
 * replay in seq order then computes the same deltas). The device's own slot is
 * taken with it; which device that is can change (until the pool APIs name it),
 * so it is checked again under the locks. */
uint64_t cf_pool_apply_seq(const struct cf_event *e)
{
    if (e->pool == 0) return 0;
    /* A pool first met through an allocation is first met through the read of its
     * reserved bytes taken before it (sample.c): with the allocation's device, in
     * the process and in a replay alike. */
    struct cf_pool *p = cf_pool_get(e->pool, e->device);
    if (p == NULL) return 0;
    int device, dev_slot;
    for (;;) {
        int known = __atomic_load_n(&p->device, __ATOMIC_RELAXED);
        device = known >= 0 ? known : e->device;
        dev_slot = device_slot(device);
        lock_pair(p->home, dev_slot == p->home ? -1 : dev_slot);
        if (p->device == known) break;
        unlock_pair(p->home, dev_slot == p->home ? -1 : dev_slot);
    }
    int64_t delta = apply_op(p, e);
    uint64_t seq = 0;
    if (delta != 0)
        seq = dev_slot >= 0 ? cf_fp_series_locked(device, CF_SERIES_POOL, delta, 0, e->t_ns)
                            : cf_seq_next();
    unlock_pair(p->home, dev_slot == p->home ? -1 : dev_slot);
    return seq;
}

void cf_pool_apply(const struct cf_event *e)
{
    cf_pool_apply_seq(e);
}

void cf_pool_count_locked(struct cf_pool *p, uint64_t bytes)
{
    p->allocs++;
    p->live_bytes += bytes;
    if (p->live_bytes > p->peak_live_bytes) p->peak_live_bytes = p->live_bytes;
}

void cf_pool_free_locked(struct cf_pool *p, uint64_t bytes, int sign)
{
    p->frees += (uint64_t)-sign;
    p->live_bytes += (uint64_t)sign * bytes;
    if (p->live_bytes > p->peak_live_bytes) p->peak_live_bytes = p->live_bytes;
}

/* Without the pool's lock: the answer only picks which reads to make, and the
 * full sample is claimed with a compare-and-swap on its time, so concurrent
 * allocations take one between them. */
enum cf_pool_read cf_pool_wants_read(uint64_t pool, int device, uint64_t now, uint64_t interval_ns,
                                     uint64_t *reserved)
{
    struct cf_pool *p = cf_pool_get(pool, device);
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
