/* The shadow arena: a host-only model that replays a native run's allocations
 * on the arena's TLSF, granule map and trimming policy (no CUDA calls), to
 * report what the arena would have mapped. */
#ifndef CF_ARENA_SHADOW_H
#define CF_ARENA_SHADOW_H

#include "arena/arena.h"

/* Virtual range the model places blocks in when CUDAFRAG_ARENA_RESERVE is 0:
 * only bounds the model's tables, no memory is reserved. */
#define CF_SHADOW_DEFAULT_RESERVE ((uint64_t)256 << 30)
/* The largest range it models: 16 TiB, far above any device's memory (its tables
 * take 9 bytes of address space per 2 MiB granule of the range). */
#define CF_SHADOW_MAX_RESERVE ((uint64_t)16 << 40)

void cf_shadow_stats(struct cf_arena_stats *s);
/* The same, giving up (locked_out) when the model's lock is not free by deadline. */
void cf_shadow_stats_until(struct cf_arena_stats *s, const struct timespec *deadline);
/* Forget everything (tests replaying several sequences in one process). */
void cf_shadow_reset(void);

/* For a model driven from outside (what-if replays): the external
 * fragmentation of device's mapped memory now (1 - largest free mapped run /
 * free mapped bytes), and the model's consistency -- the TLSF's invariants,
 * every held block mapped, hold counts, live bytes -- as the number of
 * violations, 0 when sound. */
double cf_shadow_ext_frag_now(int device);
int cf_shadow_check(void);

#endif
