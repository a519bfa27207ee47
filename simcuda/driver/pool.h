/* A stream-ordered memory pool: what pool.c (the pool objects and their API)
 * and pool_alloc.c (how blocks are placed in chunks) share. */
#ifndef SIM_DRIVER_POOL_H
#define SIM_DRIVER_POOL_H

#include "sim.h"

struct chunk;

struct sim_pool {
    struct sim_handle handle;
    struct sim_device *dev;
    int is_default;
    cuuint64_t threshold;
    size_t reserved, reserved_high, used, used_high;
    int reuse_follow, reuse_opportunistic, reuse_internal;
    /* Chunks with room first, full ones apart, so that allocation only
     * looks where a block can be. */
    struct chunk *open, *full;
    struct sim_pool *next;
};

/* pool_alloc.c */
/* Release idle chunks until the pool keeps at most `keep` bytes. */
void sim_pool_trim(struct sim_pool *p, size_t keep);
/* Every chunk goes, live blocks and pending frees included: the pool is being destroyed. */
void sim_pool_release_all(struct sim_pool *p);

#endif
