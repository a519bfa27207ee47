#include "hook/guard.h"

#include "config/config.h"

__thread uint64_t cf_call_ns __attribute__((tls_model("initial-exec")));
__thread uint64_t cf_call_end_ns __attribute__((tls_model("initial-exec")));

bool cf_hook_enabled(void)
{
    return cf_opt_bool(CF_OPT_ENABLE);
}
