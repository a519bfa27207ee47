/* `cudafrag replay TRACE`: a traced program's device-memory allocations
 * replayed against allocator models (src/replay/), one table of what each
 * would have held. The analysis is shared with the HTML report, which runs it
 * during its own pass over the trace, so both show the same figures. */
#ifndef CF_CLI_WHATIF_H
#define CF_CLI_WHATIF_H

#include <getopt.h>
#include <stdint.h>

#include "replay/table.h"

struct cf_event;
struct cf_snap;
struct cf_whatif;

/* argv: "replay" and its arguments. Returns the command's exit status. */
int cf_cmd_replay(int argc, char **argv);

/* NULL when out of memory. */
struct cf_whatif *cf_whatif_new(void);
void cf_whatif_free(struct cf_whatif *w);
/* The options that choose the models and the device (--device-memory, --model,
 * --sweep), for getopt_long (cmdline.h), shared by replay and report --html. */
enum { CF_WI_DEVICE_MEMORY = 768, CF_WI_MODEL, CF_WI_SWEEP };
#define CF_WHATIF_LONGOPTS                                                                         \
    {"device-memory", required_argument, NULL, CF_WI_DEVICE_MEMORY},                               \
        {"model", required_argument, NULL, CF_WI_MODEL},                                           \
    {                                                                                              \
        "sweep", required_argument, NULL, CF_WI_SWEEP                                              \
    }
/* Takes getopt's opt and its value v when opt is one of them: 1; 0 when it is
 * not; 2 after a usage error (naming subcommand sub) when v is bad. */
int cf_whatif_option(struct cf_whatif *w, int opt, const char *v, const char *sub);
void cf_whatif_set_check(struct cf_whatif *w, uint32_t every);
/* After the options: the rows to run (every model with its defaults when none
 * was given). 0, or 2 after a usage error. */
int cf_whatif_plan(struct cf_whatif *w, const char *sub);
/* The replay's after_event hook: takes each event of the trace, in order. */
void cf_whatif_event(const struct cf_event *e, void *w);
/* Once the trace is read, while its replay is still open (the record's figures
 * and the modules' names are the trace's): the models run, the table filled.
 * 0; 1 after a message on stderr when a model could not run (its row says so
 * too); -1 after a message when there is no table (out of memory). */
int cf_whatif_run(struct cf_whatif *w, const char *trace, const struct cf_snap *snap);
const struct cf_rp_table *cf_whatif_table(const struct cf_whatif *w);

#endif
