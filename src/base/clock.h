/* Timestamps and thread ids cheap enough for the hook path (clock.c). */
#ifndef CF_BASE_CLOCK_H
#define CF_BASE_CLOCK_H

#include <stdint.h>

/* Nanoseconds on CLOCK_MONOTONIC's scale (the invariant TSC where there is one). */
uint64_t cf_now_ns(void);
/* The kernel thread id, cached per thread. */
uint32_t cf_tid(void);
/* In the child after fork: the cached id is the parent thread's. */
void cf_tid_forget(void);

#endif
