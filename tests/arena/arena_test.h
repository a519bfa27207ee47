/* Helpers shared by the arena tests that run the real arena on the simulated
 * device. */
#ifndef CF_TESTS_ARENA_TEST_H
#define CF_TESTS_ARENA_TEST_H

#include "arena/arena.h"
#include "check.h"

#define MiB ((uint64_t)1 << 20)

/* The arena's statistics; the arena must be serving. */
static inline struct cf_arena_stats arena_stats(void)
{
    struct cf_arena_stats s;
    cf_arena_get_stats(&s, NULL);
    CHECK(s.active);
    return s;
}

#endif
