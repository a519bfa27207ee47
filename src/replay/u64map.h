/* A hash map from 64-bit keys to 64-bit values (open addressing, linear probing,
 * deletion by backward shift so that no tombstones pile up over millions of
 * allocations and frees). The replay's own tables: addresses to allocation ids,
 * 2 MiB pages to reference counts. Not thread-safe. */
#ifndef CF_REPLAY_U64MAP_H
#define CF_REPLAY_U64MAP_H

#include <stdbool.h>
#include <stdint.h>

struct cf_u64map {
    uint64_t *keys, *vals;
    uint8_t *used;
    uint64_t cap, n; /* cap: a power of two, or 0 before the first put */
};

/* 0, or -1 when the table could not grow (the map is unchanged). */
int cf_u64map_put(struct cf_u64map *m, uint64_t key, uint64_t val);
/* The value's slot, valid until the next put or del; NULL when absent. */
uint64_t *cf_u64map_get(const struct cf_u64map *m, uint64_t key);
/* Removes key; true (and *val when val is not NULL) if it was there. */
bool cf_u64map_del(struct cf_u64map *m, uint64_t key, uint64_t *val);
void cf_u64map_free(struct cf_u64map *m);

#endif
