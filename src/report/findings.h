/* Findings: concrete problems in the recorded allocation behaviour, each with a
 * stable id, a severity, the call site, the numbers behind it and what to change. */
#ifndef CF_REPORT_FINDINGS_H
#define CF_REPORT_FINDINGS_H

#include <stdint.h>

#include "record/record.h"

#define CF_FINDING_NUMS 8

/* One call site a finding covers: stacks shown at the same frame (after
 * allocator frames are folded) count as one. */
struct cf_finding_site {
    int site;                   /* the snapshot's site with the largest value among them */
    uintptr_t key;              /* the frame they are shown at */
    unsigned stacks;            /* distinct stacks */
    double value;               /* of the finding's measure */
    double share;               /* of the finding's total */
    uint64_t count;             /* allocations (calls, leaked, failed) */
    uint64_t first_ns, last_ns; /* of the stacks' first and last calls */
    char note[96];              /* the site's own numbers, one line */
};

/* One finding per kind of problem and cause, listing the sites it covers. */
struct cf_finding {
    const char *id;       /* "alloc-rate", "many-sizes", ... (docs/report.md) */
    const char *severity; /* "high", "medium" or "low" */
    int site;             /* the largest site covered (or the busiest); -1: none */
    const char *measure;  /* what the sites' values and shares are of: "calls", "bytes", ... */
    struct cf_finding_site *sites; /* largest first; all of them (renderers show CUDAFRAG_TOP) */
    unsigned nsites;
    struct {
        const char *name; /* with the unit in the name: "_bytes", "_per_s", ... */
        double value;
    } num[CF_FINDING_NUMS];
    unsigned nnum;
    char title[512];  /* one line: what happened, where */
    char advice[768]; /* what to change */
};

struct cf_snap;
/* Fills s->findings / s->nfindings; needs symbols resolved first (titles name sites). */
int cf_findings_compute(struct cf_snap *s);
void cf_findings_free(struct cf_snap *s);

/* Thresholds, shared with the documentation. */
#define CF_RATE_PER_S 100.0
/* alloc-rate is high when a site allocated its peak holding this many times over
 * (bytes allocated / peak live bytes): a count, never a rate, so the severity
 * `check --fail-on` sees does not change with the machine's load. */
#define CF_TURNOVER_HIGH 1000.0
#define CF_MANY_SIZES    32
/* A site counts its sizes exactly only up to CF_SITE_SIZES: beyond that a site
 * is "many sizes" when it is past its limit and the process as a whole is. */
#define CF_SITE_MANY_SIZES (CF_SITE_SIZES < CF_MANY_SIZES ? CF_SITE_SIZES : CF_MANY_SIZES)
#define CF_FOOTPRINT_RATIO 1.3
/* Below this much held beyond live at the footprint peak, no finding; its
 * severity is by the share of the devices' memory it is (high from 10 %, medium
 * from 1 %, low below; medium when the devices' size is not known). */
#define CF_FOOTPRINT_MIN_BYTES    (8ull << 20)
#define CF_FOOTPRINT_HIGH_SHARE   0.10
#define CF_FOOTPRINT_MEDIUM_SHARE 0.01
#define CF_REGROWS                3
#define CF_HOT_CALLS              1000
#define CF_HOT_LIFETIME_S         0.010
#define CF_ROUNDING_WASTE         0.20
#define CF_ROUND_TO               (2ull << 20)
/* library-memory: a library owns at least this share of the peak live bytes and
 * this many bytes (docs/report.md#owners); medium from the second share. */
#define CF_LIBRARY_SHARE        0.10
#define CF_LIBRARY_MIN_BYTES    (64ull << 20)
#define CF_LIBRARY_MEDIUM_SHARE 0.25

#endif
