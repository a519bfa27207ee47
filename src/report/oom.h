/* Out-of-memory failures summed up for the renderers and the stderr line: how
 * many, the first (the failed request of the report CUDAFRAG_ON_OOM writes),
 * and whether the program went on allocating after it. */
#ifndef CF_REPORT_OOM_H
#define CF_REPORT_OOM_H

#include <stddef.h>
#include <stdint.h>

#include "report/snapshot.h"
#include "report/strbuf.h"

struct cf_oom_summary {
    uint64_t count;             /* failed allocations for memory, kept in the list or not */
    const struct cf_oom *first; /* the earliest kept; NULL when none */
    int recovered; /* 1: an allocation succeeded after the first; -1: unknown (the OOM report) */
    double first_at_s;   /* since the start */
    double first_unix_s; /* on the wall clock; NAN: unknown */
};
void cf_snap_oom_summary(const struct cf_snap *s, struct cf_oom_summary *out);

/* "3 failed allocations (out of memory), first at +1.2 s; the program recovered
 * ..." with its newline; nothing when no allocation failed for memory. */
void cf_render_oom_line(const struct cf_snap *s, struct cf_buf *o);
/* The OOM report's section: the failed request (API, size, device, time, free
 * memory, call site and stack) and who held the memory. Nothing in other reports. */
void cf_render_oom_failure(const struct cf_snap *s, struct cf_buf *o);

/* "2026-12-07 10:04:05.123 UTC" for a wall-clock time in seconds. */
const char *cf_fmt_wall(double unix_s, char *out, size_t n);

#endif
