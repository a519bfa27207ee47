/* A report as diff, merge and check see it, read from a JSON report or from
 * a trace. Call sites are keyed by what names them in any run of the same
 * program: the API and, for up to four frames, module, function and
 * file:line, never addresses or the run's own ids. */
#ifndef CF_CLI_VIEW_H
#define CF_CLI_VIEW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cli/rowindex.h"

#define CF_VIEW_DEVICES 64
#define CF_VIEW_KEY     640

struct cf_view_site {
    uint64_t hash; /* of key, to find rows fast */
    char key[CF_VIEW_KEY];
    char label[256]; /* "cudaMalloc at alloc_frame (video_pipeline.c:61)" */
    uint64_t calls, bytes, peak_live, leaked;
};

struct cf_view_dev {
    int device;
    uint64_t peak_live, peak_footprint, total;
    uint64_t allocs, frees; /* 0 in reports older than these fields */
    double frag;            /* NAN: unknown */
};

struct cf_view_finding {
    char id[40], severity[12], title[256], key[CF_VIEW_KEY];
};

struct cf_view {
    char source[512];
    bool from_trace; /* frames named from DWARF (file:line), not symbol tables */
    char program[512], rank[64], host[128];
    long pid;
    double duration_s;
    struct cf_view_dev devs[CF_VIEW_DEVICES];
    unsigned ndevs;
    uint64_t allocs, frees, alloc_bytes, peak_live, peak_footprint, leaked_bytes, leaked_count;
    uint64_t ooms;
    /* The report's "oom" object: the first failure since the start and on the
     * wall clock (NAN: unknown, an older report), whether the program allocated
     * again after it (-1: unknown), and whether this is the report written at it. */
    double oom_first_at_s, oom_first_unix_s;
    int oom_recovered;
    bool at_oom;
    double frag, internal_waste; /* NAN: unknown */
    struct cf_view_site *sites;  /* merged by key */
    unsigned nsites, sites_cap;
    struct cf_rowindex index; /* sites by the hash of their key */
    uint64_t site_count;      /* sites the source recorded */
    uint64_t listed;          /* sites it lists: fewer when it lists only its top */
    struct cf_view_finding *findings;
    unsigned nfindings;
};

/* A JSON report, or a trace (replayed in a child process: one replay per
 * process), read once (path may be a pipe). 0, or with a message on stderr 1 (a
 * malformed report) or 2 (a trace that cannot be read: damaged, or of an
 * unsupported version). */
int cf_view_load(const char *path, struct cf_view *v);
void cf_view_free(struct cf_view *v);
const struct cf_view_site *cf_view_find(const struct cf_view *v, const char *key);
/* Writes the view of the trace read into data (name in messages) as JSON (the
 * report's keys that views read, every site listed) to fd; used by the child of
 * cf_view_load. */
int cf_view_trace_json(const char *name, const void *data, size_t len, int fd);

#endif
