/* The what-if table, as text and as JSON: per device, one row per model
 * configuration, and for each sweep the best setting. The layouts are
 * documented in docs/replay.md. */
#ifndef CF_REPLAY_TABLE_H
#define CF_REPLAY_TABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "replay/run.h"
#include "report/strbuf.h"

/* One knob of one model tried at several values: rows first .. first+count-1
 * of the device's results, compared with the row base (the model as given). */
struct cf_rp_sweep {
    char knob[48];
    unsigned base, first, count;
    int best; /* a row, -1 when no setting ran */
};

struct cf_rp_device_table {
    const struct cf_rp_stream *stream;
    uint64_t device_memory;  /* CF_RP_UNLIMITED: not known, no model runs out */
    const char *memory_from; /* "option" (--device-memory) or "trace" */
    bool traced_known;       /* the traced run's own figures (from the record) */
    uint64_t traced_peak_footprint, traced_peak_live;
    struct cf_rp_result *results;
    unsigned nresults;
    struct cf_rp_sweep *sweeps;
    unsigned nsweeps;
};

struct cf_rp_table {
    const char *trace, *program;
    const char *blocks; /* the traced run's CUDAFRAG_BLOCKS ("" or NULL: not a --blocks run) */
    struct cf_rp_device_table *devs;
    unsigned ndevs;
    bool checked; /* invariants were checked: show the violations */
    /* Allocations a framework's caching allocator made (caches.h) in a run that
     * did not bypass it: its segments. framework NULL: none seen. */
    struct {
        const char *framework;
        char module[128];
        uint64_t allocations, of; /* of: the allocations replayed */
    } cache;
};

/* The best row of a sweep: no error, no out of memory when some setting
 * avoids it, then the lowest peak footprint, then the fewest driver calls,
 * then the first given. -1 when no row ran. */
int cf_rp_sweep_best(const struct cf_rp_result *rows, unsigned first, unsigned count);

/* The row an allocator does best with on this device (the lower bound is a
 * floor, not an allocator): of those that never ran out of memory, the lowest
 * peak footprint, then the fewest driver calls, then the first. -1 when none
 * ran or every one ran out (cf_rp_none_fits). */
int cf_rp_best_model(const struct cf_rp_device_table *d);
/* Whether every allocator that ran, and at least one did, ran out of memory. */
bool cf_rp_none_fits(const struct cf_rp_device_table *d);

/* The out-of-memory column of row r: "-", "no" or "at op N, +T". */
void cf_rp_oom_text(const struct cf_rp_device_table *d, const struct cf_rp_result *r, char *out,
                    size_t n);

/* Why the table does not answer for the program's own tensors when t.cache
 * names a framework: plain text, lines ended by newlines; nothing otherwise. */
void cf_rp_cache_note(const struct cf_rp_table *t, struct cf_buf *out);

void cf_rp_render_text(const struct cf_rp_table *t, struct cf_buf *out);
void cf_rp_render_json(const struct cf_rp_table *t, struct cf_buf *out);

#endif
