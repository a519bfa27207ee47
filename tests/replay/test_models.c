/* Each model against allocation streams whose answers were worked out by hand
 * from the allocator's rules (the comments give the reasoning), with every
 * invariant re-derived after every operation. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static struct harness h;

static void lower_bound(void)
{
    h_start(&h, "lower-bound", 1 * MiB);
    uint32_t a = h_alloc(&h, 100, 0);
    h_alloc(&h, 200, 0);
    CHECK_EQ(h.m->footprint, 300);
    h_free(&h, a);
    CHECK_EQ(h.m->footprint, 200);
    bool fits;
    h_alloc_at(&h, MiB, 0, CF_RP_POOL, 0, &fits);
    CHECK(!fits); /* 200 B + 1 MiB > 1 MiB */
    CHECK_EQ(h.m->driver_calls, 0);
    h_end(&h);
}

/* The packing measured on an H200 (docs/simulated-device.md). */
static void driver_packing(void)
{
    static const struct {
        uint64_t size;
        unsigned count;
        uint64_t footprint;
    } cases[] = {
        {1, 64, 2 * MiB},        /* 512 B slots, one shared page */
        {MiB, 2, 2 * MiB},       /* two per page */
        {MiB + 1, 1, 2 * MiB},   /* a page of its own, the rest free for small ones */
        {3 * MiB, 1, 4 * MiB},   /* rounded up to 2 MiB pages */
        {30 * MiB, 1, 30 * MiB}, /* a multiple of 2 MiB: exact */
        {100000, 20, 2 * MiB},   /* 196 slots each: 20 x 98 KiB in one page */
        {100000, 21, 4 * MiB},   /* ... and the 21st does not fit */
    };
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        h_start(&h, "driver:placement=model", 16 * GiB);
        for (unsigned i = 0; i < cases[c].count; i++)
            h_alloc(&h, cases[c].size, 0);
        CHECK_EQ(h.m->footprint, cases[c].footprint);
        CHECK_EQ(h.m->granted, cases[c].count * ((cases[c].size + 511) / 512 * 512));
        for (uint32_t i = 0; i < cases[c].count; i++)
            h_free(&h, i);
        CHECK_EQ(h.m->footprint, 0);
        CHECK_EQ(h.m->driver_calls, 2 * cases[c].count);
        h_end(&h);
    }
}

static void driver_tail_and_first_fit(void)
{
    h_start(&h, "driver:placement=model", 16 * GiB);
    uint32_t big = h_alloc(&h, 3 * MiB, 0); /* a full page and a tail page half used */
    h_alloc(&h, MiB, 0);                    /* fills the tail page */
    CHECK_EQ(h.m->footprint, 4 * MiB);
    uint32_t c = h_alloc(&h, MiB, 0); /* a new page */
    CHECK_EQ(h.m->footprint, 6 * MiB);
    h_free(&h, big); /* the full page goes; the tail page keeps the 1 MiB block */
    CHECK_EQ(h.m->footprint, 4 * MiB);
    /* 512 KiB fits in both pages that have room: the lowest one takes it. */
    h_alloc(&h, 512 * KiB, 0);
    h_alloc(&h, 512 * KiB, 0);
    CHECK_EQ(h.m->footprint, 4 * MiB);
    h_alloc(&h, 512 * KiB, 0);
    h_alloc(&h, 512 * KiB, 0);
    CHECK_EQ(h.m->footprint, 4 * MiB); /* both pages full now */
    h_free(&h, c);
    CHECK_EQ(h.m->footprint, 4 * MiB); /* the second page still holds 1 MiB */
    bool fits;
    h_alloc_at(&h, 64 * KiB, 0, CF_RP_POOL, 0, &fits);
    CHECK(fits);
    CHECK_EQ(h.m->footprint, 4 * MiB);
    h_end(&h);
}

