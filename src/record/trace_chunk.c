/* A chunk on its way to the file and back: libzstd and zlib's crc32 are loaded
 * privately by the profiled process (the preload library exports and links
 * nothing new); the checks a reader makes are written once, here, beside the
 * sealing they check. */
#include "record/trace_chunk.h"

#include <dlfcn.h>
#include <sys/mman.h>

#include "base/log.h"

typedef size_t (*zstd_compress_fn)(void *, size_t, const void *, size_t, int);
typedef unsigned (*zstd_is_error_fn)(size_t);
static zstd_compress_fn zstd_compress;
static zstd_is_error_fn zstd_is_error;
static uint8_t *zbuf;
static size_t zbuf_cap;

/* Chunks and the file header carry CRC-32s (format version 2) so a reader tells
 * a damaged trace from a truncated one. Without zlib the file is version 1. */
typedef unsigned long (*zlib_crc32_fn)(unsigned long, const unsigned char *, unsigned);
static zlib_crc32_fn zlib_crc32;

static uint32_t crc_of(uint32_t crc, const void *p, size_t n)
{
    return (uint32_t)zlib_crc32(crc, (const unsigned char *)p, (unsigned)n);
}

static void load_crc(void)
{
    void *h = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
    zlib_crc32 = h ? (zlib_crc32_fn)dlsym(h, "crc32") : NULL;
    if (zlib_crc32 == NULL)
        cf_log("libz.so.1 not found: the trace is written without checksums (format version 1)");
}

static void load_zstd(uint32_t raw_max)
{
    void *h = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);
    if (h) {
        zstd_compress = (zstd_compress_fn)dlsym(h, "ZSTD_compress");
        zstd_is_error = (zstd_is_error_fn)dlsym(h, "ZSTD_isError");
        size_t (*bound)(size_t) = (size_t(*)(size_t))dlsym(h, "ZSTD_compressBound");
        zbuf_cap = bound ? bound(raw_max) : 0;
    }
    if (zbuf_cap)
        zbuf = mmap(NULL, zbuf_cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (!zstd_compress || !zstd_is_error || !zbuf || zbuf == MAP_FAILED) {
        zstd_compress = NULL;
        zbuf = NULL;
        cf_log("libzstd.so.1 not found: the trace is written uncompressed");
    }
}

void cf_chunk_load(uint32_t raw_max)
{
    /* Once: a forked child that opens its own trace keeps what its parent loaded,
     * and says nothing again. */
    static bool tried;
    if (tried) return;
    tried = true;
    load_zstd(raw_max);
    load_crc();
}

uint32_t cf_chunk_version(void)
{
    return zlib_crc32 ? CF_TRACE_VERSION : CF_TRACE_VERSION_UNCHECKED;
}

uint32_t cf_chunk_file_check(const uint32_t fixed[2], const void *header, uint32_t len)
{
    return zlib_crc32 ? cf_chunk_file_check_with(crc_of, fixed, header, len) : 0;
}

const void *cf_chunk_seal(struct cf_chunk_header *h, const void *raw, size_t *hlen)
{
    h->magic = CF_CHUNK_MAGIC;
    h->stored_len = h->raw_len;
    const void *payload = raw;
    if (zstd_compress) {
        size_t n = zstd_compress(zbuf, zbuf_cap, raw, h->raw_len, 1);
        if (!zstd_is_error(n)) {
            h->flags |= CF_CHUNK_ZSTD;
            h->stored_len = (uint32_t)n;
            payload = zbuf;
        }
    }
    *hlen = CF_CHUNK_HEADER_V1;
    if (zlib_crc32) {
        cf_chunk_sign(h, payload, crc_of);
        *hlen = CF_CHUNK_HEADER_V2;
    }
    return payload;
}

void cf_chunk_sign(struct cf_chunk_header *h, const void *payload, cf_crc32_fn crc)
{
    h->magic = CF_CHUNK_MAGIC;
    h->payload_crc = crc(0, payload, h->stored_len);
    h->header_crc = crc(0, h, CF_CHUNK_CRC_COVERS);
}

uint32_t cf_chunk_file_check_with(cf_crc32_fn crc, const uint32_t fixed[2], const void *header,
                                  uint32_t len)
{
    return crc(crc(0, fixed, 2 * sizeof fixed[0]), header, len);
}

const char *cf_chunk_header_fault(const struct cf_chunk_header *h, uint32_t version,
                                  cf_crc32_fn crc)
{
    const uint32_t raw_max = CF_CHUNK_RAW_MAX;
    if (version == CF_TRACE_VERSION && h->header_crc != crc(0, h, CF_CHUNK_CRC_COVERS))
        return "its header fails its check";
    if (h->magic != CF_CHUNK_MAGIC) return "no chunk starts there";
    /* A stored payload may be a little larger than its events (zstd's bound). */
    if (h->raw_len > raw_max || h->stored_len > raw_max + (raw_max >> 7) + 1024 ||
        (!(h->flags & CF_CHUNK_ZSTD) && h->stored_len != h->raw_len))
        return "its lengths are impossible";
    return NULL;
}

bool cf_chunk_payload_ok(const struct cf_chunk_header *h, const void *payload, uint32_t version,
                         cf_crc32_fn crc)
{
    return version != CF_TRACE_VERSION || h->payload_crc == crc(0, payload, h->stored_len);
}
