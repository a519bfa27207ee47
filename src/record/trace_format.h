/* The trace file's format in one place (docs/trace-format.md says the same in
 * prose): the file header, the chunk header and its checks, the END event's arena
 * figures, and the event codec's interface. The writer (trace_write.c and the
 * files below it), the reader (trace_read.c) and `cudafrag import` all take it
 * from here. The event types themselves are the record's (record/event.h). */
#ifndef CF_RECORD_TRACE_FORMAT_H
#define CF_RECORD_TRACE_FORMAT_H

#include <stdbool.h>
#include <stdint.h>

#include "record/event.h"

/* file := magic, u32 version, u32 header_len, header ("key=value\n" lines), and
 * from version 2 the u32 CRC-32 of version, header_len and header; then chunks. */
#define CF_TRACE_MAGIC "CFTRACE\0"
/* Version 2 added CRC-32 checks (the file header's, each chunk's header's and
 * payload's): a damaged file is told from a truncated one. Version 1 is read. */
#define CF_TRACE_VERSION           2
#define CF_TRACE_VERSION_UNCHECKED 1
#define CF_TRACE_HEADER_MAX        (1u << 20) /* bytes of header lines */

#define CF_CHUNK_MAGIC   0x4b434643u /* "CFCK" */
#define CF_CHUNK_ZSTD    1u          /* payload is one zstd frame */
#define CF_CHUNK_DEFS    2u          /* holds SITE, MODULE, PYFRAME or END events: read first */
#define CF_CHUNK_RAW_MAX (16u << 20) /* a chunk's events, decompressed */

/* A chunk's header as the file holds it (little-endian). Version 1's ends before
 * payload_crc; both CRC-32s (zlib's crc32) are version 2's: payload_crc over the
 * stored payload, header_crc over the 28 bytes before it. */
struct cf_chunk_header {
    uint32_t magic, flags, tid, nevents, raw_len, stored_len;
    uint32_t payload_crc, header_crc;
};
#define CF_CHUNK_HEADER_V1  24u
#define CF_CHUNK_HEADER_V2  32u
#define CF_CHUNK_CRC_COVERS 28u
_Static_assert(sizeof(struct cf_chunk_header) == CF_CHUNK_HEADER_V2, "the chunk header's layout");

/* The END event's text: "reason WHY" and then one "name value" line per figure
 * of the arena (struct cf_arena_stats), in this order. X(field, kind), kind FLAG
 * (0 or 1), U64 (decimal) or REAL (%.17g). trace_end.c writes and reads the lines
 * from this one list, so a figure cannot be written and not read back. */
#define CF_TRACE_ARENA_FIELDS(X)                                                                   \
    X(active, FLAG)                                                                                \
    X(vmm, FLAG)                                                                                   \
    X(peak_live, U64)                                                                              \
    X(peak_reserved, U64)                                                                          \
    X(peak_mapped, U64)                                                                            \
    X(reserved_now, U64)                                                                           \
    X(mapped_now, U64)                                                                             \
    X(live_now, U64)                                                                               \
    X(granules_mapped, U64)                                                                        \
    X(granules_unmapped, U64)                                                                      \
    X(driver_calls, U64)                                                                           \
    X(allocs_served, U64)                                                                          \
    X(frees_served, U64)                                                                           \
    X(ns_in_alloc, U64)                                                                            \
    X(ns_in_free, U64)                                                                             \
    X(ext_frag_at_peak, REAL)                                                                      \
    X(ooms, U64)

/* ---- events to bytes and back (trace_codec.c) ---- */
struct cf_enc {
    uint8_t *buf;
    uint32_t len, cap;
    uint64_t prev_seq, prev_t, prev_addr; /* deltas restart at each chunk */
};
/* Appends e; false when it does not fit (the buffer is left as it was). */
bool cf_ev_encode(struct cf_enc *enc, const struct cf_event *e);
/* The same with every byte bounds-checked, whatever the room left (for the codec
 * test: cf_ev_encode takes this path only near the end of a buffer). */
bool cf_ev_encode_checked(struct cf_enc *enc, const struct cf_event *e);

struct cf_dec {
    const uint8_t *p, *end;
    uint64_t prev_seq, prev_t, prev_addr;
    uint64_t frames[64];
};
/* 1: decoded, 0: end of buffer, -1: malformed. */
int cf_ev_decode(struct cf_dec *dec, struct cf_event *e);

#endif
