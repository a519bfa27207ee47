/* Memory pools by handle: what the pool APIs told us, what async allocations
 * added, and the last cuMemPoolGetAttribute sample (taken by sample.c without
 * this lock, then stored here). */
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

/* With pool_lock held. A pool first met through an allocation gets device -1
 * until the pool APIs say more. */
static struct cf_pool *find_or_add(uint64_t handle, int device)
{
    struct cf_pool *p;
    HASH_FIND(hh, cf_rec.pools, &handle, sizeof handle, p);
    if (p) return p;
    p = cf_meta_alloc(sizeof *p);
    if (p == NULL) return NULL;
    memset(p, 0, sizeof *p);
    p->handle = handle;
    p->device = device;
    HASH_ADD(hh, cf_rec.pools, handle, sizeof p->handle, p);
    return p;
}

void cf_rec_pool_seen(uint64_t pool, int device, bool is_default, bool created_by_app)
{
    if (pool == 0) return;
    cf_rec_init();
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, device);
    if (p) {
        if (device >= 0) p->device = device;
        p->is_default |= is_default;
        p->created_by_app |= created_by_app;
        /* A handle can be reused by the driver after a destroy. */
        if (created_by_app) p->destroyed = false;
    }
    pthread_mutex_unlock(&pool_lock);
}

void cf_rec_pool_destroyed(uint64_t pool)
{
    cf_rec_init();
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, -1);
    if (p) p->destroyed = true;
    pthread_mutex_unlock(&pool_lock);
}

void cf_rec_pool_threshold(uint64_t pool, uint64_t threshold)
{
    cf_rec_init();
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, -1);
    if (p) p->release_threshold = threshold;
    pthread_mutex_unlock(&pool_lock);
}

void cf_rec_pool_trim(uint64_t pool)
{
    cf_rec_init();
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, -1);
    if (p) p->trims++;
    pthread_mutex_unlock(&pool_lock);
}

void cf_pool_account(uint64_t pool, int device, int64_t bytes)
{
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, device);
    if (p && bytes >= 0) {
        p->allocs++;
        p->live_bytes += (uint64_t)bytes;
        if (p->live_bytes > p->peak_live_bytes) p->peak_live_bytes = p->live_bytes;
    } else if (p) {
        p->frees++;
        p->live_bytes -= (uint64_t)-bytes;
    }
    pthread_mutex_unlock(&pool_lock);
}

bool cf_pool_claim_sample(uint64_t pool, uint64_t now, uint64_t interval_ns)
{
    bool due = false;
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, -1);
    if (p && !p->destroyed && (p->samples == 0 || now - p->last_sample_ns >= interval_ns)) {
        p->last_sample_ns = now;
        due = true;
    }
    pthread_mutex_unlock(&pool_lock);
    return due;
}

void cf_pool_store_sample(uint64_t pool, const struct cf_pool_sample *s)
{
    pthread_mutex_lock(&pool_lock);
    struct cf_pool *p = find_or_add(pool, -1);
    if (p) {
        if (p->samples && s->reserved_cur < p->reserved_cur) {
            p->shrinks++;
            p->shrunk = true;
        } else if (p->samples && s->reserved_cur > p->reserved_cur && p->shrunk) {
            p->regrows++;
            p->shrunk = false;
        }
        p->samples++;
        p->reserved_cur = s->reserved_cur;
        p->reserved_high = s->reserved_high;
        p->used_cur = s->used_cur;
        p->used_high = s->used_high;
        p->release_threshold = s->threshold;
    }
    pthread_mutex_unlock(&pool_lock);
}

unsigned cf_pool_handles(uint64_t *out, unsigned max)
{
    unsigned n = 0;
    pthread_mutex_lock(&pool_lock);
    for (struct cf_pool *p = cf_rec.pools; p && n < max; p = p->hh.next)
        if (!p->destroyed) out[n++] = p->handle;
    pthread_mutex_unlock(&pool_lock);
    return n;
}
