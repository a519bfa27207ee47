/* Icicle graph: the root (every byte of the figure) on top, each row a frame
 * deeper, the allocating call at the bottom. Stacks are merged by frame name
 * from the root down, as flame graphs do; boxes narrower than half a pixel are
 * left out (their bytes stay in the parent's width). Each box has a <title>
 * with the frame, where it is, its bytes and share, so hovering names it
 * without a script. Colours: one light tint per module, dark text on them
 * (contrast above 7:1). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/names.h"
#include "cli/rowindex.h"
#include "cli/svg.h"
#include "cli/utf8.h"
#include "report/format.h"

#define W         960.0
#define ROW       20.0
#define MIN_PX    0.5
#define MAX_BOXES 6000
#define CHAR_PX   6.6 /* 11px sans-serif, a generous average */

static const char *const tints[] = {"#cfe3f7", "#fde2c4", "#d5f0dc", "#f3d6ea",
                                    "#fff2b3", "#dcd6f5", "#d9eef0", "#eadccf"};

struct node {
    char *name, *where;
    uint64_t value;
    int parent, child, sibling;
    bool leaf;
};

struct tree {
    struct node *n;
    unsigned len, cap;
    struct cf_rowindex by_name; /* nodes by parent and name: a frame can have 10^5 callees */
    bool failed;
};

static uint64_t child_key(int parent, const char *name)
{
    return cf_rowindex_hash(name) ^ ((uint64_t)(unsigned)parent * 0x9e3779b97f4a7c15ull);
}

static int add_node(struct tree *t, int parent, const char *name, const char *where)
{
    if (t->len == t->cap) {
        unsigned cap = t->cap ? t->cap * 2 : 256;
        struct node *n = realloc(t->n, cap * sizeof *n);
        if (n == NULL) return -1;
        t->n = n;
        t->cap = cap;
    }
    struct node *x = &t->n[t->len];
    *x = (struct node){strdup(name), strdup(where), 0, parent, -1, -1, false};
    if (!x->name || !x->where) {
        free(x->name);
        free(x->where);
        return -1;
    }
    if (parent >= 0 && cf_rowindex_add(&t->by_name, child_key(parent, name), t->len) != 0) {
        free(x->name);
        free(x->where);
        return -1;
    }
    if (parent >= 0) {
        x->sibling = t->n[parent].child;
        t->n[parent].child = (int)t->len;
    }
    return (int)t->len++;
}

static int child_named(struct tree *t, int parent, const struct cf_stack_frame *f)
{
    uint32_t cursor = 0, c;
    while (cf_rowindex_next(&t->by_name, child_key(parent, f->name), &cursor, &c))
        if (t->n[c].parent == parent && strcmp(t->n[c].name, f->name) == 0) return (int)c;
    return add_node(t, parent, f->name, f->where);
}

static void add_stack(struct tree *t, const struct cf_stack *st, uint64_t v)
{
    int at = 0;
    t->n[0].value += v;
    for (unsigned i = 0; i < st->n && at >= 0; i++) {
        at = child_named(t, at, &st->f[i]);
        if (at >= 0) t->n[at].value += v;
        if (at >= 0 && i + 1 == st->n) t->n[at].leaf = true;
    }
    if (at < 0) t->failed = true;
}

static void build(struct tree *t, const struct cf_snap *s, const struct cf_wrow *rows, unsigned n)
{
    static struct cf_stack st;
    if (add_node(t, -1, "all", "") < 0) {
        t->failed = true;
        return;
    }
    for (unsigned i = 0; i < n && !t->failed; i++) {
        if (rows[i].pseudo) {
            st.n = 1;
            snprintf(st.f[0].name, sizeof st.f[0].name, "%s", rows[i].pseudo);
            snprintf(st.f[0].where, sizeof st.f[0].where, "read from the driver, not per call");
        } else {
            cf_names_stack(s, rows[i].site, "(allocation)", &st);
        }
        add_stack(t, &st, rows[i].value);
    }
}

static const char *tint(const struct node *x)
{
    if (x->leaf) return "#f6cfcf";
    size_t len = strcspn(x->where, "+ ");
    uint32_t h = 2166136261u;
    for (size_t i = 0; i < len; i++)
        h = (h ^ (unsigned char)x->where[i]) * 16777619u;
    return x->where[0] ? tints[h % (sizeof tints / sizeof tints[0])] : "#e4e4e4";
}

/* The name cut to what fits in w pixels, at a character boundary. */
static void label(struct cf_buf *b, const char *name, double w)
{
    size_t fit = w > 2 * CHAR_PX ? (size_t)((w - 6) / CHAR_PX) : 0, len = strlen(name), i = 0, k;
    const unsigned char *u = (const unsigned char *)name;
    uint32_t cp;
    char cut[CF_NAME_LEN + 4];
    size_t chars = 0;
    while (i < len && chars + 1 < fit && (k = cf_utf8_seq(u + i, len - i, &cp)) > 0) {
        i += k;
        chars++;
    }
    if (fit == 0) return;
    snprintf(cut, sizeof cut, "%.*s%s", (int)i, name, i < len ? "\xe2\x80\xa6" : "");
    cf_html_esc(b, cut);
}

