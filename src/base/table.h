/* uthash, with every bucket and node array from cudafrag's own mmap-backed
 * allocator (meta_alloc.c), never from malloc: the hooks insert while holding a
 * lock, possibly inside the application's malloc. The #undef lets this header
 * follow a plain #include <uthash.h>: the macros are expanded where the HASH_*
 * macros are used, not where uthash.h was read. */
#ifndef CF_BASE_TABLE_H
#define CF_BASE_TABLE_H

#include "base/meta_alloc.h"

#undef uthash_malloc
#undef uthash_free
#define uthash_malloc(sz)    cf_meta_alloc(sz)
#define uthash_free(ptr, sz) cf_meta_free((ptr), (sz))
#include <uthash.h>

#endif
