/* Chunks as the file holds them (record/trace_format.h): compressed and sealed
 * with their checks on the way out, checked on the way in. The checks are one
 * function for both sides; each side brings its CRC-32: the profiled process
 * loads zlib privately, the command links it. */
#ifndef CF_RECORD_TRACE_CHUNK_H
#define CF_RECORD_TRACE_CHUNK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "record/trace_format.h"

typedef uint32_t (*cf_crc32_fn)(uint32_t crc, const void *p, size_t n);

/* ---- the writer's side, in the profiled process ---- */

/* Loads libzstd and libz privately, once (a forked child keeps its parent's);
 * raw_max is the largest chunk to compress. Without libzstd chunks are stored
 * raw, without libz the file is version 1 (unchecked); each said once. */
void cf_chunk_load(uint32_t raw_max);
/* The version the file is written as: whether the checks can be made. */
uint32_t cf_chunk_version(void);
/* The file header's check word (version 2). */
uint32_t cf_chunk_file_check(const uint32_t fixed[2], const void *header, uint32_t len);
/* raw (h->raw_len bytes) compressed when it can be; h's lengths, the zstd flag and
 * the checks filled in. Returns the payload to write after the header's *hlen
 * bytes: raw itself or the compressor's buffer, valid until the next call. */
const void *cf_chunk_seal(struct cf_chunk_header *h, const void *raw, size_t *hlen);

/* ---- both sides ---- */

/* h's magic and checks (version 2) for its stored payload, with the caller's
 * CRC-32: for a writer that brings its own (`cudafrag import`). */
void cf_chunk_sign(struct cf_chunk_header *h, const void *payload, cf_crc32_fn crc);

/* The file header's check word, with the caller's CRC-32. */
uint32_t cf_chunk_file_check_with(cf_crc32_fn crc, const uint32_t fixed[2], const void *header,
                                  uint32_t len);
/* NULL when h, as read from a file of that version, is a chunk header, else what
 * is wrong with it (for "damaged at chunk N: ..."). */
const char *cf_chunk_header_fault(const struct cf_chunk_header *h, uint32_t version,
                                  cf_crc32_fn crc);
/* Whether the stored payload passes its check (version 1: always). */
bool cf_chunk_payload_ok(const struct cf_chunk_header *h, const void *payload, uint32_t version,
                         cf_crc32_fn crc);

#endif
