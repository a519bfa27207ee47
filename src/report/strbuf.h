/* A growing text buffer for rendering the report. The report is rendered at exit
 * or from the reporting thread, never in a signal handler, so it may malloc.
 * An allocation failure is sticky (failed) and later appends are dropped, so a
 * renderer never has to check every call. */
#ifndef CF_REPORT_STRBUF_H
#define CF_REPORT_STRBUF_H

#include <stdbool.h>
#include <stddef.h>

#include "base/log.h"

struct cf_buf {
    char *data;
    size_t len, cap;
    bool failed;
};

void cf_buf_printf(struct cf_buf *b, const char *fmt, ...) CF_PRINTF(2, 3);
void cf_buf_put(struct cf_buf *b, const char *s, size_t n);
void cf_buf_puts(struct cf_buf *b, const char *s);
void cf_buf_free(struct cf_buf *b);

#endif
