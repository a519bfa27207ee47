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

/* Opens a region named name (up to 63 bytes; a name used again adds to the same
 * region) inside the regions open now. The report's "regions" section gives, for
 * each region and device, the highest live bytes and footprint while it was open,
 * over all the times it ran; the trace gets a marker with them at each pop.
 * Regions belong to the process, not a thread: they nest in the order they are
 * pushed and popped. Returns 0, or -1 when name is NULL or 16 regions are open. */
int cudafrag_region_push(const char *name);

/* Closes the innermost open region. Returns 0, or -1 when none is open. */
int cudafrag_region_pop(void);

/* The innermost open region's highest live bytes and footprint on device so far
 * (either pointer may be NULL). Returns 0, or -1 when no region is open or device
 * is out of range. */
int cudafrag_region_peak(int device, unsigned long long *peak_live,
                         unsigned long long *peak_footprint);

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
