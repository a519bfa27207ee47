/* An ordered set of intrusive nodes (a treap with parent links): what
 * std::set is to PyTorch's caching allocator, whose choices (best fit, lowest
 * address among equals, the next block of a stream) depend on the order. The
 * priorities come from a seeded generator, so a replay makes the same tree
 * every time. Not thread-safe. */
#ifndef CF_REPLAY_OSET_H
#define CF_REPLAY_OSET_H

#include <stdint.h>

struct cf_onode {
    struct cf_onode *l, *r, *p;
    uint64_t prio;
};

/* < 0, 0, > 0 as a is before, equal to, after b. */
typedef int (*cf_ocmp)(const struct cf_onode *a, const struct cf_onode *b);

struct cf_oset {
    struct cf_onode *root;
    cf_ocmp cmp;
    uint64_t n, rng;
};

void cf_oset_init(struct cf_oset *s, cf_ocmp cmp, uint64_t seed);
/* Keys are unique: the caller never inserts a node equal to one in the set. */
void cf_oset_insert(struct cf_oset *s, struct cf_onode *x);
void cf_oset_erase(struct cf_oset *s, struct cf_onode *x);
/* The first node not before key, or NULL. */
struct cf_onode *cf_oset_lower_bound(const struct cf_oset *s, const struct cf_onode *key);
struct cf_onode *cf_oset_first(const struct cf_oset *s);
struct cf_onode *cf_oset_next(const struct cf_onode *x);
struct cf_onode *cf_oset_prev(const struct cf_onode *x);
/* Violated invariants (order, heap priorities, parent links, count); 0 when sound. */
int cf_oset_check(const struct cf_oset *s);

#endif
