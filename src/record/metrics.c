/* Per-API counters and the size and lifetime histograms, counted by each thread
 * in its own block (thread.c) and summed by cf_thread_collect; the process-wide set
 * of distinct sizes, shared and lock-free, which a thread consults only for a
 * size it does not know to be there already. */
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
            __atomic_add_fetch(&st->errors[i].count, 1, __ATOMIC_RELAXED);
            return;
        }
    }
}

CF_HOT void cf_metrics_api(enum cf_api api, uint64_t bytes, int result, uint64_t ns)
{
    struct cf_thread *t = cf_thread_self();
    if (t == NULL) return;
    struct cf_api_stats *st = &t->api[api];
    cf_count(&st->calls, 1);
    if (bytes) cf_count(&st->bytes, bytes);
    if (result != 0) {
        cf_count(&st->failures, 1);
        /* Failures are rare: their codes are counted in the shared table. */
        count_error(&cf_rec.api[api], result);
    }
    if (ns) {
        cf_count(&st->ns_total, ns);
        cf_count(&st->timed, 1);
    }
}

/* A size already in the set changes nothing, even when the set is full; a new
 * size then marks the count as a floor. */
static void note_distinct_size(uint64_t key)
{
    uint64_t i = (key * 0x9e3779b97f4a7c15ull) >> 52; /* 12 bits: SIZE_SET_SLOTS */
    for (unsigned probe = 0; probe < SIZE_SET_SLOTS; probe++, i = (i + 1) % SIZE_SET_SLOTS) {
        uint64_t cur = __atomic_load_n(&size_set[i], __ATOMIC_RELAXED);
        if (cur == key) return;
        if (cur != 0) continue;
        if (__atomic_load_n(&cf_rec.distinct_sizes, __ATOMIC_RELAXED) >= SIZE_SET_LIMIT) {
            __atomic_store_n(&cf_rec.distinct_sizes_capped, true, __ATOMIC_RELAXED);
            return;
        }
        if (__atomic_compare_exchange_n(&size_set[i], &cur, key, false, __ATOMIC_RELAXED,
                                        __ATOMIC_RELAXED)) {
            __atomic_add_fetch(&cf_rec.distinct_sizes, 1, __ATOMIC_RELAXED);
            return;
        }
        if (cur == key) return; /* another thread just put it there */
    }
}

void cf_metrics_size(uint64_t size)
{
    struct cf_thread *t = cf_thread_self();
    if (t == NULL) return;
    struct cf_bin *b = &t->sizes[cf_hist_bin(size)];
    cf_count(&b->count, 1);
    cf_count(&b->bytes, size);
    /* Programs allocate a few sizes over and over: a thread remembers the last
     * ones it saw in the set (direct-mapped) and does not look them up again. */
    uint64_t key = size + 1;
    uint64_t *known = &t->known_sizes[((key * 0x9e3779b97f4a7c15ull) >> 32) % CF_KNOWN_SIZES];
    if (*known == key) return;
    note_distinct_size(key);
    *known = key;
}

void cf_metrics_lifetime(uint64_t ns, uint64_t bytes)
{
    struct cf_thread *t = cf_thread_self();
    if (t == NULL) return;
    struct cf_bin *b = &t->lifetimes[cf_hist_bin(ns)];
    cf_count(&b->count, 1);
    cf_count(&b->bytes, bytes);
}

uint64_t cf_metrics_estimate_granted(uint64_t requested)
{
    const uint64_t small = 512, large = 2u << 20;
    uint64_t unit = requested <= (1u << 20) ? small : large;
    return (requested + unit - 1) / unit * unit;
}
