/* The lower bound: an allocator that holds exactly the live bytes requested,
 * with no rounding and no free space. Its peak is the stream's peak live
 * bytes, below every real allocator's peak. */
#include "replay/model.h"

#include <stdlib.h>

struct lower_bound {
    struct cf_rp_model m;
    uint64_t capacity, nallocs;
    uint64_t *size; /* by id, 0 when not live */
};

static struct cf_rp_model *create(const struct cf_rp_setup *st, const char **why)
{
    struct lower_bound *lb = calloc(1, sizeof *lb);
    if (lb) lb->size = calloc(st->nallocs ? st->nallocs : 1, sizeof *lb->size);
    if (lb == NULL || lb->size == NULL) {
        free(lb);
        *why = "out of memory";
        return NULL;
    }
    lb->m.def = &cf_rp_model_lower_bound;
    lb->capacity = st->device_memory;
    lb->nallocs = st->nallocs;
    return &lb->m;
}

static bool lb_alloc(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct lower_bound *lb = (struct lower_bound *)m;
    lb->size[op->id] = op->size;
    m->footprint += op->size;
    m->granted += op->size;
    return m->footprint <= lb->capacity;
}

static void lb_free(struct cf_rp_model *m, const struct cf_rp_op *op)
{
    struct lower_bound *lb = (struct lower_bound *)m;
    lb->size[op->id] = 0;
    m->footprint -= op->size;
    m->granted -= op->size;
}

static double ext_frag(struct cf_rp_model *m)
{
    return 0;
}

static int check(struct cf_rp_model *m)
{
    const struct lower_bound *lb = (const struct lower_bound *)m;
    uint64_t sum = 0;
    for (uint64_t i = 0; i < lb->nallocs; i++)
        sum += lb->size[i];
    return (sum != m->footprint) + (m->granted != m->footprint) + (m->driver_calls != 0);
}

static void destroy(struct cf_rp_model *m)
{
    struct lower_bound *lb = (struct lower_bound *)m;
    free(lb->size);
    free(lb);
}

const struct cf_rp_model_def cf_rp_model_lower_bound = {
    .name = "lower-bound",
    .summary = "the live bytes requested: no allocator can hold less at its peak",
    .create = create,
    .alloc = lb_alloc,
    .free = lb_free,
    .ext_frag = ext_frag,
    .check = check,
    .destroy = destroy,
};
