/* The HTML report's style sheet and hover script, inlined into every page (no
 * network: the page is one self-contained file). */
#ifndef CF_CLI_HTML_STYLE_H
#define CF_CLI_HTML_STYLE_H

extern const char cf_html_css[];
extern const char cf_html_js[];

#endif