static void driver_fragmentation(void)
{
    h_start(&h, "driver:placement=model", 16 * GiB);
    h_alloc(&h, 512, 0);
    uint32_t b = h_alloc(&h, 512, 0);
    h_alloc(&h, 512, 0);
    CHECK(fabs(h.m->def->ext_frag(h.m)) < 1e-12); /* one free run: the page's end */
    h_free(&h, b);
    /* Free: a 512 B hole and the rest of the page. */
    double want = 1.0 - (double)(2 * MiB - 1536) / (double)(2 * MiB - 1024);
    CHECK(fabs(h.m->def->ext_frag(h.m) - want) < 1e-12);
    h_end(&h);
}

/* Raw allocations keep the driver's addresses: pages touched, as the profiler
 * counts them (record/footprint.c). */
static void driver_trace_placement(void)
{
    const uint64_t base = (uint64_t)0x7f00 << 32; /* 2 MiB-aligned */
    h_start(&h, "driver", 16 * GiB);
    uint32_t a = h_alloc_at(&h, 3 * MiB, 0, CF_RP_RAW, base, NULL);
    CHECK_EQ(h.m->footprint, 4 * MiB);
    uint32_t b = h_alloc_at(&h, MiB, 0, CF_RP_RAW, base + 3 * MiB, NULL); /* shares page 1 */
    CHECK_EQ(h.m->footprint, 4 * MiB);
    uint32_t c = h_alloc_at(&h, 4096, 0, CF_RP_RAW, base + 6 * MiB - 2048, NULL); /* pages 2, 3 */
    CHECK_EQ(h.m->footprint, 8 * MiB);
    h_free(&h, a);
    CHECK_EQ(h.m->footprint, 6 * MiB);
    /* A pool allocation is placed by the model, in a page of its own. */
    h_alloc(&h, 1, 0);
    CHECK_EQ(h.m->footprint, 8 * MiB);
    h_free(&h, b);
    h_free(&h, c);
    CHECK_EQ(h.m->footprint, 2 * MiB);
    h_end(&h);
    /* The same raw allocations placed by the model instead. */
    h_start(&h, "driver:placement=model", 16 * GiB);
    h_alloc_at(&h, 3 * MiB, 0, CF_RP_RAW, base, NULL);
    h_alloc_at(&h, MiB, 0, CF_RP_RAW, base + 3 * MiB, NULL);
    h_alloc_at(&h, 4096, 0, CF_RP_RAW, base + 6 * MiB - 2048, NULL);
    CHECK_EQ(h.m->footprint, 6 * MiB); /* the tail page is full: the 4 KiB opens a page */
    h_end(&h);
}

static void driver_oom(void)
{
    h_start(&h, "driver:placement=model", 4 * MiB);
    h_alloc(&h, 3 * MiB, 0);
    bool fits;
    h_alloc_at(&h, MiB + 1, 0, CF_RP_POOL, 0, &fits); /* needs a page of its own */
    CHECK(!fits);
    CHECK_EQ(h.m->footprint, 6 * MiB); /* served anyway: the replay goes on */
    h_end(&h);
}

/* ---- PyTorch: c10/cuda/CUDACachingAllocator.cpp, rule by rule ---- */

static void pytorch_pools_and_splitting(void)
{
    h_start(&h, "pytorch", 16 * GiB);
    h_alloc(&h, 1, 0); /* 512 B from a new 2 MiB small segment */
    CHECK_EQ(h.m->footprint, 2 * MiB);
    CHECK_EQ(h.m->granted, 512);
    h_alloc(&h, MiB, 0); /* splits the small segment */
    CHECK_EQ(h.m->footprint, 2 * MiB);
    h_alloc(&h, MiB, 0); /* 1 MiB - 512 B left: a second small segment */
    CHECK_EQ(h.m->footprint, 4 * MiB);
    uint32_t d = h_alloc(&h, 3 * MiB, 0); /* below 10 MiB: a 20 MiB large segment, split */
    CHECK_EQ(h.m->footprint, 24 * MiB);
    uint32_t e = h_alloc(&h, 12 * MiB, 0); /* best fit: the 17 MiB rest, split again */
    CHECK_EQ(h.m->footprint, 24 * MiB);
    h_alloc(&h, 12 * MiB, 0); /* 5 MiB left: 12 MiB (>= 10 MiB) is its own segment */
    CHECK_EQ(h.m->footprint, 36 * MiB);
    CHECK_EQ(h.m->driver_calls, 4);
    h_free(&h, e);
    h_free(&h, d); /* merges with both neighbours: the 20 MiB segment is whole again */
    h_alloc(&h, 20 * MiB, 0);
    CHECK_EQ(h.m->footprint, 36 * MiB);
    CHECK_EQ(h.m->driver_calls, 4);
    /* Pools are per stream: stream 7 cannot use stream 0's cached memory. */
    h_alloc(&h, 1, 7);
    CHECK_EQ(h.m->footprint, 38 * MiB);
    h_end(&h);
}

