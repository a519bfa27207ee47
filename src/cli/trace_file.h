/* A trace file read into memory: header lines and decompressed chunks. */
#ifndef CF_CLI_TRACE_FILE_H
#define CF_CLI_TRACE_FILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/event.h"

struct cf_trace_chunk {
    uint32_t tid;
    bool defs;     /* the writer marked it as holding SITE, MODULE or END events */
    uint8_t *data; /* encoded events (record/trace_codec.c) */
    uint32_t len;
};

struct cf_trace {
    char path[4096];
    char *header; /* "key=value\n" lines, NUL-terminated */
    uint32_t header_len;
    struct cf_trace_chunk *chunks; /* in file order */
    uint32_t nchunks, cap;
    uint64_t events_declared;
    bool any_defs;  /* some chunk is marked: unmarked ones need no first look */
    bool truncated; /* the file ends inside a chunk: the process was killed */
    char error[4352];
};

/* 0, or -1 with t->error set (the file is not a readable trace). A damaged or
 * incomplete tail only sets t->truncated. */
int cf_trace_load(struct cf_trace *t, const char *path);
/* The same from the bytes of a trace already read (a pipe read once); name
 * stands for the file in messages. */
int cf_trace_load_mem(struct cf_trace *t, const char *name, const void *data, size_t len);
void cf_trace_unload(struct cf_trace *t);
/* The value of the first "key=" line after `after` (NULL: from the start);
 * returns where to continue, NULL when there is none. */
const char *cf_trace_header_next(const struct cf_trace *t, const char *key, const char *after,
                                 char *value, size_t n);

#endif
