/* cudafrag report TRACE: the exit report, recomputed from a trace. */
#ifndef CF_CLI_REPLAY_H
#define CF_CLI_REPLAY_H

#include <stdbool.h>
#include <stdio.h>

/* Prints the text (or JSON) report of the trace at path to out; 0, or 1 with a
 * message on stderr. */
int cf_replay_report(const char *path, bool json, FILE *out);

#endif
