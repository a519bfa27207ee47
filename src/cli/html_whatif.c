/* The figures are the table's (src/replay/table.c) and so are the words where
 * the text table has them (the out-of-memory column, the note on a trace that
 * is not block-level). Each figure also carries its exact value, printed as
 * the JSON table prints it, so a reader (and the tests) can hold the page
 * against `cudafrag replay --json`. */
#include "cli/html_whatif.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/svg.h"
#include "replay/model.h"
#include "report/format.h"
#include "report/json_write.h"

static double ratio(uint64_t a, uint64_t b)
{
    return b ? (double)a / (double)b : 0;
}

static void value_cell(struct cf_buf *b, double v, const char *shown)
{
    cf_buf_puts(b, "<td class=\"n\" data-value=\"");
    cf_jw_number(b, v);
    cf_buf_printf(b, "\">%s</td>", shown);
}

static void bytes_cell(struct cf_buf *b, uint64_t v)
{
    char a[32];
    cf_buf_printf(b, "<td class=\"n\" data-bytes=\"%" PRIu64 "\">%s</td>", v,
                  cf_fmt_bytes(v, a, sizeof a));
}

static bool oom_known(const struct cf_rp_device_table *d)
{
    return d->device_memory != CF_RP_UNLIMITED;
}

static void row(struct cf_buf *b, const struct cf_rp_device_table *d, unsigned i, int best)
{
    const struct cf_rp_result *r = &d->results[i];
    char v[96];
    cf_buf_printf(b, "<tr data-label=\"");
    cf_html_esc(b, r->label);
    cf_buf_printf(b, "\"%s><th scope=\"row\"><code>", (int)i == best ? " class=\"best\"" : "");
    cf_html_esc(b, r->label);
    cf_buf_puts(b, "</code></th>");
    if (r->error[0]) {
        cf_buf_printf(b, "<td colspan=\"%d\">not run: ", oom_known(d) ? 6 : 5);
        cf_html_esc(b, r->error);
        cf_buf_puts(b, "</td></tr>");
        return;
    }
    bytes_cell(b, r->peak_footprint);
    double x = ratio(r->peak_footprint, r->peak_live);
    snprintf(v, sizeof v, "%.3f", x);
    value_cell(b, x, v);
    snprintf(v, sizeof v, "%.1f%%", 100 * r->internal);
    value_cell(b, r->internal, v);
    snprintf(v, sizeof v, "%.1f%%", 100 * r->external);
    value_cell(b, r->external, v);
    cf_buf_printf(b, "<td class=\"n\" data-value=\"%" PRIu64 "\">%" PRIu64 "</td>", r->driver_calls,
                  r->driver_calls);
    if (oom_known(d)) {
        cf_rp_oom_text(d, r, v, sizeof v);
        if (r->oom)
            cf_buf_printf(b, "<td class=\"oom\" data-oom-op=\"%" PRIu64 "\">", r->oom_op);
        else
            cf_buf_puts(b, "<td>");
        cf_html_esc(b, v);
        cf_buf_puts(b, "</td>");
    }
    cf_buf_puts(b, "</tr>");
}

static void device_lines(struct cf_buf *b, const struct cf_rp_device_table *d)
{
    const struct cf_rp_stream *s = d->stream;
    char a[32], l[32];
    cf_buf_printf(b,
                  "<p>%u allocations and %u frees replayed. Peak live <b>%s</b>: the lower "
                  "bound, what no allocator can hold less than.",
                  s->nallocs, s->nfrees, cf_fmt_bytes(s->peak_live, l, sizeof l));
    if (d->traced_known)
        cf_buf_printf(b, " The traced run held %s at its peak (%.3f x its peak live).",
                      cf_fmt_bytes(d->traced_peak_footprint, a, sizeof a),
                      ratio(d->traced_peak_footprint, d->traced_peak_live));
    if (oom_known(d))
        cf_buf_printf(b, " Device memory %s (%s).", cf_fmt_bytes(d->device_memory, a, sizeof a),
                      strcmp(d->memory_from, "trace") == 0 ? "from the trace"
                                                           : "from --device-memory");
    else
        cf_buf_puts(b, " Device memory not known (give <code>--device-memory</code>): no "
                       "out-of-memory check.");
    cf_buf_puts(b, "</p>");
}

