/* Stands in for libunwind.so.8 in record_fork_load. Its constructor tells the
 * test that the loading thread is inside dlopen, waits to be released, then
 * takes a while longer; unw_backtrace fails the process when it runs in a process
 * where that constructor never finished -- a child forked in the middle of the
 * load that then used the half-loaded library. */
#include <stdlib.h>
#include <unistd.h>

static volatile int constructed;

__attribute__((constructor)) static void slow_start(void)
{
    const char *in = getenv("FAKE_UNWIND_IN_FD"), *go = getenv("FAKE_UNWIND_GO_FD");
    if (in && go) {
        char c = 'i';
        if (write(atoi(in), &c, 1) != 1 || read(atoi(go), &c, 1) != 1) _exit(5);
        /* Past the release, the load goes on: long enough for a fork that does
         * not wait for it to happen before it ends. */
        usleep(200000);
    }
    constructed = 1;
}

__attribute__((visibility("default"))) int unw_backtrace(void **buffer, int size);
int unw_backtrace(void **buffer, int size)
{
    if (!constructed) _exit(3);
    (void)buffer;
    (void)size;
    return 0;
}