static void pytorch_max_split(void)
{
    h_start(&h, "pytorch", 16 * GiB);
    h_free(&h, h_alloc(&h, 30 * MiB, 0));
    h_alloc(&h, 5 * MiB, 0); /* the cached 30 MiB block is split */
    CHECK_EQ(h.m->footprint, 30 * MiB);
    h_end(&h);

    h_start(&h, "pytorch:max_split_size_mb=20", 16 * GiB);
    h_free(&h, h_alloc(&h, 30 * MiB, 0));
    h_alloc(&h, 5 * MiB, 0); /* oversize blocks do not serve requests below max_split */
    CHECK_EQ(h.m->footprint, 50 * MiB);
    h_alloc(&h, 25 * MiB, 0); /* within 20 MiB of 30 MiB: the whole block, unsplit */
    CHECK_EQ(h.m->footprint, 50 * MiB);
    CHECK_EQ(h.m->granted, 5 * MiB + 30 * MiB);
    h_end(&h);

    /* max_non_split_rounding_mb: how much larger the oversize block may be. */
    h_start(&h, "pytorch:max_split_size_mb=20", 16 * GiB);
    h_free(&h, h_alloc(&h, 50 * MiB, 0));
    h_alloc(&h, 25 * MiB, 0); /* 50 >= 25 + 20: a new 26 MiB segment */
    CHECK_EQ(h.m->footprint, 76 * MiB);
    h_end(&h);
    h_start(&h, "pytorch:max_split_size_mb=20,max_non_split_rounding_mb=40", 16 * GiB);
    h_free(&h, h_alloc(&h, 50 * MiB, 0));
    h_alloc(&h, 25 * MiB, 0);
    CHECK_EQ(h.m->footprint, 50 * MiB);
    h_end(&h);
}

static void pytorch_free_and_retry(void)
{
    bool fits;
    /* release_cached_blocks: every unsplit cached segment goes, then the retry fits. */
    h_start(&h, "pytorch", 24 * MiB);
    uint32_t a = h_alloc(&h, 1, 0), b = h_alloc(&h, 15 * MiB, 0); /* 2 + 16 MiB */
    h_free(&h, a);
    h_free(&h, b);
    h_alloc_at(&h, 20 * MiB, 1, CF_RP_POOL, 0, &fits);
    CHECK(fits);
    CHECK_EQ(h.m->footprint, 20 * MiB);
    CHECK_EQ(h.m->driver_calls, 2 + 1 + 2 + 1); /* mallocs, the failed one, frees, retry */
    h_alloc_at(&h, 20 * MiB, 1, CF_RP_POOL, 0, &fits);
    CHECK(!fits); /* nothing cached is left to release */
    CHECK_EQ(h.m->footprint, 40 * MiB);
    h_end(&h);

    /* release_available_cached_blocks: one oversize block is enough. */
    h_start(&h, "pytorch:max_split_size_mb=20", 40 * MiB);
    h_free(&h, h_alloc(&h, 30 * MiB, 0));
    h_alloc_at(&h, 12 * MiB, 0, CF_RP_POOL, 0, &fits);
    CHECK(fits);
    CHECK_EQ(h.m->footprint, 12 * MiB);
    CHECK_EQ(h.m->driver_calls, 4);
    h_end(&h);

    /* A memory fraction of an unknown device cannot be had. */
    struct cf_rp_config frac;
    char err[128];
    CHECK_EQ(cf_rp_config_parse("pytorch:memory_fraction=0.5", &frac, err, sizeof err), 0);
    struct cf_rp_stream one;
    cf_rp_stream_init(&one, 0);
    cf_rp_stream_alloc(&one, CF_RP_POOL, 1, 0, 0, 0, 0);
    struct cf_rp_result r;
    struct cf_rp_run_opts unknown = {.device_memory = CF_RP_UNLIMITED};
    CHECK_EQ(cf_rp_run(&one, &frac, &unknown, &r), -1);
    CHECK_STR(r.error, "memory_fraction needs the device's memory");
    cf_rp_stream_fini(&one);

    /* memory_fraction caps what the allocator may reserve. */
    h_start(&h, "pytorch:memory_fraction=0.5", 100 * MiB);
    h_alloc(&h, 40 * MiB, 0);
    h_alloc_at(&h, 20 * MiB, 1, CF_RP_POOL, 0, &fits);
    CHECK(!fits);
    h_end(&h);
}

