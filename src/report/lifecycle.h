/* Process lifecycle of the preloaded library (constructor, exit paths, signals). */
#ifndef CF_REPORT_LIFECYCLE_H
#define CF_REPORT_LIFECYCLE_H

#include <stddef.h>

/* LD_PRELOAD without libcudafrag: entries are separated by ':' or ' ' and an entry
 * is ours when its basename starts with "libcudafrag.so" or it equals self (may be
 * NULL). Writes the rest, ':'-separated, to out; -1 if n is too small. */
int cf_preload_without(const char *preload, const char *self, char *out, size_t n);

#endif
