/* Every model configuration on seeded random streams: sizes from 1 B to
 * 128 MiB (log-uniform), four streams, frees in random order, a device small
 * enough that the out-of-memory paths run. After every operation each model's
 * invariants are re-derived (check), its footprint covers what it grants and
 * what is live; two runs of the same stream give the same figures; the lower
 * bound is below every model's peak. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"

static const char *const specs[] = {
    "lower-bound",
    "driver",
    "driver:placement=model",
    "pytorch",
    "pytorch:max_split_size_mb=20",
    "pytorch:max_split_size_mb=64,max_non_split_rounding_mb=32",
    "pytorch:roundup_power2_divisions=4",
    "pytorch:garbage_collection_threshold=0.6,memory_fraction=0.9",
    "pytorch:expandable_segments=True",
    "pytorch:expandable_segments=True,max_split_size_mb=40",
    "async-pool",
    "async-pool:release_threshold=0",
    "async-pool:release_threshold=128M",
    "arena",
    "arena:slack=0",
    "xla-bfc",
    "xla-bfc:preallocate=False",
    "xla-bfc:preallocate=False,mem_fraction=0.3",
};
#define NSPECS (sizeof specs / sizeof specs[0])

static uint64_t rng;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static uint64_t random_size(void)
{
    /* log-uniform over 2^0 .. 2^26.5, plus exact 2 MiB multiples now and then */
    uint64_t bits = next() % 27;
    uint64_t size = ((uint64_t)1 << bits) + next() % ((uint64_t)1 << bits);
    if (next() % 8 == 0) size = (next() % 12 + 1) * 2 * MiB;
    return size;
}

/* A stream with raw allocations at non-overlapping addresses (never reused),
 * pool allocations elsewhere, and frees chosen at random among the live. */
static void build(struct cf_rp_stream *s, uint64_t seed, uint32_t nops)
{
    static uint32_t live[8192];
    uint32_t nlive = 0;
    uint64_t addr = (uint64_t)0x7f00 << 32;
    rng = seed;
    cf_rp_stream_init(s, 0);
    for (uint32_t i = 0; i < nops; i++) {
        bool do_free = nlive > 0 && (nlive == 8192 || next() % 100 < 48);
        if (do_free) {
            uint32_t k = (uint32_t)(next() % nlive);
            CHECK(cf_rp_stream_free(s, live[k], i, i));
            live[k] = live[--nlive];
            continue;
        }
        uint64_t size = random_size();
        bool raw = next() % 2;
        uint32_t id = cf_rp_stream_alloc(s, raw ? CF_RP_RAW : CF_RP_POOL, size, raw ? addr : 0,
                                         next() % 4, i, i);
        CHECK_NE(id, UINT32_MAX);
        addr += (size + 511) / 512 * 512 + (next() % 3) * 512 * (next() % 4096);
        live[nlive++] = id;
    }
}

static struct harness h;

/* Operation by operation, with every check. */
static void walk(const struct cf_rp_stream *s, const char *spec, uint64_t device_memory)
{
    h_start(&h, spec, device_memory);
    uint32_t *id_of = malloc(s->nallocs * sizeof *id_of);
    CHECK(id_of != NULL);
    for (uint32_t i = 0; i < s->nops; i++) {
        const struct cf_rp_op *op = &s->ops[i];
        bool fits;
        if (op->free)
            h_free(&h, id_of[op->id]);
        else
            id_of[op->id] = h_alloc_at(&h, op->size, op->strm, op->src, op->addr, &fits);
    }
    free(id_of);
    h_end(&h);
}

static void compare(const struct cf_rp_result *a, const struct cf_rp_result *b)
{
    CHECK_EQ(a->peak_footprint, b->peak_footprint);
    CHECK_EQ(a->peak_op, b->peak_op);
    CHECK_EQ(a->live_at_peak, b->live_at_peak);
    CHECK_EQ(a->granted_at_peak, b->granted_at_peak);
    CHECK_EQ(a->driver_calls, b->driver_calls);
    CHECK_EQ(a->oom, b->oom);
    CHECK_EQ(a->oom_op, b->oom_op);
    CHECK_EQ(a->ooms, b->ooms);
    CHECK(a->internal == b->internal && a->external == b->external);
}

/* argv[1]: how many seeds (default 6; the sanitizer builds run fewer). */
int main(int argc, char **argv)
{
    uint64_t seeds = argc > 1 ? strtoull(argv[1], NULL, 10) : 6;
    static struct cf_rp_stream s;
    static struct cf_rp_config cfg[NSPECS];
    char err[256];
    unsigned ooms = 0;
    for (unsigned k = 0; k < NSPECS; k++)
        CHECK_EQ(cf_rp_config_parse(specs[k], &cfg[k], err, sizeof err), 0);
    for (uint64_t seed = 1; seed <= seeds; seed++) {
        build(&s, seed * 0x9e3779b97f4a7c15ull, 2500);
        uint64_t device = (seed % 2 ? 768 : 4096) * MiB;
        struct cf_rp_result bound;
        struct cf_rp_run_opts o = {.device_memory = device};
        CHECK_EQ(cf_rp_run(&s, &cfg[0], &o, &bound), 0);
        CHECK_EQ(bound.peak_footprint, s.peak_live);
        for (unsigned k = 0; k < NSPECS; k++) {
            walk(&s, specs[k], device);
            struct cf_rp_result a, b;
            struct cf_rp_run_opts checked = {.device_memory = device, .check_every = 97};
            CHECK_EQ(cf_rp_run(&s, &cfg[k], &checked, &a), 0);
            CHECK_EQ(cf_rp_run(&s, &cfg[k], &o, &b), 0);
            CHECK_EQ(a.violations, 0);
            compare(&a, &b);
            CHECK_GE(a.peak_footprint, bound.peak_footprint);
            CHECK_GE(a.granted_at_peak, a.live_at_peak);
            CHECK(a.internal >= 0 && a.external >= 0 && a.external <= 1);
            /* No allocator fits where the bound does not. */
            if (bound.oom) CHECK(a.oom && a.oom_op <= bound.oom_op);
            ooms += a.oom;
        }
        cf_rp_stream_fini(&s);
    }
    CHECK_GE(ooms, NSPECS); /* the out-of-memory paths ran */
    printf("replay random streams: all checks passed (%u runs out of memory)\n", ooms);
    return 0;
}
