/* Whether a framework's caching allocator made a trace's allocations: then the
 * trace holds the cache's segments, not the program's tensors, and the
 * what-if table says so (docs/replay.md, "Block-level capture"). */
#ifndef CF_CLI_CACHE_USE_H
#define CF_CLI_CACHE_USE_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/table.h"
#include "replay/u64map.h"

struct cf_event;

struct cf_cache_use {
    struct cf_u64map slot_of_site; /* a trace site id -> its slot + 1 */
    struct cf_cache_site *sites;
    uint32_t nsites, cap;
    bool failed;
};

/* Takes each event of the trace while a replay is open (modules are named). */
void cf_cache_use_event(struct cf_cache_use *u, const struct cf_event *e);
/* Fills t->cache from what the events showed: the allocations a cache made,
 * in a run that did not bypass the caches (t->blocks empty). */
void cf_cache_use_find(const struct cf_cache_use *u, struct cf_rp_table *t);
void cf_cache_use_free(struct cf_cache_use *u);

#endif
