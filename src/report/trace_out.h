/* The trace's header and its END event (the events themselves: record/trace.c). */
#ifndef CF_REPORT_TRACE_OUT_H
#define CF_REPORT_TRACE_OUT_H

#include "report/snapshot.h"

/* With CUDAFRAG_TRACE=1: opens <output>.cftrace and writes the header. */
void cf_report_trace_open(void);
/* With the final report: the END event, then every buffered event is written;
 * s->trace gets the totals. */
void cf_report_trace_end(struct cf_snap *s);

#endif