static void pytorch_roundup_power2(void)
{
    h_start(&h, "pytorch:roundup_power2_divisions=4", 16 * GiB);
    h_alloc(&h, 1200 * KiB, 0); /* 1 MiB + k * 256 KiB: 1.25 MiB */
    CHECK_EQ(h.m->granted, 1280 * KiB);
    h_alloc(&h, 1200, 0); /* not above 512 B x 4: plain 512 B rounding */
    CHECK_EQ(h.m->granted, 1280 * KiB + 1536);
    h_alloc(&h, 4 * MiB, 0); /* a power of two stays */
    CHECK_EQ(h.m->granted, 1280 * KiB + 1536 + 4 * MiB);
    h_end(&h);
}

static void pytorch_garbage_collection(void)
{
    /* Allowed 100 MiB, threshold 50 MiB. Large-pool searches: #1 (40 MiB),
     * #2 (30 MiB), #3 (20 MiB on a third stream): ages 2 and 1, average 1.5:
     * only the 40 MiB block is old enough, and it alone covers the 20 MiB
     * over the threshold. */
    h_start(&h, "pytorch:garbage_collection_threshold=0.5,memory_fraction=1", 100 * MiB);
    h_free(&h, h_alloc(&h, 40 * MiB, 0));
    h_free(&h, h_alloc(&h, 30 * MiB, 1));
    h_alloc(&h, 20 * MiB, 2);
    CHECK_EQ(h.m->footprint, 50 * MiB);
    h_end(&h);
    /* Without a memory fraction PyTorch does not collect. */
    h_start(&h, "pytorch:garbage_collection_threshold=0.5", 100 * MiB);
    h_free(&h, h_alloc(&h, 40 * MiB, 0));
    h_free(&h, h_alloc(&h, 30 * MiB, 1));
    h_alloc(&h, 20 * MiB, 2);
    CHECK_EQ(h.m->footprint, 90 * MiB);
    h_end(&h);
}

static void pytorch_expandable(void)
{
    h_start(&h, "pytorch:expandable_segments=True", 40 * MiB);
    uint32_t a = h_alloc(&h, 3 * MiB, 0); /* maps one 20 MiB page of a new segment */
    CHECK_EQ(h.m->footprint, 20 * MiB);
    CHECK_EQ(h.m->driver_calls, 1 + 2 + 1); /* reserve; create, map; set access */
    uint32_t b = h_alloc(&h, 30 * MiB, 0);  /* the 17 MiB free rest grows by one more page */
    CHECK_EQ(h.m->footprint, 40 * MiB);     /* (50 MiB in separate segments) */
    CHECK_EQ(h.m->driver_calls, 4 + 3);
    h_free(&h, a);
    h_free(&h, b);
    CHECK_EQ(h.m->footprint, 40 * MiB); /* cached */
    bool fits;
    /* A small-pool page does not fit: the cached pages are unmapped first. */
    h_alloc_at(&h, 1, 1, CF_RP_POOL, 0, &fits);
    CHECK(fits);
    CHECK_EQ(h.m->footprint, 2 * MiB);
    h_end(&h);
}

/* ---- the driver's stream-ordered pool, as measured on an H200 ---- */

