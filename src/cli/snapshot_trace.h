/* What `cudafrag import` makes of a PyTorch memory snapshot (snapshot_import.c)
 * and how it is written as a trace file (snapshot_trace.c). */
#ifndef CF_CLI_SNAPSHOT_TRACE_H
#define CF_CLI_SNAPSHOT_TRACE_H

#include <stdint.h>

#include "cli/snapshot_frames.h"
#include "record/trace_format.h"
#include "replay/stream.h"

#define CF_IMPORT_POOL(device)                                                                     \
    (0x7079746f72636800ull + (uint64_t)(device)) /* "pytorch" + device                             \
                                                  */

struct cf_import_event {
    uint64_t t_us;
    struct cf_event e;
    int64_t reserved_delta; /* POOL RESERVED events: the segment change */
};

struct cf_import_events {
    struct cf_import_event *v;
    size_t n, cap;
};

struct cf_import {
    struct cf_import_events dev[CF_RP_MAX_DEVICES];
    unsigned ndevs;
    struct cf_sf sites;                     /* the entries' stacks */
    char pool_name[CF_RP_MAX_DEVICES][160]; /* what each device's pool stands for */
    uint64_t t0_us, t_end_us;
    uint64_t allocs, frees, before_window, ooms, skipped;
    char error[320];
};

/* The devices' events merged by time, after the sites: 0, or 1 with a message
 * (no file is left behind). */
int cf_import_write_trace(const struct cf_import *c, const char *snapshot, const char *path);

#endif
