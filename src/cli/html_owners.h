/* The HTML report's owners section: device memory by who allocated it (the
 * report's owners, docs/report.md#owners), with what each held at the devices'
 * live peaks, exact from the trace. */
#ifndef CF_CLI_HTML_OWNERS_H
#define CF_CLI_HTML_OWNERS_H

#include "cli/collect.h"
#include "report/strbuf.h"

void cf_html_owners(struct cf_buf *b, const struct cf_coll *c);

#endif
