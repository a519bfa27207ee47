/* Memory over time: one step line per series (a figure holds until the next
 * event changes it), axes in bytes and seconds, markers with a <title> for the
 * peaks and the OOMs. Coordinates are in a fixed 960x320 viewBox; the page
 * scales it. */
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/svg.h"
#include "report/format.h"
#include "report/json_write.h"

#define W  960.0
#define H  320.0
#define X0 78.0
#define X1 944.0
#define Y0 16.0
#define Y1 284.0

struct scale {
    uint64_t t_end, v_top;
};

static double px(const struct scale *s, uint64_t t)
{
    return X0 + (X1 - X0) * (double)t / (double)(s->t_end ? s->t_end : 1);
}

static double py(const struct scale *s, uint64_t v)
{
    return Y1 - (Y1 - Y0) * (double)v / (double)(s->v_top ? s->v_top : 1);
}

/* A power of two per tick, at most five ticks. */
static uint64_t byte_step(uint64_t top)
{
    uint64_t step = 1;
    while (top / step > 5)
        step *= 2;
    return step;
}

/* 1, 2 or 5 times a power of ten, at most eight ticks. */
static double time_step(double secs)
{
    static const double m[] = {1, 2, 5};
    for (double p = 1e-6; p < 1e7; p *= 10)
        for (int i = 0; i < 3; i++)
            if (secs / (m[i] * p) <= 8) return m[i] * p;
    return 1e7;
}

static void axes(struct cf_buf *b, const struct scale *s)
{
    char a[32];
    uint64_t step = byte_step(s->v_top);
    for (uint64_t v = 0; v <= s->v_top; v += step) {
        double y = py(s, v);
        cf_buf_printf(b, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                      X0, X1, y, y);
        cf_buf_printf(b, "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>",
                      X0 - 6, y + 4, cf_fmt_bytes(v, a, sizeof a));
    }
    double secs = (double)s->t_end / 1e9, ts = time_step(secs);
    for (unsigned i = 0; i <= (unsigned)(secs / ts); i++) {
        double t = i * ts, x = px(s, (uint64_t)(t * 1e9));
        cf_buf_printf(b, "<line class=\"tick\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>",
                      x, x, Y1, Y1 + 5);
        cf_buf_printf(b,
                      "<text class=\"ax\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>",
                      x, Y1 + 18, i ? cf_fmt_secs(t, a, sizeof a) : "0");
    }
    cf_buf_printf(b, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", X0,
                  X1, Y1, Y1);
}

/* Starts at 0 at time 0, a horizontal then a vertical segment per sample, and
 * holds the last value to the right edge: 2 n + 2 points. */
static void line(struct cf_buf *b, const struct scale *s, const struct cf_plot_line *l)
{
    double prev = py(s, 0);
    cf_buf_printf(
        b, "<polyline class=\"%s\" data-series=\"%s\" data-samples=\"%u\" points=\"%.1f,%.1f",
        l->cls, l->cls, l->n, X0, prev);
    for (unsigned i = 0; i < l->n; i++) {
        double x = px(s, l->p[i].t), y = py(s, l->p[i].v);
        cf_buf_printf(b, " %.1f,%.1f %.1f,%.1f", x, prev, x, y);
        prev = y;
    }
    cf_buf_printf(b, " %.1f,%.1f\"/>", X1, prev);
}

static void mark(struct cf_buf *b, const struct scale *s, const struct cf_plot_mark *m)
{
    double x = px(s, m->t), y = py(s, m->v);
    cf_buf_printf(b,
                  "<g class=\"mark %s\" data-t=\"%" PRIu64 "\" data-value=\"%" PRIu64 "\"><title>",
                  m->cls, m->t, m->v);
    cf_html_esc(b, m->title);
    cf_buf_puts(b, "</title>");
    if (strcmp(m->cls, "oom") == 0)
        cf_buf_printf(b, "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\"/>", x, x, Y0, Y1);
    else
        cf_buf_printf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\"/>", x, y);
    cf_buf_printf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", x + (x > W / 2 ? -8 : 8),
                  strcmp(m->cls, "oom") == 0 ? Y0 + 12
                  : m->below                 ? y + 18
                                             : y - 8,
                  x > W / 2 ? "end" : "start");
    cf_html_esc(b, m->label);
    cf_buf_puts(b, "</text></g>");
}

static void data(struct cf_buf *b, const struct cf_plot *p)
{
    cf_buf_printf(b, "<script type=\"application/json\" id=\"%s-data\">", p->id);
    struct cf_jw j = cf_jw_start(b);
    cf_jw_obj(&j, NULL);
    cf_jw_u64(&j, "t_end", p->t_end);
    cf_jw_arr(&j, "series");
    for (unsigned i = 0; i < p->nlines; i++) {
        const struct cf_plot_line *l = &p->lines[i];
        cf_jw_obj(&j, NULL);
        cf_jw_str(&j, "name", l->name);
        cf_jw_arr(&j, "p");
        for (unsigned k = 0; k < l->n; k++) {
            cf_jw_arr(&j, NULL);
            cf_jw_u64(&j, NULL, l->p[k].t);
            cf_jw_u64(&j, NULL, l->p[k].v);
            cf_jw_arr_end(&j);
        }
        cf_jw_arr_end(&j);
        cf_jw_obj_end(&j);
    }
    cf_jw_arr_end(&j);
    cf_jw_obj_end(&j);
    cf_buf_puts(b, "</script>\n");
}

static uint64_t top_of(const struct cf_plot *p)
{
    uint64_t top = 1;
    for (unsigned i = 0; i < p->nlines; i++)
        for (unsigned k = 0; k < p->lines[i].n; k++)
            if (p->lines[i].p[k].v > top) top = p->lines[i].p[k].v;
    for (unsigned i = 0; i < p->nmarks; i++)
        if (p->marks[i].v > top) top = p->marks[i].v;
    uint64_t step = byte_step(top);
    return (top + step - 1) / step * step;
}

void cf_svg_plot(struct cf_buf *b, const struct cf_plot *p)
{
    struct scale s = {p->t_end ? p->t_end : 1, top_of(p)};
    cf_buf_printf(b,
                  "<svg class=\"plot\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                  "tabindex=\"0\" data-src=\"%s-data\" data-tip=\"%s-tip\" data-x0=\"%.0f\" "
                  "data-x1=\"%.0f\" data-tend=\"%" PRIu64 "\" aria-labelledby=\"%s-title\"><title "
                  "id=\"%s-title\">",
                  p->id, W, H, p->id, p->id, X0, X1, s.t_end, p->id, p->id);
    cf_html_esc(b, p->title);
    cf_buf_puts(b, "</title>");
    axes(b, &s);
    for (unsigned i = 0; i < p->nlines; i++)
        line(b, &s, &p->lines[i]);
    for (unsigned i = 0; i < p->nmarks; i++)
        mark(b, &s, &p->marks[i]);
    cf_buf_printf(b, "<line class=\"cursor\" x1=\"0\" x2=\"0\" y1=\"%.1f\" y2=\"%.1f\"/></svg>\n",
                  Y0, Y1);
    data(b, p);
}
