/* Folded stacks ("outer;...;inner;api (file:line) weight"), the input of
 * flamegraph.pl, inferno, speedscope and most flame graph tools. Stacks that
 * name the same frames (sites differing only in unnamed outer frames or
 * return addresses within one function) are merged: the tools expect one line
 * per stack. */
#include "cli/export.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cli/names.h"
#include "report/strbuf.h"

struct line {
    char *stack;
    uint64_t value;
};

static int by_stack(const void *a, const void *b)
{
    return strcmp(((const struct line *)a)->stack, ((const struct line *)b)->stack);
}

static char *stack_string(const struct cf_coll *c, const struct cf_wrow *r)
{
    static struct cf_stack st;
    struct cf_buf b = {0};
    if (r->pseudo) {
        cf_buf_puts(&b, r->pseudo);
    } else {
        cf_names_stack(&c->snap, r->site, "(allocation)", &st);
        for (unsigned i = 0; i < st.n; i++) {
            if (i) cf_buf_put(&b, ";", 1);
            cf_buf_puts(&b, st.f[i].name);
        }
    }
    cf_buf_put(&b, "", 1);
    if (b.failed) cf_buf_free(&b);
    return b.data;
}

static int write_lines(FILE *out, struct line *l, unsigned n)
{
    qsort(l, n, sizeof *l, by_stack);
    for (unsigned i = 0; i < n;) {
        uint64_t v = l[i].value;
        unsigned j = i + 1;
        for (; j < n && strcmp(l[j].stack, l[i].stack) == 0; j++)
            v += l[j].value;
        fprintf(out, "%s %" PRIu64 "\n", l[i].stack, v);
        i = j;
    }
    return 0;
}

int cf_export_folded(struct cf_coll *c, const struct cf_export_opts *o, FILE *out)
{
    struct cf_wrow *rows;
    unsigned n;
    if (cf_weights(c, o->weight, o->device, &rows, &n) != 0) return 1;
    struct line *l = calloc(n + 1, sizeof *l);
    int rc = l == NULL;
    for (unsigned i = 0; i < n && rc == 0; i++) {
        l[i] = (struct line){stack_string(c, &rows[i]), rows[i].value};
        rc = l[i].stack == NULL;
    }
    if (rc == 0) write_lines(out, l, n);
    for (unsigned i = 0; l && i < n; i++)
        free(l[i].stack);
    free(l);
    free(rows);
    if (rc) fprintf(stderr, "cudafrag: out of memory while folding stacks\n");
    return rc;
}
