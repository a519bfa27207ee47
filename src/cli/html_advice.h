/* The HTML report's "setting to use" section: `cudafrag advise`'s pick for a
 * PyTorch or JAX `--blocks` run, as the text report has it (docs/views.md). */
#ifndef CF_CLI_HTML_ADVICE_H
#define CF_CLI_HTML_ADVICE_H

#include "cli/advise.h"
#include "report/strbuf.h"

/* Nothing when a is NULL or the trace gets no advice (not a --blocks run, no
 * framework identified, a cache's segments). */
void cf_html_advice(struct cf_buf *b, const struct cf_advise *a);

#endif