static void async_pool_growth(void)
{
    static const struct {
        uint64_t size;
        unsigned count;
        uint64_t reserved;
    } cases[] = {
        {1, 16, 32 * MiB}, {MiB, 16, 32 * MiB}, {3 * MiB, 16, 64 * MiB}, {30 * MiB, 16, 480 * MiB}};
    for (unsigned c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        h_start(&h, "async-pool", 16 * GiB);
        for (unsigned i = 0; i < cases[c].count; i++)
            h_alloc(&h, cases[c].size, i % 3);
        CHECK_EQ(h.m->footprint, cases[c].reserved);
        h_end(&h);
    }
    h_start(&h, "async-pool", 16 * GiB);
    h_alloc(&h, 1000, 0);
    h_alloc(&h, 5 * MiB, 0); /* fits in the first 32 MiB chunk */
    CHECK_EQ(h.m->footprint, 32 * MiB);
    CHECK_EQ(h.m->granted, 1024 + 5 * MiB);
    h_end(&h);
}

static void async_pool_release(void)
{
    h_start(&h, "async-pool", 16 * GiB);
    h_free(&h, h_alloc(&h, 1, 0));
    CHECK_EQ(h.m->footprint, 32 * MiB); /* threshold max: the pool keeps it */
    h_end(&h);
    h_start(&h, "async-pool:release_threshold=0", 16 * GiB);
    h_free(&h, h_alloc(&h, 1, 0));
    CHECK_EQ(h.m->footprint, 0);
    CHECK_EQ(h.m->driver_calls, 2);
    h_end(&h);
    /* Only granules no live block touches go, from the top, down to the threshold. */
    h_start(&h, "async-pool:release_threshold=40M", 16 * GiB);
    uint32_t a = h_alloc(&h, 30 * MiB, 0), b = h_alloc(&h, 20 * MiB, 0);
    CHECK_EQ(h.m->footprint, 64 * MiB);
    h_free(&h, a);
    CHECK_EQ(h.m->footprint, 64 * MiB); /* b still touches both granules */
    h_free(&h, b);
    CHECK_EQ(h.m->footprint, 32 * MiB); /* the upper one goes: 32 MiB <= 40 MiB */
    h_end(&h);
}

/* One range backed in 32 MiB granules, as the H200's pool shows in traces of
 * PyTorch's cudaMallocAsync backend (docs/replay.md). */
static void async_pool_range(void)
{
    /* A block runs past the end of what was reserved: 196.5 MiB after 484.5 MiB of
     * blocks ends at 681 MiB, and 704 MiB are reserved (the H200: 512 to 704). */
    h_start(&h, "async-pool", 16 * GiB);
    h_alloc(&h, 196 * MiB + MiB / 2, 0);
    CHECK_EQ(h.m->footprint, 224 * MiB); /* alone: 224 MiB, as on the H200 */
    h_alloc(&h, 288 * MiB, 0);
    CHECK_EQ(h.m->footprint, 512 * MiB);
    h_alloc(&h, 196 * MiB + MiB / 2, 0);
    CHECK_EQ(h.m->footprint, 704 * MiB);
    CHECK_EQ(h.m->driver_calls, 3);
    h_end(&h);
    /* Free neighbours merge across granules: 40 MiB fit where two 20 MiB were. */
    h_start(&h, "async-pool", 16 * GiB);
    uint32_t a = h_alloc(&h, 20 * MiB, 0), b = h_alloc(&h, 20 * MiB, 1);
    h_free(&h, a);
    h_free(&h, b);
    h_alloc(&h, 40 * MiB, 2);
    CHECK_EQ(h.m->footprint, 64 * MiB);
    CHECK_EQ(h.m->driver_calls, 2); /* a's granule and b's second: none for 40 MiB */
    h_end(&h);
    /* Nothing fits: the free block at the end grows. */
    h_start(&h, "async-pool", 16 * GiB);
    h_free(&h, h_alloc(&h, 10 * MiB, 0));
    h_alloc(&h, 50 * MiB, 0);
    CHECK_EQ(h.m->footprint, 64 * MiB);
    CHECK_EQ(h.m->granted, 50 * MiB);
    h_end(&h);
    /* Smallest free block that fits, lowest address among equals. */
    h_start(&h, "async-pool", 16 * GiB);
    uint32_t x = h_alloc(&h, 8 * MiB, 0);
    h_alloc(&h, MiB, 0);
    uint32_t y = h_alloc(&h, 4 * MiB, 0);
    h_alloc(&h, MiB, 0);
    h_free(&h, x);
    h_free(&h, y);
    h_alloc(&h, 3 * MiB, 0); /* into y's 4 MiB, not x's 8 */
    h_alloc(&h, 8 * MiB, 0); /* x's 8 MiB exactly: still one granule */
    CHECK_EQ(h.m->footprint, 32 * MiB);
    h_end(&h);
    /* Growing past the device: idle granules go back first. */
    bool fits;
    h_start(&h, "async-pool", 96 * MiB);
    a = h_alloc(&h, 40 * MiB, 0);
    h_alloc(&h, 20 * MiB, 0);
    h_free(&h, a); /* granule 0 idle; granule 1 holds the 20 MiB block */
    h_alloc_at(&h, 50 * MiB, 0, CF_RP_POOL, 0, &fits); /* at 60 MiB: two more granules */
    CHECK(fits);
    CHECK_EQ(h.m->footprint, 96 * MiB);
    h_end(&h);
    h_start(&h, "async-pool", 64 * MiB);
    a = h_alloc(&h, 40 * MiB, 0);
    h_alloc(&h, 20 * MiB, 0);
    h_free(&h, a);
    h_alloc_at(&h, 50 * MiB, 0, CF_RP_POOL, 0, &fits);
    CHECK(!fits);
    h_end(&h);
}