struct draw {
    struct cf_buf *b;
    const struct tree *t;
    double scale;
    uint64_t total;
    unsigned boxes, depth;
};

static void box(struct draw *d, const struct node *x, double px, unsigned depth, double w)
{
    char bytes[32], tip[3 * CF_NAME_LEN];
    double pct = d->total ? 100.0 * (double)x->value / (double)d->total : 0;
    snprintf(tip, sizeof tip, "%s%s%s\n%s (%.1f%%)", x->name, x->where[0] ? "\n" : "", x->where,
             cf_fmt_bytes(x->value, bytes, sizeof bytes), pct);
    cf_buf_printf(d->b, "<g data-v=\"%" PRIu64 "\"><title>", x->value);
    cf_html_esc(d->b, tip);
    cf_buf_printf(d->b,
                  "</title><rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" "
                  "fill=\"%s\"/><text x=\"%.1f\" y=\"%.1f\">",
                  px, depth * ROW, w, ROW - 1, tint(x), px + 3, depth * ROW + 14);
    label(d->b, x->name, w);
    cf_buf_puts(d->b, "</text></g>");
}

static int by_value(const void *a, const void *b, void *t)
{
    uint64_t x = ((const struct tree *)t)->n[*(const int *)a].value;
    uint64_t y = ((const struct tree *)t)->n[*(const int *)b].value;
    return (x < y) - (x > y);
}

static void draw(struct draw *d, int at, double px, unsigned depth)
{
    const struct node *x = &d->t->n[at];
    double w = (double)x->value * d->scale;
    if (w < MIN_PX || d->boxes >= MAX_BOXES) return;
    d->boxes++;
    if (depth + 1 > d->depth) d->depth = depth + 1;
    box(d, x, px, depth, w);
    int n = 0;
    for (int c = x->child; c >= 0; c = d->t->n[c].sibling)
        n++;
    int *kids = malloc((size_t)n * sizeof *kids + 1);
    if (kids == NULL) return;
    n = 0;
    for (int c = x->child; c >= 0; c = d->t->n[c].sibling)
        kids[n++] = c;
    qsort_r(kids, (size_t)n, sizeof kids[0], by_value, (void *)d->t);
    for (int i = 0; i < n; i++) {
        draw(d, kids[i], px, depth + 1);
        px += (double)d->t->n[kids[i]].value * d->scale;
    }
    free(kids);
}

static void free_tree(struct tree *t)
{
    for (unsigned i = 0; i < t->len; i++) {
        free(t->n[i].name);
        free(t->n[i].where);
    }
    free(t->n);
    cf_rowindex_free(&t->by_name);
}

void cf_svg_icicle(struct cf_buf *b, const char *id, const char *title, const struct cf_snap *s,
                   const struct cf_wrow *rows, unsigned n)
{
    struct tree t = {0};
    build(&t, s, rows, n);
    if (t.failed || t.n[0].value == 0) {
        cf_buf_puts(b, "<p class=\"none\">Nothing to show.</p>\n");
        free_tree(&t);
        return;
    }
    struct cf_buf body = {0};
    struct draw d = {&body, &t, W / (double)t.n[0].value, t.n[0].value, 0, 0};
    draw(&d, 0, 0, 0);
    cf_buf_printf(b,
                  "<svg class=\"icicle\" id=\"%s\" viewBox=\"0 0 %.0f %.0f\" role=\"img\" "
                  "data-total=\"%" PRIu64 "\" data-boxes=\"%u\" aria-labelledby=\"%s-title\">"
                  "<title id=\"%s-title\">",
                  id, W, d.depth * ROW, t.n[0].value, d.boxes, id, id);
    cf_html_esc(b, title);
    cf_buf_puts(b, "</title>");
    cf_buf_put(b, body.data ? body.data : "", body.len);
    cf_buf_puts(b, "</svg>\n");
    if (body.failed) b->failed = true;
    cf_buf_free(&body);
    free_tree(&t);
}

void cf_html_esc(struct cf_buf *b, const char *s)
{
    char clean[4096];
    cf_utf8_clean(s, clean, sizeof clean);
    for (const char *p = clean; *p; p++) {
        switch (*p) {
        case '&':
            cf_buf_puts(b, "&amp;");
            break;
        case '<':
            cf_buf_puts(b, "&lt;");
            break;
        case '>':
            cf_buf_puts(b, "&gt;");
            break;
        case '"':
            cf_buf_puts(b, "&quot;");
            break;
        case '\'':
            cf_buf_puts(b, "&#39;");
            break;
        default:
            cf_buf_put(b, p, 1);
        }
    }
}
