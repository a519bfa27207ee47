/* SVG pieces of the HTML report: a memory-over-time plot and an icicle graph,
 * drawn here so the page needs no script to show them (docs/views.md). */
#ifndef CF_CLI_SVG_H
#define CF_CLI_SVG_H

#include <stdint.h>

#include "cli/steps.h"
#include "cli/weights.h"
#include "report/strbuf.h"

/* Appends s with &, <, >, " and ' escaped and malformed UTF-8 replaced. */
void cf_html_esc(struct cf_buf *b, const char *s);

struct cf_plot_line {
    const char *name, *cls; /* the legend's name, the CSS class that styles it */
    const struct cf_point *p;
    unsigned n;
};

struct cf_plot_mark {
    const char *cls; /* "peak ..." or "oom" */
    uint64_t t, v;
    int below; /* the label goes under the marker (two peaks close together) */
    char label[64], title[200];
};

struct cf_plot {
    const char *id, *title;
    uint64_t t_end; /* ns, the right edge */
    struct cf_plot_line lines[4];
    unsigned nlines;
    const struct cf_plot_mark *marks;
    unsigned nmarks;
};

/* The plot, and its data as JSON for the hover script (<script id="ID-data">). */
void cf_svg_plot(struct cf_buf *b, const struct cf_plot *p);

/* An icicle graph of rows (cf_weights): one box per frame, outermost on top,
 * widths proportional to the bytes under it. */
void cf_svg_icicle(struct cf_buf *b, const char *id, const char *title, const struct cf_snap *s,
                   const struct cf_wrow *rows, unsigned n);

#endif
