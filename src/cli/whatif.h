/* `cudafrag replay TRACE`: a traced program's device-memory allocations
 * replayed against allocator models (src/replay/), one table of what each
 * would have held. The analysis is shared with the HTML report, which runs it
 * during its own pass over the trace, so both show the same figures. */
#ifndef CF_CLI_WHATIF_H
#define CF_CLI_WHATIF_H

#include <stdint.h>

#include "replay/table.h"

struct cf_event;
struct cf_snap;
struct cf_whatif;

/* argv: the arguments after "replay". Returns the command's exit status;
 * usage is printed after a usage error. */
int cf_cmd_replay(int argc, char **argv, const char *usage);

/* NULL when out of memory. */
struct cf_whatif *cf_whatif_new(void);
void cf_whatif_free(struct cf_whatif *w);
/* Consumes argv[*i] (and its value) when it chooses the models or the device:
 * --device-memory, --model, --sweep. 1 when taken, 0 when not one of them,
 * 2 (a usage error, printed with usage) when its value is bad. */
int cf_whatif_option(struct cf_whatif *w, int argc, char **argv, int *i, const char *usage);
void cf_whatif_set_check(struct cf_whatif *w, uint32_t every);
/* After the options: the rows to run (every model with its defaults when none
 * was given). 0, or 2 after a usage error. */
int cf_whatif_plan(struct cf_whatif *w, const char *usage);
/* The replay's after_event hook: takes each event of the trace, in order. */
void cf_whatif_event(const struct cf_event *e, void *w);
/* Once the trace is read, while its replay is still open (the record's figures
 * and the modules' names are the trace's): the models run, the table filled.
 * 0; 1 after a message on stderr when a model could not run (its row says so
 * too); -1 after a message when there is no table (out of memory). */
int cf_whatif_run(struct cf_whatif *w, const char *trace, const struct cf_snap *snap);
const struct cf_rp_table *cf_whatif_table(const struct cf_whatif *w);

#endif
