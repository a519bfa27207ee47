#include "replay/oset.h"

#include <stddef.h>

void cf_oset_init(struct cf_oset *s, cf_ocmp cmp, uint64_t seed)
{
    s->root = NULL;
    s->cmp = cmp;
    s->n = 0;
    s->rng = seed | 1;
}

static uint64_t next_prio(struct cf_oset *s)
{
    /* xorshift64*: any well-mixed sequence keeps the expected depth logarithmic. */
    s->rng ^= s->rng >> 12;
    s->rng ^= s->rng << 25;
    s->rng ^= s->rng >> 27;
    return s->rng * 0x2545f4914f6cdd1dull;
}

/* x takes its parent's place; the parent becomes x's child. */
static void rotate_up(struct cf_oset *s, struct cf_onode *x)
{
    struct cf_onode *p = x->p, *g = p->p;
    if (p->l == x) {
        p->l = x->r;
        if (x->r) x->r->p = p;
        x->r = p;
    } else {
        p->r = x->l;
        if (x->l) x->l->p = p;
        x->l = p;
    }
    p->p = x;
    x->p = g;
    if (g == NULL)
        s->root = x;
    else if (g->l == p)
        g->l = x;
    else
        g->r = x;
}

void cf_oset_insert(struct cf_oset *s, struct cf_onode *x)
{
    x->l = x->r = x->p = NULL;
    x->prio = next_prio(s);
    struct cf_onode **link = &s->root, *parent = NULL;
    while (*link) {
        parent = *link;
        link = s->cmp(x, parent) < 0 ? &parent->l : &parent->r;
    }
    *link = x;
    x->p = parent;
    while (x->p && x->p->prio < x->prio)
        rotate_up(s, x);
    s->n++;
}

void cf_oset_erase(struct cf_oset *s, struct cf_onode *x)
{
    while (x->l && x->r)
        rotate_up(s, x->l->prio > x->r->prio ? x->l : x->r);
    struct cf_onode *child = x->l ? x->l : x->r;
    if (child) child->p = x->p;
    if (x->p == NULL)
        s->root = child;
    else if (x->p->l == x)
        x->p->l = child;
    else
        x->p->r = child;
    x->l = x->r = x->p = NULL;
    s->n--;
}

struct cf_onode *cf_oset_lower_bound(const struct cf_oset *s, const struct cf_onode *key)
{
    struct cf_onode *x = s->root, *best = NULL;
    while (x) {
        if (s->cmp(x, key) < 0) {
            x = x->r;
        } else {
            best = x;
            x = x->l;
        }
    }
    return best;
}

struct cf_onode *cf_oset_first(const struct cf_oset *s)
{
    struct cf_onode *x = s->root;
    while (x && x->l)
        x = x->l;
    return x;
}

struct cf_onode *cf_oset_next(const struct cf_onode *x)
{
    if (x->r) {
        x = x->r;
        while (x->l)
            x = x->l;
        return (struct cf_onode *)x;
    }
    while (x->p && x->p->r == x)
        x = x->p;
    return x->p;
}

struct cf_onode *cf_oset_prev(const struct cf_onode *x)
{
    if (x->l) {
        x = x->l;
        while (x->r)
            x = x->r;
        return (struct cf_onode *)x;
    }
    while (x->p && x->p->l == x)
        x = x->p;
    return x->p;
}

static int check_node(const struct cf_oset *s, const struct cf_onode *x, uint64_t *count)
{
    int bad = 0;
    (*count)++;
    if (x->l) {
        bad += x->l->p != x || x->l->prio > x->prio || s->cmp(x->l, x) >= 0;
        bad += check_node(s, x->l, count);
    }
    if (x->r) {
        bad += x->r->p != x || x->r->prio > x->prio || s->cmp(x->r, x) <= 0;
        bad += check_node(s, x->r, count);
    }
    return bad;
}

int cf_oset_check(const struct cf_oset *s)
{
    uint64_t count = 0;
    int bad = s->root ? check_node(s, s->root, &count) + (s->root->p != NULL) : 0;
    /* Neighbours in order: the local checks above do not see a violation
     * between a node and a distant ancestor. */
    for (const struct cf_onode *x = cf_oset_first(s), *y; x && (y = cf_oset_next(x)); x = y)
        bad += s->cmp(x, y) >= 0;
    return bad + (count != s->n);
}
