#include "replay/u64map.h"

#include <stdlib.h>

static uint64_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdull;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ull;
    return x ^ (x >> 33);
}

static int grow(struct cf_u64map *m)
{
    uint64_t cap = m->cap ? m->cap * 2 : 64;
    uint64_t *keys = malloc(cap * sizeof *keys), *vals = malloc(cap * sizeof *vals);
    uint8_t *used = calloc(cap, 1);
    if (keys == NULL || vals == NULL || used == NULL) {
        free(keys);
        free(vals);
        free(used);
        return -1;
    }
    for (uint64_t i = 0; i < m->cap; i++) {
        if (!m->used[i]) continue;
        uint64_t j = mix(m->keys[i]) & (cap - 1);
        while (used[j])
            j = (j + 1) & (cap - 1);
        used[j] = 1;
        keys[j] = m->keys[i];
        vals[j] = m->vals[i];
    }
    cf_u64map_free(&(struct cf_u64map){m->keys, m->vals, m->used, 0, 0});
    m->keys = keys;
    m->vals = vals;
    m->used = used;
    m->cap = cap;
    return 0;
}

int cf_u64map_put(struct cf_u64map *m, uint64_t key, uint64_t val)
{
    uint64_t *slot = cf_u64map_get(m, key);
    if (slot) {
        *slot = val;
        return 0;
    }
    /* At most 3/4 full: probe runs stay short. */
    if ((m->n + 1) * 4 > m->cap * 3 && grow(m) != 0) return -1;
    uint64_t j = mix(key) & (m->cap - 1);
    while (m->used[j])
        j = (j + 1) & (m->cap - 1);
    m->used[j] = 1;
    m->keys[j] = key;
    m->vals[j] = val;
    m->n++;
    return 0;
}

uint64_t *cf_u64map_get(const struct cf_u64map *m, uint64_t key)
{
    if (m->cap == 0) return NULL;
    for (uint64_t j = mix(key) & (m->cap - 1); m->used[j]; j = (j + 1) & (m->cap - 1))
        if (m->keys[j] == key) return &m->vals[j];
    return NULL;
}

bool cf_u64map_del(struct cf_u64map *m, uint64_t key, uint64_t *val)
{
    uint64_t *slot = cf_u64map_get(m, key);
    if (slot == NULL) return false;
    if (val) *val = *slot;
    uint64_t mask = m->cap - 1, hole = (uint64_t)(slot - m->vals);
    m->used[hole] = 0;
    m->n--;
    /* Backward shift: an entry after the hole moves into it when the hole lies
     * on its probe path (between its home slot and where it sits, cyclically). */
    for (uint64_t j = (hole + 1) & mask; m->used[j]; j = (j + 1) & mask) {
        uint64_t home = mix(m->keys[j]) & mask;
        if (((j - home) & mask) < ((j - hole) & mask)) continue;
        m->keys[hole] = m->keys[j];
        m->vals[hole] = m->vals[j];
        m->used[hole] = 1;
        m->used[j] = 0;
        hole = j;
    }
    return true;
}

void cf_u64map_free(struct cf_u64map *m)
{
    free(m->keys);
    free(m->vals);
    free(m->used);
    m->keys = m->vals = NULL;
    m->used = NULL;
    m->cap = m->n = 0;
}
