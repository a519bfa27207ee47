/* Counters that many threads bump at once: plain atomics, no lock. Device
 * statistics are additionally serialised per shard by live.c. */
#include "record/internal.h"

#define SIZE_SET_SLOTS 4096
#define SIZE_SET_LIMIT (SIZE_SET_SLOTS * 3 / 4) /* keep probes short */

/* Distinct request sizes seen, open addressing; a slot holds size + 1 (0 = empty). */
static uint64_t size_set[SIZE_SET_SLOTS];

uint64_t cf_atomic_max(uint64_t *slot, uint64_t v)
{
    uint64_t cur = __atomic_load_n(slot, __ATOMIC_RELAXED);
    while (v > cur)
        if (__atomic_compare_exchange_n(slot, &cur, v, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            break;
    return cur;
}

static void add(uint64_t *slot, uint64_t v)
{
    __atomic_add_fetch(slot, v, __ATOMIC_RELAXED);
}

unsigned cf_hist_bin(uint64_t v)
{
    return v ? 63u - (unsigned)__builtin_clzll(v) : 0u;
}

/* Lock-free like the other counters: a slot is claimed once, by compare-and-swap;
 * codes past the last slot are counted in failures only. */
static void count_error(struct cf_api_stats *st, int result)
{
    uint64_t code = (uint64_t)(uint32_t)result + 1;
    for (int i = 0; i < CF_API_ERRORS; i++) {
        uint64_t cur = __atomic_load_n(&st->errors[i].code, __ATOMIC_RELAXED);
        if (cur == 0 && __atomic_compare_exchange_n(&st->errors[i].code, &cur, code, false,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED))
            cur = code;
        if (cur == code) {
            add(&st->errors[i].count, 1);
            return;
        }
    }
}

void cf_metrics_api(enum cf_api api, uint64_t bytes, int result, uint64_t ns)
{
    struct cf_api_stats *st = &cf_rec.api[api];
    add(&st->calls, 1);
    if (bytes) add(&st->bytes, bytes);
    if (result != 0) {
        add(&st->failures, 1);
        count_error(st, result);
    }
    if (ns) add(&st->ns_total, ns);
}

static void note_distinct_size(uint64_t size)
{
    if (__atomic_load_n(&cf_rec.distinct_sizes, __ATOMIC_RELAXED) >= SIZE_SET_LIMIT) {
        __atomic_store_n(&cf_rec.distinct_sizes_capped, true, __ATOMIC_RELAXED);
        return;
    }
    uint64_t key = size + 1;
    uint64_t i = (key * 0x9e3779b97f4a7c15ull) >> 52; /* 12 bits: SIZE_SET_SLOTS */
    for (unsigned probe = 0; probe < SIZE_SET_SLOTS; probe++, i = (i + 1) % SIZE_SET_SLOTS) {
        uint64_t cur = __atomic_load_n(&size_set[i], __ATOMIC_RELAXED);
        if (cur == 0 && __atomic_compare_exchange_n(&size_set[i], &cur, key, false,
                                                    __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
            add(&cf_rec.distinct_sizes, 1);
            return;
        }
        if (cur == key) return; /* present, or another thread just put it there */
    }
}

void cf_metrics_size(uint64_t size)
{
    unsigned bin = cf_hist_bin(size);
    add(&cf_rec.sizes.count[bin], 1);
    add(&cf_rec.sizes.bytes[bin], size);
    note_distinct_size(size);
}

void cf_metrics_lifetime(uint64_t ns, uint64_t bytes)
{
    unsigned bin = cf_hist_bin(ns);
    add(&cf_rec.lifetimes.count[bin], 1);
    add(&cf_rec.lifetimes.bytes[bin], bytes);
}

uint64_t cf_rec_estimate_granted(uint64_t requested)
{
    const uint64_t small = 512, large = 2u << 20;
    uint64_t unit = requested <= (1u << 20) ? small : large;
    return (requested + unit - 1) / unit * unit;
}
