/* A step series (a figure after each change) kept small enough to plot: every
 * sample while there are at most CF_STEPS_MAX, then per time bucket its
 * first, lowest, highest and last sample, so a peak or a dip is never lost
 * however long the trace. */
#ifndef CF_CLI_STEPS_H
#define CF_CLI_STEPS_H

#include <stdbool.h>
#include <stdint.h>

#define CF_STEPS_MAX     2000 /* points a series may plot */
#define CF_STEPS_BUCKETS (CF_STEPS_MAX / 4)

struct cf_point {
    uint64_t t, v;
};

struct cf_bucket {
    bool used;
    struct cf_point first, low, high, last;
};

struct cf_steps {
    uint64_t last_v, samples;
    struct cf_point raw[CF_STEPS_MAX]; /* while samples <= CF_STEPS_MAX */
    struct cf_bucket *b;               /* after: CF_STEPS_BUCKETS of them */
    uint64_t t0, width;
    bool failed;
};

/* Adds v at time t when it differs from the last value (the series starts at 0). */
void cf_steps_add(struct cf_steps *s, uint64_t t, uint64_t v);
/* The points to plot, in time order, at most CF_STEPS_MAX; returns how many. */
unsigned cf_steps_points(const struct cf_steps *s, struct cf_point *out);
void cf_steps_free(struct cf_steps *s);

#endif
