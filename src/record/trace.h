/* The event trace writer (trace.c); see docs/trace-format.md for the file. */
#ifndef CF_RECORD_TRACE_H
#define CF_RECORD_TRACE_H

#include <stdbool.h>
#include <stdint.h>

#include "record/event.h"

/* Events are buffered from cf_trace_init (called by the record's init when
 * CUDAFRAG_TRACE=1) and written once cf_trace_open has a path. */
void cf_trace_init(uint64_t flush_ms);
/* Opens the file, writes the header (an encoded string of "key=value" lines) and
 * starts the writer thread. Returns 0, or -1 (tracing off, one message said). */
int cf_trace_open(const char *path, const void *header, uint32_t header_len);
bool cf_trace_on(void);
void cf_trace_emit(const struct cf_event *e);

struct cf_trace_totals {
    uint64_t events, raw_bytes, file_bytes, chunks_lost;
    bool partial; /* a thread's buffer could not be taken at the end (a signal interrupted it) */
};
/* Flushes everything; events after this are not traced. */
void cf_trace_finish(struct cf_trace_totals *totals);
/* In a forked child: the parent's buffered events and file are dropped; tracing,
 * if it was on, waits for the child's own cf_trace_open (or cf_trace_finish). */
void cf_trace_after_fork_child(void);

#endif
