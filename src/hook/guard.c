#include "hook/guard.h"

#include "config/config.h"
#include "report/lifecycle.h"

__thread uint64_t cf_call_ns __attribute__((tls_model("initial-exec")));
__thread uint64_t cf_call_end_ns __attribute__((tls_model("initial-exec")));

bool cf_hook_call_seen;
uint32_t cf_time_one_in = 1;
__thread uint32_t cf_time_rng __attribute__((tls_model("initial-exec")));

uint32_t cf_time_seed(void)
{
    /* Threads that start alike must not draw alike: the same sequence on every
     * thread would time the same calls of each, and the estimate would vary as if
     * from one thread's sample. Never 0, which xorshift keeps. */
    uint64_t h = (cf_now_ns() ^ (uint64_t)(uintptr_t)&cf_time_rng) * 0x9e3779b97f4a7c15ull;
    return (uint32_t)(h >> 32) | 1u;
}

bool cf_hook_enabled(void)
{
    return cf_opt_bool(CF_OPT_ENABLE);
}

void cf_hook_first_call(void)
{
    __atomic_store_n(&cf_time_one_in, (uint32_t)cf_opt_int(CF_OPT_TIME_ONE_IN), __ATOMIC_RELAXED);
    __atomic_store_n(&cf_hook_call_seen, true, __ATOMIC_RELAXED);
    cf_lifecycle_first_call();
}
