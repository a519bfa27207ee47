/* `cudafrag replay TRACE`: a traced program's device-memory allocations
 * replayed against allocator models (src/replay/), one table of what each
 * would have held. */
#ifndef CF_CLI_WHATIF_H
#define CF_CLI_WHATIF_H

/* argv: the arguments after "replay". Returns the command's exit status;
 * usage is printed after a usage error. */
int cf_cmd_replay(int argc, char **argv, const char *usage);

#endif
