/* What a flame graph weighs each call stack by, computed from a replay. */
#ifndef CF_CLI_WEIGHTS_H
#define CF_CLI_WEIGHTS_H

#include <stdint.h>

#include "cli/collect.h"

enum cf_weight {
    CF_W_PEAK,           /* live bytes at each device's live peak */
    CF_W_FOOTPRINT_PEAK, /* live bytes at each device's footprint peak */
    CF_W_LEAKED,         /* bytes still live at the end */
    CF_W_ALLOCATED,      /* bytes of all successful allocations */
    CF_W_CALLS,          /* successful allocations */
};

struct cf_wrow {
    int site;           /* snapshot site index, -1: none */
    const char *pseudo; /* a row without a stack (graph memory in use), else NULL */
    uint64_t value;
};

/* Rows with a value, largest first; device -1 sums every device. 0, or -1 when
 * memory ran out. Free *rows with free(). */
int cf_weights(const struct cf_coll *c, enum cf_weight w, int device, struct cf_wrow **rows,
               unsigned *n);
int cf_weight_parse(const char *s, enum cf_weight *out);
const char *cf_weight_name(enum cf_weight w);

#endif
