/* Open addressing with linear probing at most half full; rows are never
 * removed, so there are no tombstones. */
#include "cli/rowindex.h"

#include <stdlib.h>

static uint32_t home(uint64_t hash, uint32_t cap)
{
    return (uint32_t)((hash * 0x9e3779b97f4a7c15ull) >> 32) & (cap - 1);
}

static void put(struct cf_rowindex *x, uint64_t hash, uint32_t row)
{
    uint32_t i = home(hash, x->cap);
    while (x->row[i])
        i = (i + 1) & (x->cap - 1);
    x->hash[i] = hash;
    x->row[i] = row + 1;
    x->n++;
}

static int grow(struct cf_rowindex *x)
{
    struct cf_rowindex g = {.cap = x->cap ? x->cap * 2 : 256};
    g.hash = malloc((size_t)g.cap * sizeof *g.hash);
    g.row = calloc(g.cap, sizeof *g.row);
    if (g.hash == NULL || g.row == NULL || g.cap < x->cap) {
        free(g.hash);
        free(g.row);
        return -1;
    }
    for (uint32_t i = 0; i < x->cap; i++)
        if (x->row[i]) put(&g, x->hash[i], x->row[i] - 1);
    cf_rowindex_free(x);
    *x = g;
    return 0;
}

int cf_rowindex_add(struct cf_rowindex *x, uint64_t hash, uint32_t row)
{
    if (row == UINT32_MAX) return -1;
    if ((x->n + 1) * 2 > x->cap && grow(x) != 0) return -1;
    put(x, hash, row);
    return 0;
}

bool cf_rowindex_next(const struct cf_rowindex *x, uint64_t hash, uint32_t *cursor, uint32_t *row)
{
    if (x->cap == 0) return false;
    /* The cursor counts the slots already looked at from the home slot. */
    for (uint32_t i = (home(hash, x->cap) + *cursor) & (x->cap - 1); x->row[i];
         i = (i + 1) & (x->cap - 1)) {
        ++*cursor;
        if (x->hash[i] != hash) continue;
        *row = x->row[i] - 1;
        return true;
    }
    return false;
}

void cf_rowindex_free(struct cf_rowindex *x)
{
    free(x->hash);
    free(x->row);
    *x = (struct cf_rowindex){0};
}

uint64_t cf_rowindex_hash(const char *s)
{
    uint64_t h = 14695981039346656037ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}
