/* Timestamps and thread ids for every record, cheap enough for the hook path. */
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "record/internal.h"

uint64_t cf_now_ns(void)
{
    /* CLOCK_MONOTONIC is served by the vDSO: no system call, no lock. */
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* initial-exec: libcudafrag is preloaded, so its TLS is static and reading it never
 * goes through __tls_get_addr (which may allocate). */
static __thread uint32_t cached_tid __attribute__((tls_model("initial-exec")));

uint32_t cf_tid(void)
{
    if (CF_UNLIKELY(cached_tid == 0)) cached_tid = (uint32_t)syscall(SYS_gettid);
    return cached_tid;
}

void cf_tid_forget(void)
{
    /* The child of fork() runs on a copy of the parent's thread with a new id. */
    cached_tid = 0;
}
