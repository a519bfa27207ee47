/* Running a model over one device's allocation stream, and the figures a
 * what-if table shows for it. */
#ifndef CF_REPLAY_RUN_H
#define CF_REPLAY_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "replay/model.h"
#include "replay/stream.h"

struct cf_rp_result {
    char label[CF_RP_LABEL_SIZE];
    const struct cf_rp_config *config;
    uint64_t peak_footprint, peak_op, peak_t_ns; /* the first operation that reached the peak */
    uint64_t live_at_peak, granted_at_peak;
    uint64_t peak_live; /* of the stream: the same for every model */
    double internal;    /* (granted - requested) / requested, live allocations at the peak */
    double external;    /* 1 - largest free / total free of the model's memory at the peak */
    uint64_t driver_calls;
    bool oom; /* the first allocation the model could not serve within the device */
    uint64_t oom_op, oom_t_ns, oom_seq, oom_size, ooms;
    int violations;                     /* invariant checks failed (with check_every) */
    char error[CF_RP_LABEL_SIZE + 128]; /* the model could not run (nothing else is set) */
};

struct cf_rp_run_opts {
    uint64_t device_memory; /* CF_RP_UNLIMITED when unknown */
    uint32_t check_every;   /* check the model's invariants every N operations (0: never) */
    bool fit_only; /* only whether it fits: stop at the first out of memory, no second pass */
};

/* Replays s through the model c; 0, or -1 with r->error set. Deterministic:
 * the same stream and configuration give the same result. */
int cf_rp_run(const struct cf_rp_stream *s, const struct cf_rp_config *c,
              const struct cf_rp_run_opts *o, struct cf_rp_result *r);

#endif
