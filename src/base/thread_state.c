/* The hooks' per-thread guard (see hook/guard.h) is defined here, in the core
 * library, rather than with the hooks: the report, also in the core, reads it to
 * tell that it runs in a thread interrupted inside a hook (exit() from a signal
 * handler), which may hold the driver's locks and cudafrag's. */
#include "base/thread_state.h"

__thread bool cf_in_hook __attribute__((tls_model("initial-exec")));
