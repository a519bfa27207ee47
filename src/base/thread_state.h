/* State of the calling thread shared between the hooks and the report. */
#ifndef CF_BASE_THREAD_STATE_H
#define CF_BASE_THREAD_STATE_H

#include <stdbool.h>

/* Set while the thread is inside a recording hook (its real CUDA call included). */
extern __thread bool cf_in_hook __attribute__((tls_model("initial-exec")));

#endif
