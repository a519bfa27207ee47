/* cudafrag export TRACE --format F: one writer per format, each fed by one
 * replay of the trace (docs/views.md). */
#ifndef CF_CLI_EXPORT_H
#define CF_CLI_EXPORT_H

#include <stdio.h>

#include "cli/collect.h"
#include "cli/weights.h"

struct cf_export_opts {
    enum cf_weight weight; /* folded */
    int device;            /* -1: every device */
};

/* Writers that need the events as they are replayed register a sink before
 * the replay (begin) and write once it is done (end); 0 or 1 after a message. */
struct cf_exporter {
    const char *name;
    bool binary;
    int (*begin)(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out);
    int (*end)(struct cf_coll *c, const struct cf_export_opts *o, FILE *out);
};

int cf_export_folded(struct cf_coll *c, const struct cf_export_opts *o, FILE *out);
int cf_export_chrome_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out);
int cf_export_chrome_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out);
int cf_export_torch_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out);
int cf_export_torch_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out);
int cf_export_rmm_begin(struct cf_coll_sink *sink, const struct cf_export_opts *o, FILE *out);
int cf_export_rmm_end(struct cf_coll *c, const struct cf_export_opts *o, FILE *out);

#endif
