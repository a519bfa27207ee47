/* The words are the text report's section (advise_out.c); each figure also
 * carries its exact bytes, so the tests hold the page against `cudafrag
 * advise --json`. */
#include "cli/html_advice.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

#include "cli/svg.h"
#include "report/format.h"

static void bytes(struct cf_buf *b, uint64_t v)
{
    char s[32];
    cf_buf_printf(b, "<b data-bytes=\"%" PRIu64 "\">%s</b>", v, cf_fmt_bytes(v, s, sizeof s));
}

static void device(struct cf_buf *b, const struct cf_advise *a, const struct cf_adv_device *d)
{
    const struct cf_adv_setting *own = &d->settings[d->own];
    char line[320];
    cf_buf_printf(b, "<p class=\"advice\" data-device=\"%d\" data-advice=\"%s\">Device %d: ",
                  d->stream->device,
                  d->advice == CF_ADV_KEEP     ? "keep"
                  : d->advice == CF_ADV_CHANGE ? "change"
                                               : "none-fits",
                  d->stream->device);
    if (d->advice == CF_ADV_NONE_FITS) {
        cf_buf_puts(b, "no setting tried fits in the device's memory.</p>");
        return;
    }
    const struct cf_adv_setting *pick = d->advice == CF_ADV_KEEP ? own : &d->settings[d->pick];
    if (d->advice == CF_ADV_KEEP) {
        cf_buf_puts(b, "keep your setting (<code>");
        cf_html_esc(b, cf_advise_name(a, own));
        cf_buf_puts(b, "</code>)");
    } else {
        cf_advise_line(a, pick, line, sizeof line);
        cf_buf_puts(b, "<code>");
        cf_html_esc(b, line);
        cf_buf_puts(b, "</code>");
    }
    cf_buf_puts(b, ": predicted peak reserved ");
    bytes(b, pick->result.peak_footprint);
    if (d->advice == CF_ADV_CHANGE && own->result.oom) {
        cf_buf_puts(b, " (your setting runs out of memory)");
    } else if (d->advice == CF_ADV_CHANGE) {
        cf_buf_puts(b, ", ");
        bytes(b, (uint64_t)(d->saving < 0 ? -d->saving : d->saving));
        cf_buf_printf(b, " (%.1f %%) %s your setting's", 100.0 * fabs(d->saving_frac),
                      d->saving < 0 ? "above" : "below");
    }
    cf_buf_puts(b, ".</p>");
    for (unsigned c = 0; c < 2; c++) {
        if (d->caution[c][0] == '\0') continue;
        cf_buf_puts(b, "<p class=\"note\">Caution: ");
        cf_html_esc(b, d->caution[c]);
        cf_buf_puts(b, ".</p>");
    }
}

void cf_html_advice(struct cf_buf *b, const struct cf_advise *a)
{
    if (a == NULL || a->not_blocks || a->framework == CF_ADV_UNKNOWN || a->segments ||
        a->ndevs == 0)
        return;
    cf_buf_printf(b, "<section id=\"advice\"><h2>Setting to use (%s)</h2>",
                  a->framework == CF_ADV_JAX ? "JAX" : "PyTorch");
    for (unsigned i = 0; i < a->ndevs; i++)
        device(b, a, &a->devs[i]);
    cf_buf_puts(b, "<p class=\"note\">From the run's own allocations (<code>--blocks</code>) "
                   "replayed through allocator models; every setting tried: <code>cudafrag "
                   "advise ");
    cf_html_esc(b, a->trace);
    cf_buf_puts(b, "</code> (docs/replay.md).</p></section>\n");
}
