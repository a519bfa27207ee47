/* Buckets cover [t0, t0 + CF_STEPS_BUCKETS * width); a sample past the end
 * doubles the width, merging neighbours, so the series never needs to know
 * the trace's length in advance. */
#include "cli/steps.h"

#include <stdlib.h>
#include <string.h>

static void bucket_add(struct cf_bucket *b, struct cf_point p)
{
    if (!b->used) {
        *b = (struct cf_bucket){true, p, p, p, p};
        return;
    }
    if (p.v < b->low.v) b->low = p;
    if (p.v > b->high.v) b->high = p;
    b->last = p;
}

static void bucket_merge(struct cf_bucket *into, const struct cf_bucket *a,
                         const struct cf_bucket *b)
{
    if (!a->used || !b->used) {
        *into = a->used ? *a : *b;
        return;
    }
    struct cf_bucket m = *a;
    if (b->low.v < m.low.v) m.low = b->low;
    if (b->high.v > m.high.v) m.high = b->high;
    m.last = b->last;
    *into = m;
}

static void widen(struct cf_steps *s)
{
    for (unsigned i = 0; i < CF_STEPS_BUCKETS; i++) {
        if (i < CF_STEPS_BUCKETS / 2)
            bucket_merge(&s->b[i], &s->b[2 * i], &s->b[2 * i + 1]);
        else
            s->b[i].used = false;
    }
    s->width *= 2;
}

static void put(struct cf_steps *s, struct cf_point p)
{
    if (p.t < s->t0) p.t = s->t0; /* events are in seq order; time may step back a little */
    while ((p.t - s->t0) / s->width >= CF_STEPS_BUCKETS)
        widen(s);
    bucket_add(&s->b[(p.t - s->t0) / s->width], p);
}

static void to_buckets(struct cf_steps *s)
{
    s->b = calloc(CF_STEPS_BUCKETS, sizeof *s->b);
    if (s->b == NULL) {
        s->failed = true;
        return;
    }
    s->t0 = s->raw[0].t;
    s->width = 1;
    for (unsigned i = 0; i < CF_STEPS_MAX; i++)
        put(s, s->raw[i]);
}

void cf_steps_add(struct cf_steps *s, uint64_t t, uint64_t v)
{
    if (v == s->last_v || s->failed) return;
    s->last_v = v;
    struct cf_point p = {t, v};
    if (s->samples < CF_STEPS_MAX) {
        s->raw[s->samples++] = p;
        return;
    }
    if (s->b == NULL) to_buckets(s);
    if (s->b) put(s, p);
    s->samples++;
}

static int by_time(const void *a, const void *b)
{
    uint64_t x = ((const struct cf_point *)a)->t, y = ((const struct cf_point *)b)->t;
    return (x > y) - (x < y);
}

static unsigned bucket_points(const struct cf_bucket *b, struct cf_point *out)
{
    struct cf_point p[4] = {b->first, b->low, b->high, b->last};
    qsort(p, 4, sizeof p[0], by_time);
    unsigned n = 0;
    for (unsigned i = 0; i < 4; i++)
        if (n == 0 || p[i].t != out[n - 1].t || p[i].v != out[n - 1].v) out[n++] = p[i];
    return n;
}

unsigned cf_steps_points(const struct cf_steps *s, struct cf_point *out)
{
    if (s->b == NULL) {
        unsigned n = s->samples < CF_STEPS_MAX ? (unsigned)s->samples : CF_STEPS_MAX;
        memcpy(out, s->raw, n * sizeof *out);
        return n;
    }
    unsigned n = 0;
    for (unsigned i = 0; i < CF_STEPS_BUCKETS; i++)
        if (s->b[i].used) n += bucket_points(&s->b[i], out + n);
    return n;
}

void cf_steps_free(struct cf_steps *s)
{
    free(s->b);
    s->b = NULL;
}