/* ---- cudafrag's arena through the shadow model (tests/arena/test_shadow.c) ---- */

static void arena(void)
{
    h_start(&h, "arena", 16 * GiB);
    uint32_t id[4];
    for (int i = 0; i < 4; i++)
        id[i] = h_alloc(&h, MiB, 0);
    CHECK_EQ(h.m->footprint, 4 * MiB); /* two granules, packed */
    h_free(&h, id[0]);
    h_free(&h, id[2]);
    h_alloc(&h, 5 * MiB, 0); /* from 4 MiB up: three more granules */
    CHECK_EQ(h.m->footprint, 10 * MiB);
    CHECK_EQ(h.m->driver_calls, 1 + 3 * 5); /* reserve; create, map, access per granule */
    /* One shadow model per process. */
    struct cf_rp_setup st = {.device_memory = GiB, .nallocs = 1};
    const char *why = NULL;
    CHECK(cf_rp_model_arena.create(&st, &why) == NULL);
    CHECK(why != NULL);
    h_end(&h);
    h_start(&h, "arena:slack=0", 16 * GiB); /* ends the other: a new one can start */
    h_free(&h, h_alloc(&h, 8 * MiB, 0));
    CHECK_EQ(h.m->footprint, 0); /* no slack: idle chunks are unmapped */
    h_end(&h);
}

/* XLA's BFC allocator growing (JAX with XLA_PYTHON_CLIENT_PREALLOCATE=false):
 * regions double from 2 MiB, except after a region that had to grow to hold
 * its request; a chunk is split only when twice the request. */
static void xla_bfc_growth(void)
{
    h_start(&h, "xla-bfc:preallocate=False,mem_fraction=1", 16 * GiB);
    uint32_t a = h_alloc(&h, MiB, 0); /* a 2 MiB region, split: 1 MiB left free */
    CHECK_EQ(h.m->footprint, 2 * MiB);
    CHECK_EQ(h.m->granted, MiB);
    uint32_t b = h_alloc(&h, MiB, 0); /* the free 1 MiB, exactly */
    CHECK_EQ(h.m->footprint, 2 * MiB);
    h_alloc(&h, 3 * MiB, 0); /* the next region is 4 MiB; 4 < 2 x 3: granted whole */
    CHECK_EQ(h.m->footprint, 6 * MiB);
    CHECK_EQ(h.m->granted, 6 * MiB);
    h_alloc(&h, 10 * MiB, 0); /* 8 MiB is short: 16 MiB, and the size stays 16 */
    CHECK_EQ(h.m->footprint, 22 * MiB);
    CHECK_EQ(h.m->granted, 22 * MiB);
    h_alloc(&h, 100, 0); /* 16 MiB again (then 32), split: 256 B granted */
    CHECK_EQ(h.m->footprint, 38 * MiB);
    CHECK_EQ(h.m->granted, 22 * MiB + 256);
    CHECK_EQ(h.m->driver_calls, 4);
    h_free(&h, a);
    h_free(&h, b); /* merged with a: one free 2 MiB chunk */
    /* Best fit: the 2 MiB chunk, not the 16 MiB region's rest; 2 < 2 x 1.5 and
     * 0.5 MiB of waste: granted whole. */
    h_alloc(&h, 3 * MiB / 2, 0);
    CHECK_EQ(h.m->footprint, 38 * MiB);
    CHECK_EQ(h.m->granted, 22 * MiB + 256);
    CHECK(fabs(h.m->def->ext_frag(h.m)) < 1e-9); /* one free chunk: the rest of region 5 */
    h_end(&h);
}

