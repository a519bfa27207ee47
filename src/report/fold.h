/* Allocator and framework frames, folded away when a call site is named: the
 * site shown is its first frame that is not one of them. */
#ifndef CF_REPORT_FOLD_H
#define CF_REPORT_FOLD_H

#include <stdbool.h>

#include "report/symbolize.h"

/* True when a resolved frame matches a built-in pattern (native frames only) or
 * one of CUDAFRAG_SKIP_FRAMES. */
bool cf_fold_frame(const struct cf_sym *s);
/* The built-in patterns, comma-separated (documented in docs/report.md). */
const char *cf_fold_builtin(void);

#endif
