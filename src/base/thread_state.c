/* The hooks' per-thread guard (see hook/guard.h) is defined here, in the core
 * library, rather than with the hooks: the report, also in the core, reads it to
 * tell that it runs in a thread interrupted inside a hook (exit() from a signal
 * handler), which may hold the driver's locks and cudafrag's.
 *
 * The stack left to the thread: a program may run threads with stacks of 16 KiB
 * (pthread_attr_setstacksize) that do all it needs natively; cudafrag's own work
 * on them (unwinding, above all) must not go past their end. */
#include <pthread.h>
#include <stdint.h>

#include "base/export.h"
#include "base/thread_state.h"

__thread bool cf_in_hook __attribute__((tls_model("initial-exec")));

#define STACK_LO_UNKNOWN 1 /* not an address: the bounds could not be read */

/* The lowest usable address of this thread's stack; 0 until read. */
static __thread uintptr_t stack_lo __attribute__((tls_model("initial-exec")));

/* Once per thread. glibc answers for the main thread from its mapping and the
 * stack limit, for the others from the thread's descriptor. */
CF_COLD static uintptr_t read_stack_lo(void)
{
    pthread_attr_t attr;
    void *addr = NULL;
    size_t size = 0;
    if (pthread_getattr_np(pthread_self(), &attr) != 0) return STACK_LO_UNKNOWN;
    int rc = pthread_attr_getstack(&attr, &addr, &size);
    pthread_attr_destroy(&attr);
    return rc == 0 && addr != NULL ? (uintptr_t)addr : STACK_LO_UNKNOWN;
}

size_t cf_stack_room(void)
{
    uintptr_t sp = (uintptr_t)__builtin_frame_address(0);
    if (CF_UNLIKELY(stack_lo == 0)) stack_lo = read_stack_lo();
    if (stack_lo == STACK_LO_UNKNOWN) return SIZE_MAX;
    return sp > stack_lo ? sp - stack_lo : 0;
}
