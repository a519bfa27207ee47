/* Host memory for the arena's own tables. It comes from cudafrag's mmap-backed
 * allocator, never from malloc: the arena runs inside the hooks, which may be
 * called with cudafrag locks held or from within the application's allocator. */
#ifndef CF_ARENA_HOSTMEM_H
#define CF_ARENA_HOSTMEM_H

#include "base/meta_alloc.h"
#include "base/table.h"

#include <string.h>

/* Zeroed memory. Requests above CF_META_MAX_CLASS come straight from mmap and
 * are zero already: not touching them keeps large, sparsely used tables (the
 * granule maps) from being committed. */
static inline void *cf_host_zalloc(size_t n)
{
    void *p = cf_meta_alloc(n);
    if (p && n <= CF_META_MAX_CLASS) memset(p, 0, n);
    return p;
}

static inline void cf_host_free(void *p, size_t n)
{
    cf_meta_free(p, n);
}

#endif
