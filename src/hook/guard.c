#include "hook/guard.h"

#include "config/config.h"
#include "report/lifecycle.h"

__thread uint64_t cf_call_ns __attribute__((tls_model("initial-exec")));
__thread uint64_t cf_call_end_ns __attribute__((tls_model("initial-exec")));

bool cf_hook_call_seen;

bool cf_hook_enabled(void)
{
    return cf_opt_bool(CF_OPT_ENABLE);
}

void cf_hook_first_call(void)
{
    __atomic_store_n(&cf_hook_call_seen, true, __ATOMIC_RELAXED);
    cf_lifecycle_first_call();
}
