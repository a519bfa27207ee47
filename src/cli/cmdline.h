/* The subcommands' command lines, all parsed one way (getopt_long): long
 * options as "--opt VALUE" or "--opt=VALUE", short ones as "-o FILE" or
 * "-oFILE", "--" ending the options. A usage error is one line saying what is
 * wrong and one pointing to the subcommand's --help, status 2. */
#ifndef CF_CLI_CMDLINE_H
#define CF_CLI_CMDLINE_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#define CF_EXIT_USAGE 2

/* Long options without a short form take values from here up, so that an
 * error names them by their long name. */
#define CF_OPT_LONG 256

/* Prints "cudafrag: SUB: <message>" and the pointer to SUB's --help ("cudafrag
 * --help" when sub is NULL); returns CF_EXIT_USAGE. */
int cf_usage_error(const char *sub, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* getopt_long over argv, argv[0] the subcommand's name. shortopts must begin
 * with ':' (or "+:" to stop at the first operand). Returns the option, -1 after
 * the last, or '?' once the error is printed (an unknown option, a missing
 * value, a value given to an option that takes none). Restarts at argv[1] when
 * called with *started false, then sets it. */
int cf_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
              bool *started);

/* Prints SUB's help ("usage: ..." and what it does) to f. */
void cf_help_print(FILE *f, const char *sub);
/* The whole command's: every subcommand's usage and description. */
void cf_help_all(FILE *f);
/* The pointer printed after a usage error. */
void cf_help_pointer(FILE *f, const char *sub);

/* A subcommand about to write out (NULL or "-": stdout) refuses when out
 * is one of its inputs (the same file, by device and inode, however named):
 * writing would destroy what it reads. CF_EXIT_USAGE after a message, else 0.
 * Called before anything is opened for writing. */
int cf_out_not_input(const char *sub, const char *out, char *const *inputs, int ninputs);

#endif
