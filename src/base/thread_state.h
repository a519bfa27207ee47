/* State of the calling thread shared between the hooks and the report. */
#ifndef CF_BASE_THREAD_STATE_H
#define CF_BASE_THREAD_STATE_H

#include <stdbool.h>
#include <stddef.h>

/* Set while the thread is inside a recording hook (its real CUDA call included). */
extern __thread bool cf_in_hook __attribute__((tls_model("initial-exec")));

/* Bytes of stack left below the caller's frame on this thread (SIZE_MAX when its
 * bounds cannot be read). The bounds are read once per thread. */
size_t cf_stack_room(void);

#endif
