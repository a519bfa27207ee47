/* The call sites of an imported PyTorch memory snapshot. Its entries carry the
 * stacks PyTorch recorded (`frames`: {filename, line, name}, innermost first);
 * each distinct Python frame becomes a PYFRAME event and each distinct stack a
 * SITE event whose frames name them, as a traced Python program's are written
 * (docs/trace-format.md), so every reader of traces names them file:line
 * function. The C++ frames of stacks="all" are left out: a trace names native
 * frames by module and offset, which a snapshot does not carry. */
#ifndef CF_CLI_SNAPSHOT_FRAMES_H
#define CF_CLI_SNAPSHOT_FRAMES_H

#include <stddef.h>
#include <stdint.h>

#include "cli/pickle.h"
#include "record/event.h"
#include "replay/u64map.h"

struct cf_sf_frame {
    const char *file, *name; /* into the parsed snapshot */
    uint32_t file_len, name_len;
    uint64_t line;
};

struct cf_sf_site {
    uint64_t hash;
    uint32_t first, n; /* in cf_sf.stack */
};

struct cf_sf {
    struct cf_sf_frame *frames; /* PYFRAME id CF_PY_FIRST_ID + index */
    size_t nframes, frames_cap;
    struct cf_sf_site *sites; /* SITE id 1 + index */
    size_t nsites, sites_cap;
    uint64_t *stack; /* the sites' frames, CF_FRAME(CF_PY_MODULE, id) */
    size_t nstack, stack_cap;
    struct cf_u64map frame_by_hash, site_by_hash, site_by_list;
};

/* The site of a `frames` list: *site is 0 when it holds no Python frame (or is
 * not a list). 0, or -1 when memory ran out. */
int cf_sf_site(struct cf_sf *t, const struct cf_pk *frames, uint32_t *site);
/* The definitions to write before any event that names them: the PYFRAME
 * events, then the SITE events (i below cf_sf_ndefs). */
size_t cf_sf_ndefs(const struct cf_sf *t);
void cf_sf_def(const struct cf_sf *t, size_t i, struct cf_event *e);
void cf_sf_free(struct cf_sf *t);

#endif
