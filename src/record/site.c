/* Call sites: one node per distinct stack, never freed (live allocations and the
 * threads' caches point at them). site_lock guards the table. A site's figures
 * change under the lock of its home slot (footprint.c): the slot of its first
 * allocation, where its allocations are recorded anyway, so counting one at its
 * site takes no lock of its own. A thread remembers the sites it used last
 * (struct cf_thread): an intercepted call finds its site without the table. */
#include <string.h>

#include "record/internal.h"

static pthread_mutex_t site_lock = PTHREAD_MUTEX_INITIALIZER;

void cf_site_lock(void)
{
    pthread_mutex_lock(&site_lock);
}

void cf_site_unlock(void)
{
    pthread_mutex_unlock(&site_lock);
}

bool cf_site_lock_until(const struct timespec *deadline)
{
    return cf_mutex_lock_until(&site_lock, deadline);
}

int cf_site_home(struct cf_site *s, int slot)
{
    int home = __atomic_load_n(&s->home, __ATOMIC_RELAXED);
    if (CF_LIKELY(home >= 0)) return home;
    if (__atomic_compare_exchange_n(&s->home, &home, slot, false, __ATOMIC_RELAXED,
                                    __ATOMIC_RELAXED))
        return slot;
    return home; /* another thread's first event came first */
}

static uint32_t next_id = 1;

/* With site_lock held. A site whose frames cannot be stored keeps none. */
static struct cf_site *find_or_add(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                                   uint32_t nframes, bool *created)
{
    struct cf_site *s;
    HASH_FIND(hh, cf_rec.sites, &hash, sizeof hash, s);
    if (s) return s;
    s = cf_meta_alloc(sizeof *s);
    if (s == NULL) return NULL;
    memset(s, 0, sizeof *s);
    s->hash = hash;
    s->home = -1;
    s->id = next_id++;
    s->api = api;
    s->frames = nframes ? cf_meta_alloc(nframes * sizeof *frames) : NULL;
    if (s->frames) {
        memcpy(s->frames, frames, nframes * sizeof *frames);
        s->nframes = nframes;
    }
    HASH_ADD(hh, cf_rec.sites, hash, sizeof s->hash, s);
    *created = true;
    return s;
}

static struct cf_site_ref *ref_of(struct cf_thread *t, uint64_t hash)
{
    return &t->sites[(hash >> 32) % CF_SITE_REFS];
}

struct cf_site *cf_site_get(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                            uint32_t nframes, bool *created)
{
    *created = false;
    struct cf_thread *t = cf_thread_self();
    struct cf_site_ref *ref = t ? ref_of(t, hash) : NULL;
    if (ref && ref->site && ref->hash == hash) return ref->site;
    pthread_mutex_lock(&site_lock);
    struct cf_site *s = find_or_add(hash, api, frames, nframes, created);
    pthread_mutex_unlock(&site_lock);
    if (ref && s) *ref = (struct cf_site_ref){.hash = hash, .site = s};
    return s;
}

/* Exact up to CF_SITE_SIZES sizes; after that only "more" is known. */
static void note_size(struct cf_site *s, uint64_t size)
{
    uint32_t known = s->distinct_sizes < CF_SITE_SIZES ? s->distinct_sizes : CF_SITE_SIZES;
    for (uint32_t i = 0; i < known; i++)
        if (s->size_seen[i] == size) return;
    if (s->distinct_sizes < CF_SITE_SIZES) s->size_seen[s->distinct_sizes] = size;
    if (s->distinct_sizes <= CF_SITE_SIZES) s->distinct_sizes++;
}

CF_HOT void cf_site_count_locked(struct cf_site *s, uint64_t size, uint64_t now, bool graph)
{
    s->calls++;
    s->graph_calls += graph;
    s->bytes += size;
    s->live_bytes += size;
    s->live_count++;
    if (s->live_bytes > s->peak_live_bytes) s->peak_live_bytes = s->live_bytes;
    if (s->first_ns == 0) s->first_ns = now;
    s->last_ns = now;
    if (s->calls == 1 || size < s->min_size) s->min_size = size;
    if (size > s->max_size) s->max_size = size;
    /* A size this thread noted at this site last time is among its sizes already:
     * the size list (a line of its own) is not read again. */
    struct cf_thread *t = cf_thread_self();
    struct cf_site_ref *ref = t ? ref_of(t, s->hash) : NULL;
    if (ref && ref->site != s) ref = NULL;
    if (ref == NULL || ref->last_size != size + 1) note_size(s, size);
    if (ref) ref->last_size = size + 1;
}

void cf_site_free_locked(struct cf_site *s, uint64_t size, uint64_t lifetime_ns, int sign)
{
    s->frees += (uint64_t)-sign;
    s->live_bytes += (uint64_t)sign * size;
    s->live_count += (uint64_t)sign;
    s->lifetime_ns_total += (uint64_t)-sign * lifetime_ns;
    s->lifetime_count += (uint64_t)-sign;
    if (s->live_bytes > s->peak_live_bytes) s->peak_live_bytes = s->live_bytes;
}

void cf_site_fail(struct cf_site *s, int slot)
{
    if (s == NULL) return;
    int home = cf_site_home(s, slot);
    cf_slot_lock(home);
    s->failures++;
    cf_slot_unlock(home);
}
