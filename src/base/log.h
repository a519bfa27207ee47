/* Messages to stderr without malloc or stdio: safe on the hook path and, for
 * cf_write_all, in signal handlers. Every message starts with "cudafrag: ". */
#ifndef CF_UTIL_LOG_H
#define CF_UTIL_LOG_H

#include <stddef.h>
#include <stdint.h>

#include "base/export.h"

#define CF_PRINTF(a, b) __attribute__((format(printf, a, b)))

/* Formats into a stack buffer and write(2)s it to fd 2, preserving errno. */
void cf_log(const char *fmt, ...) CF_PRINTF(1, 2);
/* Same, but at most once per key (a small fixed table; extra keys always print). */
CF_COLD void cf_warn_once(const char *key, const char *fmt, ...) CF_PRINTF(2, 3);
/* write(2) until done or a hard error; returns 0 or -errno. Keeps errno intact. */
int cf_write_all(int fd, const void *buf, size_t len);

#endif
