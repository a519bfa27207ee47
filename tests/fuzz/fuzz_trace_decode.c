/* A trace file read as `cudafrag report` reads it: the header, every chunk
 * (lengths, zstd), and every event of every chunk (cf_ev_decode). */
#include "record/trace_read.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct cf_trace t;
    char value[4096];
    if (cf_trace_load(&t, fuzz_file(data, size)) == 0) {
        for (const char *p = cf_trace_header_next(&t, "env", NULL, value, sizeof value); p;
             p = cf_trace_header_next(&t, "env", p, value, sizeof value)) {
        }
        for (uint32_t i = 0; i < t.nchunks; i++) {
            struct cf_dec dec = {.p = t.chunks[i].data, .end = t.chunks[i].data + t.chunks[i].len};
            struct cf_event e;
            while (cf_ev_decode(&dec, &e) == 1) {
            }
        }
    }
    cf_trace_unload(&t);
    return 0;
}
