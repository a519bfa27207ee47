/* Replaying a trace: the events applied in the process's order to the record
 * tables (linked from the core), then the same snapshot the exit report took.
 * `cudafrag report` prints it; other commands read the snapshot, the tables
 * (cf_rec) or, through after_event, the state after every event. */
#ifndef CF_CLI_REPLAY_H
#define CF_CLI_REPLAY_H

#include <stdbool.h>
#include <stdio.h>

#include "record/event.h"
#include "report/snapshot.h"

struct cf_replay_hooks {
    /* Called after each event is applied, in seq order (SITE events are applied
     * before all others and reported here too): cf_rec.dev[d] then holds the
     * device's state after the event (footprint, live bytes and the parts). */
    void (*after_event)(const struct cf_event *e, void *ctx);
    void *ctx;
};

/* Loads and applies the trace at path, then takes the final snapshot into s.
 * 0, or 1 with a message on stderr. One replay per process at a time. */
int cf_replay_open(const char *path, const struct cf_replay_hooks *hooks, struct cf_snap *s);
/* The same from the bytes of a trace already read; name stands for it in messages. */
int cf_replay_open_mem(const char *name, const void *data, size_t len,
                       const struct cf_replay_hooks *hooks, struct cf_snap *s);
void cf_replay_close(struct cf_snap *s);
/* Names a trace frame (CF_FRAME(module, offset)) while a replay is open:
 * function, file:line from DWARF, module basename and offset; a Python frame
 * (CF_FRAME(CF_PY_MODULE, id)) by its function and file:line. */
int cf_replay_resolve(uint64_t frame, struct cf_sym *out);
/* The same with the functions inlined at the frame: out[0 .. n-1] innermost
 * first, each with its own function and file:line (out[0] is what
 * cf_replay_resolve names, but for symbol); returns n (1 when nothing is
 * inlined), at most max, or -1 without a replay. */
int cf_replay_resolve_inlined(uint64_t frame, struct cf_sym *out, int max);

/* The path of a native trace frame's module while a replay is open, without
 * reading its debug information: 0, or -1 (a Python frame, an unknown module). */
int cf_replay_module(uint64_t frame, char *path, size_t n);

/* The value of the trace header's key (docs/trace-format.md) while a replay
 * is open: 0, or -1 when the key is absent. */
int cf_replay_header(const char *key, char *value, size_t n);
/* Each value of a key that may repeat (NULL after: the first): where to go on
 * from, NULL when there is no further one. */
const char *cf_replay_header_next(const char *key, const char *after, char *value, size_t n);

/* False: frames are named by module and offset only, no DWARF read. The fuzz
 * targets set it: the module files a trace names are local files, not the
 * trace, and reading their debug information would take most of each run. */
extern bool cf_replay_dwarf;

/* Prints the text (or JSON) report of the trace at path to out; 0, or 1 with a
 * message on stderr. */
int cf_replay_report(const char *path, bool json, FILE *out);

#endif
