/* Which device is current and whether a stream is capturing: asked on nearly every
 * intercepted call, by the hooks, the arena and the record layer alike, so asked
 * here, with one error policy. The driver is asked once and its answer kept until a
 * call that could change it passes through our wrappers (hook/ctx.c tells this file);
 * when something could change it unseen, the driver is asked every time.
 *
 * The error policy, for every caller:
 *   - a failed query is neither kept nor guessed: the device is -1 ("unknown"),
 *     the context query returns the driver's error;
 *   - a stream whose capture state cannot be told counts as capturing: the caller
 *     then makes no further driver call on its behalf and takes nothing out of the
 *     capture.
 *
 * Nothing here allocates, locks or touches errno; the state is per thread
 * (initial-exec TLS) plus three process-wide words. */
#ifndef CF_BASE_CTX_STATE_H
#define CF_BASE_CTX_STATE_H

#include <cuda.h>
#include <stdbool.h>

/* The calling thread's current device: cuCtxGetDevice, kept while the thread's
 * context cannot have changed. -1: no current context, no driver, or an error. */
int cf_current_device(void);

/* The calling thread's current context: CUDA_SUCCESS and *ctx (NULL when none is
 * current), or the driver's error (CUDA_ERROR_NOT_INITIALIZED also when libcuda is
 * not loaded). Kept like the device. */
CUresult cf_current_context(CUcontext *ctx);

/* The device a stream's work runs on: cuStreamGetDevice, kept per thread for a
 * few streams until a stream or context is destroyed anywhere. The default streams
 * (NULL, CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) and a failed query give the
 * current device. -1: unknown. */
int cf_stream_device(CUstream stream);

/* Whether a capture the wrappers saw begin has not ended yet, on any thread and in
 * any mode. A capture in global mode makes "unsafe" calls from every thread
 * invalidate it, so one-off driver calls that can wait should wait while this is
 * true. It does not say whether a given stream captures: cf_stream_capturing does. */
bool cf_capture_in_progress(void);

/* Whether stream is capturing: false without a driver call while no capture is in
 * progress anywhere; otherwise cuStreamIsCapturing (never synchronizes), and true
 * when the driver cannot tell. ptsz: the call came through a _ptsz entry point, so
 * stream NULL is the calling thread's per-thread default stream. */
bool cf_stream_capturing(CUstream stream, bool ptsz);

/* Changes whenever contexts or streams may have been destroyed; 0 while the kept
 * answers cannot be trusted at all. */
unsigned cf_ctx_generation(void);

/* ---- what the wrappers saw (hook/ctx.c, hook/stream.c, the arena's own switches) ---- */

/* Every call that changes the current context or begins or ends a capture reaches
 * our wrappers from now on: the kept answers may be trusted. */
void cf_ctx_track(void);
/* A path the wrappers cannot see exists (a library loaded with RTLD_DEEPBIND, a
 * lookup answer that is none of libcuda's exports): ask the driver every time,
 * for the rest of the process. */
void cf_ctx_untrack(void);
/* The calling thread's current context may have changed (set, push, pop, create). */
void cf_ctx_thread_changed(void);
/* Contexts or streams may have been destroyed: every thread asks again, and a
 * stream handle may now name another stream. */
void cf_ctx_all_changed(void);
/* A capture is about to begin; its begin failed, or it ended. */
void cf_capture_begin(void);
void cf_capture_end(void);

#endif
