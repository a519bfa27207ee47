/* The last words of a process killed by a fatal signal: a few totals written
 * with write(2) only, because nothing else is safe in a signal handler. */
#ifndef CF_REPORT_CRASH_H
#define CF_REPORT_CRASH_H

/* Installs the handlers for SIGSEGV, SIGBUS, SIGABRT, SIGTERM and SIGINT where the
 * program still has the default disposition. */
void cf_crash_install(void);

#include <signal.h>
#include <stdbool.h>

/* Formats "cudafrag: <what>; report incomplete: ..." with the totals into buf
 * (async-signal-safe); returns its length. */
unsigned long cf_crash_format(const char *what, char *buf, unsigned long n);
/* Writes that summary to stderr, at most once per process. */
void cf_crash_summary(const char *what);
/* True when sa is one of the handlers installed here. */
bool cf_crash_handler_is(const struct sigaction *sa);

#endif
