/* Rows of a caller's array found by a 64-bit hash of their key, so that
 * matching call sites between reports, ranks or stacks costs one probe, not a
 * walk over every row (100 000 sites made those walks take minutes). The
 * index holds row numbers, never pointers: the caller's array may move when it
 * grows. Several rows may share a hash; the caller compares their keys. */
#ifndef CF_CLI_ROWINDEX_H
#define CF_CLI_ROWINDEX_H

#include <stdbool.h>
#include <stdint.h>

struct cf_rowindex {
    uint64_t *hash;
    uint32_t *row; /* row + 1; 0: an empty slot */
    uint32_t cap, n;
};

/* 0, or -1 when out of memory (the index is left as it was). */
int cf_rowindex_add(struct cf_rowindex *x, uint64_t hash, uint32_t row);
/* The rows added with this hash, one per call, in no set order: *cursor starts
 * at 0; false when there is no other. */
bool cf_rowindex_next(const struct cf_rowindex *x, uint64_t hash, uint32_t *cursor, uint32_t *row);
void cf_rowindex_free(struct cf_rowindex *x);

/* FNV-1a of a string, the hash the views key their rows by. */
uint64_t cf_rowindex_hash(const char *s);

#endif
