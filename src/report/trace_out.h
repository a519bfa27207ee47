/* Where the trace goes and when it starts and ends (its header, events and END
 * event are written by record/trace_*.c). */
#ifndef CF_REPORT_TRACE_OUT_H
#define CF_REPORT_TRACE_OUT_H

#include "report/snapshot.h"

/* With CUDAFRAG_TRACE=1: opens <output>.cftrace and writes the header. */
void cf_report_trace_open(void);
/* In a forked child, from the fork handler. Why its trace, if any, is not its own
 * (see cf_fork_origin). */
enum cf_child_trace { CF_CHILD_TRACED, CF_CHILD_AFTER_CUDA, CF_CHILD_SAME_NAME };
/* The child of a parent that made no CUDA call: its own trace, <output>.cftrace
 * with its pid; CF_CHILD_SAME_NAME (and no trace) when the name would be the
 * parent's (no %p in the pattern). */
enum cf_child_trace cf_report_trace_open_in_child(void);
/* The child of a parent that used CUDA: no trace (its sites and live
 * allocations are defined in the parent's). */
void cf_report_trace_end_in_child(void);
/* With the final report: the END event, then every buffered event is written;
 * s->trace gets the totals. */
void cf_report_trace_end(struct cf_snap *s);

#endif
