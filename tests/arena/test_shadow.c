/* The shadow arena replays a known native sequence; its figures are checked
 * by hand (2 MiB granules, chunks mapped per run of unmapped granules). */
#include "arena/arena.h"
#include "arena/shadow.h"
#include "check.h"
#include "config/config.h"

#include <stdlib.h>

#define MiB ((uint64_t)1 << 20)

static void configure(const char *slack, const char *reserve, const char *shadow)
{
    setenv("CUDAFRAG_ARENA_SLACK", slack, 1);
    setenv("CUDAFRAG_ARENA_RESERVE", reserve, 1);
    setenv("CUDAFRAG_SHADOW", shadow, 1);
    cf_config_reload();
    cf_shadow_reset();
}

static struct cf_arena_stats stats(void)
{
    struct cf_arena_stats s;
    cf_arena_get_stats(NULL, &s);
    CHECK(s.shadow);
    return s;
}

/* Holes below a new peak show up as external fragmentation at that peak. */
static void fragmentation_at_peak(void)
{
    configure("64M", "0", "1");
    for (uint64_t i = 0; i < 4; i++)
        cf_shadow_alloc(0x1000 + i, MiB, 0); /* A B C D */
    struct cf_arena_stats s = stats();
    CHECK(s.active);
    CHECK_EQ(s.live_now, 4 * MiB);
    CHECK_EQ(s.mapped_now, 4 * MiB); /* two granules, packed */
    CHECK_EQ(s.ext_frag_at_peak * 1000, 0);
    cf_shadow_free(0x1000);              /* A */
    cf_shadow_free(0x1002);              /* C */
    cf_shadow_alloc(0x2000, 5 * MiB, 0); /* E: from 4 MiB up, maps 3 granules */
    s = stats();
    CHECK_EQ(s.live_now, 7 * MiB);
    CHECK_EQ(s.peak_live, 7 * MiB);
    CHECK_EQ(s.peak_mapped, 10 * MiB);
    CHECK_EQ(s.granules_mapped, 5);
    CHECK_EQ(s.allocs_served, 5);
    CHECK_EQ(s.frees_served, 2);
    /* Free inside mapped memory: A (1 MiB), C (1 MiB), 9..10 MiB (1 MiB). */
    CHECK(s.ext_frag_at_peak > 2.0 / 3.0 - 1e-9 && s.ext_frag_at_peak < 2.0 / 3.0 + 1e-9);
    /* Below 32 MiB mapped a chunk is one granule: reserve + 5 chunks x
     * (create, map, set access). */
    CHECK_EQ(s.driver_calls, 1 + 3 * 5);
    CHECK_EQ(s.peak_reserved, CF_SHADOW_DEFAULT_RESERVE);
    /* Below the slack nothing is given back. */
    cf_shadow_free(0x2000);
    s = stats();
    CHECK_EQ(s.mapped_now, 10 * MiB);
    CHECK_EQ(s.granules_unmapped, 0);
}

/* Growth that would raise the mapped peak first gives back idle granules,
 * even below the slack. */
static void peak_protection(void)
{
    configure("64M", "0", "1");
    for (uint64_t i = 0; i < 4; i++)
        cf_shadow_alloc(0x1000 + i, 2 * MiB, 0); /* granules 0..3 */
    cf_shadow_free(0x1000);
    cf_shadow_free(0x1001); /* granules 0, 1 idle, kept: below the slack */
    CHECK_EQ(stats().mapped_now, 8 * MiB);
    cf_shadow_alloc(0x2000, 6 * MiB, 0); /* the 4 MiB hole is too small: at 8 MiB */
    struct cf_arena_stats s = stats();
    CHECK_EQ(s.granules_unmapped, 2);
    CHECK_EQ(s.mapped_now, 10 * MiB);
    CHECK_EQ(s.peak_mapped, 10 * MiB); /* 14 MiB without giving back the hole */
    CHECK_EQ(s.live_now, 10 * MiB);
}

/* Slack 0: a granule is unmapped as soon as no block touches it. */
static void trimming(void)
{
    configure("0", "0", "1");
    for (uint64_t i = 0; i < 4; i++)
        cf_shadow_alloc(0x1000 + i, MiB, 0);
    cf_shadow_free(0x1000);
    CHECK_EQ(stats().mapped_now, 4 * MiB); /* granule 0 still holds B */
    cf_shadow_free(0x1001);
    CHECK_EQ(stats().mapped_now, 2 * MiB);
    cf_shadow_free(0x1002);
    cf_shadow_free(0x1003);
    struct cf_arena_stats s = stats();
    CHECK_EQ(s.mapped_now, 0);
    CHECK_EQ(s.live_now, 0);
    CHECK_EQ(s.peak_mapped, 4 * MiB);
    CHECK_EQ(s.granules_unmapped, 2);
    /* A native address reused without a free we saw replaces the old block. */
    cf_shadow_alloc(0x5000, 3 * MiB, 0);
    cf_shadow_alloc(0x5000, MiB, 0);
    CHECK_EQ(stats().live_now, MiB);
    /* Unknown frees are ignored. */
    cf_shadow_free(0xdead);
    CHECK_EQ(stats().live_now, MiB);
}

static void limits_and_switch(void)
{
    configure("64M", "64M", "1");
    cf_shadow_alloc(0x1000, 100 * MiB, 0); /* larger than the modelled reserve */
    cf_shadow_alloc(0x2000, 8 * MiB, 3);   /* second device: its own model */
    struct cf_arena_stats s = stats();
    CHECK_EQ(s.ooms, 1);
    CHECK_EQ(s.live_now, 8 * MiB);
    CHECK_EQ(s.peak_reserved, 2 * 64 * MiB); /* two devices modelled */
    cf_shadow_alloc(0x3000, 8 * MiB, 99);    /* device out of range: ignored */
    CHECK_EQ(stats().live_now, 8 * MiB);
    configure("64M", "0", "0");
    cf_shadow_alloc(0x1000, MiB, 0);
    CHECK(!stats().active);
}

int main(void)
{
    fragmentation_at_peak();
    peak_protection();
    trimming();
    limits_and_switch();
    return 0;
}
