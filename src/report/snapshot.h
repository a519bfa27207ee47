/* A private copy of the record taken under the record locks, so the slow parts of
 * the report (symbol lookup, formatting, file writes) run without
 * blocking the application's allocation calls. */
#ifndef CF_REPORT_SNAPSHOT_H
#define CF_REPORT_SNAPSHOT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "arena/arena.h"
#include "record/read.h"
#include "record/record.h"
#include "record/trace_write.h"
#include "report/findings.h"
#include "report/lifecycle.h"
#include "report/owners.h"
#include "report/symbolize.h"

/* Footprint and fragmentation of one device, derived once for every renderer. */
struct cf_dev_view {
    int device;
    uint64_t peak_live, peak_footprint; /* footprint above the pre-allocation baseline */
    double headline_frag;               /* 1 - peak live / peak footprint; NAN: no footprint */
    double frag_at_peak_footprint;      /* 1 - live / footprint at the footprint peak */
    double frag_at_peak_live;           /* 1 - live / footprint at the live peak */
    double internal_waste;              /* (granted - requested) / requested at peak */
};

/* What a partial report left out (cf_snap.missing). The final report may run in
 * a thread that a signal interrupted inside cudafrag (exit() from a handler):
 * whatever that thread had locked is not read consistently, and a lock is waited
 * for at most CF_SNAP_LOCK_WAIT_MS in all. */
enum {
    CF_SNAP_NO_SITES = 1,           /* call sites, and the leaks (grouped by site) */
    CF_SNAP_NO_LIVE = 2,            /* the allocations live at the report */
    CF_SNAP_NO_POOLS = 4,           /* memory pools */
    CF_SNAP_NO_EVENTS = 8,          /* OOM events, marks, graph pool high water */
    CF_SNAP_UNSETTLED_DEVICES = 16, /* device figures read while one event was applied */
    CF_SNAP_NO_FINAL_SAMPLE = 32,   /* the driver was not asked once more at the end */
    CF_SNAP_NO_ARENA = 64,          /* the arena's or its model's figures */
    CF_SNAP_STALE_COUNTERS = 128,   /* the threads' counters as last collected */
};
#define CF_SNAP_LOCK_WAIT_MS 1000

/* Who the report is about: this process, or the one a trace came from. */
#define CF_SNAP_POOL_NAMES 64
struct cf_snap_who {
    char program[512], rank[64], host[128];
    long pid;          /* 0: unknown (an imported run) */
    char imported[64]; /* the trace header's "imported"; "" traced */
    struct cf_snap_pool_name {
        uint64_t handle;
        char name[160];
    } pool_names[CF_SNAP_POOL_NAMES]; /* the trace header's "pool_name" */
    unsigned npool_names;
    /* One instant on the wall clock and the event clock, for events' wall-clock
     * times (the trace header's realtime_base_ns, monotonic_base_ns); 0: unknown. */
    uint64_t realtime_base_ns, monotonic_base_ns;
};

/* Everything a snapshot is made from, gathered by its caller: in the process
 * (report.c) from the record, the arena and the process itself; in `cudafrag
 * report TRACE` (cli/replay.c) from the trace and the record it was applied to.
 * The snapshot reads no global and calls nothing to get more. */
struct cf_snap_input {
    bool interim;
    bool replayed;
    const char *reason;
    unsigned top;            /* rows per table (CUDAFRAG_TOP) */
    const char *blocks;      /* CUDAFRAG_BLOCKS */
    uint64_t now_ns;         /* the report's time */
    struct cf_rec_read copy; /* the record's copy: the snapshot takes it over */
    struct cf_arena_stats arena, shadow;
    struct cf_snap_who who;
    struct cf_fork_origin fork; /* what a forked child inherited; zero elsewhere */
    unsigned missing;           /* CF_SNAP_*: left out before the copy */
    bool driver_unusable;       /* a child forked after its parent used CUDA */
    cf_sym_resolver resolver;   /* names of native frames; NULL: dladdr */
};

struct cf_snap {
    bool interim;
    bool at_oom;   /* the interim report written at the first out-of-memory failure */
    bool replayed; /* from a trace, by the `cudafrag report` command */
    char program[512], rank[64], host[128];
    long pid;          /* 0: unknown (an imported run) */
    char imported[64]; /* what the trace was made from ("" traced): see cf_snap_describe_program */
    struct cf_snap_pool_name pool_names[CF_SNAP_POOL_NAMES];
    unsigned npool_names;
    const char *reason;
    unsigned missing;   /* CF_SNAP_NO_*; 0 in a complete report */
    const char *blocks; /* CUDAFRAG_BLOCKS: the framework switches of `run --blocks` */
    uint64_t now_ns;
    double duration_s;
    /* The wall clock (CLOCK_REALTIME) minus the event clock, in ns: ranks' events
     * compared in time. wall_known false: the trace did not say. */
    int64_t wall_minus_event_ns;
    bool wall_known;
    struct cf_record rec; /* scalars only: the hash heads are NULL */
    struct cf_site *sites;
    unsigned nsites;
    struct cf_pool *pools;
    unsigned npools;
    struct cf_rec_pyname *pynames; /* the Python frames' names (the copy's) */
    struct cf_live_group *leaks;   /* live at report time by site, largest first */
    unsigned nleaks;
    uint64_t leaked_bytes, leaked_count;
    struct cf_dev_view devs[CF_MAX_DEVICES];
    unsigned ndevs;
    uint64_t total_peak_live, total_peak_footprint, total_alloc_bytes;
    uint64_t total_peak_granted; /* a lower bound of the native footprint */
    /* The part of the footprint the arena model replays (cudaMalloc/cuMemAlloc
     * pages): its own peak, and its share of the footprint at the footprint's peak. */
    uint64_t total_peak_raw, total_raw_at_peak;
    bool driver_unusable;         /* a child forked after its parent used CUDA */
    struct cf_fork_origin fork;   /* what a forked child inherited; zero elsewhere */
    struct cf_trace_totals trace; /* the final report closed the trace: its figures */
    double headline_frag, internal_waste;
    uint64_t pool_reserved_high, pool_used_high;
    struct cf_arena_stats arena, shadow;
    unsigned *by_peak, *by_calls; /* site indices, best first */
    unsigned top;                 /* rows per table (CUDAFRAG_TOP) */
    struct cf_symtab syms;
    uint8_t *site_owner; /* enum cf_owner by site (owners.c) */
    struct cf_owner_view owners[CF_OWNER_COUNT];
    struct cf_finding *findings;
    unsigned nfindings, findings_dropped;
};

