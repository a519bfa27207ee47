/* Names of the CUDA error codes an allocation call returns, for the report: the
 * process that wrote a trace and the command that replays it must agree, so the
 * names come from the headers cudafrag is built with, never from a driver call. */
#ifndef CF_REPORT_CUDA_ERRORS_H
#define CF_REPORT_CUDA_ERRORS_H

#include <stdbool.h>
#include <stddef.h>

#include "record/record.h"

/* "cudaErrorMemoryAllocation" for a runtime API, "CUDA_ERROR_OUT_OF_MEMORY" for a
 * driver API; "error 12345" (in buf) for a code not in the table. */
const char *cf_cuda_error_name(enum cf_api api, int code, char *buf, size_t n);

/* The runtime could not use the driver at all (cudaErrorInsufficientDriver,
 * cudaErrorCallRequiresNewerDriver, no device, a stub library). */
bool cf_cuda_error_is_setup(enum cf_api api, int code);
bool cf_cuda_error_is_oom(enum cf_api api, int code);
/* cuda* (the runtime's codes), not cu* (the driver's). */
bool cf_api_is_runtime(enum cf_api api);

#endif
