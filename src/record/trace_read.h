/* A trace file read into memory: header lines and decompressed chunks, each
 * checked (trace_read.c, the reader beside the writer: trace_write.h). Linked by
 * the command, the tests and the fuzz targets, never by the preload library. */
#ifndef CF_RECORD_TRACE_READ_H
#define CF_RECORD_TRACE_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/trace_format.h"

struct cf_trace_chunk {
    uint32_t tid;
    bool defs;     /* the writer marked it as holding SITE, MODULE or END events */
    uint8_t *data; /* encoded events (record/trace_codec.c) */
    uint32_t len;
    uint64_t offset; /* of its header in the file, for a message on damage */
};

struct cf_trace {
    char path[4096];
    char *header; /* "key=value\n" lines, NUL-terminated */
    uint32_t header_len;
    struct cf_trace_chunk *chunks; /* in file order */
    uint32_t nchunks, cap;
    uint64_t events_declared;
    bool any_defs; /* some chunk is marked: unmarked ones need no first look */
    uint32_t version;
    bool truncated;           /* the file ends inside a chunk: the process was killed */
    uint32_t truncated_chunk; /* 1-based, with the byte offset where it starts */
    uint64_t truncated_offset;
    char error[4352];
};

/* zlib's crc32, which the command links, in the form the chunk checks take. */
uint32_t cf_trace_crc32(uint32_t crc, const void *p, size_t n);

/* 0, or -1 with t->error set: the file is not a readable trace, or it is damaged
 * (a check fails, a chunk is malformed: "damaged at chunk N (byte offset X)").
 * A file that ends inside a chunk is not damaged: t->truncated is set and the
 * chunks before are read. */
int cf_trace_load(struct cf_trace *t, const char *path);
/* The same from the bytes of a trace already read (a pipe read once); name
 * stands for the file in messages. */
int cf_trace_load_mem(struct cf_trace *t, const char *name, const void *data, size_t len);
void cf_trace_unload(struct cf_trace *t);
/* t->error: chunk i (0-based) is damaged, as `what` says. Returns -1. */
int cf_trace_damaged(struct cf_trace *t, uint32_t i, const char *what);
/* The value of the first "key=" line after `after` (NULL: from the start);
 * returns where to continue, NULL when there is none. */
const char *cf_trace_header_next(const struct cf_trace *t, const char *key, const char *after,
                                 char *value, size_t n);

#endif
