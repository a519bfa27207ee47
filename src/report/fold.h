/* Allocator and framework frames, folded away when a call site is named: the
 * site shown is its first frame that is not one of them. */
#ifndef CF_REPORT_FOLD_H
#define CF_REPORT_FOLD_H

#include <stdbool.h>

#include "report/symbolize.h"

/* True when a resolved frame matches a built-in pattern (native frames; for Python
 * frames, the frameworks' package folders) or one of CUDAFRAG_SKIP_FRAMES. */
bool cf_fold_frame(const struct cf_sym *s);
/* Folded only for being a framework's library or package, not its allocator or
 * call machinery: such a frame is shown when a stack holds nothing else. */
bool cf_fold_framework_only(const struct cf_sym *s);
/* True when name matches one of a comma-separated list of patterns ('*' matches
 * any run of characters). */
bool cf_fold_match(const char *list, const char *name);
/* The built-in patterns, comma-separated (documented in docs/report.md). */
const char *cf_fold_builtin(void);

#endif
