/* The subcommands' option parsing and its errors, one way for all (cmdline.h). */
#include "cli/cmdline.h"

#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>

int cf_usage_error(const char *sub, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "cudafrag: %s%s", sub ? sub : "", sub ? ": " : "");
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    cf_help_pointer(stderr, sub);
    return CF_EXIT_USAGE;
}

/* The long name of option val, for messages: "--top", or "-o" when it has none. */
static void option_name(const struct option *longopts, int val, char *out, size_t n)
{
    for (const struct option *o = longopts; o && o->name; o++)
        if (o->flag == NULL && o->val == val) {
            snprintf(out, n, "--%s", o->name);
            return;
        }
    snprintf(out, n, "-%c", val);
}

/* Why getopt_long refused the argument it just looked at. */
static void refused(int rc, char **argv, const struct option *longopts)
{
    char name[64];
    const char *arg = optind > 0 ? argv[optind - 1] : "";
    if (rc == ':') {
        option_name(longopts, optopt, name, sizeof name);
        cf_usage_error(argv[0], "%s needs a value", name);
    } else if (optopt == 0) {
        /* An unknown long option (or a prefix of more than one). */
        cf_usage_error(argv[0], "unknown option \"%.*s\"", (int)strcspn(arg, "="), arg);
    } else if (optopt >= CF_OPT_LONG || (strncmp(arg, "--", 2) == 0 && strchr(arg, '='))) {
        option_name(longopts, optopt, name, sizeof name);
        cf_usage_error(argv[0], "%s takes no value", name);
    } else {
        cf_usage_error(argv[0], "unknown option \"-%c\"", optopt);
    }
}

int cf_getopt(int argc, char **argv, const char *shortopts, const struct option *longopts,
              bool *started)
{
    if (!*started) {
        optind = 0; /* glibc: start again, permutation state included */
        *started = true;
    }
    opterr = 0;
    int rc = getopt_long(argc, argv, shortopts, longopts, NULL);
    if (rc == '?' || rc == ':') {
        refused(rc, argv, longopts);
        return '?';
    }
    return rc;
}

static bool same_file(const struct stat *a, const char *path)
{
    struct stat b;
    return stat(path, &b) == 0 && a->st_dev == b.st_dev && a->st_ino == b.st_ino;
}

int cf_out_not_input(const char *sub, const char *out, char *const *inputs, int ninputs)
{
    struct stat o;
    /* Writing to a device or a pipe destroys no file. */
    if (out == NULL || strcmp(out, "-") == 0 || stat(out, &o) != 0 || !S_ISREG(o.st_mode)) return 0;
    for (int i = 0; i < ninputs; i++)
        if (inputs[i] && same_file(&o, inputs[i]))
            return cf_usage_error(sub, "the output %s is the input %s: it would be destroyed", out,
                                  inputs[i]);
    return 0;
}
