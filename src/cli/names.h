/* Names of trace frames and call-site stacks for the views (flame graphs,
 * exports). Frames are resolved once each while a replay is open. */
#ifndef CF_CLI_NAMES_H
#define CF_CLI_NAMES_H

#include <stddef.h>
#include <stdint.h>

#include "report/snapshot.h"

#define CF_NAME_LEN 192

/* A stack outermost frame first, ending with the allocating call itself. */
struct cf_stack {
    unsigned n;
    struct cf_stack_frame {
        char name[CF_NAME_LEN];  /* "function", or "module+0x1f2c" when unnamed */
        char where[CF_NAME_LEN]; /* "module+0x1f2c file.c:42", for tooltips */
    } f[2 * CF_MAX_FRAMES + 2];  /* room for functions inlined at the frames */
};

/* The frame (CF_FRAME(module, offset)) resolved, cached; never NULL. */
const struct cf_sym *cf_names_frame(uint64_t frame);
/* The frame with the functions inlined at it: *chain holds the returned count
 * (at least 1) of names, innermost first, each with its own file:line; the first
 * is cf_names_frame's. Folding (fold.c) is marked on every one. */
unsigned cf_names_inlined(uint64_t frame, const struct cf_sym **chain);
void cf_names_free(void);

/* The stack of snapshot site `site` (-1: allocations without a call site, named
 * by `api`), inlined functions expanded and plumbing folded as in the text
 * report; the last entry is "api (file:line)". Names never hold ';' or
 * control characters, so they can go into folded stacks as they are. */
void cf_names_stack(const struct cf_snap *s, int site, const char *api, struct cf_stack *out);

/* The basename of a path. */
const char *cf_names_base(const char *path);

#endif
