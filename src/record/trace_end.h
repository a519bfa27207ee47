/* The trace's END event, both sides (trace_end.c): the process writes it with its
 * final report; `cudafrag report TRACE` reads the arena's figures back from it.
 * The figures are the one list CF_TRACE_ARENA_FIELDS (record/trace_format.h). */
#ifndef CF_RECORD_TRACE_END_H
#define CF_RECORD_TRACE_END_H

#include <stddef.h>
#include <stdint.h>

#include "arena/arena.h"
#include "record/trace_format.h"
#include "record/trace_write.h"

/* The END event into the trace -- reason (why the report was written), the
 * report's time, the arena's figures -- and then every buffered event is
 * written; totals (may be NULL) gets the trace's totals. Nothing when tracing
 * is off. */
void cf_trace_end(const struct cf_arena_stats *arena, const char *reason, uint64_t now_ns,
                  struct cf_trace_totals *totals);
/* The END event's text: "reason WHY" and a line per figure; its length, 0 when
 * it does not fit in cap bytes. */
size_t cf_trace_end_text(const struct cf_arena_stats *arena, const char *reason, char *buf,
                         size_t cap);
/* An END event's text (len bytes, not NUL-terminated) read back: the arena's
 * figures into *arena (those missing are 0), the reason into reason (n bytes;
 * "" when missing). */
void cf_trace_end_read(const char *text, size_t len, struct cf_arena_stats *arena, char *reason,
                       size_t n);

#endif
