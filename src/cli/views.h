/* The views of a trace or report besides the text and JSON reports: the HTML
 * page, exports for other tools, and the commands that compare and check
 * reports (docs/views.md). One file per job; this header is their entry points. */
#ifndef CF_CLI_VIEWS_H
#define CF_CLI_VIEWS_H

#include <getopt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define CF_EXIT_USAGE 2

struct cf_whatif;

/* cudafrag report TRACE --html OUT, its what-if section from w (whatif.h,
 * planned): 0, or 1 with a message on stderr. */
int cf_html_write(const char *trace, const char *out, struct cf_whatif *w);

/* The subcommands; argv holds what follows the command's name. */
int cf_cmd_export(int argc, char **argv);
int cf_cmd_diff(int argc, char **argv);
int cf_cmd_merge(int argc, char **argv);
int cf_cmd_check(int argc, char **argv);

/* cudafrag run --check: the thresholds a report is held against. */
struct cf_limits {
    bool any;
    uint64_t max_peak_live, max_footprint, max_leak; /* UINT64_MAX: no limit */
    double max_frag;                                 /* > 1: no limit */
    int fail_on;                                     /* 0: none, 1 low, 2 medium, 3 high */
};
void cf_limits_init(struct cf_limits *l);
/* The limits' long options, for getopt_long (cmdline.h). */
enum { CF_LIM_PEAK_LIVE = 512, CF_LIM_FOOTPRINT, CF_LIM_FRAG, CF_LIM_LEAK, CF_LIM_FAIL_ON };
#define CF_LIMIT_LONGOPTS                                                                          \
    {"max-peak-live", required_argument, NULL, CF_LIM_PEAK_LIVE},                                  \
        {"max-footprint", required_argument, NULL, CF_LIM_FOOTPRINT},                              \
        {"max-fragmentation", required_argument, NULL, CF_LIM_FRAG},                               \
        {"max-leak", required_argument, NULL, CF_LIM_LEAK},                                        \
    {                                                                                              \
        "fail-on", required_argument, NULL, CF_LIM_FAIL_ON                                         \
    }
/* Takes getopt's opt and its value v when opt is a limit: 1; 0 when it is not
 * one; CF_EXIT_USAGE after a message (naming subcommand sub) when v is bad. */
int cf_limits_option(struct cf_limits *l, int opt, const char *v, const char *sub);
/* Holds the report or trace at path against l: 0 within, 1 beyond (the
 * reasons on stderr), 2 when it cannot be read. */
int cf_check_file(const char *path, const struct cf_limits *l);
/* Runs argv (the environment already set for profiling) as a child, then holds
 * its JSON report against l. Returns the program's own status when it is not
 * 0, else 0 (within the limits) or 1. */
int cf_run_checked(char **argv, const struct cf_limits *l);

/* Output files: "-" is stdout. cf_out_close reports a failed write;
 * cf_out_discard closes after a failure, removing the file if it was made here. */
FILE *cf_out_open(const char *path);
int cf_out_close(FILE *f, const char *path);
void cf_out_discard(FILE *f, const char *path);

#endif
