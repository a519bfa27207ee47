/* cudafrag public API. Programs need none of it: preloading libcudafrag.so is
 * enough. Programs that want a report at a point of their choosing can call
 * these (or look them up with dlsym, so they run unchanged without cudafrag). */
#ifndef CUDAFRAG_CUDAFRAG_H
#define CUDAFRAG_CUDAFRAG_H

#ifdef __cplusplus
extern "C" {
#endif

#define CUDAFRAG_VERSION_MAJOR 0
#define CUDAFRAG_VERSION_MINOR 1

/* "0.1.0" */
const char *cudafrag_version(void);

/* Write an interim report now (as SIGUSR1 does), to the configured outputs.
 * Returns 0 on success, -1 when no output could be written. */
int cudafrag_report_now(void);

/* Puts a marker with label (up to 255 bytes) into the trace (CUDAFRAG_TRACE=1), at
 * this point of the event order: "epoch 3", "after warm-up". Returns 0, or -1 when
 * label is NULL. Without a trace it does nothing. */
int cudafrag_mark(const char *label);

/* Calls counted so far for one API by its name ("cudaMalloc", "cuMemAlloc",
 * "cuMemCreate", ...); -1 for a name cudafrag does not count. */
long long cudafrag_api_calls(const char *api);

/* Bytes of live allocations cudafrag records on a device (all kinds but host),
 * -1 for a device number out of range. */
long long cudafrag_live_bytes(int device);

#ifdef __cplusplus
}
#endif
#endif
