/* The trace's event path (trace_append.c): whether events are traced and the
 * append itself, for the record (through trace_write.h); then, for the writer
 * (trace_write.c), the trace's state and every thread's buffer, whose partial
 * blocks the writer takes. */
#ifndef CF_RECORD_TRACE_APPEND_H
#define CF_RECORD_TRACE_APPEND_H

#include <stdbool.h>

#include "record/event.h"

bool cf_trace_on(void);
/* e into this thread's buffer: no malloc, no stdio, no locked instruction in the
 * common case. */
void cf_trace_emit(const struct cf_event *e);

/* The trace's state: events are buffered from init, written once the file is
 * open, and neither after the finish (or a failed open: off). */
enum cf_trace_state { CF_TRACE_OFF, CF_TRACE_BUFFERING, CF_TRACE_WRITING, CF_TRACE_FINISHED };
enum cf_trace_state cf_trace_state(void);
void cf_trace_state_set(enum cf_trace_state s);
/* Sets s, returns the state before. */
enum cf_trace_state cf_trace_state_swap(enum cf_trace_state s);

/* At init: the threads' buffers are found per thread, and lock-free appends are
 * set up where the kernel allows them (also again in a forked child). */
void cf_trace_buffers_init(void);
void cf_trace_fence_setup(void);
/* The writer, each flush interval: every thread's partial block that can be taken
 * without waiting is queued, so a crash loses at most one interval. */
void cf_trace_collect_partial(void);
/* At the finish: every thread's block queued and its buffer closed; false when a
 * buffer could not be taken in time (a thread interrupted inside an append). */
bool cf_trace_collect_all(void);
/* Tracing ends without a file: every buffer closed, what it held dropped. */
void cf_trace_buffers_off(void);
/* In a forked child: the parent's buffers are forgotten (their threads are gone). */
void cf_trace_buffers_after_fork(void);

#endif