/* Why this forked child has no trace of its own, in one line without the
 * prefix; NULL when there is nothing to say. */
const char *cf_snap_untraced_note(const struct cf_snap *s, char *out, size_t n);

/* "PROGRAM (pid N, rank R)", what is unknown left out; an imported run's:
 * "imported from FILE (PyTorch memory snapshot)". */
void cf_snap_describe_program(const struct cf_snap *s, char *out, size_t n);
/* What an imported run was made from ("PyTorch memory snapshot"), NULL for a
 * traced one. */
const char *cf_snap_import_kind(const struct cf_snap *s);
/* The name the trace gives a pool (an imported run's: what stands for
 * PyTorch's caching allocator), NULL when none. */
const char *cf_snap_pool_name(const struct cf_snap *s, uint64_t handle);
/* The snapshot of in (its copy taken over): what it left out, the devices'
 * figures, the sites in order. Symbols, owners and findings are the caller's
 * next steps (cf_snap_symbols, cf_owners_compute, cf_findings_compute).
 * Returns 0, or -1 when memory ran out. */
int cf_snap_take(struct cf_snap *s, const struct cf_snap_input *in);
/* Names the frames of the sites the report shows or may name in a finding. */
void cf_snap_symbols(struct cf_snap *s);
void cf_snap_free(struct cf_snap *s);
/* What the native run held for the allocations the shadow arena model replays:
 * the peak of their pages (or, without any, the peak footprint or granted bytes). */
uint64_t cf_snap_shadow_native(const struct cf_snap *s);
/* The footprint at its peak that the shadow model does not replay (pools, VMM,
 * graph memory, arrays). */
uint64_t cf_snap_shadow_left_out(const struct cf_snap *s);

/* ---- partial.c ---- */
/* The final footprint sample, unless the driver may be held by the calling
 * thread (driver_held: the report runs inside a hook, or for a thread a signal
 * interrupted) or the locks it needs by another one; noted in in. */
void cf_snap_sample_final(struct cf_snap_input *in, bool driver_held,
                          const struct timespec *deadline);
/* After copying under the CF_REC_HELD_* locks held: forgets what was read without
 * its lock and notes in s->missing what is not there. */
void cf_snap_leave_out(struct cf_snap *s, unsigned held);
/* "call sites, memory pools" for s->missing, into out. */
void cf_snap_describe_missing(const struct cf_snap *s, char *out, size_t n);

/* "function (module+0x1f2c) file.c:42" (Python: "function (python) file.py:42")
 * for the frame a site is shown at. */
void cf_snap_site_label(const struct cf_snap *s, int site, char *out, size_t n);
/* The same with a long C++ name (over 64 bytes) without its parameters and long
 * template arguments ("at::native::gpu_reduce_kernel<...>"): for one-line mentions
 * in findings. */
void cf_snap_site_label_short(const struct cf_snap *s, int site, char *out, size_t n);
void cf_cxx_compact(const char *name, char *out, size_t n);
/* The same for one frame. */
void cf_snap_frame_label(const struct cf_snap *s, uintptr_t frame, char *out, size_t n);
/* The frame a site is shown at: its first that is not allocator or framework
 * plumbing (fold.c), or its outermost when all are; -1 without frames. */
int cf_snap_site_shown(const struct cf_snap *s, int site);
/* The next frame after index `after` that is not folded, -1 when none. */
int cf_snap_next_shown(const struct cf_snap *s, int site, int after);
/* Why a site has no Python frames (CF_PY_GIL_RELEASED, CF_PY_NO_FRAMES), 0 when
 * it has them or the process had no Python interpreter. */
uint32_t cf_snap_site_python(const struct cf_snap *s, int site);
/* The rate of allocation calls at a site, per second of its active span (at least
 * one second, so a short burst is not extrapolated). Shown only for a span of a
 * second or more; a shorter one is shown as the count and the span. */
double cf_site_rate(const struct cf_site *site);
double cf_site_span_s(const struct cf_site *site); /* first to last call */
double cf_site_mean_lifetime_s(const struct cf_site *site);
/* Index of the site with this hash, -1 if none. */
int cf_snap_site_index(const struct cf_snap *s, uint64_t hash);

#endif
