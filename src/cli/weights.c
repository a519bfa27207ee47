/* Per-site figures by the snapshot's site order; allocations without a site
 * and graph memory in use (read from the driver as one figure, never tied to a
 * site) get rows of their own, so every weight sums to the report's figure. */
#include "cli/weights.h"

#include <stdlib.h>
#include <string.h>

static const char *const names[] = {"peak", "footprint-peak", "leaked", "allocated", "calls"};

int cf_weight_parse(const char *s, enum cf_weight *out)
{
    for (unsigned i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(s, names[i]) == 0) {
            *out = (enum cf_weight)i;
            return 0;
        }
    return -1;
}

const char *cf_weight_name(enum cf_weight w)
{
    return names[w];
}

static void add_id(const struct cf_coll *c, uint64_t *acc, uint32_t id, uint64_t v)
{
    int idx = cf_coll_site_index(c, id);
    acc[idx >= 0 ? (unsigned)idx : c->snap.nsites] += v;
}

static void add_peak(const struct cf_coll *c, uint64_t *acc, uint64_t *graph,
                     const struct cf_coll_peak *p)
{
    for (uint32_t id = 0; p->by_id && id < c->nids; id++)
        if (p->by_id[id]) add_id(c, acc, id, p->by_id[id]);
    *graph += p->graph_used;
}

static void fill(const struct cf_coll *c, enum cf_weight w, int device, uint64_t *acc,
                 uint64_t *graph)
{
    for (int d = 0; d < CF_MAX_DEVICES && (w == CF_W_PEAK || w == CF_W_FOOTPRINT_PEAK); d++) {
        if (!c->dev[d].used || (device >= 0 && d != device)) continue;
        add_peak(c, acc, graph,
                 w == CF_W_PEAK ? &c->dev[d].at_live_peak : &c->dev[d].at_footprint_peak);
    }
    for (unsigned i = 0; w == CF_W_LEAKED && i < c->snap.nleaks; i++) {
        const struct cf_live_group *l = &c->snap.leaks[i];
        acc[l->site >= 0 ? (unsigned)l->site : c->snap.nsites] += l->bytes;
    }
    for (uint32_t id = 0; (w == CF_W_ALLOCATED || w == CF_W_CALLS) && id < c->nids; id++) {
        uint64_t v = w == CF_W_CALLS ? c->calls_of_id[id] : c->bytes_of_id[id];
        if (v) add_id(c, acc, id, v);
    }
}

static int by_value_desc(const void *a, const void *b)
{
    uint64_t x = ((const struct cf_wrow *)a)->value, y = ((const struct cf_wrow *)b)->value;
    return (x < y) - (x > y);
}

int cf_weights(const struct cf_coll *c, enum cf_weight w, int device, struct cf_wrow **rows,
               unsigned *n)
{
    unsigned ns = c->snap.nsites;
    uint64_t *acc = calloc(ns + 1, sizeof *acc), graph = 0;
    struct cf_wrow *r = calloc(ns + 2, sizeof *r);
    if (acc == NULL || r == NULL) {
        free(acc);
        free(r);
        return -1;
    }
    fill(c, w, device, acc, &graph);
    unsigned k = 0;
    for (unsigned i = 0; i <= ns; i++)
        if (acc[i]) r[k++] = (struct cf_wrow){.site = i < ns ? (int)i : -1, .value = acc[i]};
    if (graph)
        r[k++] = (struct cf_wrow){.site = -1, .pseudo = "(graph memory in use)", .value = graph};
    free(acc);
    qsort(r, k, sizeof *r, by_value_desc);
    *rows = r;
    *n = k;
    return 0;
}
