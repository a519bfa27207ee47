/* Frameworks whose caching allocator stands between a program and the driver:
 * a trace of such a run holds the cache's segments, not the program's tensors,
 * and a replay of it answers another question (docs/replay.md, "Block-level
 * capture"). */
#ifndef CF_REPLAY_CACHES_H
#define CF_REPLAY_CACHES_H

#include <stdint.h>

struct cf_rp_cache {
    const char *framework;
    /* Every segment the cache takes from the driver is a multiple of this; the
     * same code with the cache off allocates the tensors' own sizes. */
    uint64_t segment_granule;
};

/* The caching allocator that lives in the object at path (a loaded module's
 * path as the trace names it), or NULL. */
const struct cf_rp_cache *cf_rp_cache_of(const char *path);

#endif
