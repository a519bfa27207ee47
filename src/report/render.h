/* The two renderings of a snapshot: the human text report and the JSON document
 * (schema in docs/report.md). */
#ifndef CF_REPORT_RENDER_H
#define CF_REPORT_RENDER_H

#include "report/snapshot.h"
#include "report/strbuf.h"

void cf_render_text(const struct cf_snap *s, struct cf_buf *out);
void cf_render_json(const struct cf_snap *s, struct cf_buf *out);
/* Why the arena's figures, or its model's, are not given (cf_shadow_failed or
 * locked_out): one sentence into out, "" when they are good. */
void cf_render_arena_failure(const struct cf_arena_stats *a, char *out, size_t n);

#endif
