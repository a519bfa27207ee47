/* Call sites: one node per distinct stack, never freed (live allocations point
 * at them). All site statistics change under one lock, taken after the stack was
 * unwound, for a handful of additions. */
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

static uint32_t next_id = 1;

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
    s->id = next_id++;
    s->api = api;
    s->nframes = nframes;
    memcpy(s->frames, frames, nframes * sizeof *frames);
    HASH_ADD(hh, cf_rec.sites, hash, sizeof s->hash, s);
    *created = true;
    return s;
}

struct cf_site *cf_site_get(uint64_t hash, enum cf_api api, const uintptr_t *frames,
                            uint32_t nframes, bool *created)
{
    *created = false;
    pthread_mutex_lock(&site_lock);
    struct cf_site *s = find_or_add(hash, api, frames, nframes, created);
    pthread_mutex_unlock(&site_lock);
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

void cf_site_count(struct cf_site *s, uint64_t size, bool ok, uint64_t now)
{
    if (s == NULL) return;
    pthread_mutex_lock(&site_lock);
    if (!ok) s->failures++;
    if (ok) {
        s->calls++;
        s->bytes += size;
        s->live_bytes += size;
        s->live_count++;
        if (s->live_bytes > s->peak_live_bytes) s->peak_live_bytes = s->live_bytes;
        if (s->first_ns == 0) s->first_ns = now;
        s->last_ns = now;
        if (s->calls == 1 || size < s->min_size) s->min_size = size;
        if (size > s->max_size) s->max_size = size;
        note_size(s, size);
    }
    pthread_mutex_unlock(&site_lock);
}

void cf_site_free(struct cf_site *s, uint64_t size, uint64_t lifetime_ns)
{
    pthread_mutex_lock(&site_lock);
    s->frees++;
    s->live_bytes -= size;
    s->live_count--;
    s->lifetime_ns_total += lifetime_ns;
    s->lifetime_count++;
    pthread_mutex_unlock(&site_lock);
}
