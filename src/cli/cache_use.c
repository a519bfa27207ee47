/* Per trace site: the driver allocations it made, their sizes' greatest common
 * divisor, and the cache its stack passes through. A site's frames arrive with
 * its SITE event, which the trace may order after the site's first allocation,
 * so both are kept until the end. */
#include "cli/cache_use.h"

#include <stdlib.h>
#include <string.h>

#include "cli/replay.h"
#include "record/event.h"
#include "record/record.h"
#include "replay/caches.h"

struct cf_cache_site {
    uint64_t allocations, gcd;
    const struct cf_rp_cache *cache;
    char module[128];
};

static struct cf_cache_site *slot(struct cf_cache_use *u, uint32_t id)
{
    uint64_t *v = cf_u64map_get(&u->slot_of_site, id);
    if (v) return &u->sites[*v - 1];
    if (u->nsites == u->cap) {
        uint32_t cap = u->cap ? 2 * u->cap : 64;
        struct cf_cache_site *grown = realloc(u->sites, cap * sizeof *grown);
        if (grown == NULL) return NULL;
        u->sites = grown;
        u->cap = cap;
    }
    if (cf_u64map_put(&u->slot_of_site, id, u->nsites + 1u) != 0) return NULL;
    struct cf_cache_site *s = &u->sites[u->nsites++];
    memset(s, 0, sizeof *s);
    return s;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t r = a % b;
        a = b;
        b = r;
    }
    return a;
}

/* Device memory straight from the driver: what a cache takes for its segments
 * (a stream-ordered pool's allocations are per tensor already). */
static bool from_driver(const struct cf_event *e)
{
    const struct cf_api_info *a = &cf_api_info[e->api];
    return a->role == 'A' && (a->kind == CF_KIND_DEVICE || a->kind == CF_KIND_VMM) &&
           e->result == 0 && e->size != 0;
}

static void site_frames(struct cf_cache_site *s, const struct cf_event *e)
{
    char path[512];
    for (uint32_t f = 0; f < e->nframes && s->cache == NULL; f++) {
        if (cf_replay_module(e->frames[f], path, sizeof path) != 0) continue;
        s->cache = cf_rp_cache_of(path);
        const char *slash = strrchr(path, '/'), *base = slash ? slash + 1 : path;
        size_t len = strlen(base) < sizeof s->module ? strlen(base) : sizeof s->module - 1;
        memcpy(s->module, base, len);
        s->module[len] = '\0';
    }
}

void cf_cache_use_event(struct cf_cache_use *u, const struct cf_event *e)
{
    bool site = e->type == CF_EV_SITE;
    if (u->failed || e->site == 0 || e->api >= CF_API_COUNT) return;
    if (!site && (e->type != CF_EV_ALLOC || !from_driver(e))) return;
    struct cf_cache_site *s = slot(u, e->site);
    if (s == NULL) {
        u->failed = true;
    } else if (site) {
        site_frames(s, e);
    } else {
        s->allocations++;
        s->gcd = gcd(s->gcd, e->size);
    }
}

/* A run under `cudafrag run --blocks` bypassed the caches whatever its stacks
 * show. One size off the granule anywhere in the framework's code means its
 * cache was off (a tensor's own size), so the sizes are judged together. Only
 * one framework is named: a program holds one caching allocator. */
void cf_cache_use_find(const struct cf_cache_use *u, struct cf_rp_table *t)
{
    for (unsigned i = 0; i < t->ndevs; i++)
        t->cache.of += t->devs[i].stream->nallocs;
    if ((t->blocks && t->blocks[0]) || u->failed) return;
    const struct cf_cache_site *first = NULL;
    uint64_t allocations = 0, sizes = 0;
    for (uint32_t i = 0; i < u->nsites; i++) {
        const struct cf_cache_site *s = &u->sites[i];
        if (s->cache == NULL || s->allocations == 0) continue;
        if (first == NULL) first = s;
        if (s->cache != first->cache) continue;
        allocations += s->allocations;
        sizes = gcd(sizes, s->gcd);
    }
    if (first == NULL || sizes % first->cache->segment_granule) return;
    t->cache.framework = first->cache->framework;
    memcpy(t->cache.module, first->module, sizeof first->module);
    t->cache.allocations = allocations < t->cache.of ? allocations : t->cache.of;
}

void cf_cache_use_free(struct cf_cache_use *u)
{
    cf_u64map_free(&u->slot_of_site);
    free(u->sites);
    memset(u, 0, sizeof *u);
}