/* JAX's default: the first request takes the whole limit (mem_fraction of the
 * device) as one region; a chunk wasting 128 MiB or more is split. */
static void xla_bfc_preallocate(void)
{
    h_start(&h, "xla-bfc", 2 * GiB); /* mem_fraction 0.75: 1.5 GiB */
    uint32_t a = h_alloc(&h, 1000, 0);
    CHECK_EQ(h.m->footprint, 1536 * MiB);
    CHECK_EQ(h.m->granted, 1024);
    CHECK_EQ(h.m->driver_calls, 1);
    h_free(&h, a);
    h_end(&h);

    h_start(&h, "xla-bfc:mem_fraction=0.5", 2 * GiB); /* 1 GiB */
    h_alloc(&h, 600 * MiB, 0); /* 1024 < 2 x 600, but 424 MiB would be wasted: split */
    CHECK_EQ(h.m->granted, 600 * MiB);
    h_alloc(&h, 300 * MiB, 0); /* 424 MiB free: 124 MiB of waste, kept whole */
    CHECK_EQ(h.m->granted, 1024 * MiB);
    bool fits = true;
    h_alloc_at(&h, 1, 0, CF_RP_POOL, 0, &fits); /* nothing free, the limit reached */
    CHECK(!fits);
    CHECK_EQ(h.m->driver_calls, 2); /* the refused call is counted */
    h_end(&h);

    /* Growth stops at the limit: the last region is what is left of it. */
    h_start(&h, "xla-bfc:preallocate=False,mem_fraction=0.5", 20 * MiB); /* 10 MiB */
    h_alloc(&h, 2 * MiB, 0);                                             /* 2 MiB */
    h_alloc(&h, 4 * MiB, 0);                                             /* 4 MiB */
    h_alloc(&h, 3 * MiB, 0); /* 8 MiB asked, 4 MiB left: 4 MiB */
    CHECK_EQ(h.m->footprint, 10 * MiB);
    h_alloc_at(&h, MiB + 1, 0, CF_RP_POOL, 0, &fits); /* 1 MiB free, nothing left */
    CHECK(!fits);
    h_end(&h);

    CHECK(cf_rp_config_parse("xla-bfc", &h.cfg, (char[128]){0}, 128) == 0);
    struct cf_rp_setup st = {.device_memory = CF_RP_UNLIMITED, .nallocs = 1};
    memcpy(st.knob, h.cfg.val, sizeof st.knob);
    const char *why = NULL;
    CHECK(h.cfg.def->create(&st, &why) == NULL); /* preallocate needs the device's size */
    CHECK(why != NULL && strstr(why, "--device-memory") != NULL);
}

int main(void)
{
    lower_bound();
    driver_packing();
    driver_tail_and_first_fit();
    driver_fragmentation();
    driver_trace_placement();
    driver_oom();
    pytorch_pools_and_splitting();
    pytorch_max_split();
    pytorch_free_and_retry();
    pytorch_roundup_power2();
    pytorch_garbage_collection();
    pytorch_expandable();
    async_pool_growth();
    async_pool_release();
    async_pool_range();
    arena();
    xla_bfc_growth();
    xla_bfc_preallocate();
    printf("replay models: all checks passed\n");
    return 0;
}
