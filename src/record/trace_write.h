/* Writing the event trace (CUDAFRAG_TRACE=1), the process's side: the event path
 * (trace_append.c), the writer thread and the file (trace_write.c), the header
 * (trace_header.c) and the END event (trace_end.h). The format:
 * record/trace_format.h and docs/trace-format.md. */
#ifndef CF_RECORD_TRACE_WRITE_H
#define CF_RECORD_TRACE_WRITE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/event.h"
#include "record/trace_append.h" /* cf_trace_on, cf_trace_emit */

/* Events are buffered from cf_trace_init (called by the record's init when
 * CUDAFRAG_TRACE=1) and written once cf_trace_open has a path. */
void cf_trace_init(uint64_t flush_ms);
/* Opens the file, writes the header (an encoded string of "key=value" lines) and
 * starts the writer thread. Returns 0, or -1 (tracing off, one message said). */
int cf_trace_open(const char *path, const void *header, uint32_t header_len);

struct cf_trace_totals {
    uint64_t events, raw_bytes, file_bytes, chunks_lost;
    bool partial; /* a thread's buffer could not be taken at the end (a signal interrupted it) */
};
/* Flushes everything; events after this are not traced. */
void cf_trace_finish(struct cf_trace_totals *totals);
/* Writes what the threads buffered so far and syncs the file (fdatasync); false
 * when tracing is not writing or the sync failed. */
bool cf_trace_sync(void);
/* In a forked child: the parent's buffered events and file are dropped; tracing,
 * if it was on, waits for the child's own cf_trace_open (or cf_trace_finish). */
void cf_trace_after_fork_child(void);

/* The header's "key=value" lines into buf (trace_header.c): who was traced, with
 * which settings; rank as the report names it, start_ns the events' time origin.
 * Returns the length (lines that do not fit are left out). */
size_t cf_trace_header(char *buf, size_t cap, const char *rank, uint64_t start_ns);

#endif
