/* The HTML report's what-if section: the replay table (cudafrag replay) of the
 * same trace, per device (docs/views.md). */
#ifndef CF_CLI_HTML_WHATIF_H
#define CF_CLI_HTML_WHATIF_H

#include "replay/table.h"
#include "report/strbuf.h"

void cf_html_whatif(struct cf_buf *b, const struct cf_rp_table *t);

#endif