static void best_line(struct cf_buf *b, const struct cf_rp_device_table *d, int best)
{
    char a[32];
    if (cf_rp_none_fits(d)) {
        cf_buf_printf(b,
                      "<p class=\"whatif-best\">Best: none, <b>no model fits in %s of device "
                      "memory</b>: every one runs out.</p>",
                      cf_fmt_bytes(d->device_memory, a, sizeof a));
        return;
    }
    if (best < 0) return;
    const struct cf_rp_result *r = &d->results[best];
    cf_buf_puts(b, "<p class=\"whatif-best\">Best: <b><code>");
    cf_html_esc(b, r->label);
    cf_buf_printf(b, "</code></b>, peak footprint %s (%.3f x live).</p>",
                  cf_fmt_bytes(r->peak_footprint, a, sizeof a),
                  ratio(r->peak_footprint, r->peak_live));
}

static void sweeps(struct cf_buf *b, const struct cf_rp_device_table *d)
{
    if (d->nsweeps == 0) return;
    cf_buf_puts(b, "<ul class=\"sweeps\">");
    for (unsigned i = 0; i < d->nsweeps; i++) {
        const struct cf_rp_sweep *w = &d->sweeps[i];
        cf_buf_puts(b, "<li>best <code>");
        cf_html_esc(b, w->knob);
        cf_buf_puts(b, "</code> for <code>");
        cf_html_esc(b, d->results[w->base].label);
        cf_buf_puts(b, "</code>: <code>");
        cf_html_esc(b, w->best < 0 ? "no setting ran" : d->results[w->best].label);
        cf_buf_puts(b, "</code></li>");
    }
    cf_buf_puts(b, "</ul>");
}

static void device(struct cf_buf *b, const struct cf_rp_device_table *d)
{
    int best = cf_rp_best_model(d);
    cf_buf_printf(b, "<h3>Device %d</h3>", d->stream->device);
    device_lines(b, d);
    best_line(b, d, best);
    cf_buf_printf(b,
                  "<div class=\"scroll\"><table class=\"whatif\" data-device=\"%d\"><thead><tr>"
                  "<th scope=\"col\">model</th><th scope=\"col\" class=\"n\">peak footprint</th>"
                  "<th scope=\"col\" class=\"n\">x live</th><th scope=\"col\" "
                  "class=\"n\">internal</th><th scope=\"col\" class=\"n\">external</th><th "
                  "scope=\"col\" class=\"n\">driver calls</th>%s</tr></thead><tbody>",
                  d->stream->device, oom_known(d) ? "<th scope=\"col\">out of memory</th>" : "");
    for (unsigned i = 0; i < d->nresults; i++)
        row(b, d, i, best);
    cf_buf_puts(b, "</tbody></table></div>");
    sweeps(b, d);
}

static void cache_note(struct cf_buf *b, const struct cf_rp_table *t)
{
    struct cf_buf note = {0};
    cf_rp_cache_note(t, &note);
    if (note.len == 0 || note.failed) {
        b->failed |= note.failed;
        cf_buf_free(&note);
        return;
    }
    cf_buf_puts(b, "<p class=\"warn\" id=\"whatif-not-block-level\">");
    cf_html_esc(b, note.data);
    cf_buf_puts(b, "</p>");
    cf_buf_free(&note);
}

void cf_html_whatif(struct cf_buf *b, const struct cf_rp_table *t)
{
    cf_buf_puts(b, "<section id=\"whatif\"><h2>What-if: other allocators</h2><p>The trace's "
                   "device-memory allocations replayed, in their order, against models of the "
                   "allocators the program could have used: the device memory each would have "
                   "held at its peak, its fragmentation there (internal: rounding; external: "
                   "free space not in its largest block), its driver calls and where it would "
                   "have run out of memory. The same table as <code>cudafrag replay "
                   "TRACE</code>; the models are described in docs/replay.md.</p>");
    cache_note(b, t);
    if (t->ndevs == 0) cf_buf_puts(b, "<p>No device memory was allocated: nothing to replay.</p>");
    for (unsigned i = 0; i < t->ndevs; i++)
        device(b, &t->devs[i]);
    cf_buf_puts(b, "</section>\n");
}
