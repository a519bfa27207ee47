/* The kept answers behind base/ctx_state.h. On a real GPU each of these driver
 * queries costs far more than the bookkeeping it serves (several per intercepted
 * call measured on an H200), and their answers change only at calls our wrappers
 * see: the current context at set/push/pop/create/destroy, a stream's device never
 * while the handle lives, the capture state at begin/end. */
#include "base/ctx_state.h"

#include "base/real.h"
#include "base/export.h"

#include <stdint.h>

/* The generation of what threads keep: odd while the kept answers may be trusted,
 * 0 while they may not (no wrappers in this process, or a path they cannot see).
 * Bumped by 2 when contexts or streams are destroyed, which invalidates what every
 * thread kept; odd numbers stay odd when they wrap, so it never reads 0 by accident. */
static unsigned generation;
static bool untracked; /* sticky: cf_ctx_untrack() was called */
/* Captures begun and not ended, as the wrappers saw them (counted whether or not
 * the answers are trusted, so that a capture begun before cf_ctx_track() counts). */
static int captures;

/* A thread keeps a few streams' devices: programs allocate on a handful of streams. */
#define STREAM_SLOTS 4

struct kept_stream {
    CUstream stream;
    int device;
    unsigned gen;
};

/* Per thread. A gen field of 0 is empty; otherwise the generation it was filled in. */
struct kept {
    unsigned device_gen, ctx_gen;
    int device;
    CUcontext ctx;
    struct kept_stream streams[STREAM_SLOTS];
};
static __thread struct kept tl __attribute__((tls_model("initial-exec")));

static unsigned current_generation(void)
{
    return __atomic_load_n(&generation, __ATOMIC_ACQUIRE);
}

unsigned cf_ctx_generation(void)
{
    return current_generation();
}

void cf_ctx_track(void)
{
    unsigned zero = 0;
    if (!__atomic_load_n(&untracked, __ATOMIC_ACQUIRE))
        __atomic_compare_exchange_n(&generation, &zero, 1u, false, __ATOMIC_ACQ_REL,
                                    __ATOMIC_ACQUIRE);
}

void cf_ctx_untrack(void)
{
    __atomic_store_n(&untracked, true, __ATOMIC_RELEASE);
    __atomic_store_n(&generation, 0u, __ATOMIC_RELEASE);
}

void cf_ctx_thread_changed(void)
{
    tl.device_gen = tl.ctx_gen = 0;
}

void cf_ctx_all_changed(void)
{
    unsigned g = current_generation();
    while (g != 0 && !__atomic_compare_exchange_n(&generation, &g, g + 2u, false, __ATOMIC_ACQ_REL,
                                                  __ATOMIC_ACQUIRE)) {
    }
    cf_ctx_thread_changed();
}

void cf_capture_begin(void)
{
    __atomic_add_fetch(&captures, 1, __ATOMIC_SEQ_CST);
}

void cf_capture_end(void)
{
    /* Never below zero: an end whose begin we did not see must not hide another. */
    int n = __atomic_load_n(&captures, __ATOMIC_SEQ_CST);
    while (n > 0 && !__atomic_compare_exchange_n(&captures, &n, n - 1, false, __ATOMIC_SEQ_CST,
                                                 __ATOMIC_SEQ_CST)) {
    }
}

/* Documented sampling call: cuCtxGetDevice. */
static int ask_device(void)
{
    const struct cf_driver *d = cf_driver();
    CUdevice dev;
    if (d->cuCtxGetDevice == NULL || d->cuCtxGetDevice(&dev) != CUDA_SUCCESS || dev < 0) return -1;
    return (int)dev;
}

CF_HOT int cf_current_device(void)
{
    /* Read before asking: a bump meanwhile leaves the answer marked stale. */
    unsigned g = current_generation();
    if (CF_LIKELY(g != 0 && tl.device_gen == g)) return tl.device;
    int dev = ask_device();
    if (g != 0 && dev >= 0) {
        tl.device = dev;
        tl.device_gen = g;
    }
    return dev;
}

/* Documented sampling call: cuCtxGetCurrent. */
CUresult cf_current_context(CUcontext *ctx)
{
    unsigned g = current_generation();
    if (CF_LIKELY(g != 0 && tl.ctx_gen == g)) {
        *ctx = tl.ctx;
        return CUDA_SUCCESS;
    }
    const struct cf_driver *d = cf_driver();
    if (d->cuCtxGetCurrent == NULL) return CUDA_ERROR_NOT_INITIALIZED;
    CUresult rc = d->cuCtxGetCurrent(ctx);
    /* No current context is not kept either: the arena makes one current then. */
    if (g != 0 && rc == CUDA_SUCCESS && *ctx != NULL) {
        tl.ctx = *ctx;
        tl.ctx_gen = g;
    }
    return rc;
}

static bool default_stream(CUstream s)
{
    return s == NULL || s == CU_STREAM_LEGACY || s == CU_STREAM_PER_THREAD;
}

/* Documented sampling call: cuStreamGetDevice, once per stream and thread. */
int cf_stream_device(CUstream stream)
{
    if (default_stream(stream)) return cf_current_device();
    unsigned g = current_generation();
    uintptr_t h = (uintptr_t)stream;
    struct kept_stream *k = &tl.streams[((h >> 4) ^ (h >> 12)) % STREAM_SLOTS];
    if (CF_LIKELY(g != 0 && k->gen == g && k->stream == stream)) return k->device;
    const struct cf_driver *d = cf_driver();
    CUdevice dev;
    if (d->cuStreamGetDevice == NULL || d->cuStreamGetDevice(stream, &dev) != CUDA_SUCCESS ||
        dev < 0)
        return cf_current_device();
    if (g != 0) *k = (struct kept_stream){.stream = stream, .device = (int)dev, .gen = g};
    return (int)dev;
}

bool cf_capture_in_progress(void)
{
    return __atomic_load_n(&captures, __ATOMIC_SEQ_CST) != 0;
}

/* Documented sampling call: cuStreamIsCapturing, only while a capture may be in
 * progress: one we saw begin, or any while the count cannot be trusted. */
CF_HOT bool cf_stream_capturing(CUstream stream, bool ptsz)
{
    if (CF_LIKELY(current_generation() != 0 && !cf_capture_in_progress())) return false;
    const struct cf_driver *d = cf_driver();
    /* No way to ask: capturing if we saw a capture begin (a driver exists and one may
     * be running); otherwise nothing can be capturing without a driver. */
    if (d->cuStreamIsCapturing == NULL) return __atomic_load_n(&captures, __ATOMIC_SEQ_CST) != 0;
    if (ptsz && stream == NULL) stream = CU_STREAM_PER_THREAD;
    CUstreamCaptureStatus st = CU_STREAM_CAPTURE_STATUS_NONE;
    /* An error (CUDA_ERROR_STREAM_CAPTURE_IMPLICIT on the legacy stream while another
     * stream captures, an invalid handle) cannot rule a capture out. */
    if (d->cuStreamIsCapturing(stream, &st) != CUDA_SUCCESS) return true;
    return st != CU_STREAM_CAPTURE_STATUS_NONE;
}
