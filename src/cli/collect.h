/* What the views of a trace need beyond the final snapshot, gathered while the
 * replay applies the events: each device's figures after every event (for
 * plots and counters), the live bytes of every call site at each device's live
 * and footprint peaks (for flame graphs), and the allocation a free released
 * (free events carry no size). Exporters get the events with that context
 * through a sink. */
#ifndef CF_CLI_COLLECT_H
#define CF_CLI_COLLECT_H

#include <stdbool.h>
#include <stdint.h>

#include "record/event.h"
#include "report/snapshot.h"

/* A live allocation as the views see it. */
struct cf_coll_alloc {
    uint64_t addr, size, granted, stream; /* granted: 0 when unknown */
    uint32_t site;                        /* the trace's site id, 0: none */
    int32_t device;
    uint8_t api, kind;
    bool counted; /* part of the device's live bytes (not host, managed or graph) */
};

/* The figures the plots show, after an event. */
struct cf_coll_values {
    uint64_t live, footprint, pool_reserved, arena_mapped;
};

struct cf_coll_sink {
    /* A successful allocation (a != NULL) or a failed one (a == NULL). */
    void (*alloc)(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx);
    /* An allocation left the live set: freed, or replaced by the allocation e
     * at the same address (its free was never seen). */
    void (*release)(const struct cf_event *e, const struct cf_coll_alloc *a, void *ctx);
    /* A device's figures changed; t_ns is relative to the trace's start. */
    void (*point)(int device, uint64_t t_ns, const struct cf_coll_values *v, void *ctx);
    /* Every event, after the above. */
    void (*event)(const struct cf_event *e, void *ctx);
    void *ctx;
};

/* Live bytes by site id on one device at one instant (a peak). */
struct cf_coll_peak {
    uint64_t t_ns, total, graph_used; /* graph memory in use has no site */
    uint64_t *by_id;                  /* indexed by site id, nids entries */
};

struct cf_coll_dev {
    bool used;
    struct cf_coll_peak at_live_peak, at_footprint_peak;
};

struct cf_coll {
    struct cf_snap snap;
    bool open;
    uint64_t start_ns;
    uint32_t nids;                       /* site ids seen, + 1 */
    uint64_t *hash_of_id;                /* the site's key in the snapshot */
    uint64_t *calls_of_id, *bytes_of_id; /* successful allocations */
    struct cf_coll_dev dev[CF_MAX_DEVICES];
    struct cf_coll_state *state; /* private, during the replay */
};

/* Replays the trace at path, calling sink (may be NULL) as it goes, and takes
 * the final snapshot into c->snap. 0, or 1 with a message on stderr. */
int cf_coll_run(struct cf_coll *c, const char *path, const struct cf_coll_sink *sink);
void cf_coll_free(struct cf_coll *c);

/* Calls fn for every allocation live at the end of the trace. */
void cf_coll_each_live(const struct cf_coll *c, void (*fn)(const struct cf_coll_alloc *, void *),
                       void *ctx);
/* The snapshot's index of a trace site id, -1 when it has none. */
int cf_coll_site_index(const struct cf_coll *c, uint32_t id);

#endif
